"""Session resolution, patterns, per-session locks, /new pruning, /reset and session end."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from lcm_cli.engine.api import call
from lcm_cli.engine.db.sessions import compile_session_pattern, get_or_create, queue_key, session_lock
from lcm_cli.engine.db.store import Store


def op(home: Path, name: str, **params: Any) -> dict[str, Any]:
    return call(name, params, openclaw_dir=str(home))["data"]


def test_globs_follow_config_md_section_7() -> None:
    """The session-pattern rules and examples of docs/reference/config.md §7."""
    assert compile_session_pattern("agent:*:cron:*").fullmatch("agent:main:cron:nightly")
    assert not compile_session_pattern("agent:*:cron:*").fullmatch("agent:main:cron:nightly:run:1")
    assert compile_session_pattern("agent:*:cron:**").fullmatch("agent:main:cron:nightly:run:1")
    assert compile_session_pattern("a.b").fullmatch("a.b") and not compile_session_pattern("a.b").fullmatch(
        "axb"
    )
    assert compile_session_pattern("ab?").fullmatch("a")  # `?` stays a quantifier (§7)
    assert queue_key(" s ", " k ") == "k" and queue_key("s", None) == "s" and queue_key(None, "") == "__lcm__"


def test_get_or_create_rebinds_and_adopts(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store, store.transaction():
        conn = store.conn
        first = get_or_create(conn, "id1", "key1")
        assert first.created
        rebound = get_or_create(conn, "id2", "key1")  # same key, new runtime id
        assert rebound.conversation_id == first.conversation_id and rebound.session_id == "id2"
        bare = get_or_create(conn, "id3", None)
        adopted = get_or_create(conn, "id3", "key3")  # the row had no key: adopt it
        assert adopted.conversation_id == bare.conversation_id and adopted.session_key == "key3"
        other = get_or_create(conn, "id3", "key4")  # bound to another key: not reused
        assert other.created and other.conversation_id != bare.conversation_id
        by_id = get_or_create(conn, "id2", None)  # no key given: the id's active row
        assert not by_id.created and by_id.conversation_id == first.conversation_id


def test_session_lock_serializes_one_key_only() -> None:
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with session_lock("k1"):
            inside.set()
            release.wait(5)
            order.append("first")

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(5)
    with session_lock("k2"):  # another session does not wait
        order.append("other")
    release.set()
    with session_lock("k1"):
        order.append("second")
    thread.join()
    assert order == ["other", "first", "second"]


def _seed(home: Path) -> int:
    data = op(
        home,
        "session.ingest",
        session_id="s1",
        session_key="agent:main:main",
        messages=[{"role": "user", "content": f"m{i}"} for i in range(4)],
    )
    cid = int(data["conversationId"])
    with Store.open(home / "lcm.db") as store:
        ids = [r[0] for r in store.conn.execute("SELECT message_id FROM messages ORDER BY seq")]
        leaf = store.add_leaf_summary(cid, ids[:2], "leaf summary")
        store.replace_context_with_summary(cid, leaf)
        leaf2 = store.add_leaf_summary(cid, ids[2:3], "leaf two")
        store.replace_context_with_summary(cid, leaf2)
        deep = store.add_condensed_summary(cid, [leaf, leaf2], "condensed")
        store.replace_context_with_summary(cid, deep)
        store.upsert_bootstrap_state(cid, "/tmp/s1.jsonl", last_seen_size=1)
    return cid


def test_new_prunes_messages_and_shallow_summaries(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    (home / "openclaw.json").write_text(
        '{"plugins":{"entries":{"lossless-claw":{"config":{"newSessionRetainDepth":1}}}}}'
    )
    cid = _seed(home)
    data = op(home, "session.new", session_key="agent:main:main")
    assert data == {"conversationId": cid, "retainDepth": 1, "removedItems": 1, "keptItems": 1}
    conn = sqlite3.connect(home / "lcm.db")
    assert conn.execute("SELECT item_type FROM context_items").fetchall() == [("summary",)]
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4  # rows are never deleted
    assert conn.execute(
        "SELECT soft_reset_pruned_at IS NOT NULL FROM conversation_bootstrap_state"
    ).fetchone()[0]
    conn.close()


def test_reset_archives_and_starts_fresh_and_end_follows_its_reason(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    cid = _seed(home)
    data = op(home, "session.reset", session_key="agent:main:main")
    assert data["archivedConversationId"] == cid and data["changed"] is True
    fresh = data["conversationId"]
    again = op(home, "session.reset", session_key="agent:main:main")  # already fresh: nothing happens
    assert again == {"archivedConversationId": None, "conversationId": fresh, "changed": False}
    conn = sqlite3.connect(home / "lcm.db")
    assert conn.execute(
        "SELECT active, archive_cause FROM conversations WHERE conversation_id = ?", (cid,)
    ).fetchone() == (0, "manual-reset")
    conn.close()
    assert (
        op(home, "session.end", session_key="agent:main:main", reason="restart")["skipped"]
        == "ignored-reason"
    )
    op(
        home,
        "session.ingest",
        session_id="s1",
        session_key="agent:main:main",
        messages=[{"role": "user", "content": "x"}],
    )
    ended = op(home, "session.end", session_key="agent:main:main", reason="idle", next_session_id="s2")
    assert ended["archivedConversationId"] == fresh and ended["changed"] is True
    gone = op(home, "session.end", session_key="agent:main:main", reason="deleted")
    assert gone["conversationId"] is None
    conn = sqlite3.connect(home / "lcm.db")
    causes = conn.execute("SELECT archive_cause FROM conversations ORDER BY conversation_id").fetchall()
    conn.close()
    assert causes == [("manual-reset",), ("session-end",), ("session-deleted",)]


def test_concurrent_writers_of_one_session_are_serialized(tmp_path: Path) -> None:
    from lcm_cli.engine.session.ingest import IngestSettings, ingest_messages

    db = tmp_path / "lcm.db"
    Store.open(db).close()
    settings = IngestSettings(str(tmp_path / "files"))
    errors: list[BaseException] = []

    def writer(session: str, tag: str) -> None:
        try:
            with Store.open(db) as store:
                for i in range(20):
                    batch = [{"role": "user", "content": f"{tag}-{i}-{j}"} for j in range(5)]
                    ingest_messages(store, settings, session, batch, session_key=f"agent:main:{session}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(s, t)) for s, t in (("a", "a1"), ("a", "a2"), ("b", "b1"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    conn = sqlite3.connect(db)
    try:
        per = conn.execute(
            "SELECT session_id, COUNT(*), COUNT(DISTINCT seq), MIN(seq), MAX(seq) FROM messages"
            " JOIN conversations USING (conversation_id) GROUP BY session_id ORDER BY session_id"
        ).fetchall()
        assert per == [("a", 200, 200, 1, 200), ("b", 100, 100, 1, 100)]
        # Each batch of five stays contiguous: one transaction at a time per session.
        seqs = conn.execute(
            "SELECT content FROM messages JOIN conversations USING (conversation_id)"
            " WHERE session_id = 'a' ORDER BY seq"
        ).fetchall()
        tags = [row[0].rsplit("-", 1)[0] for row in seqs]
        assert all(len(set(tags[i : i + 5])) == 1 for i in range(0, 200, 5))
        items = conn.execute(
            "SELECT conversation_id, COUNT(*), MIN(ordinal), MAX(ordinal) FROM context_items"
            " GROUP BY conversation_id ORDER BY conversation_id"
        ).fetchall()
        assert [row[1:] for row in items] == [(200, 0, 199), (100, 0, 99)] or [row[1:] for row in items] == [
            (100, 0, 99),
            (200, 0, 199),
        ]
    finally:
        conn.close()


def test_ingest_by_key_alone_and_through_the_cli_door(tmp_path: Path) -> None:
    import json

    from tests.conftest import lcm

    home = tmp_path / "oc"
    home.mkdir()
    op(home, "session.ingest", session_id="s1", session_key="k1", message={"role": "user", "content": "a"})
    data = op(home, "session.ingest", session_key="k1", message={"role": "user", "content": "b"})
    assert data["sessionId"] == "s1" and data["ingested"] == 1
    out = lcm(
        "--openclaw-dir",
        str(home),
        "ingest",
        "--session-key",
        "k1",
        "--messages",
        json.dumps([{"role": "assistant", "content": "c"}]),
    )
    assert out.code == 0 and out.json["data"]["messages"][0]["seq"] == 3
    missing = lcm("--openclaw-dir", str(home), "ingest", "--session-key", "nobody", "--message", "{}")
    assert missing.code == 2 and "--session-id" in missing.error["message"]
