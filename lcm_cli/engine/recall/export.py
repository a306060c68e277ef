"""`lcm export`: one conversation's raw messages as Markdown or as an OpenClaw transcript.

Messages are read in ``seq`` order in fixed-size batches and written as they are read,
so memory stays flat however long the conversation is. The JSONL form is an OpenClaw
session transcript (docs/reference/migrate-sessions.md §3): a session header, then one message
entry per row (its stored entry id, chained by ``parentId``), content blocks rebuilt from
``message_parts`` -- so `lcm migrate-sessions --file` imports it back to the same
messages. ``--include-summaries`` adds the summary DAG (JSONL: ``custom`` entries the
importer skips; Markdown: a section after the messages).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from typing import Any, TextIO

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import EXPORT_FORMATS, INCLUDE_SUMMARIES, OUT, TO, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read.conversation_rows import find_conversation, identity_of
from lcm_cli.engine.recall.scope import choice

if TYPE_CHECKING:
    from lcm_cli.engine.core.outputs import OutputTarget

BATCH = 1_000
_ROLE_OUT = {"tool": "toolResult"}
_BACKTICKS = re.compile(r"`+")


def iso_time(stored: str | None) -> str | None:
    """A stored timestamp as ISO-8601 UTC (``YYYY-MM-DDTHH:MM:SS.sssZ``); ISO values pass through."""
    if not stored:
        return None
    text = stored.strip()
    if "T" in text:
        return text
    if len(text) == 19:
        return text.replace(" ", "T") + ".000Z"
    return text


def _message_batches(ctx: Context, cid: int) -> Iterator[list[Any]]:
    sender = ctx.probe.col("messages", "openclaw_sender_metadata")
    entry = ctx.probe.col("messages", "transcript_entry_id")
    last_seq: int | None = None
    while True:
        rows = ctx.query(
            f"""SELECT message_id, seq, role, content, token_count, created_at, {sender}, {entry}
                FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?""",
            (cid, -(2**62) if last_seq is None else last_seq, BATCH),
        )
        if not rows:
            return
        yield rows
        last_seq = rows[-1]["seq"]


def _parts_by_message(ctx: Context, ids: list[int]) -> dict[int, list[Any]]:
    if not ids or not ctx.probe.has_table("message_parts"):
        return {}
    marks = ",".join("?" for _ in ids)
    out: dict[int, list[Any]] = {}
    for row in ctx.query(
        f"""SELECT message_id, part_type, text_content, metadata FROM message_parts
            WHERE message_id IN ({marks}) ORDER BY message_id, ordinal""",
        ids,
    ):
        out.setdefault(row[0], []).append(row)
    return out


def _metadata(part: Any) -> dict[str, Any]:
    try:
        value = json.loads(part["metadata"]) if part["metadata"] else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def transcript_message(row: Any, parts: list[Any]) -> dict[str, Any]:
    """The OpenClaw message object for one stored row, rebuilt from its parts.

    Array content is the parts' original blocks (``metadata.raw``); a single text part
    without a raw block was string content; without parts the stored text is used.
    """
    metas = [_metadata(p) for p in parts]
    first = metas[0] if metas else {}
    role = first.get("originalRole") or _ROLE_OUT.get(row["role"], row["role"])
    content: Any
    if parts and all("raw" in m for m in metas):
        content = [m["raw"] for m in metas]
    elif len(parts) == 1 and parts[0]["part_type"] == "text" and parts[0]["text_content"] is not None:
        content = parts[0]["text_content"]
    elif parts and first.get("topLevelReasoningOnly"):
        content = []
    else:
        content = row["content"]
    message: dict[str, Any] = {"role": role, "content": content}
    if iso_time(row["created_at"]):
        message["timestamp"] = iso_time(row["created_at"])
    for key, field in (
        ("modelProvider", "provider"),
        ("modelApi", "api"),
        ("modelId", "model"),
        ("responseModelId", "responseModel"),
        ("toolCallId", "toolCallId"),
        ("toolName", "toolName"),
        ("isError", "isError"),
    ):
        if first.get(key) is not None:
            message[field] = first[key]
    if isinstance(first.get("topLevelReasoningContent"), str):
        message[first.get("topLevelReasoningField") or "reasoning_content"] = first[
            "topLevelReasoningContent"
        ]
    if row["openclaw_sender_metadata"]:
        with contextlib.suppress(ValueError):
            sender = json.loads(row["openclaw_sender_metadata"])
            if isinstance(sender, dict):
                message["__openclaw"] = sender
    return message


def _summaries(ctx: Context, cid: int) -> list[Any]:
    return ctx.query(
        """SELECT s.summary_id, s.kind, s.depth, s.content, s.token_count, s.earliest_at, s.latest_at,
                  s.created_at,
                  (SELECT json_group_array(parent_summary_id) FROM
                     (SELECT parent_summary_id FROM summary_parents WHERE summary_id = s.summary_id
                      ORDER BY ordinal)) AS sources,
                  (SELECT json_group_array(message_id) FROM
                     (SELECT message_id FROM summary_messages WHERE summary_id = s.summary_id
                      ORDER BY ordinal)) AS messages
           FROM summaries s WHERE s.conversation_id = ?
           ORDER BY s.depth DESC, julianday(COALESCE(s.latest_at, s.created_at)), s.summary_id""",
        (cid,),
    )


def _write_jsonl(ctx: Context, conv: Any, out: TextIO, with_summaries: bool) -> tuple[int, int]:
    def line(value: Any) -> None:
        out.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")

    line(
        {"type": "session", "version": 3, "id": conv["session_id"], "timestamp": iso_time(conv["created_at"])}
    )
    parent: str | None = None
    summaries = 0
    if with_summaries:
        for s in _summaries(ctx, conv["conversation_id"]):
            entry_id = f"lcm-{s['summary_id']}"
            line(
                {
                    "type": "custom",
                    "customType": "lcm-summary",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": iso_time(s["created_at"]),
                    "data": {
                        "summaryId": s["summary_id"],
                        "kind": s["kind"],
                        "depth": s["depth"],
                        "tokenCount": s["token_count"],
                        "earliestAt": s["earliest_at"],
                        "latestAt": s["latest_at"],
                        "sourceSummaryIds": json.loads(s["sources"] or "[]"),
                        "sourceMessageIds": json.loads(s["messages"] or "[]"),
                        "content": s["content"],
                    },
                }
            )
            parent = entry_id
            summaries += 1
    count = 0
    for rows in _message_batches(ctx, conv["conversation_id"]):
        parts = _parts_by_message(ctx, [r["message_id"] for r in rows])
        for row in rows:
            entry: dict[str, Any] = {"type": "message"}
            entry_id = row["transcript_entry_id"]
            # Rows stored without an entry id (runtime ingest) are written without one: the
            # importer then reads the file in order and stores them without one too.
            if entry_id:
                entry["id"] = entry_id
                entry["parentId"] = parent
                parent = entry_id
            entry["timestamp"] = iso_time(row["created_at"])
            entry["message"] = transcript_message(row, parts.get(row["message_id"], []))
            line(entry)
            count += 1
    return count, summaries


def _fence(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _write_markdown(ctx: Context, conv: Any, out: TextIO, with_summaries: bool) -> tuple[int, int]:
    ident = identity_of(conv)
    title = ident["title"] or f"Conversation {ident['conversationId']}"
    out.write(f"# {title}\n\n")
    for label, value in (
        ("Conversation id", ident["conversationId"]),
        ("Session id", ident["sessionId"]),
        ("Session key", ident["sessionKey"]),
        ("Active", ident["active"]),
        ("Created", ident["createdAt"]),
    ):
        out.write(f"- {label}: {value}\n")
    out.write("\n## Messages\n")
    count = 0
    for rows in _message_batches(ctx, conv["conversation_id"]):
        for row in rows:
            text = row["content"] or ""
            fence = _fence(text)
            out.write(
                f"\n### {row['seq']}. {row['role']} · {row['created_at']} · msg {row['message_id']}"
                f" · {row['token_count']} tokens\n\n{fence}text\n{text}\n{fence}\n"
            )
            count += 1
    summaries = 0
    if with_summaries:
        out.write("\n## Summaries\n")
        for s in _summaries(ctx, conv["conversation_id"]):
            sources = json.loads(s["sources"] or "[]") or json.loads(s["messages"] or "[]")
            label = "sources" if s["kind"] == "condensed" else "messages"
            text = s["content"] or ""
            fence = _fence(text)
            out.write(
                f"\n### {s['summary_id']} ({s['kind']}, depth {s['depth']}, {s['token_count']} tokens)\n\n"
                f"- Covers: {s['earliest_at']} .. {s['latest_at']}\n"
                f"- {label}: {', '.join(str(x) for x in sources)}\n\n{fence}text\n{text}\n{fence}\n"
            )
            summaries += 1
    return count, summaries


class _Counting(io.TextIOBase):
    """A text sink that counts UTF-8 bytes and hashes them on the way through."""

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self.bytes = 0
        self.hash = hashlib.sha256()

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        self.bytes += len(data)
        self.hash.update(data)
        self.target.write(text)
        return len(text)


@operation("export")
def export(ctx: Context, req: Request) -> Result:
    """Write the export to ``--out``, to the door's stream, or (no stream) into ``data.document``."""
    assert req.selector is not None
    fmt = choice(req, TO, EXPORT_FORMATS)
    if fmt is None:
        raise invalid_argument("`lcm export` needs --to markdown or --to jsonl.", {"option": "to"})
    out_path = req[OUT]
    with_summaries = req[INCLUDE_SUMMARIES]
    conv = find_conversation(ctx, req.selector)
    writer = _write_jsonl if fmt == "jsonl" else _write_markdown
    data: dict[str, Any] = {"conversation": identity_of(conv), "format": fmt}
    if out_path:
        from lcm_cli.engine.core.outputs import output_target

        target = output_target(out_path, protected=ctx.protected_files(), exists=_target_exists)
        sink = _write_file(ctx, conv, target, writer, with_summaries)
        data.update({"path": target.path, **sink})
        return Result(data)
    buffer = io.StringIO() if ctx.stream is None else None
    counting = _Counting(buffer if buffer is not None else ctx.stream)  # type: ignore[arg-type]
    messages, summaries = writer(ctx, conv, counting, with_summaries)  # type: ignore[arg-type]
    data.update(
        {
            "messages": messages,
            "summaries": summaries,
            "bytes": counting.bytes,
            "sha256": counting.hash.hexdigest(),
        }
    )
    if buffer is not None:
        data["document"] = buffer.getvalue()
        return Result(data)
    return Result(data, streamed=True)


