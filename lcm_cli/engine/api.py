"""The Python door: call any operation by name and get the result envelope.

Every other door (the CLI and its typer app, ``lcm hook``, ``lcm serve``) goes through
:func:`invoke`, so validation, errors, results and exit statuses are identical whichever
door is used (``tests/commands/test_parity.py``). :func:`call` is its envelope alone.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import APPLY, FIELDS, MAX_TOKENS, STATE_DIR, Request, validate_request
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.registry import ARGUMENTS, FollowUp, Operation, Result, command_words, get_operation
from lcm_cli.engine.db.connection import translate_database_failure
from lcm_cli.engine.fleet import Member, members_of, normalize_path_option, run_fleet, unsupported

if TYPE_CHECKING:
    from typing import Any, TextIO


class Outcome(Record):
    """A successful call as every door delivers it: the envelope, the exit status, the follow-ups.

    ``exit_status`` is 0 unless the operation's report asks for more (``lcm doctor
    --fail-on``'s findings, ``migrate-sessions``' failed files; their data keeps
    ``exitStatus`` too). ``follow_ups`` is work a warm door runs after answering.
    """

    envelope: dict[str, Any]
    exit_status: int = 0
    follow_ups: tuple[FollowUp, ...] = ()


def call(name: str, params: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """Run operation ``name`` and return its success envelope (raises ``LcmError``).

    The keyword options are :func:`invoke`'s. Only the envelope is returned: its exit
    status is in :func:`invoke`'s answer, and the follow-ups are left undone, as by any cold
    door (see :class:`~lcm_cli.engine.core.registry.FollowUp`).
    """
    return invoke(name, params, **options).envelope


def invoke(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    args: tuple[str, ...] = (),
    db: str | Sequence[str] | None = None,
    config: str | None = None,
    openclaw_dir: str | Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    output_format: str | None = None,
    now_ms: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    stream: TextIO | None = None,
    stdin: bytes | None = None,
    context: Context | None = None,
    agent: str | None = None,
) -> Outcome:
    """Run operation ``name``: its envelope, exit status and follow-ups (raises ``LcmError``).

    ``params`` holds option values keyed by request field (``conversation_id``,
    ``limit``, ...); ``args`` holds positional arguments (a summary id, a config path).
    ``stream`` is where a document-producing operation (``export`` without ``--out``) may
    write its document; the envelope then carries ``"streamed": true`` and the door
    prints nothing more. ``stdin`` is what the CLI door read from its own stdin for an
    operation that takes messages as text (hook, serve and Python pass ``messages``).
    ``context`` is a warm :class:`Context` kept by a long-lived door (``lcm serve``):
    its paths, config and connections are reused and it is not closed here; the
    path options are then ignored (they were given when the context was made).

    ``db`` given as several paths or a glob, or ``openclaw_dir`` as several directories,
    names a fleet: the operation runs on each database and the answers merge
    (:mod:`lcm_cli.engine.fleet`); an operation without a ``fleet`` declaration refuses.
    ``agent`` is the caller's agent (`--agent`; else LCM_AGENT_ID): under ``agentScope``
    ``agent`` or ``session-family`` an operation that reads history sees only its
    conversations (docs/agents.md).
    """
    op = get_operation(name)
    spec = op.spec
    db, openclaw_dir = normalize_path_option(db), normalize_path_option(openclaw_dir)
    if context is None and (members := members_of(db, openclaw_dir, name)) is not None:
        return _invoke_fleet(
            op,
            params or {},
            members,
            args=args,
            config=config,
            env=env,
            output_format=output_format,
            now_ms=now_ms,
            agent=agent,
        )
    db = db if isinstance(db, str) else None  # one database: members_of found no fleet
    openclaw_dir = openclaw_dir if isinstance(openclaw_dir, str) else None
    for arg, value in zip(spec.args, args):
        if value == "" and not ARGUMENTS[arg].blank:
            words = " ".join(command_words(name, spec))
            raise LcmError(
                "INVALID_COMMAND",
                f"`lcm {words}` needs a non-empty {ARGUMENTS[arg].metavar}; see `lcm {words} --help`.",
            )
    request = validate_request(
        name,
        spec.options,
        params or {},
        needs_selector=spec.needs_selector,
        output_format=output_format,
        args=args,
        now_ms=now_ms,
    )
    warm = context is not None
    openclaw_dir = _state_dir_option(request, openclaw_dir, warm)
    ctx = (
        context
        if context is not None
        else Context(db=db, config=config, openclaw_dir=openclaw_dir, env=env, agent=agent)
    )
    ctx.rescope(scoped_reads=not spec.unscoped)
    key = (
        request.selector.value
        if request.selector is not None and request.selector.kind == "sessionKey"
        else None
    )
    ctx.route_to(str(key) if key is not None else None)
    ctx.progress = progress
    ctx.stream = stream
    ctx.stdin = stdin
    try:
        if spec.resolves_paths and not (warm and ctx.paths_resolved and name != "config.set"):
            ctx.resolve_paths(read_config=name != "config.set")
        elif warm and spec.resolves_paths:
            ctx.resolve_database_path()  # a per-agent path opens this request's agent's file
        cap = request[MAX_TOKENS] if spec.caps_output else None
        result, envelope = _run_once(op, ctx, request)
        if cap:
            result, envelope = _within_cap(op, ctx, request, cap, envelope, result)
        elif spec.cuts and (limit := request[MAX_TOKENS]):
            _cut_list(envelope, spec.cuts, limit, oldest=spec.cuts_oldest)
    finally:
        ctx.progress = None
        ctx.stdin = None
        if not warm:
            ctx.close()
    return Outcome(envelope, result.exit_status, result.follow_ups)


def _invoke_fleet(
    op: Operation,
    params: Mapping[str, Any],
    members: list[Member],
    *,
    args: tuple[str, ...],
    config: str | None,
    env: Mapping[str, str] | None,
    output_format: str | None,
    now_ms: int | None,
    agent: str | None,
) -> Outcome:
    """Run ``op`` on every member of a fleet, each through :func:`invoke`, and merge."""
    spec = op.spec
    fleet = spec.fleet
    if fleet is None:
        raise unsupported(op.name, f"`lcm {' '.join(command_words(op.name, spec))}` reads one database.")
    request = validate_request(
        op.name,
        spec.options,
        params,
        needs_selector=spec.needs_selector,
        output_format=output_format,
        args=args,
        now_ms=now_ms,
    )

    def ask(member: Member, member_params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        outcome = invoke(
            op.name,
            member_params,
            args=args,
            db=member.db,
            config=config,
            openclaw_dir=member.openclaw_dir,
            env=env,
            output_format=output_format,
            now_ms=now_ms,
            agent=agent,
        )
        return outcome.envelope, outcome.exit_status

    limit = request.limit if "limit" in spec.options else 0
    # Each member answers whole items: the merge needs their order fields; --fields applies after.
    member_params = {k: v for k, v in params.items() if k != "fields"}
    envelope, status = run_fleet(op.name, spec, fleet, member_params, limit or 0, members, ask)
    fields = request[FIELDS]
    if fields:
        from lcm_cli.engine.core.projection import apply_fields

        apply_fields(envelope, fields, spec.items)
    return Outcome(envelope, status)


def _run_once(op: Operation, ctx: Context, request: Request) -> tuple[Result, dict[str, Any]]:
    """Run the operation once and build its envelope (``--fields`` applied)."""
    spec = op.spec
    try:
        result = op.func(ctx, request)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        translated = translate_database_failure(exc, ctx.database_path, ctx.timeout_ms)
        if translated is None:
            raise
        raise translated from None
    if spec.applies and not request[APPLY] and isinstance(result.data, dict):
        # Every writer's dry run says so, and what --apply would do, in the same words.
        result.data["message"] = f"Dry run: nothing was written. Re-run with --apply to {spec.applies}."
    envelope: dict[str, Any] = {"ok": True, "command": op.name, "data": result.data}
    if result.pagination is not None:
        envelope["pagination"] = result.pagination
    envelope["meta"] = ctx.meta() if spec.resolves_paths and spec.meta_paths else {}
    if result.meta:
        envelope["meta"].update(result.meta)
    if result.streamed:
        envelope["streamed"] = True
    fields = request[FIELDS]
    if fields:
        from lcm_cli.engine.core.projection import apply_fields

        apply_fields(envelope, fields, spec.items)
    return result, envelope


def answer_tokens(envelope: dict[str, Any]) -> int:
    """Estimated tokens of what ``--max-tokens`` caps: the envelope's ``data`` as the JSON
    door prints it (compact). ``meta`` (paths) and ``pagination`` never count."""
    from lcm_cli.engine.core.tokens import estimate_tokens

    return estimate_tokens(json.dumps(envelope.get("data"), ensure_ascii=False, separators=(",", ":")))


def _within_cap(
    op: Operation, ctx: Context, request: Request, cap: int, envelope: dict[str, Any], result: Result
) -> tuple[Result, dict[str, Any]]:
    """Make ``--max-tokens`` a hard cap on the answer (``data``), whatever the paths.

    An operation fits its data to the cap from its own estimate; when the printed data is
    still over (JSON framing of each item), it runs again with the cap lowered by the
    excess (reads are cheap and repeatable). When even the smallest cut is larger, that
    smallest page is the answer, and ``data.budget`` (or ``meta.maxTokens``) says so.
    """
    budget = cap
    smallest = (result, envelope)
    for attempt in range(6):
        over = answer_tokens(envelope) - cap
        if over <= 0:
            _report_cap(envelope, cap, fits=True)
            return result, envelope
        if answer_tokens(envelope) < answer_tokens(smallest[1]):
            smallest = (result, envelope)
        # Cuts come in whole items: lower faster each round so a step always changes the cut.
        budget -= (over + 2) * 2**attempt
        if budget < 1:
            break
        request._values[MAX_TOKENS.name] = budget
        try:
            result, envelope = _run_once(op, ctx, request)
        except LcmError as exc:
            if exc.code != "INVALID_ARGUMENT":
                raise
            break
    if answer_tokens(envelope) < answer_tokens(smallest[1]):
        smallest = (result, envelope)
    result, envelope = smallest
    _report_cap(envelope, cap, fits=False)
    return result, envelope


def _cut_list(envelope: dict[str, Any], key: str, cap: int, *, oldest: bool) -> None:
    """``--max-tokens`` on an operation that does not fit itself: keep as many items of the
    list ``key`` as fit (the first ones, or the last with ``oldest``) and say what was cut.

    A page cut short has no valid cursor past it, so ``nextCursor`` is dropped and the hint
    names the ``--limit`` that reads the rest page by page.
    """
    data = envelope.get("data")
    if not isinstance(data, dict) or not isinstance(items := data.get(key), list):
        return
    if answer_tokens(envelope) <= cap:
        return
    pagination = envelope.get("pagination")
    paged = isinstance(pagination, dict) and "nextCursor" in pagination

    def keep(count: int) -> None:
        """Show ``count`` items, with the report of the cut (it counts towards the cap too)."""
        data[key] = (items[-count:] if count else []) if oldest else items[:count]
        hint = (
            f"raise --max-tokens, or read them all with --limit {max(count, 1)} and its nextCursor"
            if paged
            else f"raise --max-tokens to see the {'older' if oldest else 'other'} {len(items) - count}"
        )
        data["truncated"] = {"list": key, "kept": count, "of": len(items), "maxTokens": cap, "hint": hint}

    low, high = 0, len(items)  # the most items that fit lie in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        keep(middle)
        if answer_tokens(envelope) <= cap:
            low = middle
        else:
            high = middle - 1
    keep(low)
    if isinstance(pagination, dict) and paged:
        pagination.update(hasMore=True, nextCursor=None)


def _report_cap(envelope: dict[str, Any], cap: int, *, fits: bool) -> None:
    """Say in the answer what the cap was and whether the smallest useful page fit it."""
    data = envelope.get("data")
    report = data.get("budget") if isinstance(data, dict) else None
    if isinstance(report, dict) and "maxTokens" in report:
        report["maxTokens"] = cap  # the cap asked for, not a lowered one
        if not fits:
            report["overBudget"] = True
            report["note"] = (
                f"the smallest page ({answer_tokens(envelope)} tokens) is larger than --max-tokens {cap}"
            )
    elif not fits:
        envelope.setdefault("meta", {})["maxTokens"] = {
            "cap": cap,
            "printed": answer_tokens(envelope),
            "note": "the smallest page is larger than the cap",
        }


def _state_dir_option(request: Any, openclaw_dir: str | None, warm: bool) -> str | None:
    """``--state-dir`` (the reference importer's spelling) names the state dir like ``--openclaw-dir``."""
    state_dir = request[STATE_DIR]
    if state_dir is None:
        return openclaw_dir
    if warm:
        raise invalid_argument(
            "--state-dir cannot change a running server's state dir; start `lcm serve --openclaw-dir DIR`.",
            {"option": "state-dir"},
        )
    if openclaw_dir is not None and os.path.abspath(openclaw_dir) != os.path.abspath(state_dir):
        raise invalid_argument(
            "--state-dir and --openclaw-dir name different directories; give one of them.",
            {"option": "state-dir"},
        )
    return str(state_dir)
