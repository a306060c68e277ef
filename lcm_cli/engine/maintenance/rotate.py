"""`lcm rotate`: shrink a session's transcript to its preserved tail without losing anything.

docs/reference/operations.md §3. The conversation, its messages, summaries and context items stay
where they are (same conversation row and identity); what changes is the session's JSONL
transcript, cut down to the preserved tail plus the current session settings, so the
host stops re-reading megabytes of history that LCM already holds. In order:

1. preconditions: an active conversation (by ``--session-key`` or ``--conversation-id``)
   that is neither ignored nor stateless, has stored messages, and has a transcript
   (its bootstrap checkpoint's ``session_file_path``, or ``--session-file``) that
   starts with a session header;
2. reconcile the transcript into the database (import what is missing, as
   ``lcm session bootstrap`` does), so nothing the transcript holds is lost;
3. forced leaf-only compaction of the raw context outside the fresh tail
   (:func:`compact_outside_tail`; docs/reference/engine.md §4.13, no condensation);
4. the backup the user chose: a change backup (default: every row steps 2 to 5 change in
   lcm.db, as it was, captured while they write; ``lcm backup restore FILE --apply``
   undoes them), the rolling ``rotate-latest`` copy, a full timestamped one, or none;
5. in one ``BEGIN IMMEDIATE`` transaction: the rewritten transcript replaces the old one
   atomically (sibling temp file, fsync, rename, directory fsync; the old file is kept as
   ``<path>.rotate-<stamp>.bak``) and the bootstrap frontier is refreshed (§3.4), so the
   next bootstrap finds the checkpoint in step and imports nothing.

We improve on the reference here: it writes the new transcript in place over the old
bytes, so a crash mid-write loses the session file; we replace it atomically and keep
the old file. A dry run (the default) writes nothing and reports what would be kept and
removed.

Refusals are ``ROTATE_UNAVAILABLE`` errors whose ``details.reasonCode`` is the control
contract's (docs/reference/operations.md §8.3) and whose ``details.reason`` names the cause.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import (
    atomic_writer,
    create_temp,
    fsync_dir,
    private_mode,
    publish,
    remove_orphans,
    remove_quietly,
)
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.params import APPLY, BACKUP, SESSION_FILE, SQLITE_MAX_INT, Request
from lcm_cli.engine.core.registry import Result, operation

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

BACKUP_MODES = ("changes", "latest", "full", "none")
# Reconcile-and-compact rounds while the host keeps appending to the transcript.
MAX_SETTLE_ROUNDS = 3
# Entry types a rotated transcript keeps; every other type (compaction, custom, label,
# branch summaries, ...) is dropped (docs/reference/operations.md §3.3 step 6).
KEPT_TYPES = frozenset({"message", "model_change", "thinking_level_change", "session_info"})
# The settings carried over from before the tail, in the order they are written.
SETTINGS_TYPES = ("session_info", "model_change", "thinking_level_change")
# Why reconcile refused to advance: the transcript cannot be proven to be in the database.
_UNSAFE_RECONCILE = frozenset(
    {
        "reconcile import capped",
        "reconcile duplicate raw ids",
        "reconcile duplicate transcript replay",
        "conversation already has messages",
    }
)


def unavailable(reason_code: str, reason: str, message: str, **details: Any) -> LcmError:
    """A ``ROTATE_UNAVAILABLE`` refusal: nothing was written."""
    return LcmError("ROTATE_UNAVAILABLE", message, {"reasonCode": reason_code, "reason": reason, **details})


# --------------------------------------------------------------------------------------
# The transcript rewrite rule (docs/reference/operations.md §3.3)
# --------------------------------------------------------------------------------------


class RewritePlan(NamedTuple):
    """What a rotated transcript keeps: the header, then ``kept`` (already re-linked)."""

    header: dict[str, Any]
    kept: list[dict[str, Any]]
    path_entries: int  # records on the active path
    messages: int  # |M|: message entries on the path
    preserved_messages: int
    settings: list[str]  # the settings entries carried over from before the tail
    last_entry_id: str | None  # envelope id of the last kept message

    def content(self) -> bytes:
        """The new file: header line, then one compact JSON line per kept entry."""
        from lcm_cli.engine.core.jscompat import stringify

        lines = [stringify(self.header)]
        lines.extend(stringify(entry) for entry in self.kept)
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _inner_role(entry: Mapping[str, Any]) -> Any:
    inner = entry.get("message")
    if isinstance(inner, Mapping):
        return inner.get("role")
    return entry.get("role")


def configured_tail(fresh_tail_count: Any, messages: int) -> int:
    """clamp(floor(freshTailCount), 1, messages); 0 without messages; not a finite number → 1."""
    if messages == 0:
        return 0
    if isinstance(fresh_tail_count, bool) or not isinstance(fresh_tail_count, (int, float)):
        return 1
    if not math.isfinite(fresh_tail_count):
        return 1
    return max(1, min(math.floor(fresh_tail_count), messages))


def plan_rewrite(
    header: dict[str, Any], path: Iterable[tuple[dict[str, Any], bool]], fresh_tail_count: Any
) -> RewritePlan:
    """Apply §3.3 to the active path's ``(entry, is_message)`` records, root to leaf."""
    records = list(path)
    kinds = []
    for entry, is_message in records:
        kind = entry.get("type")
        if is_message:
            kinds.append("message")
        elif kind in SETTINGS_TYPES:
            kinds.append(str(kind))
        else:
            kinds.append("entry")
    return plan_from_kinds(header, kinds, lambda k: records[k][0], fresh_tail_count)


