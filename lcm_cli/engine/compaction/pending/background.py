"""The two doors of pending summaries: prepare in the background, publish at the threshold.

:func:`prepare` is what `maintain` and `lcm serve`'s follow-up lane run between turns:
coordinator steps with the ``prepare-only`` policy (plan, then one node per step with the
summarizer model) until the batch is ready, nothing is claimable, a failure, or the time
budget (``pendingPreparationBudgetMs``) runs out; a model call already started finishes
(its lease covers it). :func:`publish_ready` is what the turn path runs when the threshold
is crossed: ``publish-ready-only``, so no claim and no model call, only the revalidated
publication of what is already prepared.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from lcm_cli.engine.compaction.pending.coordinator import Coordinator
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import Summarizer

#: Results after which another preparation step may do more.
_PROGRESS = ("planned", "prepared")


def prepare(
    store: Store,
    conversation_id: int,
    effective: Mapping[str, Any],
    summarizer: Summarizer,
    *,
    budget_ms: int,
    session_key: str | None = None,
    lease_owner: str = "lcm",
    write_lock: Callable[[], AbstractContextManager[None]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Prepare pending summaries for up to ``budget_ms`` (0: nothing); a summary of what ran."""
    coordinator = Coordinator(
        store, conversation_id, effective, summarizer, session_key=session_key, lease_owner=lease_owner,
        write_lock=write_lock,
    )  # fmt: skip
    if budget_ms <= 0 or not coordinator.available():
        return {"steps": 0, "prepared": 0, "status": "idle", "reason": "pending preparation disabled"}
    deadline = clock() + budget_ms / 1000
    steps = prepared = 0
    last: dict[str, Any] = {"status": "idle", "reason": "pending preparation budget spent"}
    while clock() < deadline:
        last = coordinator.run_once("prepare-only")
        steps += 1
        prepared += last["status"] == "prepared"
        if last["status"] not in _PROGRESS:
            break
    else:
        if steps:
            last = {**last, "reason": "pending preparation budget spent"}
    out = {"steps": steps, "prepared": prepared, **last}
    out.setdefault("reason", last["status"])
    return out


def publish_ready(
    store: Store,
    conversation_id: int,
    effective: Mapping[str, Any],
    *,
    session_key: str | None = None,
    write_lock: Callable[[], AbstractContextManager[None]] | None = None,
) -> dict[str, Any] | None:
    """Publish the conversation's ready batch, if any, without a model (None: nothing published)."""
    coordinator = Coordinator(
        store, conversation_id, effective, None, session_key=session_key, write_lock=write_lock
    )
    if not coordinator.available():
        return None
    result = coordinator.run_once("publish-ready-only")
    return result if result["status"] in ("published", "stale") else None
