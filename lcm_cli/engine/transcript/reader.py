"""Reading one OpenClaw session transcript into message rows, as lossless-claw's importer does.

The facts are in docs/reference/migrate-sessions.md (§3 parsing, §3.4 active leaf path, §4 session
id, §6.3 row values, §6.4 token rule, §6.6 parts) and docs/reference/database.md (§5 hashes, §7
token estimate). Everything here reproduces the TypeScript reference's observable results
(content projection, token counts, part rows, identity hashes) from Python, including the
places where JavaScript semantics differ from Python's: string trimming, number spelling
in JSON, object key order, ``localeCompare`` key sorting and ``Date`` parsing.

Reading is streaming and two-pass so memory stays flat whatever the file size:

1. :func:`scan_transcript` reads every line once and keeps only a small index per tree
   record (entry id, parent id, byte span, line number, kind). From it, it picks the
   messages to import (the active leaf path when every record has an id, else all
   messages in file order) and explains every line that will not be imported.
2. :meth:`Transcript.iter_messages` re-reads only the chosen lines, one at a time, and
   turns each into a :class:`TranscriptMessage` ready for ``Store.add_messages``.
   :meth:`Transcript.iter_candidates` gives what a dry run or a check needs (entry id,
   line, size, part count of each) from the scan alone, without that second pass.

This module is the two passes; the steps they use live beside it, one concern each:
:mod:`.lines` (JSONL decoding), :mod:`.json_array` (files written as one array),
:mod:`.entries` (what a parsed line carries), :mod:`.header` (the session id),
:mod:`.message` (a message's row and parts), :mod:`.text` and :mod:`.dates` (its content
text and timestamp), :mod:`.records` (the types they return).

Bad content never raises: it is reported in :attr:`Transcript.skipped` with its line
number and a stable reason. Only a file that cannot be read raises ``LcmError``.

Skip reasons (every non-blank line that is not imported gets exactly one, except the
structural entries below):

``invalid_json``            the line is not JSON
``truncated_last_line``     the last line has no newline and is not JSON (a crash mid-write)
``not_utf8``                the line has bytes that are not UTF-8 and is not JSON
``binary``                  the line holds NUL bytes (a binary file or zero-filled tail)
``too_deep``                JSON nested too deeply to read safely
``not_an_object``           JSON, but not an object (an array, string, number or null)
``missing_fields``          an object that is neither a message nor a known entry: no
                            ``role``/``content`` (or ``message``), or a message entry
                            without a usable ``message``
``wrong_type``              a field has the wrong JSON type (``role`` not a string,
                            ``message`` not an object, ``type`` not a string)
``unknown_entry_type``      an entry whose ``type`` is not one OpenClaw writes
``unsupported_role``        a message whose role is not user/assistant/system/tool/toolResult
``abandoned_branch``        a message left behind by a history edit (not on the leaf path)
``duplicate_entry_id``      a message whose entry id appears again (the other copy is used)
``array_envelope_entry``    in a JSON-array file, an element that is not a bare message
``invalid_json_array``      in a JSON-array file that does not parse as a whole, every
                            element (the reference imports nothing from such a file)

Structural entries (the session header and the entry types OpenClaw writes besides
messages: ``model_change``, ``thinking_level_change``, ``session_info``, ``compaction``,
``custom``, ``custom_message``, ``label``, ``branch_summary``) are never imported by
design. They are counted per type in :attr:`Transcript.structural` rather than listed as
skipped, so ``skipped`` lists only lines that could have held conversation content.

Lines that are imported but had to be repaired are listed in :attr:`Transcript.warnings`
(``not_utf8_replaced``: invalid bytes were read as U+FFFD, as Node's decoder does).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.jscompat import JS_SPACE as _JS_SPACE
from lcm_cli.engine.core.jscompat import SHAPE_SCAN as _SHAPE_SCAN
from lcm_cli.engine.core.jscompat import envelope_string as _envelope_string
from lcm_cli.engine.core.jscompat import js_parse_line as _js_parse_line
from lcm_cli.engine.core.jscompat import trim as _trim
from lcm_cli.engine.core.limits import MAX_JSON_DEPTH, nests_deeper
from lcm_cli.engine.transcript.entries import (
    is_message_shaped,
    message_of,
    why_not_message,
    why_not_message_shaped,
)
from lcm_cli.engine.transcript.json_array import ArrayError, array_elements
from lcm_cli.engine.transcript.lines import (
    SpanReader,
    decode_utf8,
    file_stem,
    open_transcript,
    physical_lines,
)
from lcm_cli.engine.transcript.message import build_message, part_count
from lcm_cli.engine.transcript.records import (
    KEEP_PARSED_MAX_BYTES,
    PERSISTABLE_ROLES,
    STRUCTURAL_ENTRY_TYPES,
    Candidate,
    PathEntry,
    RawEntry,
    SkippedLine,
    TranscriptMessage,
)

# Record kinds kept in the scan index (one byte each).
_K_MESSAGE = 1  # a persistable message: a candidate for import
_K_OTHER_ROLE = 2  # message-shaped, role not persistable
_K_ENTRY = 3  # an id-bearing entry that is not a message (links the tree)
# Id-bearing entries that carry session settings get their own codes, so a rewrite of
# the transcript (`lcm rotate`) can find them without parsing every line again.
_K_SETTINGS = {"session_info": 4, "model_change": 5, "thinking_level_change": 6}
_KIND_NAMES = {_K_MESSAGE: "message", _K_OTHER_ROLE: "message", _K_ENTRY: "entry"}
_KIND_NAMES.update({code: name for name, code in _K_SETTINGS.items()})


class Transcript:
    """The scan of one transcript: what will be imported, and why every other line is not.

    ``session_id``/``header_id`` follow §4. ``size_bytes`` and ``mtime_ms`` (floored) are
    the file's at scan time; only those bytes are read, so a file still being appended
    to is read consistently. ``mode`` is ``"jsonl"`` or ``"json-array"``. ``all_ids``:
    every tree record has an entry id; ``leaf_path``: the active-branch rule was applied
    (False when ids are missing or the chain dangles or cycles, see ``flatten_reason``:
    ``no_records``, ``missing_ids``, ``dangling_parent``, ``cycle`` or ``json_array``).
    ``candidate_count`` is how many messages :meth:`iter_messages` (and
    :meth:`iter_candidates`) yields; ``skipped``,
    ``warnings`` and ``structural`` are described in the module docstring.
    """

    path: str
    session_id: str
    header_id: str | None
    size_bytes: int
    mtime_ms: int
    mode: str
    all_ids: bool
    leaf_path: bool
    flatten_reason: str | None
    candidate_count: int
    skipped: list[SkippedLine]
    warnings: list[SkippedLine]
    structural: dict[str, int]

    def __init__(self, path: str, info: os.stat_result) -> None:
        self.path = path
        self.session_id = ""
        self.header_id = None
        self.size_bytes = info.st_size
        self.mtime_ms = info.st_mtime_ns // 1_000_000
        self.mode = "jsonl"
        self.all_ids = False
        self.leaf_path = False
        self.flatten_reason = None
        self.candidate_count = 0
        self.skipped = []
        self.warnings = []
        self.structural = {}
        self._identity = (info.st_dev, info.st_ino)
        # Per record (a JSON-array file: per chosen element): byte offset, byte length
        # (the element's UTF-8 size), line number, the entry id it must still carry
        # when it is read again, and its part count; ``_chosen`` lists the records to
        # import, in import order.
        self._offsets: Sequence[int] = array("q")
        self._lengths: Sequence[int] = array("q")
        self._lines: Sequence[int] = array("q")
        self._entry_ids: Sequence[str | None] = []
        self._parts: Sequence[int] = array("q")
        self._chosen: Sequence[int] = array("q")
        # Every record of the active path (messages and other entries), root to leaf, and
        # each record's kind: what `lcm rotate` rewrites the transcript from.
        self._path: Sequence[int] = array("q")
        self._kinds: bytes | bytearray = b""
        # (byte offset, byte length) of the session header line; None without a header.
        self.header_span: tuple[int, int] | None = None
        self._array_start = 0
        self._array_line = 1
        self._array_chosen: set[int] = set()
        # With keep_parsed, per message record: (message, entry id, envelope timestamp)
        # as the scan parsed them, so building needs no second read; None otherwise.
        self._parsed: dict[int, tuple[dict[str, Any], str | None, str | None]] | None = None
        # Set by the importer for a host-store snapshot: line n holds the event seqs[n - 1].
        self.seqs: list[int | float | str | None] | None = None  # host_store.SeqLabel

    def drop_parsed(self) -> None:
        """Forget the kept parses (building then reads the chosen lines again)."""
        self._parsed = None

    def __repr__(self) -> str:
        return (
            f"Transcript({self.path!r}, session_id={self.session_id!r}, mode={self.mode!r},"
            f" candidates={self.candidate_count}, skipped={len(self.skipped)})"
        )

    def iter_candidates(self) -> Iterator[Candidate]:
        """What :meth:`iter_messages` would yield, in the same order, from the scan alone.

        Enough for a dry run or a check against the database (entry ids, lines, sizes,
        part counts) at no cost per message: the file is not read again.
        """
        entry_ids, lines, lengths, parts = self._entry_ids, self._lines, self._lengths, self._parts
        for index, i in enumerate(self._chosen):
            yield Candidate(index, entry_ids[i], lines[i], lengths[i], parts[i])

    def iter_messages(self, want: Callable[[Candidate], bool] | None = None) -> Iterator[TranscriptMessage]:
        """The chosen messages in import order (root to leaf), read one line at a time.

        With ``want``, only the messages whose :class:`Candidate` it accepts are read and
        built (the others are skipped at no cost: an import re-run, for one, needs only
        the entries the database lacks).

        Raises ``LcmError("TRANSCRIPT_CHANGED")`` if the file was replaced or rewritten
        since the scan (appending to it is fine: only the scanned bytes are read).
        """
        for entry in self.iter_entries(want):
            yield build_message(
                entry.message,
                entry_id=entry.entry_id,
                envelope_timestamp=entry.envelope_timestamp,
                line=entry.line,
                byte_size=entry.byte_size,
            )

    def iter_entries(self, want: Callable[[Candidate], bool] | None = None) -> Iterator[RawEntry]:
        """What :meth:`iter_messages` builds from: each chosen message object as read.

        Runtime bootstrap ingests these through the live ingest path (which rewrites
        large payloads before building the row).
        """
        handle, info = open_transcript(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            if self.mode == "json-array":
                yield from self._iter_array(handle, want)
                return
            offsets, lengths, lines, entry_ids = self._offsets, self._lengths, self._lines, self._entry_ids
            parsed = self._parsed
            if parsed is not None:
                # Everything was parsed in the one read the scan made: nothing to re-read.
                for index, i in enumerate(self._chosen):
                    if want is not None and not want(
                        Candidate(index, entry_ids[i], lines[i], lengths[i], self._parts[i])
                    ):
                        continue
                    kept, kept_id, kept_ts = parsed[i]
                    yield RawEntry(kept, kept_id, kept_ts, lines[i], lengths[i])
                return
            span = SpanReader(handle)
            for index, i in enumerate(self._chosen):
                offset, length, line, expected_id = offsets[i], lengths[i], lines[i], entry_ids[i]
                if want is not None and not want(Candidate(index, expected_id, line, length, self._parts[i])):
                    continue
                data = span.read(offset, length)
                text, _ = decode_utf8(data)
                try:
                    entry = _js_parse_line(data, _trim(text))
                except (ValueError, RecursionError) as exc:
                    raise _changed(self.path) from exc
                message, enveloped = message_of(entry) if isinstance(entry, dict) else (None, False)
                if message is None or message.get("role") not in PERSISTABLE_ROLES:
                    raise _changed(self.path)
                entry_id = envelope_ts = None
                if enveloped:
                    entry_id = _envelope_string(entry.get("id")) or _envelope_string(entry.get("uuid"))
                    envelope_ts = _envelope_string(entry.get("timestamp"))
                if entry_id != expected_id:
                    raise _changed(self.path)
                yield RawEntry(message, entry_id, envelope_ts, line, length)

    def read_header_line(self) -> dict[str, Any] | None:
        """The session header object (the first non-blank line), or None without one."""
        if self.header_span is None:
            return None
        handle, info = open_transcript(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            handle.seek(self.header_span[0])
            data = handle.read(self.header_span[1])
        text, _ = decode_utf8(data)
        try:
            header = _js_parse_line(data, _trim(text))
        except (ValueError, RecursionError) as exc:
            raise _changed(self.path) from exc
        if not isinstance(header, dict) or header.get("type") != "session":
            raise _changed(self.path)
        return header

    def path_kinds(self) -> list[str]:
        """The kind of every record of the active path, root to leaf.

        ``message`` (message-shaped, whatever its role), ``session_info``,
        ``model_change``, ``thinking_level_change``, or ``entry`` (any other id-bearing
        entry: ``compaction``, ``custom``, ``label``, ...). The active path is the one
        :meth:`iter_messages` imports from; in flatten mode (ids missing, or the chain
        dangles) it is every record in file order, a duplicated message id once. Id-less
        structural lines are not records. Empty for a JSON-array file.
        """
        if self.mode != "jsonl":
            return []
        kinds = self._kinds
        return [_KIND_NAMES[kinds[i]] for i in self._path]

    @contextmanager
    def path_reader(self) -> Iterator[Callable[[int], PathEntry]]:
        """``read(k)``: the ``k``-th record of :meth:`path_kinds`, parsed, read from the file.

        Only the records asked for are read. Raises ``TRANSCRIPT_CHANGED`` like
        :meth:`iter_entries` when the file was replaced or rewritten since the scan.
        """
        handle, info = open_transcript(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            offsets, lengths, lines, kinds, path = (
                self._offsets,
                self._lengths,
                self._lines,
                self._kinds,
                self._path,
            )

            def read(k: int) -> PathEntry:
                i = path[k]
                handle.seek(offsets[i])
                data = handle.read(lengths[i])
                text, _ = decode_utf8(data)
                try:
                    entry = _js_parse_line(data, _trim(text))
                except (ValueError, RecursionError) as exc:
                    raise _changed(self.path) from exc
                if not isinstance(entry, dict):
                    raise _changed(self.path)
                return PathEntry(lines[i], entry, _KIND_NAMES[kinds[i]] == "message")

            yield read

    def _iter_array(self, handle: IO[bytes], want: Callable[[Candidate], bool] | None) -> Iterator[RawEntry]:
        if not self._array_chosen:
            return
        last = max(self._array_chosen)
        handle.seek(self._array_start)
        elements = array_elements(handle, self.size_bytes - self._array_start, self._array_line)
        chosen = 0
        try:
            for index, (line, size, value) in enumerate(elements):
                if index > last:
                    return
                if index in self._array_chosen:
                    if not is_message_shaped(value) or value["role"] not in PERSISTABLE_ROLES:
                        raise _changed(self.path)
                    candidate = Candidate(chosen, None, line, size, self._parts[chosen])
                    chosen += 1
                    if want is None or want(candidate):
                        yield RawEntry(value, None, None, line, size)
        except ArrayError as exc:
            raise _changed(self.path) from exc


def _changed(path: str) -> LcmError:
    return LcmError(
        "TRANSCRIPT_CHANGED",
        f"transcript {path} changed while it was being read; scan it again",
        {"file": path},
    )


def scan_transcript(path: str | os.PathLike[str], *, keep_parsed: bool = False) -> Transcript:
    """First pass over one transcript file: pick the messages to import, explain the rest.

    ``keep_parsed``: for a file of at most :data:`KEEP_PARSED_MAX_BYTES`, keep each
    message as parsed (the JavaScript-faithful way) so building its rows reads nothing
    again. It costs memory in proportion to the file, hence the bound.

    Raises ``LcmError("TRANSCRIPT_UNREADABLE")`` only when the file is missing,
    unreadable or not a regular file; bad content is reported in ``skipped``.
    """
    file = os.fspath(path)
    handle, info = open_transcript(file)
    scan = Transcript(file, info)
    if keep_parsed and info.st_size <= KEEP_PARSED_MAX_BYTES:
        scan._parsed = {}
    try:
        with handle:
            _scan_lines(scan, handle)
    except OSError as exc:
        raise LcmError(
            "TRANSCRIPT_UNREADABLE", f"cannot read transcript {file}: {exc}", {"file": file}
        ) from exc
    scan.session_id = scan.header_id or file_stem(file)
    scan.skipped.sort()
    return scan


class _Index:
    """The per-record facts the leaf-path walk needs, kept small (about 100 bytes each).

    A parent is kept as the index of a record bearing that id (ids are resolved again
    through ``by_id`` at walk time, so a later duplicate still wins), or -1 for a null
    parent; parents not seen yet are kept by name in ``late_parents``.
    """

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.by_id: dict[str, int] = {}  # id -> its last occurrence
        # Four bytes where they are enough (a position, a line's size, number or part
        # count): the index is most of what a large transcript costs in memory.
        self.parents = array("i")
        self.late_parents: dict[int, str] = {}
        self.kinds = bytearray()
        self.entry_ids: list[str | None] = []  # envelope ids (what becomes transcript_entry_id)
        self.offsets = array("q")
        self.lengths = array("I")
        self.lines = array("I")
        self.parts = array("I")  # a message's part count (0 for other records)

    def add(
        self,
        tree_id: str | None,
        parent: str | None,
        kind: int,
        entry_id: str | None,
        offset: int,
        length: int,
        number: int,
        parts: int = 0,
    ) -> None:
        position = len(self.kinds)
        if parent is None:
            self.parents.append(-1)
        else:
            known = self.by_id.get(parent)
            if known is None:
                self.parents.append(-2)
                self.late_parents[position] = parent
            else:
                self.parents.append(known)
        if tree_id is not None:
            self.by_id[tree_id] = position
        self.ids.append(tree_id)
        self.kinds.append(kind)
        self.entry_ids.append(entry_id)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.lines.append(number)
        self.parts.append(parts)

    def parent_of(self, position: int) -> int | None:
        """The record a record's parent id resolves to; -1 for a root, None if dangling."""
        ref = self.parents[position]
        if ref == -1:
            return -1
        name = self.late_parents.get(position) if ref == -2 else self.ids[ref]
        return self.by_id.get(name) if name is not None else None