def plan_from_kinds(
    header: dict[str, Any],
    kinds: Sequence[str],
    read: Callable[[int], dict[str, Any]],
    fresh_tail_count: Any,
) -> RewritePlan:
    """§3.3 over the path's record kinds (see ``Transcript.path_kinds``), reading only what it needs.

    ``read(k)`` returns the ``k``-th record's object. Only the kept records, and the
    newest messages up to the newest user message, are read.
    """
    from lcm_cli.engine.core.jscompat import envelope_string

    positions = [i for i, kind in enumerate(kinds) if kind == "message"]
    if not positions:
        return RewritePlan(header, [], len(kinds), 0, 0, [], None)
    tail = configured_tail(fresh_tail_count, len(positions))
    start = len(positions) - tail
    cache: dict[int, dict[str, Any]] = {}

    def entry_at(k: int) -> dict[str, Any]:
        if k not in cache:
            cache[k] = read(k)
        return cache[k]

    for n in range(len(positions) - 1, -1, -1):
        if _inner_role(entry_at(positions[n])) == "user":
            start = min(start, n)
            break
    anchor = positions[start]
    carried: list[int] = []
    for kind in SETTINGS_TYPES:
        found = next((i for i in range(anchor - 1, -1, -1) if kinds[i] == kind), None)
        if found is not None:
            carried.append(found)
    kept_kinds = ("message", *SETTINGS_TYPES)
    chosen = carried + [i for i in range(anchor, len(kinds)) if kinds[i] in kept_kinds]
    while chosen and kinds[chosen[-1]] != "message":
        chosen.pop()  # trailing settings entries are dropped
    kept: list[dict[str, Any]] = []
    previous: Any = None
    for i in chosen:
        entry = dict(entry_at(i))
        entry["parentId"] = previous
        previous = envelope_string(entry.get("id")) or envelope_string(entry.get("uuid"))
        kept.append(entry)
    last = kept[-1] if kept else None
    last_id = None
    if last is not None and "message" in last and last.get("type") in (None, "message"):
        last_id = envelope_string(last.get("id")) or envelope_string(last.get("uuid"))
    return RewritePlan(
        header,
        kept,
        len(kinds),
        len(positions),
        sum(1 for i in chosen if kinds[i] == "message"),
        [kinds[i] for i in carried if i in chosen],
        last_id,
    )


# --------------------------------------------------------------------------------------
# The fresh tail in the database (docs/reference/engine.md §4.3) and leaf-only compaction
# --------------------------------------------------------------------------------------


def raw_outside_tail(conn: Any, cid: int, effective: Mapping[str, Any]) -> dict[str, int]:
    """Message context items before the fresh-tail boundary: what rotate leaf-compacts.

    ``{messageItems, rawMessages, rawTokens}``: all message items of the context, and the
    raw messages (and their leaf-source tokens, docs/reference/engine.md §4.1) outside the fresh
    tail, with the boundary compaction itself uses (§4.3).
    """
    from lcm_cli.engine.compaction import context_items as ci
    from lcm_cli.engine.compaction.compactor import Settings

    settings = Settings.from_effective(effective)
    items = [item for item in ci.load_items(conn, cid) if item.is_message]
    edge = ci.tail_boundary(items, settings.fresh_tail_count, settings.fresh_tail_max_tokens)
    outside = [item for item in items if item.ordinal < edge]
    return {
        "messageItems": len(items),
        "rawMessages": len(outside),
        "rawTokens": sum(item.tokens for item in outside),
    }