def _export_mode(ctx: Context) -> int:
    from lcm_cli.engine.core.files import private_mode

    try:
        return private_mode(os.stat(ctx.database_path).st_mode)
    except OSError:
        return private_mode()


def _target_exists(target: str) -> LcmError:
    return LcmError(
        "EXPORT_TARGET_EXISTS",
        f"{target} already exists; choose another --out path or remove it first.",
        {"path": target},
    )


def _write_file(
    ctx: Context, conv: Any, target: OutputTarget, writer: Any, with_summaries: bool
) -> dict[str, Any]:
    """Write to a sibling temp file, fsync, then link into place (never over a file)."""
    from lcm_cli.engine.core.files import remove_orphans

    directory = os.path.dirname(target.path)
    remove_orphans(directory)
    try:
        # Private like the database it comes from; linked into place, never over a file.
        with target.writer(mode=_export_mode(ctx)) as raw:
            handle = io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=True)
            counting = _Counting(handle)
            messages, summaries = writer(ctx, conv, counting, with_summaries)
            handle.flush()
            handle.detach()
    except OSError as exc:
        raise LcmError(
            "EXPORT_WRITE_FAILED",
            f"Could not write {target.path}: {exc.strerror or exc}. Check the directory exists and is writable.",
            {"path": target.path},
        ) from None
    return {
        "messages": messages,
        "summaries": summaries,
        "bytes": counting.bytes,
        "sha256": counting.hash.hexdigest(),
    }
