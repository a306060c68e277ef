"""estimate_tokens follows lossless-claw's code-point rule (database.md §7) exactly."""

from __future__ import annotations

import math
import random

import pytest

from lcm_cli.engine.core.tokens import estimate_tokens, token_quarters

CJK_RANGES = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0x2CEB0, 0x2EBEF),
    (0x3000, 0x303F),
    (0x3040, 0x30FF),
    (0xAC00, 0xD7AF),
    (0xFF00, 0xFFEF),
]


def reference_quarters(text: str) -> int:
    """A literal transcription of the rule in quarter tokens, slow but obviously right:
    CJK 1.5, other code points above U+FFFF 2, everything else 0.25."""
    return sum(
        6 if any(lo <= ord(char) <= hi for lo, hi in CJK_RANGES) else 8 if ord(char) > 0xFFFF else 1
        for char in text
    )


def reference_estimate(text: str) -> int:
    """The rule's estimate: the sum, rounded up to a whole token."""
    return math.ceil(reference_quarters(text) / 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 400, 100),
        ("é", 1),
        ("日本", 3),
        ("日", 2),
        ("한국어", 5),
        ("😀", 2),
        ("😀😀a", 5),
        ("\U00020000", 2),  # CJK extension B: 1.5, not the astral 2
        ("\U0002ebf0", 2),  # just past extension F: an ordinary astral code point
        ("「テスト」", 8),
        ("ｆｕｌｌ", 6),
    ],
)
def test_known_values(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(("lo", "hi"), CJK_RANGES)
def test_every_cjk_range_boundary(lo: int, hi: int) -> None:
    for cp in (lo - 1, lo, hi, hi + 1):
        text = chr(cp) * 3 + "ab"
        assert estimate_tokens(text) == reference_estimate(text), hex(cp)


def test_mixed_text_matches_the_reference() -> None:
    samples = [
        "The build failed: 東京 → 大阪 🚄 (ｆａｓｔ) 한국 \U00020001 \U0001f600!",
        "naïve café " * 50 + "😀" * 7,
        "\u3000\u303f\u3040\u30ff\uac00\ud7af\uff00\uffef\U0002a6df\U0002a6e0",
    ]
    for text in samples:
        assert estimate_tokens(text) == reference_estimate(text)


def test_fractions_sum_before_rounding() -> None:
    # Four quarter-token characters make exactly one token, not four ceilings.
    assert estimate_tokens("éééé") == 1
    # 1.5 + 0.25 = 1.75 -> 2; 1.5 * 2 = 3 exactly.
    assert estimate_tokens("日a") == 2
    assert estimate_tokens("日日") == 3


def test_every_bmp_code_point_alone_and_beside_an_astral_one() -> None:
    # token_quarters decides most texts by the high byte of their UTF-16 units and sends
    # the rest to its regexes: every BMP code point (lone surrogates included) both ways.
    for cp in range(0x10000):
        char = chr(cp)
        assert token_quarters(char) == reference_quarters(char), hex(cp)
        text = "a" + char + "\U0001f600"
        assert token_quarters(text) == reference_quarters(text), hex(cp)


def test_astral_code_points_and_random_mixes() -> None:
    edges = [0x10000, 0x1F600, 0x1FFFF, 0x20000, 0x2A6DF, 0x2A6E0, 0x2A700, 0x2EBEF, 0x2EBF0, 0x2FFFF]
    edges += [0x30000, 0x10FFFF, *range(0x10000, 0x110000, 97)]
    for cp in edges:
        assert token_quarters(chr(cp)) == reference_quarters(chr(cp)), hex(cp)
    pool = [0x41, 0xE9, 0x2014, 0x3000, 0x30FF, 0x3100, 0x33FF, 0x3400, 0x4CFF, 0x4D00, 0x4DBF, 0x4DC0]
    pool += [0x4E00, 0x9FFF, 0xA000, 0xAC00, 0xD6FF, 0xD7AF, 0xD7B0, 0xD800, 0xD83D, 0xD840, 0xDBFF]
    pool += [0xDC00, 0xDE00, 0xDFFF, 0xFEFF, 0xFF00, 0xFFEF, 0xFFF0, 0xFFFD, *edges[:12]]
    rnd = random.Random(7)
    for _ in range(20000):
        text = "".join(
            chr(rnd.choice(pool) if rnd.random() < 0.8 else rnd.randrange(0x110000))
            for _ in range(rnd.randrange(1, 10))
        )
        assert token_quarters(text) == reference_quarters(text), ascii(text)
