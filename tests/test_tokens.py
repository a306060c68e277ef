"""estimate_tokens follows lossless-claw's code-point rule (database.md §7) exactly."""

from __future__ import annotations

import math

import pytest

from lcm_cli.engine.tokens import estimate_tokens

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


def reference_estimate(text: str) -> int:
    """A literal transcription of the rule, slow but obviously right."""
    total = 0.0
    for char in text:
        cp = ord(char)
        if any(lo <= cp <= hi for lo, hi in CJK_RANGES):
            total += 1.5
        elif cp > 0xFFFF:
            total += 2
        else:
            total += 0.25
    return math.ceil(total)


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
