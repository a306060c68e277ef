"""Token estimates, computed exactly as lossless-claw does (compat/database.md §7).

Every code point costs a quarter token, except CJK code points (1.5) and other
code points above U+FFFF such as emoji (2). The sum is rounded up. Stored counts
written by lossless-claw use this rule, so ours must agree to the token.
"""

from __future__ import annotations

import re

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
    astral = len(text.encode("utf-16-le", "surrogatepass")) // 2 - size
    if not astral:
        return size + 5 * len(_NOT_BMP_CJK.sub("", text))
    rest = _NOT_BMP_CJK_OR_ASTRAL.sub("", text)  # BMP CJK and astral code points
    astral_cjk = len(_NOT_ASTRAL_CJK.sub("", rest))
    cjk = len(rest) - astral + astral_cjk
    return size + 5 * cjk + 7 * (astral - astral_cjk)