def compact_outside_tail(ctx: Context, store: Store, target: Target) -> dict[str, Any]:
    """Force leaf-only compaction until no raw context remains outside the fresh tail.

    docs/reference/operations.md §3.2 step 5 and engine.md §4.13 with condensation disabled: one
    leaf chunk per pass (oldest raw run outside the tail, ``leafChunkTokens`` per chunk,
    the nearest preceding summaries as previous context), at most as many passes as the
    context has message items. Each pass is its own transaction (the summarizer runs
    outside it), so passes already written stay if a later one fails. An open circuit
    breaker, an auth failure, a failing summarizer or raw messages left over afterwards
    (incomplete coverage) are ``summarization_unavailable`` refusals: the transcript is
    not rewritten.
    """
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.compaction.ops import configured_summarizer
    from lcm_cli.engine.db.sessions import queue_key, session_lock
    from lcm_cli.engine.summarize.guards import breaker_key, circuit_breaker, guarded, spend_guard

    cid = target.conversation_id
    effective = ctx.effective
    before = raw_outside_tail(store.conn, cid, effective)
    out: dict[str, Any] = {
        "rawMessagesBefore": before["rawMessages"],
        "rawTokensBefore": before["rawTokens"],
        "passes": [],
        "skipped": [],
    }
    if before["rawMessages"] == 0:
        out["rawMessagesAfter"] = 0
        return out
    configured = configured_summarizer(ctx)
    breaker, breaker_id = circuit_breaker(effective), breaker_key(configured)
    if breaker.is_open(breaker_id):
        raise unavailable(
            "summarization_unavailable",
            "circuit-breaker-open",
            "The summarizer's circuit breaker is open (repeated auth failures); raw messages outside the "
            "fresh tail cannot be summarized, so the transcript was not rotated. Fix the summarizer "
            "credentials, then retry.",
            conversationId=cid,
        )
    scope = "compaction:" + queue_key(target.session_id, target.session_key)
    spend_guard(effective).clear(scope)  # a forced run clears the spend backoff (engine.md §4.8)
    compactor = Compactor(store, cid, effective, guarded(configured, effective, scope))
    with session_lock(queue_key(target.session_id, target.session_key)):
        # The pass bound counts skipped chunks too; islice stops without asking for the
        # next chunk, so no model call runs past it.
        for chunk, outcome in islice(compactor.leaf_passes("nearest"), before["messageItems"]):
            span = [chunk[0].ordinal, chunk[-1].ordinal]
            if outcome.status == "empty-source":
                out["skipped"].append({"reason": "empty-source", "ordinals": span})
                continue
            if outcome.status == "chunk-changed":
                out["skipped"].append({"reason": "chunk-changed", "ordinals": span})
                continue
            if outcome.status in ("auth-failure", "failed"):
                if outcome.status == "auth-failure":
                    breaker.record_auth_failure(breaker_id)
                raise unavailable(
                    "summarization_unavailable",
                    "summarizer-failed" if outcome.status == "failed" else "provider-auth-failure",
                    f"The summarizer failed ({outcome.error}) during rotate's leaf compaction; "
                    f"{len(out['passes'])} passes were kept, the transcript was not rotated. Check the "
                    "summarizer settings (`lcm config show`), then retry.",
                    conversationId=cid,
                    passes=len(out["passes"]),
                )
            assert outcome.record is not None
            out["passes"].append(outcome.record)
    if out["passes"]:
        breaker.record_success(breaker_id)
    after = raw_outside_tail(store.conn, cid, effective)
    out["rawMessagesAfter"] = after["rawMessages"]
    if after["rawMessages"]:
        raise unavailable(
            "summarization_unavailable",
            "incomplete-coverage",
            f"Leaf compaction left {after['rawMessages']} raw messages outside the fresh tail (no text to "
            "summarize, or the pass bound was reached); the transcript was not rotated.",
            conversationId=cid,
            passes=len(out["passes"]),
        )
    return out


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------


def _write_temp(path: str, data: bytes, mode: int) -> str:
    """A fsynced hidden sibling holding ``data`` (:func:`durable.create_temp`); returns its path."""
    fd, temp = create_temp(path)
    try:
        os.fchmod(fd, mode)  # the transcript keeps its own mode: the host must read it
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove_quietly(temp)
        raise
    os.close(fd)
    return temp


