"""Reading OpenClaw's per-agent SQLite session stores (host 2026.7.2 and later).

Current OpenClaw writes no JSONL transcripts. Each agent has one SQLite file,
``<state dir>/agents/<agentId>/agent/openclaw-agent.sqlite`` (WAL mode), and this module
reads the three tables a backfill needs, never anything else:

- ``session_windows``: one row per session (``session_id``, ``session_key``, ``updated_at`` ms);
- ``session_nodes``: one row per session key (its ``current_session_id``), used when a
  window row is missing;
- ``transcript_events``: one row per transcript event, ``(session_id, seq)``; the row holds
  either ``event_json`` (the v4 event JSON a JSONL line held) or ``event_zstd`` (a zstd
  frame of it) with ``event_utf8_bytes`` (the decoded length).

The host is live while we read: the file is opened read-only (``mode=ro`` URI,
``query_only``) with a busy timeout, and events are read in pages of at most
:data:`PAGE_ROWS` rows and :data:`PAGE_BYTES` stored bytes, each in its own short read
transaction, so the host's commits and WAL checkpoints never wait on us for longer than
one page. A row that cannot be decoded (torn zstd frame, wrong length, empty row, a
column of the wrong type, a seq that is not an integer, an event over the host's own
cap) is yielded as an :class:`UndecodableEvent` marker, never raised: the importer
reports it as a skipped line. Only a store that cannot be opened at all raises
``LcmError`` (``HOST_STORE_NOT_FOUND`` / ``HOST_STORE_UNREADABLE``).

The store may be broken or hostile, so memory is bounded by the host's own limits, not by
what a row claims: SQLite materializes no value over :data:`MAX_EVENT_BYTES`
(``SQLITE_LIMIT_LENGTH``); a frame's declared sizes (``event_utf8_bytes`` and the frame
header's content size) are checked before it is decompressed, and decompression stops at
the declared size.

zstd: ``compression.zstd`` on Python 3.14+, else the ``zstandard`` package; either is
imported on the first compressed row only (start-up cost matters).
"""

from __future__ import annotations

import glob
import os
import sqlite3
from collections.abc import Callable, Iterator
from typing import NamedTuple

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.session_keys import agent_id_of
from lcm_cli.engine.db.connection import connect, database_uri

STORE_NAME = "openclaw-agent.sqlite"
PAGE_ROWS = 500
# Stored bytes one page may hold (plus its last row): the host's 4 MiB cap times 500 rows
# would be 2 GiB.
PAGE_BYTES = 16 * 1024 * 1024
BUSY_TIMEOUT_MS = 5000
SQLITE_HEADER = b"SQLite format 3\x00"
# The host caps one event at 4 MiB (a CHECK on the table); a larger claim is torn. Also the
# most one stored value (event_json, event_zstd) may hold.
MAX_EVENT_BYTES = 4 * 1024 * 1024
# A frame's window may be at most 8 MiB (2^23, above the cap): a larger one is not the host's.
WINDOW_LOG_MAX = 23
# Rows whose seq is not an integer (no host writes one) named one by one in a report.
MAX_BAD_SEQ_LABELS = 100

_Decoder = Callable[[bytes, int], "bytes | UndecodableEvent"]
# How a report names an event: its seq, or for a row whose seq is not an integer, the
# stored value when short (a real, a text), else None.
SeqLabel = int | float | str | None
_decoder: _Decoder | None = None


class HostSession(NamedTuple):
    """One session (a window of a session key) in a host store."""

    session_id: str
    session_key: str | None
    agent_id: str
    store: str
    updated_at_ms: int | None
    event_count: int


class UndecodableEvent(str):
    """The marker :func:`iter_events` yields for a row it cannot decode.

    It is a ``str`` (a line no JSON parser accepts, so a transcript reader skips it) that
    also carries the stable ``reason``: ``zstd_corrupt``, ``size_mismatch``,
    ``empty_event``, ``too_large`` (over the host's 4 MiB cap), ``wrong_type`` (a column
    of another type than the host's) or ``bad_seq`` (a seq that is not an integer).
    """

    reason: str

    def __new__(cls, reason: str, detail: str = "") -> UndecodableEvent:
        text = f"!lcm-undecodable-event {reason}" + (f": {detail}" if detail else "")
        made = super().__new__(cls, text.replace("\n", " ").replace("\r", " "))
        made.reason = reason
        return made


