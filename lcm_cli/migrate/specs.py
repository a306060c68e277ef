"""The operation specs of backfilling OpenClaw's session transcripts (`lcm migrate-sessions`).

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.render_hints import Render, Rows, Tally
from lcm_cli.engine.core.spec_parts import CONVERSATION_ROWS, WHOLE_FILE

# One row per transcript (its rows also carry a sessionId).
_TRANSCRIPTS = Rows(
    "file",
    (
        "file",
        "status",
        "reason",
        "conversationId",
        "candidateMessages",
        "wouldImportMessages",
        "importedMessages",
    ),
    drop=("importedMessages", "candidateMessages", "conversationId"),
)
# A backfill over hundreds of files: totals, then only the files that need attention.
_MIGRATE = Render(
    rows=(_TRANSCRIPTS, CONVERSATION_ROWS),
    tallies=(
        Tally(
            "files",
            "status",
            (
                ("up-to-date", "up to date"),
                ("would-import", "would be imported"),
                ("imported", "imported"),
                ("complete", "complete"),
            ),
            "file",
            "{status}",
            (
                "file",
                "reason",
                "hint",
                "error",
                "sessionKey",
                "conversationId",
                "missingEntries",
                "skippedLines",
                "warnings",
            ),
            attention=("reason", "error", "warnings"),
            listed="file",
        ),
    ),
)

SPECS: dict[str, OpSpec] = {
    "migrate.sessions": OpSpec(
        "lcm_cli.migrate.importer",
        (
            "file",
            "sessions_dir",
            "store",
            "since",
            "max_files",
            "apply",
            "verify",
            "backup",
            "keep",
            "json",
            "verbose",
            "state_dir",
        ),
        words=("migrate-sessions",),
        long_running=True,
        writes=True,
        summary="Backfill OpenClaw session transcripts into lcm.db (dry run by default).",
        help=(
            "Backfill OpenClaw session transcripts into lcm.db; a dry run unless --apply.\n\n"
            "Without --file, --sessions-dir or --store it reads <state dir>/agents/*/sessions/*.jsonl "
            "and every <state dir>/agents/*/agent/openclaw-agent.sqlite. Safe to re-run: entries "
            "already imported are skipped. Exits 1 when a file failed (its report says why)."
        ),
        example="lcm migrate-sessions --openclaw-dir ~/.openclaw --apply",
        param_help={
            "file": "Import this transcript; repeatable.",
            "apply": (
                "Write: import (one transaction per file) under a change backup of the rows added, "
                "when anything would be imported."
            ),
            "keep": "With --apply, afterwards keep only the newest N `migrate-sessions` backups.",
        },
        render=_MIGRATE,
        items="files",
        applies="back up and import these",
        unscoped=WHOLE_FILE,
    ),
}
