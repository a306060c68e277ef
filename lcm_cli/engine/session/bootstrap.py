"""Bootstrap: bring a session's conversation level with its transcript JSONL.

docs/reference/engine.md §3. The first import of a session keeps only the newest messages that
fit ``bootstrapMaxTokens``; later calls reconcile: find the anchor (the newest transcript
entry already stored, by entry id, else by (role, content) occurrence counts, else by
the checkpoint's entry hash) and import what follows it, at most
``max(floor(existing × 0.2), 50)`` messages per call (the flood cap). The checkpoint
(``conversation_bootstrap_state``) is written only after proven overlap or an import,
so an unchanged file is recognised later without being read.

Before reading the whole file: the rollover guards (:mod:`lcm_cli.engine.session.rollover`), the
append-only fast path for a file that only grew (:mod:`lcm_cli.engine.session.append_only`;
same rows as the full read), and an in-process cache of full reads that wrote nothing.

Messages are read by the transcript reader of ``lcm migrate-sessions`` (the active leaf
path) and written through the live ingest path (:mod:`lcm_cli.engine.session.ingest`) with their
entry ids, as the reference's bootstrap does: large payloads are externalized and
stable event keys set; the replay-flood guard is skipped (the transcript proves them).
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.db.sessions import get_or_create, queue_key, session_lock
from lcm_cli.engine.session.ingest import Batch, IngestSettings
from lcm_cli.engine.session.rollover import AMBIGUOUS_REASON, archive_for_rollover, check_rollover

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

MIN_IMPORT_CAP = 50
IMPORT_CAP_RATIO = 0.2


def trim_to_budget(messages: Sequence[Any], budget: int) -> list[Any]:
    """The newest suffix whose stored tokens fit ``budget`` (§3.4).

    Walks newest to oldest and stops before the message that would exceed it; when the
    newest message alone exceeds the budget nothing is kept.
    """
    total = 0
    start = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        tokens = _built(messages[index]).token_count
        if total + tokens > budget:
            break
        total += tokens
        start = index
    return list(messages[start:])


def import_cap(existing: int) -> int:
    """The flood cap: messages one reconcile pass may import into a non-empty conversation."""
    return max(math.floor(existing * IMPORT_CAP_RATIO), MIN_IMPORT_CAP)


def _parent_session(path: str) -> bool:
    """True when the first non-blank line is a session header naming a parent session."""
    try:
        with open_input(path) as handle:
            for raw in handle:
                if raw.strip():
                    try:
                        header = loads_bounded(raw)
                    except ValueError:
                        return False
                    parent = header.get("parentSession") if isinstance(header, dict) else None
                    return (
                        header.get("type") == "session" and isinstance(parent, str) and bool(parent.strip())
                    )
    except OSError:
        return False
    return False


def _built(item: Any) -> Any:
    """The built row of an item: a (built row, raw entry) pair, or a built row alone."""
    return item[0] if isinstance(item, tuple) and len(item) == 2 else item


def bootstrap_session(
    store: Store,
    settings: IngestSettings,
    session_id: str,
    session_file: str,
    *,
    session_key: str | None = None,
    max_tokens: int,
    append_only: bool = True,
    source: str | None = None,
) -> dict[str, Any]:
    """Bootstrap or reconcile one session from its transcript in one transaction.

    ``source``: what the checkpoint records as the session's source when ``session_file``
    is only a private copy of it (the host store's ``sqlite:`` marker of the session).
    ``append_only=False`` never takes the append-only fast path (tests compare the two).
    """
    from lcm_cli.engine.transcript.message import build_message
    from lcm_cli.engine.transcript.reader import scan_transcript

    result: dict[str, Any] = {
        "bootstrapped": False,
        "importedMessages": 0,
        "reason": None,
        "conversationId": None,
        "sessionId": session_id,
        "sessionKey": session_key,
        "sessionFile": source or os.path.abspath(session_file),
    }
    exclusion = settings.policy.exclusion(session_id, session_key)
    if exclusion is not None:
        result["reason"] = "session excluded by pattern" if exclusion == "excluded" else "stateless session"
        return result
    path = os.path.abspath(session_file)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise LcmError(
            "TRANSCRIPT_UNREADABLE",
            f"cannot read transcript {path}: {exc.strerror or exc}. Pass the session's JSONL file with --session-file.",
            {"file": path},
        ) from None
    size, mtime_ms = info.st_size, info.st_mtime_ns // 1_000_000
    recorded = source or path
    with session_lock(queue_key(session_id, session_key)), store.transaction():
        conn = store.conn
        rollover = check_rollover(conn, session_id, session_key, recorded)
        if rollover is not None:
            result["rollover"] = {
                "kind": rollover.kind,
                "previousConversationId": rollover.conversation_id,
                "previousSessionId": rollover.previous_session_id,
                "previousSessionFile": rollover.previous_file,
            }
            if rollover.kind == "ambiguous":
                result.update(conversationId=rollover.conversation_id, reason=AMBIGUOUS_REASON)
                return result
            archive_for_rollover(conn, rollover.conversation_id)
        conversation = get_or_create(conn, session_id, session_key)
        cid = conversation.conversation_id
        result["conversationId"] = cid
        result["sessionKey"] = conversation.session_key
        checkpoint = conn.execute(
            "SELECT session_file_path, last_seen_size, last_seen_mtime_ms, last_processed_offset,"
            " last_processed_entry_hash, last_processed_entry_id FROM conversation_bootstrap_state"
            " WHERE conversation_id = ?",
            (cid,),
        ).fetchone()
        bootstrapped_at = conn.execute(
            "SELECT bootstrapped_at FROM conversations WHERE conversation_id = ?", (cid,)
        ).fetchone()[0]
        epoch = False
        if checkpoint is not None and (
            checkpoint[0] != recorded or checkpoint[3] > size or checkpoint[1] > size
        ):
            epoch, checkpoint = True, None  # path mismatch or shrink: a new transcript epoch
        if checkpoint is not None and checkpoint[1] == size and checkpoint[2] == mtime_ms:
            _mark_bootstrapped(conn, cid)
            result["reason"] = (
                "already bootstrapped" if bootstrapped_at else "conversation already up to date"
            )
            return result
        existing = conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (cid,)).fetchone()[
            0
        ]
        grew = checkpoint is not None and size > checkpoint[1] and mtime_ms >= checkpoint[2]
        if append_only and grew and existing > 0:
            fast = _append_only(
                store,
                settings,
                conversation,
                checkpoint,
                existing,
                (path, size, mtime_ms, recorded),
                bootstrapped_at,
                result,
            )
            if fast is not None:
                return fast
        memo = None
        if existing > 0:
            newest = conn.execute(
                "SELECT MAX(message_id) FROM messages WHERE conversation_id = ?", (cid,)
            ).fetchone()[0]
            memo = (
                os.path.realpath(store.path),
                cid,
                path,
                info.st_dev,
                info.st_ino,
                size,
                info.st_mtime_ns,
                tuple(checkpoint) if checkpoint is not None else None,
                epoch,
                existing,
                newest,
                max_tokens,
            )
            cached = _recall(memo)
            if cached is not None:
                result.update(cached, readCache="hit")
                return result
        transcript = scan_transcript(path)
        messages = [
            (
                build_message(
                    e.message,
                    entry_id=e.entry_id,
                    envelope_timestamp=e.envelope_timestamp,
                    line=e.line,
                    byte_size=e.byte_size,
                ),
                e,
            )
            for e in transcript.iter_entries()
        ]
        batch = Batch(store, settings, session_id, conversation.session_key)
        batch.conversation_id = cid
        result["transcriptMessages"] = len(messages)
        if existing == 0:
            kept = trim_to_budget(messages, max_tokens)
            fork_bounded = _parent_session(path) and len(kept) < len(messages)
            inserted = _insert(batch, kept, result)
            _mark_bootstrapped(conn, cid)
            _write_checkpoint(
                store,
                cid,
                recorded,
                size,
                mtime_ms,
                transcript,
                _built(kept[-1]) if kept else (_built(messages[-1]) if messages else None),
                fork_bounded=fork_bounded,
                fork_count=len(messages),
            )
            result.update(bootstrapped=True, importedMessages=inserted)
            result["trimmedMessages"] = len(messages) - len(kept)
            if fork_bounded:
                result["reason"] = "fork-bounded bootstrap import"
            elif not kept:
                result["reason"] = "no leaf-path messages in session"
            return result
        outcome = _reconcile(batch, messages, checkpoint, existing, allow_no_anchor=epoch, result=result)
        result.update(outcome)
        imported = outcome["importedMessages"]
        if outcome.get("capped"):
            result["reason"] = outcome.get("capReason", "reconcile import capped")
            if imported == 0 and outcome.get("capReason") == "reconcile duplicate transcript replay":
                _remember(memo, result)
            return result
        if imported > 0 or outcome["hasOverlap"]:
            _mark_bootstrapped(conn, cid)
            _write_checkpoint(
                store, cid, recorded, size, mtime_ms, transcript, _built(messages[-1]) if messages else None
            )
        if imported > 0:
            result.update(bootstrapped=True, reason="reconciled missing session messages")
        elif outcome["hasOverlap"]:
            result["reason"] = (
                "already bootstrapped" if bootstrapped_at else "conversation already up to date"
            )
        else:
            result["reason"] = "conversation already has messages"
            _remember(memo, result)
        return result


# §3.1 step 7, made safe: the outcome of a full read that wrote nothing (no overlap, or
# a refused duplicate replay), keyed by everything it depended on (the database file,
# the conversation's row count and newest id, the checkpoint row, the file's identity,
# size and mtime, the budget). The same state gives the same outcome, so an unchanged
# file is not read again by a long-lived process (`lcm serve`); any change to the file
# or the conversation is a different key. Oldest entries go first past the cap.
_READ_CACHE: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
READ_CACHE_CAP = 4096
_CACHED_KEYS = (
    "reason",
    "transcriptMessages",
    "hasOverlap",
    "importedMessages",
    "anchor",
    "capped",
    "capReason",
)


# `lcm serve` runs sessions on several threads: the cache is shared, so it has its own lock.
_READ_CACHE_LOCK = threading.Lock()


def _recall(memo: tuple[Any, ...]) -> dict[str, Any] | None:
    with _READ_CACHE_LOCK:
        cached = _READ_CACHE.get(memo)
        if cached is not None:
            _READ_CACHE.move_to_end(memo)
        return dict(cached) if cached is not None else None


def _remember(memo: tuple[Any, ...] | None, result: dict[str, Any]) -> None:
    if memo is None:
        return
    with _READ_CACHE_LOCK:
        _READ_CACHE[memo] = {k: result[k] for k in _CACHED_KEYS if k in result}
        while len(_READ_CACHE) > READ_CACHE_CAP:
            _READ_CACHE.popitem(last=False)


class _Frontier(NamedTuple):
    """The checkpoint's own message, as :func:`_write_checkpoint` needs it."""

    entry_hash: str
    entry_id: str


def _append_only(
    store: Store,
    settings: IngestSettings,
    conversation: Any,
    checkpoint: Any,
    existing: int,
    file_state: tuple[str, int, int, str],
    bootstrapped_at: Any,
    result: dict[str, Any],
) -> dict[str, Any] | None:
    """§3.1 step 6: import only the appended slice, or None (then the file is read whole).

    Taken only when its rows provably equal the full read's: the newest stored row is
    the checkpoint's message (frontier hash), the anchor entry is stored, the slice
    continues the active path (:func:`lcm_cli.engine.session.append_only.read_appended`), none
    of its entries is stored yet, and it fits the import cap. Everything else about the
    import (adoption of runtime-written twins, the live ingest path) is the reconcile's.
    """
    from lcm_cli.engine.core.identity import entry_hash
    from lcm_cli.engine.session.append_only import read_appended
    from lcm_cli.engine.transcript.message import build_message

    path, size, mtime_ms, recorded = file_state
    conn, cid = store.conn, conversation.conversation_id
    _, _, _, offset, cp_hash, cp_entry_id = checkpoint
    newest = conn.execute(
        "SELECT role, content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1", (cid,)
    ).fetchone()
    if newest is None or entry_hash(newest[0], newest[1]) != cp_hash:
        result["fastPath"] = "newest stored row is not the checkpoint's message"
        return None
    appended = read_appended(path, offset, size, cp_hash, cp_entry_id)
    if isinstance(appended, str):
        result["fastPath"] = appended
        return None
    ids = [cp_entry_id, *(e.entry_id for e in appended.entries)]
    stored = {
        row[0]
        for row in conn.execute(
            "SELECT transcript_entry_id FROM messages WHERE conversation_id = ? AND transcript_entry_id IN"
            " (SELECT value FROM json_each(?))",
            (cid, json.dumps(ids)),
        )
    }
    if cp_entry_id not in stored or len(stored) > 1:
        result["fastPath"] = "appended slice overlaps stored rows" if len(stored) > 1 else "anchor not stored"
        return None
    if len(appended.entries) > import_cap(existing):
        result["fastPath"] = "appended slice exceeds the import cap"
        return None
    items = [
        (build_message(e.message, entry_id=e.entry_id, envelope_timestamp=e.envelope_timestamp), e)
        for e in appended.entries
    ]
    batch = Batch(store, settings, conversation.session_id, conversation.session_key)
    batch.conversation_id = cid
    out: dict[str, Any] = {"hasOverlap": True, "importedMessages": 0, "anchor": "append-only"}
    _import_after(batch, items, -1, existing, set(), out, result)
    out["hasOverlap"] = True
    result.update(out)
    result["fastPath"] = "taken"
    result["appendedMessages"] = len(items)
    _mark_bootstrapped(conn, cid)
    last = _built(items[-1]) if items else _Frontier(cp_hash, cp_entry_id)
    _write_checkpoint(store, cid, recorded, size, mtime_ms, None, last)
    if out["importedMessages"] > 0:
        result.update(bootstrapped=True, reason="reconciled missing session messages")
    else:
        result["reason"] = "already bootstrapped" if bootstrapped_at else "conversation already up to date"
    return result


def _insert(batch: Batch, items: Sequence[Any], result: dict[str, Any]) -> int:
    """Ingest (built row, raw entry) items through the live path; return how many were stored."""
    stored = 0
    for index, (built, entry) in enumerate(items):
        outcome = batch.ingest_one(
            index,
            entry.message,
            entry_id=built.entry_id,
            flood_guard=False,
            envelope_timestamp=entry.envelope_timestamp,
            js_ready=True,
        )
        if outcome["status"] == "ingested":
            stored += 1
            result["filesExternalized"] = result.get("filesExternalized", 0) + len(outcome.get("files", ()))
        else:
            skipped = result.setdefault("skippedMessages", {})
            skipped[outcome["reason"]] = skipped.get(outcome["reason"], 0) + 1
    return stored


def _mark_bootstrapped(conn: Any, cid: int) -> None:
    conn.execute(
        "UPDATE conversations SET bootstrapped_at = COALESCE(bootstrapped_at, datetime('now')),"
        " updated_at = datetime('now') WHERE conversation_id = ?",
        (cid,),
    )


def _write_checkpoint(
    store: Store,
    cid: int,
    path: str,
    size: int,
    mtime_ms: int,
    transcript: Any,
    last: Any,
    *,
    header_id: str | None = None,
    fork_bounded: bool | None = None,
    fork_count: int = 0,
) -> None:
    previous = store.conn.execute(
        "SELECT session_file_path, session_header_id, fork_bounded, fork_source_message_count,"
        " soft_reset_pruned_at FROM conversation_bootstrap_state WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    same_path = previous is not None and previous[0] == path
    if fork_bounded is None:
        bounded, count = (bool(previous[2]), previous[3]) if same_path else (False, 0)
    else:
        bounded, count = fork_bounded, fork_count if fork_bounded else 0
    store.upsert_bootstrap_state(
        cid,
        path,
        last_seen_size=size,
        last_seen_mtime_ms=mtime_ms,
        last_processed_offset=size,
        last_processed_entry_hash=last.entry_hash if last is not None else None,
        session_header_id=(transcript.header_id if transcript is not None else header_id)
        or (previous[1] if previous is not None else None),
        last_processed_entry_id=last.entry_id if last is not None else None,
        fork_bounded=bounded,
        fork_source_message_count=count,
        soft_reset_pruned_at=previous[4] if same_path else None,
    )


def _reconcile(
    batch: Batch,
    messages: list[Any],
    checkpoint: Any,
    existing: int,
    *,
    allow_no_anchor: bool,
    result: dict[str, Any],
) -> dict[str, Any]:
    """§3.2: find the anchor and import what follows it (capped); items are (built, raw) pairs."""
    conn, cid = batch.conn, batch.conversation()
    out: dict[str, Any] = {"hasOverlap": False, "importedMessages": 0, "anchor": None}
    if not messages:
        return out
    built = [_built(m) for m in messages]
    anchor: int | None = None
    if all(m.entry_id for m in built):
        present = {
            row[0]
            for row in conn.execute(
                "SELECT transcript_entry_id FROM messages WHERE conversation_id = ?"
                " AND transcript_entry_id IS NOT NULL",
                (cid,),
            )
        }
        wanted = checkpoint[5] if checkpoint is not None else None
        ids = [m.entry_id for m in built]
        if wanted in ids and wanted in present:
            anchor = len(ids) - 1 - ids[::-1].index(wanted)
        else:
            anchor = next((i for i in range(len(ids) - 1, -1, -1) if ids[i] in present), None)
        if anchor is not None:
            out["anchor"] = "entry-id"
            return _import_after(batch, messages, anchor, existing, present, out, result)
    anchor = _content_anchor(conn, cid, built)
    if anchor is not None:
        out["anchor"] = "content"
    elif checkpoint is not None and checkpoint[4]:
        hits = [i for i, m in enumerate(built) if m.entry_hash == checkpoint[4]]
        if len(hits) == 1:
            anchor = hits[0]
            out["anchor"] = "checkpoint-hash"
    if anchor is not None:
        return _import_after(batch, messages, anchor, existing, set(), out, result)
    if not allow_no_anchor:
        return out
    # No-anchor epoch import, with the duplicate-replay guard (§3.3).
    known = Counter(
        (row[0], row[1])
        for row in conn.execute("SELECT role, identity_hash FROM messages WHERE conversation_id = ?", (cid,))
    )
    persisted = sum(1 for m in built if known[(m.role, m.identity_hash)] > 0)
    if persisted >= max(3, math.ceil(len(built) * 0.5)):
        prefix = 0
        while prefix < len(built) and known[(built[prefix].role, built[prefix].identity_hash)] > 0:
            prefix += 1
        if prefix == len(built):
            out.update(capped=True, capReason="reconcile duplicate transcript replay")
            return out
        messages = messages[prefix:]
    out["anchor"] = "none (new transcript epoch)"
    return _import_after(batch, messages, -1, existing, set(), out, result)


def _content_anchor(conn: Any, cid: int, messages: list[Any]) -> int | None:
    """The newest index whose (role, content) is stored as often as it occurs up to there."""
    newest = conn.execute(
        "SELECT role, content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1", (cid,)
    ).fetchone()
    db_counts = Counter(
        (row[0], row[1])
        for row in conn.execute(
            "SELECT role, content FROM messages WHERE conversation_id = ? AND identity_hash IN"
            " (SELECT value FROM json_each(?))",
            (cid, json.dumps(sorted({m.identity_hash for m in messages}))),
        )
    )
    running: Counter[tuple[str, str]] = Counter()
    upto: list[int] = []
    for m in messages:
        running[(m.role, m.content)] += 1
        upto.append(running[(m.role, m.content)])
    last = messages[-1]
    if newest is not None and (newest[0], newest[1]) == (last.role, last.content):
        if db_counts[(last.role, last.content)] == upto[-1]:
            return len(messages) - 1
    for index in range(len(messages) - 1, -1, -1):
        key = (messages[index].role, messages[index].content)
        if db_counts[key] > 0 and db_counts[key] == upto[index]:
            return index
    return None


def _import_after(
    batch: Batch,
    messages: list[Any],
    anchor: int,
    existing: int,
    present: set[str],
    out: dict[str, Any],
    result: dict[str, Any],
) -> dict[str, Any]:
    cid = batch.conversation()
    out["hasOverlap"] = anchor >= 0
    pending = [
        m for m in messages[anchor + 1 :] if _built(m).entry_id is None or _built(m).entry_id not in present
    ]
    if batch.settings.prune_heartbeat and pending:
        # pruneHeartbeatOk (§3.2 step 7): heartbeat turns a reconcile would bring back
        # after a prune are left out of the import instead.
        from lcm_cli.engine.session.heartbeat import heartbeat_turn_indexes

        dropped = heartbeat_turn_indexes([(_built(m).role, _built(m).content) for m in pending])
        if dropped:
            pending = [m for i, m in enumerate(pending) if i not in dropped]
            out["heartbeatDropped"] = len(dropped)
    cap = import_cap(existing)
    rows = []
    adopted = 0
    for item in pending[:cap]:
        if _built(item).entry_id is not None and _adopt(batch.store, cid, _built(item)):
            adopted += 1
            continue
        rows.append(item)
    out["importedMessages"] = _insert(batch, rows, result)
    out["adoptedMessages"] = adopted
    if len(pending) > cap:
        out.update(capped=True, capReason="reconcile import capped", remainingMessages=len(pending) - cap)
    return out


def _adopt(store: Store, cid: int, message: Any) -> bool:
    """Stamp the entry id on the earliest unstamped identical row (one runtime ingest wrote).

    The stamped anchor is recorded as verified, as lossless-claw 1.0's reconcile records
    an unstamped row it adopts or a stored entry id it checked by role and content.
    """
    from lcm_cli.engine.db.store.anchor_trust import MATCHED_REASON, PROJECTION_RECONCILE

    row = store.conn.execute(
        "SELECT message_id FROM messages WHERE conversation_id = ? AND transcript_entry_id IS NULL"
        " AND role = ? AND identity_hash = ? AND content = ? ORDER BY seq LIMIT 1",
        (cid, message.role, message.identity_hash, message.content),
    ).fetchone()
    if row is None:
        return False
    store.conn.execute(
        "UPDATE messages SET transcript_entry_id = ? WHERE message_id = ?", (message.entry_id, row[0])
    )
    store.trust_anchor(cid, row[0], message.entry_id, source=PROJECTION_RECONCILE, reason=MATCHED_REASON)
    return True