def _keep_old(path: str, stamp: str) -> str:
    """Keep the current transcript as ``<path>.rotate-<stamp>.bak`` (a hard link when possible).

    The link is the old transcript itself (same inode, same mode); where links are not
    possible the copy is private (0600, or the transcript's mode when stricter).
    """
    import shutil

    mode = private_mode(os.stat(path).st_mode)
    for attempt in range(5):
        suffix = f"-{secrets.token_hex(2)}" if attempt else ""
        target = f"{path}.rotate-{stamp}{suffix}.bak"
        if os.path.lexists(target):
            continue
        try:
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:
            try:
                with open_input(path) as src, atomic_writer(target, mode=mode, replace=False) as dst:
                    shutil.copyfileobj(src, dst)
            except FileExistsError:
                continue
        return target
    raise LcmError(
        "ROTATE_FAILED", f"Could not name a backup of {path}; nothing was written.", {"file": path}
    )


def _file_state(path: str) -> tuple[int, int, int, int]:
    """(device, inode, size, mtime ns): what tells that a file was written or replaced."""
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _same_file(path: str, info: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
    )


# --------------------------------------------------------------------------------------
# The operation
# --------------------------------------------------------------------------------------


class Target(NamedTuple):
    """The conversation being rotated and its transcript."""

    conversation_id: int
    session_id: str
    session_key: str | None
    path: str


def _has_checkpoints(conn: Any) -> bool:
    """False for a database older than bootstrap checkpoints (lossless-claw before 0.10)."""
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'conversation_bootstrap_state'"
        ).fetchone()
        is not None
    )


def _resolve(
    conn: Any,
    req: Request,
    effective: Mapping[str, Any],
    session_file: str | None,
    state_dir: str | None = None,
) -> Target:
    """Preconditions §3.1/§3.2 steps 1-3 against a connection (read-only or the write store)."""
    from lcm_cli.engine.config.view import EngineSettings

    assert req.selector is not None
    if req.selector.kind == "conversationId":
        row = (
            conn.execute(
                "SELECT conversation_id, session_id, session_key, active FROM conversations"
                " WHERE conversation_id = ?",
                (req.selector.value,),
            ).fetchone()
            if int(req.selector.value) <= SQLITE_MAX_INT  # a larger id names no row
            else None
        )
    else:
        row = conn.execute(
            "SELECT conversation_id, session_id, session_key, active FROM conversations"
            " WHERE session_key = ? AND active = 1"
            " ORDER BY julianday(created_at) DESC, conversation_id DESC LIMIT 1",
            (req.selector.value,),
        ).fetchone()
    selector = req.selector.to_dict()
    if row is None:
        raise unavailable(
            "conversation_unavailable",
            "no-conversation",
            f"No active LCM conversation for {req.selector.kind} {req.selector.value!r}; there is no LCM "
            "state to rotate. Find one with `lcm conversations list`.",
            selector=selector,
        )
    cid, session_id, key, active = int(row[0]), str(row[1]), row[2], row[3]
    if not active:
        raise unavailable(
            "conversation_unavailable",
            "archived-conversation",
            f"Conversation {cid} is archived; only an active conversation's transcript can be rotated.",
            conversationId=cid,
        )
    exclusion = EngineSettings(effective).session_policy().exclusion(session_id, key)
    if exclusion is not None:
        kind = "ignored" if exclusion == "excluded" else "stateless"
        raise unavailable(
            "unavailable",
            f"{kind}-session",
            f"Session {key or session_id!r} is {kind} (it matches "
            f"{'ignoreSessionPatterns' if kind == 'ignored' else 'statelessSessionPatterns'}); LCM does not "
            "manage its transcript, so rotate leaves it alone.",
            conversationId=cid,
        )
    stored = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?)", (cid,)
    ).fetchone()
    if not stored[0]:
        raise unavailable(
            "conversation_unavailable",
            "no-lcm-state",
            f"Conversation {cid} has no stored messages: there is no LCM state that would keep what a "
            "rotation removes. Bootstrap it first (`lcm session bootstrap`).",
            conversationId=cid,
        )
    path = session_file
    recorded = False
    if not path and _has_checkpoints(conn):
        found = conn.execute(
            "SELECT session_file_path FROM conversation_bootstrap_state WHERE conversation_id = ?", (cid,)
        ).fetchone()
        path = found[0] if found is not None else None
        recorded = bool(path)
    from lcm_cli.engine.transcript.host_store import store_for_session

    # OpenClaw 2026.7.2+ keeps transcripts as rows of its SQLite store, not JSONL files.
    store = store_for_session(state_dir, key, path)
    if store is not None:
        raise unavailable(
            "unavailable",
            "sqlite-transcript-store",
            f"The host keeps this session's transcript in its SQLite store ({store}), not in a JSONL file; "
            "rotate only rewrites JSONL transcripts, and a JSONL the host no longer reads would gain nothing. "
            "Nothing was written.",
            conversationId=cid,
            hostStore=store,
        )
    if not path:
        raise unavailable(
            "transcript_unavailable",
            "no-transcript-path",
            f"Conversation {cid} has no recorded transcript path; pass --session-file PATH.",
            conversationId=cid,
        )
    path = os.path.abspath(os.path.expanduser(path))
    if recorded:
        from lcm_cli.engine.config.paths import locate_transcript

        path = locate_transcript(path, state_dir)
    if not os.path.isfile(path):
        raise unavailable(
            "transcript_unavailable",
            "transcript-missing",
            f"Transcript {path} does not exist or is not a file; pass the session's JSONL with --session-file.",
            conversationId=cid,
            file=path,
        )
    return Target(cid, session_id, key, path)


