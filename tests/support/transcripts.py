"""Real OpenClaw session transcripts for tests and benchmarks, written deterministically.

:func:`write_transcript` writes a JSONL transcript the way OpenClaw's session manager
does: a ``{"type": "session"}`` header, then one entry per line, each message wrapped in
``{"type": "message", "id", "parentId", "timestamp", "message": {...}}`` and linked to
the previous entry by ``parentId``. The same seed always gives the same bytes.

It covers every role (user with ``__openclaw`` sender metadata and the injected
"Conversation info (untrusted metadata)" prelude, assistant with thinking/text/toolCall
blocks and model identity, top-level ``reasoning_content``, toolResult, system), every
content block type of docs/reference/migrate-sessions.md §3.3 (plus an unknown one), the
non-message entries OpenClaw writes (model_change, thinking_level_change, session_info,
custom, custom_message, label, compaction, branch_summary), messages with roles that are
not imported, and, on request, an abandoned branch left by a history edit.

The ``append_*`` helpers add the damage real files suffer: garbage, a crash-truncated
last line, bytes that are not UTF-8, NUL-filled blocks, duplicated lines.

:func:`write_sessions_index` writes the agent's ``sessions/sessions.json``: a JSON object
mapping each session key to ``{"sessionId", "updatedAt" (epoch ms), "sessionFile", ...}``
(OpenClaw's session store shape as its docs describe it: ``sessionKey -> {sessionId,
updatedAt, ...}``; ``sessionFile``, ``chatType`` and ``channel`` are optional extras).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

BASE_TIME = datetime(2026, 3, 1, 9, 0, 0, tzinfo=timezone.utc)

# Message kinds. The common ones rotate; each rare one comes once every ``rare_every``
# messages. The first messages of a file go through every kind once, so even a short
# transcript covers them all, while a long one has a realistic mix.
COMMON_KINDS = (
    "user_text",
    "assistant_tool_call",
    "tool_result",
    "assistant_text",
    "user_sender",
    "assistant_tool_call",
    "tool_result",
    "user_inbound_metadata",
    "assistant_reasoning_content",
    "user_blocks",
    "assistant_text",
    "system",
)
RARE_KINDS = (
    "all_blocks",
    "anthropic_blocks",
    "user_inbound_delivery_recap",
    "tool_result_error",
    "command_output",
    "unsupported_role",
)
MESSAGE_KINDS = tuple(dict.fromkeys(COMMON_KINDS + RARE_KINDS))
ENTRY_KINDS = (
    "model_change",
    "thinking_level_change",
    "session_info",
    "custom",
    "custom_message",
    "label",
    "compaction",
    "branch_summary",
)
ALL_KINDS = frozenset(MESSAGE_KINDS + ENTRY_KINDS)

PERSISTABLE = frozenset({"user", "assistant", "system", "tool", "toolResult"})

# Every block type docs/reference/migrate-sessions.md §3.3 names, plus one it does not.
ALL_BLOCK_TYPES = (
    "text",
    "thinking",
    "redacted_thinking",
    "reasoning",
    "toolCall",
    "tool_use",
    "toolUse",
    "tool-use",
    "tool_call",
    "functionCall",
    "function_call",
    "tool_result",
    "toolResult",
    "tool_use_result",
    "function_call_output",
    "image",
    "file",
    "patch",
    "subtask",
    "compaction",
    "step_start",
    "step-start",
    "step_finish",
    "step-finish",
    "snapshot",
    "retry",
    "agent",
    "mystery_block",
)

_WORDS = (
    "deploy the service",
    "check the logs",
    "the build failed on",
    "retry with",
    "database migration",
    "summary of",
    "error rate",
    "config value",
    "please look at",
    "ok, done",
    "図書館",
    "résumé café",
    "👍 looks good",
    "한국어 텍스트",
)
_TOOLS = ("bash", "read", "write", "edit", "web_search", "lcm_grep")


@dataclass
class GeneratedTranscript:
    """What was written, so tests can state exact expectations."""

    path: Path
    session_id: str
    lines: int = 0
    # Entry ids (or None for id-less lines) of the importable messages on the active
    # branch, in the order they will be imported.
    expected_ids: list[str | None] = field(default_factory=list)
    # Roles as stored (toolResult -> tool) of the same messages.
    expected_roles: list[str] = field(default_factory=list)
    abandoned_ids: list[str] = field(default_factory=list)
    unsupported_lines: list[int] = field(default_factory=list)
    structural: dict[str, int] = field(default_factory=dict)
    kinds_written: set[str] = field(default_factory=set)

    @property
    def message_count(self) -> int:
        """How many messages an import of this file should yield."""
        return len(self.expected_ids)


class _Writer:
    def __init__(self, path: Path, session_id: str, seed: int, with_ids: bool, style: str) -> None:
        self.path = path
        self.rng = random.Random(seed)
        self.with_ids = with_ids
        self.style = style
        self.out: list[str] = []
        self.counter = 0
        self.last_id: str | None = None
        self.tick = 0
        self.result = GeneratedTranscript(path=path, session_id=session_id)

    def new_id(self) -> str:
        self.counter += 1
        return f"{self.counter:04x}{self.rng.getrandbits(16):04x}"

    def iso(self, step: int | None = None) -> str:
        moment = BASE_TIME + timedelta(seconds=self.tick if step is None else step)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def ms(self) -> int:
        return int((BASE_TIME + timedelta(seconds=self.tick)).timestamp() * 1000)

    def emit(self, entry: Mapping[str, Any]) -> None:
        self.out.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        self.result.lines += 1

    def entry(self, kind: str, body: Mapping[str, Any], *, parent: str | None | bool = True) -> str | None:
        """Write one tree entry; ``parent=True`` links it to the previous entry."""
        self.tick += self.rng.randint(1, 30)
        record: dict[str, Any] = {"type": kind}
        entry_id: str | None = None
        if self.with_ids:
            entry_id = self.new_id()
            record["id"] = entry_id
            record["parentId"] = self.last_id if parent is True else (parent or None)
        record["timestamp"] = self.iso()
        record.update(body)
        self.emit(record)
        if entry_id is not None:
            self.last_id = entry_id
        return entry_id

    def message(self, message: Mapping[str, Any], *, parent: str | None | bool = True) -> str | None:
        if self.style == "bare":
            self.tick += self.rng.randint(1, 30)
            self.emit(message)
            return None
        return self.entry("message", {"message": message}, parent=parent)

    def words(self, low: int = 3, high: int = 18) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(low, high)))


def _user_text(w: _Writer) -> dict[str, Any]:
    return {"role": "user", "content": w.words(), "timestamp": w.ms()}


def _user_blocks(w: _Writer) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": w.words()},
            {"type": "image", "data": "iVBORw0KGgo" + "A" * w.rng.randint(8, 40), "mimeType": "image/png"},
        ],
        "timestamp": w.iso(),
    }


def _user_sender(w: _Writer) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": w.words()}],
        "timestamp": w.ms(),
        "__openclaw": {
            "senderId": f"user-{w.rng.randint(1, 99)}",
            "senderName": "Ada Lovelace",
            "senderUsername": "ada",
            "senderIsOwner": True,
        },
    }


def conversation_info(message_id: str, timestamp: str, *, history: int = 0) -> str:
    """An OpenClaw "Conversation info (untrusted metadata)" block (volatile keys vary)."""
    info: dict[str, Any] = {
        "message_id": message_id,
        "sender_id": "42",
        "conversation_label": "Ops room",
        "sender": "Ada",
        "timestamp": timestamp,
        "group_subject": "ops",
    }
    if history:
        info["history_count"] = history
    body = json.dumps(info, indent=2, ensure_ascii=False)
    return f"Conversation info (untrusted metadata):\n```json\n{body}\n```"


def sender_info(name: str = "Ada") -> str:
    """An OpenClaw "Sender (untrusted metadata)" block."""
    body = json.dumps({"label": f"{name} (42)", "id": "42", "name": name, "username": name.lower()}, indent=2)
    return f"Sender (untrusted metadata):\n```json\n{body}\n```"


def _user_inbound(w: _Writer) -> dict[str, Any]:
    text = f"{conversation_info(str(w.rng.randint(1000, 9999)), w.iso())}\n\n{sender_info()}\n\n{w.words()}"
    return {"role": "user", "content": text, "timestamp": w.ms()}


def _user_inbound_recap(w: _Writer) -> dict[str, Any]:
    recap = json.dumps(
        [
            {"sender": "Bo", "timestamp_ms": w.ms() - 5000, "body": "earlier"},
            {"sender": "Cy", "body": "more"},
        ],
        indent=2,
    )
    text = (
        "Delivery: group message in #ops\n\n"
        f"{conversation_info(str(w.rng.randint(1000, 9999)), w.iso(), history=2)}\n\n"
        f"{sender_info('Bo')}\n\n"
        f"Chat history since last reply (untrusted, for context):\n```json\n{recap}\n```\n\n"
        f"{w.words()}"
    )
    return {"role": "user", "content": text, "timestamp": w.ms()}


def _identity(w: _Writer) -> dict[str, Any]:
    return {
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": w.rng.randint(10, 900), "output": 42, "cost": {"input": 0.00003, "total": 0.0012}},
        "stopReason": "stop",
    }


def _assistant_text(w: _Writer) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": w.words()}],
        **_identity(w),
        "timestamp": w.ms(),
    }


def _assistant_tool_call(w: _Writer) -> tuple[dict[str, Any], str, str]:
    call_id = f"toolu_{w.rng.getrandbits(40):010x}"
    tool = w.rng.choice(_TOOLS)
    message = {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": w.words(2, 6),
                "thinkingSignature": "EqQBCkYIBxgCKkB" + "x" * 12,
            },
            {"type": "text", "text": w.words(1, 5)},
            {
                "type": "toolCall",
                "id": call_id,
                "name": tool,
                "arguments": {"command": "ls -la", "timeout": 30, "ratio": 0.5, "tiny": 1e-7},
            },
        ],
        **_identity(w),
        "stopReason": "toolUse",
        "timestamp": w.ms(),
    }
    return message, call_id, tool


def _assistant_reasoning(w: _Writer) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": w.words(),
        "reasoning_content": "Let me think. " + w.words(2, 8),
        "provider": "deepseek",
        "api": "openai-completions",
        "model": "deepseek-reasoner",
        "timestamp": w.ms(),
    }


def _tool_result(w: _Writer, call_id: str, tool: str, *, error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        "content": [{"type": "text", "text": "total 0\n" + w.words(2, 12)}],
        "details": {"exitCode": 1 if error else 0},
        "isError": error,
        "timestamp": w.ms(),
    }


def _system(w: _Writer) -> dict[str, Any]:
    return {"role": "system", "content": "System notice: " + w.words(2, 6)}


def all_blocks(text: str = "hello") -> list[dict[str, Any]]:
    """One content block of every type in §3.3 (and an unknown one)."""
    return [
        {"type": "text", "text": text},
        {"type": "thinking", "thinking": "pondering", "thinkingSignature": "sig-abc"},
        {"type": "redacted_thinking", "data": "b64redacted"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "step one"}, "step two"]},
        {"type": "toolCall", "id": "call_a", "name": "bash", "arguments": {"command": "ls"}},
        {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {"path": "/tmp/x"}},
        {"type": "toolUse", "id": "toolu_c", "name": "edit", "input": {"path": "a"}},
        {"type": "tool-use", "id": "toolu_d", "name": "write", "input": "raw input"},
        {"type": "tool_call", "id": "call_e", "name": "grep", "arguments": '{"q":"x"}'},
        {"type": "functionCall", "id": "fc_f", "name": "search", "arguments": {"q": "lcm"}},
        {"type": "function_call", "call_id": "fc_g", "name": "fetch", "arguments": '{"url":"u"}'},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "file body", "is_error": False},
        {"type": "toolResult", "toolCallId": "call_a", "output": {"stdout": "a\nb"}},
        {
            "type": "tool_use_result",
            "tool_use_id": "toolu_c",
            "content": [{"type": "text", "text": "edited"}],
        },
        {"type": "function_call_output", "call_id": "fc_g", "output": "page text"},
        {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUg", "mimeType": "image/png"},
        {"type": "file", "path": "/tmp/report.pdf", "mimeType": "application/pdf"},
        {"type": "patch", "text": "--- a\n+++ b\n"},
        {"type": "subtask", "description": "sub work", "prompt": "do it"},
        {"type": "compaction", "summary": "compacted earlier turns"},
        {"type": "step_start"},
        {"type": "step-start", "snapshot": "s1"},
        {"type": "step_finish", "reason": "stop"},
        {"type": "step-finish", "tokens": {"input": 1}},
        {"type": "snapshot", "snapshot": "abc123"},
        {"type": "retry", "attempt": 2, "error": {"message": "overloaded"}},
        {"type": "agent", "name": "helper"},
        {"type": "mystery_block", "payload": {"value": "surprise"}},
    ]


def _all_blocks(w: _Writer) -> dict[str, Any]:
    return {"role": "assistant", "content": all_blocks(w.words(1, 4)), **_identity(w), "timestamp": w.ms()}


def _anthropic_blocks(w: _Writer) -> dict[str, Any]:
    # An Anthropic-style user turn carrying tool results as blocks.
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_x",
                "content": [{"type": "text", "text": w.words(1, 4)}],
            },
            {"type": "text", "text": w.words(1, 4)},
        ],
        "timestamp": w.iso(),
    }


def _command_output(w: _Writer) -> dict[str, Any]:
    return {"role": "user", "command": "git status", "output": "On branch main\n" + w.words(1, 3)}


def _unsupported(w: _Writer) -> dict[str, Any]:
    return {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 0, "timestamp": w.ms()}


def _structural(w: _Writer, kind: str) -> dict[str, Any]:
    bodies: dict[str, dict[str, Any]] = {
        "model_change": {"provider": "anthropic", "modelId": "claude-opus-4-1"},
        "thinking_level_change": {"thinkingLevel": w.rng.choice(["low", "medium", "high"])},
        "session_info": {"name": "Deploy investigation"},
        "custom": {"customType": "lossless-claw", "data": {"note": w.words(1, 3)}},
        "custom_message": {"customType": "hook", "content": "injected context", "display": False},
        "label": {"targetId": w.last_id, "label": "checkpoint"},
        "compaction": {
            "summary": "Earlier: " + w.words(),
            "firstKeptEntryId": w.last_id,
            "tokensBefore": 1234,
        },
        "branch_summary": {"fromId": w.last_id, "summary": "Abandoned path: " + w.words(1, 4)},
    }
    return bodies[kind]


def write_transcript(
    path: str | Path,
    *,
    session_id: str,
    messages: int = 20,
    with_ids: bool = True,
    branches: bool = False,
    kinds: Iterable[str] = ALL_KINDS,
    seed: int = 0,
    header: bool = True,
    style: str = "envelope",
    entry_every: int = 7,
    reset_at: int | None = None,
    rare_every: int = 40,
) -> GeneratedTranscript:
    """Write a transcript with ``messages`` message entries (plus structural entries).

    ``with_ids=False`` writes envelopes without ``id``/``parentId`` (legacy files, read
    in file order); ``style="bare"`` writes bare ``{role, content}`` lines instead of
    envelopes. ``branches=True`` (ids only) leaves an abandoned branch near the middle:
    a history edit that re-appended the tail under an earlier parent. ``entry_every``
    puts a structural entry after every that many messages (0: none). ``reset_at=N``
    starts a new root (``parentId: null``) before the N-th message, abandoning all
    earlier messages, as OpenClaw's leaf reset does.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    chosen_kinds = set(kinds)
    common = [k for k in COMMON_KINDS if k in chosen_kinds] or ["user_text"]
    rare = [k for k in RARE_KINDS if k in chosen_kinds]
    opening = list(dict.fromkeys(common + rare))
    entry_kinds = [k for k in ENTRY_KINDS if k in chosen_kinds]
    w = _Writer(target, session_id, seed, with_ids and style != "bare", style)
    result = w.result
    if header:
        w.emit({"type": "session", "version": 3, "id": session_id, "timestamp": w.iso(0), "cwd": "/work"})
        result.structural["session"] = 1
    # (entry id, stored role) of the messages on the current branch, in order.
    branch: list[tuple[str | None, str]] = []
    fork_at = messages // 2 if branches and w.with_ids and messages >= 6 else -1
    pending_tool: tuple[str, str] | None = None
    written = 0
    i = 0
    while written < messages:
        if i < len(opening):
            kind = opening[i]
        elif rare and rare_every and i % rare_every == 0:
            kind = rare[(i // rare_every) % len(rare)]
        else:
            kind = common[i % len(common)]
        i += 1
        if written == fork_at:
            # A history edit: three replies are abandoned and the active path
            # resumes from the entry they hung from.
            fork_parent = w.last_id
            for _ in range(3):
                result.abandoned_ids.append(w.message(_assistant_text(w)) or "")
            w.last_id = fork_parent
        if written == reset_at and w.with_ids:
            # A leaf reset: a new root mid-file; everything before it is abandoned.
            result.abandoned_ids.extend(entry_id or "" for entry_id, _ in branch)
            branch = []
            w.last_id = None
        if kind == "tool_result" or kind == "tool_result_error":
            if pending_tool is None:
                message, call_id, tool = _assistant_tool_call(w)
                role = "assistant"
            else:
                call_id, tool = pending_tool
                message = _tool_result(w, call_id, tool, error=kind == "tool_result_error")
                role = "toolResult"
                pending_tool = None
        elif kind == "assistant_tool_call":
            message, call_id, tool = _assistant_tool_call(w)
            pending_tool = (call_id, tool)
            role = "assistant"
        else:
            builder = {
                "user_text": _user_text,
                "user_blocks": _user_blocks,
                "user_sender": _user_sender,
                "user_inbound_metadata": _user_inbound,
                "user_inbound_delivery_recap": _user_inbound_recap,
                "assistant_text": _assistant_text,
                "assistant_reasoning_content": _assistant_reasoning,
                "system": _system,
                "all_blocks": _all_blocks,
                "anthropic_blocks": _anthropic_blocks,
                "command_output": _command_output,
                "unsupported_role": _unsupported,
            }[kind]
            message = builder(w)
            role = message["role"]
        entry_id = w.message(message)
        written += 1
        result.kinds_written.add(kind)
        if role in PERSISTABLE:
            branch.append((entry_id, "tool" if role == "toolResult" else role))
        else:
            result.unsupported_lines.append(result.lines)
        if entry_kinds and entry_every and written % entry_every == 0 and style != "bare":
            kind_name = entry_kinds[(written // entry_every - 1) % len(entry_kinds)]
            w.entry(kind_name, _structural(w, kind_name))
            result.structural[kind_name] = result.structural.get(kind_name, 0) + 1
            result.kinds_written.add(kind_name)
    result.expected_ids = [entry_id for entry_id, _ in branch]
    result.expected_roles = [role for _, role in branch]
    target.write_text("\n".join(w.out) + "\n", encoding="utf-8")
    return result


def write_lines(path: str | Path, lines: Sequence[Any], *, trailing_newline: bool = True) -> Path:
    """Write raw lines: dicts/lists become compact JSON, str and bytes are written as they are."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\n".join(_line_bytes(line) for line in lines) + (b"\n" if trailing_newline else b""))
    return target


def _line_bytes(line: Any) -> bytes:
    if isinstance(line, bytes):
        return line
    if isinstance(line, str):
        return line.encode("utf-8")
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def append_lines(path: str | Path, lines: Sequence[Any]) -> None:
    """Append lines (as :func:`write_lines` spells them), each ending in a newline."""
    with open(path, "ab") as handle:
        for line in lines:
            handle.write(_line_bytes(line) + b"\n")


GARBAGE = {
    "invalid_json": b'{"type":"message","id":"zz1","message":{"role":"user",',
    "not_an_object": b"[1, 2, 3]",
    "not_utf8": b'{"type":"message","message":{"role":"user","content":"caf\xe9 \xff"}',
    "binary": b"\x00\x01\x02\x89PNG\r\x00\x00",
    "missing_fields": b'{"type":"message","id":"zz2","parentId":null,"message":{"role":"user"}}',
    "wrong_type": b'{"type":"message","message":{"role":42,"content":"x"}}',
    "unknown_entry_type": b'{"type":"telemetry_blip","data":{"x":1}}',
}


def append_garbage(path: str | Path, kinds: Iterable[str] = tuple(GARBAGE)) -> list[str]:
    """Append one line of each kind of damage in :data:`GARBAGE`; returns the kinds in order."""
    chosen = list(kinds)
    with open(path, "ab") as handle:
        for kind in chosen:
            handle.write(GARBAGE[kind] + b"\n")
    return chosen


def append_truncated(path: str | Path, entry: Mapping[str, Any] | None = None, keep: float = 0.6) -> None:
    """Append the first part of an entry with no newline, as a crash mid-write leaves it."""
    body = entry or {
        "type": "message",
        "id": "trunc001",
        "parentId": None,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "half written " * 8}]},
    }
    data = json.dumps(body).encode("utf-8")
    with open(path, "ab") as handle:
        handle.write(data[: max(1, int(len(data) * keep))])


def write_json_array_transcript(
    path: str | Path, messages: Sequence[Mapping[str, Any]], *, indent: int | None = 2
) -> Path:
    """A legacy transcript: one JSON array of bare message objects."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(list(messages), indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def write_sessions_index(
    agent_dir: str | Path,
    mapping: Mapping[str, str | Mapping[str, Any]],
    *,
    updated_at_ms: int | None = None,
) -> Path:
    """Write ``<agent_dir>/sessions/sessions.json`` mapping session keys to session entries.

    ``mapping`` values are a session id, or a dict merged over the defaults
    (``sessionId``, ``updatedAt``, ``sessionFile`` = the transcript beside the index).
    """
    sessions = Path(agent_dir) / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    stamp = updated_at_ms if updated_at_ms is not None else int(BASE_TIME.timestamp() * 1000)
    store: dict[str, Any] = {}
    for offset, (key, value) in enumerate(mapping.items()):
        extra = {"sessionId": value} if isinstance(value, str) else dict(value)
        session_id = extra.get("sessionId", "")
        entry: dict[str, Any] = {
            "sessionId": session_id,
            "updatedAt": stamp + offset * 1000,
            "sessionFile": str(sessions / f"{session_id}.jsonl"),
            "chatType": "direct",
        }
        entry.update(extra)
        store[key] = entry
    target = sessions / "sessions.json"
    target.write_text(json.dumps(store, indent=2) + "\n", encoding="utf-8")
    return target
