"""Compaction: tail rule, chunk selection, passes, the sweep, record fields, failures, debt."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.assembly.assembler import assemble
from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction.compactor import Compactor, LeafContext, record_debt
from lcm_cli.engine.compaction.drain import drain_debt
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store import Store
from tests.support.compaction_sim import (
    FailingSummarizer,
    HeadSummarizer,
    auth_failing,
    check_invariants,
    context_shape,
    effective,
    file_ids,
    new_conversation,
    stamp,
    turn_rows,
)


class Row:
    def __init__(self, ordinal: int, role: str | None, tokens: int = 10) -> None:
        self.ordinal = ordinal
        self.role = role
        self.is_message = role is not None
        self.tokens = tokens


def boundary(roles: list[str | None], count: int, cap: int | None = None, tokens: int = 10) -> int:
    return ci.tail_boundary([Row(i, r, tokens) for i, r in enumerate(roles)], count, cap)


# --------------------------------------------------------------------------
# Fresh tail (§4.3)
# --------------------------------------------------------------------------


def test_tail_counts_raw_messages_only_and_reaches_back_to_the_newest_user() -> None:
    roles: list[str | None] = [None, "user", "assistant", "assistant", "assistant", "assistant"]
    # count 2 would stop after two assistants, but the newest user (ordinal 1) must be inside.
    assert boundary(roles, 2) == 1
    assert boundary(["user", "assistant", "user", "assistant"], 2) == 2
    assert boundary(["user", "assistant", "user", "assistant"], 3) == 1
    assert boundary(["user", "assistant"], 0) == 2  # no tail: boundary past the end
    assert boundary([None, None], 5) == 2  # no raw messages, no tail


def test_tail_token_cap_applies_once_the_user_is_inside_and_the_newest_is_always_kept() -> None:
    roles: list[str | None] = ["user", "assistant", "user", "assistant", "assistant"]
    assert boundary(roles, 10, cap=25) == 2  # 3 messages x 10 > 25 after the user at 2
    assert boundary(roles, 10, cap=5) == 2  # cap ignored until the user is inside
    assert boundary(["assistant"], 10, cap=1, tokens=100) == 0  # newest always protected


# --------------------------------------------------------------------------
# Leaf chunk selection and leaf passes
# --------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(tmp_path / "lcm.db") as opened:
        yield opened


def test_leaf_chunk_is_the_oldest_raw_run_capped_at_leaf_chunk_tokens(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(
        cid, [{"role": "user", "content": "x" * 400, "created_at": stamp(i)} for i in range(12)]
    )
    compactor = Compactor(store, cid, effective(leafChunkTokens=250, freshTailCount=2), HeadSummarizer())
    items = compactor.items()
    edge = compactor.boundary(items)
    assert edge == 10
    chunk = compactor.leaf_chunk(items, edge, -1)
    assert [i.ordinal for i in chunk] == [0, 1]  # 100 + 100 = 200, +100 would pass 250
    big = Compactor(store, cid, effective(leafChunkTokens=50, freshTailCount=2), HeadSummarizer())
    assert [i.ordinal for i in big.leaf_chunk(items, edge, -1)] == [0]  # first message always taken
    assert [i.ordinal for i in big.leaf_chunk(items, edge, 4)] == [5]  # scan-after skips


def test_leaf_source_text_headers_speaker_and_timezone(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(
        cid,
        [
            {
                "role": "user",
                "content": "deploy to prod <relevant-memories>secret memo</relevant-memories>",
                "created_at": "2026-07-01 09:05:00",
                "sender_metadata": {"senderId": "42", "senderName": "Ada"},
            },
            {
                "role": "assistant",
                "content": "done: see file_0123456789ABCDEF",
                "created_at": "2026-07-01 09:06:00",
            },
            {"role": "tool", "content": "", "created_at": "2026-07-01 09:07:00"},
        ],
    )
    compactor = Compactor(store, cid, effective(timezone="Europe/Berlin"), HeadSummarizer())
    text, texts = compactor.leaf_source(compactor.items())
    # The zone as Intl en-US short names spell it (docs/compat.md, the row on the zone in
    # summarizer source headers): "GMT+2", not "CEST".
    assert text == (
        '[2026-07-01 11:05 GMT+2 | user | speaker (untrusted metadata): {"senderId":"42","senderName":"Ada"}]\n'
        "deploy to prod\n\n"
        "[2026-07-01 11:06 GMT+2 | assistant]\ndone: see file_0123456789ABCDEF"
    )
    utc = Compactor(store, cid, effective(), HeadSummarizer())
    assert utc.leaf_source(utc.items())[0].startswith("[2026-07-01 09:05 UTC | user | speaker")
    assert len(texts) == 2


def test_leaf_and_condensed_records_fill_the_columns_as_database_md_describes(store: Store) -> None:
    """The summaries columns of docs/reference/database.md §3.4 and the links of §3.5;
    the speaker's cost is the docs/compat.md row on sender metadata in the leaf source."""
    cid = new_conversation(store)
    rows = turn_rows(0, 40)
    rows[0]["sender_metadata"] = {"senderName": "Ada"}
    rows[3]["content"] += " wrote FILE_00112233445566AA"
    store.add_messages(cid, rows)
    summarizer = HeadSummarizer()
    config = effective(leafChunkTokens=300, freshTailCount=4, leafMinFanout=2, condensedTargetTokens=10)
    compactor = Compactor(store, cid, config, summarizer)
    items = compactor.items()
    chunk = compactor.leaf_chunk(items, compactor.boundary(items), -1)
    outcome = compactor.leaf_pass(chunk, None)
    assert outcome.status == "done" and outcome.record is not None
    sid = outcome.record["summaryId"]
    assert re.fullmatch(r"sum_[0-9a-f]{16}", sid)
    row = store.conn.execute("SELECT * FROM summaries WHERE summary_id = ?", (sid,)).fetchone()
    cols = [d[0] for d in store.conn.execute("SELECT * FROM summaries LIMIT 0").description]
    leaf = dict(zip(cols, row))
    speaker = ci.speaker_line(json.dumps({"senderName": "Ada"}))
    msg_tokens = [estimate_tokens(r["content"]) for r in rows[: len(chunk)]]
    assert leaf["kind"] == "leaf" and leaf["depth"] == 0
    assert leaf["token_count"] == estimate_tokens(leaf["content"])
    assert leaf["earliest_at"] == "2026-07-01T09:00:00.000Z"
    assert (
        leaf["latest_at"]
        == f"2026-07-01T09:{(len(chunk) - 1) * 30 // 60:02d}:{(len(chunk) - 1) * 30 % 60:02d}.000Z"
    )
    assert leaf["descendant_count"] == 0 and leaf["descendant_token_count"] == 0
    # The speaker label costs its own estimate, without the " | " that joins it to the header.
    assert leaf["source_message_token_count"] == sum(msg_tokens) + estimate_tokens(speaker[3:])
    assert file_ids(leaf["file_ids"]) == ["file_00112233445566aa"]
    assert leaf["model"] == "test/head"  # the test summarizer's own label (it has no model_id)
    links = store.conn.execute(
        "SELECT message_id, ordinal FROM summary_messages WHERE summary_id = ? ORDER BY ordinal", (sid,)
    ).fetchall()
    assert [m for m, _ in links] == [i.message_id for i in chunk]
    # The chunk's range became one summary item, and ordinals are 0..N-1 again.
    assert context_shape(store.conn, cid)[0] == ("summary", sid)
    check_invariants(store.conn, cid)

    # A second leaf, then condense both.
    items = compactor.items()
    second = compactor.leaf_pass(compactor.leaf_chunk(items, compactor.boundary(items), -1), leaf["content"])
    assert second.status == "done" and second.record is not None
    assert summarizer.calls[-1].previous_context == leaf["content"]
    items = compactor.items()
    chunk = compactor.condensed_candidate(items, compactor.boundary(items), hard=False)
    assert chunk is not None and len(chunk) == 2
    done = compactor.condensed_pass(chunk, None)
    assert done.record is not None
    cond = dict(
        zip(
            cols,
            store.conn.execute(
                "SELECT * FROM summaries WHERE summary_id = ?", (done.record["summaryId"],)
            ).fetchone(),
        )
    )
    sources = [
        dict(zip(cols, store.conn.execute("SELECT * FROM summaries WHERE summary_id = ?", (s,)).fetchone()))
        for s in (sid, second.record["summaryId"])
    ]
    assert cond["kind"] == "condensed" and cond["depth"] == 1
    assert cond["descendant_count"] == 2
    assert cond["descendant_token_count"] == sum(s["token_count"] for s in sources)
    assert cond["source_message_token_count"] == sum(s["source_message_token_count"] for s in sources)
    assert cond["earliest_at"] == sources[0]["earliest_at"] and cond["latest_at"] == sources[1]["latest_at"]
    assert file_ids(cond["file_ids"])[0] == "file_00112233445566aa"
    assert summarizer.calls[-1].depth == 1
    check_invariants(store.conn, cid)


