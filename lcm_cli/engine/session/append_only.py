"""The append-only bootstrap fast path: read only what was appended to a transcript.

docs/reference/engine.md §3.1 step 6. When a transcript grew since its checkpoint (same path,
larger file, mtime not older), and the entry just before the checkpoint offset is the
message the checkpoint describes (its entry id and entry hash), the messages to import
are the appended slice's: the file is not read again from the top.

A full read of the grown file must give exactly the rows this path gives, so the slice
is accepted only when the full read's active leaf path is provably "the old path plus
the slice": every appended non-blank line is a well-formed, id-bearing record whose
parent is the record before it (the first one's parent is the checkpoint's entry), and
every appended message is enveloped (carries an entry id), as OpenClaw writes them. A
branch, a leaf reset, an id-less or unparseable line, a session header, or a last line
without its newline makes the slice ineligible and the caller reads the whole file.
What the slice cannot see (an appended id that repeats a non-message entry id far
earlier in the file) it cannot check; the reference's fast path has the same limit.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from lcm_cli.engine.core import jscompat as jsvalues
from lcm_cli.engine.core.held_files import open_input

# How far back from the checkpoint offset to look for the previous line at first; the
# window doubles until the line's start is found.
_BACK_WINDOW = 64 * 1024


class SliceEntry(NamedTuple):
    """One appended message, as :meth:`Transcript.iter_entries` would yield it."""

    message: dict[str, Any]
    entry_id: str
    envelope_timestamp: str | None
    line: int
    byte_size: int


class AppendedSlice(NamedTuple):
    """The appended messages (in path order) and the message the checkpoint ends on."""

    entries: list[SliceEntry]
    anchor_entry_id: str


def _parse(data: bytes) -> Any:
    """A transcript line parsed as the reader parses it, or None when it is not JSON."""
    from lcm_cli.engine.transcript.lines import decode_utf8

    text, _ = decode_utf8(data)
    trimmed = jsvalues.trim(text)
    if not trimmed:
        return None
    try:
        return jsvalues.js_parse_line(data, trimmed)
    except (ValueError, RecursionError):
        return None


def _tree_ids(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the record's id, its parent id), as the reader resolves them."""
    tree_id = jsvalues.envelope_string(entry.get("id")) or jsvalues.envelope_string(entry.get("uuid"))
    parent = jsvalues.envelope_string(entry.get("parentId")) or jsvalues.envelope_string(
        entry.get("parentUuid")
    )
    return tree_id, parent


def _enveloped_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The message of a ``{"type": "message", "message": {...}}`` envelope, else None."""
    from lcm_cli.engine.transcript.entries import message_of

    message, enveloped = message_of(entry)
    return message if enveloped else None


def _previous_line(handle: Any, offset: int) -> bytes | None:
    """The last non-blank line ending at ``offset`` (which must follow a newline)."""
    if offset <= 0:
        return None
    handle.seek(offset - 1)
    if handle.read(1) != b"\n":
        return None
    window = _BACK_WINDOW
    while True:
        start = max(0, offset - window)
        handle.seek(start)
        data: bytes = handle.read(offset - start)
        body = data.rstrip(b"\r\n\t ")
        cut = body.rfind(b"\n")
        if cut >= 0:
            return body[cut + 1 :]
        if start == 0:
            return body or None
        window *= 2


def read_appended(
    path: str, offset: int, size: int, checkpoint_hash: str | None, checkpoint_entry_id: str | None
) -> AppendedSlice | str:
    """The appended slice ``[offset, size)`` of ``path``, or why it cannot be used alone.

    The returned string is a short reason (for the result's ``fastPath`` field); the
    caller then reads the whole file.
    """
    from lcm_cli.engine.transcript.message import build_message
    from lcm_cli.engine.transcript.records import PERSISTABLE_ROLES, STRUCTURAL_ENTRY_TYPES

    if not checkpoint_hash or not checkpoint_entry_id:
        return "checkpoint has no entry hash or entry id"
    try:
        handle = open_input(path)
    except OSError:
        return "transcript unreadable"
    with handle:
        if os.fstat(handle.fileno()).st_size < size:
            return "transcript shrank while reading"
        previous = _previous_line(handle, offset)
        entry = _parse(previous) if previous is not None else None
        if not isinstance(entry, dict):
            return "no entry before the checkpoint offset"
        message = _enveloped_message(entry)
        tree_id, _ = _tree_ids(entry)
        if message is None or message.get("role") not in PERSISTABLE_ROLES or tree_id != checkpoint_entry_id:
            return "entry before the checkpoint offset is not the checkpoint's message"
        if build_message(message, entry_id=tree_id).entry_hash != checkpoint_hash:
            return "entry before the checkpoint offset does not hash to the checkpoint hash"
        handle.seek(offset)
        data = handle.read(size - offset)
    if len(data) != size - offset or not data.endswith(b"\n"):
        return "appended slice does not end with a complete line"
    entries: list[SliceEntry] = []
    parent_expected = checkpoint_entry_id
    seen = {checkpoint_entry_id}
    position = 0
    for raw in data.split(b"\n")[:-1]:
        position += 1
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.strip():
            continue
        record = _parse(line)
        if not isinstance(record, dict):
            return f"appended line {position} is not a JSON object"
        kind = record.get("type")
        tree_id, parent = _tree_ids(record)
        if kind == "session" or tree_id is None or parent != parent_expected or tree_id in seen:
            return f"appended line {position} does not continue the active path"
        seen.add(tree_id)
        message = _enveloped_message(record)
        if message is not None:
            if message["role"] in PERSISTABLE_ROLES:
                stamp = jsvalues.envelope_string(record.get("timestamp"))
                entries.append(SliceEntry(message, tree_id, stamp, position, len(raw)))
        elif "message" in record or not (isinstance(kind, str) and kind in STRUCTURAL_ENTRY_TYPES):
            # A bare message or an unknown entry: the full reader's choice could differ.
            return f"appended line {position} is not a message envelope or a known entry"
        parent_expected = tree_id
    return AppendedSlice(entries, checkpoint_entry_id)
