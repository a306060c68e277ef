"""`session.commit_turn`: the durable-turn contract of OpenClaw 2026.8 and later.

A current host admits a user turn into its own SQLite transcript, runs it, and then
calls the context engine's ``commitTurn({advancementKey, admission, terminal, messages})``
with exactly the turn's messages (the admitted user message through the accepted
terminal entry). The engine must store them atomically and idempotently by
``advancementKey``: the host retries a commit it did not see acknowledged, so a retry
answers ``duplicate`` and stores nothing twice.

One turn is one transaction: the turn's messages, its ledger row (``turn_advancements``,
lossless-claw 1.0's table and columns) and, the first time lcm sees a session, the import
of the session's earlier history from the host's own store (``admission.storePath``,
read-only, before the write lock is taken). A kill at any instant leaves all of it or
none. The ledger's ``payload_hash`` is lossless-claw 1.0's (sha256 of the canonical JSON
of the payload, keys in ``localeCompare`` order, numbers as JavaScript spells them), so a
retry that reaches the other engine after a switch is still recognised as the same turn.

A turn whose messages are already stored without a ledger row (the other engine, or an
import of the host's transcript, stored them while the turn waited in the host's retry
outbox) is recognised by the host's entry id of its user message, else by its first
message's stored form and timestamp: those messages answer ``duplicate`` with the row
they duplicate, and only the rest is stored.

The answer lists each message: ``stored`` (its ``messageId``), ``duplicate`` (the row it
duplicates, ``duplicateOf``) or ``skipped`` (a reason, as ingest gives). After the
commit the threshold is tested as ``session.after_turn`` tests it; over it, debt is
recorded for the warm server (or the host's maintain) to drain, whatever
``proactiveThresholdCompactionMode`` says: lossless-claw 1.0's commitTurn never compacts
inline, and no summarizer is called on the turn's path.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.jscompat import collation_key, js_ordered, js_values, stringify
from lcm_cli.engine.core.params import (
    ADMISSION,
    ADVANCEMENT_KEY,
    FILE,
    IS_HEARTBEAT,
    MESSAGES,
    TERMINAL,
    Param,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.sessions import find_active, queue_key, session_lock
from lcm_cli.engine.session.ingest import (
    DUPLICATE_ENTRY_ID,
    DUPLICATE_STABLE_KEY,
    IngestSettings,
    check_message_shape,
    ingest_messages,
    input_error,
    stored_form,
)
from lcm_cli.engine.transcript.host_store import Snapshot, session_marker, store_for_session

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

#: Admission and terminal fields that must agree: one transcript, one generation.
_SAME_TARGET = ("agentId", "sessionId", "sessionKey", "storePath", "generation")
#: The anchors' fields and their JSON types (lossless-claw 1.0's TranscriptEntryAnchor).
_ANCHOR_TEXT = (
    "agentId",
    "sessionId",
    "sessionKey",
    "storePath",
    "generation",
    "entryId",
    "effectiveParentId",
    "logicalTurnId",
    "role",
    "idempotencyKey",
)
_ANCHOR_INTEGER = ("rawSeq", "activeMessagePosition")
#: Ingest's skip reasons that name the stored row a message duplicates.
_DUPLICATE_REASONS = frozenset({DUPLICATE_ENTRY_ID, DUPLICATE_STABLE_KEY})
ALREADY_STORED = "already-stored"


def _canonical(value: Any) -> Any:
    """JSON.stringify's view of ``value`` with object keys in ``localeCompare`` order.

    As in any JavaScript object, integer-like keys still come first, ascending, whatever
    order the entries were sorted into.
    """
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        entries = sorted(value.items(), key=lambda entry: collation_key(entry[0]))
        return js_ordered((key, _canonical(item)) for key, item in entries)
    return value


def payload_hash(
    advancement: dict[str, Any],
    *,
    session_id: str,
    session_key: str | None,
    is_heartbeat: bool,
    pre_prompt_message_count: int | None = None,
) -> str:
    """lossless-claw 1.0's receipt hash of one committed turn (its retry identity).

    ``pre_prompt_message_count``: 1.0-beta.1's variant, whose payload also carried the
    admission's active position under that name (1.0 still accepts such receipts).
    """
    payload: dict[str, Any] = {
        "admission": advancement.get("admission"),
        "isHeartbeat": is_heartbeat,
        "messages": advancement["messages"],
        "prePromptMessageCount": pre_prompt_message_count,
        "sessionId": session_id,
        "sessionKey": session_key,
        "terminal": advancement.get("terminal"),
    }
    # JSON.stringify drops undefined members; an absent admission or key is undefined there.
    payload = {k: v for k, v in payload.items() if v is not None or k == "isHeartbeat"}
    # Numbers as the host's JSON.parse read them (1e-7, not 1e-07; 1, not 1.0; ...).
    canonical = _canonical(js_values(payload))
    return hashlib.sha256(stringify(canonical).encode("utf-8", "surrogatepass")).hexdigest()


def _anchor(req: Request, param: Param[Any]) -> dict[str, Any] | None:
    """The admission or terminal object, its fields checked against the host's types."""
    field, value = param.name, req[param]
    if value is None:
        return None
    if isinstance(value, str):
        from lcm_cli.engine.core.limits import loads_bounded

        try:
            value = loads_bounded(value)
        except ValueError as exc:
            raise input_error(
                f"--{field} is not JSON ({exc}).", {"field": field, "reason": "invalid-json"}
            ) from None
    if not isinstance(value, dict):
        raise invalid_argument(f"{field} must be a JSON object.", {"field": field, "reason": "wrong-type"})
    for name in _ANCHOR_TEXT:
        item = value.get(name)
        if item is not None and not isinstance(item, str):
            raise invalid_argument(
                f"{field}.{name} must be a string.", {"field": f"{field}.{name}", "reason": "wrong-type"}
            )
    for name in _ANCHOR_INTEGER:
        item = value.get(name)
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or item < 0):
            raise invalid_argument(
                f"{field}.{name} must be a non-negative integer.",
                {"field": f"{field}.{name}", "reason": "wrong-type"},
            )
    return value


