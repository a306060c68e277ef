"""`lcm migrate-sessions`: backfill OpenClaw session transcripts into lcm.db, exactly once.

Three modes over the same discovery: a dry run (default, read-only: what each file would
add), ``--apply`` (one transaction per file, under a change backup of the rows added:
``--backup full`` copies the whole database first) and ``--verify`` (read-only:
is every transcript entry in the database?). Rows are written as lossless-claw's own
importer writes them (docs/reference/migrate-sessions.md): the conversation is the newest active
one for the session id or a new one, entries already present (by transcript entry id) or
adoptable (an unstamped row with the same role, content and identity hash) are skipped,
new messages get the next seq and context ordinals, the bootstrap checkpoint is
upserted, and each stored entry id gets a verified anchor-trust row as 1.0 writes it
(:mod:`lcm_cli.migrate.anchors`). We improve on it by setting ``session_key`` from the
agent's sessions.json, reporting every skipped line, and streaming each file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.exit_codes import FINDINGS_EXIT_STATUS
from lcm_cli.engine.core.params import (
    APPLY,
    BACKUP,
    FILE,
    KEEP,
    MAX_FILES,
    SESSIONS_DIR,
    SINCE,
    STORE,
    VERBOSE,
    VERIFY,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.timefilter import parse_when
from lcm_cli.migrate.discovery import StoreSource, discover_sources, file_report, session_keys

if TYPE_CHECKING:
    from lcm_cli.engine.db.sessions import SessionPolicy
    from lcm_cli.engine.db.store import Store

IMPORTED_TITLE = "Imported OpenClaw session "
INSERT_BATCH = 500
IMPORT_CACHE_KIB = 2048
MAX_LISTED_LINES = 100  # skipped lines listed per file; every one is counted
MAX_LISTED_MISSING = 100
# Forked readers: two scan files side by side in a dry run or --verify; in --apply two
# build rows for the writer (this process), which waits on them less than on one.
READ_WORKERS = 2
APPLY_READERS = 2
# How far a reader may stage ahead of the writer, in MiB of transcript (each file counts
# at least 1): it bounds the temporary disk use, and leaves room for one reader to go on
# through small files while the other is on a large one.
STAGING_AHEAD_MIB = 64
_STAGE_SCHEMA = "stage"
# Backups --apply takes are `<db>.migrate-sessions-<stamp>-<rand>.changes.jsonl.gz` (--backup
# full: `<db>.migrate-sessions-<stamp>.bak`); --keep prunes this label with lcm backup's retention.
MIGRATE_BACKUP_LABEL = "migrate-sessions"
# Sessions the runtime would not store (SessionPolicy): skipped, with this reason.
EXCLUSION_REASONS = ("ignored-session", "stateless-session")


def parse_since(text: str, now_ms: int | None = None) -> int:
    """``--since``: lcm's time grammar (a timestamp, a date or a duration back from now), as epoch ms."""
    return parse_when(text, "--since", now_ms=now_ms)


class _Run(NamedTuple):
    """What one database's backfill did: its per-file reports and the backup it took."""

    reports: list[dict[str, Any]]
    backup_path: str | None
    backup_kind: str | None
    pruned: list[str]


@operation("migrate.sessions")
def migrate_sessions(ctx: Context, req: Request) -> Result:
    """Discover transcripts, then dry-run, verify or apply them.

    With one database file per agent (``databasePath`` holding ``{agentId}``) and neither an
    agent nor transcripts named, each agent's transcripts go into its own file in one run:
    the files' reports say whose they are, and ``agents`` what each file got.
    """
    apply, verify = req[APPLY], req[VERIFY]
    if apply and verify:
        raise invalid_argument("--verify only reads; run it without --apply (or run --apply first).")
    keep = req[KEEP]
    if keep is not None and not apply:
        raise invalid_argument(
            "--keep prunes the backups --apply takes; use it with --apply.", {"keep": keep}
        )
    agents = _agents_to_split(ctx, req)
    if agents is None:
        run = _backfill(ctx, req)
        return _answer(ctx, req, run.reports, run)
    runs: list[tuple[str, str, _Run]] = []
    for agent in agents:
        own = ctx.for_agent(agent)
        try:
            run = _backfill(own, req)
        finally:
            own.close()
        for report in run.reports:
            report["agentId"] = agent
        runs.append((agent, own.database_path, run))
    result = _answer(ctx, req, [r for _, _, run in runs for r in run.reports], None)
    files = result.data.pop("files")
    result.data["agents"] = [
        {
            "agentId": agent,
            "dbPath": path,
            "backupPath": run.backup_path,
            "backupKind": run.backup_kind,
            **({"prunedBackups": run.pruned} if keep is not None else {}),
            "scannedFiles": len(run.reports),
            "importedMessages": sum(r["importedMessages"] for r in run.reports),
        }
        for agent, path, run in runs
    ]
    result.data["files"] = files
    return result


def _agents_to_split(ctx: Context, req: Request) -> list[str] | None:
    """The agents of the state dir when their backfill splits into per-agent files, else None."""
    from lcm_cli.engine.config.paths import is_per_agent, safe_agent_id

    if not is_per_agent(ctx.database_path) or req[FILE] or req[SESSIONS_DIR] or req[STORE]:
        return None
    root = os.path.join(ctx.state_dir, "agents")
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return None
    agents = [n for n in names if safe_agent_id(n) and os.path.isdir(os.path.join(root, n))]
    return agents or None


