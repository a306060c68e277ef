"""JavaScript's ``localeCompare`` order (ICU root collation), for sorting like the reference.

lossless-claw sorts discovered transcript paths, and the keys of metadata objects it
hashes, with ``a.localeCompare(b)``: the Unicode Collation Algorithm with CLDR's root
tailoring, at the default strength (tertiary; punctuation not ignored; lower case first).

The collation elements come from the DUCET through ``pyuca`` (Unicode 10 table), which
agrees with ICU root on Latin (accented or not), digits, punctuation, Hangul and kana.
One place where CLDR root differs from the DUCET matters here: since ICU 76 (CLDR 46),
which is what Node 20.19+/22/24 ship, Han ideographs sort in radical-stroke order, not by
code point. ``han_radical_stroke.txt`` lists the ideographs of U+3400..U+4DBF and
U+4E00..U+9FFF in that order, recorded from Node 24's ``Intl.Collator``; other
ideographs (extensions B and later) keep the DUCET's implicit weights, after them.

Pure-ASCII text (almost every file name and metadata key) never loads the table: each
ASCII character is one collation element, listed in :data:`_ASCII_PRIMARY`, and the key
built from it is the one the full collator gives (a test checks every character).
"""

from __future__ import annotations

import functools
import os

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.held_files import open_input_text

if TYPE_CHECKING:
    from typing import Any

# Primary weight of each ASCII character in the DUCET (0: ignorable, i.e. controls).
_ASCII_PRIMARY = (
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    513,
    514,
    515,
    516,
    517,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    521,
    609,
    781,
    921,
    7287,
    922,
    919,
    774,
    792,
    793,
    912,
    1580,
    546,
    525,
    632,
    917,
    7331,
    7332,
    7333,
    7334,
    7335,
    7336,
    7337,
    7338,
    7339,
    7340,
    570,
    564,
    1584,
    1585,
    1586,
    615,
    911,
    7341,
    7366,
    7392,
    7413,
    7440,
    7499,
    7514,
    7550,
    7576,
    7602,
    7627,
    7645,
    7696,
    7711,
    7747,
    7794,
    7815,
    7833,
    7895,
    7931,
    7963,
    8009,
    8027,
    8037,
    8049,
    8071,
    794,
    918,
    795,
    1179,
    523,
    1176,
    7341,
    7366,
    7392,
    7413,
    7440,
    7499,
    7514,
    7550,
    7576,
    7602,
    7627,
    7645,
    7696,
    7711,
    7747,
    7794,
    7815,
    7833,
    7895,
    7931,
    7963,
    8009,
    8027,
    8037,
    8049,
    8071,
    796,
    1588,
    797,
    1590,
    0,
)
_SECONDARY = 0x20
_LOWER, _UPPER = 0x02, 0x08
_HAN_BASE = 0xFB40
_HAN_ORDER_FILE = "han_radical_stroke.txt"


def sort_key(text: str) -> tuple[int, ...]:
    """The sort key of ``text``: ``sort_key(a) < sort_key(b)`` iff ``a.localeCompare(b) < 0``.

    Strings that ICU finds equal (e.g. NFC and NFD spellings) get equal keys; callers
    that need a total order add a tie-break of their own.
    """
    if text.isascii():
        return _ascii_key(text)
    return _full_key(text)


@functools.lru_cache(maxsize=8192)
def _ascii_key(text: str) -> tuple[int, ...]:
    primaries = [_ASCII_PRIMARY[ord(ch)] for ch in text]
    kept = [(p, ch) for p, ch in zip(primaries, text) if p]
    tertiary = [_UPPER if "A" <= ch <= "Z" else _LOWER for _, ch in kept]
    # pyuca's layout: primaries, 0, secondaries, 0, tertiaries, 0 (an empty fourth level).
    return (*[p for p, _ in kept], 0, *([_SECONDARY] * len(kept)), 0, *tertiary, 0)


@functools.lru_cache(maxsize=4096)
def _full_key(text: str) -> tuple[int, ...]:
    return tuple(_collator().sort_key(text))


@functools.lru_cache(maxsize=1)
def _collator() -> Any:
    """The DUCET collator with ICU 76+'s radical-stroke order for Han (loaded once)."""
    from pyuca.collator import Collator_10_0_0  # type: ignore[import-untyped]

    path = os.path.join(os.path.dirname(__file__), _HAN_ORDER_FILE)
    with open_input_text(path) as handle:
        han_rank = {ord(ch): rank for rank, ch in enumerate(handle.read())}

    class _RootCollator(Collator_10_0_0):  # type: ignore[misc]
        def implicit_weight(self, cp: int) -> list[list[int]]:
            rank = han_rank.get(cp)
            if rank is None:
                return list(super().implicit_weight(cp))
            return [[_HAN_BASE + (rank >> 15), _SECONDARY, _LOWER], [(rank & 0x7FFF) | 0x8000, 0, 0]]

    return _RootCollator()
