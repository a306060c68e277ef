"""`session.after_turn`: what the host runs after every turn (docs/reference/engine.md §2.7).

The turn's new messages (``messages[prePromptMessageCount:]``, persistable roles only)
are stored, then the context is tested against the threshold (§4.2, with
``contextThresholdOverrides`` resolved by :mod:`lcm_cli.engine.compaction.threshold`), and, when it
is over, compacted now (``proactiveThresholdCompactionMode: inline``) or recorded as one
coalesced ``threshold`` debt row for a later drain (``deferred``, the default).

No summarizer model is called here. ``inline`` compacts with the configured summarizer
only when it is local; with a model configured the local extractive summarizer stands in
and the debt row is recorded too, so the background drain (`lcm serve`'s follow-up,
`lcm maintain`) re-summarizes those interim summaries with the model
(:mod:`lcm_cli.engine.compaction.interim`). ``session.commit_turn`` never compacts: as in
lossless-claw 1.0, whose ``commitTurn`` always takes the deferred route, it records debt.

Each step is its own unit of work under the session's lock, as in the reference: the
transcript reconcile (one transaction), the ingest of the batch (one transaction), the
compaction (one transaction per pass, the summarizer called outside any), the debt row
(one transaction). Bad input is refused before the first of them.

A late callback from an archived isolated-cron run, and an ambiguous same-key rollover
(the bootstrap's guard, :mod:`lcm_cli.engine.session.rollover`), store nothing. A heartbeat-ack
turn is recognised before it is written (it is not stored), and the heartbeat turns the
transcript reconcile already stored are pruned (:mod:`lcm_cli.engine.session.heartbeat`).

Reduced from the reference where a CLI has no host state: no auto-rotate; the
checkpoint is refreshed by the next reconcile rather than after the runtime batch.
"""

from __future__ import annotations

import os
from typing import Any

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction.threshold import evaluate, resolve_threshold
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import (
    AUTO_COMPACTION_SUMMARY,
    CURRENT_TOKEN_COUNT,
    FILE,
    IS_HEARTBEAT,
    MESSAGES,
    MODEL,
    PRE_PROMPT_MESSAGE_COUNT,
    SESSION_FILE,
    TOKEN_BUDGET,
    Request,
)
from lcm_cli.engine.core.registry import FollowUp, Result, operation
from lcm_cli.engine.db.sessions import find_active, queue_key, session_lock
from lcm_cli.engine.session.ingest import (
    PERSISTABLE_ROLES,
    IngestSettings,
    check_message_shape,
    ingest_messages,
    stored_form,
)
from lcm_cli.engine.session.rollover import AMBIGUOUS_REASON, STALE_CRON_REASON, stale_cron_run

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

MODES = ("deferred", "inline")