def _backfill(ctx: Context, req: Request) -> _Run:
    """Discover one database's transcripts and read (dry run, verify) or import them."""
    apply, verify = req[APPLY], req[VERIFY]
    files_given = req[FILE] or []
    dirs_given = req[SESSIONS_DIR] or []
    stores_given = req[STORE] or []
    if not files_given and not dirs_given and not stores_given and not os.path.isdir(ctx.state_dir):
        raise LcmError(
            "STATE_DIR_NOT_FOUND",
            f"OpenClaw state dir {ctx.state_dir} does not exist. Pass --openclaw-dir, or name "
            "transcripts with --file / --sessions-dir.",
            {"stateDir": ctx.state_dir},
        )
    for directory in dirs_given:
        if not os.path.isdir(directory):
            raise LcmError(
                "SESSIONS_DIR_NOT_FOUND",
                f"--sessions-dir {directory} is not a directory.",
                {"sessionsDir": os.path.abspath(directory)},
            )
    for store in stores_given:
        from lcm_cli.engine.transcript.host_store import open_store

        open_store(store).close()  # a named store that cannot be read fails the command
    since = req[SINCE]
    found = discover_sources(
        ctx.state_dir,
        files_given,
        dirs_given,
        stores_given,
        since_ms=parse_since(since) if since else None,
        limit=req[MAX_FILES],
        agent=ctx.file_agent,
    )
    keys = session_keys(ctx.state_dir, dirs_given)
    policy = ctx.engine_settings.session_policy()
    from lcm_cli.engine.maintenance.backup.changes import choose_mode

    backup_mode = choose_mode(req[BACKUP])
    keep = req[KEEP]
    backup_path = None
    backup_kind = None
    pruned: list[str] = []
    snapshot_dir = None
    files: list[Source] = []
    try:
        for source in found.sources:
            if isinstance(source, str):
                files.append(source)
                continue
            if snapshot_dir is None:
                from lcm_cli.migrate.staging import make_stage_dir

                snapshot_dir = make_stage_dir()
            files.append(StoreSource(source, snapshot_dir))
        if apply:
            reports, backup_path, backup_kind = _apply(ctx, files, keys, policy, backup_mode)
            # Retention applies on every --apply run, also one with nothing to import.
            if keep is not None:
                from lcm_cli.engine.maintenance.backup.catalog import prune_backups

                pruned = prune_backups(ctx.database_path, keep, label=MIGRATE_BACKUP_LABEL)
        else:
            reports = _read_only(ctx, files, keys, policy, verify=verify)
    finally:
        if snapshot_dir is not None:
            from lcm_cli.migrate.staging import remove_stage_dir

            remove_stage_dir(snapshot_dir)
    reports.extend(found.reports)
    return _Run(reports, backup_path, backup_kind, pruned)


def _answer(ctx: Context, req: Request, reports: list[dict[str, Any]], run: _Run | None) -> Result:
    """The run's answer from its per-file reports (``run``: the one database's backup)."""
    apply, verify = req[APPLY], req[VERIFY]
    from lcm_cli.engine.maintenance.backup.changes import choose_mode

    backup_mode = choose_mode(req[BACKUP])
    keep = req[KEEP]
    mode = "apply" if apply else "verify" if verify else "dry-run"
    backup_path = run.backup_path if run is not None else None
    by_status = Counter(r["status"] for r in reports)
    data: dict[str, Any] = {
        "mode": mode,
        "apply": apply,
        "dbPath": ctx.database_path,
        "stateDir": ctx.state_dir,
        "backupPath": backup_path,
        "backupKind": run.backup_kind if run is not None else None,
        "scannedFiles": len(reports),
        "importedFiles": by_status["imported"],
        "skippedFiles": by_status["skipped"] + by_status["up-to-date"],
        "errorFiles": by_status["error"],
        "importedMessages": sum(r["importedMessages"] for r in reports),
        "skippedLines": sum(r["skippedLines"]["count"] for r in reports),
    }
    if apply:
        data["backupSkippedReason"] = (
            None
            if backup_path is not None or not os.path.exists(ctx.database_path)
            else "not-requested"
            if backup_mode == "none"
            else "nothing-to-write"
        )
        if keep is not None and run is not None:
            data["prunedBackups"] = run.pruned
    elif not verify:
        would = [r for r in reports if r["status"] == "would-import"]
        data["wouldImportFiles"] = len(would)
        data["wouldImportMessages"] = sum(r.get("wouldImportMessages") or 0 for r in reports)
        data["wouldCreateConversations"] = sum(1 for r in would if r.get("conversation") == "new")
    excluded = Counter(r["reason"] for r in reports if r.get("reason") in EXCLUSION_REASONS)
    data["excludedSessions"] = {"count": sum(excluded.values()), "byReason": dict(sorted(excluded.items()))}
    if verify:
        data["completeFiles"] = by_status["complete"]
        data["incompleteFiles"] = by_status["incomplete"]
        data["incompleteByReason"] = dict(
            sorted(Counter(r["reason"] for r in reports if r["status"] == "incomplete").items())
        )
    data.update(_totals(reports))
    # As the reference importer: a file that failed (also in a dry run) makes the run exit 1,
    # with the whole report still on stdout; a verify that found entries missing exits 6, as a
    # check that found problems does (a legacy file without entry ids has nothing to redo).
    missing = verify and data["incompleteByReason"].get("missing-entries", 0) > 0
    data["exitStatus"] = 1 if data["errorFiles"] else FINDINGS_EXIT_STATUS if missing else 0
    if verify and not req[VERBOSE]:
        for report in reports:  # the entries verify found missing; their count stays
            report.pop("missing", None)
    data["files"] = reports
    return Result(data, exit_status=data["exitStatus"])


