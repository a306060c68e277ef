"""The operation registry: every capability, written once, reachable from every door.

:data:`OPERATIONS` declares each operation's interface (which module implements it,
which request fields and positional arguments it takes) without importing anything, so
a door can parse and validate a call before paying for the implementation. Modules
bind their functions with :func:`operation`; :func:`get_operation` imports only the
module that owns the requested name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple


class OpSpec(NamedTuple):
    """An operation's interface: what a door needs to know before calling it."""

    module: str
    options: tuple[str, ...] = ()  # request fields (see request.FIELD_SCHEMAS)
    args: tuple[str, ...] = ()  # positional arguments, in order
    needs_selector: bool = False
    opens_db: bool = True
    resolves_paths: bool = True
    words: tuple[str, ...] = ()  # CLI words when not the dotted name (`lcm backup` = backup.create)
    long_running: bool = False  # shows a progress bar on a terminal
    writes: bool = False  # changes the database or config: `lcm serve` serializes it per session
    meta_paths: bool = True  # the envelope's meta names the database and config paths


def command_words(name: str, spec: OpSpec) -> tuple[str, ...]:
    """The CLI words that run an operation."""
    return spec.words or tuple(name.split("."))


_TIME = ("after", "before", "between", "recency")
_SELECTOR = ("conversation_id", "session_key")
_PROMPTS = "lcm_cli.engine.summarize.ops"

