"""Registry operations over compaction: `session.compact` and `session.maintain`.

A conversation is named the way the read commands name it (``--conversation-id`` or
``--session-key`` → the active conversation, see :mod:`lcm_cli.engine.read.target`).
Ignore and stateless session patterns are honoured (docs/reference/engine.md §1.3): an ignored
session is never compacted; a stateless one is never written. ``context.assemble`` lives
in :mod:`lcm_cli.engine.assembly.ops`.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction.threshold import Resolution, resolve_threshold
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import (
    APPLY,
    COMPACTION_TARGET,
    CURRENT_TOKEN_COUNT,
    FORCE,
    MANUAL,
    MODEL,
    TOKEN_BUDGET,
    UNTIL_UNDER_TARGET,
    Param,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db import schema
from lcm_cli.engine.db.sessions import queue_key, session_lock
from lcm_cli.engine.read.target import resolve_target, target_identity
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


def option_int(req: Request, param: Param[int | None]) -> int | None:
    """An integer request field, None when absent."""
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
    found = resolve_target(ctx, req)
    apply = req[APPLY]
    resolution = resolve_threshold(ctx.effective, session_key=found.session_key, model=req[MODEL])
    effective = resolution.apply(ctx.effective)
    settings = Settings.from_effective(effective)
    budget = settings.budget(option_int(req, TOKEN_BUDGET))
    base = {
        **target_identity(found),
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
    # A real run takes the session's in-process writer lock (one writer per session in a
    # warm `lcm serve`) around each write, never across a summarizer call, and uses the
    # context's store; a dry run works on its own copy.
    with ExitStack() as stack:
        write_lock = None
        if apply:
            write_lock = _writer(found.session_id, found.session_key)
            store = ctx.store()
        else:
            store = _conversation_copy(ctx.database_path, row["conversation_id"])
            stack.callback(store.close)
        compactor = Compactor(store, row["conversation_id"], effective, summarizer, write_lock=write_lock)
        before = _snapshot(compactor)
        outcome = compactor.compact(
            token_budget=budget,
            target=target,
            force=force,
            manual=manual,
            current_token_count=option_int(req, CURRENT_TOKEN_COUNT),
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


@operation("session.maintain")
def maintain(ctx: Context, req: Request) -> Result:
    """Run pending compaction debt now; ``--force`` ignores an active retry backoff.

    This is where the model works: interim summaries the turn path wrote are
    re-summarized first, then the threshold route runs, within ``compactUntilUnderDeadlineMs``.
    """
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.compaction.drain import drain_debt

    found = resolve_target(ctx, req)
    # The host's maintain result carries transcript-GC counts; lcm does no transcript GC.
    base = {**target_identity(found), "bytesFreed": 0, "rewrittenEntries": 0}
    if found.excluded:
        reason = "session excluded by pattern" if found.excluded == "excluded" else "stateless session"
        return Result({**base, "changed": False, "reason": reason})
    if found.row is None:
        return Result({**base, "changed": False, "reason": "conversation not found"})
    row = found.row
    pending = None
    if ctx.probe.has_table("conversation_compaction_maintenance"):
        pending = ctx.query_one(
            "SELECT pending, running, context_threshold, context_threshold_source AS source"
            " FROM conversation_compaction_maintenance WHERE conversation_id = ?",
            (row["conversation_id"],),
        )
    if pending is None or not (pending["pending"] or pending["running"]):
        out = {**base, "changed": False, "reason": NOTHING_TO_MAINTAIN}
        prepared = _prepare_pending(
            ctx, found, resolve_threshold(ctx.effective, session_key=found.session_key)
        )
        if prepared is not None:
            out["pending"] = prepared
        return Result(out)
    resolution = debt_resolution(
        ctx.effective, found.session_key, pending["context_threshold"], pending["source"]
    )
    summarizer = configured_summarizer(ctx)
    compactor = Compactor(
        ctx.store(),
        row["conversation_id"],
        resolution.apply(ctx.effective),
        summarizer,
        write_lock=_writer(found.session_id, found.session_key),
    )
    outcome = drain_debt(compactor, token_budget=option_int(req, TOKEN_BUDGET), force=req[FORCE])
    out = {**base, "thresholdResolution": resolution.to_dict(), **outcome}
    # Then the next batch, within the preparation's own time budget.
    prepared = _prepare_pending(ctx, found, resolution)
    if prepared is not None:
        out["pending"] = prepared
    return Result(out)


def _prepare_pending(ctx: Context, found: Any, resolution: Resolution) -> dict[str, Any] | None:
    """Prepare pending summaries with the model within ``pendingPreparationBudgetMs``
    (:mod:`lcm_cli.engine.compaction.pending`); None when there is nothing to say: a local
    summarizer (the turn path compacts with it itself), no budget, an open circuit breaker,
    or a file without 1.0's pending tables."""
    from lcm_cli.engine.compaction.interim import is_local
    from lcm_cli.engine.compaction.pending.background import prepare
    from lcm_cli.engine.summarize.guards import breaker_key, circuit_breaker, guarded

    budget = ctx.engine_settings.pending_preparation_budget_ms
    configured = configured_summarizer(ctx)
    if not budget or is_local(configured) or not ctx.probe.has_table("pending_summary_nodes"):
        return None
    breaker, key = circuit_breaker(ctx.effective), breaker_key(configured)
    if breaker.is_open(key):
        return None
    scope = "compaction:" + queue_key(found.session_id, found.session_key)
    outcome = prepare(
        ctx.store(),
        found.row["conversation_id"],
        resolution.apply(ctx.effective),
        guarded(configured, ctx.effective, scope),
        budget_ms=int(budget),
        session_key=found.session_key,
        lease_owner=f"lcm:{found.session_id or found.session_key or found.row['conversation_id']}",
        write_lock=_writer(found.session_id, found.session_key),
    )
    if outcome.get("authFailure"):
        breaker.record_auth_failure(key)
    elif outcome["prepared"]:
        breaker.record_success(key)
    return outcome if outcome["prepared"] or outcome["status"] != "idle" else None


def _writer(session_id: str | None, session_key: str | None) -> Callable[[], AbstractContextManager[None]]:
    """The session's in-process writer lock, to be taken around each write.

    Held only while a pass writes, never while the model answers, so a turn of the same
    session (which takes this lock too) never waits for a summarizer.
    """
    key = queue_key(session_id, session_key)
    return lambda: session_lock(key)


#: A maintain step with no debt to drain answers as lossless-claw 1.0 does: it has had no
#: transcript GC since 1.0.0-beta.0 (0.15.3 went on to it and named why it stopped there).
NOTHING_TO_MAINTAIN = "no deferred maintenance work"


def debt_resolution(
    effective: dict[str, Any], session_key: str | None, persisted: Any, source: Any
) -> Resolution:
    """The threshold a debt drain uses (docs/reference/engine.md §4.12 step 2).

    The live resolution, unless the debt was recorded under an override that the session
    key alone cannot re-match (a model rule: the drain does not know the model): then a
    live rule carrying the same threshold is taken, so a persisted override survives only
    while the config could still produce it.
    """
    live = resolve_threshold(effective, session_key=session_key)
    if source != "override" or not isinstance(persisted, (int, float)) or live.source == "override":
        return live
    from lcm_cli.engine.config.view import EngineSettings

    for index, rule in enumerate(EngineSettings(effective).context_threshold_overrides or ()):
        if isinstance(rule, dict) and rule.get("contextThreshold") == persisted:
            return Resolution(float(persisted), "override", index, rule)
    return live