def _totals(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """What the per-file reports add up to, by status and by reason, for the top level."""
    lines: Counter[str] = Counter()
    for report in reports:
        lines.update(report["skippedLines"]["byReason"])
    by_status = Counter(r["status"] for r in reports)

    def reasons(status: str) -> dict[str, int]:
        return dict(
            sorted(
                Counter(r.get("reason") or "unspecified" for r in reports if r["status"] == status).items()
            )
        )

    return {
        "filesByStatus": dict(sorted(by_status.items())),
        "skippedFilesByReason": reasons("skipped"),
        "errorFilesByReason": reasons("error"),
        "skippedLinesByReason": dict(sorted(lines.items())),
    }


# --- per-file reports -----------------------------------------------------------------

#: Why a transcript without entry ids is not imported into a conversation that has messages
#: (as the reference warns: its messages could not be told apart from the stored ones).
NO_ENTRY_IDS_WARNING = (
    "the conversation already has messages and this transcript has no entry ids: skipped to avoid duplicates"
)

# What is read: a JSONL transcript's path, or one session of a host SQLite store.
Source = Union[str, StoreSource]


def _report(source: str | StoreSource) -> dict[str, Any]:
    if isinstance(source, StoreSource):
        session = source.session
        report = _report(session.store)
        report.update(source="sqlite", sessionId=session.session_id, sessionKey=session.session_key)
        return report
    return file_report(source)


def _note_skipped_lines(report: dict[str, Any], skipped: list[Any], unit: str = "line") -> None:
    """``unit``: ``line`` (a JSONL line number) or ``seq`` (a store event's seq)."""
    report["skippedLines"] = {
        "count": len(skipped),
        "byReason": dict(sorted(Counter(s.reason for s in skipped).items())),
        "lines": [{unit: s.line, "reason": s.reason} for s in skipped[:MAX_LISTED_LINES]],
    }


def _fail(report: dict[str, Any], reason: str, error: str) -> dict[str, Any]:
    report["status"] = "error"
    report["reason"] = reason
    report["error"] = error
    return report


def _excluded(report: dict[str, Any], policy: SessionPolicy | None) -> bool:
    """Mark a session the runtime would not store (ignored or stateless) as skipped, and why."""
    if policy is None:
        return False
    exclusion = policy.exclusion(report.get("sessionId"), report.get("sessionKey"))
    if exclusion is None:
        return False
    if exclusion == "excluded":
        reason, why = "ignored-session", "ignoreSessionPatterns"
    else:
        reason, why = "stateless-session", "statelessSessionPatterns (skipStatelessSessions is on)"
    report.update(status="skipped", reason=reason)
    report["warnings"].append(f"not imported: the session matches {why}, as the runtime would not store it")
    return True


def _scan(
    source: str | StoreSource,
    report: dict[str, Any],
    keys: dict[str, str],
    *,
    building: bool = False,
    policy: SessionPolicy | None = None,
) -> Any:
    """Scan one transcript into ``report``; None when the file cannot be read, or its
    session is one ``policy`` excludes (the report then says why).

    ``building``: its rows will be built next (small files are then parsed only once).
    A store session is first written to a private JSONL snapshot (one line per event),
    which is what is scanned; :func:`_forget` deletes it once the session is done.
    """
    from lcm_cli.engine.transcript.reader import scan_transcript

    if isinstance(source, StoreSource):
        from lcm_cli.engine.transcript.host_store import SkippedEvent, snapshot

        try:
            snap = snapshot(source.session.store, source.session.session_id, source.stage_dir)
        except (LcmError, OSError) as exc:
            _fail(report, "unreadable-store", getattr(exc, "message", None) or str(exc))
            return None
        try:
            transcript = scan_transcript(snap.path, keep_parsed=building)
        except LcmError as exc:
            _forget(snap.path)
            _fail(report, "unreadable-store", exc.message)
            return None
        # Report events by seq: line n of the snapshot is event seqs[n - 1].
        seqs = snap.seqs
        transcript.seqs = seqs
        skipped = [
            SkippedEvent(seqs[s.line - 1], snap.errors.get(seqs[s.line - 1], s.reason))
            if 0 < s.line <= len(seqs)
            else s
            for s in transcript.skipped
        ]
        report["sessionKey"] = source.session.session_key or keys.get(transcript.session_id)
        if transcript.session_id != source.session.session_id:
            report["warnings"].append(
                f"the transcript header names session {transcript.session_id}; imported under that id"
            )
        report["sessionId"] = transcript.session_id
        report["candidateMessages"] = transcript.candidate_count
        _note_skipped_lines(report, skipped, "seq")
        if _excluded(report, policy):
            _forget(snap.path)
            return None
        return transcript
    try:
        transcript = scan_transcript(source, keep_parsed=building)
    except LcmError as exc:
        _fail(report, "unreadable-file", exc.message)
        return None
    report["sessionId"] = transcript.session_id
    report["sessionKey"] = keys.get(transcript.session_id)
    report["candidateMessages"] = transcript.candidate_count
    _note_skipped_lines(report, list(transcript.skipped))
    if _excluded(report, policy):
        return None
    return transcript


def _forget(path: str | None) -> None:
    """Delete a store session's snapshot (JSONL transcripts are never touched)."""
    if path is not None:
        from lcm_cli.migrate.staging import discard

        discard(path)


def _snapshot_of(source: str | StoreSource, transcript: Any) -> str | None:
    if isinstance(source, StoreSource) and transcript is not None:
        return str(transcript.path)
    return None


# --- read-only modes: dry run and verify ----------------------------------------------


def _read_only(
    ctx: Context, files: list[Source], keys: dict[str, str], policy: SessionPolicy | None, *, verify: bool
) -> list[dict[str, Any]]:
    from lcm_cli.migrate.pipeline import ReaderDied, map_in_children, worker_count

    stage = "verifying" if verify else "scanning"
    exists = os.path.exists(ctx.database_path)
    workers = worker_count(READ_WORKERS) if len(files) >= 2 else 0
    if workers == 0:
        conn = ctx.db if exists else None
        reports = []
        for index, path in enumerate(files):
            ctx.report_progress(stage, index, len(files))
            reports.append(_read_one(conn, path, keys, policy, verify=verify))
        ctx.report_progress("done", len(files), len(files))
        return reports
    # Files are independent here: forked children scan them (and query their own
    # read-only connection) side by side; the report keeps the discovery order.
    opened: list[sqlite3.Connection] = []

    def task(index: int) -> dict[str, Any]:
        if exists and not opened:
            from lcm_cli.engine.db.connection import open_read_only

            opened.append(open_read_only(ctx.database_path, timeout_ms=ctx.timeout_ms))
        return _read_one(opened[0] if opened else None, files[index], keys, policy, verify=verify)

    sizes = [_size_of(path) for path in files]
    slots: list[dict[str, Any] | None] = [None] * len(files)
    # No progress report before the children exist: a terminal's progress bar starts a
    # drawing thread, and forking is kept to single-threaded moments.
    for index, result in map_in_children(
        task, len(files), sizes, workers, lambda done: ctx.report_progress(stage, done, len(files))
    ):
        if isinstance(result, ReaderDied):
            result = _fail(_report(files[index]), "read-failed", f"{result.detail}; run the command again")
        slots[index] = result
    ctx.report_progress("done", len(files), len(files))
    return [r for r in slots if r is not None]


def _size_of(path: Source) -> int:
    if isinstance(path, StoreSource):
        return path.session.event_count * 1024  # an estimate: only used to share work out
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read_one(
    conn: sqlite3.Connection | None,
    path: Source,
    keys: dict[str, str],
    policy: SessionPolicy | None,
    *,
    verify: bool,
) -> dict[str, Any]:
    """The dry-run or verify report of one file."""
    report = _report(path)
    transcript = _scan(path, report, keys, policy=policy)
    if transcript is not None:
        try:
            if verify:
                _verify_file(conn, transcript, report)
            else:
                _dry_run_file(conn, transcript, report)
        except LcmError as exc:  # e.g. the file was rewritten while we read it
            _fail(report, "read-failed", exc.message)
        finally:
            _forget(_snapshot_of(path, transcript))
    return report


def _conversation_for(conn: sqlite3.Connection | None, session_id: str) -> Any:
    if conn is None:
        return None
    return conn.execute(
        """SELECT conversation_id, session_key,
                  (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS n
           FROM conversations c WHERE session_id = ? AND active = 1
           ORDER BY julianday(created_at) DESC, conversation_id DESC LIMIT 1""",
        (session_id,),
    ).fetchone()


def _present_entry_ids(conn: sqlite3.Connection, conversation_ids: list[int]) -> set[str]:
    if not conversation_ids:
        return set()
    marks = ",".join("?" for _ in conversation_ids)
    rows = conn.execute(
        f"""SELECT transcript_entry_id FROM messages
            WHERE conversation_id IN ({marks}) AND transcript_entry_id IS NOT NULL""",
        conversation_ids,
    )
    return {row[0] for row in rows}


def _dry_run_file(conn: sqlite3.Connection | None, transcript: Any, report: dict[str, Any]) -> None:
    row = _conversation_for(conn, transcript.session_id)
    existing = row[2] if row else 0
    report["conversationId"] = row[0] if row else None
    # A file with nothing to import would create no conversation (apply creates none).
    report["conversation"] = ("existing" if row else "new") if transcript.candidate_count else None
    present = _present_entry_ids(conn, [row[0]]) if (conn is not None and row) else set()
    would, parts, size = 0, 0, 0
    # The scan already knows ids, sizes and part counts: no message is built in a dry run.
    for candidate in transcript.iter_candidates():
        if candidate.entry_id is not None and candidate.entry_id in present:
            continue
        if candidate.entry_id is None and existing > 0:
            continue
        would += 1
        parts += candidate.parts
        size += candidate.byte_size
    if transcript.candidate_count == 0:
        report.update(status="skipped", reason="no-persistable-messages")
        report["warnings"].append("no importable messages in this file")
    elif existing > 0 and not transcript.all_ids:
        report.update(status="skipped", reason="existing-conversation-without-transcript-entry-ids")
        report["skippedMessages"] = transcript.candidate_count
        report["warnings"].append(NO_ENTRY_IDS_WARNING)
    else:
        report["status"] = "would-import" if would else "up-to-date"
    report["wouldImportMessages"] = would
    report["skippedMessages"] = report["skippedMessages"] or transcript.candidate_count - would
    report["parts"] = parts
    report["bytes"] = size


def _verify_file(conn: sqlite3.Connection | None, transcript: Any, report: dict[str, Any]) -> None:
    ids = []
    if conn is not None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT conversation_id FROM conversations WHERE session_id = ?", (transcript.session_id,)
            )
        ]
    present = _present_entry_ids(conn, ids) if conn is not None else set()
    missing: list[dict[str, Any]] = []
    without_id = 0
    checked = 0
    seqs = getattr(transcript, "seqs", None)  # a store session: report event seqs
    for candidate in transcript.iter_candidates():
        if candidate.entry_id is None:
            without_id += 1
            continue
        checked += 1
        if candidate.entry_id not in present:
            if seqs is not None and 0 < candidate.line <= len(seqs):
                missing.append({"entryId": candidate.entry_id, "seq": seqs[candidate.line - 1]})
            else:
                missing.append({"entryId": candidate.entry_id, "line": candidate.line})
    report["conversationId"] = ids[0] if len(ids) == 1 else (ids or None)
    report["status"] = "complete" if not missing and not without_id else "incomplete"
    if missing:
        report["reason"] = "missing-entries"
        report["hint"] = (
            f"{len(missing)} transcript entries are not in the database; run migrate-sessions --apply"
        )
    elif without_id:
        report["reason"] = "entries-without-id"
        report["hint"] = (
            f"{without_id} messages of this (legacy) transcript carry no entry id, so their presence "
            "cannot be proven entry by entry; this is expected for transcripts older than entry ids"
        )
    report["verifiedEntries"] = checked
    report["missingEntries"] = len(missing)
    report["missing"] = missing[:MAX_LISTED_MISSING]
    report["entriesWithoutId"] = without_id


