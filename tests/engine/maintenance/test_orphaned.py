"""A conversation is orphaned only when its history is gone from the host too.

After normal use on a current host, conversations record their session in the host's
SQLite store (the host's ``sqlite:`` marker), and the host's own upgrade to SQLite imports
JSONL transcripts into the store and moves the files away. Neither is orphaned; doctor
never suggests deleting an active conversation.
"""

from __future__ import annotations

import json
from pathlib import Path

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm
from tests.support.host_store import add_session, create_store


def _conversation(store: Store, session_id: str, source: str, *, active: bool = True) -> int:
    cid = store.create_conversation(session_id, session_key=f"agent:main:explicit:{session_id}")
    store.add_messages(cid, [{"role": "user", "content": f"hello from {session_id}", "token_count": 3}])
    if not active:
        store.conn.execute("UPDATE conversations SET active = 0 WHERE conversation_id = ?", (cid,))
    store.upsert_bootstrap_state(cid, source)
    return cid


def test_only_sessions_gone_from_file_and_host_store_are_orphaned(tmp_path: Path) -> None:
    state = tmp_path / "state"
    host = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = create_store(host)
    header = json.dumps({"type": "session", "version": 4, "id": "x", "timestamp": "2026-12-01T10:00:00.000Z"})
    for session_id in ("in-store", "upgraded"):
        add_session(conn, session_id, [header.replace('"x"', json.dumps(session_id))])
    conn.close()
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "on-disk.jsonl").write_text(header + "\n")
    db = state / "lcm.db"
    with Store.open(db) as store, store.transaction():
        ids = {
            "in-store": _conversation(store, "in-store", f"sqlite:main:in-store:{host}"),
            # The host's upgrade imported this JSONL into its store and archived the file.
            "upgraded": _conversation(store, "upgraded", str(sessions / "upgraded.jsonl")),
            "on-disk": _conversation(store, "on-disk", str(sessions / "on-disk.jsonl")),
            "gone-file": _conversation(store, "gone-file", str(sessions / "gone-file.jsonl"), active=False),
            "gone-store": _conversation(store, "gone-store", f"sqlite:main:gone-store:{host}"),
        }
    out = lcm("--openclaw-dir", str(state), "doctor", "--check", "conversations.orphaned")
    check = next(c for c in out.json["data"]["checks"] if c["check"] == "conversations.orphaned")
    assert sorted(check["affected"]) == sorted([ids["gone-file"], ids["gone-store"]])
    assert "--include-active" not in json.dumps(check)
    # The fix prunes archived ones only: the active conversation is the only copy left.
    pruned = lcm("--openclaw-dir", str(state), "prune", "--class", "orphaned", "--apply")
    assert pruned.code == 0, pruned.stderr
    left = lcm("--openclaw-dir", str(state), "conversations", "list", "--limit", "50").json["data"]
    kept = {c["conversationId"] for c in left["items"]}
    assert kept == {ids["in-store"], ids["upgraded"], ids["on-disk"], ids["gone-store"]}
