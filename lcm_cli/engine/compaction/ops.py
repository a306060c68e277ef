"""Registry operations over compaction and assembly: `session.compact`, `context.assemble`,
`session.maintain`.

A conversation is named the way the read commands name it (``--conversation-id`` or
``--session-key`` → the active conversation). Ignore and stateless session patterns are
honoured (compat/engine.md §1.3): an ignored session is never compacted nor assembled
from the database; a stateless one is assembled but never written.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from contextlib import ExitStack
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction.threshold import Resolution, resolve_threshold
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import (
    APPLY,
    AVAILABLE_TOOLS,
    COMPACTION_TARGET,
    CURRENT_TOKEN_COUNT,
    FORCE,
    MANUAL,
    MESSAGES,
    MODEL,
    PROMPT,
    SESSION_ID,
    TOKEN_BUDGET,
    UNTIL_UNDER_TARGET,
    Param,
    Request,
    Selector,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db import schema
from lcm_cli.engine.read.conversation_rows import find_conversation, identity_of, require_lcm_tables
from lcm_cli.engine.session.sessions import SessionPolicy, find_active, queue_key, session_lock
from lcm_cli.engine.summarize.base import Summarizer, SummaryRequest

TARGETS = ("budget", "threshold")


class PlanningSummarizer:
    """Stands in for the model during a dry run: text of the size a summary would have.

    Output is ``min(target, 35% of the input)`` tokens (at least 1), so the plan shows
    which passes would run and roughly what they would save, without any model call.
    """

    model = "dry-run"

    def summarize(self, request: SummaryRequest) -> str:
        """Placeholder text sized like a summary of ``request``."""
        tokens = max(1, min(request.target_tokens, math.floor(estimate_tokens(request.source_text) * 0.35)))
        return "planned summary " + "x" * max(0, tokens * 4 - 16)


def configured_summarizer(ctx: Context) -> Summarizer:
    """The summarizer the config chooses (extractive by default, offline)."""
    from lcm_cli.engine.summarize.factory import build_summarizer

    return build_summarizer(ctx.effective, dict(ctx.env))


class Target(NamedTuple):
    """The session a call names and its conversation (None when it has none yet)."""

    row: Any
    session_id: str | None
    session_key: str | None
    excluded: str | None  # "excluded", "stateless" or None (compat/engine.md §1.3)


def _target(ctx: Context, req: Request) -> Target:
    """Resolve ``--conversation-id``, else ``--session-key`` / ``--session-id``.

    A conversation id must exist (CONVERSATION_NOT_FOUND). A session the host names may
    have no conversation yet: the operation then reports that instead of failing. An
    ignored session is recognised before the database is read.
    """
    policy = SessionPolicy.from_config(ctx.effective)
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


def _identity(target: Target) -> dict[str, Any]:
    if target.row is not None:
        return {"conversation": identity_of(target.row)}
    return {"conversation": None, "sessionId": target.session_id, "sessionKey": target.session_key}


def _live_messages(req: Request, *, strip: bool = True) -> list[dict[str, Any]]:
    """The host's live messages (``messages``), trailing assistant prefill stripped unless ``strip`` is False."""
    raw = req[MESSAGES]
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise invalid_argument("--messages is not JSON: pass a JSON array of message objects.") from None
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise invalid_argument("--messages must be a JSON array of message objects.")
    messages = list(raw)
    while strip and messages and messages[-1].get("role") == "assistant":
        messages.pop()
    return messages


def _available_tools(req: Request) -> list[str] | None:
    """The host's ``availableTools`` (JSON array, its text, or comma-separated names); None when absent."""
    raw = req[AVAILABLE_TOOLS]
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except ValueError:
                raise invalid_argument(
                    "--available-tools is not a JSON array: pass a JSON array of tool names or "
                    "comma-separated names."
                ) from None
        else:
            return [name.strip() for name in text.split(",") if name.strip()]
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise invalid_argument(
            "--available-tools must be a JSON array of tool names or comma-separated names."
        )
    return list(raw)


# What a dry run copies: every row of one conversation, table by table.
_BY_CONVERSATION = "conversation_id = ?"
_BY_MESSAGE = "message_id IN (SELECT message_id FROM src.messages WHERE conversation_id = ?)"
_BY_SUMMARY = "summary_id IN (SELECT summary_id FROM src.summaries WHERE conversation_id = ?)"
_COPY = (
    ("conversations", _BY_CONVERSATION),
    ("messages", _BY_CONVERSATION),
    ("message_parts", _BY_MESSAGE),
    ("summaries", _BY_CONVERSATION),
    ("summary_messages", _BY_SUMMARY),
    ("summary_parents", _BY_SUMMARY),
    ("context_items", _BY_CONVERSATION),
)


