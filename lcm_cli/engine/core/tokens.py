"""Token estimates, computed exactly as lossless-claw does (docs/reference/database.md §7).

Every code point costs a quarter token, except CJK code points (1.5) and other
code points above U+FFFF such as emoji (2). The sum is rounded up. Stored counts
written by lossless-claw use this rule, so ours must agree to the token.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.jscompat import js_values, stringify, utf8_safe

if TYPE_CHECKING:
    from typing import Any

# The CJK ranges of the rule: U+3000-303F, U+3040-30FF, U+3400-4DBF, U+4E00-9FFF,
# U+AC00-D7AF, U+FF00-FFEF, and extensions B-F (U+20000-2A6DF, U+2A700-2B73F,
# U+2B740-2B81F, U+2B820-2CEAF, U+2CEB0-2EBEF), which cost 1.5 rather than the 2 of
# other astral code points. Deleting the runs of everything else leaves the code
# points of interest, and their number is the length of what remains: one pass in C
# that builds few objects, where finding every match would build one per character.
_BMP_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef"


@functools.cache
def _cjk_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Not BMP CJK; neither BMP CJK nor astral; not astral CJK. Compiled on first use: the
    two wide classes cost about 4 ms to compile, and most texts are counted without them."""
    return (
        re.compile(f"[^{_BMP_CJK}]+"),
        re.compile(f"[^{_BMP_CJK}\U00010000-\U0010ffff]+"),
        re.compile("[^\U00020000-\U0002a6df\U0002a700-\U0002ebef]+"),
    )


# The same count from the UTF-16 code units, without a regex pass (several times cheaper
# on long texts): each BMP code point is one unit and each astral one two surrogate units
# (high bytes D8-DF, never CJK). Where a BMP CJK range covers a high byte whole
# (30, 34-4C, 4E-9F, AC-D6) that byte decides; a range ends inside 4D, D7 and FF, and the
# astral CJK ranges lie in plane 2 (high surrogates D840-D87F), so a text with any of
# those is counted by the regexes instead. Class 1: CJK; 2: let the regexes decide.
_HIGH_BYTE_CLASS = bytearray(256)
for _high in (0x30, *range(0x34, 0x4D), *range(0x4E, 0xA0), *range(0xAC, 0xD7)):
    _HIGH_BYTE_CLASS[_high] = 1
for _high in (0x4D, 0xD7, 0xFF):
    _HIGH_BYTE_CLASS[_high] = 2
