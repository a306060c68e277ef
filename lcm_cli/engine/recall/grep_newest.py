"""Newest-first walks: the first page of a frequent word without reading every match.

Ordering every full-text match by time means reading every matching row (its time sits
after the content): for a frequent word, hundreds of thousands of random reads. Instead
the rows in scope are walked newest first through a time index in bounded steps, each
step asking the full-text index which of its rows match, until the page is full. Regex
mode reads its candidates from the same message walk.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Callable, Generator
from typing import Any

from lcm_cli.engine.recall import grep_sql as sql
from lcm_cli.engine.recall.deadline import DeadlineExceeded
from lcm_cli.engine.recall.grep_sql import MESSAGES, SUMMARIES, Query, Source


def newest_matches(
    q: Query, source: Source, pos: dict[str, Any], table: str, match: str
) -> tuple[list[Any], dict[int, Any]] | None:
    """The newest ``limit + 1`` rows of ``source`` that ``table`` matches after ``pos``, and
    the full-text rowid of each (rowid -> record id); None when the plain join is cheaper."""
    if source is MESSAGES:
        rows = _newest_messages(q, pos, match)
        return None if rows is None else (rows, {r["message_id"]: r["message_id"] for r in rows})
    return _newest_summaries(q, pos, table, match)


NEWEST_MIN_MATCHES = 2_000  # below this, reading every match's time is cheap enough
STEP_ROWS = 2_048  # messages one step of the newest-first walk reads, at most
FIRST_STEP_ROWS = 32  # a conversation's first step; each further step doubles, to STEP_ROWS
RUN_GAP = 256  # ids further apart than this are probed in the full-text index separately


def walk_messages(
    q: Query, pos: dict[str, Any], keep: Callable[[list[int]], set[int]] | None = None
) -> Generator[tuple[float, int], None, None]:
    """Messages in scope after ``pos``, newest first: ``(julianday, message_id)``.

    Each conversation is read through the ``(conversation_id, julianday(created_at),
    message_id)`` read-path index in steps (:data:`FIRST_STEP_ROWS`, doubling up to
    :data:`STEP_ROWS` rows), and the conversations are merged: a heap holds, per
    conversation, either its next row (exact) or an upper bound on its unread rows (its
    newest time; then the last row read). A bound on top is read one step further; a row
    on top is newer than anything left anywhere, so it comes next. ``keep`` filters each
    step (the ids to keep), so a filter that drops most rows still reads in bounded steps.
    The caller stops when it has enough; nothing beyond the current steps is read.
    """
    bounds: list[str] = []
    bound_params: list[Any] = []
    at = pos.get("at")
    if at:
        bounds += ["julianday(m.created_at) <= ?", "(julianday(m.created_at) < ? OR m.message_id < ?)"]
        bound_params += [at[1], at[1], at[2]]
    tw, tp = sql.time_clause(MESSAGES.time, q)
    where = "".join(" AND " + b for b in bounds + tw)
    bound_params += tp
    convs = q.scope.conversation_ids
    if convs is None:
        convs = [r[0] for r in sql.run(q, "SELECT conversation_id FROM conversations", [])]
    index = "messages m INDEXED BY lcm_messages_conv_julian_idx"
    order = "ORDER BY julianday(m.created_at) DESC, m.message_id DESC"
    # Each conversation's newest time in bounds: one index seek per conversation.
    heads = sql.run(
        q,
        f"""SELECT c.id, (SELECT julianday(m.created_at) FROM {index} WHERE m.conversation_id = c.id{where}
                          {order} LIMIT 1)
            FROM (SELECT value AS id FROM json_each(?)) c""",
        bound_params + [json.dumps(list(convs))],
    )
    step_sql = f"""SELECT julianday(m.created_at), m.message_id FROM {index}
                   WHERE m.conversation_id = ? AND julianday(m.created_at) <= ?
                     AND (julianday(m.created_at) < ? OR m.message_id <= ?){where}
                   {order} LIMIT ?"""
    beyond = (1 << 63) - 1  # above every rowid: a head bound takes the whole newest instant
    heap: list[tuple[float, int, int, int]] = []  # (-time, -id, 0 bound / 1 row, conversation)
    step_size: dict[int, int] = {}
    pending: dict[int, list[tuple[float, int]]] = {}  # per conversation, rows read, oldest first
    for conv, head in heads:
        if head is not None:
            heap.append((-head, -beyond, 0, conv))
            step_size[conv] = min(FIRST_STEP_ROWS, STEP_ROWS)
    heapq.heapify(heap)
    while heap:
        neg_time, neg_id, kind, conv = heapq.heappop(heap)
        if kind == 1:
            yield -neg_time, -neg_id
            queue = pending[conv]
            if queue:
                jd, mid = queue.pop()
                heapq.heappush(heap, (-jd, -mid, 1, conv))
            continue
        if q.deadline.expired():
            raise DeadlineExceeded()
        size = step_size[conv]
        step_size[conv] = min(size * 2, STEP_ROWS)
        rows = sql.run(q, step_sql, [conv, -neg_time, -neg_time, -neg_id] + bound_params + [size])
        kept = keep([r[1] for r in rows]) if keep is not None else None
        queue = [(r[0], r[1]) for r in reversed(rows) if kept is None or r[1] in kept]
        pending[conv] = queue
        if queue:
            jd, mid = queue.pop()
            heapq.heappush(heap, (-jd, -mid, 1, conv))
        if len(rows) == size:  # more may follow: the last row read bounds them
            last_time, last_id = rows[-1]
            heapq.heappush(heap, (-last_time, -(last_id - 1), 0, conv))


def _newest_messages(q: Query, pos: dict[str, Any], match: str) -> list[Any] | None:
    """The newest ``limit + 1`` matches after ``pos``, or None to use the plain join.

    Ordering every match by time means reading every matching row (its ``created_at``
    sits after the content): for a frequent word, hundreds of thousands of random reads.
    Instead the messages in scope are walked newest first in bounded steps
    (:func:`walk_messages`); each step asks the full-text index which of its messages
    match (by rowid ranges), and the walk stops as soon as ``limit + 1`` matches are found.
    Exact: the walk is in (time, id) order. A word with fewer than
    :data:`NEWEST_MIN_MATCHES` matches uses the join (reading them is cheaper).
    """
    if not q.ctx.probe.has_index("lcm_messages_conv_julian_idx"):
        return None
    counted = sql.run(
        q,
        "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
        [match, NEWEST_MIN_MATCHES],
    )[0][0]
    if counted < NEWEST_MIN_MATCHES:
        return None
    walk = walk_messages(q, pos, keep=lambda ids: _matching_ids(q, match, ids))
    top_ids = [message_id for _, message_id in itertools.islice(walk, q.limit + 1)]
    walk.close()
    if not top_ids:
        return []
    id_marks = ",".join("?" for _ in top_ids)
    by_id = {
        r["message_id"]: r
        for r in sql.run(
            q,
            f"SELECT {MESSAGES.cols}, NULL AS score FROM messages m WHERE m.message_id IN ({id_marks})",
            top_ids,
        )
    }
    return [by_id[i] for i in top_ids if i in by_id]


def _matching_ids(q: Query, match: str, message_ids: list[int], table: str = "messages_fts") -> set[int]:
    """Which of ``message_ids`` (rowids of ``table``) the full-text index matches.

    One probe per run of close ids: FTS5 seeks a rowid range once (an IN list it seeks
    value by value, far slower), and SQLite keeps only the ids asked for, so a probe
    returns at most as many rows as it was given (the range's other matches stay in C).
    """
    if not message_ids:
        return set()
    ordered = sorted(set(message_ids))
    runs: list[list[int]] = [[ordered[0]]]
    for message_id in ordered[1:]:
        if message_id - runs[-1][-1] > RUN_GAP:
            runs.append([])
        runs[-1].append(message_id)
    matched: set[int] = set()
    for run in runs:
        matched.update(
            r[0]
            for r in sql.run(
                q,
                f"""SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?
                    AND +rowid IN (SELECT value FROM json_each(?))""",
                [match, run[0], run[-1], json.dumps(run)],
            )
        )
    return matched


NEWEST_MIN_SUMMARY_MATCHES = 500


def _newest_summaries(
    q: Query, pos: dict[str, Any], table: str, match: str
) -> tuple[list[Any], dict[int, str]] | None:
    """The newest ``limit + 1`` matching summaries in every conversation and the full-text
    rowid of each match (rowid -> summary id), or None for the join.

    The global coverage-time index is walked newest first in bounded steps (as the
    messages are, :func:`walk_messages`), each step probing the full-text index by rowid
    ranges, until enough matches are met. That needs each summary's full-text rowid: lcm
    and lossless-claw index a summary right after writing it, so it is the summary's own
    rowid, and each step checks so (the index row there names the summary). Where it does
    not (an index rebuilt or repaired), the match set is read from the index instead and
    the walk tests membership in it. Scoped searches use the join (their summaries are few).
    """
    if q.scope.conversation_ids is not None or not q.ctx.probe.has_index("lcm_summaries_coverage_idx"):
        return None
    counted = sql.run(
        q,
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
        [match, NEWEST_MIN_SUMMARY_MATCHES],
    )[0][0]
    if counted < NEWEST_MIN_SUMMARY_MATCHES:
        return None  # few matches: reading them is cheaper than walking the index to them
    found: list[tuple[str, int]] | None = None
    if q.ctx.probe.has_table(f"{table}_content"):
        found = walk_summaries(q, pos, lambda step: _matching_summaries(q, table, match, step))
    if found is None:
        fts_rowids: dict[int, str] = {
            r[0]: r[1]
            for r in sql.run(q, f"SELECT rowid, summary_id FROM {table} WHERE {table} MATCH ?", [match])
        }
        by_summary = {summary_id: rowid for rowid, summary_id in fts_rowids.items()}
        found = walk_summaries(q, pos, lambda step: [(s, by_summary[s]) for s, _ in step if s in by_summary])
    assert found is not None
    if not found:
        return [], {}
    ids = [summary_id for summary_id, _ in found]
    marks = ",".join("?" for _ in ids)
    by_id = {
        r["summary_id"]: r
        for r in sql.run(
            q, f"SELECT {SUMMARIES.cols}, NULL AS score FROM summaries s WHERE s.summary_id IN ({marks})", ids
        )
    }
    return [by_id[i] for i in ids if i in by_id], {rowid: summary_id for summary_id, rowid in found}


def walk_summaries(
    q: Query,
    pos: dict[str, Any],
    keep: Callable[[list[tuple[str, int]]], list[tuple[str, int]] | None],
) -> list[tuple[str, int]] | None:
    """The first ``limit + 1`` summaries ``keep`` keeps, walking every summary after ``pos``
    newest first through the coverage-time index in steps (doubling to :data:`STEP_ROWS`).
    ``keep`` gets a step's ``(summary_id, rowid)`` and returns the kept ones in order, each
    with its full-text rowid, or None to give up (then so does the walk)."""
    where, params = sql.time_clause(SUMMARIES.time, q)
    jd = f"julianday({SUMMARIES.time})"
    want = q.limit + 1
    found: list[tuple[str, int]] = []
    size = min(FIRST_STEP_ROWS, STEP_ROWS)
    at = pos.get("at")
    last: tuple[float, str] | None = (at[1], at[2]) if at else None  # where the walk resumes
    while len(found) < want:
        if q.deadline.expired():
            raise DeadlineExceeded()
        step_where = list(where)
        step_params = list(params)
        if last is not None:
            step_where += [f"{jd} <= ?", f"({jd} < ? OR s.summary_id < ?)"]
            step_params += [last[0], last[0], last[1]]
        rows = sql.run(
            q,
            f"""SELECT s.summary_id, s.rowid, {jd} FROM summaries s INDEXED BY lcm_summaries_coverage_idx
                {"WHERE " + " AND ".join(step_where) if step_where else ""}
                ORDER BY {jd} DESC, s.summary_id DESC LIMIT ?""",
            step_params + [size],
        )
        kept = keep([(r[0], r[1]) for r in rows])
        if kept is None:
            return None
        found += kept[: want - len(found)]
        if len(rows) < size:
            break
        last = (rows[-1][2], rows[-1][0])
        size = min(size * 2, STEP_ROWS)
    return found


def _matching_summaries(
    q: Query, table: str, match: str, step: list[tuple[str, int]]
) -> list[tuple[str, int]] | None:
    """The summaries of ``step`` that ``table`` matches, with their full-text rowids, in step
    order; None when some summary's full-text row is not at its own rowid."""
    if not step:
        return []
    named: dict[int, Any] = {
        r[0]: r[1]
        for r in sql.run(
            q,
            f"SELECT id, c0 FROM {table}_content WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps([rowid for _, rowid in step])],
        )
    }
    if any(named.get(rowid) != summary_id for summary_id, rowid in step):
        return None
    matched = _matching_ids(q, match, [rowid for _, rowid in step], table)
    return [(summary_id, rowid) for summary_id, rowid in step if rowid in matched]