def test_empty_source_chunk_is_skipped_and_nothing_is_written(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, [{"role": "tool", "content": "", "created_at": stamp(i)} for i in range(6)])
    store.add_messages(cid, [{"role": "user", "content": "hello"}])
    summarizer = HeadSummarizer()
    compactor = Compactor(store, cid, effective(freshTailCount=1), summarizer)
    result = compactor.full_sweep(token_budget=1000, force=True)
    assert result.passes == [] and result.skipped[0]["reason"] == "empty-source"
    assert summarizer.calls == []
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0
    check_invariants(store.conn, cid)


def three_leaf_passes(store: Store, rule: LeafContext) -> tuple[list[str | None], list[str]]:
    """Three leaf passes under ``rule`` over a fresh conversation: the previous context
    each model call was given, and the leaves written."""
    cid = new_conversation(store, f"agent:main:{rule}")
    store.add_messages(cid, turn_rows(0, 40))
    summarizer = HeadSummarizer()
    compactor = Compactor(store, cid, effective(leafChunkTokens=300, freshTailCount=4), summarizer)
    asked: list[int] = []

    def proceed() -> bool:
        asked.append(len(summarizer.calls))
        return len(asked) <= 3

    steps = list(compactor.leaf_passes(rule, proceed=proceed))
    assert [outcome.status for _, outcome in steps] == ["done"] * 3
    assert asked == [0, 1, 2, 3]  # a fourth chunk was there; no model call was made for it
    assert len(summarizer.calls) == 3
    check_invariants(store.conn, cid)
    return [call.previous_context for call in summarizer.calls], [outcome.content for _, outcome in steps]