class SkippedEvent(NamedTuple):
    """An event of a store that was not imported, and why: ``line`` is its seq, so a
    report reads it as it reads a :class:`~lcm_cli.engine.transcript.records.SkippedLine`."""

    line: SeqLabel
    reason: str


class Snapshot(NamedTuple):
    """What :func:`snapshot` wrote: the file, each line's ``seq``, the undecodable rows."""

    path: str
    seqs: list[SeqLabel]  # line n (from 1) holds event seqs[n - 1]
    errors: dict[SeqLabel, str]  # seq -> UndecodableEvent reason
    size_bytes: int


def store_path(state_dir: str, agent_id: str) -> str:
    """Where the host keeps ``agent_id``'s store under ``state_dir``."""
    return os.path.join(state_dir, "agents", agent_id, "agent", STORE_NAME)


def find_stores(state_dir: str) -> list[tuple[str, str]]:
    """``(agent_id, path)`` of every ``agents/*/agent/openclaw-agent.sqlite``, by agent id."""
    pattern = os.path.join(glob.escape(state_dir), "agents", "*", "agent", STORE_NAME)
    found = []
    for path in glob.glob(pattern):
        if os.path.isfile(path):
            agent_id = os.path.basename(os.path.dirname(os.path.dirname(path)))
            found.append((agent_id, os.path.abspath(path)))
    return sorted(found)


def store_for_session(state_dir: str | None, session_key: str | None, hint: str | None = None) -> str | None:
    """The store that holds a session, when its host keeps one (a JSONL-era host: None).

    ``hint`` is what the host or the database named: the store itself, the agent dir, or
    a file of the agent's ``sessions/`` folder (``sessions.json``, a transcript). Failing
    that, the agent id of an ``agent:<id>:...`` session key under ``state_dir``.
    """
    candidates: list[str] = []
    if hint:
        hint = os.path.abspath(os.path.expanduser(hint))
        if hint.endswith(".sqlite"):
            candidates.append(hint)
        elif os.path.basename(os.path.dirname(hint)) == "sessions":
            candidates.append(os.path.join(os.path.dirname(os.path.dirname(hint)), "agent", STORE_NAME))
        else:
            candidates.append(os.path.join(hint, STORE_NAME))
    agent_id = agent_id_of(session_key)
    if state_dir and agent_id:
        candidates.append(store_path(state_dir, agent_id))
    return next((path for path in candidates if os.path.isfile(path)), None)


def is_store_file(path: str) -> bool:
    """True when ``path`` starts with SQLite's header (how ``--file`` tells a store)."""
    try:
        with open_input(path) as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


# How the host itself names a session of its store where a file path used to be
# (its legacy ``sessionFile`` marker): ``sqlite:<agent id>:<session id>:<store path>``.
MARKER_PREFIX = "sqlite:"


def session_marker(store: str, session_id: str) -> str:
    """The host's ``sqlite:<agent>:<session>:<store>`` name of one session of ``store``.

    lcm records it as a conversation's source (``conversation_bootstrap_state``), never the
    private snapshot a session was read through.
    """
    path = os.path.abspath(store)
    return f"{MARKER_PREFIX}{agent_of(path) or 'main'}:{session_id}:{path}"


def parse_marker(text: str | None) -> tuple[str, str, str] | None:
    """``(agent id, session id, store path)`` of a ``sqlite:`` marker, else None."""
    if not text or not text.startswith(MARKER_PREFIX):
        return None
    agent, sep, rest = text[len(MARKER_PREFIX) :].partition(":")
    session_id, sep2, store = rest.partition(":")
    if not (sep and sep2 and agent and session_id and store):
        return None
    return agent, session_id, store


def holds_session(store: str, session_id: str) -> bool:
    """True when ``store`` is a readable host store with events of ``session_id``."""
    if not os.path.isfile(store):
        return False
    try:
        conn = open_store(store)
    except LcmError:
        return False
    try:
        row = conn.execute(
            "SELECT 1 FROM transcript_events WHERE session_id = ? LIMIT 1", (session_id,)
        ).fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return row is not None