def _text(content: Any) -> str:
    """The plain text of a message's content (string, or the text of its blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(block) for block in content)
    if isinstance(content, dict):
        for key in ("text", "content", "thinking"):
            if isinstance(content.get(key), (str, list)):
                return _text(content[key])
    return ""


def is_heartbeat_ack(messages: list[dict[str, Any]]) -> bool:
    """Some content mentions ``heartbeat.md`` and an assistant answers exactly ``HEARTBEAT_OK``."""
    mentions = any("heartbeat.md" in _text(m.get("content")).lower() for m in messages)
    acked = any(
        m.get("role") == "assistant" and _text(m.get("content")).strip().upper() == "HEARTBEAT_OK"
        for m in messages
    )
    return mentions and acked


def unflushed_start(conn: Any, conversation_id: int, messages: list[dict[str, Any]]) -> int:
    """How many leading ``messages`` the stored tail already holds (exact alignment).

    The largest k such that the newest k stored rows equal the first k messages by
    stored (role, content): a transcript reconcile that already imported part of this
    turn leaves only the remainder to persist.
    """
    if not messages:
        return 0
    rows = conn.execute(
        "SELECT role, content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?",
        (conversation_id, len(messages)),
    ).fetchall()[::-1]
    built = [(b.role, b.content) for b in (stored_form(m) for m in messages)]
    stored = [(r[0], r[1]) for r in rows]
    for k in range(min(len(stored), len(built)), 0, -1):
        if stored[len(stored) - k :] == built[:k]:
            return k
    return 0


def _covered_by_summary(summary: str, message: dict[str, Any]) -> bool:
    text = _text(message.get("content")).strip()
    return bool(text) and text in summary


def _live_messages(ctx: Context, req: Request) -> list[Any]:
    from lcm_cli.engine.session.inputs import read_input

    needs = "`session.after_turn` needs the live message list of the session"
    messages, _ = read_input({"messages": req[MESSAGES], "file": req[FILE]}, ctx.stdin, needs)
    return messages


@operation("session.after_turn")
def after_turn(ctx: Context, req: Request) -> Result:
    """Persist the turn's new messages and apply the threshold policy."""
    from lcm_cli.engine.assembly.fallback import bootstrap_budget
    from lcm_cli.engine.session.bootstrap import bootstrap_session
    from lcm_cli.engine.session.inputs import request_session, session_id_for_key

    session_id, key = request_session(req)
    messages = _live_messages(ctx, req)
    start = req[PRE_PROMPT_MESSAGE_COUNT] or 0
    if start > len(messages):
        raise invalid_argument(
            f"prePromptMessageCount {start} is larger than the {len(messages)} messages given; "
            "pass how many of them the session had before this turn's prompt.",
            {"prePromptMessageCount": start, "messages": len(messages)},
        )
    for index in range(start, len(messages)):
        check_message_shape(messages[index], index, require_role=False)
    summary = req[AUTO_COMPACTION_SUMMARY]
    is_heartbeat = req[IS_HEARTBEAT]
    effective = ctx.effective
    mode = compaction_mode(effective)
    fresh = [m for m in messages[start:] if m.get("role") in PERSISTABLE_ROLES]
    settings = IngestSettings.from_config(effective)
    if session_id is None:
        session_id = session_id_for_key(ctx, key)
    data: dict[str, Any] = {
        "sessionId": session_id,
        "sessionKey": key,
        "conversationId": None,
        "received": len(messages),
        "newMessages": len(fresh),
        "persisted": False,
        "reason": None,
        "transcript": None,
        "ingest": None,
        "mode": mode,
        "threshold": None,
        "compaction": None,
        "debt": None,
    }
    exclusion = settings.policy.exclusion(session_id, key)
    if exclusion is not None:
        data["reason"] = "session excluded" if exclusion == "excluded" else "stateless session"
        return Result(data)
    store = ctx.store()
    stale = stale_cron_run(store.conn, session_id, key)
    if stale is not None:
        # §2.7 step 3: a late callback from an archived isolated-cron run stores nothing.
        data.update(conversationId=stale, reason=STALE_CRON_REASON)
        return Result(data)

    # Transcript reconcile (§2.7 step 2, §3.6), failing closed: when the database and the
    # transcript cannot be proven to line up, nothing of this turn is stored.
    covered = False
    session_file = req[SESSION_FILE]
    if session_file and os.path.exists(session_file):
        try:
            outcome = bootstrap_session(
                store,
                settings,
                session_id,
                session_file,
                session_key=key,
                max_tokens=bootstrap_budget(effective),
            )
            # An ambiguous rollover (§2.7 step 4) is unsafe too: the key's conversation is
            # another session's, and the batch must not land in it.
            unsafe = bool(outcome.get("capped")) or outcome.get("reason") in (
                "conversation already has messages",
                AMBIGUOUS_REASON,
            )
        except LcmError as exc:
            outcome = {"error": exc.code, "message": exc.message}
            unsafe = True
        data["transcript"] = {
            k: outcome.get(k)
            for k in (
                "importedMessages",
                "reason",
                "anchor",
                "fastPath",
                "readCache",
                "rollover",
                "error",
                "message",
            )
            if k in outcome
        }
        if unsafe:
            data["conversationId"] = outcome.get("conversationId")
            data["reason"] = (
                "unsafe to advance: transcript and database do not line up; nothing stored this turn"
            )
            return Result(data)
        covered = True

    found = find_active(store.conn, session_id, key)
    batch = list(fresh)
    already = 0
    if covered and found is not None:
        already = unflushed_start(store.conn, int(found[0]), batch)
        batch = batch[already:]
    if isinstance(summary, str) and summary.strip():
        batch = [m for m in batch if not _covered_by_summary(summary, m)]
        batch.insert(0, {"role": "user", "content": summary})
    if (batch and is_heartbeat_ack(batch)) or (already and is_heartbeat_ack(fresh)):
        # §2.7 step 8, whatever pruneHeartbeatOk says: the turn is not stored, and what the
        # transcript reconcile already stored of heartbeat turns is pruned.
        data.update(conversationId=int(found[0]) if found is not None else None, reason="heartbeat-ack turn")
        data["ingest"] = {"ingested": 0, "skipped": len(batch), "alreadyStored": already}
        if found is not None:
            from lcm_cli.engine.session.heartbeat import prune_heartbeat_turns

            with session_lock(queue_key(session_id, key)):
                data["heartbeat"] = prune_heartbeat_turns(store, int(found[0]))
        return Result(data)
    if batch:
        result = ingest_messages(
            store, settings, session_id, batch, session_key=key, is_heartbeat=is_heartbeat
        )
        data["ingest"] = {
            "ingested": result["ingested"],
            "skipped": result["skipped"],
            "alreadyStored": already,
            "messages": result["messages"],
        }
        data["persisted"] = result["ingested"] > 0
        found = find_active(store.conn, session_id, key)
    else:
        data["ingest"] = {"ingested": 0, "skipped": 0, "alreadyStored": already, "messages": []}
    return post_turn_threshold(ctx, data, found, session_id, key, req, mode)