def _require_header(target: Target) -> None:
    """Refuse a transcript without a session header line (docs/reference/operations.md §3.3 step 1)."""
    from lcm_cli.engine.transcript.header import read_session_header

    if read_session_header(target.path) is None:
        raise unavailable(
            "transcript_unavailable",
            "no-header",
            f"Transcript {target.path} does not start with a session header line; rotate refuses to "
            "rewrite it. Nothing was written.",
            conversationId=target.conversation_id,
            file=target.path,
        )


#: Message entry ids read from the transcript for the entry-id proof (the first ones).
OWNERSHIP_ENTRY_IDS = 2000


def prove_ownership(conn: Any, target: Target) -> dict[str, Any]:
    """Prove, by reads only, that ``target.path`` is this conversation's transcript.

    Accepted, in order: the header's session id is the conversation's (``header``); the
    bootstrap checkpoint records this path with this header id (``checkpoint``); the
    transcript's message entry ids are stored in this conversation and in no other
    (``entryIds``). A header id that is another conversation's session id is refused
    whatever else matches: merging it would move that session's messages here. Raises
    ``ROTATE_UNAVAILABLE`` (``transcript-not-owned``); returns ``{proof, headerId}``.
    """
    from lcm_cli.engine.transcript.header import read_header

    header_id = read_header(target.path).header_id
    if header_id is not None and header_id == target.session_id:
        return {"proof": "header", "headerId": header_id}
    cid = target.conversation_id
    other = (
        conn.execute(
            "SELECT conversation_id FROM conversations WHERE session_id = ? AND conversation_id != ?"
            " ORDER BY conversation_id LIMIT 1",
            (header_id, cid),
        ).fetchone()
        if header_id is not None
        else None
    )
    if other is None:
        if _has_checkpoints(conn):
            row = conn.execute(
                "SELECT session_file_path, session_header_id FROM conversation_bootstrap_state"
                " WHERE conversation_id = ?",
                (cid,),
            ).fetchone()
            if row is not None and row[0] == target.path and (row[1] is None or row[1] == header_id):
                return {"proof": "checkpoint", "headerId": header_id}
        if _entry_ids_owned(conn, cid, target.path):
            return {"proof": "entryIds", "headerId": header_id}
    owner = f" (it is the transcript of conversation {int(other[0])})" if other is not None else ""
    raise unavailable(
        "transcript_unavailable",
        "transcript-not-owned",
        f"Transcript {target.path} does not belong to conversation {cid}{owner}: its header session id "
        f"{header_id!r} is not {target.session_id!r}, the bootstrap checkpoint does not record it, and its "
        "entry ids are not this conversation's. Nothing was written. Pass the session's own JSONL with "
        "--session-file.",
        conversationId=cid,
        file=target.path,
        headerId=header_id,
        sessionId=target.session_id,
        ownerConversationId=int(other[0]) if other is not None else None,
    )


def _entry_ids_owned(conn: Any, cid: int, path: str) -> bool:
    """True when the transcript's first message entry ids are stored here and nowhere else."""
    from itertools import islice

    from lcm_cli.engine.transcript.reader import scan_transcript

    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(messages)").fetchall()}
    if "transcript_entry_id" not in columns:
        return False
    entries = scan_transcript(path).iter_entries()
    ids = [e.entry_id for e in islice(entries, OWNERSHIP_ENTRY_IDS) if e.entry_id]
    owners: set[int] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        owners.update(
            int(r[0])
            for r in conn.execute(
                f"SELECT DISTINCT conversation_id FROM messages WHERE transcript_entry_id IN ({marks})", part
            ).fetchall()
        )
    return owners == {cid}