def agent_of(store: str) -> str:
    """The agent id a store path names (``agents/<id>/agent/...``), else ``""``."""
    parent = os.path.dirname(os.path.abspath(store))
    if os.path.basename(parent) == "agent":
        return os.path.basename(os.path.dirname(parent))
    return ""


def _unreadable(store: str, why: str) -> LcmError:
    return LcmError(
        "HOST_STORE_UNREADABLE",
        f"Cannot read the OpenClaw session store {store}: {why}.",
        {"store": store},
    )


def open_store(store: str, timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A read-only connection to a host store, checked to hold ``transcript_events``."""
    path = os.path.abspath(store)
    if not os.path.isfile(path):
        raise LcmError(
            "HOST_STORE_NOT_FOUND",
            f"OpenClaw session store {path} does not exist or is not a regular file.",
            {"store": path},
        )
    if not os.access(path, os.R_OK):
        raise _unreadable(path, "permission denied")
    if not is_store_file(path):
        raise _unreadable(path, "not an SQLite database")
    try:
        conn = connect(path, uri=database_uri(path), timeout_ms=timeout_ms)
    except sqlite3.Error as exc:
        raise _unreadable(path, str(exc)) from None
    try:
        conn.text_factory = bytes
        conn.execute("PRAGMA query_only = ON")
        found = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'transcript_events'"
        ).fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise _unreadable(path, str(exc)) from None
    if found is None:
        conn.close()
        raise _unreadable(path, "no transcript_events table (not an OpenClaw session store)")
    return conn


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0].decode() for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def list_sessions(store: str) -> list[HostSession]:
    """Every session of a store that has transcript events, by session id.

    A session carries its key when it is the key's current session (``session_nodes``),
    as only the current session of a key does in the JSONL era's ``sessions.json``; an
    earlier window of the same key (reset, rollover) carries none. Without a
    ``session_nodes`` table, keys come from ``session_windows``. ``updated_at_ms`` comes
    from the window (else the newest event).
    """
    path = os.path.abspath(store)
    agent_id = agent_of(path)
    conn = open_store(path)
    try:
        tables = _tables(conn)
        windows: dict[str, tuple[str | None, int | None]] = {}
        if "session_windows" in tables:
            for sid, key, updated in conn.execute(
                "SELECT session_id, session_key, updated_at FROM session_windows"
            ):
                windows[_text(sid) or ""] = (_text(key), updated if isinstance(updated, int) else None)
        if "session_nodes" in tables:
            current = {
                _text(sid) or "": _text(key)
                for key, sid in conn.execute("SELECT session_key, current_session_id FROM session_nodes")
            }
            windows = {sid: (current.get(sid), updated) for sid, (_, updated) in windows.items()}
            for sid, key in current.items():
                windows.setdefault(sid, (key, None))
        counts = conn.execute(
            "SELECT session_id, COUNT(*), MAX(created_at) FROM transcript_events GROUP BY session_id"
        ).fetchall()
    except sqlite3.Error as exc:
        raise _unreadable(path, str(exc)) from None
    finally:
        conn.close()
    sessions = []
    for sid_raw, count, newest in counts:
        sid = _text(sid_raw) or ""
        key, updated = windows.get(sid, (None, None))
        if updated is None and isinstance(newest, int):
            updated = newest
        sessions.append(HostSession(sid, key, agent_id, path, updated, int(count)))
    return sorted(sessions, key=lambda s: s.session_id)


class HostArchive(NamedTuple):
    """One archived transcript (``session_transcript_archives``) of a reset or deleted session."""

    session_id: str
    generation: str
    session_key: str | None
    reason: str | None
    encoding: str | None
    archive_bytes: int
    store: str


def list_archives(store: str) -> list[HostArchive]:
    """The archived transcripts a store holds (none when it has no archive table)."""
    path = os.path.abspath(store)
    conn = open_store(path)
    try:
        if "session_transcript_archives" not in _tables(conn):
            return []
        rows = conn.execute(
            """SELECT session_id, generation, session_key, reason, encoding, length(archive_blob)
               FROM session_transcript_archives ORDER BY session_id, generation"""
        ).fetchall()
    except sqlite3.Error as exc:
        raise _unreadable(path, str(exc)) from None
    finally:
        conn.close()
    return [
        HostArchive(
            _text(sid) or "", _text(gen) or "", _text(key), _text(reason), _text(enc), int(size or 0), path
        )
        for sid, gen, key, reason, enc, size in rows
    ]


def _zstd_decoder() -> _Decoder:
    """``decode(frame, size)``: the frame's first ``size`` bytes, never more in memory.

    The frame header's content size, when it has one, must be ``size`` (checked before
    anything is decompressed), and the window may not exceed 2^:data:`WINDOW_LOG_MAX`.
    """
    global _decoder
    if _decoder is None:
        try:
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]

            def decode(blob: bytes, size: int) -> bytes | UndecodableEvent:
                declared = zstd.get_frame_info(blob).decompressed_size
                if declared is not None and declared != size:
                    return _claims(declared, size)
                options = {zstd.DecompressionParameter.window_log_max: WINDOW_LOG_MAX}
                stream = zstd.ZstdDecompressor(options=options)
                data = bytes(stream.decompress(blob, max_length=size + 1))
                if len(data) <= size and not stream.eof:
                    return UndecodableEvent("zstd_corrupt", "the frame does not end")
                return data

        except ImportError:
            import zstandard  # type: ignore[import-not-found,unused-ignore]

            context = zstandard.ZstdDecompressor(max_window_size=1 << WINDOW_LOG_MAX)

            def decode(blob: bytes, size: int) -> bytes | UndecodableEvent:
                declared = zstandard.frame_content_size(blob)  # -1: not in the header
                if declared not in (-1, size):
                    return _claims(declared, size)
                # With a content size zstandard allocates it (checked above), else max_output_size.
                return bytes(context.decompress(blob, max_output_size=size))

        _decoder = decode
    return _decoder


def _claims(declared: int, size: int) -> UndecodableEvent:
    return UndecodableEvent(
        "size_mismatch", f"the frame header says {declared} bytes, event_utf8_bytes says {size}"
    )


# One page of events: their types, and a payload only where its type and size are the host's.
_COLUMNS = f"""seq, typeof(event_json), typeof(event_zstd), typeof(event_utf8_bytes),
    CASE WHEN typeof(event_utf8_bytes) = 'integer' THEN event_utf8_bytes END,
    CASE WHEN typeof(event_zstd) = 'blob' THEN length(event_zstd) END,
    CASE WHEN typeof(event_json) = 'text' THEN event_json END,
    CASE WHEN typeof(event_json) = 'null' AND typeof(event_zstd) = 'blob'
         AND length(event_zstd) <= {MAX_EVENT_BYTES} THEN event_zstd END"""


def _decode_row(row: tuple[object, ...]) -> bytes | UndecodableEvent:
    """One row of :data:`_COLUMNS` as the event's UTF-8 bytes, or the marker saying why not."""
    _, json_type, zstd_type, size_type, size, zstd_length, event_json, event_zstd = row
    json_type, zstd_type, size_type = (_text(t) for t in (json_type, zstd_type, size_type))
    if json_type == "text" and isinstance(event_json, bytes):
        if len(event_json) > MAX_EVENT_BYTES:  # only without SQLite's length limit (3.10)
            return UndecodableEvent("too_large", f"event_json of {len(event_json)} bytes")
        return event_json
    if json_type != "null":
        return UndecodableEvent("wrong_type", f"event_json is {json_type}, not text")
    if zstd_type == "null" or zstd_length == 0:
        return UndecodableEvent("empty_event", "neither event_json nor event_zstd")
    if zstd_type != "blob":
        return UndecodableEvent("wrong_type", f"event_zstd is {zstd_type}, not blob")
    if size_type not in ("integer", "null"):
        return UndecodableEvent("wrong_type", f"event_utf8_bytes is {size_type}, not integer")
    if not isinstance(size, int) or size <= 0:
        return UndecodableEvent("size_mismatch", f"event_utf8_bytes is {size!r}")
    if size > MAX_EVENT_BYTES or not isinstance(event_zstd, bytes):
        return UndecodableEvent(
            "too_large",
            f"event_utf8_bytes {size}, frame {zstd_length} bytes; the host's cap is {MAX_EVENT_BYTES}",
        )
    try:
        data = _zstd_decoder()(event_zstd, size)
    except Exception as exc:  # noqa: BLE001 - every codec failure is a torn row
        return UndecodableEvent("zstd_corrupt", str(exc))
    if isinstance(data, UndecodableEvent):
        return data
    if len(data) != size:
        return UndecodableEvent("size_mismatch", f"decoded {len(data)} bytes, event_utf8_bytes says {size}")
    return data