def post_turn_threshold(
    ctx: Context,
    data: dict[str, Any],
    found: Any,
    session_id: str,
    key: str | None,
    req: Request,
    mode: str,
) -> Result:
    """After a stored turn: test the threshold (§2.7 step 9, §4.2), then compact or record debt.

    ``found`` is the session's active conversation row (None: nothing is stored, nothing
    to test). Fills ``data``'s ``conversationId``, ``threshold``, ``reason``,
    ``compaction`` and ``debt``; ``req`` carries the host's ``token_budget``,
    ``current_token_count`` and ``model``.
    """
    from lcm_cli.engine.compaction.compactor import Settings

    if found is None:
        data["reason"] = "no conversation for session"
        return Result(data)
    cid, key = int(found[0]), found[2] or key
    data.update(conversationId=cid, sessionKey=key)
    token_budget = req[TOKEN_BUDGET]
    current_token_count = req[CURRENT_TOKEN_COUNT]
    model = req[MODEL]
    store = ctx.store()
    effective = ctx.effective
    resolution = resolve_threshold(effective, session_key=key, model=model)
    tuned = resolution.apply(effective)
    budget = Settings.from_effective(tuned).budget(token_budget)
    items = ci.load_items(store.conn, cid)
    decision = evaluate(resolution, budget, ci.stored_context_tokens(items), current_token_count)
    data["threshold"] = {
        "tokenBudget": budget,
        "storedTokens": decision.stored_tokens,
        "observedTokens": decision.observed_tokens,
        "currentTokens": decision.current_tokens,
        "threshold": decision.threshold,
        "shouldCompact": decision.should_compact,
        **resolution.to_dict(),
    }
    if not decision.should_compact:
        data["reason"] = "below threshold"
        return Result(data, follow_ups=_preparation_follow_up(ctx, store, cid))

    # A batch prepared in the background is published first, with no model call.
    published = _publish_prepared(store, cid, session_id, key, tuned)
    if published is not None:
        data["pending"] = published
        if published["status"] == "published":
            items = ci.load_items(store.conn, cid)
            decision = evaluate(resolution, budget, ci.stored_context_tokens(items), None)
            if not decision.should_compact:
                data["reason"] = "pending summaries published"
                return Result(data, follow_ups=_preparation_follow_up(ctx, store, cid))

    debt_reason: str | None = None
    if mode == "inline":
        compaction = _compact_now(ctx, store, cid, session_id, key, tuned, budget, decision.observed_tokens)
        data["compaction"] = compaction
        data["reason"] = compaction["reason"]
        if not compaction["ok"] or compaction.get("interim"):
            # A failed sweep is still owed; so are interim summaries, which wait for the model.
            debt_reason = "threshold"
    else:
        debt_reason = "threshold"
        data["reason"] = "compaction deferred"
    follow_ups: tuple[FollowUp, ...] = ()
    if debt_reason is not None:
        _record(store, cid, session_id, key, tuned, resolution, budget, decision, items)
        data["debt"] = {"recorded": True, "reason": debt_reason}
        # Not on the host's clock: a warm door drains it after answering; elsewhere it
        # waits for the host's maintain.
        follow_ups = (FollowUp("session.maintain", {"conversation_id": cid}),)
    return Result(data, follow_ups=follow_ups)


