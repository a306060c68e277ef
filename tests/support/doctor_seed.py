"""An lcm.db seeded with one case of every problem `lcm doctor` knows, each in its own
conversation, built through the Store and then broken on purpose with direct SQL.

``build_seeded`` returns what each check must find (exactly), so a test can assert that
every check finds its cases and nothing else.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store

TRUNCATION = "[LCM fallback summary; truncated for context management]"
DIRECTIVE = "[LCM fallback summary; directive-shaped untrusted content omitted]"
NOW = datetime.now(timezone.utc)


def ago(days: float) -> str:
    """SQLite-style UTC timestamp ``days`` ago."""
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")


def iso_ago(minutes: float) -> str:
    """ISO-8601 UTC timestamp ``minutes`` ago."""
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def conversation(
    store: Store,
    name: str,
    *,
    key: str | None = None,
    active: bool = True,
    messages: int = 6,
    dag: bool = True,
    first: str | None = None,
    days_ago: float = 1.0,
) -> dict[str, Any]:
    """A healthy conversation: messages in context, two leaves and a condensed node over them."""
    cid = store.create_conversation(
        f"sess-{name}",
        session_key=key,
        active=active,
        archived_at=None if active else ago(days_ago - 0.1),
        created_at=ago(days_ago + 1),
        updated_at=ago(days_ago),
    )
    rows = [
        {
            "role": ("user", "assistant")[i % 2],
            "content": first if (i == 0 and first) else f"{name} message {i} about the deploy",
            "created_at": ago(days_ago + (messages - i) / 1440),
        }
        for i in range(messages)
    ]
    ids = store.add_messages(cid, rows)
    out: dict[str, Any] = {"cid": cid, "messages": ids}
    if dag and messages >= 4:
        leaf_a = store.add_leaf_summary(cid, ids[0:2], f"{name}: the first two messages.")
        leaf_b = store.add_leaf_summary(cid, ids[2:4], f"{name}: the next two messages.")
        store.replace_context_with_summary(cid, leaf_a)
        store.replace_context_with_summary(cid, leaf_b)
        condensed = store.add_condensed_summary(cid, [leaf_a, leaf_b], f"{name}: four messages in all.")
        store.replace_context_with_summary(cid, condensed)
        out.update(leaves=[leaf_a, leaf_b], condensed=condensed)
    return out


def build_healthy(path: Path) -> dict[str, Any]:
    """Three healthy conversations (one archived), nothing for any check to find."""
    with Store.open(path) as store:
        a = conversation(store, "alpha", key="agent:main:main")
        b = conversation(store, "beta", key="agent:work:main")
        c = conversation(store, "gamma", key="agent:main:old", active=False, days_ago=40)
    return {"alpha": a, "beta": b, "gamma": c}


def write_config(directory: Path, db: Path, agents: list[str]) -> Path:
    """An openclaw.json naming the database and the agent ids the cleaners must cover."""
    config = directory / "openclaw.json"
    body = {
        "agents": {"list": [{"id": a} for a in agents] + [{"id": "disabled", "enabled": False}]},
        "plugins": {"entries": {"lossless-claw": {"config": {"dbPath": str(db)}}}},
    }
    config.write_text(json.dumps(body))
    return config


def build_seeded(path: Path, transcript_dir: Path) -> dict[str, set[Any]]:
    """Every problem class once; returns check id -> the exact affected ids expected."""
    expect: dict[str, set[Any]] = {}
    with Store.open(path) as store:
        conversation(store, "healthy", key="agent:main:main")

        # summaries.markers: the four kinds, and one near-miss that must not count
        m = conversation(store, "markers", key="agent:main:markers")
        old = store.add_leaf_summary(m["cid"], m["messages"][4:5], TRUNCATION + " older text")
        directive = store.add_leaf_summary(m["cid"], m["messages"][5:6], "kept text " + DIRECTIVE + " rest")
        new = store.add_leaf_summary(
            m["cid"], m["messages"][0:1], "Some summary text. [Truncated from 5000 tokens]"
        )
        near = store.add_leaf_summary(
            m["cid"], m["messages"][1:2], "[Truncated from the long history, this summary goes on and on] ok"
        )
        emergency = store.add_leaf_summary(m["cid"], m["messages"][2:3], "short", model="emergency-fallback")
        expect["summaries.markers"] = {old, directive, new, emergency}
        assert near

        cross = conversation(store, "cross", key="agent:main:cross")
        missing = conversation(store, "missing", key="agent:main:missing")
        depth = conversation(store, "depth", key="agent:main:depth")
        cycle = conversation(store, "cycle", key="agent:main:cycle")
        counts = conversation(store, "counts", key="agent:main:counts")
        ordinals = conversation(store, "ordinals", key="agent:main:ordinals", dag=False)
        dangling = conversation(store, "dangling", key="agent:main:dangling", dag=False)
        dupes = conversation(store, "dupes", key="agent:main:dupes", dag=False)

        transcript = transcript_dir / "present.jsonl"
        transcript.write_text("{}\n")
        present = conversation(store, "present", key="agent:main:present", dag=False)
        store.upsert_bootstrap_state(present["cid"], str(transcript))
        orphan = conversation(store, "orphan", key="agent:main:orphan", active=False, dag=False, days_ago=50)
        store.upsert_bootstrap_state(orphan["cid"], str(transcript_dir / "gone.jsonl"))
        expect["conversations.orphaned"] = {orphan["cid"]}

        sub = conversation(store, "sub", key="agent:work:subagent:abc", active=False, dag=False)
        conversation(store, "sub-live", key="agent:work:subagent:live", dag=False)
        conversation(store, "sub-other", key="agent:other:subagent:x", active=False, dag=False)
        conversation(store, "sub-bare", key="agent:work:subagent:", active=False, dag=False)
        expect["junk.archived-subagents"] = {sub["cid"]}
        cron = conversation(store, "cron", key="agent:work:cron:nightly", dag=False)
        cron_old = conversation(store, "cron-old", key="agent:main:cron:hourly", active=False, dag=False)
        expect["junk.cron-sessions"] = {cron["cid"], cron_old["cid"]}
        nullsub = conversation(
            store, "nullsub", active=False, dag=False, first="[Subagent Context] you are a helper"
        )
        conversation(store, "nullsub-live", dag=False, first="[Subagent Context] still running")
        expect["junk.null-subagent-context"] = {nullsub["cid"]}

        stale = conversation(store, "stale", key="agent:main:stale", active=False, dag=False)
        store.set_maintenance(stale["cid"], pending=1, reason="threshold", requested_at=iso_ago(600))
        expect["maintenance.stale"] = {stale["cid"]}
        stuck = conversation(store, "stuck", key="agent:main:stuck", dag=False)
        store.set_maintenance(stuck["cid"], pending=0, running=1, last_started_at=iso_ago(120))
        busy = conversation(store, "busy", key="agent:main:busy", dag=False)
        store.set_maintenance(busy["cid"], pending=0, running=1, last_started_at=iso_ago(2))
        expect["maintenance.stuck"] = {stuck["cid"]}
        failed = conversation(store, "failed", key="agent:main:failed", dag=False)
        store.set_maintenance(
            failed["cid"], pending=1, reason="threshold", last_failure_summary="provider 500"
        )
        expect["maintenance.failed"] = {failed["cid"]}

        conversation(store, "split-old", key="agent:main:split", active=False, dag=False, days_ago=3)
        conversation(store, "split-new", key="agent:main:split", dag=False)
        expect["rollover.splits"] = {"agent:main:split"}
        trigram = store.has_summaries_fts_cjk

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = OFF")
    with conn:
        # dag.cross-conversation: a leaf of `cross` also covers a message of `healthy`
        conn.execute(
            "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, 9)",
            (cross["leaves"][0], missing["messages"][5]),
        )
        expect["dag.cross-conversation"] = {cross["leaves"][0]}
        # dag.missing-sources: one leaf loses its links, another links a message that is gone
        conn.execute("DELETE FROM summary_messages WHERE summary_id = ?", (missing["leaves"][0],))
        conn.execute(
            "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, 987654, 9)",
            (missing["leaves"][1],),
        )
        expect["dag.missing-sources"] = set(missing["leaves"])
        # dag.depth-kind
        conn.execute("UPDATE summaries SET depth = 3 WHERE summary_id = ?", (depth["condensed"],))
        expect["dag.depth-kind"] = {depth["condensed"]}
        # dag.cycles: a leaf that also consumes the condensed node above it
        conn.execute(
            "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, 0)",
            (cycle["leaves"][0], cycle["condensed"]),
        )
        expect["dag.cycles"] = {cycle["leaves"][0], cycle["condensed"]}
        # dag.descendant-counts
        conn.execute(
            "UPDATE summaries SET descendant_count = 99 WHERE summary_id = ?", (counts["condensed"],)
        )
        expect["dag.descendant-counts"] = {counts["condensed"]}
        # context.ordinals: a gap
        conn.execute(
            "UPDATE context_items SET ordinal = ordinal + 10 WHERE conversation_id = ? AND ordinal >= 3",
            (ordinals["cid"],),
        )
        expect["context.ordinals"] = {ordinals["cid"]}
        # context.dangling: a message that is gone, and a summary of another conversation
        top = conn.execute(
            "SELECT MAX(ordinal) FROM context_items WHERE conversation_id = ?", (dangling["cid"],)
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (?, ?, 'message', 555555)",
            (dangling["cid"], top + 1),
        )
        conn.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id) VALUES (?, ?, 'summary', ?)",
            (dangling["cid"], top + 2, counts["leaves"][0]),
        )
        expect["context.dangling"] = {f"{dangling['cid']}:{top + 1}", f"{dangling['cid']}:{top + 2}"}
        # context.duplicates
        top = conn.execute(
            "SELECT MAX(ordinal) FROM context_items WHERE conversation_id = ?", (dupes["cid"],)
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (?, ?, 'message', ?)",
            (dupes["cid"], top + 1, dupes["messages"][0]),
        )
        expect["context.duplicates"] = {f"{dupes['cid']}:{top + 1}"}
        # fts: one message unindexed, one stale index row; summary FTS rows out of date / gone
        gone = ordinals["messages"][0]
        conn.execute("DELETE FROM messages_fts WHERE rowid = ?", (gone,))
        conn.execute("INSERT INTO messages_fts (rowid, content) VALUES (777777, 'stale row')")
        expect["fts.messages"] = {gone, 777777}
        conn.execute(
            "UPDATE summaries_fts SET content = 'old text' WHERE summary_id = ?", (counts["leaves"][1],)
        )
        expect["fts.summaries"] = {counts["leaves"][1]}
        if trigram:
            conn.execute("DELETE FROM summaries_fts_cjk WHERE summary_id = ?", (counts["leaves"][1],))
            expect["fts.summaries-cjk"] = {counts["leaves"][1]}
    conn.close()
    return expect
