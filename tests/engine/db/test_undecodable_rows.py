"""A stored TEXT value that is not valid UTF-8 is read with U+FFFD, reported and repairable.

One such row used to fail `export`, `grep` and `compact` for its whole conversation
while `doctor` said healthy.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import lcm

BAD = "68656cff6c6f20776f726c64"  # b"hel\xfflo world"
SUMMARY = "sum_aaaaaaaaaaaaaaaa"


@pytest.fixture
def bad_state(state_dir: Path) -> Path:
    conn = sqlite3.connect(state_dir / "lcm.db")
    with conn:
        conn.execute(f"UPDATE messages SET content = CAST(x'{BAD}' AS TEXT) WHERE message_id = 2")
        conn.execute(
            f"UPDATE summaries SET content = CAST(x'{BAD}' AS TEXT) WHERE summary_id = ?", (SUMMARY,)
        )
    conn.close()
    return state_dir


def stored_bytes(state: Path, sql: str) -> bytes:
    conn = sqlite3.connect(state / "lcm.db")
    try:
        value: bytes = conn.execute(sql).fetchone()[0]
        return value
    finally:
        conn.close()


@pytest.mark.parametrize(
    "argv",
    [
        ("export", "--conversation-id", "1", "--to", "markdown"),
        ("export", "--conversation-id", "1", "--to", "jsonl"),
        ("grep", "world", "--all-conversations"),
        ("grep", "w.rld", "--all-conversations", "--mode", "regex"),
        ("messages", "list", "--conversation-id", "1"),
        ("messages", "tail", "--conversation-id", "1"),
        ("summaries", "list", "--conversation-id", "1"),
        ("summaries", "show", SUMMARY),
        ("describe", SUMMARY),
        ("expand", SUMMARY),
        ("compact", "--conversation-id", "1", "--manual"),
        ("context", "show", "--conversation-id", "1"),
    ],
)
def test_reads_decode_with_replacement(bad_state: Path, argv: tuple[str, ...]) -> None:
    before = (bad_state / "lcm.db").read_bytes()
    out = lcm("--openclaw-dir", str(bad_state), *argv)
    assert out.code == 0, (argv, out.stderr)
    if argv[:2] in (("messages", "list"), ("summaries", "show")) or argv[0] in (
        "export",
        "describe",
        "expand",
    ):
        assert "hel\ufffdlo world" in out.stdout
    assert (bad_state / "lcm.db").read_bytes() == before  # reads never re-store the replaced text


def test_compaction_applies_over_an_undecodable_row(bad_state: Path) -> None:
    out = lcm("--openclaw-dir", str(bad_state), "compact", "--conversation-id", "1", "--manual", "--apply")
    assert out.code == 0, out.stderr
    # the raw row itself is left as stored: only `doctor apply` rewrites it
    assert stored_bytes(
        bad_state, "SELECT CAST(content AS BLOB) FROM messages WHERE message_id = 2"
    ) == bytes.fromhex(BAD)


def test_doctor_reports_and_apply_reencodes(bad_state: Path) -> None:
    out = lcm("--openclaw-dir", str(bad_state), "doctor", "--check", "storage.undecodable-text")
    assert out.code == 6, out.stderr
    (entry,) = out.json["data"]["checks"]
    assert entry["status"] == "WARN" and entry["count"] == 2
    assert entry["affected"] == ["message:2", f"summary:{SUMMARY}"]
    assert "messages.content is not valid UTF-8" in entry["notes"]["message:2"]
    assert entry["fix"] == "lcm doctor apply --check storage.undecodable-text --apply"
    assert entry["details"] == {"rowsByTable": {"messages": 1, "summaries": 1}}

    dry = lcm("--openclaw-dir", str(bad_state), "doctor", "apply", "--check", "storage.undecodable-text")
    assert dry.code == 0, dry.stderr
    assert stored_bytes(
        bad_state, "SELECT CAST(content AS BLOB) FROM messages WHERE message_id = 2"
    ) == bytes.fromhex(BAD)

    applied = lcm(
        "--openclaw-dir", str(bad_state), "doctor", "apply", "--check", "storage.undecodable-text", "--apply"
    )
    assert applied.code == 0, applied.stderr
    data = applied.json["data"]
    assert data["backup"], data  # taken before the transaction
    (unit,) = data["units"]
    assert unit["status"] == "applied" and len(unit["changes"]) == 2
    fixed = "hel\ufffdlo world".encode()
    assert stored_bytes(bad_state, "SELECT CAST(content AS BLOB) FROM messages WHERE message_id = 2") == fixed
    assert (
        stored_bytes(bad_state, f"SELECT CAST(content AS BLOB) FROM summaries WHERE summary_id = '{SUMMARY}'")
        == fixed
    )
    again = lcm("--openclaw-dir", str(bad_state), "doctor", "--check", "storage.undecodable-text")
    assert again.code == 0 and again.json["data"]["checks"][0]["status"] == "PASS"


def test_scoped_scan_only_looks_at_the_selected_conversation(bad_state: Path) -> None:
    out = lcm(
        "--openclaw-dir",
        str(bad_state),
        "doctor",
        "--check",
        "storage.undecodable-text",
        "--conversation-id",
        "2",
    )
    assert out.code == 0, out.stderr
    assert out.json["data"]["checks"][0]["status"] == "PASS"
