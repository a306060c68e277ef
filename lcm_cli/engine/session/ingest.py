"""Runtime ingest: persist the host's messages as lossless-claw's ``ingestSingle`` does.

One call (one message or a batch) is one ``BEGIN IMMEDIATE`` transaction under the
session's lock (docs/reference/engine.md §1.4, §2.6). Each message goes through the reference's
order (§2.1): heartbeat, role, aborted-empty assistant, stored form (the very projection,
parts and token count of the transcript importer), runtime-context sentinel, get or
create the conversation, entry-id / stable-key / delivery-mirror dedup (§2.2),
large-payload interception (§2.4), the replay-flood guard, then the row, its parts, its
FTS row and a context item (§2.3). Ingest never compacts.

Every message gets a result: ``ingested`` with its id and seq (and any externalized
files), or ``skipped`` with a stable reason.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.assembly.large_files import Interceptor
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.jscompat import js_values
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.sessions import SessionPolicy, find_active, get_or_create, queue_key, session_lock

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
RUNTIME_CONTEXT_SENTINEL = (
    "OpenClaw runtime context for the immediately preceding user message. "
    "This context is runtime-generated, not user-author."
)
DELIVERY_MIRROR_MODEL = "delivery-mirror"
_PROVIDER_TOOL_ID = re.compile(r"(?:toolu_|call_)[A-Za-z0-9]{12,}")
_TOOL_ID_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id")
_BLOCK_ID_KEYS = ("tool_use_id", "toolUseId", "toolCallId", "tool_call_id", "call_id")
_RESULT_TYPES = frozenset({"tool_result", "toolResult", "tool_use_result", "function_call_output"})

# Skip reasons (stable strings, documented in docs/engine.md).
HEARTBEAT = "heartbeat"
EXCLUDED = "excluded-session"
STATELESS = "stateless-session"
UNSUPPORTED_ROLE = "unsupported-role"
ABORTED_EMPTY = "aborted-empty-assistant"
RUNTIME_CONTEXT = "runtime-context-sentinel"
DUPLICATE_ENTRY_ID = "duplicate-entry-id"
DUPLICATE_STABLE_KEY = "duplicate-stable-key"
DELIVERY_MIRROR = "delivery-mirror"
REPLAY_FLOOD = "replay-flood"
DUPLICATE_RAW_ID = "duplicate-raw-id"

# The raw-id replay filter (§2.6 step 2) looks at the parts of the conversation's newest
# max(RAW_ID_WINDOW, 2 x batch size) messages: ``message_parts.tool_call_id`` has no
# index, and a replayed batch repeats the turns just stored, so the window grows with
# the batch, not with the conversation (256 rows cost about 0.5 ms). Provider-minted
# tool-result ids older than that are still caught conversation-wide by the
# stable-event-key index (step 7 of §2.1).
RAW_ID_WINDOW = 256
# The window's messages through the (conversation, seq) index, their parts through the
# parts' message index; a string-content tool result keeps its call id in the metadata.
RAW_ID_SQL = (
    "SELECT m.role, p.tool_call_id, CASE WHEN m.role = 'tool' AND json_valid(p.metadata)"
    " THEN json_extract(p.metadata, '$.toolCallId') END FROM (SELECT message_id, role FROM messages"
    " WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?) AS m"
    " JOIN message_parts AS p ON p.message_id = m.message_id"
)


class IngestSettings(NamedTuple):
    """The effective-config values ingest needs."""

    large_files_dir: str
    large_file_threshold: int = EngineSettings.large_file_token_threshold.default
    replay_external: int = EngineSettings.replay_flood_threshold_external.default
    replay_internal: int = EngineSettings.replay_flood_threshold_internal.default
    policy: SessionPolicy = SessionPolicy()
    # ``pruneHeartbeatOk``: bootstrap prunes heartbeat turns and leaves them out of reconcile imports.
    prune_heartbeat: bool = False

    @classmethod
    def from_config(cls, effective: Mapping[str, Any]) -> IngestSettings:
        """Read ``largeFilesDir``, ``largeFileTokenThreshold``, the replay limits, session patterns, ``pruneHeartbeatOk``."""
        settings = EngineSettings(effective)
        return cls(
            settings.files_dir(),
            settings.large_file_threshold(),
            # Always integers >= 1: the resolver lets no other value through (config.md §5).
            int(settings.replay_flood_threshold_external),
            int(settings.replay_flood_threshold_internal),
            settings.session_policy(),
            settings.prune_heartbeat_ok is True,
        )


def input_error(message: str, details: Any) -> LcmError:
    """An ``INVALID_INPUT`` error: the messages given cannot be read; nothing was written."""
    return LcmError("INVALID_INPUT", message, details)


def check_message_shape(message: Any, index: int, *, require_role: bool) -> None:
    """Reject what cannot be a message at all (before anything is written).

    A non-object, or a field of the wrong JSON type (``role`` not a string, ``content``
    neither string, array, object nor null), is an input error. A missing role is an
    error only with ``require_role`` (the CLI); otherwise that message is skipped.
    """
    if not isinstance(message, dict):
        raise input_error(
            f"message {index} is not a JSON object; each message is an object with role and content.",
            {"index": index, "reason": "not-an-object"},
        )
    role = message.get("role")
    if role is None and require_role:
        raise input_error(
            f"message {index} has no role; give each message a role (user, assistant, system, tool or toolResult).",
            {"index": index, "reason": "missing-role"},
        )
    if role is not None and not isinstance(role, str):
        raise input_error(
            f"message {index}: role must be a string.",
            {"index": index, "field": "role", "reason": "wrong-type"},
        )
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list, dict)):
        raise input_error(
            f"message {index}: content must be a string, an array of blocks or an object.",
            {"index": index, "field": "content", "reason": "wrong-type"},
        )
    for field in ("timestamp", "createdAt", "created_at"):
        value = message.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            raise input_error(
                f"message {index}: {field} must be epoch milliseconds or an ISO-8601 string.",
                {"index": index, "field": field, "reason": "wrong-type"},
            )


def stable_event_key(message: Mapping[str, Any]) -> str | None:
    """``assistant-response:<id>`` or ``tool-result:<provider id>`` (database.md §3.2), else None."""
    role = message.get("role")
    if role == "assistant":
        response = message.get("responseId") or message.get("response_id")
        if isinstance(response, str) and response.strip():
            return f"assistant-response:{response.strip()}"
        return None
    if role not in ("tool", "toolResult"):
        return None
    ids: set[str] = set()
    for key in _TOOL_ID_KEYS:
        value = message.get(key)
        if isinstance(value, str) and value:
            ids.add(value)
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in _RESULT_TYPES:
                for key in _BLOCK_ID_KEYS:
                    value = block.get(key)
                    if isinstance(value, str) and value:
                        ids.add(value)
    if len(ids) != 1:
        return None
    (only,) = ids
    return f"tool-result:{only}" if _PROVIDER_TOOL_ID.fullmatch(only) else None


def _is_empty_content(content: Any) -> bool:
    return content is None or content == "" or content == []


def _build(message: dict[str, Any], envelope_timestamp: str | None = None, *, js_ready: bool = False) -> Any:
    from lcm_cli.engine.transcript.message import build_message

    # Numbers are stored as the reference spells them (``1e-7``), whoever decoded the message;
    # ``js_ready``: already so (read by the transcript reader, or passed through js_values).
    if not js_ready:
        message = js_values(message)
    if "content" not in message and not ("command" in message and "output" in message):
        message = {**message, "content": ""}
    return build_message(message, envelope_timestamp=envelope_timestamp)


def stored_form(message: dict[str, Any]) -> Any:
    """The row a message would be stored as (role, content, identity hash, tokens, ...)."""
    return _build(message)


def _has_reasoning(conn: sqlite3.Connection, message_id: int) -> bool:
    row = conn.execute(
        "SELECT 1 FROM message_parts WHERE message_id = ? AND (part_type = 'reasoning'"
        " OR metadata LIKE '%\"topLevelReasoningContent\"%') LIMIT 1",
        (message_id,),
    ).fetchone()
    return row is not None


class Batch:
    """State shared by the messages of one call: the conversation and the flood counts."""

    def __init__(
        self, store: Store, settings: IngestSettings, session_id: str, session_key: str | None
    ) -> None:
        self.store = store
        self.conn: sqlite3.Connection = store.conn
        self.settings = settings
        self.session_id = session_id
        self.session_key = session_key
        self.conversation_id: int | None = None
        self.created = False

    def conversation(self) -> int:
        """The session's conversation id, found or created on first need."""
        if self.conversation_id is None:
            found = get_or_create(self.conn, self.session_id, self.session_key)
            self.conversation_id = found.conversation_id
            self.created = found.created
            self.session_key = found.session_key
        return self.conversation_id

    def _flooded(self, built: Any, created_at: str) -> bool:
        """The replay-flood guard (§2.2): too many same-second replays of an earlier row."""
        conn, cid = self.conn, self.conversation_id
        if not built.content:
            return False
        # The unary + keeps the planner on the identity-hash index: the time index would
        # walk every earlier message of the conversation.
        twin = conn.execute(
            "SELECT 1 FROM messages WHERE conversation_id = ? AND identity_hash = ? AND role = ?"
            " AND content = ? AND +julianday(created_at) < julianday(?) LIMIT 1",
            (cid, built.identity_hash, built.role, built.content, created_at),
        ).fetchone()
        if twin is None:
            return False
        earlier_twin = (
            "EXISTS (SELECT 1 FROM messages e WHERE e.conversation_id = m.conversation_id"
            " AND e.identity_hash = m.identity_hash AND e.role = m.role AND e.content = m.content"
            " AND +julianday(e.created_at) < julianday(m.created_at))"
        )
        if built.role == "user":
            existing = conn.execute(
                f"SELECT COUNT(*) FROM messages m WHERE m.conversation_id = ? AND m.role = ?"
                f" AND m.created_at = ? AND {earlier_twin}",
                (cid, built.role, created_at),
            ).fetchone()[0]
            limit = self.settings.replay_external
        else:
            existing = conn.execute(
                f"SELECT COUNT(*) FROM messages m WHERE m.conversation_id = ? AND m.role = ?"
                f" AND m.identity_hash = ? AND m.content = ? AND m.created_at = ? AND {earlier_twin}",
                (cid, built.role, built.identity_hash, built.content, created_at),
            ).fetchone()[0]
            limit = self.settings.replay_internal
        # Rows of this batch inserted before this one are already in ``existing``.
        return int(existing) + 1 >= limit

    def ingest_one(
        self,
        index: int,
        message: dict[str, Any],
        *,
        entry_id: str | None,
        flood_guard: bool,
        envelope_timestamp: str | None = None,
        js_ready: bool = False,
    ) -> dict[str, Any]:
        """§2.1 steps 2-11 for one message; returns its result entry.

        ``js_ready``: the message holds JavaScript values already (the transcript reader's).
        """
        from lcm_cli.engine.db.store.stamps import sqlite_timestamp

        role = message.get("role")
        if role not in PERSISTABLE_ROLES:
            return _skipped(index, UNSUPPORTED_ROLE, role=role)
        # Once, up front: the externalized files are written from this message too.
        if not js_ready:
            message = js_values(message)
        stop = message.get("stopReason", message.get("stop_reason"))
        if role == "assistant" and stop in ("error", "aborted") and _is_empty_content(message.get("content")):
            return _skipped(index, ABORTED_EMPTY, role=role)
        built = _build(message, envelope_timestamp, js_ready=True)
        if role == "assistant" and built.content.lstrip().startswith(RUNTIME_CONTEXT_SENTINEL):
            return _skipped(index, RUNTIME_CONTEXT, role=role)
        cid = self.conversation()
        conn = self.conn
        if entry_id is not None:
            twin = conn.execute(
                "SELECT message_id FROM messages WHERE conversation_id = ? AND transcript_entry_id = ?",
                (cid, entry_id),
            ).fetchone()
            if twin is not None:
                return _skipped(index, DUPLICATE_ENTRY_ID, role=built.role, duplicateOf=int(twin[0]))
        key = stable_event_key(message)
        collision = None
        if key is not None:
            twin = conn.execute(
                "SELECT message_id, role, content, identity_hash FROM messages"
                " WHERE conversation_id = ? AND stable_event_key = ?",
                (cid, key),
            ).fetchone()
            if twin is not None:
                if _same_event(twin, built):
                    return _skipped(
                        index,
                        DUPLICATE_STABLE_KEY,
                        role=built.role,
                        stableEventKey=key,
                        duplicateOf=int(twin[0]),
                    )
                # The provider reused the id for another reply (a local server that restarted
                # counts its ids from 1 again): kept, without the key, and reported.
                collision = {"stableEventKey": key, "messageId": int(twin[0])}
                key = None
        if role == "assistant" and message.get("model") == DELIVERY_MIRROR_MODEL and built.content.strip():
            newest = conn.execute(
                "SELECT message_id, role, content, identity_hash FROM messages WHERE conversation_id = ?"
                " ORDER BY seq DESC LIMIT 1",
                (cid,),
            ).fetchone()
            if (
                newest is not None
                and tuple(newest[1:]) == (built.role, built.content, built.identity_hash)
                and _has_reasoning(conn, int(newest[0]))
            ):
                return _skipped(index, DELIVERY_MIRROR, role=built.role)
        interceptor = Interceptor(
            conn, self.settings.large_files_dir, cid, self.settings.large_file_threshold
        )
        rewritten = interceptor.intercept_blocks(message)
        if rewritten is not message:
            built = _build(rewritten, envelope_timestamp, js_ready=True)
        raw = interceptor.intercept_raw(rewritten, built.token_count)
        if raw is not rewritten:
            built = _build(raw, envelope_timestamp, js_ready=True)
            # The reference counts an externalized message as its reference text alone.
            built = built._replace(token_count=estimate_tokens(built.content))
        created_at = built.created_at or sqlite_timestamp()
        if flood_guard and self._flooded(built, created_at):
            return _skipped(index, REPLAY_FLOOD, role=built.role)
        row = built.as_row()
        row["created_at"] = created_at
        row["transcript_entry_id"] = entry_id
        row["stable_event_key"] = key
        try:
            with self.store.transaction():
                message_id = self.store.add_messages(cid, [row])[0]
        except sqlite3.IntegrityError:
            if key is None:
                raise
            # A racing writer took the stable key: keep the row, without the key (as the reference does).
            row["stable_event_key"] = None
            message_id = self.store.add_messages(cid, [row])[0]
        seq = conn.execute("SELECT seq FROM messages WHERE message_id = ?", (message_id,)).fetchone()[0]
        result: dict[str, Any] = {
            "index": index,
            "status": "ingested",
            "role": built.role,
            "messageId": message_id,
            "seq": seq,
            "tokenCount": built.token_count,
        }
        if interceptor.written:
            result["files"] = interceptor.written
        if collision is not None:
            result["stableKeyCollision"] = collision
        return result