def _scan_lines(scan: Transcript, handle: IO[bytes]) -> None:
    index = _Index()
    add = index.add
    # _Index.add for a message, inline (the hot path): its columns' appends.
    by_id, late_parents = index.by_id, index.late_parents
    add_parent, add_id, add_kind = index.parents.append, index.ids.append, index.kinds.append
    add_entry_id, add_offset = index.entry_ids.append, index.offsets.append
    add_length, add_line, add_parts = index.lengths.append, index.lines.append, index.parts.append
    skipped = scan.skipped
    parsed = scan._parsed
    keep_parsed = parsed is not None
    space = _JS_SPACE
    seen_content = False
    for offset, length, number, data, newline in physical_lines(handle, scan.size_bytes):
        if data is None:
            seen_content = True
            skipped.append(SkippedLine(number, "truncated_last_line" if not newline else "binary"))
            continue
        try:
            trimmed = data.decode("utf-8").strip(space)
            replaced = False
        except UnicodeDecodeError:
            trimmed = data.decode("utf-8", "replace").strip(space)
            replaced = True
        if not trimmed:
            continue
        first = not seen_content
        seen_content = True
        if first and trimmed[0] == "[":
            scan.mode = "json-array"
            _scan_array(scan, handle, offset, number)
            return
        entry, reason = _parse_object(data, trimmed, newline, replaced, keep_parsed)
        if reason is not None:
            skipped.append(SkippedLine(number, reason))
            continue
        get = entry.get
        kind = get("type")
        if kind == "session":
            _note_session(scan, get, first, offset, length)
            continue
        # message_of, inline: the entry itself, or the message of a message envelope.
        message = None
        enveloped = False
        if isinstance(get("role"), str) and (
            "content" in entry or ("command" in entry and "output" in entry)
        ):
            message = entry
        elif "message" in entry and ("type" not in entry or kind == "message"):
            inner = entry["message"]
            if (
                isinstance(inner, dict)
                and isinstance(inner.get("role"), str)
                and ("content" in inner or ("command" in inner and "output" in inner))
            ):
                message = inner
                enveloped = True
        tree_id, parent = _tree_ids(get)
        if message is None:
            _note_entry(scan, index, entry, kind, tree_id, parent, offset, length, number)
        elif message["role"] in PERSISTABLE_ROLES:
            content = message.get("content")
            parts = len(content) if type(content) is list and content else part_count(message)
            if parent is None:
                add_parent(-1)
            else:
                known = by_id.get(parent)
                if known is None:
                    add_parent(-2)
                    late_parents[len(index.kinds)] = parent
                else:
                    add_parent(known)
            if tree_id is not None:
                by_id[tree_id] = len(index.kinds)
            if parsed is not None:
                envelope_ts = _envelope_string(get("timestamp")) if enveloped else None
                parsed[len(index.kinds)] = (message, tree_id if enveloped else None, envelope_ts)
            add_id(tree_id)
            add_kind(_K_MESSAGE)
            add_entry_id(tree_id if enveloped else None)
            add_offset(offset)
            add_length(length)
            add_line(number)
            add_parts(parts)
            if replaced:
                scan.warnings.append(SkippedLine(number, "not_utf8_replaced"))
        else:
            add(tree_id, parent, _K_OTHER_ROLE, None, offset, length, number)
            skipped.append(SkippedLine(number, "unsupported_role"))
    _choose(scan, index)


