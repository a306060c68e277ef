"""Sessions: which conversation a host session writes to, which sessions LCM leaves alone,
and one writer at a time per session.

Facts from docs/reference/engine.md §1.3 (exclusion), §1.4 (per-session serialization), §2.1
step 5 (get or create the conversation) and docs/reference/config.md §7 (pattern globs).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, NamedTuple

DEFAULT_QUEUE_KEY = "__lcm__"
# The glob's literal characters that the reference escapes; `?` is deliberately not
# among them: it passes through as a regex quantifier, as in the reference.
_ESCAPED = set(".+^${}()|[]\\")


@lru_cache(maxsize=256)
def compile_session_pattern(glob: str) -> re.Pattern[str]:
    """A session-pattern glob as an anchored regex: ``*`` = no colon, ``**`` = anything."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^:]*")
        elif ch in _ESCAPED:
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    try:
        return re.compile("".join(out))
    except re.error:
        # A stray `?` after nothing (e.g. the glob "?") cannot compile: match it literally.
        return re.compile(re.escape(glob))


def matches_any(value: str, patterns: Sequence[str]) -> bool:
    """True when ``value`` matches one of the globs as a whole (case-sensitive)."""
    return any(compile_session_pattern(p).fullmatch(value) is not None for p in patterns)


class SessionPolicy(NamedTuple):
    """The exclusion rules of the effective config."""

    ignore_patterns: tuple[str, ...] = ()
    stateless_patterns: tuple[str, ...] = ()
    skip_stateless: bool = True

    def exclusion(self, session_id: str | None, session_key: str | None) -> str | None:
        """``"excluded"`` (ignored: no reads, no writes), ``"stateless"`` (no writes) or None.

        Ignore patterns match the trimmed key, else the trimmed id; stateless patterns
        match the trimmed key only, and only while ``skipStatelessSessions`` is on.
        """
        key = (session_key or "").strip()
        ident = (session_id or "").strip()
        if self.ignore_patterns:
            target = key or ident
            if target and matches_any(target, self.ignore_patterns):
                return "excluded"
        if self.stateless_patterns and self.skip_stateless and key:
            if matches_any(key, self.stateless_patterns):
                return "stateless"
        return None


def is_isolated_cron(session_key: str | None) -> bool:
    """``agent:<id>:cron:<run>`` (four segments or more): each cron run is a conversation of its own."""
    parts = (session_key or "").strip().split(":")
    return len(parts) >= 4 and parts[0] == "agent" and parts[2] == "cron"


# --- per-session serialization ---------------------------------------------------------


def queue_key(session_id: str | None, session_key: str | None) -> str:
    """The serialization key: trimmed session key, else trimmed session id, else ``__lcm__``."""
    return (session_key or "").strip() or (session_id or "").strip() or DEFAULT_QUEUE_KEY


_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


@contextmanager
def session_lock(key: str) -> Iterator[None]:
    """Hold the in-process lock of one session: its writes run one after another.

    The lock is re-entrant, so a unit of work that holds it (a committed turn) can call
    writers that take it themselves.

    Different sessions do not wait on each other here; across processes, SQLite's
    ``BEGIN IMMEDIATE`` (with the busy timeout) serializes the writes themselves.
    """
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.RLock()
    with lock:
        yield


# --- which conversation ----------------------------------------------------------------


class Conversation(NamedTuple):
    """The active conversation a session resolved to."""

    conversation_id: int
    session_id: str
    session_key: str | None
    created: bool


def find_active(conn: sqlite3.Connection, session_id: str | None, session_key: str | None) -> Any:
    """The active row for the key, else for the id (newest first); None when there is none.

    Returns ``(conversation_id, session_id, session_key)``. When a key is given, a row
    found by id that is bound to a different key is not the session's conversation.
    """
    key = (session_key or "").strip() or None
    ident = (session_id or "").strip() or None
    if key is not None:
        row = conn.execute(
            "SELECT conversation_id, session_id, session_key FROM conversations"
            " WHERE session_key = ? AND active = 1"
            " ORDER BY julianday(created_at) DESC, conversation_id DESC LIMIT 1",
            (key,),
        ).fetchone()
        if row is not None:
            return row
    if ident is not None:
        row = conn.execute(
            "SELECT conversation_id, session_id, session_key FROM conversations"
            " WHERE session_id = ? AND active = 1 AND (? IS NULL OR session_key IS NULL OR session_key = ?)"
            " ORDER BY julianday(created_at) DESC, conversation_id DESC LIMIT 1",
            (ident, key, key),
        ).fetchone()
        if row is not None:
            return row
    return None


def get_or_create(conn: sqlite3.Connection, session_id: str, session_key: str | None) -> Conversation:
    """§2.1 step 5, inside the caller's write transaction.

    The active row for the key wins (its ``session_id`` is rebound to the current id
    when it changed); else the active row for the id (adopting the key when the row has
    none); else a new row.
    """
    key = (session_key or "").strip() or None
    ident = session_id.strip()
    row = find_active(conn, ident, key)
    if row is None:
        cursor = conn.execute(
            "INSERT INTO conversations (session_id, session_key) VALUES (?, ?)",
            (ident, key),
        )
        return Conversation(int(cursor.lastrowid or 0), ident, key, True)
    conversation_id, row_session_id, row_key = int(row[0]), str(row[1]), row[2]
    if key is not None and row_key == key and row_session_id != ident:
        conn.execute(
            "UPDATE conversations SET session_id = ?, updated_at = datetime('now') WHERE conversation_id = ?",
            (ident, conversation_id),
        )
        row_session_id = ident
    elif key is not None and row_key is None:
        conn.execute(
            "UPDATE conversations SET session_key = ?, updated_at = datetime('now') WHERE conversation_id = ?",
            (key, conversation_id),
        )
        row_key = key
    return Conversation(conversation_id, row_session_id, row_key, False)