# --- apply ------------------------------------------------------------------------------


def _apply(
    ctx: Context,
    files: list[Source],
    keys: dict[str, str],
    policy: SessionPolicy | None = None,
    backup_mode: str = "changes",
) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """Import every file; ``(reports, backup path, backup kind)``."""
    from lcm_cli.engine.db.store import Store
    from lcm_cli.engine.maintenance.backup.changes import capture_changes

    backup_path = None
    existed = os.path.exists(ctx.database_path)  # a new file has nothing to back up
    if files and existed:
        from lcm_cli.engine.db.connection import require_sqlite_file

        require_sqlite_file(ctx.database_path)  # not SQLite: refused before anything is written
        # A dry run first: when no file would import a message, nothing is written and no
        # backup is taken (a re-run would otherwise copy the whole database every time).
        preview = _read_only(ctx, files, keys, policy, verify=False) if _readable(ctx) else None
        if preview is not None and not any(r["status"] == "would-import" for r in preview):
            for report in preview:
                report.pop("wouldImportMessages", None)
            return preview, None, None
        if backup_mode == "full":
            from lcm_cli.engine.config.file import backup_stamp
            from lcm_cli.engine.maintenance.backup.create import create_backup

            # The reference importer's name, through lcm backup's online copy and checks.
            out = f"{ctx.database_path}.{MIGRATE_BACKUP_LABEL}-{backup_stamp()}.bak"
            backup_path = create_backup(ctx.database_path, out=out)["backupPath"]
    reports: list[dict[str, Any]] = []
    if not files:
        return reports, backup_path, "full" if backup_path else None
    from lcm_cli.migrate import staging
    from lcm_cli.migrate.pipeline import Feed, Reader, ReaderDied, worker_count

    # Forked readers scan the next files while this process writes (see _share_out). For
    # a session the database did not hold when we started, a reader also builds every row
    # into a staging file that this process copies in with INSERT ... SELECT; for the
    # others it sends only the scan and this process reads what the database lacks.
    # Either way the same rows are written (tested row for row).
    feed: Feed | None = None
    count = worker_count(min(APPLY_READERS, len(files)))
    stage_dir: str | None = None
    if count:
        try:
            stage_dir = staging.make_stage_dir()
        except OSError:
            count = 0  # no temp dir to stage in: everything is read in-process
    if stage_dir is not None:
        known = _known_sessions(ctx.database_path)
        plan = _share_out(files, count)
        feed = Feed(
            [
                Reader(
                    functools.partial(
                        _produce,
                        files=[(i, files[i]) for i in items],
                        keys=keys,
                        known=known,
                        stage_dir=stage_dir,
                        policy=policy,
                    ),
                    credits=STAGING_AHEAD_MIB,
                )
                for items in plan
            ],
            plan,
        )
    try:
        store = Store.open(ctx.database_path)
    except (OSError, sqlite3.Error) as exc:
        if feed is not None:
            feed.close()
        staging.remove_stage_dir(stage_dir)
        raise LcmError(
            "DATABASE_OPEN_FAILED",
            f"Cannot open {ctx.database_path} for writing ({exc}). Check that the directory is "
            "writable and the file is an SQLite database.",
            {"databasePath": ctx.database_path},
        ) from None
    # A bounded page cache keeps peak memory flat however large the transcripts are
    # (the writer default of 64 MiB would fill up with one big file's pages).
    store.conn.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
    protect = (
        capture_changes(store.conn, ctx.database_path, label=MIGRATE_BACKUP_LABEL, command="migrate-sessions")
        if backup_mode == "changes" and existed
        else contextlib.nullcontext()
    )
    try:
        with protect as taken:
            for index, path in enumerate(files):
                ctx.report_progress("importing", index, len(files))
                try:
                    handoff: _Handoff | None = feed.take(index) if feed is not None else None
                except ReaderDied as died:
                    reports.append(_fail(_report(path), "import-failed", _died_message(died)))
                    continue
                if handoff is None:  # no reader, or its reader is gone: read it here
                    report = _report(path)
                    scanned = _scan(path, report, keys, building=True, policy=policy)
                    try:
                        reports.append(_write_file(store, scanned, report))
                    finally:
                        _forget(_snapshot_of(path, scanned))
                    continue
                try:
                    report = _write_file(store, handoff.transcript, handoff.report, handoff)
                except _SessionAppeared:
                    # Its conversation was created since the readers started (a live host):
                    # read the file here, against what the database now holds.
                    report = _report(path)
                    rescanned = _scan(path, report, keys, building=True, policy=policy)
                    try:
                        report = _write_file(store, rescanned, report)
                    finally:
                        _forget(_snapshot_of(path, rescanned))
                finally:
                    if handoff.staged:
                        staging.discard(handoff.staged)
                    _forget(_snapshot_of(path, handoff.transcript))
                    if feed is not None:
                        feed.release(index, handoff.credits)
                reports.append(report)
            ctx.report_progress("done", len(files), len(files))
    finally:
        if feed is not None:
            feed.close()
        store.close()
        staging.remove_stage_dir(stage_dir)
    if taken is not None and taken.result is not None:
        return reports, taken.result["backupPath"], "changes"
    return reports, backup_path, "full" if backup_path else None


