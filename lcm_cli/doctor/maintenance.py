"""Compaction debt (``conversation_compaction_maintenance``): stale, stuck and failed rows.

* stale: debt still pending on an archived conversation; nothing will ever drain it.
* stuck: a drain marked running that started long ago (its process died).
* failed: pending debt whose last drain failed.
"""

from __future__ import annotations

from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

TABLE = "conversation_compaction_maintenance"
STUCK_AFTER_MINUTES = 30


def _ready(source: ScanInput) -> bool:
    return source.has(TABLE, "conversations") and source.probe.has_column("conversations", "active")


def stale_debt(source: ScanInput) -> dict[int, str]:
    """Inactive conversations with pending debt that no live drain holds (administrative-close candidates)."""
    where, params = source.scope.clause("d.conversation_id")
    resolved = (
        " AND COALESCE(d.resolution_reason, '') != 'operator-ignored'"
        if source.probe.has_column(TABLE, "resolution_reason")
        else ""
    )
    rows = source.rows(
        f"""SELECT d.conversation_id, COALESCE(NULLIF(trim(d.reason), ''), 'reason unknown') FROM {TABLE} d
            JOIN conversations c ON c.conversation_id = d.conversation_id
            WHERE d.pending = 1 AND c.active = 0{resolved}
              AND (d.running = 0 OR d.last_started_at IS NULL
                   OR julianday(d.last_started_at) < julianday(?, 'unixepoch') - ? / 1440.0){where}
            ORDER BY 1""",
        [source.now_ms / 1000, STUCK_AFTER_MINUTES] + params,
    )
    return {r[0]: r[1] for r in rows}


def check_stale(source: ScanInput) -> Outcome:
    """`maintenance.stale`: compaction debt left on archived conversations."""
    if not _ready(source):
        return skipped(f"no {TABLE} table")
    found = stale_debt(source)
    return Outcome(affected=sorted(found), notes=found)


def stuck_debt(source: ScanInput) -> dict[int, str]:
    """Active conversations whose drain has been 'running' for longer than the stuck threshold."""
    where, params = source.scope.clause("d.conversation_id")
    rows = source.rows(
        f"""SELECT d.conversation_id, d.last_started_at FROM {TABLE} d
            JOIN conversations c ON c.conversation_id = d.conversation_id
            WHERE d.running = 1 AND c.active = 1
              AND (d.last_started_at IS NULL
                   OR julianday(d.last_started_at) < julianday(?, 'unixepoch') - ? / 1440.0){where}
            ORDER BY 1""",
        [source.now_ms / 1000, STUCK_AFTER_MINUTES] + params,
    )
    return {r[0]: r[1] for r in rows}


def check_stuck(source: ScanInput) -> Outcome:
    """`maintenance.stuck`: a compaction drain marked running for over 30 minutes."""
    if not _ready(source):
        return skipped(f"no {TABLE} table")
    found = stuck_debt(source)
    return Outcome(affected=sorted(found), notes={k: {"startedAt": v} for k, v in found.items()})


def check_failed(source: ScanInput) -> Outcome:
    """`maintenance.failed`: pending compaction debt whose last drain failed."""
    if not _ready(source):
        return skipped(f"no {TABLE} table")
    where, params = source.scope.clause("d.conversation_id")
    rows = source.rows(
        f"""SELECT d.conversation_id, substr(d.last_failure_summary, 1, 200) FROM {TABLE} d
            WHERE d.pending = 1 AND trim(COALESCE(d.last_failure_summary, '')) != ''{where} ORDER BY 1""",
        params,
    )
    return Outcome(affected=[r[0] for r in rows], notes={r[0]: r[1] for r in rows})
