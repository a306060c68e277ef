"""The operation registry: every capability, written once, reachable from every door.

An operation is a function ``(ctx, req) -> Result`` registered under a stable dotted
name. Modules register their operations on import; :func:`get_operation` imports only
the module that owns the requested name, so a door pays for one command, not all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

# Which module owns which operation; imported on demand.
OPERATION_MODULES: dict[str, str] = {
    "status": "lcm_cli.engine.status",
    "conversations.list": "lcm_cli.engine.conversations",
    "conversations.show": "lcm_cli.engine.conversations",
    "messages.list": "lcm_cli.engine.messages",
    "messages.tail": "lcm_cli.engine.messages",
    "summaries.list": "lcm_cli.engine.summaries",
    "summaries.show": "lcm_cli.engine.summaries",
    "config.show": "lcm_cli.engine.config_ops",
    "config.get": "lcm_cli.engine.config_ops",
    "config.set": "lcm_cli.engine.config_ops",
    "doctor": "lcm_cli.engine.config_ops",
}


class Result(NamedTuple):
    """What an operation returns: ``data`` and, for lists, ``pagination``."""

    data: Any
    pagination: dict[str, Any] | None = None


class Operation(NamedTuple):
    """A registered operation and what it needs from the door."""

    name: str
    func: Callable[..., Result]
    summary: str
    options: tuple[str, ...] = ()
    needs_selector: bool = False
    opens_db: bool = True
    resolves_paths: bool = True


_REGISTRY: dict[str, Operation] = {}


def operation(
    name: str,
    *,
    summary: str,
    options: tuple[str, ...] = (),
    needs_selector: bool = False,
    opens_db: bool = True,
    resolves_paths: bool = True,
) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Register the decorated function as operation ``name``."""

    def register(func: Callable[..., Result]) -> Callable[..., Result]:
        _REGISTRY[name] = Operation(
            name, func, summary, options, needs_selector, opens_db, resolves_paths
        )
        return func

    return register


def get_operation(name: str) -> Operation:
    """The operation called ``name`` (KeyError when there is none)."""
    if name not in _REGISTRY:
        importlib.import_module(OPERATION_MODULES[name])
    return _REGISTRY[name]


def all_operations() -> list[Operation]:
    """Every operation, in registry order."""
    return [get_operation(name) for name in OPERATION_MODULES]