class _Page(NamedTuple):
    rows: list[tuple[object, ...]]
    more: bool  # cut by PAGE_ROWS or PAGE_BYTES: rows may follow
    too_big: bool  # a row after the last one has a value over SQLite's length limit


def _page(conn: sqlite3.Connection, session_id: str, after: int | None, before_seq: int | None) -> _Page:
    """The next rows with an integer seq after ``after``: at most :data:`PAGE_ROWS` rows and
    :data:`PAGE_BYTES` stored bytes (plus the row that crosses it)."""
    where = "session_id = ? AND typeof(seq) = 'integer'"
    params: list[object] = [session_id]
    if after is not None:
        where += " AND seq > ?"
        params.append(after)
    if before_seq is not None:
        where += " AND seq < ?"
        params.append(before_seq)
    rows: list[tuple[object, ...]] = []
    held = 0
    cursor = conn.cursor()
    try:
        # Autocommit: the page is its own read transaction, ended when the cursor closes.
        # execute() already steps to the first row, so it too may hit the length limit.
        cursor.execute(
            f"SELECT {_COLUMNS} FROM transcript_events WHERE {where} ORDER BY seq LIMIT {PAGE_ROWS}", params
        )
        for row in cursor:
            rows.append(row)
            held += sum(len(v) for v in row[6:] if isinstance(v, bytes))
            if held >= PAGE_BYTES:
                return _Page(rows, True, False)
    except sqlite3.DataError:  # "string or blob too big": SQLITE_LIMIT_LENGTH
        return _Page(rows, True, True)
    finally:
        cursor.close()
    return _Page(rows, len(rows) == PAGE_ROWS, False)