def _check_range(key: str, admission: dict[str, Any], terminal: dict[str, Any] | None, count: int) -> None:
    """The host's own consistency rules for one advancement (fail closed, nothing written)."""
    logical = admission.get("logicalTurnId")
    if logical is not None and logical != key:
        raise invalid_argument(
            "advancementKey does not match admission.logicalTurnId: this is not the admitted turn.",
            {"advancementKey": key, "logicalTurnId": logical},
        )
    if terminal is None:
        return
    changed = [f for f in _SAME_TARGET if f in admission and f in terminal and admission[f] != terminal[f]]
    if changed:
        raise invalid_argument(
            "The turn's transcript target changed between admission and terminal entry: "
            + ", ".join(changed)
            + ".",
            {"fields": changed},
        )
    first, last = admission.get("activeMessagePosition"), terminal.get("activeMessagePosition")
    if isinstance(first, int) and isinstance(last, int):
        if last < first or count != last - first + 1:
            raise invalid_argument(
                f"The turn spans transcript positions {first}..{last} but carries {count} messages.",
                {"admissionPosition": first, "terminalPosition": last, "messages": count},
            )


@contextlib.contextmanager
def host_snapshot(host_store: str, session_id: str, before_seq: int | None) -> Iterator[Snapshot | LcmError]:
    """A private JSONL copy of a session's events in the host's store (all, or those before
    ``before_seq``), removed when the block ends; the LcmError when the store cannot be read.

    Taken before lcm.db's write lock, so reading a long history never stalls a writer.
    """
    from lcm_cli.engine.transcript import host_store as hs

    workdir = tempfile.mkdtemp(prefix="lcm-host-snapshot-")
    try:
        try:
            taken: Snapshot | LcmError = hs.snapshot(host_store, session_id, workdir, before_seq=before_seq)
        except LcmError as exc:
            taken = exc
        yield taken
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def import_host_history(
    ctx: Context,
    store: Store,
    settings: IngestSettings,
    session_id: str,
    key: str | None,
    host_store: str,
    taken: Snapshot | LcmError,
) -> dict[str, Any]:
    """Import a session's earlier history from a :func:`host_snapshot` (bootstrap's budget).

    The conversation records the session's place in the store (the host's ``sqlite:``
    marker), never the private copy it was read from.
    """
    from lcm_cli.engine.assembly.fallback import bootstrap_budget
    from lcm_cli.engine.session.bootstrap import bootstrap_session

    if isinstance(taken, LcmError):
        return {"error": taken.code, "message": taken.message}
    try:
        outcome: dict[str, Any] = bootstrap_session(
            store,
            settings,
            session_id,
            taken.path,
            session_key=key,
            max_tokens=bootstrap_budget(ctx.effective),
            source=session_marker(host_store, session_id),
        )
    except LcmError as exc:
        return {"error": exc.code, "message": exc.message}
    return outcome


