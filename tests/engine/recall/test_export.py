"""`lcm export`: Markdown and JSONL, streamed or to a file; JSONL re-imports to the same rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lcm, lcm_process
from tests.support.recall_corpus import build_recall_corpus

TRANSCRIPT = [
    {"type": "session", "version": 3, "id": "sess-roundtrip", "timestamp": "2026-07-02T10:00:00.000Z"},
    {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-07-02T10:00:01.000Z",
        "message": {
            "role": "user",
            "content": "Plain string from a user: deploy the ✓ build, 数据库",
            "timestamp": 1783000001000,
            "__openclaw": {"senderId": "u-1", "senderName": "Ada", "senderIsOwner": True},
        },
    },
    {
        "type": "message",
        "id": "e2",
        "parentId": "e1",
        "timestamp": "2026-07-02T10:00:02.000Z",
        "message": {
            "role": "assistant",
            "provider": "anthropic",
            "api": "messages",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "Let me list files.", "thinkingSignature": "sig"},
                {"type": "text", "text": "Listing files 🚀"},
                {
                    "type": "toolCall",
                    "id": "call_abc123def456",
                    "name": "bash",
                    "arguments": {"cmd": "ls -la"},
                },
            ],
        },
    },
    {
        "type": "message",
        "id": "e3",
        "parentId": "e2",
        "timestamp": "2026-07-02T10:00:03.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call_abc123def456",
            "toolName": "bash",
            "isError": False,
            "content": [{"type": "text", "text": "a.txt\nb.txt"}],
        },
    },
    {
        "type": "message",
        "id": "e4",
        "parentId": "e3",
        "timestamp": "2026-07-02T10:00:04.000Z",
        "message": {"role": "assistant", "content": "Done, two files.", "reasoning_content": "counted them"},
    },
    {
        "type": "message",
        "id": "e5",
        "parentId": "e4",
        "timestamp": "2026-07-02T10:00:05.000Z",
        "message": {"role": "system", "content": [{"type": "text", "text": "```code``` and `ticks`"}]},
    },
    {
        "type": "message",
        "id": "e6",
        "parentId": "e5",
        "timestamp": "2026-07-02T10:00:06.000Z",
        "message": {"role": "user", "content": ""},
    },
]

MESSAGE_COLUMNS = "seq, role, content, token_count, identity_hash, openclaw_sender_metadata, transcript_entry_id, created_at"
PART_COLUMNS = "part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata"


def import_transcript(db: Path, transcript: Path) -> None:
    out = lcm("--db", str(db), "migrate-sessions", "--file", str(transcript), "--apply")
    assert out.code == 0, out.stderr
    assert out.json["data"]["errorFiles"] == 0


def rows(db: Path, session_id: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        cid = conn.execute(
            "SELECT conversation_id FROM conversations WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        messages = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY seq", (cid,)
        ).fetchall()
        parts = conn.execute(
            f"""SELECT m.seq, {PART_COLUMNS} FROM message_parts p JOIN messages m ON m.message_id = p.message_id
                WHERE m.conversation_id = ? ORDER BY m.seq, p.ordinal""",
            (cid,),
        ).fetchall()
        return messages, parts
    finally:
        conn.close()


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    transcript = tmp_path / "sess-roundtrip.jsonl"
    transcript.write_text(
        "\n".join(json.dumps(e, ensure_ascii=False) for e in TRANSCRIPT) + "\n", encoding="utf-8"
    )
    db = tmp_path / "source.db"
    import_transcript(db, transcript)
    return db


def test_jsonl_export_reimports_to_the_same_messages_and_parts(imported: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "export.jsonl"
    result = lcm(
        "--db", str(imported), "export", "--conversation-id", "1", "--to", "jsonl", "--out", str(out_file)
    )
    assert result.code == 0, result.stderr
    data = result.json["data"]
    assert (
        data["messages"] == 6 and data["path"] == str(out_file) and data["bytes"] == out_file.stat().st_size
    )
    fresh = tmp_path / "fresh.db"
    import_transcript(fresh, out_file)
    source_messages, source_parts = rows(imported, "sess-roundtrip")
    copy_messages, copy_parts = rows(fresh, "sess-roundtrip")
    assert len(source_messages) == 6
    for before, after in zip(source_messages, copy_messages, strict=True):
        assert before == after
    assert source_parts == copy_parts
    # Importing the export into the database it came from adds nothing.
    again = lcm("--db", str(imported), "migrate-sessions", "--file", str(out_file), "--apply")
    assert again.json["data"]["importedMessages"] == 0


def test_jsonl_with_summaries_still_reimports_only_messages(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    build_recall_corpus(db, tmp_path / "files")
    out_file = tmp_path / "main.jsonl"
    result = lcm(
        "--db",
        str(db),
        "export",
        "--session-key",
        "agent:main:main",
        "--to",
        "jsonl",
        "--include-summaries",
        "--out",
        str(out_file),
    )
    assert result.code == 0, result.stderr
    assert result.json["data"]["summaries"] == 3
    entries = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert [e["data"]["summaryId"] for e in entries if e["type"] == "custom"] == [
        "sum_cond00000000000",
        "sum_leafa0000000000",
        "sum_leafb0000000000",
    ]
    fresh = tmp_path / "fresh.db"
    import_transcript(fresh, out_file)
    conn = sqlite3.connect(fresh)
    copied = conn.execute("SELECT role, content, created_at FROM messages ORDER BY seq").fetchall()
    conn.close()
    conn = sqlite3.connect(db)
    original = conn.execute(
        "SELECT role, content, created_at FROM messages WHERE conversation_id = 1 ORDER BY seq"
    ).fetchall()
    conn.close()
    assert copied == original


def test_markdown_streams_to_stdout_as_a_real_process(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    build_recall_corpus(db, tmp_path / "files")
    out = lcm_process(
        "--db", str(db), "export", "--conversation-id", "1", "--to", "markdown", "--include-summaries"
    )
    assert out.code == 0, out.stderr
    text = out.stdout
    assert text.startswith("# Conversation 1\n")
    assert "### 1. user · 2026-07-01 09:00:00 · msg 1" in text
    assert "```text\n数据库连接超时了，请检查\n```" in text
    assert "emoji test 🚀 launch rocket" in text
    assert "## Summaries" in text and "### sum_cond00000000000 (condensed, depth 1" in text
    assert text.count("\n### ") == 8 + 3


def test_markdown_fences_grow_past_backticks_in_content(imported: Path) -> None:
    out = lcm("--db", str(imported), "export", "--conversation-id", "1", "--to", "markdown")
    assert "````text\n```code``` and `ticks`\n````" in out.stdout


def test_document_in_data_when_there_is_no_stream(imported: Path) -> None:
    from lcm_cli.engine.api import call

    envelope = call("export", {"conversation_id": 1, "to": "jsonl"}, db=str(imported))
    lines = envelope["data"]["document"].splitlines()
    assert json.loads(lines[0])["type"] == "session" and len(lines) == 7
    assert envelope["data"]["messages"] == 6 and "streamed" not in envelope


def test_export_errors(imported: Path, tmp_path: Path) -> None:
    existing = tmp_path / "exists.md"
    existing.write_text("keep me")
    for args, code, status in (
        (("export", "--to", "jsonl"), "MISSING_SELECTOR", 2),
        (("export", "--conversation-id", "1"), "INVALID_ARGUMENT", 2),
        (("export", "--conversation-id", "1", "--to", "pdf"), "INVALID_ARGUMENT", 2),
        (("export", "--conversation-id", "99", "--to", "jsonl"), "CONVERSATION_NOT_FOUND", 3),
        (
            ("export", "--conversation-id", "1", "--to", "jsonl", "--out", str(existing)),
            "EXPORT_TARGET_EXISTS",
            4,
        ),
        (
            (
                "export",
                "--conversation-id",
                "1",
                "--to",
                "jsonl",
                "--out",
                str(tmp_path / "no" / "dir.jsonl"),
            ),
            "EXPORT_WRITE_FAILED",
            4,
        ),
    ):
        out = lcm("--db", str(imported), *args)
        assert (out.code, out.error["code"]) == (status, code), args
    assert existing.read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_runtime_ingested_rows_round_trip_without_entry_ids(tmp_path: Path) -> None:
    from lcm_cli.engine.api import call

    source = tmp_path / "runtime.db"
    messages = [e["message"] for e in TRANSCRIPT if e.get("type") == "message"]
    call(
        "session.ingest",
        {"session_id": "sess-rt", "session_key": "agent:rt", "messages": messages},
        db=str(source),
    )
    out_file = tmp_path / "runtime.jsonl"
    call("export", {"session_key": "agent:rt", "to": "jsonl", "out": str(out_file)}, db=str(source))
    entries = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert all("id" not in e for e in entries[1:])  # runtime rows have no transcript entry ids
    copy = tmp_path / "copy.db"
    import_transcript(copy, out_file)
    assert rows(source, "sess-rt") == rows(copy, "sess-rt")
    # Re-importing into the source adds nothing (a legacy, id-less file is skipped whole).
    again = lcm("--db", str(source), "migrate-sessions", "--file", str(out_file), "--apply")
    assert again.json["data"]["importedMessages"] == 0
