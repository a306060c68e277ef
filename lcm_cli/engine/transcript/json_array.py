"""Transcripts written as one JSON array: its elements streamed and decoded as Node decodes them."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from lcm_cli.engine.core.jscompat import JS_SPACE as _JS_SPACE
from lcm_cli.engine.core.jscompat import decoder as _decoder

# How much of the file the array reader decodes at a time.
_CHUNK = 1 << 20


class ArrayError(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def array_elements(handle: IO[bytes], limit: int, first_line: int) -> Iterator[tuple[int, int, Any]]:
    """Stream the elements of one top-level JSON array: (line, UTF-8 size, value).

    Raises ArrayError (with the line of the fault) where ``JSON.parse`` of the whole
    text would throw; the caller must then discard the elements already yielded.
    Memory holds one element (plus a read chunk), never the whole array.
    """
    reader = _ArrayReader(handle, limit, first_line)
    reader.skip(_JS_SPACE)  # the reference trims the text before parsing it
    if reader.peek() != "[":
        raise ArrayError(reader.line_here())
    reader.pos += 1
    reader.skip(_JSON_SPACE)
    if reader.peek() == "]":
        reader.pos += 1
    else:
        while True:
            reader.skip(_JSON_SPACE)
            line = reader.line_here()
            value, size = reader.element(line)
            yield line, size, value
            reader.skip(_JSON_SPACE)
            mark = reader.peek()
            reader.pos += 1
            if mark == "]":
                break
            if mark != ",":
                raise ArrayError(line if mark == "" else reader.line_here())
    reader.skip(_JS_SPACE)
    if reader.peek() != "":
        raise ArrayError(reader.line_here())


_JSON_SPACE = " \t\n\r"


class _ArrayReader:
    """A sliding text window over a byte range, decoded as Node decodes UTF-8."""

    def __init__(self, handle: IO[bytes], limit: int, first_line: int) -> None:
        self.handle = handle
        self.remaining = limit
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.buffer = ""
        self.pos = 0
        self.line = first_line  # line number of buffer[0]
        self.eof = False

    def more(self, at_least: int = _CHUNK) -> bool:
        """Drop the consumed text and append at least one more chunk; False at the end."""
        if self.eof:
            return False
        self.line += self.buffer.count("\n", 0, self.pos)
        self.buffer = self.buffer[self.pos :]
        self.pos = 0
        while True:
            data = self.handle.read(min(max(at_least, _CHUNK), self.remaining)) if self.remaining > 0 else b""
            self.remaining -= len(data)
            if not data:
                self.buffer += self.decoder.decode(b"", final=True)
                self.eof = True
                return False
            text = self.decoder.decode(data)
            if text:
                self.buffer += text
                return True

    def peek(self) -> str:
        if self.pos >= len(self.buffer) and not self.more():
            return self.buffer[self.pos : self.pos + 1]
        return self.buffer[self.pos]

    def skip(self, chars: str) -> None:
        while True:
            rest = self.buffer[self.pos :].lstrip(chars) if self.pos < len(self.buffer) else ""
            self.pos = len(self.buffer) - len(rest)
            if rest or not self.more():
                return

    def line_here(self) -> int:
        return self.line + self.buffer.count("\n", 0, self.pos)

    def element(self, line: int) -> tuple[Any, int]:
        decoder = _decoder(True, True)
        while True:
            try:
                value, end = decoder.raw_decode(self.buffer, self.pos)
            except RecursionError as exc:
                raise ArrayError(line) from exc
            except json.JSONDecodeError as exc:
                # Only an error at the window's edge can be cured by reading on.
                near_end = exc.pos >= len(self.buffer) - 16 or exc.msg.startswith("Unterminated string")
                if not near_end or not self.more(2 * len(self.buffer)):
                    raise ArrayError(line) from exc
                continue
            if end >= len(self.buffer) and self.more(2 * len(self.buffer)):
                continue  # a number (or anything) at the window's edge may go on
            size = len(self.buffer[self.pos : end].encode("utf-8", "surrogatepass"))
            self.pos = end
            return value, size
