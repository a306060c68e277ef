"""Helpers shared by the pending-summary tests and the golden recorder.

A golden holds a file lossless-claw 1.0 prepared (the rows of the tables a publication
reads, as 1.0 wrote them) and the rows 1.0's own publication left (timestamps aside).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

GOLDENS = Path(__file__).parent / "goldens"

#: The tables a prepared file is carried in, parents first.
SOURCE_TABLES = (
    "conversations",
    "messages",
    "summaries",
    "summary_messages",
    "summary_parents",
    "context_items",
    "pending_compaction_batches",
    "pending_summary_nodes",
    "pending_summary_node_messages",
    "pending_summary_node_children",
)

#: What a publication is compared on (no timestamps).
OUTCOME_SQL = {
    "summaries": "SELECT summary_id, conversation_id, kind, depth, content, token_count, file_ids, earliest_at,"
    " latest_at, descendant_count, descendant_token_count, source_message_token_count, model"
    " FROM summaries ORDER BY summary_id",
    "summary_messages": "SELECT summary_id, message_id, ordinal FROM summary_messages ORDER BY 1, 3",
    "summary_parents": "SELECT summary_id, parent_summary_id, ordinal FROM summary_parents ORDER BY 1, 3",
    "context_items": "SELECT conversation_id, ordinal, item_type, message_id, summary_id FROM context_items"
    " ORDER BY 1, 2",
    "batches": "SELECT batch_id, status, failure_summary, source_projection_fingerprint,"
    " compactable_start_ordinal, compactable_end_ordinal FROM pending_compaction_batches ORDER BY 1",
    "nodes": "SELECT node_id, status, content, token_count, canonical_summary_id, lease_owner, failure_summary,"
    " retry_count FROM pending_summary_nodes ORDER BY 1",
    "summaries_fts": "SELECT summary_id, content FROM summaries_fts ORDER BY 1",
}


def outcome(path: str | Path) -> dict[str, list[list[Any]]]:
    """The rows a publication is judged on."""
    conn = sqlite3.connect(path)
    try:
        return {name: [list(r) for r in conn.execute(sql)] for name, sql in OUTCOME_SQL.items()}
    finally:
        conn.close()


def dump(path: str | Path) -> dict[str, Any]:
    """The source tables' rows, column names first."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, Any] = {}
        for table in SOURCE_TABLES:
            cursor = conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
            out[table] = {"columns": [d[0] for d in cursor.description], "rows": [list(r) for r in cursor]}
        return out
    finally:
        conn.close()


def load(conn: sqlite3.Connection, data: dict[str, Any]) -> None:
    """Insert a dump's rows into a file our store created (shared columns only)."""
    for table in SOURCE_TABLES:
        mine = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        cols = [c for c in data[table]["columns"] if c in mine]
        index = [data[table]["columns"].index(c) for c in cols]
        conn.executemany(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [[row[i] for i in index] for row in data[table]["rows"]],
        )
        if table in ("summaries",):
            conn.executemany(
                "INSERT INTO summaries_fts (summary_id, content) VALUES (?, ?)",
                [(row[data[table]["columns"].index("summary_id")], row[data[table]["columns"].index("content")])
                 for row in data[table]["rows"]],
            )  # fmt: skip


def driver() -> tuple[str, str] | None:
    """(node binary, bundled driver) of a lossless-claw 1.0 build, from LCM_LC10_NODE and
    LCM_LC10_DRIVER; None when either is missing."""
    node, bundle = os.environ.get("LCM_LC10_NODE"), os.environ.get("LCM_LC10_DRIVER")
    if node and bundle and Path(node).exists() and Path(bundle).exists():
        return node, bundle
    return None


def run_driver(tools: tuple[str, str], *args: str) -> Any:
    """Run the 1.0 driver; its JSON answer."""
    done = subprocess.run(
        [tools[0], tools[1], *args], check=True, capture_output=True, text=True, timeout=120
    )
    return json.loads(done.stdout)


def copy(src: str | Path, dst: str | Path) -> Path:
    """A copy of a closed database file."""
    shutil.copyfile(src, dst)
    return Path(dst)
