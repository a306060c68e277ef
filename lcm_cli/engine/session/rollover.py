"""Bootstrap's rollover guards: a session key whose runtime session changed (§3.1 step 2).

When the host starts a new runtime session under the same session key without telling
the engine (no ``/reset``, no session end), the key's active conversation still belongs
to the previous session and tracks that session's transcript. Importing the new
transcript into it would splice two sessions into one conversation, so bootstrap first
decides which of three cases it is in:

``stale-key``
    the previous transcript (the checkpoint's path) no longer exists: the old session is
    gone. Its conversation is archived (``archive_cause = rollover-fallback``) and the
    new session gets a fresh one.
``proven``
    the previous transcript still exists, but the new file proves it is a fresh session:
    its header id is the new session id and differs from the header id the checkpoint
    recorded. Same as above: archive, then a fresh conversation.
``ambiguous``
    neither: bootstrap refuses (``bootstrapped: false``, reason
    :data:`AMBIGUOUS_REASON`) and writes nothing; a ``/reset`` or a session end with the
    new ids settles it.

Only a conversation with a checkpoint on another path is a rollover: the same key with
a new session id and the same transcript is a plain rebinding (§2.1 step 5).
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from lcm_cli.engine.db.sessions import is_isolated_cron

AMBIGUOUS_REASON = "ambiguous session rollover"
ROLLOVER_CAUSE = "rollover-fallback"


class Rollover(NamedTuple):
    """What the guard decided: ``kind`` is ``stale-key``, ``proven`` or ``ambiguous``."""

    kind: str
    conversation_id: int
    previous_session_id: str
    previous_file: str


def check_rollover(
    conn: sqlite3.Connection, session_id: str, session_key: str | None, path: str
) -> Rollover | None:
    """The rollover the key's active conversation is in, or None (no rollover)."""
    from lcm_cli.engine.session.source import source_exists
    from lcm_cli.engine.transcript.header import read_header

    key = (session_key or "").strip() or None
    if key is None:
        return None
    row = conn.execute(
        "SELECT c.conversation_id, c.session_id, s.session_file_path, s.session_header_id FROM conversations c"
        " JOIN conversation_bootstrap_state s ON s.conversation_id = c.conversation_id"
        " WHERE c.session_key = ? AND c.active = 1"
        " ORDER BY julianday(c.created_at) DESC, c.conversation_id DESC LIMIT 1",
        (key,),
    ).fetchone()
    if row is None:
        return None
    cid, previous_id, previous_file, previous_header = int(row[0]), str(row[1]), str(row[2]), row[3]
    if previous_id == session_id.strip() or previous_file == path:
        return None
    if not source_exists(previous_file):
        kind = "stale-key"
    else:
        header_id = read_header(path).header_id
        fresh = header_id is not None and header_id == session_id.strip() and header_id != previous_header
        kind = "proven" if fresh else "ambiguous"
    return Rollover(kind, cid, previous_id, previous_file)


def archive_for_rollover(conn: sqlite3.Connection, conversation_id: int) -> None:
    """Archive the previous session's conversation (keeping an earlier archive cause)."""
    conn.execute(
        "UPDATE conversations SET active = 0, archived_at = COALESCE(archived_at, datetime('now')),"
        " archive_cause = COALESCE(archive_cause, ?), updated_at = datetime('now') WHERE conversation_id = ?",
        (ROLLOVER_CAUSE, conversation_id),
    )


STALE_CRON_REASON = "stale isolated-cron callback"


def stale_cron_run(conn: sqlite3.Connection, session_id: str, session_key: str | None) -> int | None:
    """The archived conversation of a late callback from an earlier cron run, else None.

    §3.6 step 2: an isolated cron key resolves by the runtime session id first. When that
    id has no active conversation but an archived one, the callback belongs to a run that
    is over; storing it would rebind the key's current run to the old session.
    """
    if not is_isolated_cron(session_key):
        return None
    ident = session_id.strip()
    active = conn.execute(
        "SELECT 1 FROM conversations WHERE session_id = ? AND active = 1 LIMIT 1", (ident,)
    ).fetchone()
    if active is not None:
        return None
    archived = conn.execute(
        "SELECT conversation_id FROM conversations WHERE session_id = ? AND active = 0"
        " ORDER BY conversation_id DESC LIMIT 1",
        (ident,),
    ).fetchone()
    return int(archived[0]) if archived is not None else None
