"""Large-payload interception: big files, tool outputs and images leave the message.

At ingest (docs/reference/engine.md §2.4) a payload at or above ``largeFileTokenThreshold``
tokens (images: at any size) is written to ``<largeFilesDir>/<conversationId>/<fileId>.<ext>``,
recorded in ``large_files`` with an exploration summary, and replaced in the message by
a short reference text the model can expand later. The message is rewritten before it
is stored, so its content, parts and token count describe the reference, not the bulk.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from lcm_cli.engine.assembly.exploration import exploration_summary, summarize_image
from lcm_cli.engine.core.files import atomic_write, private_mode, remove_orphans
from lcm_cli.engine.core.jscompat import first_str, stringify, trim
from lcm_cli.engine.core.tokens import estimate_tokens

TOOL_ROLES = frozenset({"tool", "toolResult"})
_RESULT_TYPES = frozenset({"tool_result", "toolResult", "function_call_output"})
_CALL_OR_RESULT_TYPES = frozenset(
    {
        "tool_use",
        "toolUse",
        "tool-use",
        "toolCall",
        "tool_call",
        "functionCall",
        "function_call",
        "tool_result",
        "toolResult",
        "tool_use_result",
        "function_call_output",
        "thinking",
        "redacted_thinking",
        "reasoning",
    }
)
_MIME_EXTENSIONS = {
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "text/html": "html",
    "application/json": "json",
    "application/xml": "xml",
    "text/xml": "xml",
    "application/yaml": "yaml",
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}
_IMAGE_MAGIC = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"<svg", "image/svg+xml"),
)
_IMAGE_LABELS = {"user": "User image", "assistant": "Assistant image", "system": "System image"}
_FILE_BLOCK = re.compile(r"<file\b([^>]*)>([\s\S]*?)</file>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""([A-Za-z_][\w-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_REFERENCE_PREFIXES = ("[LCM File:", "[LCM Tool Output:", "[LCM Raw Payload:")
# Base64 text of an image starts with the encoding of its magic bytes.
_BASE64_IMAGE_PREFIXES = (
    ("/9j/", "image/jpeg"),
    ("iVBOR", "image/png"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
    ("PHN2Zy", "image/svg+xml"),
)
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_MEDIA_HEADER = re.compile(r"\[media attached[^\]]*?:\s*([^\]\n]*)\]")
_MIN_INLINE_IMAGE_TOKENS = 100


_TOP_CALL_KEYS = ("toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id")
_BLOCK_CALL_KEYS = ("tool_use_id", "toolUseId", "tool_call_id", "toolCallId", "call_id", "id")
_IMAGE_REFERENCE = re.compile(
    r"^\[(?:(?:User|System|Tool|Assistant) image|Image): [^\]]*LCM file: file_[a-f0-9]{16}\]$"
)


def new_file_id() -> str:
    """``file_`` + the first 16 hex digits of a random UUID."""
    return "file_" + uuid.uuid4().hex[:16]


def file_extension(file_name: str | None, mime: str | None) -> str:
    """The stored file's extension: from the name (1-10 alphanumerics), else the MIME type, else txt."""
    if file_name and "." in file_name:
        ext = file_name.rsplit(".", 1)[1].lower()
        if re.fullmatch(r"[a-z0-9]{1,10}", ext):
            return ext
    return _MIME_EXTENSIONS.get((mime or "").lower(), "txt")


def _follow_up(what: str) -> str:
    # The reference's closing line, byte for byte: it is stored in the message, so the model,
    # the token count and lossless-claw reading our rows all see the same text.
    return f'Call lcm_describe(id="<file_id above>", expandFile=true) to fetch the full {what} content from disk.'


def _summary_text(summary: str | None) -> str:
    return trim(summary or "") or "(no summary available)"


def file_reference(
    file_id: str, file_name: str | None, mime: str | None, size: int, summary: str | None
) -> str:
    """The ``[LCM File: ...]`` text that replaces a large ``<file>`` block."""
    return (
        f"[LCM File: {file_id} | {file_name or 'unknown'} | {mime or 'unknown'} | {size:,} bytes]\n\n"
        f"Exploration Summary:\n{_summary_text(summary)}"
    )


def tool_output_reference(file_id: str, tool: str, size: int, summary: str | None) -> str:
    """The ``[LCM Tool Output: ...]`` text that replaces a large tool result."""
    return (
        f"[LCM Tool Output: {file_id} | tool={tool} | {size:,} bytes]\n\n"
        f"Exploration Summary:\n{_summary_text(summary)}\n\n{_follow_up('output')}"
    )


