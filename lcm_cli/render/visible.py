"""Stored text made inert for a terminal: control characters shown, never sent.

Messages, summaries, session keys and paths come from agents and tools, so they can hold
escape sequences: one that clears the screen, OSC 52 (writes the clipboard), OSC 8 links,
a bare C1 CSI. Every renderer for people passes its text through :func:`visible` before
laying it out (widths then count what is shown); JSON output stays exact.
"""

from __future__ import annotations

import io
import re

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

# C0 except TAB and LF (the layout's own), DEL, and C1. CR is escaped too: it moves the
# cursor back and lets later text overwrite what was shown.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found[0])
    # C1 as \u00NN: a code point, not the byte 0x9b of some other encoding.
    return f"\\x{code:02x}" if code <= 0x7F else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but TAB and LF written as an escape.

    C0 and DEL become ``\\x1b``-style escapes, C1 ``\\u009b``-style ones, as Python and
    JSON spell them, in plain ASCII (the U+2400 pictures cover no C1 and may show as
    boxes). Text without control characters comes back unchanged (the same object).
    """
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


class VisibleWriter(io.TextIOBase):
    """A text stream that passes what is written through :func:`visible` (a document
    streamed to a terminal, where a person reads it)."""

    def __init__(self, target: TextIO) -> None:
        self.target = target

    def write(self, text: str) -> int:
        self.target.write(visible(text))
        return len(text)

    def flush(self) -> None:
        self.target.flush()
