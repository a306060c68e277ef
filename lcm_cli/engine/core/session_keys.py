"""What an OpenClaw session key says about its owner: ``agent:<agentId>:<rest>``.

OpenClaw names every session ``agent:<agentId>:...`` (docs/reference/database.md §3; a
sub-agent run is ``agent:<requesterAgentId>:subagent:<uuid>``, docs/reference/engine.md
§7.7). This is the one parser of that form: the host store of a session, `lcm browse`'s
agent column and the agent scope of reads (:mod:`lcm_cli.engine.db.visibility`) all use it.
"""

from __future__ import annotations

AGENT_PREFIX = "agent:"


def agent_id_of(session_key: str | None) -> str | None:
    """The agent id of ``agent:<id>:<rest>``, or None for a key of any other shape."""
    if not session_key or not session_key.startswith(AGENT_PREFIX):
        return None
    parts = session_key.split(":", 2)
    if len(parts) < 3 or not parts[1]:
        return None
    return parts[1]


def agent_prefix(agent_id: str) -> str:
    """``agent:<id>:``, the start every session key of that agent shares."""
    return f"{AGENT_PREFIX}{agent_id}:"