def _plan(target: Target, effective: Mapping[str, Any]) -> tuple[Any, RewritePlan]:
    """Scan the transcript and plan its rewrite; a header-less file is refused."""
    from lcm_cli.engine.config.view import EngineSettings
    from lcm_cli.engine.transcript.reader import scan_transcript

    transcript = scan_transcript(target.path)
    header = transcript.read_header_line()
    if header is None:
        _require_header(target)  # raises: the file lost its header since it was checked
        raise _changed(target.path)
    with transcript.path_reader() as read:
        plan = plan_from_kinds(
            header,
            transcript.path_kinds(),
            lambda k: read(k).entry,
            EngineSettings(effective).fresh_tail_count,
        )
    return transcript, plan


def _report(target: Target, transcript: Any, plan: RewritePlan, new_size: int) -> dict[str, Any]:
    return {
        "sessionFile": target.path,
        "sizeBytes": transcript.size_bytes,
        "newSizeBytes": new_size,
        "bytesRemoved": max(0, transcript.size_bytes - new_size),
        "pathEntries": plan.path_entries,
        "keptEntries": len(plan.kept),
        "droppedEntries": plan.path_entries - len(plan.kept),
        "messages": plan.messages,
        "preservedTailMessageCount": plan.preserved_messages,
        "removedMessages": plan.messages - plan.preserved_messages,
        "keptSettings": plan.settings,
        "leafPath": transcript.leaf_path,
    }


def _backup_mode(req: Request) -> str:
    from lcm_cli.engine.maintenance.backup.changes import choose_mode

    return choose_mode(req[BACKUP], extra=("latest",))


def _frontier_hash(conn: Any, cid: int) -> str | None:
    from lcm_cli.engine.core.identity import entry_hash

    row = conn.execute(
        "SELECT role, content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1", (cid,)
    ).fetchone()
    return entry_hash(str(row[0]), row[1] or "") if row is not None else None


@operation("rotate")
def rotate(ctx: Context, req: Request) -> Result:
    """Dry run: what would be kept and removed. ``--apply``: reconcile, compact, back up, rewrite."""
    mode = _backup_mode(req)
    session_file = req[SESSION_FILE] or None
    if not req[APPLY]:
        return Result(dry_run(ctx, req, session_file, mode))
    return Result(apply_rotation(ctx, req, session_file, mode))


def dry_run(ctx: Context, req: Request, session_file: str | None, mode: str) -> dict[str, Any]:
    """What ``--apply`` would do, from the read-only connection; nothing is written."""
    from lcm_cli.engine.read.conversation_rows import require_lcm_tables

    require_lcm_tables(ctx)
    effective = ctx.effective
    target = _resolve(ctx.db, req, effective, session_file, ctx.state_dir)
    _require_header(target)
    ownership = prove_ownership(ctx.db, target)
    transcript, plan = _plan(target, effective)
    new_size = len(plan.content())
    checkpoint = (
        ctx.query_one(
            "SELECT session_file_path, last_seen_size, last_seen_mtime_ms FROM conversation_bootstrap_state"
            " WHERE conversation_id = ?",
            (target.conversation_id,),
        )
        if _has_checkpoints(ctx.db)
        else None
    )
    in_sync = checkpoint is not None and (checkpoint[0], checkpoint[1], checkpoint[2]) == (
        target.path,
        transcript.size_bytes,
        transcript.mtime_ms,
    )
    raw = raw_outside_tail(ctx.db, target.conversation_id, effective)
    return {
        "applied": False,
        "dryRun": True,
        "conversationId": target.conversation_id,
        "sessionId": target.session_id,
        "sessionKey": target.session_key,
        "transcript": _report(target, transcript, plan, new_size),
        "reconcile": {"checkpointInSync": in_sync},
        "ownership": ownership,
        "compaction": {
            "messageContextItems": raw["messageItems"],
            "rawMessagesToCompact": raw["rawMessages"],
            "rawTokensToCompact": raw["rawTokens"],
        },
        "backup": {"mode": mode, "path": None},
        "hint": "Nothing was written. Run again with --apply to rotate.",
    }


