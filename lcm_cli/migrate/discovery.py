"""Which transcript files a backfill reads, and which session key each session has.

Discovery follows the reference importer: every ``--file``; every ``*.jsonl`` directly in
each ``--sessions-dir``; and only when neither is given, ``<state dir>/agents/*/sessions/*.jsonl``.
Paths are de-duplicated and sorted; ``--since`` keeps files modified at or after the instant
(unreadable files are kept so they are reported); ``--limit`` caps the files kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

SESSIONS_INDEX = "sessions.json"


def discover_files(
    state_dir: str,
    files: Iterable[str] = (),
    sessions_dirs: Iterable[str] = (),
    *,
    since_ms: int | None = None,
    limit: int | None = None,
) -> list[str]:
    """Absolute transcript paths to read, in a stable order."""
    chosen: list[str] = [os.path.abspath(f) for f in files]
    dirs = [os.path.abspath(d) for d in sessions_dirs]
    for directory in dirs:
        chosen.extend(_jsonl_in(directory))
    if not chosen and not dirs:
        agents = os.path.join(state_dir, "agents")
        for agent in sorted(_entries(agents)):
            if os.path.isdir(os.path.join(agents, agent)):
                chosen.extend(_jsonl_in(os.path.join(agents, agent, "sessions")))
    kept: list[str] = []
    readable = 0
    for path in sorted(set(chosen)):
        if limit is not None and readable >= limit:
            break
        try:
            info = os.stat(path)
        except OSError:
            kept.append(path)  # reported as unreadable, never silently dropped
            continue
        if since_ms is not None and info.st_mtime * 1000 < since_ms:
            continue
        kept.append(path)
        readable += 1
    return kept


def _entries(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _jsonl_in(directory: str) -> list[str]:
    return [
        os.path.join(directory, name)
        for name in _entries(directory)
        if name.endswith(".jsonl") and os.path.isfile(os.path.join(directory, name))
    ]


def session_keys(state_dir: str, sessions_dirs: Iterable[str] = ()) -> dict[str, str]:
    """Session id -> session key, from every agent's ``sessions.json`` index.

    OpenClaw keeps ``{"<session key>": {"sessionId": ..., "sessionFile"?: ...}}`` beside the
    transcripts. When several keys name one session id the smallest key wins, so the
    answer does not depend on file order. Unreadable or malformed indexes are ignored.
    """
    indexes = [os.path.join(os.path.abspath(d), SESSIONS_INDEX) for d in sessions_dirs]
    agents = os.path.join(state_dir, "agents")
    indexes += [os.path.join(agents, a, "sessions", SESSIONS_INDEX) for a in sorted(_entries(agents))]
    mapping: dict[str, str] = {}
    for index in indexes:
        try:
            with open(index, encoding="utf-8") as handle:
                store = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(store, dict):
            continue
        for key, entry in store.items():
            session_id = entry.get("sessionId") if isinstance(entry, dict) else None
            if isinstance(key, str) and key.strip() and isinstance(session_id, str) and session_id.strip():
                sid = session_id.strip()
                if sid not in mapping or key < mapping[sid]:
                    mapping[sid] = key.strip()
    return mapping