def _stored_prefix(
    conn: Any, cid: int, admission: dict[str, Any] | None, messages: list[dict[str, Any]], realign: bool
) -> list[int]:
    """Row ids of the turn's leading messages that the conversation already holds, in order.

    The turn is found by the host's entry id of its user message (an import of the host's
    transcript records it), else by its first message's stored form and timestamp (the
    same turn stored by another engine); from there, messages match the following rows
    one by one. ``realign``: a history import that may already hold this very turn (no
    bound on the host's events) is matched against the conversation's newest rows.
    """
    if not messages:
        return []
    anchor = None
    entry_id = (admission or {}).get("entryId")
    if entry_id:
        anchor = conn.execute(
            "SELECT seq FROM messages WHERE conversation_id = ? AND transcript_entry_id = ?", (cid, entry_id)
        ).fetchone()
    first = stored_form(messages[0])
    if (
        anchor is None
        and first.created_at is not None
        and any(messages[0].get(k) is not None for k in ("timestamp", "createdAt", "created_at"))
    ):
        anchor = conn.execute(
            "SELECT seq FROM messages WHERE conversation_id = ? AND identity_hash = ? AND role = ?"
            " AND content = ? AND created_at = ? ORDER BY seq DESC LIMIT 1",
            (cid, first.identity_hash, first.role, first.content, first.created_at),
        ).fetchone()
    if anchor is not None:
        rows = conn.execute(
            "SELECT message_id, role, content FROM messages WHERE conversation_id = ? AND seq >= ?"
            " ORDER BY seq LIMIT ?",
            (cid, anchor[0], len(messages)),
        ).fetchall()
    elif realign:
        from lcm_cli.engine.session.after_turn import unflushed_start

        k = unflushed_start(conn, cid, messages)
        rows = conn.execute(
            "SELECT message_id, role, content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?",
            (cid, k),
        ).fetchall()[::-1]
    else:
        return []
    matched = []
    for row, message in zip(rows, messages):
        built = stored_form(message)
        if (row[1], row[2]) != (built.role, built.content):
            break
        matched.append(int(row[0]))
    return matched