def test_leaf_passes_pick_previous_context_by_rule_and_ask_before_each_model_call(store: Store) -> None:
    """The sweep's rule chains the last leaf written; compactLeaf's (rotate's) takes the two
    nearest summaries every time (§5.4); ``proceed`` says no before the model call."""
    previous, written = three_leaf_passes(store, "sweep")
    assert previous == [None, written[0], written[1]]
    previous, written = three_leaf_passes(store, "nearest")
    assert previous == [None, written[0], written[0] + "\n\n" + written[1]]


# --------------------------------------------------------------------------
# Sweep and routing
# --------------------------------------------------------------------------


def test_full_sweep_converts_everything_outside_the_tail_then_condenses(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 400))
    config = effective(maxSweepIterations=200, summaryPrefixTargetTokens=200)
    compactor = Compactor(store, cid, config, HeadSummarizer())
    tail_before = context_shape(store.conn, cid)[-16:]
    result = compactor.full_sweep(token_budget=6000, force=True)
    kinds = [p["kind"] for p in result.passes]
    assert kinds[0] == "leaf" and "condensed" in kinds
    assert kinds.index("condensed") > max(i for i, k in enumerate(kinds) if k == "leaf")  # leaves first
    assert context_shape(store.conn, cid)[-16:] == tail_before  # fresh tail untouched
    assert compactor.raw_tokens_outside_tail(compactor.items()) == 0
    assert result.tokens_after == ci.stored_context_tokens(compactor.items())  # delta tracking is exact
    check_invariants(store.conn, cid)