def _conversation_copy(path: str, conversation_id: int) -> Any:
    """An in-memory database holding one conversation, for dry runs that must not touch the file.

    The copy has the current schema (an older file's rows fit: only shared columns are
    copied) and only this conversation's rows, so a dry run costs memory in proportion
    to the conversation, not to the whole database.
    """
    from lcm_cli.engine.db.store import Store

    target = sqlite3.connect("file::memory:", uri=True, isolation_level=None)
    try:
        schema.migrate(target)
        source = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
        target.execute("ATTACH DATABASE ? AS src", (source,))
        present = {r[0] for r in target.execute("SELECT name FROM src.sqlite_master WHERE type = 'table'")}
        for table, where in _COPY:
            if table not in present:
                continue
            mine = [r[1] for r in target.execute(f"PRAGMA main.table_info({table})")]
            theirs = {r[1] for r in target.execute(f"PRAGMA src.table_info({table})")}
            columns = ", ".join(c for c in mine if c in theirs)
            target.execute(
                f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM src.{table} WHERE {where}",
                (conversation_id,),
            )
        target.execute("DETACH DATABASE src")
        target.execute("PRAGMA foreign_keys = ON")
        return Store(target, Path(path))
    except BaseException:
        target.close()
        raise


def _option_int(req: Request, param: Param[int | None]) -> int | None:
    value = req[param]
    return value if isinstance(value, int) else None


def _snapshot(compactor: Any) -> dict[str, Any]:
    items = compactor.items()
    return {
        "contextItems": len(items),
        "summaryItems": sum(1 for i in items if not i.is_message),
        "tokens": ci.stored_context_tokens(items),
        "rawTokensOutsideTail": compactor.raw_tokens_outside_tail(items),
    }


@operation("session.compact")
def compact(ctx: Context, req: Request) -> Result:
    """Run the compaction routing for one conversation; a dry run works on a copy."""
    from lcm_cli.engine.compaction.compactor import Compactor, Settings

    target = req[COMPACTION_TARGET] or "budget"
    if target not in TARGETS:
        raise invalid_argument(
            f"Invalid --compaction-target value {target!r}: expected budget or threshold.", {"value": target}
        )
    found = _target(ctx, req)
    apply = req[APPLY]
    resolution = resolve_threshold(ctx.effective, session_key=found.session_key, model=req[MODEL])
    effective = resolution.apply(ctx.effective)
    settings = Settings.from_effective(effective)
    budget = settings.budget(_option_int(req, TOKEN_BUDGET))
    base = {
        **_identity(found),
        "dryRun": not apply,
        "tokenBudget": budget,
        "threshold": settings.threshold(budget),
        "thresholdResolution": resolution.to_dict(),
        "compactionTarget": target,
    }
    if found.excluded:
        reason = "session excluded" if found.excluded == "excluded" else "stateless session"
        return Result({**base, "ok": True, "compacted": False, "reason": reason, "passes": [], "skipped": []})
    if found.row is None:
        return Result(
            {
                **base,
                "ok": True,
                "compacted": False,
                "reason": "no conversation found for session",
                "passes": [],
                "skipped": [],
            }
        )
    row = found.row
    manual, force = req[MANUAL], req[FORCE]
    summarizer: Summarizer = PlanningSummarizer()
    breaker: Any = None
    breaker_id: str | None = None
    if apply:
        from lcm_cli.engine.summarize.guards import breaker_key, circuit_breaker, guarded, spend_guard

        configured = configured_summarizer(ctx)
        breaker, breaker_id = circuit_breaker(ctx.effective), breaker_key(configured)
        if breaker.is_open(breaker_id):
            return Result(
                {
                    **base,
                    "ok": True,
                    "compacted": False,
                    "reason": "circuit breaker open",
                    "passes": [],
                    "skipped": [],
                }
            )
        scope = "compaction:" + queue_key(found.session_id, found.session_key)
        if manual or force:
            spend_guard(ctx.effective).clear(scope)  # an operator's or forced run clears the backoff
        summarizer = guarded(configured, ctx.effective, scope)
    # A real run holds the session's in-process writer lock (one writer per session in a
    # warm `lcm serve`) and uses the context's store; a dry run works on its own copy.
    with ExitStack() as stack:
        if apply:
            stack.enter_context(session_lock(queue_key(found.session_id, found.session_key)))
            store = ctx.store()
        else:
            store = _conversation_copy(ctx.database_path, row["conversation_id"])
            stack.callback(store.close)
        compactor = Compactor(store, row["conversation_id"], effective, summarizer)
        before = _snapshot(compactor)
        outcome = compactor.compact(
            token_budget=budget,
            target=target,
            force=force,
            manual=manual,
            current_token_count=_option_int(req, CURRENT_TOKEN_COUNT),
            until_under_target=req[UNTIL_UNDER_TARGET],
        )
        after = _snapshot(compactor)
    if breaker is not None:
        # Auth failures feed the circuit breaker; any successful compaction resets it (§5.7).
        if outcome["reason"].startswith("provider auth failure"):
            breaker.record_auth_failure(breaker_id)
        elif outcome["compacted"]:
            breaker.record_success(breaker_id)
    data = {**base, "summarizer": summarizer.model, "before": before, "after": after, **outcome}
    if outcome["reason"] == "summarizer failed":
        raise LcmError(
            "SUMMARIZER_FAILED",
            f"The summarizer failed ({outcome['failure']}); passes before the failure were kept, "
            "the failed one wrote nothing. Check the summarizer settings (`lcm config show`) and retry.",
            data,
        )
    return Result(data)