def _parse_object(
    data: bytes, trimmed: str, newline: bool, replaced: bool, keep_parsed: bool
) -> tuple[Any, str | None]:
    """One trimmed line's JSON value, and the reason to skip it (None when it is an object
    we read): ``too_deep``, ``not_an_object``, or why it is not JSON."""
    # JSONDecoder.decode without its wrapper: the text is trimmed, so the value must end
    # exactly at its end.
    try:
        if keep_parsed:
            # The same text and the same validity; numbers and key order as building
            # needs them (the scan itself reads neither).
            entry = _js_parse_line(data, trimmed)
            valid = True
        else:
            entry, end = _SHAPE_SCAN(trimmed, 0)
            valid = end == len(trimmed)
    except RecursionError:
        return None, "too_deep"
    except (ValueError, StopIteration):
        valid = False
    if not valid:
        return None, _invalid_json_reason(newline, replaced)
    if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH and _too_deep(entry):
        return None, "too_deep"
    if not isinstance(entry, dict):
        return None, "not_an_object"
    return entry, None


def _invalid_json_reason(newline: bool, replaced: bool) -> str:
    """Why a line that does not parse is skipped: cut short, not UTF-8, or bad JSON."""
    if not newline:
        return "truncated_last_line"
    if replaced:
        return "not_utf8"
    return "invalid_json"