def _same_event(twin: Sequence[Any], built: Any) -> bool:
    """Is ``built`` the stored row ``twin`` (same stable key) again, not another event?

    The same reply may come back in another representation (the host's transcript next to
    its runtime message, a retry with reasoning stripped), so it need not be identical: the
    same role and either the same identity hash or the same visible text make it the same
    event. A provider that reuses an id for a new reply produces other text; when in
    doubt the message is kept, never dropped.
    """
    _, role, content, identity_hash = twin
    if role != built.role:
        return False
    return bool(
        identity_hash == built.identity_hash or (content or "").strip() == (built.content or "").strip()
    )


def _skipped(index: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"index": index, "status": "skipped", "reason": reason, **extra}


def _raw_ids(message: Any) -> set[tuple[str, str]]:
    """(stored role, tool call id) of every part of ``message`` that names a tool call."""
    if not isinstance(message, dict):
        return set()
    role = message.get("role")
    if role not in ("assistant", "tool", "toolResult"):
        return set()
    if role == "assistant" and not isinstance(message.get("content"), list):
        return set()
    built = _build(message)
    found = {(built.role, p["tool_call_id"]) for p in built.parts if p.get("tool_call_id")}
    if built.role == "tool":
        # A string-content result keeps its call id only in the part's metadata.
        found.update((built.role, v) for k in _TOOL_ID_KEYS if isinstance(v := message.get(k), str) and v)
    return found


