"""One-line previews of message and summary text, as the reference renders them."""

from __future__ import annotations

import re

PREVIEW_SOURCE_CHARS = 1024
PREVIEW_MAX_UNITS = 240
# JavaScript's \s: ASCII whitespace, Unicode spaces, line/paragraph separators and U+FEFF.
_JS_SPACE = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def make_preview(text: str | None) -> str:
    """Collapse whitespace, trim, and cap at 240 UTF-16 units ending in ``…``.

    Callers pass the first 1024 characters when full content was not requested.
    """
    collapsed = _JS_SPACE.sub(" ", text or "").strip(" ")
    if collapsed.isascii() or _utf16_len(collapsed) <= PREVIEW_MAX_UNITS:
        if len(collapsed) <= PREVIEW_MAX_UNITS:
            return collapsed
        return collapsed[: PREVIEW_MAX_UNITS - 1] + "\u2026"
    units = 0
    for index, ch in enumerate(collapsed):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > PREVIEW_MAX_UNITS - 1:
            # A surrogate pair split by the cut is dropped rather than emitted half.
            return collapsed[:index] + "\u2026"
    return collapsed
