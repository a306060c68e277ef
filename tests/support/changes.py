"""What the change-backup tests share: a byte-exact dump of a database, bulk rows that no
command touches, and the change backups beside a database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store

#: Not compared: SQLite's own tables (AUTOINCREMENT counters never go back) and lcm's own,
#: which a change backup leaves out: the totals its triggers keep (checked by
#: :func:`totals_agree` instead: an emptied total stays as a zero row) and the change log.
_SKIP = ("sqlite_", "lcm_")


def dump(path: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ordinary table (the full-text tables aside), with its rowid, each
    value as ``quote()`` gives it (type and bytes), sorted: equal dumps are equal tables."""
    conn = sqlite3.connect(str(path))
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        virtual = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
            )
        ]
        tables = {
            name: [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
            for name in names
            if not (
                name.startswith(_SKIP) or name in virtual or any(name.startswith(v + "_") for v in virtual)
            )
        }
        conn.text_factory = bytes  # text that is not UTF-8 compares as its bytes
        out: dict[str, list[tuple[Any, ...]]] = {}
        for name, columns in tables.items():
            quoted = ", ".join(f'quote("{c}")' for c in columns)
            out[name] = sorted(conn.execute(f'SELECT rowid, {quoted} FROM "{name}"').fetchall())
        return out
    finally:
        conn.close()


def add_bulk(path: Path | str, messages: int = 20_000, *, key: str = "agent:main:bulk") -> int:
    """A conversation of ``messages`` messages no command under test touches; its id."""
    with Store.open(path) as store:
        cid = store.create_conversation(f"bulk-{key}", session_key=key)
        rows = [
            {
                "role": ("user", "assistant")[i % 2],
                "content": f"bulk message {i}: " + "lorem ipsum dolor " * 12,
            }
            for i in range(messages)
        ]
        store.add_messages(cid, rows, in_context=False)
        return int(cid)


def totals_agree(path: Path | str) -> bool:
    """lcm's trigger-kept totals equal a recount of the messages and summaries."""
    from tests.engine.db.scale_file import recount

    conn = sqlite3.connect(str(path))
    try:
        scanned, kept = recount(conn)
        return scanned == kept
    finally:
        conn.close()


def change_backups(directory: Path) -> list[Path]:
    """The change backups in ``directory``, oldest first."""
    return sorted(directory.glob("*.changes.jsonl.gz"), key=lambda p: p.stat().st_mtime_ns)


def log_rows(path: Path | str) -> int:
    """Rows left in lcm.db's change log (0 when there is none)."""
    conn = sqlite3.connect(str(path))
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lcm_change_log'").fetchone():
            return 0
        return int(
            conn.execute("SELECT COUNT(*) FROM lcm_change_log WHERE op IN ('I', 'U', 'D')").fetchone()[0]
        )
    finally:
        conn.close()