def _readable(ctx: Context) -> bool:
    """True when the database reads (else the backup or the writer reports what is wrong)."""
    try:
        ctx.db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except (LcmError, sqlite3.Error, OSError):
        return False
    return True


def _share_out(files: list[Source], count: int) -> list[list[int]]:
    """The files each of ``count`` readers builds, in the order it builds them.

    The writer takes the files in discovery order, so a reader goes through its own in
    that order too, except that the first reader starts with the largest file: built
    when the writer reaches it, a large transcript would keep the writer waiting on one
    reader while the other ran out of room ahead. Built first, while the other readers
    feed the writer the files before it, it is ready in time. Each other file goes to
    the reader with the fewest bytes so far (the first counting the largest file from
    the start), so every reader stays about as far ahead of the writer.
    """
    sizes = [_size_of(path) + 1 for path in files]
    plan: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    first = max(range(len(files)), key=sizes.__getitem__) if count > 1 else None
    if first is not None:
        plan[0].append(first)
        loads[0] = sizes[first]
    for index, size in enumerate(sizes):
        if index != first:
            chosen = loads.index(min(loads))
            plan[chosen].append(index)
            loads[chosen] += size
    return plan


def _write_file(store: Store, transcript: Any, report: dict[str, Any], handoff: Any = None) -> dict[str, Any]:
    """Import one scanned file in its own transaction; the report says what happened."""
    from lcm_cli.migrate import staging

    if transcript is None:
        return report  # unreadable: _scan said why
    if handoff is not None and handoff.error is not None:
        return _fail(report, "import-failed", handoff.error)
    staged = handoff.staged if handoff is not None else None
    try:
        with staging.attached(store.conn, staged, _STAGE_SCHEMA) if staged else contextlib.nullcontext():
            with store.transaction():
                _import_file(store, transcript, report, handoff)
    except (sqlite3.Error, OSError, LcmError) as exc:
        # The transaction rolled back: this file is untouched; report and go on.
        for key in ("importedMessages", "parts", "bytes"):
            report[key] = 0
        message = getattr(exc, "message", None) or str(exc)
        if isinstance(exc, (sqlite3.OperationalError, OSError)) and (
            "disk" in message or "full" in message or "space" in message
        ):
            message += "; nothing of this file was kept. Free disk space and run --apply again"
        _fail(report, "import-failed", message)
    return report


