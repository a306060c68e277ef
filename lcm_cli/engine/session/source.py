"""Where a conversation's history lives outside lcm.db, and whether it is still there.

A conversation's bootstrap checkpoint records its source: a JSONL transcript path (hosts
before 2026.7.2), or the host's own ``sqlite:<agent>:<session>:<store>`` marker for a
session kept in ``openclaw-agent.sqlite`` (later hosts). A host upgrade to SQLite imports
each JSONL transcript into the agent's store and then moves the file into an archive
folder, so a recorded JSONL path that is gone may still be a live session.
"""

from __future__ import annotations

import os

from lcm_cli.engine.config.paths import locate_transcript
from lcm_cli.engine.transcript.host_store import holds_session, parse_marker, store_path


def source_exists(recorded: str, state_dir: str | None = None) -> bool:
    """True while the recorded source still holds the session's history.

    A ``sqlite:`` marker: the store (or the same agent's store under ``state_dir``, when
    the state dir moved) has events of the session. A JSONL path: the file exists (also
    found again under a moved state dir), or the agent's store holds the session the file
    was named after (the host imported it and archived the file).
    """
    marker = parse_marker(recorded)
    if marker is not None:
        agent, session_id, store = marker
        if holds_session(store, session_id):
            return True
        return bool(state_dir) and holds_session(store_path(str(state_dir), agent), session_id)
    if os.path.exists(locate_transcript(recorded, state_dir)):
        return True
    return _imported_by_host(recorded, state_dir)


def _imported_by_host(recorded: str, state_dir: str | None) -> bool:
    """A ``.../agents/<agent>/sessions/<session>.jsonl`` whose session the agent's store holds."""
    parts = recorded.replace("\\", "/").split("/")
    name = parts[-1]
    if not name.endswith(".jsonl") or len(parts) < 4 or parts[-2] != "sessions" or parts[-4] != "agents":
        return False
    agent, session_id = parts[-3], name[: -len(".jsonl")]
    roots = ["/".join(parts[:-4]) or "/"]  # the state dir the path was recorded under
    if state_dir:
        roots.append(str(state_dir))
    return any(holds_session(store_path(root, agent), session_id) for root in roots)
