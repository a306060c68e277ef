"""Every check `lcm doctor` runs: stable id, severity, what it looks at, and its fix.

The ids are a contract (scripts pass them to ``--check`` and read them from the report);
docs/doctor.md documents each one. ``fix`` is the exact `lcm` command that repairs the
finding (the scan appends the selector it ran with); checks without an automatic repair
carry ``advice`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from lcm_cli.doctor import context, dag, fts, maintenance, pending, rollover, storage
from lcm_cli.engine.maintenance import junk, markers
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput

_RESTORE = (
    "Restore a backup taken before the damage: `lcm backup list`, then `lcm backup restore PATH --apply`."
)


class Check(NamedTuple):
    """One check: its id, severity when it finds something, title, function and fix."""

    id: str
    severity: str
    title: str
    run: Callable[[ScanInput], Outcome]
    fix: str | None = None
    advice: str | None = None
    scoped: bool = True  # narrows to the selected conversations (False: database-wide)


def _apply(check_id: str) -> str:
    return f"lcm doctor apply --check {check_id} --apply"


CHECKS: tuple[Check, ...] = (
    Check(
        "summaries.markers",
        "error",
        "Summaries written by a fallback path (truncated, emergency, directive-omitted)",
        markers.check_markers,
        _apply("summaries.markers"),
        "Re-summarizes each from its sources with the configured summarizer, bottom-up.",
    ),
    Check(
        "dag.cross-conversation",
        "error",
        "Summary links that cross into another conversation",
        dag.check_cross_conversation,
        None,
        _RESTORE,
    ),
    Check(
        "dag.missing-sources",
        "error",
        "Summaries without sources, or linked to messages/summaries that do not exist",
        dag.check_missing_sources,
        None,
        _RESTORE,
    ),
    Check(
        "dag.depth-kind",
        "error",
        "Depth inconsistent with kind or with the sources' depth",
        dag.check_depth_kind,
        None,
        _RESTORE,
    ),
    Check(
        "dag.cycles",
        "error",
        "Summaries that are their own (indirect) source",
        dag.check_cycles,
        None,
        _RESTORE,
    ),
    Check(
        "dag.descendant-counts",
        "warn",
        "Descendant counts that do not add up over the direct sources",
        dag.check_descendant_counts,
        _apply("dag.descendant-counts"),
    ),
    Check(
        "context.ordinals",
        "info",
        "Context ordinals not exactly 0..N-1 (gaps are legal after soft-reset pruning)",
        context.check_ordinals,
        _apply("context.ordinals"),
    ),
    Check(
        "context.dangling",
        "error",
        "Context items pointing at a missing row or a row of another conversation",
        context.check_dangling,
        _apply("context.dangling"),
    ),
    Check(
        "context.duplicates",
        "error",
        "The same message or summary twice in one context",
        context.check_duplicates,
        _apply("context.duplicates"),
    ),
    Check(
        "fts.messages",
        "warn",
        "messages_fts out of step with messages",
        fts.check_messages_fts,
        _apply("fts.messages"),
    ),
    Check(
        "fts.summaries",
        "warn",
        "summaries_fts out of step with summaries",
        fts.check_summaries_fts,
        _apply("fts.summaries"),
    ),
    Check(
        "fts.summaries-cjk",
        "warn",
        "summaries_fts_cjk out of step with summaries",
        fts.check_summaries_fts_cjk,
        _apply("fts.summaries-cjk"),
    ),
    Check(
        "conversations.orphaned",
        "warn",
        "Conversations whose source is gone (no transcript file, not in the host's session store)",
        junk.check_orphaned,
        "lcm prune --class orphaned --apply",
        "Prunes archived ones (after an archive file). Active ones are the only copy of their "
        "history: keep them, or archive them first with a /reset.",
    ),
    Check(
        "junk.archived-subagents",
        "info",
        "Archived subagent sessions (every agent id)",
        junk.check_archived_subagents,
        "lcm doctor clean --class archived_subagents --apply",
    ),
    Check(
        "junk.cron-sessions",
        "info",
        "Cron sessions (every agent id)",
        junk.check_cron_sessions,
        "lcm doctor clean --class cron_sessions --apply",
    ),
    Check(
        "junk.null-subagent-context",
        "info",
        "Archived keyless [Subagent Context] conversations",
        junk.check_null_subagent_context,
        "lcm doctor clean --class null_subagent_context --apply",
    ),
    Check(
        "maintenance.stale",
        "warn",
        "Compaction debt left on archived conversations",
        maintenance.check_stale,
        _apply("maintenance.stale"),
    ),
    Check(
        "maintenance.stuck",
        "warn",
        "Compaction drains marked running for over 30 minutes",
        maintenance.check_stuck,
        _apply("maintenance.stuck"),
        "Clears the running flag; the debt stays pending so the next turn drains it.",
    ),
    Check(
        "maintenance.failed",
        "warn",
        "Pending compaction debt whose last drain failed",
        maintenance.check_failed,
        None,
        "Read the failure (details); fix the summarizer config (`lcm config show`); the agent retries.",
    ),
    Check(
        "pending.open-batches",
        "info",
        "lossless-claw 1.0 pending compaction batches left open for over a day",
        pending.check_open_batches,
        _apply("pending.open-batches"),
        "Marks them stale, as 1.0 does (terminal; 1.0 re-plans). Leave them while a live 1.0 still owns "
        "the conversation: it publishes or stales them on the next turn.",
    ),
    Check(
        "pending.dangling",
        "error",
        "lossless-claw 1.0 pending nodes or links naming rows that are gone",
        pending.check_dangling,
        None,
        _RESTORE,
    ),
    Check(
        "turns.orphaned",
        "info",
        "commitTurn ledger rows (turn_advancements) whose session has no conversation",
        pending.check_orphaned_turns,
        None,
        "Harmless: a host retry of such a turn is answered as a duplicate. Nothing to do.",
        scoped=False,
    ),
    Check(
        "epochs.frontier-missing",
        "warn",
        "lossless-claw 1.0 transcript epochs whose frontier entry no stored message holds",
        pending.check_epoch_frontier,
        None,
        "Messages that 1.0 anchored are gone: restore a backup if that was not intended; "
        "otherwise lossless-claw 1.0 re-anchors the epoch on its next bootstrap.",
    ),
    Check(
        "rollover.splits",
        "warn",
        "One session key's history split over several conversations",
        rollover.check_rollover_splits,
        None,
        "Repair with the plugin's `/lossless doctor apply rollover-splits confirm`; "
        "`safe` says whether it would accept the group.",
    ),
    Check(
        "storage.quick-check",
        "error",
        "PRAGMA quick_check",
        storage.check_quick_check,
        None,
        _RESTORE,
        scoped=False,
    ),
    Check(
        "storage.undecodable-text",
        "warn",
        "Message or summary text that is not valid UTF-8 (read with U+FFFD)",
        storage.check_undecodable_text,
        _apply("storage.undecodable-text"),
        "Re-encodes each value with U+FFFD in place of the bad bytes, in one transaction, after a backup.",
    ),
    Check(
        "storage.schema-version",
        "warn",
        "Schema migrations pending, or written by a newer lcm",
        storage.check_schema_version,
        _apply("storage.schema-version"),
        "A newer schema cannot be fixed here: upgrade lcm.",
        scoped=False,
    ),
    Check(
        "storage.wal-size",
        "warn",
        "Write-ahead log over 64 MiB",
        storage.check_wal_size,
        _apply("storage.wal-size"),
        scoped=False,
    ),
    Check(
        "storage.growth",
        "warn",
        "Growth per day and forecast (finding: disk full within 90 days)",
        storage.check_growth,
        "lcm prune --before 90d --apply",
        scoped=False,
    ),
)
BY_ID: dict[str, Check] = {check.id: check for check in CHECKS}
FAMILIES = sorted({check.id.split(".")[0] for check in CHECKS})
