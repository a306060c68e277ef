"""Opaque keyset cursors (cli-contract.md §8): exact encoding, lenient decoding, and
INVALID_CURSOR for every malformed, mismatched or wrongly typed cursor, both through
``decode_cursor`` and through the CLI.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_cli.engine.core.cursor import Cursor, decode_cursor, encode_cursor
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.store import Store
from tests.conftest import lcm

RESOURCES = ("conversations", "messages", "summaries")
URL_SAFE = re.compile(r"^[A-Za-z0-9_-]*$")

# Cursors printed by the TypeScript CLI (Buffer.from(JSON.stringify(...)).toString("base64url")).
TS_CONVERSATIONS = (
    "eyJ2IjoxLCJyZXNvdXJjZSI6ImNvbnZlcnNhdGlvbnMiLCJ0aW1lc3RhbXAiOiIyMDI2LTA3LTAxIDEwOjQwOjAwIiwiaWQiOjF9"
)
TS_MESSAGES = (
    "eyJ2IjoxLCJyZXNvdXJjZSI6Im1lc3NhZ2VzIiwidGltZXN0YW1wIjoiMjAyNi0wNy0wMSAwOToxOTowMCIsImlkIjoyMH0"
)
TS_SUMMARIES = "eyJ2IjoxLCJyZXNvdXJjZSI6InN1bW1hcmllcyIsInRpbWVzdGFtcCI6IjIwMjYtMDctMDFUMDk6MTU6MDAuMDAwWiIsImlkIjoic3VtX2NjY2NjY2NjY2NjY2NjY2MifQ"
TS_SUMMARIES_UNICODE = "eyJ2IjoxLCJyZXNvdXJjZSI6InN1bW1hcmllcyIsInRpbWVzdGFtcCI6IjIwMjYtMDctMDFUMDk6MTU6MDAuMDAwWiIsImlkIjoic3VtX8Op4pyTIn0"
# id "sum_0??>>": its base64url holds both '-' and '_' (standard base64: '+' and '/').
TS_URLSAFE_CHARS = "eyJ2IjoxLCJyZXNvdXJjZSI6InN1bW1hcmllcyIsInRpbWVzdGFtcCI6IjIwMjYtMDctMDFUMDk6MTU6MDAuMDAwWiIsImlkIjoic3VtXzA_Pz4-In0"
STD_B64_SAME = "eyJ2IjoxLCJyZXNvdXJjZSI6InN1bW1hcmllcyIsInRpbWVzdGFtcCI6IjIwMjYtMDctMDFUMDk6MTU6MDAuMDAwWiIsImlkIjoic3VtXzA/Pz4+In0="


def hand_built(payload: Any, *, pad: bool = False, standard: bool = False) -> str:
    """What a client would build by hand: compact JSON, base64url, padding stripped."""
    raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text = (base64.standard_b64encode if standard else base64.urlsafe_b64encode)(raw).decode("ascii")
    return text if pad else text.rstrip("=")


def raw_cursor(text: str) -> str:
    """base64url of arbitrary (possibly non-JSON) text."""
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def good(resource: str = "messages", **override: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "v": 1,
        "resource": resource,
        "timestamp": "2026-07-01 09:19:00",
        "id": "sum_x" if resource == "summaries" else 20,
    }
    payload.update(override)
    return payload


def assert_invalid(text: str, resource: str) -> None:
    with pytest.raises(LcmError) as caught:
        decode_cursor(text, resource)
    assert caught.value.code == "INVALID_CURSOR"
    assert not caught.value.has_details
    assert "details" not in caught.value.to_dict()


# --------------------------------------------------------------------------------------
# encoding


@pytest.mark.parametrize(
    ("resource", "timestamp", "row_id", "expected"),
    [
        ("conversations", "2026-07-01 10:40:00", 1, TS_CONVERSATIONS),
        ("messages", "2026-07-01 09:19:00", 20, TS_MESSAGES),
        ("summaries", "2026-07-01T09:15:00.000Z", "sum_cccccccccccccccc", TS_SUMMARIES),
        ("summaries", "2026-07-01T09:15:00.000Z", "sum_é✓", TS_SUMMARIES_UNICODE),
        ("summaries", "2026-07-01T09:15:00.000Z", "sum_0??>>", TS_URLSAFE_CHARS),
    ],
)
def test_encoding_is_byte_identical_to_the_typescript_cli(
    resource: str, timestamp: str, row_id: Any, expected: str
) -> None:
    assert encode_cursor(resource, timestamp, row_id) == expected


def test_encoding_is_compact_json_in_key_order_base64url_unpadded() -> None:
    for length in range(0, 6):  # ids of varied length exercise every padding remainder
        sid = "s" * (length + 1)
        text = encode_cursor("summaries", "2026-07-01T09:15:00.000Z", sid)
        assert "=" not in text
        assert URL_SAFE.match(text)
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8")
        assert raw == f'{{"v":1,"resource":"summaries","timestamp":"2026-07-01T09:15:00.000Z","id":"{sid}"}}'
        assert list(json.loads(raw)) == ["v", "resource", "timestamp", "id"]
        assert text == hand_built(
            {"v": 1, "resource": "summaries", "timestamp": "2026-07-01T09:15:00.000Z", "id": sid}
        )


def test_non_ascii_is_utf8_not_escaped() -> None:
    text = encode_cursor("summaries", "2026-07-01T09:15:00.000Z", "sum_é✓")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    assert "sum_é✓".encode() in raw
    assert b"\\u" not in raw


def test_encoding_keeps_the_stored_timestamp_verbatim() -> None:
    for stamp in ("2026-07-01 09:19:00", "2026-07-01T09:19:00.123Z", "2026-07-01T11:19:00+02:00"):
        decoded = decode_cursor(encode_cursor("messages", stamp, 3), "messages")
        assert decoded.timestamp == stamp


# --------------------------------------------------------------------------------------
# decoding: round trip and leniency

TIMESTAMPS = st.builds(
    lambda y, mo, d, h, mi, s, ms, shape: (
        f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        if shape == 0
        else f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{ms:03d}Z"
        if shape == 1
        else f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}+05:30"
    ),
    st.integers(1970, 2100),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
    st.integers(0, 999),
    st.integers(0, 2),
)


@settings(max_examples=150, deadline=None)
@given(
    timestamp=TIMESTAMPS,
    int_id=st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    text_id=st.text(min_size=1, max_size=30),
)
def test_round_trip(timestamp: str, int_id: int, text_id: str) -> None:
    for resource in ("conversations", "messages"):
        text = encode_cursor(resource, timestamp, int_id)
        assert URL_SAFE.match(text) and "=" not in text
        assert decode_cursor(text, resource) == Cursor(resource, timestamp, int_id)
        assert text == hand_built({"v": 1, "resource": resource, "timestamp": timestamp, "id": int_id})
    text = encode_cursor("summaries", timestamp, text_id)
    assert URL_SAFE.match(text)
    assert decode_cursor(text, "summaries") == Cursor("summaries", timestamp, text_id)
    assert text == hand_built({"v": 1, "resource": "summaries", "timestamp": timestamp, "id": text_id})


@pytest.mark.parametrize("resource", RESOURCES)
def test_hand_built_cursor_is_accepted(resource: str) -> None:
    payload = good(resource)
    for text in (
        hand_built(payload),
        hand_built(payload, pad=True),
        hand_built(payload, standard=True),
        hand_built(payload, pad=True, standard=True),
    ):
        decoded = decode_cursor(text, resource)
        assert (decoded.resource, decoded.timestamp, decoded.id) == (
            resource,
            payload["timestamp"],
            payload["id"],
        )


def test_decoding_accepts_standard_alphabet_and_padding() -> None:
    expected = Cursor("summaries", "2026-07-01T09:15:00.000Z", "sum_0??>>")
    assert decode_cursor(TS_URLSAFE_CHARS, "summaries") == expected
    assert decode_cursor(STD_B64_SAME, "summaries") == expected
    assert decode_cursor(STD_B64_SAME.rstrip("="), "summaries") == expected
    assert decode_cursor(TS_URLSAFE_CHARS + "=", "summaries") == expected
    assert decode_cursor(TS_URLSAFE_CHARS.replace("_", "/"), "summaries") == expected
    assert decode_cursor(TS_URLSAFE_CHARS.replace("-", "+"), "summaries") == expected


@pytest.mark.parametrize("remainder", [0, 2, 3])
def test_decoding_tolerates_every_missing_padding_length(remainder: int) -> None:
    # Find ids whose unpadded encoding length has each possible remainder mod 4.
    for n in range(1, 12):
        text = encode_cursor("summaries", "2026-07-01 09:00:00", "x" * n)
        if len(text) % 4 == remainder:
            assert decode_cursor(text, "summaries").id == "x" * n
            padded = text + "=" * (-len(text) % 4)
            assert decode_cursor(padded, "summaries").id == "x" * n
            return
    raise AssertionError("no id with that remainder")


def test_decoding_ignores_stray_characters_like_node() -> None:
    """Node's base64url decoder skips characters outside the alphabet (e.g. whitespace
    picked up when a cursor is copied from a terminal)."""
    expected = Cursor("messages", "2026-07-01 09:19:00", 20)
    assert decode_cursor(" " + TS_MESSAGES + "\n", "messages") == expected
    assert decode_cursor(TS_MESSAGES[:5] + "." + TS_MESSAGES[5:], "messages") == expected
    assert decode_cursor(TS_MESSAGES[:10] + "\t" + TS_MESSAGES[10:], "messages") == expected


def test_padding_in_the_middle_ends_the_data_like_node() -> None:
    assert_invalid(TS_MESSAGES[:8] + "=" + TS_MESSAGES[8:], "messages")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"v":1.0,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":5}', 5),  # 1.0 === 1
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":5.0}', 5),  # integral float
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":1e2}', 100),
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":-3}', -3),
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":0}', 0),
        (' {"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":5} ', 5),  # JSON whitespace
        ('{"id":7,"timestamp":"2026-07-01 09:19:00","resource":"messages","v":1}', 7),  # any key order
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":7,"extra":true}', 7),
        (
            '{"v":1,"resource":"summaries","resource":"messages","timestamp":"2026-07-01 09:19:00","id":8}',
            8,
        ),  # last wins
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01","id":9}', 9),  # date-only parses
        ('{"v":1,"resource":"messages","timestamp":"2026-07-01T09:19:00+05:30","id":9}', 9),
    ],
)
def test_accepted_variants(raw: str, expected: int) -> None:
    decoded = decode_cursor(raw_cursor(raw), "messages")
    assert decoded.id == expected
    assert isinstance(decoded.id, int) and not isinstance(decoded.id, bool)


@pytest.mark.parametrize("sid", [" ", "0", "sum_é", "a" * 200, "'; DROP TABLE summaries; --"])
def test_summary_ids_any_non_empty_string(sid: str) -> None:
    assert decode_cursor(hand_built(good("summaries", id=sid)), "summaries").id == sid


# --------------------------------------------------------------------------------------
# decoding: INVALID_CURSOR

GARBAGE = [
    "",
    "!!!",
    "not-a-cursor",
    "====",
    "A",
    "eyJ2Ijox",
    "%%%%",
    "\u00e9\u00e9\u00e9\u00e9",
    "eyJ2IjoxfQ" + "A",
]
BAD_JSON = [
    "{not json",
    "[1]",
    "null",
    "1",
    '"str"',
    "true",
    "{}",
    "",
    '{"v":1,"resource":"messages"',
    "\ufeff" + json.dumps(good()),
]


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_is_invalid(resource: str, text: str) -> None:
    assert_invalid(text, resource)


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("raw", BAD_JSON)
def test_bad_json_is_invalid(resource: str, raw: str) -> None:
    assert_invalid(raw_cursor(raw), resource)


def test_invalid_utf8_is_invalid() -> None:
    assert_invalid(base64.urlsafe_b64encode(b"\xff\xfe{\x80}").decode().rstrip("="), "messages")


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("version", [0, 2, -1, "1", True, None, 1.5, [1], {"v": 1}])
def test_wrong_version_is_invalid(resource: str, version: Any) -> None:
    assert_invalid(hand_built(good(resource, v=version)), resource)


@pytest.mark.parametrize("resource", RESOURCES)
def test_missing_version_is_invalid(resource: str) -> None:
    payload = good(resource)
    del payload["v"]
    assert_invalid(hand_built(payload), resource)


@pytest.mark.parametrize("made_for", RESOURCES)
@pytest.mark.parametrize("given_to", RESOURCES)
def test_resource_binding(made_for: str, given_to: str) -> None:
    payload = good(made_for, id="sum_x" if given_to == "summaries" else 20)
    text = hand_built(payload)
    if made_for == given_to:
        assert decode_cursor(text, given_to).resource == given_to
    else:
        assert_invalid(text, given_to)


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize(
    "value", ["Messages", "message", "", None, 1, ["messages"], "summaries ", "conversation"]
)
def test_bad_resource_value_is_invalid(resource: str, value: Any) -> None:
    payload = good(resource)
    payload["resource"] = value
    assert_invalid(hand_built(payload), resource)


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("timestamp", [123, 1719824400000, None, True, ["2026-07-01 09:19:00"], {"t": 1}])
def test_non_string_timestamp_is_invalid(resource: str, timestamp: Any) -> None:
    assert_invalid(hand_built(good(resource, timestamp=timestamp)), resource)


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize(
    "timestamp",
    [
        "",
        "not a date",
        "yesterday",
        "2026-13-01 00:00:00",
        "2026-07-32T00:00:00Z",
        "2026-07-01 25:00:00",
        "abc",
        "{}",
    ],
)
def test_unparseable_timestamp_is_invalid(resource: str, timestamp: str) -> None:
    assert_invalid(hand_built(good(resource, timestamp=timestamp)), resource)


@pytest.mark.parametrize("resource", RESOURCES)
def test_missing_keys_are_invalid(resource: str) -> None:
    for key in ("resource", "timestamp", "id"):
        payload = good(resource)
        del payload[key]
        assert_invalid(hand_built(payload), resource)


@pytest.mark.parametrize("resource", ["conversations", "messages"])
@pytest.mark.parametrize("row_id", [5.5, 0.1, -2.5, "5", "", True, False, None, [5], {"id": 5}])
def test_integer_resources_reject_non_integer_ids(resource: str, row_id: Any) -> None:
    assert_invalid(hand_built(good(resource, id=row_id)), resource)


@pytest.mark.parametrize("resource", ["conversations", "messages"])
def test_integer_resources_reject_non_finite_ids(resource: str) -> None:
    for literal in ("1e400", "-1e400"):
        raw = f'{{"v":1,"resource":"{resource}","timestamp":"2026-07-01 09:19:00","id":{literal}}}'
        assert_invalid(raw_cursor(raw), resource)


@pytest.mark.parametrize("row_id", ["", 5, 5.0, 0, None, True, False, ["sum_x"], {"id": "sum_x"}])
def test_summaries_reject_empty_or_non_string_ids(row_id: Any) -> None:
    assert_invalid(hand_built(good("summaries", id=row_id)), "summaries")


# --------------------------------------------------------------------------------------
# through the CLI


def cli_list(db: Path, resource: str) -> list[str]:
    if resource == "conversations":
        return ["--db", str(db), "conversations", "list"]
    if resource == "messages":
        return ["--db", str(db), "messages", "list", "--conversation-id", "1"]
    return ["--db", str(db), "summaries", "list"]


def assert_cli_invalid(args: list[str]) -> None:
    out = lcm(*args)
    assert out.code == 2, out.stdout or out.stderr
    error = out.error
    assert error["code"] == "INVALID_CURSOR"
    assert "details" not in error
    assert list(error) == ["code", "message"]


def test_sample_cursors_equal_the_typescript_ones(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "conversations", "list", "--limit", "1")
    assert out.json["pagination"]["nextCursor"] == TS_CONVERSATIONS
    out = lcm("--db", str(db_path), "messages", "list", "--conversation-id", "1", "--limit", "5")
    assert out.json["pagination"]["nextCursor"] == TS_MESSAGES
    out = lcm("--db", str(db_path), "summaries", "list", "--limit", "1")
    assert out.json["pagination"]["nextCursor"] == TS_SUMMARIES


def test_typescript_cursors_resume_the_walk(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "conversations", "list", "--cursor", TS_CONVERSATIONS)
    assert [i["conversationId"] for i in out.json["data"]["items"]] == [2, 3]
    out = lcm(
        "--db",
        str(db_path),
        "messages",
        "list",
        "--conversation-id",
        "1",
        "--limit",
        "3",
        "--cursor",
        TS_MESSAGES,
    )
    assert [i["messageId"] for i in out.json["data"]["items"]] == [19, 18, 17]
    out = lcm("--db", str(db_path), "summaries", "list", "--cursor", TS_SUMMARIES)
    assert [i["summaryId"] for i in out.json["data"]["items"]] == [
        "sum_bbbbbbbbbbbbbbbb",
        "sum_aaaaaaaaaaaaaaaa",
    ]


def test_hand_built_variants_resume_identically(db_path: Path) -> None:
    payload = {"v": 1, "resource": "messages", "timestamp": "2026-07-01 09:19:00", "id": 20}
    canonical = lcm(
        "--db", str(db_path), "messages", "list", "--conversation-id", "1", "--cursor", TS_MESSAGES
    ).json["data"]
    for text in (
        hand_built(payload),
        hand_built(payload, pad=True),
        hand_built(payload, standard=True),
        hand_built({**payload, "id": 20.0}),
        " " + TS_MESSAGES + "\n",
    ):
        out = lcm("--db", str(db_path), "messages", "list", "--conversation-id", "1", "--cursor", text)
        assert out.code == 0, out.stderr
        assert out.json["data"] == canonical


def test_cursor_timestamp_in_another_shape_positions_by_instant(db_path: Path) -> None:
    """The keyset compares julianday: an ISO or offset spelling of the same instant works."""
    expected = [19, 18, 17]
    for stamp in ("2026-07-01T09:19:00.000Z", "2026-07-01T11:19:00+02:00", "2026-07-01 09:19:00"):
        text = hand_built({"v": 1, "resource": "messages", "timestamp": stamp, "id": 20})
        out = lcm(
            "--db",
            str(db_path),
            "messages",
            "list",
            "--conversation-id",
            "1",
            "--limit",
            "3",
            "--cursor",
            text,
        )
        assert [i["messageId"] for i in out.json["data"]["items"]] == expected


def test_cursor_with_id_past_the_end_of_a_tie(db_path: Path) -> None:
    """id only breaks ties: (09:19:00, 999) resumes at message 20, (09:19:00, -1) after it."""
    for row_id, first in ((999, 20), (20, 19), (-1, 19), (0, 19)):
        text = hand_built({"v": 1, "resource": "messages", "timestamp": "2026-07-01 09:19:00", "id": row_id})
        out = lcm(
            "--db",
            str(db_path),
            "messages",
            "list",
            "--conversation-id",
            "1",
            "--limit",
            "1",
            "--cursor",
            text,
        )
        assert out.json["data"]["items"][0]["messageId"] == first


@pytest.mark.parametrize("made_for", RESOURCES)
@pytest.mark.parametrize("given_to", RESOURCES)
def test_cli_resource_binding(db_path: Path, made_for: str, given_to: str) -> None:
    text = hand_built(good(made_for, id="sum_x" if given_to == "summaries" else 20))
    args = cli_list(db_path, given_to) + ["--cursor", text]
    if made_for == given_to:
        assert lcm(*args).code == 0
    else:
        assert_cli_invalid(args)


def test_real_cursors_cross_resources_are_rejected(db_path: Path) -> None:
    cursors = {
        "conversations": lcm(*cli_list(db_path, "conversations"), "--limit", "1").json["pagination"][
            "nextCursor"
        ],
        "messages": lcm(*cli_list(db_path, "messages"), "--limit", "1").json["pagination"]["nextCursor"],
        "summaries": lcm(*cli_list(db_path, "summaries"), "--limit", "1").json["pagination"]["nextCursor"],
    }
    for made_for, text in cursors.items():
        for given_to in RESOURCES:
            if given_to != made_for:
                assert_cli_invalid(cli_list(db_path, given_to) + ["--cursor", text])
    # scoped summaries list takes summaries cursors only, like the global one
    assert_cli_invalid(
        ["--db", str(db_path), "summaries", "list", "--conversation-id", "1", "--cursor", cursors["messages"]]
    )
    assert (
        lcm(
            "--db",
            str(db_path),
            "summaries",
            "list",
            "--conversation-id",
            "1",
            "--cursor",
            cursors["summaries"],
        ).code
        == 0
    )


CLI_BAD = {
    "garbage": lambda r: "!!!",
    "not base64 json": lambda r: "not-a-cursor",
    "bad json": lambda r: raw_cursor("{not json"),
    "json array": lambda r: raw_cursor("[1]"),
    "v2": lambda r: hand_built(good(r, v=2)),
    "v string": lambda r: hand_built(good(r, v="1")),
    "v true": lambda r: hand_built(good(r, v=True)),
    "no resource": lambda r: hand_built({k: v for k, v in good(r).items() if k != "resource"}),
    "numeric timestamp": lambda r: hand_built(good(r, timestamp=1719824400000)),
    "null timestamp": lambda r: hand_built(good(r, timestamp=None)),
    "unparseable timestamp": lambda r: hand_built(good(r, timestamp="not a date")),
    "empty timestamp": lambda r: hand_built(good(r, timestamp="")),
    "null id": lambda r: hand_built(good(r, id=None)),
    "list id": lambda r: hand_built(good(r, id=[1])),
}
CLI_BAD_INT_IDS = {"float id": 5.5, "string id": "5", "true id": True, "false id": False, "empty id": ""}
CLI_BAD_SUMMARY_IDS = {"empty id": "", "number id": 5, "float id": 5.0, "true id": True}


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("case", sorted(CLI_BAD))
def test_cli_invalid_cursor(db_path: Path, resource: str, case: str) -> None:
    assert_cli_invalid(cli_list(db_path, resource) + ["--cursor", CLI_BAD[case](resource)])


@pytest.mark.parametrize("resource", ["conversations", "messages"])
@pytest.mark.parametrize("case", sorted(CLI_BAD_INT_IDS))
def test_cli_invalid_integer_ids(db_path: Path, resource: str, case: str) -> None:
    assert_cli_invalid(
        cli_list(db_path, resource) + ["--cursor", hand_built(good(resource, id=CLI_BAD_INT_IDS[case]))]
    )


@pytest.mark.parametrize("case", sorted(CLI_BAD_SUMMARY_IDS))
def test_cli_invalid_summary_ids(db_path: Path, case: str) -> None:
    text = hand_built(good("summaries", id=CLI_BAD_SUMMARY_IDS[case]))
    assert_cli_invalid(cli_list(db_path, "summaries") + ["--cursor", text])
    assert_cli_invalid(
        ["--db", str(db_path), "summaries", "list", "--conversation-id", "1", "--cursor", text]
    )


def test_invalid_cursor_error_is_compact_json_on_stderr_only(db_path: Path) -> None:
    out = lcm(*cli_list(db_path, "messages"), "--pretty", "--cursor", "!!!")
    assert out.code == 2 and out.stdout == ""
    assert out.stderr.endswith("\n")
    assert json.loads(out.stderr)["error"]["code"] == "INVALID_CURSOR"


def test_cursor_checked_after_the_database_and_selector(tmp_path: Path, db_path: Path) -> None:
    """The cursor is decoded at query time: a missing database or an unknown conversation
    is reported first."""
    missing = tmp_path / "missing.db"
    for resource in RESOURCES:
        out = lcm(*cli_list(missing, resource), "--cursor", "!!!")
        assert out.code == 3
        assert out.error["code"] == "DATABASE_NOT_FOUND"
    out = lcm("--db", str(db_path), "messages", "list", "--conversation-id", "99", "--cursor", "!!!")
    assert out.code == 3
    assert out.error["code"] == "CONVERSATION_NOT_FOUND"
    out = lcm("--db", str(db_path), "summaries", "list", "--session-key", "nope", "--cursor", "!!!")
    assert out.error["code"] == "CONVERSATION_NOT_FOUND"


def test_argument_errors_win_over_a_bad_cursor(db_path: Path) -> None:
    out = lcm(*cli_list(db_path, "messages"), "--cursor", "!!!", "--limit", "0")
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"
    out = lcm(*cli_list(db_path, "summaries"), "--cursor", "!!!", "--after", "bad")
    assert out.error["code"] == "INVALID_TIME_FILTER"


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["status"], "status"),
        (["messages", "tail", "--conversation-id", "1"], "messages.tail"),
        (["conversations", "show", "--conversation-id", "1"], "conversations.show"),
        (["summaries", "show", "sum_aaaaaaaaaaaaaaaa"], "summaries.show"),
    ],
)
def test_cursor_unsupported_elsewhere(db_path: Path, command: list[str], kind: str) -> None:
    out = lcm("--db", str(db_path), *command, "--cursor", TS_MESSAGES)
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"
    assert out.error["details"] == {"option": "cursor", "command": kind}


def test_huge_integral_cursor_id_does_not_crash(db_path: Path) -> None:
    raw = '{"v":1,"resource":"messages","timestamp":"2026-07-01 09:19:00","id":99999999999999999999}'
    out = lcm(*cli_list(db_path, "messages"), "--limit", "2", "--cursor", raw_cursor(raw))
    assert out.code == 0, out.stderr
    # Every message at 09:19:00 has a smaller id, so the page starts at message 20.
    assert [i["messageId"] for i in out.json["data"]["items"]] == [20, 19]


def test_cursor_continuation_with_stored_offset_timestamps(tmp_path: Path) -> None:
    """A cursor built from a stored '+02:00' timestamp keeps that spelling and resumes."""
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("o", updated_at="2026-07-01T11:00:00+02:00")
        store.create_conversation("p", updated_at="2026-07-01 09:00:00")  # same instant, higher id
        store.create_conversation("q", updated_at="2026-07-01T08:59:59.999Z")
    first = lcm("--db", str(db), "conversations", "list", "--limit", "2").json
    assert [i["conversationId"] for i in first["data"]["items"]] == [cid + 1, cid]
    cursor = first["pagination"]["nextCursor"]
    decoded = decode_cursor(cursor, "conversations")
    assert decoded == Cursor("conversations", "2026-07-01T11:00:00+02:00", cid)
    rest = lcm("--db", str(db), "conversations", "list", "--limit", "2", "--cursor", cursor).json
    assert [i["conversationId"] for i in rest["data"]["items"]] == [cid + 2]


@pytest.mark.parametrize(
    ("words", "resource"),
    [
        (["doctor"], "doctor"),
        (["grep", "port", "--all-conversations"], "grep"),
        (["expand", "sum_1b2c3d4e5f607182"], "expand"),
        (["describe", "sum_1b2c3d4e5f607182"], "describe"),
    ],
)
def test_one_codec_refuses_every_crafted_cursor_alike(words: list[str], resource: str) -> None:
    """Cursors of lcm's own commands come from one codec (seal / open_cursor): a crafted one is
    INVALID_CURSOR, never a crash, whatever its numbers, resource or version."""
    import base64
    import json

    from tests.conftest import REPO

    home = ("--openclaw-dir", str(REPO / "examples" / "openclaw"))
    huge = 2**70
    for payload in (
        {"v": 1, "resource": resource, "after": {"dag.cycles": huge}, "id": huge, "offset": huge, "pos": {}},
        {"v": 2, "resource": resource},
        {"v": 1, "resource": "messages", "timestamp": "2026-01-01", "id": 1},
        [1, 2],
        "x",
    ):
        text = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
        out = lcm(*home, *words, "--cursor", text)
        assert out.code == 2 and out.error["code"] == "INVALID_CURSOR", (payload, out.stderr)