def _died_message(died: Any) -> str:
    return f"{died.detail} while reading this file; nothing of it was kept. Run --apply again"


def _known_sessions(database_path: str) -> set[str]:
    """Session ids that already have a conversation (their files are read by the writer)."""
    if not os.path.exists(database_path):
        return set()
    from lcm_cli.engine.db.connection import open_read_only

    try:
        conn = open_read_only(database_path)
        try:
            return {row[0] for row in conn.execute("SELECT DISTINCT session_id FROM conversations")}
        finally:
            conn.close()
    except sqlite3.Error:
        return set()  # the writer reports it; a staged file for an existing session is re-read


class _Handoff(NamedTuple):
    """What a reader sends per file: its report and scan, and the staged rows if any."""

    report: dict[str, Any]
    transcript: Any  # the full scan, or _ScanFacts when the rows are staged
    staged: str | None = None  # the staging file's path
    selection: Any = None  # the _Selection that chose the staged rows (its counts)
    error: str | None = None  # the file could not be read to its end
    credits: int = 0  # what the reader took for it, for the writer to give back


def _produce(
    send: Any,
    acquire: Any,
    files: list[tuple[int, Source]],
    keys: dict[str, str],
    known: set[str],
    stage_dir: str,
    policy: SessionPolicy | None = None,
) -> None:
    """The reader process: per file, its report and scan, and for a new session its rows."""
    from lcm_cli.engine.transcript.header import read_header
    from lcm_cli.migrate.staging import StagingWriter, discard

    seen: set[str] = set()
    for number, path in files:
        report = _report(path)
        try:
            if isinstance(path, StoreSource):
                fresh = path.session.session_id not in known
            else:
                fresh = read_header(path).session_id not in known
        except LcmError:
            fresh = False  # _scan reports it
        transcript = _scan(path, report, keys, building=fresh, policy=policy)
        build = False
        if transcript is not None:
            session_id = transcript.session_id
            build = transcript.candidate_count > 0 and session_id not in known and session_id not in seen
            seen.add(session_id)
        if not build:
            if transcript is not None:
                transcript.drop_parsed()  # the writer reads what it needs itself
            send((number, _Handoff(report, transcript)))
            continue
        credits = min(STAGING_AHEAD_MIB, max(1, transcript.size_bytes >> 20))
        acquire(credits)
        staged = os.path.join(stage_dir, f"{os.getpid()}-{number}.db")
        selection = _Selection(frozenset(), transcript=transcript)
        writer = None
        try:
            writer = StagingWriter(staged)
            for message in selection.new(transcript.iter_messages()):
                writer.add(message)
            writer.close()
        except LcmError as exc:  # the file changed while it was read
            if writer is not None:
                writer.abandon()
            discard(staged)
            send((number, _Handoff(report, _ScanFacts(transcript), error=exc.message, credits=credits)))
            continue
        except (sqlite3.Error, OSError):
            # No room or no access for staging: the writer reads this file itself.
            if writer is not None:
                writer.abandon()
            discard(staged)
            transcript.drop_parsed()
            send((number, _Handoff(report, transcript, credits=credits)))
            continue
        selection.seen.clear()  # not needed past this point; no reason to send it
        send((number, _Handoff(report, _ScanFacts(transcript), staged, selection, credits=credits)))


