"""Modest lcm.db files for the write-lock tests: big enough that the work runs in many steps,
small enough that a test takes seconds. Built through the project's own Store (FTS rows,
summaries, DAG links and triggers as a real file has them)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from lcm_cli.engine.db import schema, totals
from lcm_cli.engine.db.store import Store

_WORDS = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud".split()


def build_file(
    path: Path,
    *,
    conversations: int = 24,
    messages: int = 600,
    summary_every: int = 20,
    archived: int = 12,
    seed: int = 27,
) -> dict[str, list[int]]:
    """Write ``conversations`` conversations of ``messages`` messages each (the first
    ``archived`` archived, spread in time: older ids are older), a leaf summary per
    ``summary_every`` messages. Returns the ids by state."""
    rng = random.Random(seed)
    ids: dict[str, list[int]] = {"archived": [], "active": []}
    with Store.open(path) as store:
        for c in range(conversations):
            is_archived = c < archived
            cid = store.create_conversation(
                f"session-{c}",
                session_key=f"agent:main:s{c}",
                active=not is_archived,
                archived_at="2026-01-01 00:00:00" if is_archived else None,
            )
            ids["archived" if is_archived else "active"].append(cid)
            rows = []
            for m in range(messages):
                text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 60)))
                day = 1 + (c * 27) // max(conversations, 1)
                rows.append(
                    {
                        "role": ("user", "assistant", "tool")[m % 3],
                        "content": text,
                        "created_at": f"2026-{1 + c * 11 // max(conversations, 1):02d}-{day:02d} "
                        f"{(m // 60) % 24:02d}:{m % 60:02d}:00",
                    }
                )
            message_ids = store.add_messages(cid, rows, in_context=False)
            for start in range(0, len(message_ids), summary_every):
                chunk = message_ids[start : start + summary_every]
                store.add_leaf_summary(cid, chunk, " ".join(rng.choice(_WORDS) for _ in range(80)))
    return ids


def forget_lcm(path: Path) -> None:
    """Strip what only lcm adds (totals, triggers, read-path indexes, ``lcm_cli.*`` steps), as a
    file lossless-claw alone wrote lacks them; the rest is still our writer's."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        for name, _ in (*schema.READ_PATH_INDEXES, schema.SUMMARY_TOKENS_INDEX):
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        for table in (totals.CONVERSATION_TOTALS, totals.SUMMARY_TOTALS, totals.BUILD_TABLE):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM lcm_migration_state WHERE step_name LIKE 'lcm_cli.%'")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def recount(conn: sqlite3.Connection) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    """The totals a full scan gives, and the ones the totals tables hold (non-empty rows)."""
    scanned = set(
        conn.execute(
            """SELECT conversation_id, COUNT(*), COALESCE(SUM(token_count), 0), MIN(created_at), MAX(created_at)
               FROM messages GROUP BY conversation_id"""
        )
    ) | {
        ("s",) + row
        for row in conn.execute(
            """SELECT conversation_id, kind, depth, COUNT(*), COALESCE(SUM(token_count), 0),
                      COALESCE(SUM(source_message_token_count), 0),
                      MIN(COALESCE(earliest_at, created_at)), MAX(COALESCE(latest_at, created_at))
               FROM summaries GROUP BY conversation_id, kind, depth"""
        )
    }
    kept = set(
        conn.execute(
            """SELECT conversation_id, message_count, message_tokens, earliest_at, latest_at
               FROM lcm_conversation_totals WHERE message_count > 0"""
        )
    ) | {
        ("s",) + row
        for row in conn.execute(
            """SELECT conversation_id, kind, depth, summary_count, summary_tokens, source_tokens,
                      earliest_at, latest_at FROM lcm_summary_totals WHERE summary_count > 0"""
        )
    }
    return scanned, kept
