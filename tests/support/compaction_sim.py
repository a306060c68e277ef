"""Test summarizers and DAG invariant checks shared by the compaction and assembly tests."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from typing import Any

from lcm_cli.engine.config.resolve import resolve_effective
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import SummarizerAuthError, SummarizerError, SummaryRequest

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)

# Small sizes so a few thousand short messages exercise every phase quickly.
SMALL = {
    "freshTailCount": 16,
    "leafChunkTokens": 1500,
    "leafTargetTokens": 120,
    "condensedTargetTokens": 100,
    "leafMinFanout": 4,
    "condensedMinFanout": 3,
}


def effective(**overrides: Any) -> dict[str, Any]:
    """The effective config with the small test sizes (plus ``overrides``)."""
    return resolve_effective({**SMALL, **overrides}, {}, "/nonexistent-state-dir")


class HeadSummarizer:
    """Deterministic: the depth, the source size, then the first words of the source.

    Keeps about ``target_tokens / 2`` tokens, so summaries are always smaller than their
    input, like a real summarizer's output.
    """

    model = "test/head"

    def __init__(self) -> None:
        self.calls: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.calls.append(request)
        words = " ".join(request.source_text.split())
        keep = max(8, request.target_tokens * 2)
        return f"[d{request.depth} summary of {len(request.source_text)} chars] {words[:keep]}"


class FailingSummarizer(HeadSummarizer):
    """Succeeds ``ok_calls`` times, then raises ``error`` on every call.

    The default error is one escalation does not absorb (a crash inside the summarizer),
    so the pass fails; a plain :class:`SummarizerError` (endpoint down) turns into the
    deterministic fallback summary instead.
    """

    def __init__(self, ok_calls: int = 0, error: Exception | None = None) -> None:
        super().__init__()
        self.ok_calls = ok_calls
        self.error = error or RuntimeError("endpoint down")

    def summarize(self, request: SummaryRequest) -> str:
        if len(self.calls) >= self.ok_calls:
            self.calls.append(request)
            raise self.error
        return super().summarize(request)


def endpoint_down() -> FailingSummarizer:
    """A summarizer whose endpoint does not answer (escalation falls back)."""
    return FailingSummarizer(0, SummarizerError("connection refused"))


def auth_failing() -> FailingSummarizer:
    """A summarizer whose endpoint refuses the credentials."""
    return FailingSummarizer(0, SummarizerAuthError("401 unauthorized"))


def stamp(seconds: int) -> str:
    """SQLite-style UTC time ``seconds`` after the base time."""
    return (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def turn_rows(start: int, count: int) -> list[dict[str, Any]]:
    """``count`` alternating user/assistant messages numbered from ``start``."""
    rows = []
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"msg {i}: " + " ".join(f"word{(i * 7 + k) % 97}" for k in range(20 + i % 15))
        rows.append({"role": role, "content": text, "created_at": stamp(i * 30)})
    return rows


def new_conversation(store: Store, key: str = "agent:main:sim") -> int:
    """An empty active conversation."""
    return store.create_conversation(f"sess-{key}", session_key=key, created_at=stamp(0))


# --------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------


def reachable_messages(conn: sqlite3.Connection, conversation_id: int) -> set[int]:
    """Message ids reachable from the context: directly, or through summary links."""
    items = conn.execute(
        "SELECT message_id, summary_id FROM context_items WHERE conversation_id = ?", (conversation_id,)
    ).fetchall()
    found = {m for m, _ in items if m is not None}
    stack = [s for _, s in items if s is not None]
    seen: set[str] = set()
    while stack:
        sid = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        found.update(
            r[0] for r in conn.execute("SELECT message_id FROM summary_messages WHERE summary_id = ?", (sid,))
        )
        stack.extend(
            r[0]
            for r in conn.execute(
                "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ?", (sid,)
            )
        )
    return found


def check_invariants(conn: sqlite3.Connection, conversation_id: int) -> None:
    """Assert nothing is lost and the DAG is well formed (database.md §8)."""
    all_ids = {
        r[0]
        for r in conn.execute("SELECT message_id FROM messages WHERE conversation_id = ?", (conversation_id,))
    }
    assert reachable_messages(conn, conversation_id) == all_ids, "a message is not reachable from the context"
    ordinals = [
        r[0]
        for r in conn.execute(
            "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal", (conversation_id,)
        )
    ]
    assert ordinals == list(range(len(ordinals))), "context ordinals are not 0..N-1"
    # Every message is in at most one place: the context or exactly one leaf.
    in_context = [
        r[0]
        for r in conn.execute(
            "SELECT message_id FROM context_items WHERE conversation_id = ? AND message_id IS NOT NULL",
            (conversation_id,),
        )
    ]
    linked = [
        r[0]
        for r in conn.execute(
            "SELECT sm.message_id FROM summary_messages sm JOIN summaries s ON s.summary_id = sm.summary_id"
            " WHERE s.conversation_id = ?",
            (conversation_id,),
        )
    ]
    assert len(in_context) + len(linked) == len(set(in_context) | set(linked)) == len(all_ids)
    summaries = {
        r[0]: r
        for r in conn.execute(
            "SELECT summary_id, kind, depth, token_count, descendant_count, descendant_token_count,"
            " source_message_token_count, content FROM summaries WHERE conversation_id = ?",
            (conversation_id,),
        )
    }
    consumed: list[str] = []
    for sid, row in summaries.items():
        _, kind, depth, tokens, desc, desc_tokens, source_tokens, content = row
        from lcm_cli.engine.core.tokens import estimate_tokens

        assert tokens == estimate_tokens(content)
        if kind == "leaf":
            assert depth == 0 and desc == 0 and desc_tokens == 0
            ords = [
                r[0]
                for r in conn.execute(
                    "SELECT ordinal FROM summary_messages WHERE summary_id = ? ORDER BY ordinal", (sid,)
                )
            ]
            assert ords == list(range(len(ords))) and ords
            continue
        sources = conn.execute(
            "SELECT parent_summary_id, ordinal FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (sid,),
        ).fetchall()
        assert [o for _, o in sources] == list(range(len(sources))) and sources
        src_rows = [summaries[s] for s, _ in sources]
        consumed += [s for s, _ in sources]
        assert {r[2] for r in src_rows} == {depth - 1}, "condensed depth = source depth + 1"
        assert desc == sum(r[4] + 1 for r in src_rows)
        assert desc_tokens == sum(r[3] + r[5] for r in src_rows)
        assert source_tokens == sum(r[6] for r in src_rows)
    assert len(consumed) == len(set(consumed)), "a summary was consumed twice"
    in_context_summaries = {
        r[0]
        for r in conn.execute(
            "SELECT summary_id FROM context_items WHERE conversation_id = ? AND summary_id IS NOT NULL",
            (conversation_id,),
        )
    }
    # Every summary is either in the context or consumed by exactly one higher node: a forest.
    assert in_context_summaries.isdisjoint(consumed)
    assert in_context_summaries | set(consumed) == set(summaries)
    # Depths only grow upward, so edges can never close a cycle; check it anyway.
    assert all(summaries[s][2] < summaries[p][2] for p, s in _edges(conn, conversation_id))


def _edges(conn: sqlite3.Connection, conversation_id: int) -> list[tuple[str, str]]:
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp"
            " JOIN summaries s ON s.summary_id = sp.summary_id WHERE s.conversation_id = ?",
            (conversation_id,),
        )
    ]


def context_shape(conn: sqlite3.Connection, conversation_id: int) -> list[tuple[str, Any]]:
    """(item_type, message_id or summary_id) per context item, in order."""
    return [
        (r[0], r[1] if r[1] is not None else r[2])
        for r in conn.execute(
            "SELECT item_type, message_id, summary_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
            (conversation_id,),
        )
    ]


def file_ids(raw: str) -> list[str]:
    """A summary's ``file_ids`` column, parsed."""
    value = json.loads(raw)
    assert isinstance(value, list)
    return value
