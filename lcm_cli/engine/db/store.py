"""The write store: builds and extends lcm.db files the way lossless-claw writes them.

Used by tests, benchmarks, the example-data builder and any operation that
writes rows. It keeps the invariants of compat/database.md §8: per-conversation
``seq`` and context ``ordinal`` sequences, summary metadata derived from the
sources, DAG links with 0-based ordinals, and the optional FTS tables in step
with their base rows.

Every public write runs in one ``BEGIN IMMEDIATE`` transaction; wrap several
calls in :meth:`Store.transaction` to make them one unit of work.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from lcm_cli.engine.core import identity
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db import schema, totals
from lcm_cli.engine.db.connection import decode_text
from lcm_cli.engine.db.pending_state import STALE_BY_COMPACTION, invalidate_open_batches

# --------------------------------------------------------------------------
# Timestamps and identifiers (database.md §5, §6)
# --------------------------------------------------------------------------


def sqlite_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as SQLite's ``datetime('now')`` text: UTC, whole seconds."""
    moment = _as_utc(moment or datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def iso_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as JavaScript's ``toISOString()``: UTC, milliseconds, ``Z``."""
    moment = _as_utc(moment or datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(text: str | None) -> datetime | None:
    """Parse either stored timestamp shape (or any ISO-8601 text) as an aware UTC datetime.

    Text without a zone is UTC, as everywhere in lcm.db. Returns None when the
    value is missing or unreadable.
    """
    if not text:
        return None
    value = text.strip()
    if value.endswith(("Z", "z")):
        # datetime.fromisoformat() accepts "Z" only from Python 3.11.
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return _as_utc(moment)


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def message_identity_hash(role: str, content: str) -> str:
    """lossless-claw's ``identity_hash`` of a stored message (database.md §5).

    Hex SHA-256 of role, a NUL byte, then the content, with user content that opens
    with OpenClaw's "untrusted metadata" blocks canonicalized first
    (:func:`lcm_cli.engine.core.identity.identity_hash`).
    """
    return identity.identity_hash(role, content)


class PartIds:
    """UUID v4 strings for ``message_parts.part_id`` that sort in insertion order.

    The reference uses random v4 UUIDs. Fully random keys land all over the primary-key
    B-tree, so a bulk import touches a different page for every part; here each writer
    draws one random 122-bit UUID and counts upwards from it (version and variant bits
    kept), so consecutive parts share index pages. Every id is still a valid, unique v4
    string: two writers collide only if their random starts fall within a batch of each
    other in a 2^122 space.
    """

    _COUNTER_MASK = (1 << 62) - 1
    _VARIANT = 0b10 << 62

    def __init__(self) -> None:
        start = uuid.uuid4()
        # The high 64 bits (with the version nibble) stay fixed: keep them as text.
        self._prefix = str(start)[:19]
        # The low 64 bits hold the variant (2 bits) and a 62-bit counter; start it in the
        # lower half so it cannot wrap within any plausible number of parts.
        self._counter = (start.int & self._COUNTER_MASK) >> 1

    def next(self) -> str:
        """The next id."""
        self._counter += 1
        low = self._VARIANT | (self._counter & self._COUNTER_MASK)
        return f"{self._prefix}{low >> 48:04x}-{low & 0xFFFFFFFFFFFF:012x}"

    def reserve(self, count: int) -> tuple[str, int]:
        """Take the next ``count`` ids for SQL to spell: ``(prefix, first counter)``.

        :data:`PART_ID_SQL` spells the id of counter ``first + k`` exactly as
        :meth:`next` would have (a bulk copy then builds no id strings in Python).
        """
        first = self._counter + 1
        self._counter += count
        return self._prefix, first


#: The part id of counter value ``:c`` with prefix ``:prefix`` (see PartIds.reserve), as
#: an SQL expression over named parameters: the variant bits 10 over a 62-bit counter.
PART_ID_SQL = (
    "printf('%s%04x-%012x', {prefix}, 32768 + ((({c}) & 4611686018427387903) >> 48), ({c}) & 281474976710655)"
)


def new_summary_id(content: str) -> str:
    """A fresh summary id: ``sum_`` + 16 hex digits of SHA-256(content + random UUID)."""
    return "sum_" + hashlib.sha256((content + str(uuid.uuid4())).encode()).hexdigest()[:16]


def new_file_id() -> str:
    """A fresh large-file id: ``file_`` + the first 16 hex digits of a random UUID."""
    return "file_" + uuid.uuid4().hex[:16]


def new_focus_brief_id() -> str:
    """A fresh focus brief id: ``focus_`` + 16 hex digits (8 random bytes)."""
    return "focus_" + uuid.uuid4().hex[:16]


def fts_message_text(content: str) -> str | None:
    """The text lossless-claw indexes in ``messages_fts`` for ``content``, or None to skip.

    Blank content is not indexed. An externalized-payload reference (content
    starting ``[LCM File:`` or ``[LCM Tool Output:``) is indexed as its header
    line plus its exploration-summary lines, so the stub's boilerplate does not
    match unrelated searches.
    """
    trimmed = content.strip()
    if not trimmed:
        return None
    if not trimmed.startswith(("[LCM File:", "[LCM Tool Output:")):
        return content
    lines = [line.strip() for line in trimmed.splitlines()]
    lines = [line for line in lines if line]
    kept = [lines[0]]
    in_summary = False
    for line in lines[1:]:
        if line == "Exploration Summary:":
            in_summary = True
        elif line.startswith(("Use lcm_describe", "Call lcm_describe")):
            continue
        elif in_summary:
            kept.append(line)
    return "\n".join(kept)


def _json_text(value: Any) -> str | None:
    # Structured values are stored as compact JSON, like JSON.stringify writes
    # them (no spaces, non-ASCII kept as is); text is stored verbatim.
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _flag(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


_MESSAGE_ROW_KEYS = frozenset(
    {
        "role",
        "content",
        "token_count",
        "created_at",
        "seq",
        "parts",
        "identity_hash",
        "transcript_entry_id",
        "large_content",
        "sender_metadata",
        "stable_event_key",
    }
)

_PART_KEYS = frozenset(
    {
        "part_type",
        "text_content",
        "tool_call_id",
        "tool_name",
        "tool_input",
        "tool_output",
        "metadata",
    }
)

_INSERT_MESSAGE = (
    "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count,"
    " identity_hash, openclaw_sender_metadata, transcript_entry_id, created_at,"
    " large_content, stable_event_key)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PART = (
    "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal,"
    " text_content, tool_call_id, tool_name, tool_input, tool_output, metadata)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_CONTEXT = (
    "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?)"
)


# Opening creates the file, switches it to WAL and runs migrations: threads of one process
# (the workers of `lcm serve`) do that one at a time, so two first requests cannot race
# on a brand-new file. Other processes are kept apart by SQLite's own locks.
_OPEN_LOCK = threading.Lock()


class Store:
    """A writable lcm.db: schema migrated, WAL, foreign keys on, explicit transactions."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, migrated connection; prefer :meth:`Store.open`."""
        self.conn = conn
        self.path = path
        self._depth = 0
        self._savepoints = 0
        self.part_ids = PartIds()
        #: Why this open rebuilt the trigger-maintained totals (None: they were fresh).
        self.totals_rebuilt: str | None = None
        usable = schema.fts5_available(conn)
        trigram = usable and schema.trigram_available(conn)
        # Only write FTS rows when the table exists AND this build can use it:
        # a file made by a richer SQLite build may hold tables we cannot touch.
        self.has_messages_fts = usable and schema.table_exists(conn, "messages_fts")
        self.has_summaries_fts = usable and schema.table_exists(conn, "summaries_fts")
        self.has_summaries_fts_cjk = trigram and schema.table_exists(conn, "summaries_fts_cjk")

    @classmethod
    def open(cls, path: str | Path) -> Store:
        """Open (creating file and parent directory if missing) and migrate ``path``."""
        path = Path(path)
        with _OPEN_LOCK:
            return cls._open(path)

    @classmethod
    def _open(cls, path: Path) -> Store:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create_complete(path)
        conn = cls._connect(path)
        try:
            schema.migrate(conn)
            # Stale totals (triggers dropped by a table rebuild, rows written without
            # them) are rebuilt by the first writer that notices: a cheap check.
            rebuilt = totals.ensure_fresh(conn)
            store = cls(conn, path)
            store.totals_rebuilt = rebuilt
            return store
        except BaseException:
            conn.close()
            raise

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        # isolation_level=None: the sqlite3 module never opens transactions on
        # its own; this class issues BEGIN IMMEDIATE / COMMIT itself.
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        conn.text_factory = decode_text  # an undecodable stored value reads with U+FFFD
        try:
            # The same pragmas lossless-claw sets on its writer connections.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -65536")
            conn.execute("PRAGMA temp_store = MEMORY")
            return conn
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Close the connection (rolling back anything left open)."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        # An optimisation hint, as lossless-claw gives on close; never a reason
        # to fail closing.
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA optimize")
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` unit of work; nested calls join the outer one.

        A nested block runs in a savepoint, so if it raises only its own writes
        are undone and the outer transaction can carry on (or fail) as it likes.
        """
        if self._depth:
            self._savepoints += 1
            name = f"lcm_store_{self._savepoints}"
            self.conn.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                self.conn.execute(f"RELEASE SAVEPOINT {name}")
                raise
            else:
                self.conn.execute(f"RELEASE SAVEPOINT {name}")
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._depth = 0
            self._savepoints = 0

    # ----------------------------------------------------------------------
    # Conversations and messages
    # ----------------------------------------------------------------------

    def create_conversation(
        self,
        session_id: str,
        *,
        session_key: str | None = None,
        title: str | None = None,
        active: bool = True,
        archived_at: str | None = None,
        archive_cause: str | None = None,
        bootstrapped_at: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
    ) -> int:
        """Insert a conversation row and return its ``conversation_id``."""
        created_at = created_at or sqlite_timestamp()
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO conversations (session_id, session_key, active, archived_at,"
                " archive_cause, title, bootstrapped_at, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    session_key,
                    int(active),
                    archived_at,
                    archive_cause,
                    title,
                    bootstrapped_at,
                    created_at,
                    updated_at or created_at,
                ),
            )
            return int(cursor.lastrowid or 0)

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        *,
        token_count: int | None = None,
        created_at: str | None = None,
        seq: int | None = None,
        parts: Sequence[Mapping[str, Any]] | None = None,
        identity_hash: str | None = None,
        transcript_entry_id: str | None = None,
        large_content: str | None = None,
        sender_metadata: Mapping[str, Any] | str | None = None,
        stable_event_key: str | None = None,
        in_context: bool = True,
    ) -> int:
        """Insert one message (plus parts, FTS row, context item); return its ``message_id``.

        Defaults: ``token_count`` = :func:`estimate_tokens` of content, ``seq`` =
        MAX(seq)+1, ``identity_hash`` = :func:`message_identity_hash`,
        ``created_at`` = now. Each part is a mapping with ``part_type``
        (default ``text``), ``text_content``, ``tool_call_id``, ``tool_name``,
        ``tool_input``, ``tool_output`` and ``metadata`` (JSON-encoded unless text).
        """
        row: dict[str, Any] = {
            "role": role,
            "content": content,
            "token_count": token_count,
            "created_at": created_at,
            "seq": seq,
            "parts": parts,
            "identity_hash": identity_hash,
            "transcript_entry_id": transcript_entry_id,
            "large_content": large_content,
            "sender_metadata": sender_metadata,
            "stable_event_key": stable_event_key,
        }
        return self.add_messages(conversation_id, [row], in_context=in_context)[0]

    def add_messages(
        self,
        conversation_id: int,
        rows: Iterable[Mapping[str, Any]],
        *,
        in_context: bool = True,
    ) -> list[int]:
        """Insert many messages at once (same keys and defaults as :meth:`add_message`).

        Each row needs ``role`` and ``content``; other keys are the keyword
        arguments of :meth:`add_message`. Returns the new ids in row order. A part is a
        mapping as for :meth:`add_message`, or already the tuple of its column values
        ``(part_type, text_content, tool_call_id, tool_name, tool_input, tool_output,
        metadata)``, each a string or None (stored as given).
        """
        rows = list(rows)
        if not rows:
            return []
        for row in rows:
            unknown = row.keys() - _MESSAGE_ROW_KEYS
            if unknown:
                raise ValueError(f"unknown message fields: {sorted(unknown)}")
        now = sqlite_timestamp()
        with self.transaction():
            session_id = self._session_id(conversation_id)
            # Ids are assigned here rather than read back one by one so the
            # whole batch can go through executemany. Safe because we hold the
            # write lock; explicit ids above sqlite_sequence advance it too.
            next_id = self.next_message_id()
            next_seq = self._scalar(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            )
            message_rows: list[tuple[Any, ...]] = []
            part_rows: list[tuple[Any, ...]] = []
            fts_rows: list[tuple[int, str]] = []
            ids: list[int] = []
            for row in rows:
                role = row["role"]
                content = row["content"]
                seq = row.get("seq")
                if seq is None:
                    seq = next_seq
                next_seq = max(next_seq, seq + 1)
                token_count = row.get("token_count")
                identity_hash = row.get("identity_hash")
                message_id = next_id
                next_id += 1
                ids.append(message_id)
                message_rows.append(
                    (
                        message_id,
                        conversation_id,
                        seq,
                        role,
                        content,
                        estimate_tokens(content) if token_count is None else token_count,
                        identity_hash or message_identity_hash(role, content),
                        _json_text(row.get("sender_metadata")),
                        row.get("transcript_entry_id"),
                        row.get("created_at") or now,
                        row.get("large_content"),
                        row.get("stable_event_key"),
                    )
                )
                for ordinal, part in enumerate(row.get("parts") or ()):
                    if type(part) is tuple:
                        # Already the columns (part_type, text_content, tool_call_id,
                        # tool_name, tool_input, tool_output, metadata), each str or None
                        # (the importer's readers send parts so, to spare this loop).
                        part_rows.append(
                            (self.part_ids.next(), message_id, session_id, part[0], ordinal, *part[1:])
                        )
                    else:
                        part_rows.append(self._part_row(part, message_id, session_id, ordinal))
                if self.has_messages_fts:
                    text = fts_message_text(content)
                    if text is not None:
                        fts_rows.append((message_id, text))
            self.conn.executemany(_INSERT_MESSAGE, message_rows)
            if part_rows:
                self.conn.executemany(_INSERT_PART, part_rows)
            if fts_rows:
                self.conn.executemany("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", fts_rows)
            if in_context:
                ordinal = self._next_ordinal(conversation_id)
                self.conn.executemany(
                    _INSERT_CONTEXT,
                    ((conversation_id, ordinal + i, "message", mid, None, now) for i, mid in enumerate(ids)),
                )
            return ids

    def _part_row(
        self, part: Mapping[str, Any], message_id: int, session_id: str, ordinal: int
    ) -> tuple[Any, ...]:
        unknown = part.keys() - _PART_KEYS
        if unknown:
            raise ValueError(f"unknown message part fields: {sorted(unknown)}")
        return (
            self.part_ids.next(),
            message_id,
            session_id,
            part.get("part_type", "text"),
            ordinal,
            part.get("text_content"),
            part.get("tool_call_id"),
            part.get("tool_name"),
            _json_text(part.get("tool_input")),
            _json_text(part.get("tool_output")),
            _json_text(part.get("metadata")),
        )

    # ----------------------------------------------------------------------
    # Summaries and the context frontier
    # ----------------------------------------------------------------------

    def add_leaf_summary(
        self,
        conversation_id: int,
        message_ids: Sequence[int],
        content: str,
        *,
        summary_id: str | None = None,
        created_at: str | None = None,
        model: str = "unknown",
        file_ids: Sequence[str] | None = None,
        token_count: int | None = None,
        source_message_token_count: int | None = None,
    ) -> str:
        """Insert a leaf summary of ``message_ids`` (in source order); return its id.

        Computes depth 0, the covered time range, and the source message token
        total (unless given: compaction counts speaker lines too); links the
        messages with ordinals 0..n-1. The context is left alone: call
        :meth:`replace_context_with_summary` to compact.
        """
        ids = list(message_ids)
        if not ids:
            raise ValueError("a leaf summary needs at least one source message")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate message ids in a leaf summary's sources")
        with self.transaction():
            found = {
                row[0]: row
                for row in self.conn.execute(
                    "SELECT message_id, conversation_id, created_at, token_count FROM messages"
                    " WHERE message_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
            }
            self._check_sources("message", ids, found, conversation_id)
            earliest, latest = _time_range(found[i][2] for i in ids)
            summary_id = self._insert_summary(
                conversation_id,
                kind="leaf",
                depth=0,
                content=content,
                summary_id=summary_id,
                created_at=created_at,
                model=model,
                file_ids=file_ids,
                token_count=token_count,
                earliest_at=earliest,
                latest_at=latest,
                descendant_count=0,
                descendant_token_count=0,
                source_message_token_count=sum(found[i][3] for i in ids)
                if source_message_token_count is None
                else source_message_token_count,
            )
            self.conn.executemany(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
                ((summary_id, mid, ordinal) for ordinal, mid in enumerate(ids)),
            )
            return summary_id

    def add_condensed_summary(
        self,
        conversation_id: int,
        source_summary_ids: Sequence[str],
        content: str,
        *,
        summary_id: str | None = None,
        created_at: str | None = None,
        model: str = "unknown",
        file_ids: Sequence[str] | None = None,
        token_count: int | None = None,
    ) -> str:
        """Insert a condensed summary of lower-depth summaries (in source order); return its id.

        depth = 1 + the deepest source; time range, descendant counts and source
        message tokens are aggregated from the sources (database.md §8). Links go
        in ``summary_parents`` with the NEW summary in ``summary_id`` and each
        source in ``parent_summary_id`` (the table's naming is inverted).
        """
        ids = list(source_summary_ids)
        if not ids:
            raise ValueError("a condensed summary needs at least one source summary")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate summary ids in a condensed summary's sources")
        with self.transaction():
            found = {
                row[0]: row
                for row in self.conn.execute(
                    "SELECT summary_id, conversation_id, depth, token_count, earliest_at,"
                    " latest_at, created_at, descendant_count, descendant_token_count,"
                    " source_message_token_count FROM summaries"
                    " WHERE summary_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
            }
            self._check_sources("summary", ids, found, conversation_id)
            sources = [found[i] for i in ids]
            # A source without its own range falls back to its creation time.
            earliest, _ = _time_range(s[4] or s[6] for s in sources)
            _, latest = _time_range(s[5] or s[6] for s in sources)
            summary_id = self._insert_summary(
                conversation_id,
                kind="condensed",
                depth=max(s[2] for s in sources) + 1,
                content=content,
                summary_id=summary_id,
                created_at=created_at,
                model=model,
                file_ids=file_ids,
                token_count=token_count,
                earliest_at=earliest,
                latest_at=latest,
                descendant_count=sum(s[7] + 1 for s in sources),
                descendant_token_count=sum(s[3] + s[8] for s in sources),
                source_message_token_count=sum(s[9] for s in sources),
            )
            self.conn.executemany(
                "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
                ((summary_id, source, ordinal) for ordinal, source in enumerate(ids)),
            )
            return summary_id

    def _insert_summary(
        self,
        conversation_id: int,
        *,
        kind: str,
        depth: int,
        content: str,
        summary_id: str | None,
        created_at: str | None,
        model: str,
        file_ids: Sequence[str] | None,
        token_count: int | None,
        earliest_at: str | None,
        latest_at: str | None,
        descendant_count: int,
        descendant_token_count: int,
        source_message_token_count: int,
    ) -> str:
        summary_id = summary_id or new_summary_id(content)
        # file_ids is an ordered, de-duplicated JSON array.
        files = json.dumps(list(dict.fromkeys(file_ids or ())), separators=(",", ":"))
        self.conn.execute(
            "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content,"
            " token_count, earliest_at, latest_at, descendant_count, descendant_token_count,"
            " source_message_token_count, created_at, file_ids, model)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                summary_id,
                conversation_id,
                kind,
                depth,
                content,
                estimate_tokens(content) if token_count is None else token_count,
                earliest_at,
                latest_at,
                descendant_count,
                descendant_token_count,
                source_message_token_count,
                created_at or sqlite_timestamp(),
                files,
                model,
            ),
        )
        if self.has_summaries_fts:
            self.conn.execute(
                "INSERT INTO summaries_fts (summary_id, content) VALUES (?, ?)",
                (summary_id, content),
            )
        if self.has_summaries_fts_cjk:
            self.conn.execute(
                "INSERT INTO summaries_fts_cjk (summary_id, content) VALUES (?, ?)",
                (summary_id, content),
            )
        return summary_id

    @staticmethod
    def _check_sources(
        what: str,
        ids: Sequence[Any],
        found: Mapping[Any, Sequence[Any]],
        conversation_id: int,
    ) -> None:
        missing = [i for i in ids if i not in found]
        if missing:
            raise ValueError(f"unknown source {what} ids: {missing}")
        foreign = [i for i in ids if found[i][1] != conversation_id]
        if foreign:
            raise ValueError(
                f"source {what} ids {foreign} belong to another conversation than {conversation_id}"
            )

    def append_context_item(
        self,
        conversation_id: int,
        *,
        message_id: int | None = None,
        summary_id: str | None = None,
        created_at: str | None = None,
    ) -> int:
        """Append a message or summary (exactly one) to the context; return its ordinal."""
        if (message_id is None) == (summary_id is None):
            raise ValueError("pass exactly one of message_id or summary_id")
        item_type = "message" if message_id is not None else "summary"
        with self.transaction():
            ordinal = self._next_ordinal(conversation_id)
            self.conn.execute(
                _INSERT_CONTEXT,
                (
                    conversation_id,
                    ordinal,
                    item_type,
                    message_id,
                    summary_id,
                    created_at or sqlite_timestamp(),
                ),
            )
            return ordinal

    def replace_context_with_summary(
        self,
        conversation_id: int,
        summary_id: str,
        ordinals: Iterable[int] | None = None,
    ) -> int:
        """Replace a contiguous run of context items by one summary item, as compaction does.

        The run is given by its current ``ordinals``, or by default is every
        context item the summary covers (its source messages for a leaf, its
        source summaries for a condensed node). Afterwards the conversation's
        ordinals are renumbered 0..N-1. Returns the new item's ordinal.
        """
        with self.transaction():
            kind = self._scalar(
                "SELECT kind FROM summaries WHERE summary_id = ? AND conversation_id = ?",
                (summary_id, conversation_id),
            )
            if kind is None:
                raise ValueError(f"summary {summary_id!r} does not exist in conversation {conversation_id}")
            items = self.conn.execute(
                "SELECT ordinal, message_id, summary_id FROM context_items"
                " WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            ).fetchall()
            if ordinals is None:
                positions = self._covered_positions(summary_id, kind, items)
            else:
                wanted = set(ordinals)
                positions = [i for i, item in enumerate(items) if item[0] in wanted]
                if len(positions) != len(wanted):
                    present = {item[0] for item in items}
                    raise ValueError(f"no context items at ordinals {sorted(wanted - present)}")
            if not positions:
                raise ValueError(f"no context items to replace with summary {summary_id!r}")
            first, last = positions[0], positions[-1]
            if last - first + 1 != len(positions):
                raise ValueError("the context items to replace are not one contiguous run")
            start, end = items[first][0], items[last][0]
            invalidate_open_batches(self.conn, conversation_id, STALE_BY_COMPACTION)
            self.conn.execute(
                "DELETE FROM context_items WHERE conversation_id = ? AND ordinal BETWEEN ? AND ?",
                (conversation_id, start, end),
            )
            self.conn.execute(
                _INSERT_CONTEXT,
                (
                    conversation_id,
                    start,
                    "summary",
                    None,
                    summary_id,
                    sqlite_timestamp(),
                ),
            )
            self._resequence_context(conversation_id)
            return first

    def _covered_positions(self, summary_id: str, kind: str, items: Sequence[Sequence[Any]]) -> list[int]:
        if kind == "leaf":
            covered = {
                row[0]
                for row in self.conn.execute(
                    "SELECT message_id FROM summary_messages WHERE summary_id = ?",
                    (summary_id,),
                )
            }
            return [i for i, item in enumerate(items) if item[1] in covered]
        covered_ids = {
            row[0]
            for row in self.conn.execute(
                "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ?",
                (summary_id,),
            )
        }
        return [i for i, item in enumerate(items) if item[2] in covered_ids]

    def _resequence_context(self, conversation_id: int) -> None:
        ordinals = [
            row[0]
            for row in self.conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            )
        ]
        if ordinals == list(range(len(ordinals))):
            return
        # Two passes through negative temporaries: renumbering in place could
        # collide with a not-yet-moved row on the (conversation_id, ordinal) key.
        update = "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?"
        self.conn.executemany(update, ((-(i + 1), conversation_id, old) for i, old in enumerate(ordinals)))
        self.conn.executemany(update, ((i, conversation_id, -(i + 1)) for i in range(len(ordinals))))

    # ----------------------------------------------------------------------
    # Newer tables: simple row writers
    # ----------------------------------------------------------------------

    def add_large_file(
        self,
        conversation_id: int,
        storage_uri: str,
        *,
        file_id: str | None = None,
        file_name: str | None = None,
        mime_type: str | None = None,
        byte_size: int | None = None,
        line_count: int | None = None,
        exploration_summary: str | None = None,
        created_at: str | None = None,
    ) -> str:
        """Record an externalized payload in ``large_files``; return its ``file_`` id."""
        file_id = file_id or new_file_id()
        with self.transaction():
            self.conn.execute(
                "INSERT INTO large_files (file_id, conversation_id, file_name, mime_type,"
                " byte_size, line_count, storage_uri, exploration_summary, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    file_id,
                    conversation_id,
                    file_name,
                    mime_type,
                    byte_size,
                    line_count,
                    storage_uri,
                    exploration_summary,
                    created_at or sqlite_timestamp(),
                ),
            )
        return file_id

    def upsert_bootstrap_state(
        self,
        conversation_id: int,
        session_file_path: str,
        *,
        last_seen_size: int = 0,
        last_seen_mtime_ms: int = 0,
        last_processed_offset: int | None = None,
        last_processed_entry_hash: str | None = None,
        session_header_id: str | None = None,
        last_processed_entry_id: str | None = None,
        fork_bounded: bool = False,
        fork_source_message_count: int = 0,
        soft_reset_pruned_at: str | None = None,
        updated_at: str | None = None,
    ) -> None:
        """Write the conversation's transcript checkpoint, replacing every field.

        ``last_processed_offset`` defaults to ``last_seen_size`` (fully processed).
        """
        values = (
            conversation_id,
            session_file_path,
            last_seen_size,
            last_seen_mtime_ms,
            last_seen_size if last_processed_offset is None else last_processed_offset,
            last_processed_entry_hash,
            session_header_id,
            last_processed_entry_id,
            int(fork_bounded),
            fork_source_message_count,
            soft_reset_pruned_at,
            updated_at or sqlite_timestamp(),
        )
        columns = (
            "conversation_id, session_file_path, last_seen_size, last_seen_mtime_ms,"
            " last_processed_offset, last_processed_entry_hash, session_header_id,"
            " last_processed_entry_id, fork_bounded, fork_source_message_count,"
            " soft_reset_pruned_at, updated_at"
        )
        updates = ", ".join(f"{name.strip()} = excluded.{name.strip()}" for name in columns.split(",")[1:])
        with self.transaction():
            self.conn.execute(
                f"INSERT INTO conversation_bootstrap_state ({columns})"
                f" VALUES ({', '.join('?' * len(values))})"
                f" ON CONFLICT (conversation_id) DO UPDATE SET {updates}",
                values,
            )

    def set_maintenance(self, conversation_id: int, **fields: Any) -> None:
        """Insert or update the conversation's ``conversation_compaction_maintenance`` row.

        Keyword names are column names (``pending=True``, ``reason="threshold"``,
        ``requested_at=iso_timestamp()``, ...); unnamed columns keep their value
        (or default). ``updated_at`` defaults to now, and ``maintenance_revision``
        goes up by one on every update unless given.
        """
        bump = "maintenance_revision" not in fields
        self._upsert_row(
            "conversation_compaction_maintenance",
            conversation_id,
            fields,
            extra_update="maintenance_revision = maintenance_revision + 1" if bump else None,
        )

    def set_telemetry(self, conversation_id: int, **fields: Any) -> None:
        """Insert or update the conversation's ``conversation_compaction_telemetry`` row.

        Keyword names are column names (``cache_state="hot"``, ``provider=...``);
        unnamed columns keep their value (or default). ``updated_at`` defaults to now.
        """
        self._upsert_row("conversation_compaction_telemetry", conversation_id, fields)

    def _upsert_row(
        self,
        table: str,
        conversation_id: int,
        fields: Mapping[str, Any],
        extra_update: str | None = None,
    ) -> None:
        with self.transaction():
            allowed = schema.column_names(self.conn, table) - {"conversation_id"}
            unknown = set(fields) - allowed
            if unknown:
                raise ValueError(f"unknown {table} columns: {sorted(unknown)}")
            values = {name: _flag(value) for name, value in fields.items()}
            values.setdefault("updated_at", sqlite_timestamp())
            names = list(values)
            assignments = [f"{name} = excluded.{name}" for name in names]
            if extra_update:
                assignments.append(extra_update)
            self.conn.execute(
                f"INSERT INTO {table} (conversation_id, {', '.join(names)})"
                f" VALUES (?, {', '.join('?' * len(names))})"
                f" ON CONFLICT (conversation_id) DO UPDATE SET {', '.join(assignments)}",
                (conversation_id, *values.values()),
            )

    def add_focus_brief(
        self,
        conversation_id: int,
        prompt: str,
        content: str,
        *,
        status: str = "active",
        brief_id: str | None = None,
        session_key: str | None = None,
        token_count: int | None = None,
        target_tokens: int = 0,
        covered_latest_at: str | None = None,
        covered_message_seq: int | None = None,
        source_context_hash: str = "",
        generator_run_id: str | None = None,
        generator_session_key: str | None = None,
        raw_result_json: str | None = None,
        error: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        superseded_at: str | None = None,
        sources: Sequence[tuple[str, str]] = (),
    ) -> str:
        """Insert a focus brief (and its ``(summary_id, role)`` sources); return its id."""
        brief_id = brief_id or new_focus_brief_id()
        created_at = created_at or sqlite_timestamp()
        with self.transaction():
            self.conn.execute(
                "INSERT INTO focus_briefs (brief_id, conversation_id, session_key, prompt,"
                " content, status, token_count, target_tokens, covered_latest_at,"
                " covered_message_seq, source_context_hash, generator_run_id,"
                " generator_session_key, raw_result_json, error, created_at, updated_at,"
                " superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    brief_id,
                    conversation_id,
                    session_key,
                    prompt,
                    content,
                    status,
                    estimate_tokens(content) if token_count is None else token_count,
                    target_tokens,
                    covered_latest_at,
                    covered_message_seq,
                    source_context_hash,
                    generator_run_id,
                    generator_session_key,
                    raw_result_json,
                    error,
                    created_at,
                    updated_at or created_at,
                    superseded_at,
                ),
            )
            self.conn.executemany(
                "INSERT INTO focus_brief_sources (brief_id, summary_id, ordinal, role, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    (brief_id, summary, ordinal, role, created_at)
                    for ordinal, (summary, role) in enumerate(sources)
                ),
            )
        return brief_id

    # ----------------------------------------------------------------------
    # Helpers
    # ----------------------------------------------------------------------

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def _session_id(self, conversation_id: int) -> str:
        session_id = self._scalar(
            "SELECT session_id FROM conversations WHERE conversation_id = ?",
            (conversation_id,),
        )
        if session_id is None:
            raise ValueError(f"conversation {conversation_id} does not exist")
        return str(session_id)

    def next_message_id(self) -> int:
        """The id the next inserted message gets (call it inside the write transaction)."""
        # AUTOINCREMENT never reuses an id, even of a deleted last row, so the
        # high-water mark in sqlite_sequence counts as well as MAX(message_id).
        return int(
            self._scalar(
                "SELECT MAX("
                " COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),"
                " COALESCE((SELECT MAX(message_id) FROM messages), 0)) + 1"
            )
        )

    def _next_ordinal(self, conversation_id: int) -> int:
        return int(
            self._scalar(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM context_items WHERE conversation_id = ?",
                (conversation_id,),
            )
        )


def _time_range(stamps: Iterable[str | None]) -> tuple[str | None, str | None]:
    # Compare parsed instants, not text: the two stored shapes do not sort
    # together ("2026-01-01 10:00:00" < "2026-01-01T09:00:00.000Z" as text).
    moments = [m for m in (parse_timestamp(s) for s in stamps) if m is not None]
    if not moments:
        return None, None
    return iso_timestamp(min(moments)), iso_timestamp(max(moments))


def _create_complete(path: Path) -> None:
    """Create ``path`` with its whole schema, so no reader ever sees a file without tables.

    The schema is built in a sibling file that only this process names, made durable,
    then hard-linked into place (which fails if another process created ``path`` first:
    theirs is kept). A kill at any instant leaves either no ``path`` or a complete one;
    the sibling left by a killed creator is removed by the next one.
    """
    from lcm_cli.engine.core.files import fsync_dir, pid_alive

    prefix = f".{path.name}.creating-"
    for stale in path.parent.glob(prefix + "*"):
        pid = stale.name[len(prefix) :].split("-", 1)[0].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                stale.unlink()
    staging = path.with_name(f"{prefix}{os.getpid()}-{threading.get_ident()}")
    for leftover in (staging, Path(str(staging) + "-wal"), Path(str(staging) + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    conn = Store._connect(staging)
    try:
        schema.migrate(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    try:
        with open(staging, "rb") as handle:
            os.fsync(handle.fileno())
        try:
            os.link(staging, path)
        except FileExistsError:
            pass  # another process created it meanwhile: theirs is complete too
        fsync_dir(str(path.parent))
    finally:
        for leftover in (staging, Path(str(staging) + "-wal"), Path(str(staging) + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
