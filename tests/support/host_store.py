"""OpenClaw SQLite session stores (host 2026.7.2 and later) for tests and benchmarks.

The DDL below is the host's shape for just the tables and columns `lcm` reads (measured on
a real 2026.9.6 ``openclaw-agent.sqlite``): ``session_nodes``, ``session_windows``,
``transcript_events`` and ``session_transcript_archives``. Events are stored as the host
stores them: ``event_json`` as is, or, for an event of at least 1024 UTF-8 bytes whose
zstd frame (level 1, with checksum) saves at least 10%, ``event_zstd`` plus
``event_utf8_bytes``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HOST_DDL = (
    """CREATE TABLE IF NOT EXISTS session_nodes (
  session_key TEXT NOT NULL PRIMARY KEY,
  current_session_id TEXT NOT NULL,
  entry_json TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT""",
    """CREATE TABLE IF NOT EXISTS session_windows (
  session_id TEXT NOT NULL PRIMARY KEY,
  session_key TEXT NOT NULL,
  previous_session_id TEXT,
  reason TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  status TEXT
) STRICT""",
    """CREATE TABLE IF NOT EXISTS transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT,
  created_at INTEGER NOT NULL,
  event_zstd BLOB,
  event_utf8_bytes INTEGER,
  navigation_json TEXT,
  PRIMARY KEY (session_id, seq)
) STRICT""",
    """CREATE TABLE IF NOT EXISTS session_transcript_archives (
  session_id TEXT NOT NULL,
  generation TEXT NOT NULL,
  session_key TEXT NOT NULL,
  reason TEXT NOT NULL,
  encoding TEXT NOT NULL,
  archive_blob BLOB NOT NULL,
  archive_sha256 TEXT NOT NULL,
  archive_name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, generation)
) STRICT""",
)
COMPRESS_AT = 1024
NAVIGATION = '{"version":1}'


def compress(data: bytes) -> bytes:
    """A zstd frame as the host writes it (level 1, checksum flag)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]

        return bytes(zstd.compress(data, level=1, options={zstd.CompressionParameter.checksum_flag: 1}))
    except ImportError:
        import zstandard

        return bytes(zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data))


def create_store(path: str | Path) -> sqlite3.Connection:
    """A new (or existing) store in WAL mode with the host's tables."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in HOST_DDL:
        conn.execute(statement)
    return conn


def event_row(text: str, *, compress_at: int = COMPRESS_AT) -> tuple[str | None, bytes | None, int]:
    """``(event_json, event_zstd, event_utf8_bytes)`` as the host would store ``text``."""
    data = text.encode("utf-8")
    if len(data) >= compress_at:
        frame = compress(data)
        if len(frame) <= len(data) * 0.9:
            return None, frame, len(data)
    return text, None, len(data)


def add_session(
    conn: sqlite3.Connection,
    session_id: str,
    events: Iterable[str],
    *,
    session_key: str | None = None,
    updated_at: int = 1_780_000_000_000,
    compress_at: int = COMPRESS_AT,
) -> int:
    """Store one session's events (seq from 0) and its window/node rows; the event count."""
    key = session_key or f"agent:main:explicit:{session_id}"
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT OR REPLACE INTO session_nodes VALUES (?, ?, ?, ?)",
        (key, session_id, json.dumps({"sessionId": session_id, "updatedAt": updated_at}), updated_at),
    )
    conn.execute(
        "INSERT OR REPLACE INTO session_windows (session_id, session_key, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (session_id, key, updated_at - 1000, updated_at),
    )
    count = 0
    for seq, text in enumerate(events):
        event_json, frame, size = event_row(text, compress_at=compress_at)
        conn.execute(
            "INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, seq, event_json, updated_at, frame, size, NAVIGATION if frame else None),
        )
        count += 1
    conn.execute("COMMIT")
    return count


