"""A small lcm.db with known text for the recall tests (grep, describe, expand, export).

Session family ``agent:main:main``: conversation ``main`` (active) and ``archived``.
Conversation ``other`` has another key. Every text below is what the tests search for.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)

MAIN_MESSAGES = [
    ("user", "Deploy the billing service to staging"),
    ("assistant", "The billing deploy failed: timeout connecting to postgres"),
    ("user", "数据库连接超时了，请检查"),
    ("assistant", "emoji test 🚀 launch rocket"),
    ("user", "café au lait, and also cafe\u0301 written with a combining accent"),
    ("tool", "error: ECONNREFUSED 127.0.0.1:5432"),
    ("assistant", "a" * 28 + "!"),
    ("user", "thanks, that fixed it"),
]


def stamp(minutes: int) -> str:
    """SQLite-style UTC timestamp ``minutes`` after the base time."""
    return (BASE + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S")


def build_recall_corpus(path: Path, files_dir: Path) -> dict[str, Any]:
    """Create the corpus at ``path`` (large files under ``files_dir``); return its ids."""
    with Store.open(path) as store:
        main = store.create_conversation(
            "sess-main", session_key="agent:main:main", created_at=stamp(0), updated_at=stamp(60)
        )
        archived = store.create_conversation(
            "sess-old",
            session_key="agent:main:main",
            active=False,
            archived_at=stamp(-10),
            created_at=stamp(-100),
        )
        other = store.create_conversation("sess-other", session_key="agent:other:x", created_at=stamp(-50))
        ids = store.add_messages(
            main,
            [{"role": r, "content": c, "created_at": stamp(i)} for i, (r, c) in enumerate(MAIN_MESSAGES)],
        )
        old = store.add_messages(
            archived,
            [{"role": "user", "content": "old billing question about invoices", "created_at": stamp(-90)}],
        )
        elsewhere = store.add_messages(
            other, [{"role": "user", "content": "billing in another family", "created_at": stamp(-40)}]
        )
        leaf_a = store.add_leaf_summary(
            main,
            ids[0:2],
            "Billing deploy to staging failed with a postgres timeout.",
            summary_id="sum_leafa0000000000",
            created_at=stamp(20),
        )
        leaf_b = store.add_leaf_summary(
            main,
            ids[2:4],
            "数据库连接超时 problem, then a rocket launch test.",
            summary_id="sum_leafb0000000000",
            created_at=stamp(21),
            file_ids=["file_text000000000001"],
        )
        condensed = store.add_condensed_summary(
            main,
            [leaf_a, leaf_b],
            "Condensed: billing outage and database timeout.",
            summary_id="sum_cond00000000000",
            created_at=stamp(22),
        )
        conv_dir = files_dir / str(main)
        conv_dir.mkdir(parents=True, exist_ok=True)
        text_path = conv_dir / "file_text000000000001.txt"
        text_path.write_text("line one\nthe billing report\nline three mentions billing twice: billing\n")
        binary_path = conv_dir / "file_png0000000000001.png"
        binary_path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00billing")
        outside = files_dir.parent / "outside.txt"
        outside.write_text("billing outside the files dir\n")
        store.add_large_file(
            main,
            str(text_path),
            file_id="file_text000000000001",
            file_name="report.txt",
            mime_type="text/plain",
            byte_size=text_path.stat().st_size,
            line_count=3,
            exploration_summary="A three-line billing report.",
            created_at=stamp(30),
        )
        store.add_large_file(
            main,
            str(binary_path),
            file_id="file_png0000000000001",
            file_name="chart.png",
            mime_type="image/png",
            byte_size=binary_path.stat().st_size,
            exploration_summary="PNG image, 17 bytes.",
            created_at=stamp(31),
        )
        store.add_large_file(
            main,
            str(outside),
            file_id="file_outside00000001",
            file_name="outside.txt",
            mime_type="text/plain",
            created_at=stamp(32),
        )
        store.add_large_file(
            other,
            str(outside),
            file_id="file_otherconv000001",
            file_name="elsewhere.txt",
            mime_type="text/plain",
            created_at=stamp(-30),
        )
    return {
        "main": main,
        "archived": archived,
        "other": other,
        "messages": ids,
        "old": old,
        "elsewhere": elsewhere,
        "leaf_a": leaf_a,
        "leaf_b": leaf_b,
        "condensed": condensed,
    }


def drop_full_text_tables(path: Path) -> None:
    """Remove every FTS table (as a SQLite build without FTS5 would leave the file)."""
    conn = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%_fts%' AND sql LIKE '%VIRTUAL%'"
            )
        ]
        for name in names:
            conn.execute(f'DROP TABLE "{name}"')
        conn.commit()
    finally:
        conn.close()