def _turn_rows(conn: Any, cid: int | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A retried turn's messages, each with the newest stored row it equals (or None)."""
    out = []
    for index, message in enumerate(messages):
        built = stored_form(message)
        row = None
        if cid is not None:
            row = conn.execute(
                "SELECT message_id FROM messages WHERE conversation_id = ? AND identity_hash = ? AND role = ?"
                " AND content = ? ORDER BY seq DESC LIMIT 1",
                (cid, built.identity_hash, built.role, built.content),
            ).fetchone()
        out.append(
            {
                "index": index,
                "role": built.role,
                "status": "duplicate",
                "duplicateOf": int(row[0]) if row is not None else None,
            }
        )
    return out


def _outcome(entry: dict[str, Any], offset: int) -> dict[str, Any]:
    """An ingest result entry as the commit reports it: stored, duplicate or skipped."""
    out: dict[str, Any] = {"index": entry["index"] + offset, "role": entry.get("role")}
    if entry["status"] == "ingested":
        out.update(status="stored", messageId=entry["messageId"], seq=entry["seq"])
        for extra in ("files", "stableKeyCollision"):
            if extra in entry:
                out[extra] = entry[extra]
    elif entry.get("reason") in _DUPLICATE_REASONS:
        out.update(status="duplicate", reason=entry["reason"], duplicateOf=entry.get("duplicateOf"))
    else:
        out.update(status="skipped", reason=entry.get("reason"))
    return out


@operation("session.commit_turn")
def commit_turn(ctx: Context, req: Request) -> Result:
    """Commit a turn: ``committed`` the first time, ``duplicate`` for a retry of the same key."""
    from lcm_cli.engine.session.after_turn import post_turn_threshold
    from lcm_cli.engine.session.inputs import read_input, request_session

    key_value = req[ADVANCEMENT_KEY]
    if not isinstance(key_value, str) or not key_value.strip():
        raise invalid_argument("Pass the turn's advancementKey.", {"parameter": "advancementKey"})
    advancement_key = key_value
    messages, _ = read_input(
        {"messages": req[MESSAGES], "file": req[FILE]},
        ctx.stdin,
        "`session.commit_turn` needs the turn's messages",
    )
    for index, message in enumerate(messages):
        check_message_shape(message, index, require_role=False)
    admission = _anchor(req, ADMISSION)
    terminal = _anchor(req, TERMINAL)
    session_id, key = request_session(req, required=False)
    session_id = session_id or (admission or {}).get("sessionId")
    key = key or (admission or {}).get("sessionKey")
    if not session_id:
        raise invalid_argument("Name the session: pass sessionId (or an admission that carries it).")
    if admission is not None:
        _check_range(advancement_key, admission, terminal, len(messages))
    is_heartbeat = req[IS_HEARTBEAT]
    settings = IngestSettings.from_config(ctx.effective)
    data: dict[str, Any] = {
        "status": "committed",
        "advancementKey": advancement_key,
        "sessionId": session_id,
        "sessionKey": key,
        "conversationId": None,
        "received": len(messages),
        "messages": [],
        "ingest": None,
        "bootstrap": None,
        "threshold": None,
        "compaction": None,
        "debt": None,
        "reason": None,
    }
    exclusion = settings.policy.exclusion(session_id, key)
    if exclusion is not None:
        # As the reference: an ignored or stateless session acknowledges without writing.
        data["reason"] = "session excluded" if exclusion == "excluded" else "stateless session"
        why = "excluded-session" if exclusion == "excluded" else "stateless-session"
        data["messages"] = [
            {"index": i, "role": m.get("role"), "status": "skipped", "reason": why}
            for i, m in enumerate(messages)
        ]
        return Result(data)

    turn = {"admission": admission, "terminal": terminal, "messages": messages}
    digest = payload_hash(turn, session_id=session_id, session_key=key, is_heartbeat=is_heartbeat)
    position = (admission or {}).get("activeMessagePosition")
    store = ctx.store()
    conn = store.conn
    named_store = (admission or {}).get("storePath")
    host_store = store_for_session(ctx.state_dir, key, named_store)
    raw_seq = (admission or {}).get("rawSeq")
    # First sight of a session whose host keeps a store: its history is imported from there.
    history_store = (
        host_store
        if (
            host_store is not None
            and position != 0  # the session's first turn has no earlier history
            and find_active(conn, session_id, key) is None
            and not _committed(conn, advancement_key)
        )
        else None
    )
    with contextlib.ExitStack() as stack:
        taken = (
            stack.enter_context(host_snapshot(history_store, session_id, raw_seq)) if history_store else None
        )
        with session_lock(queue_key(session_id, key)), store.transaction():
            row = conn.execute(
                "SELECT payload_hash FROM turn_advancements WHERE advancement_key = ?", (advancement_key,)
            ).fetchone()
            if row is not None:
                legacy = (
                    payload_hash(
                        turn,
                        session_id=session_id,
                        session_key=key,
                        is_heartbeat=is_heartbeat,
                        pre_prompt_message_count=position,
                    )
                    if isinstance(position, int)
                    else None
                )
                if row[0] not in (digest, legacy):
                    raise LcmError(
                        "TURN_ADVANCEMENT_CONFLICT",
                        f"Advancement key {advancement_key} was already committed with a different turn; "
                        "nothing was written. The host must not reuse a key for another turn.",
                        {"advancementKey": advancement_key},
                    )
                data["status"] = "duplicate"
                found = find_active(conn, session_id, key)
                data["conversationId"] = int(found[0]) if found is not None else None
                data["messages"] = _turn_rows(conn, data["conversationId"], messages)
                return Result(data)
            if history_store and taken is not None and find_active(conn, session_id, key) is None:
                data["bootstrap"] = import_host_history(
                    ctx, store, settings, session_id, key, history_store, taken
                )
            found = find_active(conn, session_id, key)
            # Without the admitted entry's seq the imported history may hold this turn already.
            realign = data["bootstrap"] is not None and not isinstance(raw_seq, int)
            already = _stored_prefix(conn, int(found[0]), admission, messages, realign) if found else []
            result = ingest_messages(
                store,
                settings,
                session_id,
                messages[len(already) :],
                session_key=key,
                is_heartbeat=is_heartbeat,
                raw_id_filter=False,
            )
            conn.execute(
                "INSERT INTO turn_advancements (advancement_key, payload_hash, session_id, session_key,"
                " admission_entry_id, terminal_entry_id, message_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    advancement_key,
                    digest,
                    session_id,
                    key,
                    str((admission or {}).get("entryId") or ""),
                    str((terminal or {}).get("entryId") or ""),
                    result["ingested"],
                ),
            )
        data["messages"] = [
            {
                "index": i,
                "role": stored_form(messages[i]).role,
                "status": "duplicate",
                "reason": ALREADY_STORED,
                "duplicateOf": row_id,
            }
            for i, row_id in enumerate(already)
        ] + [_outcome(entry, len(already)) for entry in result["messages"]]
        data["ingest"] = {
            "ingested": result["ingested"],
            "skipped": result["skipped"],
            "alreadyStored": len(already),
            "stableKeyCollisions": result["stableKeyCollisions"],
        }
    found = find_active(conn, session_id, key)
    # Deferred whatever proactiveThresholdCompactionMode says, as lossless-claw 1.0's
    # commitTurn: the committed turn is answered without compacting.
    return post_turn_threshold(ctx, data, found, session_id, key, req, "deferred")


def _committed(conn: Any, advancement_key: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM turn_advancements WHERE advancement_key = ?", (advancement_key,)
        ).fetchone()
        is not None
    )
