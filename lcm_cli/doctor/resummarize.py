"""Re-summarizing broken summaries from their own sources (docs/reference/operations.md §5.2).

Order is bottom-up: leaves in the live context first (by ordinal), other leaves, then
condensed summaries by depth, so a condensed node is rebuilt from sources that were
repaired a moment earlier. Each summary is one unit: the summarizer is called with no
transaction open, then one ``BEGIN IMMEDIATE`` re-checks that the row still holds the
text that was read and writes content, token count, model and both summary FTS rows.

A repair never copies a marker from a neighbour: the continuity context is the nearest
previous summary *without* a marker, and an answer that contains any marker is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from lcm_cli.doctor.writer import is_busy, unit_of_work
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.maintenance.findings import ScanInput
from lcm_cli.engine.maintenance.markers import marked_summaries
from lcm_cli.engine.summarize.base import stored_model
from lcm_cli.engine.surgery.sources import rebuild_text, zone_of

# What a summary the summarizer could not rebuild is reported as (the other failures fail it).
_SKIPPED = {
    "no-source-text": "no-source-text",
    "no-usable-text": "summarizer-gave-no-usable-text",
    "contains-marker": "output-contains-marker",
}


def repair_order(source: ScanInput) -> list[dict[str, Any]]:
    """The marked summaries in scope, bottom-up: live leaves by ordinal, other leaves, condensed."""
    found = marked_summaries(source)
    if not found:
        return []
    ids = [item["summaryId"] for item in found]
    marks = ",".join("?" for _ in ids)
    ordinals = {
        r[0]: r[1]
        for r in source.rows(
            f"SELECT summary_id, MIN(ordinal) FROM context_items WHERE summary_id IN ({marks}) GROUP BY summary_id",
            ids,
        )
    }
    created = {
        r[0]: r[1] or ""
        for r in source.rows(
            f"SELECT summary_id, created_at FROM summaries WHERE summary_id IN ({marks})", ids
        )
    }

    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        sid = item["summaryId"]
        if item["depth"] == 0 and sid in ordinals:
            return (0, item["conversationId"], ordinals[sid], "", sid)
        group = 1 if item["depth"] == 0 else 2
        return (group, item["depth"], item["conversationId"], created[sid], sid)

    return sorted(found, key=key)


def resummarize(
    conn: sqlite3.Connection,
    targets: list[dict[str, Any]],
    *,
    effective: Mapping[str, Any],
    env: Mapping[str, str],
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Rebuild each target; one result entry per summary (applied, unchanged, skipped or failed)."""
    from lcm_cli.engine.summarize.factory import build_summarizer

    summarizer = build_summarizer(effective, env)
    zone = zone_of(effective)
    has_model = "model" in {r[1] for r in conn.execute("PRAGMA table_info(summaries)")}
    fts = [
        t
        for t in ("summaries_fts", "summaries_fts_cjk")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()
    ]
    repaired: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    stop: str | None = None
    for index, target in enumerate(targets):
        if progress is not None:
            progress(index, len(targets))
        sid = target["summaryId"]
        entry: dict[str, Any] = {
            "unit": f"summary:{sid}",
            "check": "summaries.markers",
            "conversationId": target["conversationId"],
            "summaryId": sid,
            "marker": target["marker"],
        }
        results.append(entry)
        if stop is not None:
            entry.update(status="skipped", reason=stop, changes=[])
            continue
        row = conn.execute(
            "SELECT summary_id, conversation_id, kind, depth, content FROM summaries WHERE summary_id = ?",
            (sid,),
        ).fetchone()
        if row is None:
            entry.update(status="skipped", reason="summary-gone", changes=[])
            continue
        summary = {
            "summary_id": row[0],
            "conversation_id": row[1],
            "kind": row[2],
            "depth": row[3],
            "content": row[4],
        }
        out = rebuild_text(conn, summary, repaired, summarizer, effective, zone)
        if out.text is None:
            if out.failure in _SKIPPED:
                entry.update(status="skipped", reason=_SKIPPED[out.failure], changes=[])
            else:
                entry.update(
                    status="failed", error={"code": "SUMMARIZER_FAILED", "message": out.message}, changes=[]
                )
            if out.stops:
                stop = out.failure
            continue
        new = out.text
        if new == summary["content"]:
            entry.update(status="unchanged", changes=[])
            continue
        tokens = estimate_tokens(new)
        change = {
            "action": "resummarize",
            "summaryId": sid,
            "level": out.level,
            "model": summarizer.model,
            "oldTokenCount": estimate_tokens(summary["content"]),
            "newTokenCount": tokens,
        }
        try:
            with unit_of_work(conn):
                sets = "content = ?, token_count = ?" + (", model = ?" if has_model else "")
                params: list[Any] = [new, tokens] + ([stored_model(summarizer)] if has_model else [])
                updated = conn.execute(
                    f"UPDATE summaries SET {sets} WHERE summary_id = ? AND content = ?",
                    params + [sid, summary["content"]],
                ).rowcount
                if updated != 1:
                    raise LcmError(
                        "STATE_CHANGED", f"Summary {sid} changed while it was being re-summarized."
                    )
                for table in fts:
                    conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (sid,))
                    conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (sid, new))
        except LcmError as exc:
            entry.update(status="failed", error=exc.to_dict(), changes=[])
            continue
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise
            entry.update(
                status="failed", error={"code": "DATABASE_QUERY_FAILED", "message": str(exc)}, changes=[]
            )
            continue
        repaired[sid] = new
        entry.update(status="applied", changes=[change])
    return results


def planned(targets: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Dry-run units: which summaries would be rebuilt, in order, by which summarizer."""
    return [
        {
            "unit": f"summary:{t['summaryId']}",
            "check": "summaries.markers",
            "conversationId": t["conversationId"],
            "changes": [
                {
                    "action": "resummarize",
                    "summaryId": t["summaryId"],
                    "marker": t["marker"],
                    "depth": t["depth"],
                    "model": model,
                }
            ],
        }
        for t in targets
    ]
