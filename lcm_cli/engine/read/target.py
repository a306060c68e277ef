"""The session or conversation a call names: ``--conversation-id``, else the host's
``--session-key`` / ``--session-id``, with the session-exclusion policy applied first.

Shared by the operations that act on one session's conversation (compaction, assembly).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import SESSION_ID, Request, Selector
from lcm_cli.engine.db.sessions import find_active
from lcm_cli.engine.read.conversation_rows import find_conversation, identity_of, require_lcm_tables


class Target(NamedTuple):
    """The session a call names and its conversation (None when it has none yet)."""

    row: Any
    session_id: str | None
    session_key: str | None
    excluded: str | None  # "excluded", "stateless" or None (docs/reference/engine.md §1.3)


def resolve_target(ctx: Context, req: Request) -> Target:
    """Resolve ``--conversation-id``, else ``--session-key`` / ``--session-id``.

    A conversation id must exist (CONVERSATION_NOT_FOUND). A session the host names may
    have no conversation yet: the operation then reports that instead of failing. An
    ignored session is recognised before the database is read.
    """
    policy = ctx.engine_settings.session_policy()
    session_id = (req[SESSION_ID] or "").strip() or None
    if req.selector is not None and req.selector.kind == "conversationId":
        row = find_conversation(ctx, req.selector)
        sid, key = row["session_id"], row["session_key"]
        return Target(row, sid, key, policy.exclusion(sid, key))
    key = str(req.selector.value) if req.selector is not None else None
    if key is None and session_id is None:
        raise LcmError(
            "MISSING_SELECTOR",
            "Name the conversation: pass --conversation-id <id>, --session-key <key> or "
            "--session-id <id> (find them with `lcm conversations list`).",
        )
    excluded = policy.exclusion(session_id, key)
    if excluded == "excluded":
        return Target(None, session_id, key, excluded)
    if session_id is not None and not os.path.exists(ctx.database_path):
        # The host names its session before anything was stored (a fresh state dir):
        # there is no conversation yet, which is not an error.
        return Target(None, session_id, key, excluded)
    require_lcm_tables(ctx)
    if not (
        ctx.probe.has_column("conversations", "active")
        and ctx.probe.has_column("conversations", "session_key")
    ):
        # A file older than session keys and archiving: only the key lookup of the read
        # commands applies (it finds nothing without the column).
        found = None
    else:
        found = find_active(ctx.db, session_id, key)
    if found is None and key is not None and req.selector is not None:
        # No active row: an archived conversation of the key still answers a read.
        try:
            found_row = find_conversation(ctx, req.selector)
        except LcmError:
            found_row = None
        return Target(found_row, session_id, key, excluded)
    if found is None:
        return Target(None, session_id, key, excluded)
    row = find_conversation(ctx, Selector("conversationId", int(found[0])))
    return Target(row, session_id or row["session_id"], key or row["session_key"], excluded)


def target_identity(target: Target) -> dict[str, Any]:
    """The envelope's ``conversation`` identity, or the named session when it has none."""
    if target.row is not None:
        return {"conversation": identity_of(target.row)}
    return {"conversation": None, "sessionId": target.session_id, "sessionKey": target.session_key}