def apply_rotation(ctx: Context, req: Request, session_file: str | None, mode: str) -> dict[str, Any]:
    """Reconcile, compact, back up, then rewrite the transcript and refresh the frontier."""
    from lcm_cli.engine.db.connection import require_sqlite_file
    from lcm_cli.engine.read.conversation_rows import require_lcm_tables

    require_sqlite_file(ctx.database_path)
    require_lcm_tables(ctx)
    effective = ctx.effective
    # Every precondition is checked on the read-only connection: a refusal opens no writer.
    target = _resolve(ctx.db, req, effective, session_file, ctx.state_dir)
    _require_header(target)
    # The transcript must be this conversation's before anything is reconciled or written.
    ownership = prove_ownership(ctx.db, target)
    remove_orphans(os.path.dirname(target.path))
    store = ctx.store()
    if mode != "changes":
        return _rotate_writes(ctx, store, target, ownership, mode)
    from lcm_cli.engine.maintenance.backup.changes import capture_changes

    # Everything rotate writes to lcm.db (imports, leaf summaries, context, checkpoint).
    with capture_changes(store.conn, ctx.database_path, label="rotate", command="rotate") as capture:
        data = _rotate_writes(ctx, store, target, ownership, mode)
    made = capture.result or {}
    data["backup"] = {"mode": "changes", "path": made.get("backupPath"), "rows": made.get("rows", 0)}
    return data


def _rotate_writes(
    ctx: Context, store: Store, target: Target, ownership: dict[str, Any], mode: str
) -> dict[str, Any]:
    """Steps 2 to 5 on the write store: reconcile, compact, the copy ``mode`` asks for, rewrite."""
    from lcm_cli.engine.assembly.fallback import bootstrap_budget
    from lcm_cli.engine.db.sessions import find_active, queue_key, session_lock
    from lcm_cli.engine.maintenance.backup.create import create_backup, create_rolling_backup
    from lcm_cli.engine.session.bootstrap import bootstrap_session
    from lcm_cli.engine.session.ingest import IngestSettings

    effective = ctx.effective
    cid = target.conversation_id
    settings = IngestSettings.from_config(effective)
    reconciled: dict[str, Any] = {}
    compaction: dict[str, Any] = {}
    # Steps 4 and 5 run until the transcript holds still across them: a line the host
    # appends meanwhile is imported (and, if it pushes older messages out of the fresh
    # tail, those are compacted) before the file is cut, never cut unseen.
    for _attempt in range(MAX_SETTLE_ROUNDS):
        seen = _file_state(target.path)
        # Step 4: everything the transcript holds must be in the database before it is cut.
        reconciled = bootstrap_session(
            store,
            settings,
            target.session_id,
            target.path,
            session_key=target.session_key,
            max_tokens=bootstrap_budget(effective),
        )
        if reconciled.get("conversationId") != cid or reconciled.get("reason") in _UNSAFE_RECONCILE:
            raise unavailable(
                "unavailable",
                "reconcile-unsafe",
                f"The transcript could not be proven to be in the database ({reconciled.get('reason')}); "
                "the transcript was not rotated. Run `lcm session bootstrap` until it is up to date, then retry.",
                conversationId=cid,
                reconcile={k: reconciled.get(k) for k in ("reason", "importedMessages", "remainingMessages")},
            )
        # Step 5: no raw context outside the fresh tail (each pass is its own transaction).
        compaction = compact_outside_tail(ctx, store, target)
        if _file_state(target.path) == seen:
            break
    else:
        raise _changed(target.path)
    # Step 7 comes before the rewrite: the backup holds the state the rewrite starts from.
    made: dict[str, Any] | None = None
    if mode == "latest":
        made = create_rolling_backup(ctx.database_path, label="rotate")
    elif mode == "full":
        made = create_backup(ctx.database_path, label="rotate")
    transcript, plan = _plan(target, effective)
    data = plan.content()
    info = os.stat(target.path)
    if _file_state(target.path) != seen or (info.st_size, info.st_mtime_ns // 1_000_000) != (
        transcript.size_bytes,
        transcript.mtime_ms,
    ):
        # The host wrote during the backup: what it wrote is not in the database yet.
        raise _changed(target.path)
    stamp = _stamp()
    old_copy: str | None = None
    replaced = False
    try:
        with session_lock(queue_key(target.session_id, target.session_key)), store.transaction() as conn:
            row = find_active(conn, target.session_id, target.session_key)
            if row is None or int(row[0]) != cid:
                raise unavailable(
                    "conversation_unavailable",
                    "conversation-changed",
                    f"Conversation {cid} stopped being the session's active conversation; nothing was "
                    "rewritten.",
                    conversationId=cid,
                )
            temp = _write_temp(target.path, data, info.st_mode & 0o7777)
            try:
                # The frontier is written first, inside the transaction, from the temp file's
                # own size and mtime (a rename keeps both): the commit after the rename makes
                # database and transcript agree; a kill before it leaves the old frontier,
                # which the next bootstrap treats as a shrunk file and re-anchors.
                _refresh_frontier(store, conn, cid, target.path, os.stat(temp), transcript.header_id, plan)
                if not _same_file(target.path, info):
                    raise _changed(target.path)
                old_copy = _keep_old(target.path, stamp)
                publish(temp, target.path, replace=True, sync=False, sync_directory=False)
                replaced = True
            finally:
                if not replaced:
                    remove_quietly(temp)
            fsync_dir(os.path.dirname(target.path))
    except BaseException as exc:
        if replaced and old_copy is not None:
            # The transaction rolled back: put the old transcript back so the two agree.
            os.replace(old_copy, target.path)
        elif old_copy is not None:
            remove_quietly(old_copy)
        if isinstance(exc, OSError):
            raise unavailable(
                "transcript_unavailable",
                "transcript-unwritable",
                f"Could not rewrite {target.path} ({exc.strerror or exc}); the transcript and the database "
                "are unchanged. Check the directory's permissions and free space, then retry.",
                conversationId=cid,
                file=target.path,
            ) from None
        raise
    message_count = int(
        store.conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (cid,)).fetchone()[0]
    )
    checkpoint = store.conn.execute(
        "SELECT session_file_path, last_seen_size, last_seen_mtime_ms, last_processed_entry_hash,"
        " session_header_id, last_processed_entry_id FROM conversation_bootstrap_state"
        " WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    return {
        "applied": True,
        "dryRun": False,
        "conversationId": cid,
        "sessionId": target.session_id,
        "sessionKey": target.session_key,
        "transcript": {**_report(target, transcript, plan, len(data)), "oldTranscriptPath": old_copy},
        "reconcile": {
            "importedMessages": reconciled.get("importedMessages", 0),
            "reason": reconciled.get("reason"),
        },
        "ownership": ownership,
        "compaction": compaction,
        "backup": {"mode": mode, "path": made["backupPath"] if made else None},
        "checkpoint": {
            "sessionFilePath": checkpoint[0],
            "lastSeenSize": checkpoint[1],
            "lastSeenMtimeMs": checkpoint[2],
            "lastProcessedEntryHash": checkpoint[3],
            "sessionHeaderId": checkpoint[4],
            "lastProcessedEntryId": checkpoint[5],
        },
        "messageCount": message_count,
        "lastRotatedAt": _iso_now(),
    }


