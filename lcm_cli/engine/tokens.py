"""Token estimates, computed exactly as lossless-claw does (compat/database.md §7).

Every code point costs a quarter token, except CJK code points (1.5) and other
code points above U+FFFF such as emoji (2). The sum is rounded up. Stored counts
written by lossless-claw use this rule, so ours must agree to the token.
"""

from __future__ import annotations

import re

# The CJK ranges of the rule, as one character class. Extensions B-F (above
# U+FFFF) are CJK too, so they cost 1.5 rather than the 2 of other astral code
# points; they are counted by both patterns below and corrected for.
_CJK = re.compile(
    "["
    "\u4e00-\u9fff"
    "\u3400-\u4dbf"
    "\U00020000-\U0002a6df"
    "\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f"
    "\U0002b820-\U0002ceaf"
    "\U0002ceb0-\U0002ebef"
    "\u3000-\u303f"
    "\u3040-\u30ff"
    "\uac00-\ud7af"
    "\uff00-\uffef"
    "]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ASTRAL_CJK = re.compile("[\U00020000-\U0002a6df\U0002a700-\U0002ebef]")


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` per lossless-claw's code-point rule."""
    # Work in quarter tokens so the sum stays an exact integer: 0.25 -> 1,
    # 1.5 -> 6, 2 -> 8. The ceiling of quarters / 4 is then (q + 3) // 4.
    if text.isascii():
        # The common case (and the benchmark's): every code point is a quarter.
        return (len(text) + 3) // 4
    cjk = len(_CJK.findall(text))
    astral = len(_ASTRAL.findall(text)) if _has_astral(text) else 0
    astral_cjk = len(_ASTRAL_CJK.findall(text)) if astral else 0
    quarters = len(text) + 5 * cjk + 7 * (astral - astral_cjk)
    return (quarters + 3) // 4


def _has_astral(text: str) -> bool:
    # Cheap pre-check: max() over a str runs in C and avoids a regex scan for
    # the usual BMP-only text (accents, CJK, symbols).
    return max(text) > "\uffff"
