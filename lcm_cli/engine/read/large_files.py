"""A conversation's large files: the payloads externalized out of its messages."""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.context import Context


def conversation_files(ctx: Context, conversation_id: int) -> list[dict[str, Any]]:
    """The ``large_files`` rows of one conversation, newest first (none on a file without the table)."""
    if not ctx.probe.has_table("large_files"):
        return []
    rows = ctx.query(
        "SELECT file_id, file_name, mime_type, byte_size, line_count, created_at FROM large_files "
        "WHERE conversation_id = ? ORDER BY created_at DESC, file_id",
        (conversation_id,),
    )
    return [
        {
            "fileId": r["file_id"],
            "fileName": r["file_name"],
            "mimeType": r["mime_type"],
            "byteSize": r["byte_size"],
            "lineCount": r["line_count"],
            "createdAt": r["created_at"],
        }
        for r in rows
    ]