def _note_session(scan: Transcript, get: Callable[[str], Any], first: bool, offset: int, length: int) -> None:
    """A session entry: counted as structural; the header when it is the first line."""
    if first:
        scan.header_id = _envelope_string(get("id"))
        scan.header_span = (offset, length)
    scan.structural["session"] = scan.structural.get("session", 0) + 1


def _tree_ids(get: Callable[[str], Any]) -> tuple[str | None, str | None]:
    """An entry's tree id and parent id (``id``/``parentId``, else ``uuid``/``parentUuid``)."""
    space = _JS_SPACE
    value = get("id")
    tree_id = value.strip(space) or None if isinstance(value, str) else None
    if tree_id is None:
        tree_id = _envelope_string(get("uuid"))
    value = get("parentId")
    parent = value.strip(space) or None if isinstance(value, str) else None
    if parent is None:
        parent = _envelope_string(get("parentUuid"))
    return tree_id, parent


def _note_entry(
    scan: Transcript,
    index: _Index,
    entry: dict[str, Any],
    kind: Any,
    tree_id: str | None,
    parent: str | None,
    offset: int,
    length: int,
    number: int,
) -> None:
    """An object line that carries no message: indexed when it has an id (it links the
    tree), then counted as structural or skipped with the reason."""
    if tree_id is not None:
        code = _K_SETTINGS.get(kind, _K_ENTRY) if isinstance(kind, str) else _K_ENTRY
        index.add(tree_id, parent, code, None, offset, length, number)
    if isinstance(kind, str) and kind in STRUCTURAL_ENTRY_TYPES and "message" not in entry:
        scan.structural[kind] = scan.structural.get(kind, 0) + 1
    else:
        scan.skipped.append(SkippedLine(number, why_not_message(entry)))


