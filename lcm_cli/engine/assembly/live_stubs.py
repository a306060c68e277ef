"""Tool-output stubs at assembly time (``stubLargeToolPayloads``; docs/reference/engine.md §2.4, §6.1 step 5, §6.2 step 3).

Live tool results at or above ``largeFileTokenThreshold`` tokens are written to the
conversation's large-file store under a deterministic id (``file_`` + 16 hex of SHA-256
over a version tag, the conversation, tool name, call id and content), so assembling
the same turn twice reuses one file and one ``large_files`` row; the live message then
carries the ``[LCM Tool Output: …]`` reference instead of the bulk.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Any

from lcm_cli.engine.assembly.exploration import exploration_summary
from lcm_cli.engine.assembly.large_files import TOOL_ROLES, tool_output_reference, write_large_file
from lcm_cli.engine.core.tokens import estimate_tokens

STUB_VERSION = "lcm-live-tool-stub-v1"
_RESULT_TYPES = frozenset({"tool_result", "toolResult", "function_call_output"})


def stub_file_id(conversation_id: int, tool: str, call_id: str, content: str) -> str:
    """The deterministic ``file_`` id of one live tool output."""
    material = "\0".join([STUB_VERSION, str(conversation_id), tool, call_id, content])
    return "file_" + hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class LiveStubber:
    """Externalizes a turn's large live tool outputs for one conversation (writes go through ``conn``)."""

    def __init__(
        self, conn: sqlite3.Connection, files_dir: str, conversation_id: int, threshold: int
    ) -> None:
        """Bind to a write connection (the caller holds the transaction), the file root and the threshold."""
        self.conn = conn
        self.files_dir = files_dir
        self.conversation_id = conversation_id
        self.threshold = max(1, int(threshold))
        self.written: list[str] = []
        self.reused: list[str] = []

    def _reference(self, text: str, tool: str, call_id: str) -> str:
        file_id = stub_file_id(self.conversation_id, tool, call_id, text)
        row = self.conn.execute(
            "SELECT byte_size, exploration_summary FROM large_files WHERE file_id = ?", (file_id,)
        ).fetchone()
        if row is not None:
            self.reused.append(file_id)
            return tool_output_reference(file_id, tool, int(row[0] or 0), row[1])
        data = text.encode("utf-8", "surrogatepass")
        file_name = f"{tool}.txt"
        summary = exploration_summary(text, file_name, "text/plain")
        write_large_file(
            self.conn,
            self.files_dir,
            self.conversation_id,
            file_id,
            data,
            file_name,
            "text/plain",
            summary,
            text=True,
        )
        self.written.append(file_id)
        return tool_output_reference(file_id, tool, len(data), summary)

    def _stub_text(self, text: Any, tool: str, call_id: str) -> str | None:
        if not isinstance(text, str) or tool == "lcm_describe" or "| LCM file: file_" in text:
            return None
        if text.lstrip().startswith("[LCM Tool Output:") or estimate_tokens(text) < self.threshold:
            return None
        return self._reference(text, tool, call_id)

    def stub_message(self, message: dict[str, Any]) -> dict[str, Any]:
        """One live message with its large tool-result texts replaced by references."""
        if message.get("role") not in TOOL_ROLES:
            return message
        tool = str(message.get("toolName") or message.get("tool_name") or "tool")
        call_id = str(message.get("toolCallId") or message.get("tool_call_id") or "")
        content = message.get("content")
        if isinstance(content, str):
            reference = self._stub_text(content, tool, call_id)
            return message if reference is None else {**message, "content": reference}
        if not isinstance(content, list):
            return message
        changed = False
        blocks: list[Any] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                reference = self._stub_text(block.get("text"), tool, call_id)
                if reference is not None:
                    block, changed = {**block, "text": reference}, True
            elif isinstance(block, dict) and block.get("type") in _RESULT_TYPES:
                key = "output" if "output" in block else "content"
                name = str(block.get("name") or tool)
                cid = str(block.get("tool_use_id") or block.get("call_id") or call_id)
                reference = self._stub_text(block.get(key), name, cid)
                if reference is not None:
                    block, changed = {**block, key: reference}, True
            blocks.append(block)
        return {**message, "content": blocks} if changed else message

    def stub_all(self, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every live message, large tool outputs stubbed."""
        return [self.stub_message(m) for m in messages]


def needs_stub(messages: Sequence[dict[str, Any]], threshold: int) -> bool:
    """A cheap pre-check: some live tool message is long enough to reach the threshold.

    No code point costs more than two tokens, so a message whose whole content has fewer
    than ``threshold / 2`` characters cannot hold an output at the threshold; this keeps
    the write transaction away from turns without a large output.
    """
    floor = (max(1, int(threshold)) + 1) // 2
    for message in messages:
        if message.get("role") not in TOOL_ROLES:
            continue
        content = message.get("content")
        if isinstance(content, str) and len(content) >= floor:
            return True
        if isinstance(content, list) and len(str(content)) >= floor:
            return True
    return False