def raw_id_replays(conn: sqlite3.Connection, conversation_id: int, messages: Sequence[Any]) -> set[int]:
    """Indexes of ``messages`` whose raw tool ids the conversation already stores (§2.6 step 2).

    A message is a replay when any of its tool call ids is already on a part of a stored
    message of the same role (a call repeats a call, a result a result: a result and its
    call share the id). Only the newest ``max(RAW_ID_WINDOW, 2 x len(messages))`` messages are read,
    through the (conversation, seq) index and the parts' message index, so the cost does
    not grow with the parts table.
    """
    wanted = {index: _raw_ids(m) for index, m in enumerate(messages)}
    wanted_ids = {call for pairs in wanted.values() for _, call in pairs}
    if not wanted_ids:
        return set()
    stored: set[tuple[str, str]] = set()
    window = max(RAW_ID_WINDOW, 2 * len(messages))
    for role, call, meta in conn.execute(RAW_ID_SQL, (conversation_id, window)):
        stored.update((role, v) for v in (call, meta) if isinstance(v, str) and v in wanted_ids)
    return {index for index, pairs in wanted.items() if pairs & stored}


def ingest_messages(
    store: Store | None,
    settings: IngestSettings,
    session_id: str,
    messages: Sequence[Any],
    *,
    session_key: str | None = None,
    is_heartbeat: bool = False,
    entry_ids: Sequence[str | None] | None = None,
    flood_guard: bool = True,
    require_role: bool = False,
    raw_id_filter: bool = True,
) -> dict[str, Any]:
    """Ingest ``messages`` for one session in one transaction; report each message.

    With ``raw_id_filter`` (the reference's ``ingestBatch``), messages whose tool call
    ids the conversation already stores are skipped as ``duplicate-raw-id``.

    ``store`` is an open :class:`lcm_cli.engine.db.store.Store` (None when nothing is
    written). Input that is not a message at all raises ``INVALID_INPUT`` before anything is written; any failure
    while writing rolls the whole call back.
    """
    for index, message in enumerate(messages):
        check_message_shape(message, index, require_role=require_role)
    summary: dict[str, Any] = {
        "sessionId": session_id,
        "sessionKey": session_key,
        "conversationId": None,
        "createdConversation": False,
        "received": len(messages),
        "ingested": 0,
        "skipped": 0,
        "filesExternalized": 0,
        "stableKeyCollisions": 0,
        "messages": [],
    }
    exclusion = settings.policy.exclusion(session_id, session_key)
    reason = None
    if exclusion is not None:
        reason = EXCLUDED if exclusion == "excluded" else STATELESS
    elif is_heartbeat:
        reason = HEARTBEAT
    if reason is not None or not messages:
        summary["messages"] = [_skipped(i, reason or HEARTBEAT) for i in range(len(messages))]
        summary["skipped"] = len(messages)
        return summary
    assert store is not None, "a turn that writes messages comes with an open store"
    with session_lock(queue_key(session_id, session_key)):
        batch = Batch(store, settings, session_id, session_key)
        results = []
        with store.transaction():
            replays: set[int] = set()
            if raw_id_filter:
                found = find_active(store.conn, session_id, session_key)
                if found is not None:
                    replays = raw_id_replays(store.conn, int(found[0]), messages)
            for index, message in enumerate(messages):
                if index in replays:
                    results.append(_skipped(index, DUPLICATE_RAW_ID, role=message.get("role")))
                    continue
                entry_id = entry_ids[index] if entry_ids is not None else None
                results.append(batch.ingest_one(index, message, entry_id=entry_id, flood_guard=flood_guard))
    summary["conversationId"] = batch.conversation_id
    summary["createdConversation"] = batch.created
    summary["sessionKey"] = batch.session_key
    summary["messages"] = results
    summary["ingested"] = sum(1 for r in results if r["status"] == "ingested")
    summary["skipped"] = len(results) - summary["ingested"]
    summary["filesExternalized"] = sum(len(r.get("files", ())) for r in results)
    summary["stableKeyCollisions"] = sum(1 for r in results if "stableKeyCollision" in r)
    return summary
