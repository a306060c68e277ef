"""The session header: the session id a transcript imports under (docs/reference/migrate-sessions.md §4)."""

from __future__ import annotations

import os
from typing import IO, Any

from lcm_cli.engine.core.jscompat import envelope_string as _envelope_string
from lcm_cli.engine.core.jscompat import js_parse_line as _js_parse_line
from lcm_cli.engine.core.jscompat import trim as _trim
from lcm_cli.engine.transcript.lines import decode_utf8, file_stem, open_transcript, physical_lines
from lcm_cli.engine.transcript.records import Header


def read_header(path: str | os.PathLike[str]) -> Header:
    """The session id (§4: header id, else the file name without its extension) and header id."""
    file = os.fspath(path)
    handle, info = open_transcript(file)
    with handle:
        header_id = _header_id(handle, info.st_size)
    return Header(header_id or file_stem(file), header_id)


def read_session_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The session header object when the first non-blank line is one, else None."""
    file = os.fspath(path)
    handle, info = open_transcript(file)
    with handle:
        return _header_object(handle, info.st_size)


def _header_id(handle: IO[bytes], size: int) -> str | None:
    header = _header_object(handle, size)
    return _envelope_string(header.get("id")) if header is not None else None


def _header_object(handle: IO[bytes], size: int) -> dict[str, Any] | None:
    for _, _, _, data, _ in physical_lines(handle, size):
        if data is None:
            return None
        text, _ = decode_utf8(data)
        trimmed = _trim(text)
        if not trimmed:
            continue
        if trimmed[0] != "{":
            return None
        try:
            parsed = _js_parse_line(data, trimmed)
        except (ValueError, RecursionError):
            return None
        if not isinstance(parsed, dict) or parsed.get("type") != "session":
            return None
        return parsed
    return None
