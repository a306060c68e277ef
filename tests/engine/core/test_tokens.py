"""estimate_tokens follows lossless-claw's code-point rule (database.md §7) exactly."""

from __future__ import annotations

import base64
import hashlib
import json
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


def rule_quarters(text: str) -> int:
    """A literal transcription of the rule in quarter tokens, slow but obviously right:
    CJK 1.5, other code points above U+FFFF 2, everything else 0.25."""
    return sum(
        6 if any(lo <= ord(char) <= hi for lo, hi in CJK_RANGES) else 8 if ord(char) > 0xFFFF else 1
        for char in text
    )


def rule_estimate(text: str) -> int:
    """The rule's estimate: the sum, rounded up to a whole token."""
    return math.ceil(rule_quarters(text) / 4)


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
        assert estimate_tokens(text) == rule_estimate(text), hex(cp)


def test_mixed_text_matches_the_rule() -> None:
    samples = [
        "The build failed: 東京 → 大阪 🚄 (ｆａｓｔ) 한국 \U00020001 \U0001f600!",
        "naïve café " * 50 + "😀" * 7,
        "\u3000\u303f\u3040\u30ff\uac00\ud7af\uff00\uffef\U0002a6df\U0002a6e0",
    ]
    for text in samples:
        assert estimate_tokens(text) == rule_estimate(text)


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
        assert token_quarters(char) == rule_quarters(char), hex(cp)
        text = "a" + char + "\U0001f600"
        assert token_quarters(text) == rule_quarters(text), hex(cp)


def test_astral_code_points_and_random_mixes() -> None:
    edges = [0x10000, 0x1F600, 0x1FFFF, 0x20000, 0x2A6DF, 0x2A6E0, 0x2A700, 0x2EBEF, 0x2EBF0, 0x2FFFF]
    edges += [0x30000, 0x10FFFF, *range(0x10000, 0x110000, 97)]
    for cp in edges:
        assert token_quarters(chr(cp)) == rule_quarters(chr(cp)), hex(cp)
    pool = [0x41, 0xE9, 0x2014, 0x3000, 0x30FF, 0x3100, 0x33FF, 0x3400, 0x4CFF, 0x4D00, 0x4DBF, 0x4DC0]
    pool += [0x4E00, 0x9FFF, 0xA000, 0xAC00, 0xD6FF, 0xD7AF, 0xD7B0, 0xD800, 0xD83D, 0xD840, 0xDBFF]
    pool += [0xDC00, 0xDE00, 0xDFFF, 0xFEFF, 0xFF00, 0xFFEF, 0xFFF0, 0xFFFD, *edges[:12]]
    rnd = random.Random(7)
    for _ in range(20000):
        text = "".join(
            chr(rnd.choice(pool) if rnd.random() < 0.8 else rnd.randrange(0x110000))
            for _ in range(rnd.randrange(1, 10))
        )
        assert token_quarters(text) == rule_quarters(text), ascii(text)


# A deterministic base64 payload: 6400 bytes, 8536 characters, digits and letters in its head.
_PNG = base64.b64encode(hashlib.sha256(b"x").digest() * 200).decode()


def _image(payload: str, key: str = "data") -> dict[str, object]:
    return {"role": "user", "content": [{"type": "image", key: payload, "mimeType": "image/png"}]}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # Opaque: the JSON with the placeholder, 100 characters (25 tokens), plus 1600.
        (_image(_PNG), 1625),
        (
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is in this picture?"},
                    {"type": "image", "data": _PNG, "mimeType": "image/png"},
                ],
            },
            1638,
        ),
        # Letters only: no digit in the head, so every character counts (6000 / 4 + the rest).
        (_image("QUJD" * 1500), 1520),
        # A space in the head: not base64-shaped, counted in full.
        (_image("ab1 " * 1100), 1120),
        # Line breaks are allowed in the head, but this one has no digit.
        (_image("abc\n" * 1100), 1395),
        # 2100 emoji are 4200 UTF-16 units (4096+), but not base64: 2 tokens each.
        (_image("😀" * 2100), 4220),
        # A data: URL is opaque under any key once it has 4096 UTF-16 units (2050 emoji + 5).
        ({"role": "user", "content": [{"type": "image", "url": "data:" + "😀" * 2050}]}, 1619),
        # An array element's key is its index: only the data: URL is opaque there.
        ({"role": "user", "content": ["data:" + "x" * 5000, {"0": "ab12" * 1200}]}, 2816),
        # Numbers as JSON.stringify spells them: 1e-7, 3, 100000000000000000000, 0.00002.
        (
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "c",
                        "name": "f",
                        "arguments": {"x": 1e-7, "y": 3.0, "z": 1e20, "w": 0.00002},
                    }
                ],
            },
            35,
        ),
    ],
)
def test_serialized_estimate_of_live_images_follows_the_reference(
    message: dict[str, object], expected: int
) -> None:
    """The serialized estimate counts live images as the reference does.

    The rule (the reference's src/estimate-tokens.ts, estimateSerializedMessageTokens and
    its opaque-binary test): the message is serialized with JSON.stringify; a string of
    4096 or more UTF-16 units is opaque if it starts with ``data:`` (any key), or if its
    key is data, image, imageData, image_data, base64, bytes or source and its first 512
    units are only base64 characters and CR/LF and hold both a digit and a letter. An
    opaque string is written as the text ``[opaque binary payload]`` and adds a flat 1600
    tokens. The estimate is the code-point estimate of that text plus 1600 per opaque
    string. Each expected value was also checked by hand in Node 20 with JSON.stringify
    and a replacer written from the rule. Before, in the order above:
    1619, 1632, 1619, 1619, 1619, 4220, 4115, 2810, 31 (no placeholder text; letters-only,
    spaced and digit-free heads taken as opaque; length in code points, not UTF-16 units;
    Python's number spelling).
    """
    from lcm_cli.engine.core.tokens import serialized_tokens

    assert serialized_tokens(message) == expected


def test_the_opaque_placeholder_is_counted_as_its_json_text() -> None:
    """The first case above, computed from the rule step by step."""
    from lcm_cli.engine.core.tokens import OPAQUE_TOKENS, serialized_tokens

    shown = json.dumps(_image("[opaque binary payload]"), separators=(",", ":"))
    assert serialized_tokens(_image(_PNG)) == estimate_tokens(shown) + OPAQUE_TOKENS == 25 + 1600
