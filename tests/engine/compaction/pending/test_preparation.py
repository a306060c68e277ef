"""Preparing pending summaries in the background (compaction/pending/coordinator.py).

Leases, retries with 1.0's backoff, auth failures and the spend guard, on real files; then
`maintain` with a real chat-completions endpoint on 127.0.0.1 preparing within its time
budget, and the turn path publishing what it prepared without asking the model.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.compaction.pending import rows
from lcm_cli.engine.compaction.pending.background import prepare
from lcm_cli.engine.compaction.pending.coordinator import Coordinator
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import SpendLimitError, SummaryRequest
from tests.support.compaction_sim import (
    HeadSummarizer,
    auth_failing,
    check_invariants,
    effective,
    new_conversation,
    turn_rows,
)

CONFIG = {
    "freshTailCount": 16,
    "leafChunkTokens": 1500,
    "condensedMinFanout": 3,
    "condensedTargetTokens": 100,
}
T0 = datetime(2026, 7, 2, 12, 0, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Crashing(HeadSummarizer):
    """Raises inside the summarizer (escalation does not absorb it)."""

    def summarize(self, request: SummaryRequest) -> str:
        self.calls.append(request)
        raise RuntimeError("endpoint crashed")


class Refusing(HeadSummarizer):
    def summarize(self, request: SummaryRequest) -> str:
        raise SpendLimitError("summary spend backoff open")


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = Store.open(tmp_path / "lcm.db")
    cid = new_conversation(s)
    s.add_messages(cid, turn_rows(0, 200))
    yield s
    s.close()


def coordinator(store: Store, summarizer: Any, clock: Clock, owner: str = "lcm:test") -> Coordinator:
    return Coordinator(store, 1, effective(**CONFIG), summarizer, lease_owner=owner, now=clock)


def node_states(store: Store) -> list[tuple[Any, ...]]:
    return store.conn.execute(
        "SELECT status, retry_count, lease_owner, next_attempt_after, failure_summary IS NOT NULL"
        " FROM pending_summary_nodes ORDER BY ordinal_start, depth"
    ).fetchall()


def test_plan_then_one_node_a_step_until_ready(store: Store) -> None:
    clock = Clock()
    summarizer = HeadSummarizer()
    co = coordinator(store, summarizer, clock)
    statuses = [co.run_once("prepare-only")["status"] for _ in range(8)]
    assert statuses == ["planned"] + ["prepared"] * 5 + ["ready", "ready"]
    assert len(summarizer.calls) == 5
    nodes = rows.batch_nodes(store.conn, rows.active_batch(store.conn, 1).batch_id)  # type: ignore[union-attr]
    assert all(n.status == "ready" and n.content and n.token_count and n.lease_owner is None for n in nodes)
    # Preparation publishes nothing: the context is as it was.
    assert (
        store.conn.execute("SELECT COUNT(*) FROM context_items WHERE item_type = 'summary'").fetchone()[0]
        == 0
    )


def test_a_failed_node_waits_out_its_backoff_and_three_failures_stale_the_batch(store: Store) -> None:
    clock = Clock()
    co = coordinator(store, Crashing(), clock)
    assert co.run_once("prepare-only")["status"] == "planned"
    failed = co.run_once("prepare-only")
    assert failed["status"] == "failed" and "endpoint crashed" in failed["failureSummary"]
    first = node_states(store)[0]
    assert first[:3] == ("failed", 1, None)
    assert first[3] == "2026-07-02T12:01:00.000Z"  # 1 minute, as 1.0
    # Within the backoff the next node is tried; the failed one is not claimable.
    assert co.run_once("prepare-only")["nodeId"].endswith("-leaf-32-62")
    for minutes in (1, 3):  # backoffs of 1, then 2 minutes
        clock.now = T0 + timedelta(minutes=minutes, seconds=1)
        result = co.run_once("prepare-only")
        assert result["status"] == "failed"
    states = node_states(store)
    assert {s[0] for s in states} == {"stale"}
    batch = store.conn.execute("SELECT status, failure_summary FROM pending_compaction_batches").fetchone()
    assert batch[0] == "stale" and "endpoint crashed" in batch[1]


def test_an_auth_failure_stales_the_batch_at_once(store: Store) -> None:
    co = coordinator(store, auth_failing(), Clock())
    co.run_once("prepare-only")
    result = co.run_once("prepare-only")
    assert result["status"] == "failed" and result.get("authFailure") is True
    assert store.conn.execute("SELECT status FROM pending_compaction_batches").fetchone()[0] == "stale"


def test_a_spend_guard_refusal_gives_the_claim_back_untouched(store: Store) -> None:
    co = coordinator(store, Refusing(), Clock())
    co.run_once("prepare-only")
    assert co.run_once("prepare-only") == {"status": "idle", "reason": "summary spend backoff open"}
    assert {s[:3] for s in node_states(store)} == {("planned", 0, None)}


def test_an_expired_lease_is_taken_over_and_the_late_answer_is_dropped(store: Store) -> None:
    clock = Clock()
    first = coordinator(store, HeadSummarizer(), clock, owner="lcm:a")
    first.run_once("prepare-only")
    with store.transaction() as conn:
        claimed = rows.claim_next(conn, 1, "lcm:a", 60_000, clock.now)
    assert claimed is not None and claimed.status == "running"
    clock.now = T0 + timedelta(seconds=61)
    second = coordinator(store, HeadSummarizer(), clock, owner="lcm:b")
    taken = second.run_once("prepare-only")
    assert taken["status"] == "prepared" and taken["nodeId"] == claimed.node_id
    with store.transaction() as conn:
        assert not rows.mark_ready(conn, claimed, "lcm:a", "late", 1, clock.now)
    assert rows.get_node(store.conn, claimed.node_id).content != "late"  # type: ignore[union-attr]


def test_a_rewritten_context_stales_the_batch_before_publication(store: Store) -> None:
    co = coordinator(store, HeadSummarizer(), Clock())
    for _ in range(7):
        co.run_once("prepare-only")
    with store.transaction() as conn:
        conn.execute("DELETE FROM context_items WHERE conversation_id = 1 AND ordinal = 3")
    result = co.run_once("publish-ready-only")
    assert result["status"] == "stale"
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0


def test_prepare_stops_at_its_time_budget(store: Store) -> None:
    ticks = iter(range(100))
    summarizer = HeadSummarizer()
    out = prepare(store, 1, effective(**CONFIG), summarizer, budget_ms=2500, clock=lambda: float(next(ticks)))
    # The clock moves 1 s a read: the budget admits two steps (plan, then one node).
    assert out["steps"] == 2 and out["prepared"] == 1
    assert out["reason"] == "pending preparation budget spent"
    assert prepare(store, 1, effective(**CONFIG), summarizer, budget_ms=0)["steps"] == 0


def test_a_published_prepared_batch_keeps_the_dag_whole(store: Store) -> None:
    co = coordinator(store, HeadSummarizer(), Clock())
    for _ in range(3):
        for _ in range(12):
            if co.run_once("prepare-only")["status"] not in ("planned", "prepared"):
                break
        assert co.run_once("publish-ready-only")["status"] == "published"
        store.add_messages(
            1, turn_rows(1000 + store.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0], 120)
        )
    check_invariants(store.conn, 1)
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()