def _next_row(
    conn: sqlite3.Connection, session_id: str, after: int | None
) -> tuple[int, tuple[object, ...] | None] | None:
    """The first row with an integer seq after ``after``, alone: its seq and its columns,
    or None for them when a value is over SQLite's length limit (None: no such row).

    A page's cursor reads one row ahead, so the row that hit the limit is found here.
    """
    where = "session_id = ? AND typeof(seq) = 'integer'" + (" AND seq > ?" if after is not None else "")
    params = (session_id,) if after is None else (session_id, after)
    found = conn.execute(
        f"SELECT seq FROM transcript_events WHERE {where} ORDER BY seq LIMIT 1", params
    ).fetchone()
    if found is None:
        return None
    seq = int(found[0])
    try:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM transcript_events WHERE session_id = ? AND seq = ?", (session_id, seq)
        ).fetchone()
    except sqlite3.DataError:
        return seq, None
    return seq, row


def _bad_seqs(conn: sqlite3.Connection, session_id: str) -> Iterator[tuple[SeqLabel, UndecodableEvent]]:
    """A ``bad_seq`` marker for each row whose seq is not an integer; the first
    :data:`MAX_BAD_SEQ_LABELS` named by their (short) seq value."""
    where = "session_id = ? AND typeof(seq) != 'integer'"
    count = int(
        conn.execute(f"SELECT COUNT(*) FROM transcript_events WHERE {where}", (session_id,)).fetchone()[0]
    )
    if not count:
        return
    try:
        labels = conn.execute(
            f"""SELECT typeof(seq), CASE WHEN typeof(seq) = 'real' THEN seq
                   WHEN typeof(seq) = 'text' AND length(seq) <= 40 THEN seq END
                FROM transcript_events WHERE {where} ORDER BY seq LIMIT {MAX_BAD_SEQ_LABELS}""",
            (session_id,),
        ).fetchall()
    except sqlite3.DataError:
        labels = []
    for index in range(count):
        kind, value = labels[index] if index < len(labels) else (b"", None)
        label: SeqLabel = (
            _text(value) if isinstance(value, bytes) else value if isinstance(value, float) else None
        )
        yield label, UndecodableEvent("bad_seq", f"seq is {_text(kind) or 'not an integer'}")


