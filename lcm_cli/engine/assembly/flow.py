"""The engine's `assemble` step order around the assembler (docs/reference/engine.md §6.1, §6.7, §6.8).

`context.assemble` calls :func:`run` once it knows the session: live tool-output stubs,
the projection epoch, the deferred-debt check (emergency drain, degraded results), the
bounded live fallbacks, the assembler itself, a fork's live suffix, the prompt-recall
cue and the final serialized clamp. Writes (stubs, the drain) happen only for sessions
LCM may write, under the session's in-process lock, and never hold a transaction
across a summarizer call (``drain_debt`` commits each pass on its own). No model is
called here: with a model configured the emergency drain summarizes locally and leaves
the model's work to the background drain (:mod:`lcm_cli.engine.compaction.interim`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.assembly import fallback as fb
from lcm_cli.engine.assembly import prompt_recall as pr
from lcm_cli.engine.assembly.assembler import assemble as assemble_context
from lcm_cli.engine.assembly.assembler import clamp, clamp_target, message_tokens, resolve_budget
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.tokens import estimate_tokens

HOST_DELIVERS = "hostDeliversCurrentTurnSeparately"
DEGRADED_AUTHORITY = "preassembly_may_overflow"
EMERGENCY_RETRY_LIMIT = 3


class Session(NamedTuple):
    """What `context.assemble` resolved: the conversation and whether LCM may write it."""

    conversation_id: int
    session_id: str | None
    session_key: str | None
    writable: bool  # False for stateless sessions: read, never written


class Fork(NamedTuple):
    """A fork-bounded conversation's checkpoint facts (§3.4)."""

    bounded: bool
    source_count: int


def _result(
    messages: list[dict[str, Any]],
    budget: int,
    reason: str | None,
    *,
    projection: dict[str, Any] | None,
    authority: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "messages": messages,
        "estimatedTokens": fb.total_tokens(messages),
        "systemPromptAddition": None,
        "contextProjection": projection,
        "promptAuthority": authority,
        "reason": reason,
        "details": {"tokenBudget": budget, **(details or {})},
    }


def _has_table(ctx: Context, name: str) -> bool:
    return bool(ctx.probe.has_table(name))