def test_sweep_is_bounded_by_max_sweep_iterations_and_deadline(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 400))
    compactor = Compactor(store, cid, effective(maxSweepIterations=3), HeadSummarizer())
    result = compactor.full_sweep(token_budget=6000, force=True)
    assert len(result.passes) == 3 and result.stopped_at_budget
    ticks = iter(range(0, 10**6, 50))  # every clock read advances 50 s
    slow = Compactor(
        store, cid, effective(sweepDeadlineMs=120000), HeadSummarizer(), clock=lambda: float(next(ticks))
    )
    result = slow.full_sweep(token_budget=6000, force=True)
    assert result.stopped_at_budget and len(result.passes) <= 3
    check_invariants(store.conn, cid)


def test_below_threshold_does_nothing_unless_forced_or_manual(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 60))
    compactor = Compactor(store, cid, effective(), HeadSummarizer())
    assert compactor.compact(token_budget=100000)["reason"] == "below threshold"
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0
    done = compactor.compact(token_budget=100000, manual=True)
    assert done["compacted"] and done["reason"] == "compacted"
    again = compactor.compact(token_budget=100000, manual=True)
    # Nothing left to do and under the target: "already under target", one of the reasons of
    # docs/reference/engine.md §4.9 ("nothing to compact" is the manual verdict still over it).
    assert not again["compacted"] and again["ok"] and again["reason"] == "already under target"


def test_budget_route_compacts_until_under_the_budget(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 600))
    compactor = Compactor(store, cid, effective(), HeadSummarizer())
    before = ci.stored_context_tokens(compactor.items())
    result = compactor.compact(token_budget=4000)
    assert result["ok"] and result["reason"] == "compacted"
    assert result["result"]["tokensBefore"] == before
    assert result["result"]["tokensAfter"] <= 4000
    assert ci.stored_context_tokens(compactor.items()) == result["result"]["tokensAfter"]
    check_invariants(store.conn, cid)


def test_thousands_of_messages_compacted_turn_by_turn_lose_nothing(store: Store) -> None:
    """The simulated conversation: 3000 messages in 60 turns, compaction after each turn.

    The threshold leaves room for assembly's framing (JSON blocks, usage, XML), which the
    stored token counts do not include.
    """
    cid = new_conversation(store)
    config = effective(contextThreshold=0.5, summaryPrefixTargetTokens=250)
    budget = 6000
    summarizer = HeadSummarizer()
    compactor = Compactor(store, cid, config, summarizer)
    depths_seen: set[int] = set()
    for turn in range(60):
        store.add_messages(cid, turn_rows(turn * 50, 50))
        result = compactor.compact(token_budget=budget, target="threshold")
        assert result["ok"], result
        check_invariants(store.conn, cid)
        items = compactor.items()
        stored = ci.stored_context_tokens(items)
        assert stored <= compactor.settings.threshold(budget), (turn, stored)
        # The fresh tail is the newest 16 messages, still raw and in order.
        newest = [
            r[0]
            for r in store.conn.execute(
                "SELECT message_id FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 16", (cid,)
            )
        ]
        assert [i.message_id for i in items[-16:]] == newest[::-1]
        assembled = assemble(store.conn, cid, config, token_budget=budget)
        assert assembled["estimatedTokens"] <= budget
        texts = [
            m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in assembled["messages"]
        ]
        contents = [
            r[0]
            for r in store.conn.execute(
                "SELECT content FROM messages WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (json.dumps(newest),),
            )
        ]
        assert texts[-16:] == contents  # the tail is always assembled, in order
        assert assembled["details"]["freshTailItems"] == 16
        depths_seen |= {d for (d,) in store.conn.execute("SELECT DISTINCT depth FROM summaries")}
    assert store.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 3000
    assert {0, 1, 2} <= depths_seen  # the pressure phase built deeper nodes


# --------------------------------------------------------------------------
# Failures: summarizer down, auth failure, another writer, busy database
# --------------------------------------------------------------------------


def test_summarizer_failure_writes_nothing_and_is_reported(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 200))
    shape = context_shape(store.conn, cid)
    compactor = Compactor(store, cid, effective(), FailingSummarizer(0))
    result = compactor.compact(token_budget=4000, manual=True)
    assert not result["ok"] and not result["compacted"]
    assert result["reason"] == "summarizer failed" and "endpoint down" in result["failure"]
    assert context_shape(store.conn, cid) == shape
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0