class _ScanFacts:
    """What the writer reads of a scan whose rows a reader staged (small to send)."""

    def __init__(self, transcript: Any) -> None:
        self.path = transcript.path
        self.session_id = transcript.session_id
        self.header_id = transcript.header_id
        self.size_bytes = transcript.size_bytes
        self.mtime_ms = transcript.mtime_ms
        self.all_ids = transcript.all_ids
        self.candidate_count = transcript.candidate_count


class _SessionAppeared(Exception):
    """A staged session has a conversation by now: its file must be read against it."""


class _Selection:
    """Which of one file's messages are new, with the counts its report gives.

    ``present``: entry ids the conversation holds; ``adopt``: stamps an identical
    unstamped row (one the live plugin wrote) and says whether it did.
    """

    def __init__(self, present: frozenset[str] | set[str], adopt: Any = None, transcript: Any = None) -> None:
        self.present = present
        self.adopt = adopt
        self.seqs = getattr(transcript, "seqs", None)  # a store session: name events by seq
        self.seen: set[str] = set()
        self.warnings: list[str] = []
        self.imported = self.skipped = self.parts = self.bytes = 0
        self.last: Any = None  # the file's last message, new or not (the checkpoint hashes it)

    def wanted(self, candidate: Any, last_position: int) -> bool:
        """Skip building entries already stored (the last is always built: see ``last``)."""
        if candidate.entry_id in self.present and candidate.position != last_position:
            self.skipped += 1
            return False
        return True

    def _where(self, line: int) -> str:
        if self.seqs is not None and 0 < line <= len(self.seqs):
            return f"seq {self.seqs[line - 1]}"
        return f"line {line}"

    def new(self, source: Any) -> Iterator[Any]:
        """The messages of ``source`` to write, in order."""
        for message in source:
            self.last = message
            entry_id = message.entry_id
            if entry_id is not None:
                if entry_id in self.present:
                    self.skipped += 1
                    continue
                if entry_id in self.seen:
                    self.skipped += 1
                    self.warnings.append(
                        f"duplicate entry id {entry_id} at {self._where(message.line)}; kept the first"
                    )
                    continue
                self.seen.add(entry_id)
                if self.adopt is not None and self.adopt(message):
                    self.skipped += 1
                    continue
            self.imported += 1
            self.parts += len(message.parts)
            self.bytes += message.byte_size
            yield message


def _key_is_free(conn: sqlite3.Connection, key: str, conversation_id: int | None) -> bool:
    """True when no other ACTIVE conversation holds ``key`` (it is unique among active rows)."""
    row = conn.execute(
        "SELECT conversation_id FROM conversations WHERE session_key = ? AND active = 1 AND conversation_id IS NOT ?",
        (key, conversation_id),
    ).fetchone()
    return row is None