# Searched in the big-endian units: a match at an odd offset only sends the text to the
# regexes without need.
_PLANE_2_HIGH_SURROGATE = re.compile(b"\xd8[\x40-\x7f]")


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` per lossless-claw's code-point rule."""
    return (token_quarters(text) + 3) // 4


def token_quarters(text: str) -> int:
    """The estimate of ``text`` in quarter tokens, before rounding up.

    Quarters add up over concatenation, so the estimate of joined pieces is
    ``(sum of their quarters + 3) // 4`` without building the joined text.
    """
    # Work in quarter tokens so the sum stays an exact integer: 0.25 -> 1,
    # 1.5 -> 6, 2 -> 8.
    size = len(text)
    if text.isascii():
        # The common case: every code point is a quarter.
        return size
    # UTF-16 spends two units on each astral code point and one on any other (a
    # lone surrogate included), which counts the astral code points in one pass.
    units = text.encode("utf-16-be", "surrogatepass")
    astral = len(units) // 2 - size
    classes = units[::2].translate(_HIGH_BYTE_CLASS)  # the class of each unit's high byte
    # find, not `in` (see jscompat.js_parse_line): this runs for every non-ASCII text.
    if classes.find(b"\x02") == -1 and not (astral and _PLANE_2_HIGH_SURROGATE.search(units)):
        return size + 5 * classes.count(1) + 7 * astral  # no astral code point is CJK here
    not_bmp_cjk, not_bmp_cjk_or_astral, not_astral_cjk = _cjk_patterns()
    if not astral:
        return size + 5 * len(not_bmp_cjk.sub("", text))
    rest = not_bmp_cjk_or_astral.sub("", text)  # BMP CJK and astral code points
    astral_cjk = len(not_astral_cjk.sub("", rest))
    cjk = len(rest) - astral + astral_cjk
    return size + 5 * cjk + 7 * (astral - astral_cjk)


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# The serialized estimate (docs/reference/engine.md §6.7), as the reference's
# src/estimate-tokens.ts counts a message: the JSON.stringify text of the whole message,
# where each opaque binary string is written as a short placeholder and costs a flat
# 1600 tokens on top. A string is opaque when it has 4096+ UTF-16 units and either is a
# data: URL (under any key) or sits under a binary key with a head (its first 512
# units) of base64 characters and line breaks only, holding a digit and a letter.
OPAQUE_TOKENS = 1600
_OPAQUE_MIN_UNITS = 4096
_OPAQUE_HEAD = 512
_OPAQUE_KEYS = frozenset({"data", "image", "imageData", "image_data", "base64", "bytes", "source"})
_BASE64_HEAD = re.compile(r"[A-Za-z0-9+/=\r\n]+")
_PLACEHOLDER_QUARTERS = len('"[opaque binary payload]"')  # ASCII: a quarter token each
# Python spells a float differently from JavaScript only as ``3.0``, ``1e+16`` or ``1e-05``
# (a JSON number follows ``:``, ``[`` or ``,``); text without such a number (and without a
# lone surrogate) is already JSON.stringify's. A string that merely looks like one only
# costs the slower exact path.
_PYTHON_FLOAT = re.compile(r"[:,\[]-?\d+(?:\.0[,\]}]|(?:\.\d+)?e[-+])")


def _utf16_length(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def is_opaque_binary(key: str, value: str) -> bool:
    """True when the serialized estimate counts ``value`` (under ``key``) as one opaque binary part."""
    if len(value) < _OPAQUE_MIN_UNITS and (
        2 * len(value) < _OPAQUE_MIN_UNITS or _utf16_length(value) < _OPAQUE_MIN_UNITS
    ):
        return False
    if value.startswith("data:"):
        return True
    if key not in _OPAQUE_KEYS:
        return False
    # A head that is all ASCII is the same 512 characters whether counted in code points or
    # UTF-16 units; one that is not fails the pattern either way.
    head = value[:_OPAQUE_HEAD]
    return (
        _BASE64_HEAD.fullmatch(head) is not None
        and any(c.isdigit() for c in head)
        and any(c.isalpha() for c in head)
    )


def _js_quarters(value: Any) -> int:
    return token_quarters(stringify(js_values(value)))


def _spelled_as_javascript(text: str) -> bool:
    if _PYTHON_FLOAT.search(text) is not None:
        return False
    return text.isascii() or utf8_safe(text) is text


class _Serialized:
    """Quarter tokens of a value's JSON.stringify text, opaque strings as the placeholder."""

    def __init__(self) -> None:
        self.opaque = 0

    def quarters(self, value: Any, key: str) -> int:
        if isinstance(value, str):
            if is_opaque_binary(key, value):
                self.opaque += 1
                return _PLACEHOLDER_QUARTERS
            return _js_quarters(value)
        if isinstance(value, dict):
            total = 2 + max(0, len(value) - 1)
            for k, v in value.items():
                total += _js_quarters(str(k)) + 1 + self.quarters(v, str(k))
            return total
        if isinstance(value, (list, tuple)):
            # An array element's key is its index, never a binary key.
            return 2 + max(0, len(value) - 1) + sum(self.quarters(v, str(i)) for i, v in enumerate(value))
        return _js_quarters(value)


def serialized_tokens(message: Mapping[str, Any]) -> int:
    """The serialized estimate of one whole message (the reference's ``estimateSerializedMessageTokens``).

    The estimate of its ``JSON.stringify`` text, with each opaque binary string (see
    :func:`is_opaque_binary`) written as ``"[opaque binary payload]"`` and counted as a flat
    1600 tokens more (docs/reference/engine.md §6.7).
    """
    text = _compact_json(message)
    if len(text) < _OPAQUE_MIN_UNITS and (text.isascii() or _utf16_length(text) < _OPAQUE_MIN_UNITS):
        # No string inside can reach 4096 UTF-16 units.
        if _spelled_as_javascript(text):
            return (token_quarters(text) + 3) // 4
        return (_js_quarters(dict(message)) + 3) // 4
    walk = _Serialized()
    quarters = walk.quarters(dict(message), "")
    return (quarters + 3) // 4 + OPAQUE_TOKENS * walk.opaque
