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
