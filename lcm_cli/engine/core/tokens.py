"""Token estimates, computed exactly as lossless-claw does (compat/database.md §7).

Every code point costs a quarter token, except CJK code points (1.5) and other
code points above U+FFFF such as emoji (2). The sum is rounded up. Stored counts
written by lossless-claw use this rule, so ours must agree to the token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# The CJK ranges of the rule: U+3000-303F, U+3040-30FF, U+3400-4DBF, U+4E00-9FFF,
# U+AC00-D7AF, U+FF00-FFEF, and extensions B-F (U+20000-2A6DF, U+2A700-2B73F,
# U+2B740-2B81F, U+2B820-2CEAF, U+2CEB0-2EBEF), which cost 1.5 rather than the 2 of
# other astral code points. Deleting the runs of everything else leaves the code
# points of interest, and their number is the length of what remains: one pass in C
# that builds few objects, where finding every match would build one per character.
_BMP_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef"
_NOT_BMP_CJK = re.compile(f"[^{_BMP_CJK}]+")
_NOT_BMP_CJK_OR_ASTRAL = re.compile(f"[^{_BMP_CJK}\U00010000-\U0010ffff]+")
_NOT_ASTRAL_CJK = re.compile("[^\U00020000-\U0002a6df\U0002a700-\U0002ebef]+")

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
    if b"\x02" not in classes and not (astral and _PLANE_2_HIGH_SURROGATE.search(units)):
        return size + 5 * classes.count(1) + 7 * astral  # no astral code point is CJK here
    if not astral:
        return size + 5 * len(_NOT_BMP_CJK.sub("", text))
    rest = _NOT_BMP_CJK_OR_ASTRAL.sub("", text)  # BMP CJK and astral code points
    astral_cjk = len(_NOT_ASTRAL_CJK.sub("", rest))
    cjk = len(rest) - astral + astral_cjk
    return size + 5 * cjk + 7 * (astral - astral_cjk)


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# A media string (a data: URL, or base64 under a binary-ish key) of 4096+ characters costs a
# flat 1600 tokens in the serialized estimate, as the reference counts it (compat/engine.md §6.7).
_BIG_KEYS = frozenset({"data", "image", "imageData", "image_data", "base64", "bytes", "source"})
_BASE64ISH = re.compile(r"^[A-Za-z0-9+/=\s]+$")


def _serialized_quarters(value: Any, key: str | None = None) -> int:
    """Quarter-token estimate of ``value``'s JSON, with large media strings at a flat 1600 tokens."""
    if isinstance(value, str):
        if len(value) >= 4096 and (
            value.startswith("data:") or (key in _BIG_KEYS and _BASE64ISH.match(value[:4096]) is not None)
        ):
            return 1600 * 4
        return token_quarters(_compact_json(value))
    if isinstance(value, dict):
        total = 2 + max(0, len(value) - 1)
        for k, v in value.items():
            total += token_quarters(_compact_json(k)) + 1 + _serialized_quarters(v, k)
        return total
    if isinstance(value, list):
        return 2 + max(0, len(value) - 1) + sum(_serialized_quarters(v) for v in value)
    return token_quarters(_compact_json(value))


def serialized_tokens(message: Mapping[str, Any]) -> int:
    """The serialized estimate of one whole message: its compact JSON, media at a flat rate (§6.7)."""
    text = _compact_json(message)
    if len(text) < 4096:
        # No string inside can reach the 4096-character media rule.
        return (token_quarters(text) + 3) // 4
    return (_serialized_quarters(dict(message)) + 3) // 4