def _refresh_frontier(
    store: Store,
    conn: Any,
    cid: int,
    path: str,
    info: os.stat_result,
    header_id: str | None,
    plan: RewritePlan,
) -> None:
    """§3.4: the checkpoint describes the new file, so the next bootstrap replays nothing."""
    previous = conn.execute(
        "SELECT session_file_path, session_header_id, fork_bounded, fork_source_message_count,"
        " soft_reset_pruned_at FROM conversation_bootstrap_state WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    same_path = previous is not None and previous[0] == path
    store.upsert_bootstrap_state(
        cid,
        path,
        last_seen_size=info.st_size,
        last_seen_mtime_ms=info.st_mtime_ns // 1_000_000,
        last_processed_offset=info.st_size,
        last_processed_entry_hash=_frontier_hash(conn, cid),
        session_header_id=header_id or (previous[1] if previous is not None else None),
        last_processed_entry_id=plan.last_entry_id,
        fork_bounded=bool(previous[2]) if same_path else False,
        fork_source_message_count=int(previous[3]) if same_path else 0,
        soft_reset_pruned_at=previous[4] if same_path else None,
    )


def _changed(path: str) -> LcmError:
    return LcmError(
        "TRANSCRIPT_CHANGED",
        f"Transcript {path} changed while rotate was reading it; nothing was rewritten. Run rotate again.",
        {"file": path},
    )


def _stamp() -> str:
    from lcm_cli.engine.config.file import backup_stamp

    return backup_stamp()


def _iso_now() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def counts_only(data: Mapping[str, Any]) -> dict[str, Any]:
    """The control contract's sanitized rotate result: counts and a time, never paths."""
    return {
        "operation": "rotate",
        "messageCount": data["messageCount"],
        "lastRotatedAt": data["lastRotatedAt"],
    }
