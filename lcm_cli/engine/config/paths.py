"""Where the state dir, openclaw.json and lcm.db live.

Precedence (first non-blank wins), as the reference `lcm` resolves it:

- home for ``~``: ``OPENCLAW_HOME`` (itself ``~``-expanded) else the process home;
- state dir: ``--openclaw-dir``, ``LCM_OPENCLAW_DIR``, ``OPENCLAW_STATE_DIR``, ``<home>/.openclaw``;
- config: ``--config``, ``OPENCLAW_CONFIG_PATH``, ``<state dir>/openclaw.json``;
- database: ``--db``, ``LCM_DATABASE_PATH``, plugin ``dbPath``, plugin ``databasePath``,
  ``<state dir>/lcm.db``.

Every returned path is absolute. ``~user`` is not expanded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def _first(*candidates: Any) -> str | None:
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _expand(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return os.path.join(home, path[2:])
    return os.path.abspath(path)


def resolve_home(env: Mapping[str, str]) -> str:
    """The home directory that ``~`` stands for."""
    process_home = os.path.expanduser("~")
    override = _first(env.get("OPENCLAW_HOME"))
    return _expand(override, process_home) if override else process_home


def resolve_state_dir(flag: str | None, env: Mapping[str, str]) -> str:
    """The OpenClaw state directory."""
    home = resolve_home(env)
    chosen = _first(flag, env.get("LCM_OPENCLAW_DIR"), env.get("OPENCLAW_STATE_DIR"))
    return _expand(chosen, home) if chosen else os.path.join(home, ".openclaw")


def resolve_config_path(flag: str | None, env: Mapping[str, str], state_dir: str) -> str:
    """The openclaw.json path."""
    chosen = _first(flag, env.get("OPENCLAW_CONFIG_PATH"))
    if chosen:
        return _expand(chosen, resolve_home(env))
    return os.path.join(state_dir, "openclaw.json")


AGENT_FIELD = "{agentId}"  # in a database path: one file per agent (docs/agents.md)


def resolve_database_path(
    flag: str | None,
    env: Mapping[str, str],
    plugin_config: Mapping[str, Any],
    state_dir: str,
    agent_id: str | None = None,
) -> str:
    """The lcm.db path, consulting the Lossless plugin config (``dbPath`` beats ``databasePath``).

    A path holding ``{agentId}`` names one file per agent: ``agent_id`` fills it in, and
    without one the path is returned as it is (a caller that opens it asks for an agent
    first, :func:`agent_file`).
    """
    chosen = _first(
        flag,
        env.get("LCM_DATABASE_PATH"),
        plugin_config.get("dbPath"),
        plugin_config.get("databasePath"),
    )
    if chosen:
        if agent_id is not None and AGENT_FIELD in chosen:
            chosen = chosen.replace(AGENT_FIELD, agent_id)
        return _expand(chosen, resolve_home(env))
    return os.path.join(state_dir, "lcm.db")


def is_per_agent(path: str) -> bool:
    """True when a database path still holds ``{agentId}`` (no agent was given to fill it)."""
    return AGENT_FIELD in path


def safe_agent_id(agent_id: str) -> bool:
    """True when an agent id can name a file: one path segment, no dot-only name, no NUL."""
    return bool(agent_id) and agent_id not in (".", "..") and not any(c in agent_id for c in "/\\\0")


def locate_transcript(recorded: str, state_dir: str | None) -> str:
    """The transcript a checkpoint recorded, found again in ``state_dir`` if the state dir moved.

    A state dir restored to another home or copied elsewhere keeps its checkpoints'
    absolute paths (``<old state dir>/agents/<agent>/sessions/<file>``); when that file is
    gone and ``<state_dir>/agents/<agent>/sessions/<file>`` exists, that one is the
    session's transcript. Otherwise ``recorded`` is returned unchanged.
    """
    if not recorded or not state_dir or os.path.exists(recorded):
        return recorded
    parts = recorded.replace("\\", "/").split("/")
    for index in range(len(parts) - 4, -1, -1):
        if parts[index] == "agents" and parts[index + 2] == "sessions":
            moved = os.path.join(state_dir, "agents", parts[index + 1], "sessions", *parts[index + 3 :])
            return moved if os.path.isfile(moved) else recorded
    return recorded
