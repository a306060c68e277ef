"""Staging files: one transcript's rows, built by a reader process, copied in by the writer.

`lcm migrate-sessions --apply` spends its time in two places: building rows from JSON
(pure Python, done by forked readers) and SQLite's inserts (done by the one writer). Rows
handed over one by one cost the writer twice: unpickling them, then binding every value
through ``executemany``. Instead a reader writes a new session's rows into a small SQLite
file of its own (no indexes, no journal: it is disposable) and the writer copies them with
one ``INSERT ... SELECT`` per table, which runs entirely inside SQLite. On 2 cores this
moves about half of the writer's work to the readers and nearly halves what remains.

A staging file holds rows for a conversation that does not exist yet, so the numbers the
writer assigns are offsets: message ``k`` (rowid ``k`` of ``m``, from 1) becomes
``message_id = first_id + k - 1``, ``seq = k`` and context ordinal ``k - 1``. The values
themselves are exactly what :meth:`Store.add_messages` would store for the same
:class:`~lcm_cli.engine.transcript.reader.TranscriptMessage` (tested row for row).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.connection import bind_none_directly, connect
from lcm_cli.engine.db.store.ids import PART_ID_SQL, message_identity_hash
from lcm_cli.engine.db.store.messages import fts_message_text

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

# Staging directories are named lcm-import-<pid>-<random> in the temp dir (TMPDIR).
_DIR_PREFIX = "lcm-import-"
# Rows are flushed to the file in batches of this many messages.
_BATCH = 250
# The page cache of a staging file, on either side (KiB).
CACHE_KIB = 256

_SCHEMA = (
    # fts: 1 when the message goes into messages_fts; fts_text only when that text is not
    # the content itself (an externalized-payload reference), so content is stored once.
    "CREATE TABLE m (role TEXT, content TEXT, token_count INTEGER, identity_hash TEXT,"
    " sender_metadata TEXT, entry_id TEXT, created_at TEXT, fts INTEGER, fts_text TEXT)",
    # Part ids are spelled by the writer from its own counter (Store part ids).
    "CREATE TABLE p (message INTEGER, part_type TEXT, ordinal INTEGER,"
    " text_content TEXT, tool_call_id TEXT, tool_name TEXT, tool_input TEXT,"
    " tool_output TEXT, metadata TEXT)",
)


class StagingWriter:
    """The reader's side: append one session's messages to a new staging file."""

    def __init__(self, path: str) -> None:
        self.path = path
        bind_none_directly()
        self._conn = connect(path)
        # A staging file is thrown away if anything goes wrong, so it needs no journal
        # and no fsync; the writer reads it only after close().
        self._conn.execute("PRAGMA journal_mode = OFF")
        self._conn.execute("PRAGMA synchronous = OFF")
        # Appends only: a small page cache is enough, and keeps memory flat in file size.
        self._conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._conn.execute("BEGIN")
        for statement in _SCHEMA:
            self._conn.execute(statement)
        self._messages: list[tuple[Any, ...]] = []
        self._parts: list[tuple[Any, ...]] = []
        self.count = 0

    def add(self, message: Any) -> None:
        """Stage one ``TranscriptMessage`` (the next seq of the new conversation)."""
        self.count += 1
        role, content, token_count = message.role, message.content, message.token_count
        text = fts_message_text(content)
        # The same fallbacks as Store.add_messages (the reader always fills both).
        self._messages.append(
            (
                role,
                content,
                estimate_tokens(content) if token_count is None else token_count,
                message.identity_hash or message_identity_hash(role, content),
                message.sender_metadata,
                message.entry_id,
                message.created_at or None,  # None: the writer's "now", as add_messages does
                0 if text is None else 1,
                None if text is None or text is content else text,
            )
        )
        local = self.count
        for ordinal, part in enumerate(message.parts):
            self._parts.append(
                (
                    local,
                    part["part_type"],
                    ordinal,
                    part["text_content"],
                    part["tool_call_id"],
                    part["tool_name"],
                    part["tool_input"],
                    part["tool_output"],
                    part["metadata"],
                )
            )
        if len(self._messages) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        self._conn.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._messages)
        if self._parts:
            self._conn.executemany("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._parts)
        self._messages = []
        self._parts = []

    def close(self) -> None:
        """Write what is buffered and close the file (ready for :func:`copy_staged`)."""
        try:
            self._flush()
            self._conn.execute("COMMIT")
        finally:
            self._conn.close()

    def abandon(self) -> None:
        """Close without finishing (the caller deletes the file)."""
        self._conn.close()


@contextmanager
def attached(conn: sqlite3.Connection, path: str, schema: str) -> Iterator[None]:
    """The staging file at ``path`` attached as ``schema``, for :func:`copy_staged`.

    Used around the file's transaction: SQLite refuses ATTACH, DETACH and a change of
    ``foreign_keys`` inside one. Foreign keys are not checked meanwhile: every row the
    copy writes references a row written just before it in the same transaction (its
    new conversation, its message), so each check would be a wasted lookup per row.
    """
    conn.execute(f"ATTACH DATABASE ? AS {schema}", (path,))
    try:
        conn.execute(f"PRAGMA {schema}.cache_size = -{CACHE_KIB}")
        conn.execute("PRAGMA foreign_keys = OFF")
        yield
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"DETACH DATABASE {schema}")


def copy_staged(store: Store, schema: str, conversation_id: int, session_id: str, now: str) -> int:
    """Copy the staging file attached as ``schema`` into a new, empty conversation.

    Runs inside the caller's transaction, within :func:`attached`. Returns the number of
    messages copied.
    """
    conn = store.conn
    # The schema's CHECKs on messages.role and message_parts.part_type are IN lists, and
    # SQLite 3.40 builds a temporary index of the list again for every row it checks:
    # about a quarter of this copy's work. The staged values come from closed sets the
    # schema accepts (tests/migrate/test_staging.py proves it), so the copy skips them.
    conn.execute("PRAGMA ignore_check_constraints = ON")
    try:
        return _copy(store, conn, schema, conversation_id, session_id, now)
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")


def _copy(
    store: Store, conn: sqlite3.Connection, schema: str, conversation_id: int, session_id: str, now: str
) -> int:
    offset = store.next_message_id() - 1
    copied = conn.execute(
        f"""INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count,
                identity_hash, openclaw_sender_metadata, transcript_entry_id, created_at)
            SELECT rowid + :offset, :conversation, rowid, role, content, token_count,
                   identity_hash, sender_metadata, entry_id, COALESCE(created_at, :now)
            FROM {schema}.m ORDER BY rowid""",
        {"offset": offset, "conversation": conversation_id, "now": now},
    ).rowcount
    parts = conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {schema}.p").fetchone()[0]
    if parts:
        # Part k (rowid k) takes the k-th of the ids reserved here, in part order.
        prefix, first = store.part_ids.reserve(parts)
        part_id = PART_ID_SQL.format(prefix=":prefix", c=":first + rowid - 1")
        conn.execute(
            f"""INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal,
                    text_content, tool_call_id, tool_name, tool_input, tool_output, metadata)
                SELECT {part_id}, message + :offset, :session, part_type, ordinal, text_content,
                       tool_call_id, tool_name, tool_input, tool_output, metadata
                FROM {schema}.p ORDER BY rowid""",
            {"prefix": prefix, "first": first, "offset": offset, "session": session_id},
        )
    if store.has_messages_fts:
        conn.execute(
            f"""INSERT INTO messages_fts (rowid, content)
                SELECT rowid + :offset, COALESCE(fts_text, content) FROM {schema}.m WHERE fts
                ORDER BY rowid""",
            {"offset": offset},
        )
    conn.execute(
        f"""INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, created_at)
            SELECT :conversation, rowid - 1, 'message', rowid + :offset, :now
            FROM {schema}.m ORDER BY rowid""",
        {"conversation": conversation_id, "offset": offset, "now": now},
    )
    return int(copied)


def make_stage_dir() -> str:
    """A new private directory for this import's staging files.

    It lives in the system temp dir (``TMPDIR``). Directories this user's killed imports
    left behind (their process is gone) are removed first.
    """
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        names = []
    for name in names:
        if not name.startswith(_DIR_PREFIX):
            continue
        pid = name[len(_DIR_PREFIX) :].split("-", 1)[0]
        path = os.path.join(root, name)
        if pid.isdigit() and not _alive(int(pid)) and _owned(path):
            shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-")


def _owned(path: str) -> bool:
    """Only our own directories are swept (a shared /tmp holds other users' too)."""
    try:
        return os.lstat(path).st_uid == os.getuid()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True


def remove_stage_dir(path: str | None) -> None:
    """Remove the staging directory and whatever is left in it."""
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)


def discard(path: str) -> None:
    """Delete one staging file (missing is fine)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
