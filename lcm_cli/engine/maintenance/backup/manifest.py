"""A backup's manifest: where it lives, what it counts, reading it back."""

from __future__ import annotations

import sqlite3
from typing import Any

from lcm_cli.engine.core.held_files import open_input_text
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.core.outputs import MANIFEST_SUFFIX

MANIFEST_VERSION = 1

# Shadow tables of the virtual-table modules lcm.db may use (FTS5, FTS3/4, R*Tree).
_SHADOW_SUFFIXES = (
    "_data",
    "_idx",
    "_content",
    "_docsize",
    "_config",
    "_segments",
    "_segdir",
    "_stat",
    "_node",
    "_rowid",
    "_parent",
)


def manifest_path_for(backup_path: str) -> str:
    """The manifest that sits beside ``backup_path``."""
    return backup_path + MANIFEST_SUFFIX


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def counted_tables(conn: sqlite3.Connection) -> list[str]:
    """Ordinary tables whose rows a manifest counts: no virtual, shadow or ``sqlite_`` tables.

    Decided from the schema text and names only, so every SQLite build (with or without
    FTS5) picks the same set for the same file.
    """
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    virtual = [name for name, sql in rows if (sql or "").lstrip().upper().startswith("CREATE VIRTUAL")]
    tables = []
    for name, _sql in rows:
        if name.startswith("sqlite_") or name in virtual:
            continue
        if any(name.startswith(v + "_") and name[len(v) :] in _SHADOW_SUFFIXES for v in virtual):
            continue
        tables.append(name)
    return sorted(tables)


def row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """``{table: COUNT(*)}`` for :func:`counted_tables`."""
    return {
        name: int(conn.execute(f"SELECT COUNT(*) FROM {_quote_ident(name)}").fetchone()[0])
        for name in counted_tables(conn)
    }


def read_manifest(backup_path: str) -> tuple[dict[str, Any] | None, str]:
    """(manifest, state) where state is ``present``, ``missing`` or ``unreadable: why``."""
    try:
        with open_input_text(manifest_path_for(backup_path)) as handle:
            data = loads_bounded(handle.read())
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {exc}"
    if not isinstance(data, dict):
        return None, "unreadable: not a JSON object"
    return data, "present"