def _import_file(store: Store, transcript: Any, report: dict[str, Any], handoff: Any = None) -> None:
    """Import one transcript inside the caller's transaction (all or nothing).

    ``handoff``: when it names a staging file (attached as ``stage``), the file's rows,
    staged by a reader for a session that had no conversation; without one they are read
    here. Raises :class:`_SessionAppeared` (before writing) when rows were staged for a
    session that has a conversation by now.
    """
    conn = store.conn
    session_id = transcript.session_id
    key = report["sessionKey"]
    if transcript.candidate_count == 0:
        # As the reference: nothing to import creates no conversation and touches no row.
        report.update(status="skipped", reason="no-persistable-messages")
        report["warnings"].append("no importable messages in this file")
        return
    row = _conversation_for(conn, session_id)
    staged = handoff is not None and handoff.staged is not None
    if staged and row is not None:
        raise _SessionAppeared
    if row is None:
        usable_key = key if key and _key_is_free(conn, key, None) else None
        conversation_id = store.create_conversation(
            session_id, session_key=usable_key, title=IMPORTED_TITLE + session_id
        )
        existing = 0
        report["conversation"] = "new"
    else:
        conversation_id, current_key, existing = row
        usable_key = current_key
        if current_key is None and key and _key_is_free(conn, key, conversation_id):
            conn.execute(
                "UPDATE conversations SET session_key = ? WHERE conversation_id = ?", (key, conversation_id)
            )
            usable_key = key
        report["conversation"] = "existing"
    if key and usable_key != key:
        report["warnings"].append(f"session key {key} is held by another active conversation; left unset")
    report["conversationId"] = conversation_id
    report["sessionKey"] = usable_key

    if existing > 0 and not transcript.all_ids:
        report.update(status="skipped", reason="existing-conversation-without-transcript-entry-ids")
        report["skippedMessages"] = transcript.candidate_count
        report["warnings"].append(NO_ENTRY_IDS_WARNING)
        return

    from lcm_cli.migrate.anchors import trust_inserted, trust_stamp

    verified_at = trust_stamp(conn)
    last_seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()[0]
    if staged:
        from lcm_cli.engine.db.store.stamps import sqlite_timestamp
        from lcm_cli.migrate.staging import copy_staged

        selection = handoff.selection
        copy_staged(store, _STAGE_SCHEMA, conversation_id, session_id, sqlite_timestamp())
    else:
        present = _present_entry_ids(conn, [conversation_id]) if existing else set()
        adopt = functools.partial(_adopt, conn, conversation_id, verified_at) if existing else None
        selection = _Selection(present, adopt, transcript)
        last_position = transcript.candidate_count - 1
        want = functools.partial(selection.wanted, last_position=last_position) if present else None
        batch: list[dict[str, Any]] = []
        for message in selection.new(transcript.iter_messages(want)):
            batch.append(message.as_row())
            if len(batch) >= INSERT_BATCH:
                store.add_messages(conversation_id, batch, trust_anchors=False)
                batch = []
        if batch:
            store.add_messages(conversation_id, batch, trust_anchors=False)
    if verified_at is not None:
        # As 1.0's importer: one verified anchor-trust row per inserted entry with an id.
        trust_inserted(conn, conversation_id, last_seq, verified_at)
    report["warnings"].extend(selection.warnings)
    if selection.imported:
        # updatedAt is the last message's time, not the import's: "most recently updated"
        # stays the order the conversations were had in.
        conn.execute(
            """UPDATE conversations SET bootstrapped_at = COALESCE(bootstrapped_at, datetime('now')),
               updated_at = COALESCE(
                 (SELECT created_at FROM messages WHERE conversation_id = ?
                  ORDER BY julianday(created_at) DESC, seq DESC LIMIT 1),
                 datetime('now'))
               WHERE conversation_id = ?""",
            (conversation_id, conversation_id),
        )
    else:
        # Up to date: nothing changed, so updatedAt (the order of `conversations list`) stays.
        conn.execute(
            "UPDATE conversations SET bootstrapped_at = COALESCE(bootstrapped_at, datetime('now'))"
            " WHERE conversation_id = ? AND bootstrapped_at IS NULL",
            (conversation_id,),
        )
    recorded = report["file"]
    if report.get("source") == "sqlite":
        from lcm_cli.engine.transcript.host_store import session_marker

        recorded = session_marker(recorded, session_id)
    _checkpoint(store, conversation_id, transcript, selection.last, recorded)
    report.update(
        status="imported" if selection.imported else "up-to-date",
        importedMessages=selection.imported,
        skippedMessages=selection.skipped,
        parts=selection.parts,
        bytes=selection.bytes,
    )


def _adopt(conn: sqlite3.Connection, conversation_id: int, verified_at: str | None, message: Any) -> bool:
    """Stamp the entry id on the earliest unstamped identical row (one the live plugin wrote).

    ``verified_at``: when the database has the anchor-trust table, the stamped anchor is
    recorded there as verified (it matched role, content and identity hash).
    """
    row = conn.execute(
        """SELECT message_id, openclaw_sender_metadata FROM messages
           WHERE conversation_id = ? AND transcript_entry_id IS NULL AND role = ?
             AND identity_hash = ? AND content = ?
           ORDER BY seq LIMIT 1""",
        (conversation_id, message.role, message.identity_hash, message.content),
    ).fetchone()
    if row is None:
        return False
    sender = row[1]
    if message.role == "user" and sender is None:
        sender = message.sender_metadata
    conn.execute(
        "UPDATE messages SET transcript_entry_id = ?, openclaw_sender_metadata = ? WHERE message_id = ?",
        (message.entry_id, sender, row[0]),
    )
    if verified_at is not None:
        from lcm_cli.migrate.anchors import trust_adopted

        trust_adopted(conn, row[0], conversation_id, message.entry_id, verified_at)
    return True


def _checkpoint(store: Store, conversation_id: int, transcript: Any, last: Any, source_path: str) -> None:
    """Upsert the bootstrap frontier the live plugin resumes from.

    ``source_path``: the transcript, or for a store session the host's ``sqlite:`` marker of
    it (sizes are then the JSONL snapshot's, as if the events were a transcript file).
    """
    previous = store.conn.execute(
        """SELECT session_file_path, session_header_id, fork_bounded, fork_source_message_count
           FROM conversation_bootstrap_state WHERE conversation_id = ?""",
        (conversation_id,),
    ).fetchone()
    from lcm_cli.engine.transcript.host_store import MARKER_PREFIX

    path = source_path if source_path.startswith(MARKER_PREFIX) else os.path.abspath(source_path)
    if previous is not None and previous[0] == path:
        fork_bounded, fork_count = bool(previous[2]), previous[3]
    else:
        fork_bounded, fork_count = False, transcript.candidate_count if previous is None else 0
    store.upsert_bootstrap_state(
        conversation_id,
        path,
        last_seen_size=transcript.size_bytes,
        last_seen_mtime_ms=transcript.mtime_ms,
        last_processed_offset=transcript.size_bytes,
        last_processed_entry_hash=last.entry_hash if last is not None else None,
        session_header_id=transcript.header_id or (previous[1] if previous is not None else None),
        last_processed_entry_id=last.entry_id if last is not None else None,
        fork_bounded=fork_bounded,
        fork_source_message_count=fork_count,
    )
