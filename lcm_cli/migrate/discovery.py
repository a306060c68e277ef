"""Which transcript files a backfill reads, and which session key each session has.

Discovery follows the reference importer: every ``--file``; every ``*.jsonl`` directly in
each ``--sessions-dir``; and only when neither is given, ``<state dir>/agents/*/sessions/*.jsonl``.
Paths are de-duplicated and sorted as the reference sorts them, with JavaScript's
``localeCompare`` (:mod:`lcm_cli.engine.core.collation`), so conversation and message ids come
out in the same order; ``--since`` keeps files modified at or after the instant
(unreadable files are kept so they are reported); ``--limit`` caps the files kept.
Symbolic links found while listing a directory (a linked ``*.jsonl``, or a linked agent
directory) are not followed, as the reference does not follow them; each is reported as
skipped (reason ``symlink``). A ``--file`` that is a link is read, as the reference does.

:func:`discover_sources` adds OpenClaw's SQLite session stores (host 2026.7.2 and later):
every ``--store``, every ``--file`` whose first bytes are SQLite's header, and, when no
``--file``/``--sessions-dir``/``--store`` is given, ``<state dir>/agents/*/agent/
openclaw-agent.sqlite``. Each session of a store is one source; ``--since`` compares the
session's ``updated_at``. It also sets aside, each with a report of its own, side files
(:func:`is_side_file`), JSONL transcripts whose session the store holds too (the host
imports JSONL into its store on upgrade: the store's copy is read), archived transcripts
(reported, not imported) and stores that cannot be read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from lcm_cli.engine.core.collation import sort_key
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input_text
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.transcript import host_store

SESSIONS_INDEX = "sessions.json"


def discover_files(
    state_dir: str,
    files: Iterable[str] = (),
    sessions_dirs: Iterable[str] = (),
    *,
    since_ms: int | None = None,
    limit: int | None = None,
    links: list[str] | None = None,
    agent: str | None = None,
) -> list[str]:
    """Absolute transcript paths to read, in the reference's order.

    ``links``: when given, receives the symbolic links that listing skipped. ``agent``:
    the state dir's transcripts of that agent only (a per-agent database, docs/agents.md).
    """
    chosen: list[str] = [os.path.abspath(f) for f in files]
    dirs = [os.path.abspath(d) for d in sessions_dirs]
    skipped_links: list[str] = [] if links is None else links
    for directory in dirs:
        chosen.extend(_jsonl_in(directory, skipped_links))
    if not chosen and not dirs:
        agents = os.path.join(state_dir, "agents")
        for name in sorted(_entries(agents)):
            if agent is not None and name != agent:
                continue
            agent_dir = os.path.join(agents, name)
            if os.path.islink(agent_dir):
                if os.path.isdir(agent_dir):
                    skipped_links.append(agent_dir)
            elif os.path.isdir(agent_dir):
                chosen.extend(_jsonl_in(os.path.join(agent_dir, "sessions"), skipped_links))
    skipped_links.sort(key=locale_order)
    kept: list[str] = []
    readable = 0
    for path in sorted(set(chosen), key=locale_order):
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


# Files the host keeps beside a transcript (never a conversation of their own).
SIDE_SUFFIXES = (".trajectory.jsonl",)


class StoreSource(NamedTuple):
    """One session of a host SQLite store, and the private dir its snapshot is written to."""

    session: host_store.HostSession
    stage_dir: str


class Discovery(NamedTuple):
    """What to read (JSONL paths and store sessions) and the reports decided without reading."""

    sources: list[str | host_store.HostSession]
    reports: list[dict[str, Any]]


def is_side_file(path: str) -> bool:
    """True for a file the host writes beside a transcript, such as ``<id>.trajectory.jsonl``.

    The rule: the file's first non-blank line is not a session header, and either its
    name ends with a known side suffix (:data:`SIDE_SUFFIXES`) or it is named
    ``<prefix>.<tag>.jsonl`` with ``<prefix>.jsonl`` beside it. A file with a session
    header is always a transcript, whatever its name.
    """
    name = os.path.basename(path)
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    if "." not in stem:
        return False
    prefix = stem.split(".", 1)[0]
    known = name.endswith(SIDE_SUFFIXES)
    if not known and not os.path.isfile(os.path.join(os.path.dirname(path), prefix + ".jsonl")):
        return False
    from lcm_cli.engine.transcript.header import read_session_header

    try:
        return read_session_header(path) is None
    except LcmError:
        return False  # unreadable: reported as such by the reader


def discover_sources(
    state_dir: str,
    files: Iterable[str] = (),
    sessions_dirs: Iterable[str] = (),
    stores: Iterable[str] = (),
    *,
    since_ms: int | None = None,
    limit: int | None = None,
    agent: str | None = None,
) -> Discovery:
    """JSONL transcripts and store sessions to read, in a stable order, and set-aside reports.

    Order: JSONL paths (sorted), then store sessions by store path and session id.
    ``--limit`` counts both kinds; set-aside files do not count. ``agent``: when nothing is
    named, the state dir's transcripts and store of that agent only, so a backfill into
    per-agent database files is split by agent.
    """
    files = list(files)
    dirs = list(sessions_dirs)
    store_paths = [os.path.abspath(s) for s in stores]
    jsonl_given = []
    for path in files:
        if host_store.is_store_file(path):
            store_paths.append(os.path.abspath(path))
        else:
            jsonl_given.append(path)
    links: list[str] = []
    if not files and not dirs and not store_paths:
        store_paths = [path for owner, path in host_store.find_stores(state_dir) if agent in (None, owner)]
        jsonl = discover_files(state_dir, since_ms=since_ms, links=links, agent=agent)
    elif jsonl_given or dirs:
        jsonl = discover_files(state_dir, jsonl_given, dirs, since_ms=since_ms, links=links)
    else:
        jsonl = []
    reports: list[dict[str, Any]] = []
    for link in links:
        report = _set_aside(link, "skipped", "symlink")
        hint = "--sessions-dir <it>/sessions" if os.path.isdir(link) else "--file"
        report["warnings"].append(
            f"a symbolic link to {os.path.realpath(link)}; not followed (name it with {hint} to import it)"
        )
        reports.append(report)
    sessions: list[host_store.HostSession] = []
    for store in sorted(set(store_paths)):
        try:
            found = host_store.list_sessions(store)
            archives = host_store.list_archives(store)
        except LcmError as exc:
            reports.append(_set_aside(store, "error", "unreadable-store", error=exc.message, source="sqlite"))
            continue
        for session in found:
            if since_ms is None or session.updated_at_ms is None or session.updated_at_ms >= since_ms:
                sessions.append(session)
        for archive in archives:
            report = _set_aside(store, "skipped", "archived-transcript", source="sqlite-archive")
            report.update(sessionId=archive.session_id, sessionKey=archive.session_key)
            report["archive"] = {
                "generation": archive.generation,
                "reason": archive.reason,
                "encoding": archive.encoding,
                "bytes": archive.archive_bytes,
            }
            report["warnings"].append(
                "archived transcript of a reset or deleted session: reported, not imported"
            )
            reports.append(report)
    in_store = {s.session_id: s for s in sessions}
    kept: list[str | host_store.HostSession] = []
    for path in jsonl:
        if is_side_file(path):
            report = _set_aside(path, "skipped", "side-file")
            report["warnings"].append("a file the host keeps beside a transcript; not a conversation")
            reports.append(report)
            continue
        if in_store:
            from lcm_cli.engine.transcript.header import read_header

            try:
                session_id = read_header(path).session_id
            except LcmError:
                session_id = None
            if session_id in in_store:
                report = _set_aside(path, "skipped", "in-host-store")
                report["sessionId"] = session_id
                report["warnings"].append(
                    f"session {session_id} is also in {in_store[session_id].store}; imported from there"
                )
                reports.append(report)
                continue
        kept.append(path)
    kept.extend(sessions)
    if limit is not None:
        kept = _limited(kept, limit)
    return Discovery(kept, reports)


def _limited(sources: list[str | host_store.HostSession], limit: int) -> list[str | host_store.HostSession]:
    out: list[str | host_store.HostSession] = []
    readable = 0
    for source in sources:
        if readable >= limit:
            break
        out.append(source)
        if isinstance(source, str) and not os.path.isfile(source):
            continue  # unreadable files are reported and do not count, as discover_files does
        readable += 1
    return out


def file_report(path: str, *, source: str = "jsonl") -> dict[str, Any]:
    """A source's per-file report before anything is read from it (every count zero)."""
    return {
        "file": path,
        "source": source,
        "status": "error",
        "sessionId": None,
        "sessionKey": None,
        "conversationId": None,
        "conversation": None,
        "candidateMessages": 0,
        "importedMessages": 0,
        "skippedMessages": 0,
        "parts": 0,
        "bytes": 0,
        "skippedLines": {"count": 0, "byReason": {}, "lines": []},
        "warnings": [],
    }


def _set_aside(
    path: str, status: str, reason: str, *, error: str | None = None, source: str = "jsonl"
) -> dict[str, Any]:
    report = {**file_report(path, source=source), "status": status, "reason": reason}
    if error is not None:
        report["error"] = error
    return report


def _entries(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _jsonl_in(directory: str, links: list[str]) -> list[str]:
    """Regular ``*.jsonl`` files directly in ``directory``; linked ones go to ``links``."""
    found = []
    for name in _entries(directory):
        path = os.path.join(directory, name)
        if not name.endswith(".jsonl"):
            continue
        if os.path.islink(path):
            links.append(path)
        elif os.path.isfile(path):
            found.append(path)
    return found


def locale_order(path: str) -> tuple[tuple[int, ...], str]:
    """Sort key of the reference's path order (``localeCompare``); code points break ties."""
    return sort_key(path), path


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
            with open_input_text(index) as handle:
                store = loads_bounded(handle.read())
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