def _iter_raw(
    store: str, session_id: str, before_seq: int | None = None
) -> Iterator[tuple[SeqLabel, bytes | UndecodableEvent]]:
    path = os.path.abspath(store)
    conn = open_store(path)
    # No value over the host's cap is ever materialized, whatever a row claims (Python
    # 3.11+; on 3.10 an over-cap event_json is read, then refused by _decode_row).
    if hasattr(conn, "setlimit"):
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_EVENT_BYTES)
    try:
        last: int | None = None
        while True:
            try:
                page = _page(conn, session_id, last, before_seq)
            except sqlite3.Error as exc:
                raise _unreadable(path, str(exc)) from None
            for row in page.rows:
                yield int(row[0]), _decode_row(row)  # type: ignore[call-overload]
            if page.rows:
                last = int(page.rows[-1][0])  # type: ignore[call-overload]
            if page.too_big:
                try:
                    following = _next_row(conn, session_id, last)
                except sqlite3.Error as exc:
                    raise _unreadable(path, str(exc)) from None
                if following is None or (before_seq is not None and following[0] >= before_seq):
                    break
                last, columns = following
                if columns is None:
                    yield (
                        last,
                        UndecodableEvent(
                            "too_large", f"a value over the host's cap of {MAX_EVENT_BYTES} bytes"
                        ),
                    )
                else:
                    yield last, _decode_row(columns)
            elif not page.more:
                break
        if before_seq is None:  # rows without an integer seq come before no turn
            try:
                yield from _bad_seqs(conn, session_id)
            except sqlite3.Error as exc:
                raise _unreadable(path, str(exc)) from None
    finally:
        conn.close()


def iter_events(store: str, session_id: str) -> Iterator[tuple[SeqLabel, str]]:
    """``(seq, event JSON text)`` of one session, in seq order.

    An undecodable row comes as ``(seq, UndecodableEvent)``; invalid UTF-8 is replaced
    (U+FFFD), as a JSONL reader would. Rows whose seq is not an integer come last.
    """
    for seq, data in _iter_raw(store, session_id):
        if isinstance(data, UndecodableEvent):
            yield seq, data
        else:
            yield seq, data.decode("utf-8", "replace")


def snapshot(store: str, session_id: str, dest_dir: str, *, before_seq: int | None = None) -> Snapshot:
    """Write one session's events as a JSONL transcript in ``dest_dir`` (see :class:`Snapshot`).

    With ``before_seq``, only the events before that seq (the history before a turn).

    One line per event, in seq order. Raw newlines can only be whitespace between JSON
    tokens, so they become spaces and one event stays one line. The file is created with
    ``O_EXCL`` and mode 0600; it is removed again if reading fails.
    """
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:80] or "session"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(1000):
        path = os.path.join(dest_dir, f"{safe}.{os.getpid()}.{attempt}.jsonl")
        try:
            fd = os.open(path, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - a thousand leftovers of this pid
        raise FileExistsError(os.path.join(dest_dir, f"{safe}.jsonl"))
    seqs: list[SeqLabel] = []
    errors: dict[SeqLabel, str] = {}
    size = 0
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            for seq, data in _iter_raw(store, session_id, before_seq):
                if isinstance(data, UndecodableEvent):
                    errors[seq] = data.reason
                    line = data.encode("utf-8", "replace")
                else:
                    line = data.replace(b"\n", b" ").replace(b"\r", b" ")
                out.write(line)
                out.write(b"\n")
                size += len(line) + 1
                seqs.append(seq)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    return Snapshot(path, seqs, errors, size)


def write_snapshot(store: str, session_id: str, dest_dir: str) -> str:
    """One session's events as a JSONL file in ``dest_dir`` (mode 0600, O_EXCL); its path."""
    return snapshot(store, session_id, dest_dir).path
