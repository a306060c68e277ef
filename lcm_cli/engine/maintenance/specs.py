"""The operation specs of maintenance: backups, prune and its archives, vacuum, rotate, the control contract.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import Fleet, OpSpec
from lcm_cli.engine.core.render_hints import Render, Rows, Tally
from lcm_cli.engine.core.spec_parts import CONVERSATION_ROWS, NO_HISTORY, RECORDS, SELECTOR, WHOLE_FILE

_BACKUPS = Rows(
    "hasManifest",
    ("database", "name", "label", "sizeBytes", "createdAt", "hasManifest", "verifiedAtCreation"),
    drop=("label", "verifiedAtCreation", "hasManifest", "sizeBytes"),
)
# Backup checks: the failed ones in full, the passed ones counted.
_BACKUP_CHECKS = Tally(
    "checks", "ok", (("True", "passed"),), "check", "{name}: expected {expected}, found {actual}", ()
)
# Row counts by table name: the names as SQLite spells them.
_TABLE_NAMES = ("tables", "rows", "deleted", "expected", "actual")
_BACKUP = Render(rows=(_BACKUPS,), tallies=(_BACKUP_CHECKS,), verbatim=_TABLE_NAMES)

SPECS: dict[str, OpSpec] = {
    "backup.create": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        ("out", "quick", "keep"),
        words=("backup",),
        long_running=True,
        summary="Back up lcm.db online (small page steps), check the copy, write a manifest.",
        help=(
            "Back up lcm.db online (the live agent keeps writing), check the copy, write a manifest.\n\n"
            "Subcommands list, verify and restore backups."
        ),
        example="lcm backup --keep 5",
        param_help={
            "out": "Where to write the copy (default: beside the database, timestamped).",
            "keep": "Afterwards keep only the newest N `backup` backups.",
        },
        outputs={"out": "file"},
        render=_BACKUP,
        unscoped=WHOLE_FILE,
    ),
    "backup.list": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        summary="Backups beside the database (copies and change backups), newest first.",
        help=(
            "Backups beside the database, newest first, with their manifest status: copies of the "
            "database (*.bak) and change backups (*.changes.jsonl.gz, kind changes, with their rows)."
        ),
        example="lcm backup list --format table",
        render=_BACKUP,
        items="backups",
        fleet=Fleet("list", order="createdAt"),
        unscoped=WHOLE_FILE,
    ),
    "backup.verify": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        args=("path",),
        summary="Re-check a backup against its manifest (size, sha256, integrity, row counts).",
        help=(
            "Re-check a backup against its manifest: size, sha256, integrity and row counts.\n\n"
            "A change backup (*.changes.jsonl.gz) is read end to end: gzip, header, the content sha256 "
            "and counts of its trailer, its manifest, and that it was taken of this database."
        ),
        example="lcm backup verify ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak",
        param_help={
            "path": "The backup file.",
        },
        render=_BACKUP,
        unscoped=WHOLE_FILE,
    ),
    "backup.restore": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        ("apply", "force"),
        args=("path",),
        writes=True,
        summary="Restore lcm.db from a verified backup, or undo a change backup (dry run unless --apply).",
        help=(
            "Replace lcm.db with a verified backup; the replaced file is kept as a backup.\n\n"
            "Given a change backup (*.changes.jsonl.gz), undo the command it was taken for instead: "
            "the rows it inserted are deleted, those it updated or deleted put back, each only while "
            "it still holds what the command left (anything else is a conflict, never overwritten: "
            "RESTORE_CONFLICT). The host may keep running; the undo is itself under a change backup."
        ),
        example="lcm backup restore ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak --apply",
        param_help={
            "path": "The backup file: a copy (*.bak) or a change backup (*.changes.jsonl.gz).",
            "apply": "Really restore (dry run otherwise).",
            "force": (
                "A copy: restore even while another process has the database open (never while "
                "Litestream replicates it: REPLICATION_ACTIVE). A change backup: "
                "restore every row without a conflict, and list the ones skipped."
            ),
        },
        render=_BACKUP,
        applies="put this backup in place",
        unscoped=WHOLE_FILE,
    ),
    "prune": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops",
        (
            "conversation_id",
            "prune_before",
            "archived_only",
            "include_active",
            "max_db_size",
            "conversation_class",
            "out",
            "apply",
            "vacuum",
        ),
        long_running=True,
        writes=True,
        summary="Archive old conversations to a checksummed .jsonl.gz, then delete them (dry run).",
        help=(
            "Archive old conversations to a checksummed .jsonl.gz, verify it, then delete them.\n\n"
            "Dry run by default: says which conversations and how many bytes. At least one of "
            "--before, --max-db-size, --conversation-id, --class is required. --apply deletes in "
            "batches of ~25 ms of write lock (the agent keeps writing; a rerun finishes an interrupted "
            "prune). Subcommand restore puts an archive back."
        ),
        example="lcm prune --before 90d --apply --vacuum",
        param_help={
            "out": "Archive file (default: beside the database, timestamped).",
        },
        outputs={"out": "file"},
        render=Render(rows=(CONVERSATION_ROWS,), verbatim=_TABLE_NAMES),
        applies="archive and delete these",
        unscoped=WHOLE_FILE,
    ),
    "vacuum": OpSpec(
        "lcm_cli.engine.maintenance.vacuum",
        ("full", "apply"),
        long_running=True,
        writes=True,
        summary="Give the space of deleted rows back to the disk (online in steps; --full once, offline).",
        help=(
            "Give the space of deleted rows back to the disk. Dry run by default: free space, "
            "auto-vacuum mode and the plan.\n\n"
            "--apply on a file with incremental auto-vacuum works online, in steps of ~25 ms of write "
            "lock: the agent keeps writing. A file lossless-claw made has auto_vacuum = NONE; switching "
            "it takes ONE offline step, --full --apply: a full VACUUM that locks every writer out for "
            "about 20 s per GB (the dry run estimates it), needs free disk of about twice the data, and "
            "is refused with DATABASE_IN_USE while another process (the agent host, `lcm serve`) has "
            "the file open. Stop the host first."
        ),
        example="lcm vacuum --apply",
        param_help={"apply": "Do the plan (dry run otherwise)."},
        applies="do the plan",
        unscoped=WHOLE_FILE,
    ),
    "prune.restore": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops",
        ("apply",),
        args=("archive",),
        long_running=True,
        writes=True,
        summary="Put a prune archive back (verified first; idempotent; dry run).",
        help="Put the conversations of a prune archive back (verified first; safe to run twice).",
        example="lcm prune restore ~/.openclaw/lcm.db.prune-20260710T123456789Z.jsonl.gz --apply",
        render=Render(rows=(CONVERSATION_ROWS,), verbatim=_TABLE_NAMES),
        applies="bring these conversations back",
        unscoped=WHOLE_FILE,
    ),
    # The control contract's results are sanitized: no paths, not even in meta.
    # `rotate` writes, so the whole contract waits in the session's write queue under serve.
    "control": OpSpec(
        "lcm_cli.engine.maintenance.control",
        ("operation", "session_key", "session_id"),
        meta_paths=False,
        writes=True,
        summary="Run a sanitized control operation for the host: status, doctor or rotate",
        help=(
            "Run a control operation; the result holds counts and flags only (no paths or text).\n\n"
            "An operation this lcm cannot run answers CONTROL_UNAVAILABLE with a reasonCode."
        ),
        example="lcm control --operation status --session-key agent:main:main",
        param_help={
            "session_key": "The caller's session key.",
            "session_id": "The caller's runtime session id.",
        },
        unscoped=WHOLE_FILE,
    ),
    "control.capabilities": OpSpec(
        "lcm_cli.engine.maintenance.control",
        opens_db=False,
        resolves_paths=False,
        summary="Which control operations (status, doctor, rotate) this lcm can run",
        help="Which control operations this lcm can run: {status, doctor, rotate}.",
        example="lcm control capabilities",
        unscoped=NO_HISTORY,
    ),
    "rotate": OpSpec(
        "lcm_cli.engine.maintenance.rotate",
        SELECTOR + ("apply", "backup", "session_file"),
        needs_selector=True,
        writes=True,
        summary=(
            "Cut a session's transcript to its preserved tail (dry run unless --apply); LCM keeps the rest."
        ),
        help=(
            "Rotate a session's transcript: keep the preserved tail and current settings, drop the "
            "rest.\n\n"
            "With --apply: import what the transcript has that lcm.db lacks, leaf-compact the raw "
            "messages outside the fresh tail, then replace the transcript "
            "atomically (the old file is kept as <path>.rotate-<stamp>.bak) and refresh the bootstrap "
            "checkpoint so nothing is replayed. Same conversation row, nothing lost. Everything it "
            "writes to lcm.db is kept in a change backup (--backup latest: the rolling rotate-latest "
            "copy, full: a timestamped copy). Ignored and stateless sessions, and sessions without LCM "
            "state, are refused."
        ),
        example="lcm rotate --session-key agent:main:main --apply --backup none",
        param_help={
            "apply": "Really rotate (dry run otherwise: nothing is written).",
            "backup": (
                "changes (default: the rows rotate changes, as they were), latest (the rolling "
                "rotate-latest copy the reference takes), full (a timestamped copy) or none."
            ),
            "session_file": "The session's transcript JSONL (default: the path its bootstrap checkpoint records).",
        },
        render=RECORDS,
        applies="back up and rotate the transcript",
        unscoped=WHOLE_FILE,
    ),
}
