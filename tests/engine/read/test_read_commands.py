"""Every read command's data on the known sample database (tests/support/sample.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm
from tests.support.sample import stamp


def run(state_dir: Path, *words: str) -> dict:
    out = lcm("--openclaw-dir", str(state_dir), *words)
    assert out.code == 0, out.stderr
    return out.json


def test_status(state_dir: Path) -> None:
    body = run(state_dir, "status")
    data = body["data"]
    assert list(data) == ["version", "databaseSizeBytes", "freshTail", "status"]
    assert data["databaseSizeBytes"] == (state_dir / "lcm.db").stat().st_size
    assert data["freshTail"] == {"count": 8, "maxTokens": None}
    status = data["status"]
    assert status["conversations"] == {"total": 3, "active": 2}
    assert status["messages"]["count"] == 27
    assert status["messages"]["tokens"] == sum(10 + i for i in range(24)) + 3 * 2
    assert status["messages"]["earliestAt"] == stamp(-50) and status["messages"]["latestAt"] == stamp(23)
    assert status["summaries"]["count"] == 3
    assert status["summaries"]["byDepth"] == [
        {"kind": "leaf", "depth": 0, "count": 2, "tokens": status["summaries"]["byDepth"][0]["tokens"]},
        {"kind": "condensed", "depth": 1, "count": 1, "tokens": status["summaries"]["byDepth"][1]["tokens"]},
    ]
    assert status["maintenance"] == {"pending": 1, "running": 0, "failed": 0}
    # context: conversation 1 = condensed summary + 8 raw messages; 2 = 3 messages
    assert status["context"]["items"] == 1 + 8 + 3


def test_conversations_list_order_and_figures(state_dir: Path) -> None:
    body = run(state_dir, "conversations", "list")
    items = body["data"]["items"]
    assert [i["conversationId"] for i in items] == [1, 2, 3]  # updated_at DESC
    first = items[0]
    assert list(first)[:9] == [
        "conversationId",
        "sessionId",
        "sessionKey",
        "active",
        "archivedAt",
        "title",
        "bootstrappedAt",
        "createdAt",
        "updatedAt",
    ]
    assert first["messageCount"] == 24 and first["summaryCount"] == 3 and first["maxSummaryDepth"] == 1
    assert first["contextItems"] == 9
    assert first["freshTailMessages"] == 8  # freshTailCount 8 from openclaw.json
    assert first["freshTailTokens"] == sum(10 + i for i in range(16, 24))
    assert items[1]["active"] is False and items[1]["archivedAt"] == stamp(5)
    empty = items[2]
    assert (
        empty["messageCount"] == 0 and empty["earliestMessageAt"] is None and empty["maxSummaryDepth"] is None
    )
    assert body["pagination"] == {"limit": 50, "returned": 3, "hasMore": False, "nextCursor": None}


def test_conversations_show(state_dir: Path) -> None:
    data = run(state_dir, "conversations", "show", "--session-key", "agent:main:main")["data"]
    assert list(data) == [
        "conversation",
        "summaryDepths",
        "context",
        "telemetry",
        "maintenance",
        "bootstrap",
        "focusBriefs",
        "largeFiles",
    ]
    assert data["conversation"]["conversationId"] == 1  # the active row wins
    assert [c["itemType"] for c in data["context"]] == ["summary", "message"]
    assert data["context"][1]["count"] == 8
    assert data["telemetry"]["cacheState"] == "hot" and data["telemetry"]["provider"] == "anthropic"
    assert data["maintenance"]["pending"] is True and data["maintenance"]["running"] is False
    assert data["maintenance"]["contextThreshold"] == 0.75
    assert (
        data["bootstrap"]["sessionFilePath"] == "/tmp/sess-main.jsonl"
        and data["bootstrap"]["forkBounded"] is False
    )
    assert data["focusBriefs"] == {"count": 0, "activeBrief": None}
    assert data["largeFiles"]["count"] == 1 and data["largeFiles"]["bytes"] == 2048
    other = run(state_dir, "conversations", "show", "--conversation-id", "3")["data"]
    assert other["telemetry"] is None and other["maintenance"] is None and other["bootstrap"] is None


def test_messages_list(state_dir: Path) -> None:
    body = run(state_dir, "messages", "list", "--conversation-id", "1", "--limit", "3")
    data = body["data"]
    assert data["conversation"]["sessionKey"] == "agent:main:main"
    assert [i["seq"] for i in data["items"]] == [24, 23, 22]
    item = data["items"][0]
    assert list(item) == [
        "messageId",
        "conversationId",
        "seq",
        "role",
        "tokenCount",
        "createdAt",
        "largeContent",
        "preview",
    ]
    assert item["preview"] == "message 23 about topic 2 with extra spaces"
    assert body["pagination"]["hasMore"] is True and body["pagination"]["nextCursor"]
    users = run(
        state_dir,
        "messages",
        "list",
        "--conversation-id",
        "1",
        "--role",
        "user",
        "--role",
        "tool",
        "--include-content",
    )
    assert {i["role"] for i in users["data"]["items"]} == {"user", "tool"}
    assert users["data"]["items"][0]["content"].startswith("message ")
    assert "\n" in users["data"]["items"][0]["content"]


def test_preview_rules(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("s")
        store.add_messages(
            cid,
            [
                {"role": "user", "content": "x" * 300, "created_at": stamp(0)},
                {"role": "user", "content": "\u00a0 a\u2003\u2003b \ufeff", "created_at": stamp(1)},
                {"role": "user", "content": "😀" * 200, "created_at": stamp(2)},
            ],
        )
    items = lcm("--db", str(db), "messages", "list", "--conversation-id", str(cid)).json["data"]["items"]
    emoji, spaces, long = items
    assert long["preview"] == "x" * 239 + "…"
    assert spaces["preview"] == "a b"
    assert emoji["preview"] == "😀" * 119 + "…"  # 240 UTF-16 units: 119 pairs + the ellipsis


def test_messages_tail(state_dir: Path) -> None:
    data = run(state_dir, "messages", "tail", "--conversation-id", "1", "--count", "3")["data"]
    assert list(data) == ["conversationIdentity", "limits", "selected", "conversation", "messages"]
    assert data["limits"] == {"count": 3, "maxTokens": None}
    assert data["selected"] == {"messages": 3, "tokens": 31 + 32 + 33, "firstSeq": 22, "lastSeq": 24}
    assert data["conversation"] == {"messages": 24, "tokens": sum(10 + i for i in range(24))}
    assert [m["seq"] for m in data["messages"]] == [22, 23, 24]
    assert all("content" in m for m in data["messages"])


def test_summaries_list_and_filters(state_dir: Path) -> None:
    body = run(state_dir, "summaries", "list")
    data = body["data"]
    assert data["conversationId"] is None
    ids = [i["summaryId"] for i in data["items"]]
    # coverage = latest_at: condensed and leaf B both end at message 15; id DESC breaks the tie
    assert ids == ["sum_cccccccccccccccc", "sum_bbbbbbbbbbbbbbbb", "sum_aaaaaaaaaaaaaaaa"]
    leaf_b = data["items"][1]
    assert leaf_b["fileIds"] == ["file_0011223344556677"]
    assert leaf_b["parentCount"] == 1 and leaf_b["childCount"] == 0 and leaf_b["sourceMessageCount"] == 8
    assert data["items"][0]["childCount"] == 2 and data["items"][0]["model"] == "test-model"
    assert "content" not in leaf_b
    scoped = run(
        state_dir, "summaries", "list", "--session-key", "agent:main:main", "--kind", "leaf", "--depth", "0"
    )
    assert scoped["data"]["conversationId"] == 1
    assert [i["summaryId"] for i in scoped["data"]["items"]] == [
        "sum_bbbbbbbbbbbbbbbb",
        "sum_aaaaaaaaaaaaaaaa",
    ]
    none = run(state_dir, "summaries", "list", "--depth", "7")
    assert none["data"]["items"] == [] and none["pagination"]["returned"] == 0


def test_summaries_show(state_dir: Path) -> None:
    data = run(state_dir, "summaries", "show", "sum_bbbbbbbbbbbbbbbb")["data"]
    assert list(data) == ["summary", "parents", "children", "sourceMessages"]
    assert data["summary"]["content"] == "Leaf B covers messages 8-15."
    assert [p["summaryId"] for p in data["parents"]] == ["sum_cccccccccccccccc"]
    assert data["children"] == []
    assert [m["seq"] for m in data["sourceMessages"]] == list(range(9, 17))
    assert list(data["sourceMessages"][0]) == [
        "messageId",
        "seq",
        "role",
        "tokenCount",
        "createdAt",
        "content",
    ]
    top = run(state_dir, "summaries", "show", "sum_cccccccccccccccc")["data"]
    assert [c["summaryId"] for c in top["children"]] == ["sum_aaaaaaaaaaaaaaaa", "sum_bbbbbbbbbbbbbbbb"]
    assert top["sourceMessages"] == [] and top["parents"] == []


def test_cross_conversation_links_are_not_reported(state_dir: Path) -> None:
    db = state_dir / "lcm.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES ('sum_aaaaaaaaaaaaaaaa', 25, 99)"
    )
    conn.commit()
    conn.close()
    data = run(state_dir, "summaries", "show", "sum_aaaaaaaaaaaaaaaa")["data"]
    assert 25 not in [m["messageId"] for m in data["sourceMessages"]]
    assert data["summary"]["sourceMessageCount"] == 8


def test_session_key_precedence(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        old = store.create_conversation("a", session_key="k", active=False, created_at=stamp(0))
        newer_archived = store.create_conversation("b", session_key="k", active=False, created_at=stamp(10))
        tie = store.create_conversation("c", session_key="k", active=False, created_at=stamp(10))
        assert old < newer_archived < tie

    def pick() -> int:
        data = lcm("--db", str(db), "conversations", "show", "--session-key", "  k  ").json["data"]
        return data["conversation"]["conversationId"]

    assert pick() == tie  # newest created_at, then highest id
    with Store.open(db) as store:
        live = store.create_conversation("d", session_key="k", active=True, created_at=stamp(-100))
    assert pick() == live  # the active row beats newer archived ones
    assert lcm("--db", str(db), "conversations", "show", "--session-key", "K").code == 3  # case-sensitive


def test_same_answers_without_lcms_read_path_indexes(tmp_path: Path) -> None:
    """A file without lcm's read-path indexes (as lossless-claw leaves one): queries adapt,
    results match the same file with them (our sample with the ``lcm_%`` indexes dropped)."""
    import shutil

    from tests.support.sample import build_sample

    with_indexes = tmp_path / "with.db"
    build_sample(with_indexes)
    without = tmp_path / "without.db"
    shutil.copy(with_indexes, without)
    conn = sqlite3.connect(without)
    names = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'lcm_%'")
    ]
    assert len(names) >= 5
    for name in names:
        conn.execute(f"DROP INDEX {name}")
    conn.commit()
    conn.close()
    for words in (
        ["status"],
        ["conversations", "list"],
        ["conversations", "show", "--conversation-id", "1"],
        ["messages", "list", "--conversation-id", "1", "--limit", "5"],
        ["messages", "tail", "--conversation-id", "1"],
        ["summaries", "list", "--limit", "2"],
        ["summaries", "list", "--conversation-id", "1"],
    ):
        a = lcm("--db", str(with_indexes), *words).json
        b = lcm("--db", str(without), *words).json
        a["meta"] = b["meta"] = None
        if words == ["status"]:
            a["data"]["databaseSizeBytes"] = b["data"]["databaseSizeBytes"] = None
        assert a == b, words