def _publish_prepared(
    store: Store, cid: int, session_id: str, key: str | None, tuned: dict[str, Any]
) -> dict[str, Any] | None:
    """Publish the conversation's ready pending batch under the session's lock (no model)."""
    from lcm_cli.engine.compaction.pending.background import publish_ready

    lock_key = queue_key(session_id, key)
    return publish_ready(store, cid, tuned, session_key=key, write_lock=lambda: session_lock(lock_key))


def _preparation_follow_up(ctx: Context, store: Store, cid: int) -> tuple[FollowUp, ...]:
    """Below the threshold, a warm door prepares the next batch between turns (`maintain` in
    `lcm serve`'s follow-up lane) when the summarizer is a model and the file has 1.0's
    pending tables; a local summarizer needs no preparation."""
    from lcm_cli.engine.compaction.interim import is_local
    from lcm_cli.engine.compaction.ops import configured_summarizer
    from lcm_cli.engine.db.pending_state import NODES, has_table

    if not has_table(store.conn, NODES) or is_local(configured_summarizer(ctx)):
        return ()
    return (FollowUp("session.maintain", {"conversation_id": cid}),)


def compaction_mode(effective: dict[str, Any]) -> str:
    """``proactiveThresholdCompactionMode``: one of :data:`MODES` (the resolver lets only a
    member of the declared enum through, lowercased, else the declared default)."""
    from lcm_cli.engine.config.view import EngineSettings

    return str(EngineSettings(effective).proactive_threshold_compaction_mode)


def _compact_now(
    ctx: Context,
    store: Store,
    cid: int,
    session_id: str,
    key: str | None,
    tuned: dict[str, Any],
    budget: int,
    observed: int | None,
) -> dict[str, Any]:
    """``inline`` mode: the threshold route now, on the turn's path, so with no model call.

    The configured summarizer runs when it is local; a configured model is stood in for by
    the extractive summarizer, whose interim summaries the next drain re-summarizes with
    the model (:mod:`lcm_cli.engine.compaction.interim`). The session's lock is taken
    around each write.
    """
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.compaction.interim import is_interim, turn_path_summarizer
    from lcm_cli.engine.compaction.ops import configured_summarizer

    summarizer = turn_path_summarizer(configured_summarizer(ctx))
    lock_key = queue_key(session_id, key)
    compactor = Compactor(store, cid, tuned, summarizer, write_lock=lambda: session_lock(lock_key))
    outcome = compactor.compact(token_budget=budget, target="threshold", current_token_count=observed)
    keep = ("ok", "compacted", "reason", "result", "exhausted", "failure")
    out = {k: outcome[k] for k in keep if k in outcome}
    out["passes"] = len(outcome.get("passes") or ())
    out["summarizer"] = summarizer.model
    out["interim"] = is_interim(summarizer) and out["passes"] > 0
    return out


def _record(
    store: Store,
    cid: int,
    session_id: str,
    key: str | None,
    tuned: dict[str, Any],
    resolution: Any,
    budget: int,
    decision: Any,
    items: list[Any],
) -> None:
    """One coalesced ``threshold`` debt row (§4.12), under the session's lock."""
    from lcm_cli.engine.compaction.compactor import Compactor, record_debt
    from lcm_cli.engine.compaction.ops import PlanningSummarizer

    raw_outside = Compactor(store, cid, tuned, PlanningSummarizer()).raw_tokens_outside_tail(items)
    with session_lock(queue_key(session_id, key)):
        record_debt(
            store,
            cid,
            reason="threshold",
            token_budget=budget,
            current_token_count=decision.current_tokens,
            projected_token_count=decision.current_tokens if decision.observed_tokens is not None else None,
            raw_tokens_outside_tail=raw_outside,
            context_threshold=resolution.context_threshold,
            context_threshold_source=resolution.source,
            context_fresh_tail_count=resolution.fresh_tail_count,
            context_leaf_chunk_tokens=resolution.leaf_chunk_tokens,
        )
