"""JSONL decoding: opening a transcript, its physical lines (split at lone CRs as Node's
readline does, binary lines dropped), UTF-8 decoding, and byte-span reads.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import IO

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input

# The first pass splits what it reads into lines all at once: a smaller read keeps fewer
# of them alive at a time (less memory held between the index's long-lived entries).
_SCAN_CHUNK = 1 << 18


def file_stem(path: str) -> str:
    # Node's basename(file, extname(file)): "abc.jsonl" -> "abc", ".hidden" stays.
    name = os.path.basename(path)
    dot = name.rfind(".")
    if dot <= 0 or not name[:dot].strip("."):
        return name
    return name[:dot]


def open_transcript(path: str) -> tuple[IO[bytes], os.stat_result]:
    try:
        handle = open_input(path)
    except OSError as exc:
        raise LcmError(
            "TRANSCRIPT_UNREADABLE",
            f"cannot read transcript {path}: {exc.strerror or exc}",
            {"file": path},
        ) from exc
    try:
        info = os.fstat(handle.fileno())
    except OSError as exc:
        handle.close()
        raise LcmError("TRANSCRIPT_UNREADABLE", f"cannot stat transcript {path}", {"file": path}) from exc
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        raise LcmError("TRANSCRIPT_UNREADABLE", f"transcript {path} is not a regular file", {"file": path})
    return handle, info


class SpanReader:
    """Byte spans of one file, read through a window that moves forward in large chunks.

    The chosen lines are mostly in file order, so reading each one with its own seek and
    read (a system call per message) is replaced by one read per 256 KiB. A span behind
    the window or larger than that is read directly.
    """

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.start = 0
        self.window = b""

    def read(self, offset: int, length: int) -> bytes:
        """The ``length`` bytes at ``offset`` (fewer only at the end of the file)."""
        begin = offset - self.start
        if 0 <= begin and begin + length <= len(self.window):
            return self.window[begin : begin + length]
        self.handle.seek(offset)
        if length >= _SCAN_CHUNK:
            return self.handle.read(length)
        self.start, self.window = offset, self.handle.read(_SCAN_CHUNK)
        return self.window[:length]


# One line as :func:`physical_lines` yields it: (byte offset, byte length without its
# terminator, 1-based physical line number, the bytes or None when the line was dropped
# as binary, whether a line break ended it: False only for the file's last line).
_Line = tuple[int, int, int, "bytes | None", bool]


def physical_lines(handle: IO[bytes], limit: int) -> Iterator[_Line]:
    """The lines of the first ``limit`` bytes, each split at lone CRs as Node's readline does.

    The bytes are read a chunk at a time and split in C. A line holding a NUL byte cannot
    be JSON, so it is not accumulated: a binary file with no line breaks costs one chunk
    of memory, not its size. (Lines are searched with ``find``, not ``in``: see
    :func:`lcm_cli.engine.core.jscompat.js_parse_line`.)
    """
    number = 0
    remaining = limit
    position = 0  # file offset of the next line
    head: list[bytes] = []  # the pieces of a line that runs past the chunk read so far
    head_size = 0
    head_binary = False
    while remaining > 0:
        chunk = handle.read(min(_SCAN_CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        pieces = chunk.split(b"\n")
        tail = pieces.pop()  # after the chunk's last line break: the start of a line
        for piece in pieces:
            number += 1
            start = position
            if head_size:
                size = head_size + len(piece)
                binary = head_binary or piece.find(b"\x00") != -1
                if not binary:
                    head.append(piece)
                    piece = b"".join(head)
                head = []
                head_size = 0
                head_binary = False
            else:
                size = len(piece)
                binary = piece.find(b"\x00") != -1
            position += size + 1
            if binary:
                yield (start, size, number, None, True)
                continue
            if piece.endswith(b"\r"):
                piece = piece[:-1]
            if piece.find(b"\r") == -1:
                yield (start, len(piece), number, piece, True)
                continue
            for segment in piece.split(b"\r"):
                yield (start, len(segment), number, segment, True)
                start += len(segment) + 1
        if tail:
            head_size += len(tail)
            if not head_binary:
                if b"\x00" in tail:
                    head_binary = True
                    head = []
                else:
                    head.append(tail)
    if head_size:  # the last line has no line break
        number += 1
        if head_binary:
            yield (position, head_size, number, None, False)
            return
        data = b"".join(head)
        if data.endswith(b"\r"):
            data = data[:-1]
        segments = data.split(b"\r")
        last = len(segments) - 1
        for i, segment in enumerate(segments):
            yield (position, len(segment), number, segment, i != last)
            position += len(segment) + 1


def decode_utf8(data: bytes) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True