def test_failure_mid_sweep_keeps_the_passes_before_it(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 300))
    compactor = Compactor(store, cid, effective(), FailingSummarizer(2))
    result = compactor.compact(token_budget=4000, manual=True)
    assert result["reason"] == "summarizer failed" and len(result["passes"]) == 2
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 2
    check_invariants(store.conn, cid)


def test_auth_failure_stops_the_sweep(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 200))
    result = Compactor(store, cid, effective(), auth_failing()).compact(token_budget=4000, manual=True)
    assert result["reason"] == "provider auth failure" and not result["ok"]
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0


class InterferingSummarizer(HeadSummarizer):
    """While 'thinking', another writer compacts the same messages (a racing process)."""

    def __init__(self, path: Path, cid: int) -> None:
        super().__init__()
        self.path, self.cid = path, cid

    def summarize(self, request: Any) -> str:
        if not self.calls:
            with Store.open(self.path) as other:
                Compactor(other, self.cid, effective(maxSweepIterations=1), HeadSummarizer()).full_sweep(
                    token_budget=4000, force=True
                )
        return super().summarize(request)


def test_chunk_changed_by_another_writer_is_skipped(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 200))
    compactor = Compactor(store, cid, effective(maxSweepIterations=1), InterferingSummarizer(store.path, cid))
    result = compactor.full_sweep(token_budget=4000, force=True)
    assert result.passes == [] and result.skipped[0]["reason"] == "chunk-changed"
    assert store.conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 1  # only the other writer's
    check_invariants(store.conn, cid)


def test_no_write_transaction_is_held_while_the_summarizer_runs(store: Store, tmp_path: Path) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 100))
    held: list[bool] = []

    class Probe(HeadSummarizer):
        def summarize(self, request: Any) -> str:
            other = sqlite3.connect(tmp_path / "lcm.db", timeout=0)
            try:
                other.execute("BEGIN IMMEDIATE")  # would fail if we held the write lock
                other.execute("ROLLBACK")
                held.append(store.conn.in_transaction)
            finally:
                other.close()
            return super().summarize(request)

    Compactor(store, cid, effective(), Probe()).compact(token_budget=3000, manual=True)
    assert held and not any(held)


# --------------------------------------------------------------------------
# Deferred debt (§4.12)
# --------------------------------------------------------------------------


def _debt(store: Store, cid: int) -> dict[str, Any]:
    cursor = store.conn.execute(
        "SELECT * FROM conversation_compaction_maintenance WHERE conversation_id = ?", (cid,)
    )
    return dict(zip([d[0] for d in cursor.description], cursor.fetchone()))


def test_debt_is_recorded_coalesced_and_drained(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 300))
    record_debt(store, cid, token_budget=4000, current_token_count=9000)
    record_debt(store, cid, token_budget=4000)  # coalesces; keeps the observed count
    row = _debt(store, cid)
    assert row["pending"] == 1 and row["running"] == 0 and row["reason"] == "threshold"
    assert row["current_token_count"] == 9000 and row["maintenance_revision"] >= 1
    compactor = Compactor(store, cid, effective(), HeadSummarizer())
    outcome = drain_debt(compactor)
    assert outcome["changed"] and outcome["reason"] in ("compacted", "compacted but still over target")
    row = _debt(store, cid)
    assert row["pending"] == 0 and row["running"] == 0 and row["last_finished_at"]
    assert row["last_failure_summary"] is None and row["retry_attempts"] == 0
    assert drain_debt(compactor)["reason"] == "no deferred compaction debt"
    check_invariants(store.conn, cid)


def test_failed_drain_stays_pending_with_backoff(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 300))
    record_debt(store, cid, token_budget=4000)
    failing = Compactor(store, cid, effective(), FailingSummarizer(0))
    assert drain_debt(failing)["reason"] == "summarizer failed"
    row = _debt(store, cid)
    assert row["pending"] == 1 and row["retry_attempts"] == 1 and row["next_attempt_after"]
    assert "endpoint down" in row["last_failure_summary"]
    assert drain_debt(failing)["reason"] == "deferred compaction backoff active"
    good = Compactor(store, cid, effective(), HeadSummarizer())
    assert drain_debt(good, force=True)["changed"]
    assert _debt(store, cid)["pending"] == 0


