"""Every check `lcm doctor` runs: stable id, severity, what it looks at, and its fix.

The ids are a contract (scripts pass them to ``--check`` and read them from the report);
docs/doctor.md's table of checks is generated from this list. ``fix`` is the exact `lcm`
command that repairs the finding (the scan appends the selector it ran with); checks without
an automatic repair carry ``advice`` instead. A fix that deletes or rewrites stored history
is ``destructive``; an ``info`` check is never wrong data, so it never names a deletion as
its fix (an optional clean-up is named in its advice, marked as such).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from lcm_cli.doctor import context, dag, fts, maintenance, pending, repairs, rollover, storage
from lcm_cli.doctor.repairs import Repair
from lcm_cli.engine.db.schema import DEFERRED_INDEX_ROWS
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
    finds: str = ""  # what a finding is, for docs/doctor.md
    destructive: bool = False  # the fix deletes or rewrites stored history
    repair: Repair | None = None  # what `lcm doctor apply` runs for it (None: no automatic repair)


def _apply(check_id: str) -> str:
    return f"lcm doctor apply --check {check_id} --apply"


def _optional_clean(conversation_class: str) -> str:
    return (
        "Kept on purpose: nothing is wrong. Optional clean-up, which deletes these conversations "
        "and their messages for good (after a backup; ask the user first): "
        f"`lcm doctor clean --class {conversation_class} --apply`."
    )


CHECKS: tuple[Check, ...] = (
    Check(
        "summaries.markers",
        "error",
        "Summaries written by a fallback path (truncated, emergency, directive-omitted)",
        markers.check_markers,
        _apply("summaries.markers"),
        "Re-summarizes each from its sources with the configured summarizer, bottom-up (the old "
        "text is kept only in the backup taken first).",
        destructive=True,
        finds=(
            "Summaries written by a fallback path: every marker shape and rule of the reference's "
            "classification (directive fallback, old truncation marker, `[Truncated from N tokens]` "
            "at the end, truncation marker near the end, model `emergency-fallback`, model `unknown` "
            "with the bare emergency marker). `details.byKind` counts `fallback`, `oldMarker`, "
            "`truncatedMarker`, `emergency`; `notes` gives each id's kind"
        ),
        repair=repairs.RESUMMARIZE,
    ),
    Check(
        "dag.cross-conversation",
        "error",
        "Summary links that cross into another conversation",
        dag.check_cross_conversation,
        None,
        _RESTORE,
        finds="A summary linked to a message or a source summary of another conversation",
    ),
    Check(
        "dag.missing-sources",
        "error",
        "Summaries without sources, or linked to messages/summaries that do not exist",
        dag.check_missing_sources,
        None,
        _RESTORE,
        finds=(
            "A leaf without messages, a condensed summary without sources, a link to a message or "
            "summary that does not exist, or links of a summary that is gone"
        ),
    ),
    Check(
        "dag.depth-kind",
        "error",
        "Depth inconsistent with kind or with the sources' depth",
        dag.check_depth_kind,
        None,
        _RESTORE,
        finds=(
            "A leaf not at depth 0, a condensed summary at depth 0, or a condensed summary not "
            "exactly one above its deepest source"
        ),
    ),
    Check(
        "dag.cycles",
        "error",
        "Summaries that are their own (indirect) source",
        dag.check_cycles,
        None,
        _RESTORE,
        finds="Summaries that are (indirectly) their own source",
    ),
    Check(
        "dag.descendant-counts",
        "warn",
        "Descendant counts that do not add up over the direct sources",
        dag.check_descendant_counts,
        _apply("dag.descendant-counts"),
        finds="`descendant_count` / `descendant_token_count` that do not add up over the direct sources",
        repair=repairs.RECOUNT_DESCENDANTS,
    ),
    Check(
        "context.ordinals",
        "info",
        "Context ordinals not exactly 0..N-1 (gaps are legal after soft-reset pruning)",
        context.check_ordinals,
        _apply("context.ordinals"),
        finds=(
            "A conversation whose context ordinals are not exactly 0..N-1 (gaps are legal after "
            "soft-reset pruning, so this is informational)"
        ),
        repair=repairs.FIX_CONTEXT,
    ),
    Check(
        "context.dangling",
        "error",
        "Context items pointing at a missing row or a row of another conversation",
        context.check_dangling,
        _apply("context.dangling"),
        finds=(
            "A context item pointing at a missing message or summary, or at one of another "
            "conversation (ids `conversation:ordinal`)"
        ),
        repair=repairs.FIX_CONTEXT,
    ),
    Check(
        "context.duplicates",
        "error",
        "The same message or summary twice in one context",
        context.check_duplicates,
        _apply("context.duplicates"),
        finds="The same message or summary twice in one context (the later items are affected)",
        repair=repairs.FIX_CONTEXT,
    ),
    Check(
        "fts.messages",
        "warn",
        "messages_fts out of step with messages",
        fts.check_messages_fts,
        _apply("fts.messages"),
        finds=(
            "Messages with non-blank content missing from `messages_fts`, or index rows whose message is gone"
        ),
        repair=repairs.REINDEX_MESSAGES_FTS,
    ),
    Check(
        "fts.summaries",
        "warn",
        "summaries_fts out of step with summaries",
        fts.check_summaries_fts,
        _apply("fts.summaries"),
        finds="`summaries_fts` rows missing, stale, duplicated or with other content than the summary",
        repair=repairs.REINDEX_SUMMARIES_FTS,
    ),
    Check(
        "fts.summaries-cjk",
        "warn",
        "summaries_fts_cjk out of step with summaries",
        fts.check_summaries_fts_cjk,
        _apply("fts.summaries-cjk"),
        finds="The same for the trigram table `summaries_fts_cjk`",
        repair=repairs.REINDEX_SUMMARIES_FTS_CJK,
    ),
    Check(
        "conversations.orphaned",
        "warn",
        "Conversations whose source is gone (no transcript file, not in the host's session store)",
        junk.check_orphaned,
        "lcm prune --class orphaned --apply",
        "Prunes archived ones (after an archive file). Active ones are the only copy of their "
        "history: keep them, or archive them first with a /reset.",
        destructive=True,
        finds=(
            "Conversations whose recorded source (`conversation_bootstrap_state.session_file_path`) "
            "is gone: a transcript file that no longer exists and whose session the agent's host "
            "store (`openclaw-agent.sqlite`, where a host upgrade imports JSONL transcripts before "
            "archiving them) does not hold, or a `sqlite:<agent>:<session>:<store>` source whose "
            "store no longer holds the session"
        ),
    ),
    Check(
        "junk.archived-subagents",
        "info",
        "Archived subagent sessions (every agent id)",
        junk.check_archived_subagents,
        None,
        _optional_clean("archived_subagents"),
        finds="Archived conversations keyed `agent:<id>:subagent:...`, for **every** agent id",
    ),
    Check(
        "junk.cron-sessions",
        "info",
        "Cron sessions (every agent id)",
        junk.check_cron_sessions,
        None,
        _optional_clean("cron_sessions"),
        finds="Conversations keyed `agent:<id>:cron:...` (active or archived), every agent id",
    ),
    Check(
        "junk.null-subagent-context",
        "info",
        "Archived keyless [Subagent Context] conversations",
        junk.check_null_subagent_context,
        None,
        _optional_clean("null_subagent_context"),
        finds="Archived keyless conversations whose first message starts with `[Subagent Context]`",
    ),
    Check(
        "maintenance.stale",
        "warn",
        "Compaction debt left on archived conversations",
        maintenance.check_stale,
        _apply("maintenance.stale"),
        finds="Compaction debt still pending on an archived conversation (no live drain holds it)",
        repair=repairs.CLOSE_STALE_DEBT,
    ),
    Check(
        "maintenance.stuck",
        "warn",
        "Compaction drains marked running for over 30 minutes",
        maintenance.check_stuck,
        _apply("maintenance.stuck"),
        "Clears the running flag; the debt stays pending so the next turn drains it.",
        finds="A compaction drain marked running for over 30 minutes on an active conversation",
        repair=repairs.CLEAR_STUCK_DRAINS,
    ),
    Check(
        "maintenance.failed",
        "warn",
        "Pending compaction debt whose last drain failed",
        maintenance.check_failed,
        None,
        "Read the failure (details); fix the summarizer config (`lcm config show`); the agent retries.",
        finds="Pending debt whose last drain failed (`notes` has the failure)",
    ),
    Check(
        "pending.open-batches",
        "info",
        "lossless-claw 1.0 pending compaction batches left open for over a day",
        pending.check_open_batches,
        _apply("pending.open-batches"),
        "Marks them stale, as 1.0 does (terminal; the next preparation re-plans). Leave them while an "
        "engine still owns the conversation: lcm or 1.0 publishes or stales them on the next turn.",
        finds=(
            "Lossless-claw 1.0 pending compaction batches still `planning`/`ready`/`publishing` and "
            "untouched for over 24 hours (ids: batch ids; `notes`: conversation, status, "
            "`updatedAt`). Either engine publishes or stales a batch on the conversation's next "
            "turn, so an idle conversation may hold one; one left by a crash waits for that turn"
        ),
        repair=repairs.STALE_OPEN_BATCHES,
    ),
    Check(
        "pending.dangling",
        "error",
        "lossless-claw 1.0 pending nodes or links naming rows that are gone",
        pending.check_dangling,
        None,
        _RESTORE,
        finds=(
            "1.0 pending rows naming something gone: a node's canonical summary, batch or "
            "conversation, a node-message link's source message, a node-child link's child summary or "
            "node (ids `node:…`, `node-message:NODE:MESSAGE`, `node-child:NODE:ORDINAL`)"
        ),
    ),
    Check(
        "turns.orphaned",
        "info",
        "commitTurn ledger rows (turn_advancements) whose session has no conversation",
        pending.check_orphaned_turns,
        None,
        "Harmless: a host retry of such a turn is answered as a duplicate. Nothing to do.",
        scoped=False,
        finds=(
            "`turn_advancements` (commitTurn ledger) rows whose session id has no conversation; database-wide"
        ),
    ),
    Check(
        "epochs.frontier-missing",
        "warn",
        "lossless-claw 1.0 transcript epochs whose frontier entry no stored message holds",
        pending.check_epoch_frontier,
        None,
        "Messages that 1.0 anchored are gone: restore a backup if that was not intended; "
        "otherwise lossless-claw 1.0 re-anchors the epoch on its next bootstrap.",
        finds=(
            "A `conversation_transcript_epochs` row whose `frontier_entry_id` no message of its "
            "conversation holds"
        ),
    ),
    Check(
        "rollover.splits",
        "warn",
        "One session key's history split over several conversations",
        rollover.check_rollover_splits,
        None,
        "Repair with the plugin's `/lossless doctor apply rollover-splits confirm`; "
        "`safe` says whether it would accept the group.",
        finds=(
            "A session key whose history is split over an active and archived conversations that "
            "still hold data (`notes`: target, sources, `safe`, `unsafeBecause`)"
        ),
    ),
    Check(
        "storage.quick-check",
        "error",
        "PRAGMA quick_check",
        storage.check_quick_check,
        None,
        _RESTORE,
        scoped=False,
        finds=(
            "Anything `PRAGMA quick_check` reports. A file up to 256 MiB, or any file with "
            "`--thorough`, gets the whole-file check. A bigger file is checked table by table (each "
            "with its indexes: the schema, the small tables, those that grow with the summaries, then "
            "the per-message bulk, `messages` last) until 3 s are spent; `details` then says "
            "`bounded`, how many tables were checked, which were not (`uncheckedTables`), that the "
            "free-page list was not walked, and the command of the full pass"
        ),
    ),
    Check(
        "storage.undecodable-text",
        "warn",
        "Message or summary text that is not valid UTF-8 (read with U+FFFD)",
        storage.check_undecodable_text,
        _apply("storage.undecodable-text"),
        "Re-encodes each value with U+FFFD in place of the bad bytes, in one transaction, after a backup.",
        destructive=True,
        finds=(
            "`messages.content` or `summaries.content` values that are not valid UTF-8 (written by "
            "another tool, or damaged); affected ids are `message:<id>` / `summary:<id>`, each note "
            "names the table, column and first bad byte; `details.rowsByTable` counts them. Every "
            "command reads such a value with U+FFFD in place of the bad bytes and goes on"
        ),
        repair=repairs.REENCODE_TEXT,
    ),
    Check(
        "storage.schema-version",
        "warn",
        "Schema migrations pending, or written by a newer lcm",
        storage.check_schema_version,
        _apply("storage.schema-version"),
        "A newer schema cannot be fixed here: upgrade lcm.",
        scoped=False,
        finds=(
            "Migrations this `lcm` would still apply, or migration steps written by a newer `lcm` "
            "(`details.newer`)"
        ),
        repair=repairs.MIGRATE,
    ),
    Check(
        "storage.read-indexes",
        "info",
        "lcm's read-path indexes not built on this big file (building one locks writers out)",
        storage.check_read_indexes,
        "lcm doctor apply --check storage.read-indexes --apply",
        "Builds each index in one transaction: the agent's writes wait for it (about a second per "
        "million rows). Run it when the agent is idle; reads work without them, only slower.",
        scoped=False,
        finds=(
            "Read-path indexes (list, tail, coverage and token sums) that lcm leaves unbuilt when it "
            f"first opens a table of over {DEFERRED_INDEX_ROWS:,} rows, since SQLite builds an index in one statement "
            "that holds the write lock throughout. Only `--check storage.read-indexes` builds them: "
            "a bare `lcm doctor apply` does not"
        ),
        repair=repairs.BUILD_READ_INDEXES,
    ),
    Check(
        "storage.change-log",
        "info",
        "Change records a killed command left in lcm.db, not yet written to its change backup",
        storage.check_change_log,
        _apply("storage.change-log"),
        "Writes each killed run's records to the change backup it named "
        "(`<db>.<label>-<stamp>-<rand>.changes.jsonl.gz`), then removes them from lcm.db; the next "
        "command that takes a change backup does the same.",
        scoped=False,
        finds=(
            "Rows of `lcm_change_log` whose command was killed (its pid is gone) before it wrote them "
            "to its change backup (ids: the run, `<label>-<stamp>-<rand>`; `notes`: command, start, "
            "changes and file; `details.changes`; `details.emptyRuns` counts killed runs that changed nothing). The rows are safe in lcm.db; until they are written, that command cannot be undone with `lcm backup restore`"
        ),
        repair=repairs.EXPORT_CHANGE_LOG,
    ),
    Check(
        "storage.wal-size",
        "warn",
        "Write-ahead log over 64 MiB",
        storage.check_wal_size,
        _apply("storage.wal-size"),
        scoped=False,
        finds="A `-wal` file over 64 MiB",
        repair=repairs.CHECKPOINT_WAL,
    ),
    Check(
        "storage.replication",
        "warn",
        "Litestream replica behind lcm.db (skipped when no Litestream state is beside it)",
        storage.check_replication,
        None,
        "Check that `litestream replicate` is running and what its log says; `litestream status` "
        "shows its local position. After a restore or a full vacuum done with it stopped, start it "
        "again: it writes the whole database as new LTX files (docs/replication.md).",
        scoped=False,
        finds=(
            "With Litestream's state beside the database (`.lcm.db-litestream/`), its position in "
            "`details`: `localTxid` (its newest LTX file), `replicaTxid` and `txidLag` for a `file` "
            "replica named in a litestream.yml (`$LITESTREAM_CONFIG`, beside lcm.db, or "
            "`/etc/litestream.yml`), `secondsBehind` (last write to lcm.db against the newest local "
            "LTX file) and `replicaSecondsBehind`. A finding when either is over 60 s"
        ),
    ),
    Check(
        "storage.growth",
        "warn",
        "Growth per day and forecast (finding: disk full within 90 days)",
        storage.check_growth,
        "lcm prune --before 90d --apply",
        "Prunes archived conversations older than 90 days (after an archive file they can be "
        "restored from); `lcm vacuum --apply` first gives back space already freed.",
        scoped=False,
        destructive=True,
        finds=(
            "Growth per day and a 30/90/365-day forecast in `details`; a finding when the disk would "
            "fill within 90 days at that rate"
        ),
    ),
)
BY_ID: dict[str, Check] = {check.id: check for check in CHECKS}
FAMILIES = sorted({check.id.split(".")[0] for check in CHECKS})