def raw_payload_reference(file_id: str, role: str, size: int, summary: str | None) -> str:
    """The ``[LCM Raw Payload: ...]`` text that replaces a whole oversized message."""
    return (
        f"[LCM Raw Payload: {file_id} | role={role} | reason=large_raw_message | {size:,} bytes]\n\n"
        f"Exploration Summary:\n{_summary_text(summary)}\n\n{_follow_up('payload')}"
    )


def image_reference(file_id: str, role: str, file_name: str, mime: str, size: int) -> str:
    """The one-line reference that replaces an image block."""
    label = _IMAGE_LABELS.get(role, "Tool image" if role in TOOL_ROLES else "Image")
    return f"[{label}: {file_name} ({mime}, {size:,} bytes) | LCM file: {file_id}]"


def _image_mime(data: bytes, declared: str | None) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if declared and declared.lower() in _MIME_EXTENSIONS and declared.lower().startswith("image/"):
        return declared.lower()
    return None


def _decode_image(data: Any) -> tuple[bytes, str | None] | None:
    if not isinstance(data, str) or not data:
        return None
    declared = None
    if data.startswith("data:"):
        header, _, data = data.partition(",")
        declared = header[5:].split(";", 1)[0] or None
    try:
        return base64.b64decode(data, validate=True), declared
    except (binascii.Error, ValueError):
        return None