def test_paged_boundary_matches_the_whole_list_rule(store: Store) -> None:
    """find_boundary reads newest pages only; it must agree with the rule over every item."""
    import random

    rng = random.Random(5)
    for trial in range(12):
        cid = new_conversation(store, f"agent:main:b{trial}")
        count = rng.choice([0, 1, 3, 16, 600])
        user_every = rng.choice([1, 7, 900, 10**6])
        rows = [
            {"role": "user" if i % user_every == 0 else "assistant", "content": "x" * rng.randint(1, 80)}
            for i in range(rng.randint(0, 1300))
        ]
        store.add_messages(cid, rows)
        cap = rng.choice([None, 50, 5000])
        items = ci.load_items(store.conn, cid)
        assert ci.find_boundary(store.conn, cid, count, cap) == ci.tail_boundary(items, count, cap), trial


def test_spend_limit_skips_the_pass_and_an_endpoint_down_falls_back(store: Store) -> None:
    from lcm_cli.engine.summarize.base import SpendLimitError
    from tests.support.compaction_sim import endpoint_down

    cid = new_conversation(store)
    store.add_messages(cid, turn_rows(0, 200))
    shape = context_shape(store.conn, cid)
    guarded = Compactor(store, cid, effective(), FailingSummarizer(0, SpendLimitError("24 calls in 10 min")))
    result = guarded.compact(token_budget=4000, manual=True)
    assert not result["ok"] and "summary spend backoff open" in result["failure"]
    assert context_shape(store.conn, cid) == shape
    # The endpoint being down is not a loss either: the deterministic fallback is stored.
    down = Compactor(store, cid, effective(maxSweepIterations=1), endpoint_down())
    sweep = down.full_sweep(token_budget=4000, force=True)
    assert [p["level"] for p in sweep.passes] == ["fallback"]
    content = store.conn.execute("SELECT content FROM summaries").fetchone()[0]
    assert "msg 0:" in content
    check_invariants(store.conn, cid)


def test_leaf_source_text_drops_blank_lines_and_media_payloads() -> None:
    """As docs/compat.md's row "a message's text in the summarizer's leaf and condensed source"
    states the reference's rule."""
    from lcm_cli.engine.compaction.leaf_source import message_text

    payload = "QUJD" * 80  # 320 base64 characters, no prose: a payload line
    text = (
        "[LCM File: file_0123456789abcdef | a.csv | text/csv | 9 bytes]\n\n"
        "Exploration Summary:  \r\n"
        f"see data:image/png;base64,{payload}. here\n"
        f"{payload}\nMEDIA:/tmp/x.png\nMEDIA:/\n\n  kept line"
    )
    assert message_text(text, [], ()) == (
        "[LCM File: file_0123456789abcdef | a.csv | text/csv | 9 bytes]\n"
        "Exploration Summary:\n"
        "see [embedded media omitted]. here\n"
        "MEDIA:/\n"
        "  kept line"
    )


def test_textless_tool_call_step_reads_with_single_newlines(store: Store) -> None:
    """docs/compat.md's row "a tool-call-only assistant step in the leaf source" (checked there
    on the engine goldens)."""
    # Issue 30 item 4: the reference re-reads a leaf message's resolved text once more after
    # stripping injected tags (compaction.ts leafPass, extractMeaningfulMessageText), which
    # drops the blank lines between the parts' sections of a textless tool-call step.
    cid = new_conversation(store)
    read_a = ("tool", None, "call_a", "read", '{"path": "a.py"}', None, None)
    read_b = ("tool", None, "call_b", "read", '{"path": "b.py"}', '"done"', None)
    store.add_messages(
        cid,
        [{"role": "assistant", "content": "", "created_at": stamp(0), "parts": [read_a, read_b]}],
    )
    compactor = Compactor(store, cid, effective(), HeadSummarizer())
    text, _ = compactor.leaf_source(compactor.items())
    assert text.split("\n", 1)[1] == "null\nnull\nTool output (read):\ndone"
