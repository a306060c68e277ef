"""Junk conversation classes (the reference's doctor cleaners, for every agent id) and
orphaned conversations (their transcript file is gone).

Shared by the scan (`junk.*`, `conversations.orphaned`), `lcm doctor clean` and
`lcm prune --class`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, Scope, skipped

if TYPE_CHECKING:
    from lcm_cli.engine.context import Context

CLASSES: dict[str, dict[str, str]] = {
    "archived_subagents": {
        "check": "junk.archived-subagents",
        "label": "Archived subagent sessions",
        "description": "archived conversations whose session key is agent:<id>:subagent:...",
    },
    "cron_sessions": {
        "check": "junk.cron-sessions",
        "label": "Cron sessions",
        "description": "conversations (active or archived) whose session key is agent:<id>:cron:...",
    },
    "null_subagent_context": {
        "check": "junk.null-subagent-context",
        "label": "Archived keyless subagent contexts",
        "description": "archived conversations without a session key whose first message starts "
        "with [Subagent Context]",
    },
    "orphaned": {
        "check": "conversations.orphaned",
        "label": "Orphaned conversations",
        "description": "conversations whose recorded source is gone: the transcript file no longer exists "
        "and the host's session store does not hold the session either",
    },
}
CLEAN_CLASSES = ("archived_subagents", "cron_sessions", "null_subagent_context")


def configured_agent_ids(config_root: dict[str, Any] | None) -> list[str]:
    """Enabled ``agents.list[].id`` values from openclaw.json, trimmed and de-duplicated."""
    agents = (config_root or {}).get("agents")
    entries = agents.get("list") if isinstance(agents, dict) else None
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("enabled") is False:
            continue
        value = entry.get("id")
        if isinstance(value, str) and value.strip() and value.strip() not in out:
            out.append(value.strip())
    return out


def agent_ids(conn: Any, config_root: dict[str, Any] | None, has_key: bool) -> list[str]:
    """Every agent id to clean for: the configured ones, else every id seen in session keys.

    The reference falls back to ``main`` alone; a database written by several agents then
    reports nothing for the others, so without a configured list we read the ids from the
    data (``agent:<id>:...``) and always include ``main``.
    """
    configured = configured_agent_ids(config_root)
    if configured:
        return configured
    found = {"main"}
    if has_key:
        rows = conn.execute(
            """SELECT DISTINCT substr(session_key, 7, instr(substr(session_key, 7), ':') - 1)
               FROM conversations WHERE session_key LIKE 'agent:%:%'"""
        ).fetchall()
        found.update(r[0] for r in rows if r[0])
    return sorted(found)


def scan_input(ctx: Context, scope: Scope, now_ms: int | None = None) -> ScanInput:
    """Bundle the read-only connection and scope for the checks."""
    has_key = ctx.probe.has_column("conversations", "session_key")
    return ScanInput(
        conn=ctx.db,
        probe=ctx.probe,
        scope=scope,
        database_path=ctx.database_path,
        agent_ids=agent_ids(ctx.db, ctx.config_root, has_key),
        now_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        state_dir=ctx.state_dir,
    )


def _prefix_match(prefixes: list[str]) -> tuple[str, list[Any]]:
    parts = ["(substr(c.session_key, 1, ?) = ? AND length(c.session_key) > ?)" for _ in prefixes]
    params: list[Any] = []
    for prefix in prefixes:
        params += [len(prefix), prefix, len(prefix)]
    return "(" + " OR ".join(parts) + ")" if parts else "0", params


def class_conversations(source: ScanInput, name: str) -> list[int]:
    """Conversation ids (in scope) that belong to junk class ``name``."""
    probe = source.probe
    has_key = probe.has_column("conversations", "session_key")
    has_active = probe.has_column("conversations", "active")
    where, params = source.scope.clause("c.conversation_id")
    if name == "orphaned":
        return sorted(orphaned_conversations(source))
    if name in ("archived_subagents", "cron_sessions"):
        if not has_key or (name == "archived_subagents" and not has_active):
            return []
        middle = "subagent" if name == "archived_subagents" else "cron"
        match, match_params = _prefix_match([f"agent:{a}:{middle}:" for a in source.agent_ids])
        inactive = "c.active = 0 AND " if name == "archived_subagents" else ""
        sql = f"SELECT c.conversation_id FROM conversations c WHERE {inactive}{match}{where} ORDER BY 1"
        return [r[0] for r in source.rows(sql, match_params + params)]
    if name == "null_subagent_context":
        if not (has_key and has_active and probe.has_column("conversations", "archived_at")):
            return []
        sql = f"""SELECT c.conversation_id FROM conversations c
            WHERE c.session_key IS NULL AND c.active = 0 AND c.archived_at IS NOT NULL
              AND (SELECT substr(m.content, 1, 256) FROM messages m WHERE m.conversation_id = c.conversation_id
                   ORDER BY m.seq, m.created_at, m.message_id LIMIT 1) LIKE '[Subagent Context]%'{where}
            ORDER BY 1"""
        return [r[0] for r in source.rows(sql, params)]
    raise KeyError(name)


def orphaned_conversations(source: ScanInput) -> dict[int, str]:
    """Conversations whose bootstrap state names a transcript file that no longer exists."""
    if not source.has("conversation_bootstrap_state"):
        return {}
    where, params = source.scope.clause("b.conversation_id")
    rows = source.rows(
        f"""SELECT b.conversation_id, b.session_file_path FROM conversation_bootstrap_state b
            WHERE b.session_file_path IS NOT NULL AND trim(b.session_file_path) != ''{where}""",
        params,
    )
    from lcm_cli.engine.session.source import source_exists

    return {r[0]: r[1] for r in rows if not source_exists(r[1], source.state_dir)}


def _class_check(name: str) -> Any:
    def check(source: ScanInput) -> Outcome:
        if not source.has("conversations", "messages"):
            return skipped("conversations or messages missing")
        if name == "orphaned":
            found = orphaned_conversations(source)
            return Outcome(affected=sorted(found), notes={k: {"transcript": v} for k, v in found.items()})
        ids = class_conversations(source, name)
        return Outcome(affected=ids, details={"agentIds": source.agent_ids})

    check.__doc__ = f"`{CLASSES[name]['check']}`: {CLASSES[name]['description']}."
    return check


check_archived_subagents = _class_check("archived_subagents")
check_cron_sessions = _class_check("cron_sessions")
check_null_subagent_context = _class_check("null_subagent_context")
check_orphaned = _class_check("orphaned")
