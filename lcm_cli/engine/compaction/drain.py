"""Draining deferred compaction debt: the threshold route run later, with its bookkeeping.

The drain is what `maintain`, `lcm serve`'s follow-up after a turn and `assemble`'s
emergency path run. It publishes a batch prepared in the background first
(:mod:`lcm_cli.engine.compaction.pending`, no model call), then re-summarizes the turn
path's interim summaries (:mod:`lcm_cli.engine.compaction.interim`), so it sits above the
compactor and both of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction.compactor import Compactor
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store.stamps import iso_timestamp, parse_timestamp

_BREAKER_OPEN = "summary provider circuit breaker is open"
_BACKOFF_EXEMPT = ("provider auth failure", _BREAKER_OPEN)


def drain_debt(
    compactor: Compactor,
    *,
    token_budget: int | None = None,
    force: bool = False,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> dict[str, Any]:
    """Run pending compaction debt through the threshold route, bookkeeping the row (§4.12).

    The drain passes the process's circuit breaker as any compaction does: an open breaker
    keeps the debt pending without calling the model, an auth failure counts towards it,
    a drain that compacted closes it.

    Interim summaries (:mod:`lcm_cli.engine.compaction.interim`): a drain with a model
    first re-summarizes the ones the turn path wrote, within the chain's deadline
    (``compactUntilUnderDeadlineMs``); a drain with the interim summarizer itself (the
    turn path's) keeps the debt pending while interim summaries remain, and leaves the
    model's retry backoff as it was. Debt recorded while the drain ran stays pending.

    Bookkeeping writes take the compactor's ``write_lock``; the summarizer calls do not.
    """
    from lcm_cli.engine.compaction import interim
    from lcm_cli.engine.compaction.pending.background import publish_ready
    from lcm_cli.engine.summarize.guards import breaker_key, circuit_breaker

    store, cid = compactor.store, compactor.cid
    row = store.conn.execute(
        "SELECT pending, running, reason, token_budget, next_attempt_after, retry_attempts, requested_at"
        " FROM conversation_compaction_maintenance WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    if row is None or not (row[0] or row[1]):
        return {"changed": False, "reason": "no deferred compaction debt"}
    pending, running, reason, recorded_budget, next_after, attempts, requested_at = row
    stand_in = interim.is_interim(compactor.summarizer)
    start = now()
    next_moment = parse_timestamp(next_after)
    if next_moment is not None and next_moment > start and not force:
        return {
            "changed": False,
            "reason": "deferred compaction backoff active",
            "nextAttemptAfter": next_after,
        }
    with compactor.write_lock():
        store.set_maintenance(cid, pending=False, running=True, last_started_at=iso_timestamp(start))

    def finish(keep_pending: bool, failure: str | None) -> None:
        with compactor.write_lock(), store.transaction() as conn:
            latest = conn.execute(
                "SELECT requested_at FROM conversation_compaction_maintenance WHERE conversation_id = ?",
                (cid,),
            ).fetchone()
            # A turn recorded new debt while this drain ran: it is still owed.
            recorded_meanwhile = latest is not None and latest[0] != requested_at
            _finish_debt(
                store,
                cid,
                keep_pending=keep_pending or recorded_meanwhile,
                failure=failure,
                attempts=attempts,
                now=now(),
                keep_backoff=(next_after, attempts) if stand_in else None,
            )

    budgets = [b for b in (token_budget, recorded_budget) if b and b > 0]
    budget = compactor.settings.budget(min(budgets) if budgets else None)
    refined: dict[str, Any] | None = None
    published: dict[str, Any] | None = None
    try:
        if reason and reason != "threshold" and not interim.count(store.conn, cid):
            items = compactor.items()
            if ci.stored_context_tokens(items) <= compactor.settings.threshold(budget):
                finish(False, None)
                return {"changed": False, "reason": "legacy deferred compaction no longer needed"}
        # A batch prepared in the background is published first: no model call, and it may
        # be all the compaction this debt needs.
        published = publish_ready(store, cid, compactor.effective, write_lock=compactor.write_lock)
        if published is not None and published["status"] == "published":
            under = ci.stored_context_tokens(compactor.items()) <= compactor.settings.threshold(budget)
            if under and not interim.count(store.conn, cid):
                finish(False, None)
                return {"changed": True, "reason": "pending summaries published", "pending": published}
        breaker, key = circuit_breaker(compactor.effective), breaker_key(compactor.summarizer)
        if breaker.is_open(key):
            finish(True, _BREAKER_OPEN)
            return {"changed": False, "reason": "circuit breaker open"}
        deadline = compactor.clock() + compactor.settings.until_under_deadline_ms / 1000
        if not interim.is_local(compactor.summarizer):
            refined = interim.refine(compactor, deadline=deadline)
            if refined["authFailure"]:
                breaker.record_auth_failure(key)
                finish(True, "provider auth failure")
                return {
                    "changed": bool(refined["refined"]),
                    "reason": "provider auth failure",
                    "interim": refined,
                }
            if refined["failure"]:
                finish(True, refined["failure"])
                return {
                    "changed": bool(refined["refined"]),
                    "reason": "summarizer failed",
                    "interim": refined,
                }
        result = compactor.compact(token_budget=budget, target="threshold")
        if result["reason"].startswith("provider auth failure"):
            breaker.record_auth_failure(key)
        elif result["compacted"] or (refined and refined["refined"]):
            breaker.record_success(key)
    except Exception as exc:
        finish(True, f"{type(exc).__name__}: {exc}")
        raise
    exhausted = bool(result.get("exhausted"))
    keep = not result["ok"] and not exhausted
    failure = None if result["ok"] or exhausted else (result.get("failure") or result["reason"])
    if stand_in:
        # The turn path's summaries wait for the model: the debt stays for the next drain.
        keep = keep or interim.count(store.conn, cid) > 0
    elif refined is not None and refined["remaining"]:
        keep = True  # out of time before every interim summary was re-summarized
    finish(keep, failure)
    out: dict[str, Any] = {
        "changed": bool(result["compacted"]) or bool(refined and refined["refined"]),
        "reason": result["reason"],
        "compaction": result,
    }
    if refined is not None and (refined["refined"] or refined["remaining"] or refined["skipped"]):
        out["interim"] = refined
    if published is not None:
        out["pending"] = published
        out["changed"] = out["changed"] or published["status"] == "published"
    return out


def _finish_debt(
    store: Store,
    cid: int,
    *,
    keep_pending: bool,
    failure: str | None,
    attempts: int,
    now: datetime,
    keep_backoff: tuple[str | None, int] | None = None,
) -> None:
    stamp = iso_timestamp(now)
    next_after: str | None
    if keep_backoff is not None:
        # A local drain says nothing about the model: its retry state is kept as it was.
        next_after, attempts = keep_backoff
    elif failure and not any(marker in failure for marker in _BACKOFF_EXEMPT):
        attempts = (attempts or 0) + 1
        delay = min(timedelta(minutes=5) * 2 ** (attempts - 1), timedelta(minutes=30))
        next_after = iso_timestamp(now + delay)
    else:
        attempts, next_after = 0, None
    store.set_maintenance(
        cid,
        running=False,
        pending=keep_pending,
        last_finished_at=stamp,
        last_failure_summary=failure,
        retry_attempts=attempts,
        next_attempt_after=next_after,
        updated_at=stamp,
    )