@operation("context.assemble")
def assemble(ctx: Context, req: Request) -> Result:
    """Assemble one conversation's context (compat/engine.md §6.1).

    Mostly read-only: with deferred debt over the budget it drains the debt first, and
    with ``stubLargeToolPayloads`` it stores large live tool outputs (never for a
    stateless session).
    """
    from lcm_cli.engine.assembly import flow as assemble_flow
    from lcm_cli.engine.assembly.fallback import strip_prefill

    raw = _live_messages(req, strip=False)
    tools = _available_tools(req)
    prompt = req[PROMPT]
    found = _target(ctx, req)
    base = _identity(found)
    if found.excluded == "excluded" or found.row is None:
        # Ignored sessions never touch the database, and a session without a conversation
        # has nothing stored: the host's own live messages pass through (unbounded).
        reason = "session excluded" if found.excluded == "excluded" else "no conversation found for session"
        live = strip_prefill(raw, prompt is not None and tools is not None)
        return Result(
            {
                **base,
                "messages": live,
                "estimatedTokens": 0,
                "systemPromptAddition": None,
                "contextProjection": None,
                "promptAuthority": None,
                "reason": reason,
            }
        )
    session = assemble_flow.Session(
        int(found.row["conversation_id"]), found.session_id, found.session_key, found.excluded is None
    )
    result = assemble_flow.run(
        ctx, session, raw, prompt=prompt, available_tools=tools, token_budget=_option_int(req, TOKEN_BUDGET)
    )
    return Result({**base, **result})


@operation("session.maintain")
def maintain(ctx: Context, req: Request) -> Result:
    """Run pending compaction debt now; ``--force`` ignores an active retry backoff."""
    from lcm_cli.engine.compaction.compactor import Compactor, drain_debt

    found = _target(ctx, req)
    # The host's maintain result carries transcript-GC counts; lcm does no transcript GC.
    base = {**_identity(found), "bytesFreed": 0, "rewrittenEntries": 0}
    if found.excluded:
        reason = "session excluded by pattern" if found.excluded == "excluded" else "stateless session"
        return Result({**base, "changed": False, "reason": reason})
    if found.row is None:
        return Result({**base, "changed": False, "reason": "conversation not found"})
    row = found.row
    if not ctx.probe.has_table("conversation_compaction_maintenance"):
        return Result({**base, "changed": False, "reason": "no deferred compaction debt"})
    pending = ctx.query_one(
        "SELECT pending, running, context_threshold, context_threshold_source AS source"
        " FROM conversation_compaction_maintenance WHERE conversation_id = ?",
        (row["conversation_id"],),
    )
    if pending is None or not (pending["pending"] or pending["running"]):
        return Result({**base, "changed": False, "reason": "no deferred compaction debt"})
    resolution = debt_resolution(
        ctx.effective, found.session_key, pending["context_threshold"], pending["source"]
    )
    summarizer = configured_summarizer(ctx)
    with session_lock(queue_key(found.session_id, found.session_key)):
        compactor = Compactor(
            ctx.store(), row["conversation_id"], resolution.apply(ctx.effective), summarizer
        )
        outcome = drain_debt(compactor, token_budget=_option_int(req, TOKEN_BUDGET), force=req[FORCE])
    return Result({**base, "thresholdResolution": resolution.to_dict(), **outcome})


def debt_resolution(
    effective: dict[str, Any], session_key: str | None, persisted: Any, source: Any
) -> Resolution:
    """The threshold a debt drain uses (compat/engine.md §4.12 step 2).

    The live resolution, unless the debt was recorded under an override that the session
    key alone cannot re-match (a model rule: the drain does not know the model): then a
    live rule carrying the same threshold is taken, so a persisted override survives only
    while the config could still produce it.
    """
    live = resolve_threshold(effective, session_key=session_key)
    if source != "override" or not isinstance(persisted, (int, float)) or live.source == "override":
        return live
    for index, rule in enumerate(effective.get("contextThresholdOverrides") or ()):
        if isinstance(rule, dict) and rule.get("contextThreshold") == persisted:
            return Resolution(float(persisted), "override", index, rule)
    return live