def _too_deep(value: Any) -> bool:
    """True for JSON nested deeper than we read safely (the reference has no such limit)."""
    return nests_deeper(value, MAX_JSON_DEPTH)


def _choose(scan: Transcript, index: _Index) -> None:
    """§3.4: the active leaf path when every record has an id, else every message in order."""
    count = len(index.kinds)
    scan.all_ids = count > 0 and all(tree_id is not None for tree_id in index.ids)
    walk: array[int] | None = None
    if count == 0:
        scan.flatten_reason = "no_records"
    elif not scan.all_ids:
        scan.flatten_reason = "missing_ids"
    else:
        walk, scan.flatten_reason = _leaf_path(index)
    scan.leaf_path = walk is not None
    chosen: list[int]
    if walk is not None:
        # The messages off the path: the kinds with the path's records blanked out, then
        # found by a byte search (usually there are none).
        off_path = bytearray(index.kinds)
        for i in walk:
            off_path[i] = 0
        i = off_path.find(_K_MESSAGE)
        while i != -1:
            superseded = index.by_id[index.ids[i] or ""] != i
            reason = "duplicate_entry_id" if superseded else "abandoned_branch"
            scan.skipped.append(SkippedLine(index.lines[i], reason))
            i = off_path.find(_K_MESSAGE, i + 1)
        # Root-to-leaf order is usually file order, but a re-appended (duplicate) id
        # can put an ancestor after its child in the file.
        kinds = index.kinds
        path = array("q", reversed(walk))
        chosen = [i for i in path if kinds[i] == _K_MESSAGE]
    else:
        chosen = []
        path = array("q")
        seen: set[str] = set()
        for i in range(count):
            if index.kinds[i] != _K_MESSAGE:
                path.append(i)
                continue
            entry_id = index.entry_ids[i]
            if entry_id is not None:
                if entry_id in seen:
                    scan.skipped.append(SkippedLine(index.lines[i], "duplicate_entry_id"))
                    continue
                seen.add(entry_id)
            chosen.append(i)
            path.append(i)
    scan._path, scan._kinds = path, index.kinds
    # The transcript keeps the per-record columns it reads back and the chosen positions.
    scan._chosen = array("q", chosen)
    scan._offsets, scan._lengths, scan._lines = index.offsets, index.lengths, index.lines
    scan._entry_ids, scan._parts = index.entry_ids, index.parts
    scan.candidate_count = len(scan._chosen)