def _fork(ctx: Context, cid: int) -> Fork:
    if not (
        _has_table(ctx, "conversation_bootstrap_state")
        and ctx.probe.has_column("conversation_bootstrap_state", "fork_bounded")
    ):
        return Fork(False, 0)
    row = ctx.db.execute(
        "SELECT fork_bounded, fork_source_message_count FROM conversation_bootstrap_state"
        " WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    if row is None or not row[0]:
        return Fork(False, 0)
    return Fork(True, int(row[1] or 0))


def _debt(ctx: Context, cid: int) -> tuple[bool, int] | None:
    """(present, retry attempts) of the conversation's debt row, None without one."""
    if not _has_table(ctx, "conversation_compaction_maintenance"):
        return None
    # Older files lack some bookkeeping columns: a missing one reads as 0.
    columns = [
        c if ctx.probe.has_column("conversation_compaction_maintenance", c) else "0"
        for c in ("pending", "running", "retry_attempts")
    ]
    row = ctx.db.execute(
        f"SELECT {', '.join(columns)} FROM conversation_compaction_maintenance WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    if row is None:
        return None
    return bool(row[0] or row[1]), int(row[2] or 0)


def _stored_tokens(ctx: Context, cid: int) -> int:
    """Stored context tokens (§1.5): message plus summary ``token_count`` over the context items.

    One aggregate query over columns every schema era has, so older files answer too.
    """
    row = ctx.db.execute(
        "SELECT COALESCE(SUM(CASE WHEN ci.item_type = 'message' THEN m.token_count ELSE s.token_count END), 0)"
        " FROM context_items ci"
        " LEFT JOIN messages m ON m.message_id = ci.message_id"
        " LEFT JOIN summaries s ON s.summary_id = ci.summary_id"
        " WHERE ci.conversation_id = ?",
        (cid,),
    ).fetchone()
    return int(row[0] or 0)


def _drain(ctx: Context, session: Session, budget: int, attempts: int) -> dict[str, Any]:
    """The emergency drain, with no model call on the turn's path.

    With a local summarizer configured it is the reference's drain, forced past the retry
    backoff while fewer than 3 attempts failed. With a model configured the local
    extractive summarizer stands in (:mod:`lcm_cli.engine.compaction.interim`): always
    forced, since it spends nothing, and the debt stays pending so the next background
    drain re-summarizes its output with the model.
    """
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.compaction.drain import drain_debt
    from lcm_cli.engine.compaction.interim import is_interim, turn_path_summarizer
    from lcm_cli.engine.compaction.ops import configured_summarizer, debt_resolution
    from lcm_cli.engine.db.sessions import queue_key, session_lock

    row = ctx.db.execute(
        "SELECT context_threshold, context_threshold_source FROM conversation_compaction_maintenance"
        " WHERE conversation_id = ?",
        (session.conversation_id,),
    ).fetchone()
    resolution = debt_resolution(
        ctx.effective, session.session_key, row[0] if row else None, row[1] if row else None
    )
    summarizer = turn_path_summarizer(configured_summarizer(ctx))
    force = is_interim(summarizer) or attempts < EMERGENCY_RETRY_LIMIT
    with session_lock(queue_key(session.session_id, session.session_key)):
        compactor = Compactor(
            ctx.store(), session.conversation_id, resolution.apply(ctx.effective), summarizer
        )
        try:
            outcome = drain_debt(compactor, token_budget=budget, force=force)
        except Exception as exc:  # the debt row keeps the failure; assembly degrades instead
            return {
                "changed": False,
                "reason": "emergency drain failed",
                "error": f"{type(exc).__name__}: {exc}",
            }
    out = {k: v for k, v in outcome.items() if k != "compaction"}
    out["summarizer"] = summarizer.model
    return out


def _degraded_reason(
    ctx: Context, session: Session, budget: int, debt: tuple[bool, int]
) -> tuple[str | None, dict[str, Any]]:
    """Step 8: the degraded reason (None: assemble normally) and what the check saw."""
    pressure = _stored_tokens(ctx, session.conversation_id)
    near = math.floor(budget * 0.75)
    info: dict[str, Any] = {"pressure": pressure, "degradedThreshold": near}
    if pressure > budget:
        if session.writable:
            info["emergencyDrain"] = _drain(ctx, session, budget, debt[1])
        after = _debt(ctx, session.conversation_id)
        pressure = _stored_tokens(ctx, session.conversation_id)
        info["pressureAfter"] = pressure
        if pressure <= near:
            return None, info
        if after is not None and after[0]:
            return "emergency-debt-still-pending", info
        return "emergency-debt-exhausted", info
    if pressure > near:
        return "near-budget", info
    return None, info


def _stub_live(
    ctx: Context, session: Session, live: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """Step 5: large live tool outputs become deterministic file stubs (one short transaction)."""
    from lcm_cli.engine.assembly.live_stubs import LiveStubber, needs_stub
    from lcm_cli.engine.db.sessions import queue_key, session_lock

    settings = ctx.engine_settings
    threshold = settings.large_file_threshold()
    if not needs_stub(live, threshold):
        return live, 0
    files_dir = settings.files_dir()
    store = ctx.store()
    with session_lock(queue_key(session.session_id, session.session_key)), store.transaction() as conn:
        stubber = LiveStubber(conn, files_dir, session.conversation_id, threshold)
        stubbed = stubber.stub_all(live)
    return stubbed, len(stubber.written) + len(stubber.reused)


def _epoch(ctx: Context, cid: int) -> dict[str, Any]:
    rows = ctx.db.execute(
        "SELECT ordinal, summary_id FROM context_items WHERE conversation_id = ? AND item_type = 'summary'"
        " ORDER BY ordinal",
        (cid,),
    ).fetchall()
    return {
        "mode": "thread_bootstrap",
        "epoch": pr.projection_epoch(cid, [(int(r[0]), str(r[1])) for r in rows]),
    }


def _counts(ctx: Context, cid: int) -> tuple[int, int]:
    row = ctx.db.execute(
        "SELECT COUNT(*), COALESCE(SUM(item_type = 'summary'), 0) FROM context_items WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    return int(row[0]), int(row[1])


def _with_cue(
    ctx: Context,
    cid: int,
    messages: list[dict[str, Any]],
    live: Sequence[dict[str, Any]],
    prompt: str | None,
    budget: int,
    pre_recall_tokens: int,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Step 14: prepend the prompt-recall cue when it fits the budget; also return the cue.

    It fits as the reference decides (src/engine.ts, assemble): the context's estimate
    before the cue (``pre_recall_tokens``) plus the estimate of the cue's text is within
    the budget. The serialized estimate decides later, in the final clamp, which drops
    the cue first.
    """
    if not prompt or not pr.identifiers(prompt):
        return messages, None
    # What the model already sees: these messages and every volatile live input of the turn.
    cue = pr.build_cue(ctx.db, cid, prompt, [*messages, *(m for m in live if fb.is_volatile(m))])
    if cue is None or pre_recall_tokens + estimate_tokens(str(cue["content"])) > budget:
        return messages, None
    return [cue, *messages], cue


def run(
    ctx: Context,
    session: Session,
    live_raw: Sequence[dict[str, Any]],
    *,
    prompt: str | None,
    available_tools: Sequence[str] | None,
    token_budget: int | None,
    model: str | None = None,
) -> dict[str, Any]:
    """Steps 5-15 of the engine's `assemble` for a conversation LCM holds.

    ``model``: the host's model this turn; a ``contextThresholdOverrides`` rule that
    matches it (or the session key) may size the fresh tail.
    """
    from lcm_cli.engine.compaction.threshold import resolve_threshold

    host_turn = prompt is not None and available_tools is not None
    live = fb.strip_prefill(live_raw, host_turn)
    budget = resolve_budget(ctx.effective, token_budget)
    cid = session.conversation_id
    effective = ctx.effective
    try:
        stubs = 0
        if session.writable and ctx.engine_settings.stub_large_tool_payloads is True and live:
            live, stubs = _stub_live(ctx, session, live)
        projection = _epoch(ctx, cid)
        fork = _fork(ctx, cid)
        base: dict[str, Any] = {
            "liveMessages": len(live),
            HOST_DELIVERS: host_turn,
            "forkBounded": fork.bounded,
        }
        if stubs:
            base["liveToolStubs"] = stubs

        def live_fallback(reason: str) -> dict[str, Any]:
            if fork.bounded:
                suffix = fb.fork_suffix(live, fork.source_count)
                if suffix:
                    return _result(
                        clamp(suffix, budget, preserve_assistant_tail=host_turn),
                        budget,
                        reason,
                        projection=projection,
                        details=base,
                    )
                bounded = min(budget, fb.bootstrap_budget(effective))
                return _result(
                    fb.bounded_live(live, bounded, host_turn),
                    budget,
                    reason,
                    projection=projection,
                    details=base,
                )
            return _result(
                fb.bounded_live(live, budget, host_turn), budget, reason, projection=projection, details=base
            )

        debt = _debt(ctx, cid)
        if debt is not None and debt[0]:
            reason, info = _degraded_reason(ctx, session, budget, debt)
            base["debt"] = info
            if reason is not None:
                return _result(
                    fb.degraded(live, budget),
                    budget,
                    reason,
                    projection=projection,
                    authority=DEGRADED_AUTHORITY,
                    details=base,
                )
        count, summaries = _counts(ctx, cid)
        if count == 0:
            return live_fallback("no context items")
        if summaries == 0 and count < len(live) and not fork.bounded:
            return live_fallback("live history is longer than the stored context")
        override = resolve_threshold(effective, session_key=session.session_key, model=model)
        result = assemble_context(
            ctx.db,
            cid,
            effective,
            token_budget=budget,
            prompt=prompt,
            fresh_tail_count=override.fresh_tail_count,
            preserve_assistant_tail=host_turn,
            # The reference's assembler never clamps: the one serialized clamp comes last,
            # after the cue and the volatile inputs, and drops the cue before any context.
            final_clamp=False,
        )
        messages: list[dict[str, Any]] = result["messages"]
        # The estimate the recall cue is weighed against: the assembler's own (the items'
        # resolved tokens), or the serialized one once a fork's live suffix is appended.
        pre_recall_tokens: int = result["details"]["resolvedTokens"]
        if fork.bounded:
            suffix = fb.fork_suffix(live, fork.source_count)
            if suffix:
                messages = fb.append_fork_suffix(messages, suffix, budget)
                pre_recall_tokens = fb.total_tokens(messages)
        if (not messages and live) or not fb.has_user(messages):
            return live_fallback("assembly empty" if not messages else "no user message in assembly")
        # Live positions count the host's whole list: a trailing reply stripped as prefill
        # still orders the inputs before it.
        whole_live = [*live, *live_raw[len(live) :]]
        volatile = fb.uncovered_volatile(whole_live, messages)
        if volatile:
            # Placed by live position among the assembled messages; the final clamp makes
            # room (cue first).
            messages = fb.merge_volatile(messages, whole_live, volatile)
        messages, cue = _with_cue(ctx, cid, messages, live, prompt, budget, pre_recall_tokens)
        if cue is not None:
            projection["fingerprint"] = pr.fingerprint(cue)
        details = {**result["details"], **base}
        costs = [message_tokens(m) for m in messages]
        if sum(costs) > clamp_target(budget) and cue is not None:
            # The cue is dropped first whenever the final clamp would cut (§6.7).
            messages, costs, cue = messages[1:], costs[1:], None
            projection.pop("fingerprint", None)
        clamped = clamp(messages, budget, costs, preserve_assistant_tail=host_turn)
        estimated = sum(costs) if clamped is messages else fb.total_tokens(clamped)
        messages = clamped
        details["promptRecall"] = cue is not None
        details["volatileLiveInputs"] = len(volatile)
        return {
            "messages": messages,
            "estimatedTokens": estimated,
            "systemPromptAddition": None,
            "contextProjection": projection,
            "promptAuthority": None,
            "reason": None,
            "details": details,
        }
    except Exception as exc:
        # Step 15: whatever failed, the model still gets a bounded live context.
        return _result(
            fb.bounded_live(live, budget, host_turn),
            budget,
            "assembly failed",
            projection=None,
            details={"liveMessages": len(live), "error": f"{type(exc).__name__}: {exc}"},
        )