def jsonl_events(path: str | Path) -> list[str]:
    """The non-blank lines of a JSONL transcript (each one event)."""
    return [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def store_from_jsonl(
    store: str | Path,
    transcripts: Iterable[tuple[str | Path, str]],
    *,
    compress_at: int = COMPRESS_AT,
    updated_at: int = 1_780_000_000_000,
) -> Path:
    """A store holding the events of each ``(jsonl path, session id)``, as the host imports them."""
    conn = create_store(store)
    try:
        for path, session_id in transcripts:
            add_session(conn, session_id, jsonl_events(path), compress_at=compress_at, updated_at=updated_at)
    finally:
        conn.close()
    return Path(store)


# --- stores built to hurt the reader ------------------------------------------------------

CAP = 4 * 1024 * 1024  # the host's cap on one event's UTF-8 bytes
GIB = 1 << 30


def zstd_bomb(size: int, *, content_size: bool = True) -> bytes:
    """A zstd frame of ``size`` bytes of ``a`` (a few KB per GiB), built in 1 MiB steps."""
    import io

    import zstandard

    out = io.BytesIO()
    compressor = zstandard.ZstdCompressor(level=1, write_content_size=content_size)
    with compressor.stream_writer(out, size=size if content_size else -1, closefd=False) as writer:
        chunk = b"a" * (1 << 20)
        for _ in range(size >> 20):
            writer.write(chunk)
    return out.getvalue()


def at_cap_event(number: int, parent: str | None) -> str:
    """A user message event of exactly :data:`CAP` UTF-8 bytes (ASCII, nothing escaped)."""
    head = {
        "type": "message",
        "id": f"cap{number:05d}",
        "parentId": parent,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": "user", "content": ""},
    }
    room = CAP - len(json.dumps(head, separators=(",", ":")))
    head["message"] = {"role": "user", "content": ("a long paste " * (room // 13 + 1))[:room]}
    return json.dumps(head, separators=(",", ":"))


def hostile_store(
    path: str | Path, good: list[str], *, at_cap: int = 24, plain_at_cap: int = 6
) -> dict[str, Any]:
    """A store (its events table not STRICT, as a broken or hostile file may be) whose
    session ``h1`` holds the ``good`` events (seq 0 up), then:

    - ``bomb-header``: a frame whose header claims 1 GiB, ``event_utf8_bytes`` 100;
    - ``bomb-declared``: the same frame, ``event_utf8_bytes`` 1 GiB;
    - ``bomb-stream``: 1 GiB without a content size, ``event_utf8_bytes`` at the cap;
    - ``at_cap`` compressed and ``plain_at_cap`` plain events of the cap's size each;
    - ``plain-over``: plain ``event_json`` of twice the cap;
    - rows with a non-numeric seq, a NULL payload and wrong-typed columns.

    Returns the seq (or stored seq value) of each named row.
    """
    conn = create_store(path)
    conn.execute("DROP TABLE transcript_events")
    conn.execute(HOST_DDL[2].replace(") STRICT", ")").replace("seq INTEGER NOT NULL", "seq INTEGER"))
    add_session(conn, "h1", good, compress_at=200)
    seq = len(good)
    named: dict[str, Any] = {}

    def put(name: str, event_json: Any, frame: Any, size: Any, *, at: Any = None) -> None:
        nonlocal seq
        where = seq if at is None else at
        conn.execute(
            "INSERT INTO transcript_events VALUES ('h1', ?, ?, 0, ?, ?, NULL)",
            (where, event_json, frame, size),
        )
        named[name] = where
        if at is None:
            seq += 1

    bomb = zstd_bomb(GIB)
    put("bomb-header", None, bomb, 100)
    put("bomb-declared", None, bomb, GIB)
    put("bomb-stream", None, zstd_bomb(GIB, content_size=False), CAP)
    parent = json.loads(good[-1])["id"]  # the big events continue the active branch
    for number in range(at_cap):
        text = at_cap_event(number, parent)
        put(f"cap-{number}", None, compress(text.encode()), len(text.encode()))
        parent = f"cap{number:05d}"
    for number in range(plain_at_cap):
        put(f"plain-cap-{number}", at_cap_event(1000 + number, parent), None, None)
        parent = f"cap{1000 + number:05d}"
    put("plain-over", "x" * (2 * CAP), None, None)
    put("null-payload", None, None, None)
    put("zstd-as-text", None, "not a frame", 11)
    put("json-as-blob", b'{"type":"message"}', None, None)
    put("size-as-text", None, compress(good[-1].encode()), "many")
    put("seq-text", good[-1], None, None, at="seven")
    put("seq-null", good[-1], None, None, at=None)
    conn.execute("UPDATE transcript_events SET seq = NULL WHERE seq = ?", (named["seq-null"],))
    named["seq-null"] = None
    put("seq-real", good[-1], None, None, at=2.5)
    last = {
        "type": "message",
        "id": "after0001",
        "parentId": parent,
        "timestamp": "2026-03-01T11:00:00.000Z",
        "message": {"role": "user", "content": "the row after the bad ones"},
    }
    conn.execute(
        "INSERT INTO transcript_events VALUES ('h1', ?, ?, 0, NULL, NULL, NULL)", (seq, json.dumps(last))
    )
    named["after"] = seq  # a good row after every bad one
    conn.close()
    return named