def _leaf_path(index: _Index) -> tuple[array[int] | None, str | None]:
    """The records from the last one up to a root, leaf first (None: flatten, and why)."""
    visited = bytearray(len(index.kinds))
    walk = array("q")
    current = len(index.kinds) - 1
    while True:
        if visited[current]:
            return None, "cycle"
        visited[current] = 1
        walk.append(current)
        parent = index.parent_of(current)
        if parent == -1:
            return walk, None
        if parent is None:
            return None, "dangling_parent"
        current = parent


def _scan_array(scan: Transcript, handle: IO[bytes], offset: int, number: int) -> None:
    """§3.1 JSON-array mode: bare message elements only, no ids, all or nothing."""
    scan._array_start = offset
    scan._array_line = number
    handle.seek(offset)
    # (line, skip reason or None when chosen, UTF-8 size, part count)
    found: list[tuple[int, str | None, int, int]] = []
    try:
        for line, size, value in array_elements(handle, scan.size_bytes - offset, number):
            if _too_deep(value):
                found.append((line, "too_deep", 0, 0))
            elif not isinstance(value, dict):
                found.append((line, "not_an_object", 0, 0))
            elif not is_message_shaped(value):
                why = "array_envelope_entry" if "message" in value else why_not_message_shaped(value)
                found.append((line, why, 0, 0))
            elif value["role"] not in PERSISTABLE_ROLES:
                found.append((line, "unsupported_role", 0, 0))
            else:
                found.append((line, None, size, part_count(value)))
    except ArrayError as error:
        scan.skipped.extend(SkippedLine(line, "invalid_json_array") for line, *_ in found)
        scan.skipped.append(SkippedLine(error.line, "invalid_json"))
        scan.flatten_reason = "json_array"
        return
    scan.flatten_reason = "json_array"
    lines, lengths, parts_counts = array("q"), array("q"), array("q")
    for position, (line, reason, size, parts) in enumerate(found):
        if reason is None:
            scan._array_chosen.add(position)
            lines.append(line)
            lengths.append(size)
            parts_counts.append(parts)
        else:
            scan.skipped.append(SkippedLine(line, reason))
    scan.candidate_count = len(scan._array_chosen)
    scan._lines, scan._lengths, scan._parts = lines, lengths, parts_counts
    scan._entry_ids = [None] * scan.candidate_count
    scan._chosen = array("q", range(scan.candidate_count))