def _text_of(value: Any) -> str:
    """The text a tool result value carries (strings as is, text blocks joined, else JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [b.get("text") for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(str(t) for t in texts)
    return stringify(value)


def write_large_file(
    conn: sqlite3.Connection,
    files_dir: str,
    conversation_id: int,
    file_id: str,
    data: bytes,
    file_name: str | None,
    mime: str | None,
    summary: str,
    *,
    text: bool,
) -> str:
    """Write ``<files_dir>/<conversation>/<file_id>.<ext>`` durably, then its ``large_files`` row.

    The file is complete (temp file, fsync, rename) before the row exists, so a rolled-back
    transaction can leave an unreferenced file but never a row without its file. Returns
    the absolute path.
    """
    folder = Path(files_dir) / str(conversation_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{file_id}.{file_extension(file_name, mime)}"
    # Private (0600), exclusive temp, rename, directory fsync: durable before the row exists.
    remove_orphans(str(folder))
    atomic_write(str(path), data, mode=private_mode(), replace=True)
    line_count = data.decode("utf-8", "replace").count("\n") + 1 if text else None
    resolved = str(path.resolve())
    conn.execute(
        "INSERT INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size,"
        " line_count, storage_uri, exploration_summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (file_id, conversation_id, file_name, mime, len(data), line_count, resolved, summary),
    )
    return resolved


class Interceptor:
    """Externalizes one conversation's large payloads inside the caller's transaction.

    Files are written before their ``large_files`` rows; a rolled-back transaction
    leaves an unreferenced file behind, never a row without its file.
    """

    def __init__(
        self, conn: sqlite3.Connection, files_dir: str, conversation_id: int, threshold: int
    ) -> None:
        """Bind to a write connection, the ``largeFilesDir`` root and the token threshold."""
        self.conn = conn
        self.files_dir = files_dir
        self.conversation_id = conversation_id
        self.threshold = max(1, int(threshold))
        self.written: list[dict[str, Any]] = []

    def _store(
        self, data: bytes, file_name: str | None, mime: str | None, summary: str, reason: str, text: bool
    ) -> str:
        file_id = new_file_id()
        path = write_large_file(
            self.conn,
            self.files_dir,
            self.conversation_id,
            file_id,
            data,
            file_name,
            mime,
            summary,
            text=text,
        )
        self.written.append({"fileId": file_id, "path": path, "bytes": len(data), "reason": reason})
        return file_id

    # --- the interceptors, in the reference's order ------------------------------------

    def intercept_blocks(self, message: dict[str, Any]) -> dict[str, Any]:
        """Images (any role), then ``<file>`` blocks (user) or large tool results (tool)."""
        role = message["role"]
        message = self._native_images(message, role)
        message = self._inline_images(message, role)
        if role == "user":
            message = self._file_blocks(message)
        elif role in TOOL_ROLES:
            message = self._tool_results(message)
        return message

    def _native_images(self, message: dict[str, Any], role: str) -> dict[str, Any]:
        content = message.get("content")
        if not isinstance(content, list) or not any(
            isinstance(b, dict) and b.get("type") == "image" and "data" in b for b in content
        ):
            return message
        blocks: list[Any] = []
        for block in content:
            decoded = (
                _decode_image(block.get("data"))
                if isinstance(block, dict) and block.get("type") == "image"
                else None
            )
            if decoded is None:
                blocks.append(block)
                continue
            data, from_url = decoded
            declared = from_url or next(
                (
                    block.get(k)
                    for k in ("mimeType", "mime_type", "mediaType", "media_type")
                    if isinstance(block.get(k), str)
                ),
                None,
            )
            mime = _image_mime(data, declared)
            if mime is None:
                blocks.append(block)
                continue
            stored_role = "tool" if role in TOOL_ROLES else role
            name = f"{stored_role}-image.{file_extension(None, mime)}"
            file_id = self._store(
                data,
                name,
                mime,
                summarize_image(len(data), file_extension(None, mime), name),
                "native_image",
                False,
            )
            blocks.append(
                {
                    "type": "text",
                    "text": image_reference(file_id, role, name, mime, len(data)),
                    "externalizedFileId": file_id,
                    "originalByteSize": len(data),
                    "imageExternalized": True,
                    "externalizationReason": "native_image",
                }
            )
        return {**message, "content": blocks}

    def _inline_image(self, text: str, role: str, name_hint: str | None) -> str | None:
        """Store ``text`` if it is wholly base64 image data; return its reference, else None."""
        compact = "".join(text.split())
        if not compact or estimate_tokens(compact) < _MIN_INLINE_IMAGE_TOKENS:
            return None
        if sum(1 for ch in compact if ch in _BASE64_CHARS) < 0.8 * len(compact):
            return None
        mime = next((m for prefix, m in _BASE64_IMAGE_PREFIXES if compact.startswith(prefix)), None)
        if mime is None:
            return None
        data = "".join(ch for ch in compact if ch in _BASE64_CHARS)
        try:
            decoded = base64.b64decode(data + "=" * (-len(data) % 4))
        except (binascii.Error, ValueError):
            return None
        stored_role = "tool" if role in TOOL_ROLES else role
        name = name_hint or f"{stored_role}-image.{file_extension(None, mime)}"
        summary = summarize_image(len(decoded), file_extension(None, mime), name)
        file_id = self._store(decoded, name, mime, summary, "inline_image", False)
        return image_reference(file_id, role, name, mime, len(decoded))

    def _inline_images(self, message: dict[str, Any], role: str) -> dict[str, Any]:
        """Base64 image text: a ``[media attached: ...]`` payload or a wholly base64 value."""
        content = message.get("content")
        if role not in TOOL_ROLES:
            if not isinstance(content, str):
                return message
            stripped = content.strip()
            header = _MEDIA_HEADER.match(stripped)
            if header is not None:
                hint = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(header.group(1).strip())) or None
                reference = self._inline_image(stripped[header.end() :], role, hint)
                if reference is None:
                    return message
                return {**message, "content": f"{header.group(0)}\n\n{reference}"}
            reference = self._inline_image(stripped, role, None)
            return message if reference is None else {**message, "content": reference}
        if isinstance(content, str):
            reference = self._inline_image(content, role, None)
            return message if reference is None else {**message, "content": reference}
        if not isinstance(content, list):
            return message
        changed = False
        blocks: list[Any] = []
        for block in content:
            if isinstance(block, dict):
                for key in ("text", "output", "content", "result"):
                    value = block.get(key)
                    if isinstance(value, str):
                        reference = self._inline_image(value, role, None)
                        if reference is not None:
                            block = {**block, key: reference}
                            changed = True
            blocks.append(block)
        return {**message, "content": blocks} if changed else message

    def _file_blocks(self, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(
                b["text"]
                for b in content
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            )
        else:
            return message
        if "<file" not in text.lower():
            return message
        file_ids: list[str] = []

        def replace(match: re.Match[str]) -> str:
            inner = match.group(2)
            if estimate_tokens(inner) < self.threshold:
                return match.group(0)
            attrs = {
                m.group(1).lower(): trim(m.group(2) or m.group(3) or m.group(4) or "")
                for m in _ATTRIBUTE.finditer(match.group(1))
            }
            # Only `name` and `mime` count, as in the reference; a block without them is
            # stored and shown with its name or MIME type unknown.
            name = attrs.get("name") or None
            mime = attrs.get("mime") or None
            summary = exploration_summary(inner, name, mime)
            data = inner.encode("utf-8", "surrogatepass")
            file_id = self._store(data, name, mime, summary, "large_file_block", True)
            file_ids.append(file_id)
            return file_reference(file_id, name, mime, len(data), summary)

        rewritten = _FILE_BLOCK.sub(replace, text)
        if not file_ids:
            return message
        return {
            **message,
            "content": rewritten,
            "fileBlocksExternalized": True,
            "externalizedFileIds": file_ids,
            "externalizationReason": "large_file_block",
        }

    def _tool_results(self, message: dict[str, Any]) -> dict[str, Any]:
        from lcm_cli.engine.transcript.text import structured_text

        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = list(content)
        else:
            return message
        top_call = first_str(message, *_TOP_CALL_KEYS)
        top_name = first_str(message, "toolName", "tool_name")
        top_error = message.get("isError", message.get("is_error"))
        changed = False
        out: list[Any] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            plain_text = (
                kind == "text" and isinstance(block.get("text"), str) if isinstance(block, dict) else False
            )
            if kind not in _RESULT_TYPES and not plain_text:
                out.append(block)
                continue
            assert isinstance(block, dict)
            if plain_text:
                source: Any = block["text"]
            elif "output" in block:
                source = block.get("output")
            elif "content" in block:
                source = block.get("content")
            else:
                source = block
            text = structured_text(source)
            if text is None or _IMAGE_REFERENCE.match(trim(text)):
                out.append(block)
                continue
            name = first_str(block, "name")
            name = name if name is not None else (top_name if top_name is not None else "tool-result")
            call_id = first_str(block, *_BLOCK_CALL_KEYS)
            call_id = call_id if call_id is not None else top_call
            if name == "lcm_describe" or estimate_tokens(text) < self.threshold:
                out.append(block)
                continue
            data = text.encode("utf-8", "surrogatepass")
            file_name = f"{name}.txt"
            summary = exploration_summary(text, file_name, "text/plain")
            file_id = self._store(data, file_name, "text/plain", summary, "large_tool_result", True)
            reference = tool_output_reference(file_id, name, len(data), summary)
            raw_type = "function_call_output" if kind == "function_call_output" else "tool_result"
            # The reference's compact block: a text block stays a text block (its type
            # remembered in rawType), any other result becomes {type, output}.
            compact: dict[str, Any] = (
                {"type": "text", "text": reference, "rawType": raw_type}
                if plain_text
                else {"type": raw_type, "output": reference}
            )
            compact.update(
                externalizedFileId=file_id,
                originalByteSize=len(data),
                toolOutputExternalized=True,
                externalizationReason="large_tool_result",
            )
            if call_id:
                compact["call_id" if raw_type == "function_call_output" else "tool_use_id"] = call_id
            if isinstance(block.get("is_error"), bool):
                compact["is_error"] = block["is_error"]
            elif isinstance(block.get("isError"), bool):
                compact["isError"] = block["isError"]
            elif isinstance(top_error, bool):
                compact["isError"] = top_error
            if name:
                compact["name"] = name
            out.append(compact)
            changed = True
        return {**message, "content": out} if changed else message

    def intercept_raw(self, message: dict[str, Any], stored_tokens: int) -> dict[str, Any]:
        """The raw-payload fallback: a whole non-tool message at or above the threshold."""
        role = message["role"]
        content = message.get("content")
        if role in TOOL_ROLES or stored_tokens < self.threshold:
            return message
        if any(message.get(flag) is True for flag in ("rawPayloadExternalized", "fileBlocksExternalized")):
            return message
        if isinstance(content, str) and content.lstrip().startswith(_REFERENCE_PREFIXES):
            return message
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _CALL_OR_RESULT_TYPES for b in content
        ):
            return message
        if isinstance(content, str):
            text, mime, name = content, "text/plain", f"raw-{role}-payload.txt"
        else:
            text, mime, name = (
                stringify(content),  # JSON.stringify, as the reference writes the file
                "application/json",
                f"raw-{role}-payload.json",
            )
        data = text.encode("utf-8", "surrogatepass")
        summary = exploration_summary(text, name, mime)
        file_id = self._store(data, name, mime, summary, "large_raw_message", True)
        return {
            **message,
            "content": raw_payload_reference(file_id, role, len(data), summary),
            "rawPayloadExternalized": True,
            "externalizedFileId": file_id,
            "originalByteSize": len(data),
            "externalizationReason": "large_raw_message",
        }