OPERATIONS: dict[str, OpSpec] = {
    "status": OpSpec("lcm_cli.engine.read.status"),
    "conversations.list": OpSpec("lcm_cli.engine.read.conversations", ("limit", "cursor")),
    "conversations.show": OpSpec("lcm_cli.engine.read.conversations", _SELECTOR, needs_selector=True),
    "messages.list": OpSpec(
        "lcm_cli.engine.read.messages",
        _SELECTOR + _TIME + ("limit", "cursor", "role", "include_content", "max_tokens"),
        needs_selector=True,
    ),
    "messages.tail": OpSpec("lcm_cli.engine.read.messages", _SELECTOR + ("count",), needs_selector=True),
    "summaries.list": OpSpec(
        "lcm_cli.engine.read.summaries",
        _SELECTOR + _TIME + ("limit", "cursor", "include_content", "depth", "kind"),
    ),
    "summaries.show": OpSpec("lcm_cli.engine.read.summaries", ("max_tokens",), args=("summary_id",)),
    "config.show": OpSpec("lcm_cli.engine.config.ops", opens_db=False),
    "config.get": OpSpec("lcm_cli.engine.config.ops", args=("path",), opens_db=False),
    "config.set": OpSpec(
        "lcm_cli.engine.config.ops", args=("path", "json_value"), opens_db=False, writes=True
    ),
    "doctor.scan": OpSpec(
        "lcm_cli.doctor.scan",
        _SELECTOR + ("recency", "check", "fail_on", "limit", "cursor"),
        words=("doctor",),
        long_running=True,
    ),
    "doctor.apply": OpSpec(
        "lcm_cli.doctor.apply", _SELECTOR + ("check", "apply", "no_backup"), long_running=True, writes=True
    ),
    "doctor.clean": OpSpec(
        "lcm_cli.doctor.clean",
        ("conversation_class", "apply", "vacuum", "no_backup"),
        long_running=True,
        writes=True,
    ),
    "migrate.sessions": OpSpec(
        "lcm_cli.migrate.importer",
        (
            "file",
            "sessions_dir",
            "store",
            "since",
            "max_files",
            "apply",
            "verify",
            "keep",
            "json",
            "verbose",
            "state_dir",
        ),
        words=("migrate-sessions",),
        long_running=True,
        writes=True,
    ),
    "backup.create": OpSpec(
        "lcm_cli.engine.maintenance.backup_ops",
        ("out", "quick", "keep"),
        words=("backup",),
        long_running=True,
    ),
    "backup.list": OpSpec("lcm_cli.engine.maintenance.backup_ops"),
    "backup.verify": OpSpec("lcm_cli.engine.maintenance.backup_ops", args=("path",)),
    "backup.restore": OpSpec(
        "lcm_cli.engine.maintenance.backup_ops", ("apply", "force"), args=("path",), writes=True
    ),
    "prune": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops",
        (
            "conversation_id",
            "prune_before",
            "archived_only",
            "include_active",
            "max_db_size",
            "conversation_class",
            "out",
            "apply",
            "vacuum",
        ),
        long_running=True,
        writes=True,
    ),
    "prune.restore": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops", ("apply",), args=("archive",), long_running=True, writes=True
    ),
    # The control contract's results are sanitized: no paths, not even in meta.
    # `rotate` writes, so the whole contract waits in the session's write queue under serve.
    "control": OpSpec(
        "lcm_cli.engine.maintenance.control",
        ("operation", "session_key", "session_id"),
        meta_paths=False,
        writes=True,
    ),
    "control.capabilities": OpSpec(
        "lcm_cli.engine.maintenance.control", opens_db=False, resolves_paths=False
    ),
    "grep": OpSpec(
        "lcm_cli.engine.recall.grep",
        _SELECTOR
        + _TIME
        + ("mode", "scope", "file_id", "all_conversations", "sort", "limit", "cursor", "deadline_ms"),
        args=("pattern",),
    ),
    "describe": OpSpec(
        "lcm_cli.engine.recall.describe",
        _SELECTOR + ("all_conversations", "max_bytes", "max_tokens", "cursor"),
        args=("item_id",),
    ),
    "expand": OpSpec(
        "lcm_cli.engine.recall.expand",
        _SELECTOR + ("all_conversations", "max_tokens", "cursor"),
        args=("summary_id",),
    ),
    "export": OpSpec(
        "lcm_cli.engine.recall.export",
        _SELECTOR + ("to", "out", "include_summaries"),
        needs_selector=True,
    ),
    "expand.query": OpSpec(
        "lcm_cli.engine.recall.expand_query",
        _SELECTOR + ("all_conversations", "query", "summary_id", "max_tokens", "token_cap", "timeout_ms"),
        args=("prompt",),
        words=("expand-query",),
    ),
    "session.ingest": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "file", "message", "messages", "is_heartbeat"),
        words=("ingest",),
        writes=True,
    ),
    "session.bootstrap": OpSpec(
        "lcm_cli.engine.session.ops", ("session_id", "session_key", "session_file", "host_store"), writes=True
    ),
    "session.new": OpSpec("lcm_cli.engine.session.ops", ("session_id", "session_key"), writes=True),
    "session.reset": OpSpec("lcm_cli.engine.session.ops", ("session_id", "session_key"), writes=True),
    "session.end": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "reason", "next_session_id", "next_session_key"),
        writes=True,
    ),
    "session.after_turn": OpSpec(
        "lcm_cli.engine.session.after_turn",
        (
            "session_id",
            "session_key",
            "session_file",
            "file",
            "messages",
            "pre_prompt_message_count",
            "auto_compaction_summary",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("after-turn",),
        writes=True,
    ),
    "session.commit_turn": OpSpec(
        "lcm_cli.engine.session.turns",
        (
            "advancement_key",
            "session_id",
            "session_key",
            "messages",
            "file",
            "admission",
            "terminal",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("commit-turn",),
        writes=True,
    ),
    "session.compact": OpSpec(
        "lcm_cli.engine.compaction.ops",
        _SELECTOR
        + (
            "session_id",
            "apply",
            "token_budget",
            "compaction_target",
            "force",
            "manual",
            "until_under_target",
            "current_token_count",
            "model",
        ),
        words=("compact",),
        writes=True,
    ),
    "context.assemble": OpSpec(
        "lcm_cli.engine.assembly.ops",
        _SELECTOR + ("session_id", "token_budget", "prompt", "messages", "available_tools"),
        words=("context", "show"),
    ),
    "session.maintain": OpSpec(
        "lcm_cli.engine.compaction.ops",
        _SELECTOR + ("session_id", "token_budget", "force"),
        words=("maintain",),
        writes=True,
    ),
    "rotate": OpSpec(
        "lcm_cli.engine.maintenance.rotate",
        _SELECTOR + ("apply", "backup", "session_file"),
        needs_selector=True,
        writes=True,
    ),
    "prompts.list": OpSpec(_PROMPTS, opens_db=False, resolves_paths=False),
    "prompts.show": OpSpec(_PROMPTS, args=("name",), opens_db=False, resolves_paths=False),
    "prompts.export": OpSpec(_PROMPTS, ("out", "force"), opens_db=False, resolves_paths=False),
    "prompts.diff": OpSpec(_PROMPTS, args=("name",), opens_db=False, resolves_paths=False),
    "prompts.render": OpSpec(
        _PROMPTS, ("var", "source_file"), args=("name",), opens_db=False, resolves_paths=False
    ),
}


class Result(NamedTuple):
    """What an operation returns: ``data``, for lists ``pagination``, and extra ``meta``.

    ``meta`` entries are added to the envelope's meta (e.g. which search back-end ran);
    ``streamed`` says the operation already wrote its document to the door's stream.
    """

    data: Any
    pagination: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    streamed: bool = False


class Operation(NamedTuple):
    """A bound operation: its name, implementation, one-line summary and interface."""

    name: str
    func: Callable[..., Result]
    summary: str
    spec: OpSpec


_BOUND: dict[str, Operation] = {}


def operation(name: str, *, summary: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Bind the decorated function as the implementation of operation ``name``."""

    def bind(func: Callable[..., Result]) -> Callable[..., Result]:
        _BOUND[name] = Operation(name, func, summary, OPERATIONS[name])
        return func

    return bind


def get_operation(name: str) -> Operation:
    """The operation called ``name`` (KeyError when there is none)."""
    if name not in _BOUND:
        importlib.import_module(OPERATIONS[name].module)
    return _BOUND[name]


def all_operations() -> list[Operation]:
    """Every operation, in registry order."""
    return [get_operation(name) for name in OPERATIONS]
