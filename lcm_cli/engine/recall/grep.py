"""`lcm grep`: search messages, summaries and large files, saying exactly what was searched.

Each source (messages, summaries, files) is searched by the best back-end this file and
query allow -- FTS5, the trigram table for CJK summaries, LIKE scans, or a Python regex
over a bounded, newest-first candidate set -- and ``meta`` reports which one ran, which
scopes were covered, and whether the answer is complete or was cut by the limit, the
scan cap or the deadline. Pages continue with a keyset cursor per source.
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.cursor import pack, unpack
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.params import DEADLINE_MS, FILE_ID, MODE, SCOPE, SORT, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.recall import fts_query as fq
from lcm_cli.engine.recall.deadline import Deadline, DeadlineExceeded
from lcm_cli.engine.recall.files import is_text_mime, resolve_inside
from lcm_cli.engine.recall.regex_worker import ScanAbandoned, ScanTimedOut
from lcm_cli.engine.recall.regex_worker import scan as scan_texts
from lcm_cli.engine.recall.scope import Scope, choice, not_in_scope, resolve_scope

SCOPES = {
    "messages": ("messages",),
    "summaries": ("summaries",),
    "both": ("messages", "summaries"),
    "files": ("files",),
}
MAX_PATTERN_CHARS = 500
REGEX_SCAN_ROWS = 20_000  # rows examined per source per call in regex mode
REGEX_BATCH = 1_000
FILE_SCAN_BYTES = 512_000
FILE_MATCHES_PER_FILE = 10
SNIPPET_CHARS = 200
DEFAULT_DEADLINE_MS = 5_000
MSG_TIME = "m.created_at"
SUM_TIME = "COALESCE(s.latest_at, s.created_at)"
FILE_TIME = "f.created_at"


class Page(NamedTuple):
    """One source's share of a page."""

    hits: list[dict[str, Any]]
    path: str  # fts5 | trigram | like | regex
    next_pos: dict[str, Any] | None  # where this source continues; None = exhausted
    truncated_by: str | None  # limit | deadline | scanLimit
    info: dict[str, Any]


class Query(NamedTuple):
    """Everything a source searcher needs."""

    ctx: Context
    pattern: str
    mode: str
    sort: str
    regex: re.Pattern[str] | None
    scope: Scope
    after: str | None
    before: str | None
    limit: int
    deadline: Deadline
    now_jd: float
    file_ids: list[str]


# --------------------------------------------------------------------------------------
# The operation
# --------------------------------------------------------------------------------------


@operation("grep")
def grep(ctx: Context, req: Request) -> Result:
    """Search in scope and return one page of hits per source, with an honest ``meta``."""
    pattern = req.args[0].strip()
    mode = choice(req, MODE) or "regex"
    scope_name = choice(req, SCOPE) or "both"
    requested_sort = choice(req, SORT) or "recency"
    file_ids = list(req[FILE_ID] or [])
    deadline = Deadline(req[DEADLINE_MS] or DEFAULT_DEADLINE_MS)
    if not pattern:
        raise LcmError(
            "INVALID_PATTERN",
            "The pattern is empty. Give a word or phrase (--mode full_text) or a regular expression.",
            {"pattern": req.args[0], "mode": mode, "reason": "empty"},
        )
    regex = None
    if mode == "full_text":
        check_full_text(pattern)
    else:
        regex = compile_regex(pattern)
    # Only FTS5 ranks; regex and file scans are always newest first (meta says so).
    sort = "recency" if mode == "regex" or scope_name == "files" else requested_sort
    if file_ids and scope_name != "files":
        raise invalid_argument("--file-id narrows --scope files; add --scope files.", {"option": "file-id"})
    scope = resolve_scope(ctx, req, required=True)
    sources = SCOPES[scope_name]
    fingerprint = _fingerprint(pattern, mode, scope_name, sort, scope, file_ids, req)
    positions: dict[str, Any] = {source: {} for source in sources}
    now_jd = julian_now()
    if req.cursor:
        state = _decode_cursor(req.cursor, fingerprint)
        positions = state["pos"]
        now_jd = state["now"]
    if "files" in sources and file_ids:
        _check_file_ids(ctx, file_ids, scope)
    query = Query(
        ctx,
        pattern,
        mode,
        sort,
        regex,
        scope,
        req.time.after,
        req.time.before,
        req.limit,
        deadline,
        now_jd,
        file_ids,
    )
    searchers: dict[str, Callable[[Query, dict[str, Any]], Page]] = {
        "messages": search_messages,
        "summaries": search_summaries,
        "files": _search_files,
    }
    hits: list[dict[str, Any]] = []
    search_path: dict[str, str] = {}
    truncated: dict[str, str] = {}
    next_positions: dict[str, Any] = {}
    info: dict[str, Any] = {}
    for source in sources:
        if source not in positions:
            continue  # exhausted on an earlier page
        page = searchers[source](query, positions[source])
        hits.extend(page.hits)
        search_path[source] = page.path
        if page.truncated_by:
            truncated[source] = page.truncated_by
        if page.next_pos is not None:
            next_positions[source] = page.next_pos
        if page.info:
            info[source] = page.info
    next_cursor = (
        _encode_cursor({"q": fingerprint, "now": now_jd, "pos": next_positions}) if next_positions else None
    )
    kinds = {"messages": "message", "summaries": "summary", "files": "file"}
    counts = {source: sum(1 for h in hits if h["type"] == kinds[source]) for source in sources}
    meta: dict[str, Any] = {
        "searchPath": search_path,
        "scopes": list(sources),
        "scope": scope.to_dict(),
        "mode": mode,
        "sort": sort,
        "complete": not truncated,
        "truncatedBy": truncated,
        "deadlineMs": deadline.ms,
        "elapsedMs": deadline.elapsed_ms(),
    }
    if requested_sort != sort:
        meta["sortRequested"] = requested_sort
    if info:
        meta["sources"] = info
    data = {"pattern": pattern, "counts": counts, "hits": hits}
    pagination = {
        "limit": req.limit,
        "returned": len(hits),
        "hasMore": next_cursor is not None,
        "nextCursor": next_cursor,
    }
    return Result(data, pagination, meta)


def check_full_text(pattern: str) -> None:
    """INVALID_PATTERN for regex syntax outside quotes, or for a pattern with no words."""
    fq.check_full_text_pattern(pattern)
    if not fq.like_terms(pattern):
        raise LcmError(
            "INVALID_PATTERN",
            f"{pattern!r} holds no words to search for (only quotes or spaces). Give a word or "
            "a quoted phrase.",
            {"pattern": pattern, "mode": "full_text", "reason": "empty"},
        )


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Compile a regex-mode pattern (case-sensitive, no flags) or raise INVALID_PATTERN."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise LcmError(
            "INVALID_PATTERN",
            f"The regex is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}. "
            "Shorten it, or search words with --mode full_text.",
            {"pattern": pattern[:80], "mode": "regex", "reason": "too long"},
        )
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise LcmError(
            "INVALID_PATTERN",
            f"{pattern!r} is not a valid regular expression ({exc}). To search it as literal "
            "words use --mode full_text, or escape the special characters.",
            {"pattern": pattern, "mode": "regex", "acceptedBy": "full_text", "reason": str(exc)},
        ) from None


# --------------------------------------------------------------------------------------
# Cursors: one position per source, bound to the query that made them
# --------------------------------------------------------------------------------------


def _fingerprint(
    pattern: str,
    mode: str,
    scope_name: str,
    sort: str,
    scope: Scope,
    file_ids: list[str],
    req: Request,
) -> str:
    import hashlib  # here: its OpenSSL binding costs a few ms at start-up

    raw = json.dumps(
        [pattern, mode, scope_name, sort, scope.conversation_ids, file_ids, req.time.after, req.time.before]
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def _encode_cursor(state: dict[str, Any]) -> str:
    return pack({"v": 1, "resource": "grep", **state})


def _decode_cursor(text: str, fingerprint: str) -> dict[str, Any]:
    invalid = LcmError(
        "INVALID_CURSOR",
        "Invalid --cursor for this search: pass the nextCursor of the same `lcm grep` "
        "(same pattern, mode, scope, sort, selector and time filters) unchanged.",
    )
    try:
        payload = unpack(text)
    except ValueError:
        raise invalid from None
    if (
        not isinstance(payload, dict)
        or payload.get("v") != 1
        or payload.get("resource") != "grep"
        or payload.get("q") != fingerprint
        or not isinstance(payload.get("pos"), dict)
        or not isinstance(payload.get("now"), (int, float))
    ):
        raise invalid
    return payload


def julian_now() -> float:
    return time.time() / 86400.0 + 2440587.5


# --------------------------------------------------------------------------------------
# Shared SQL pieces
# --------------------------------------------------------------------------------------


def _scope_clause(column: str, scope: Scope) -> tuple[list[str], list[Any]]:
    if scope.conversation_ids is None:
        return [], []
    marks = ",".join("?" for _ in scope.conversation_ids)
    return [f"{column} IN ({marks})"], list(scope.conversation_ids)


def _time_clause(expr: str, q: Query) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if q.after:
        where.append(f"julianday({expr}) >= julianday(?)")
        params.append(q.after)
    if q.before:
        where.append(f"julianday({expr}) < julianday(?)")
        params.append(q.before)
    return where, params


def _keyset(pos: dict[str, Any], score: str | None, jd: str, row_id: str) -> tuple[list[str], list[Any]]:
    """Rows after ``pos`` in (score ASC,) jd DESC, id DESC order."""
    at = pos.get("at")
    if not at:
        return [], []
    after_time = f"({jd} < ? OR ({jd} = ? AND {row_id} < ?))"
    if score is None:
        return [after_time], [at[1], at[1], at[2]]
    return [f"({score} > ? OR ({score} = ? AND {after_time}))"], [at[0], at[0], at[1], at[1], at[2]]


def _flatten(text: str, cap: int = SNIPPET_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


def _fold(text: str | None) -> str:
    return unicodedata.normalize("NFC", text or "").casefold()


def _like_filter(ctx: Context, column: str, groups: list[list[str]]) -> tuple[list[str], list[Any]]:
    """Every group must match; a group matches when any of its terms occurs (case-folded).

    ASCII terms use LIKE (ASCII case-insensitive in SQLite); other terms go through a
    Python fold (NFC + casefold), because SQLite's LOWER only knows ASCII.
    """
    where: list[str] = []
    params: list[Any] = []
    needs_fold = any(not term.isascii() for group in groups for term in group)
    if needs_fold:
        ctx.db.create_function("lcm_fold", 1, _fold, deterministic=True)
    for group in groups:
        alternatives = []
        for term in group:
            if term.isascii():
                alternatives.append(f"{column} LIKE ? ESCAPE '\\'")
                params.append(fq.like_escape(term))
            else:
                alternatives.append(f"instr(lcm_fold({column}), ?) > 0")
                params.append(_fold(term))
        where.append("(" + " OR ".join(alternatives) + ")")
    return where, params


def _run(q: Query, sql: str, params: list[Any]) -> list[sqlite3.Row]:
    """Run a search query under the deadline; sqlite3 errors propagate (for fallbacks)."""
    with q.deadline.bound_sqlite(q.ctx.db):
        return q.ctx.db.execute(sql, params).fetchall()


def _guarded(path: str, pos: dict[str, Any], search: Callable[[], Page]) -> Page:
    """Run one back-end; if the deadline cuts it, an empty page that resumes at ``pos``."""
    try:
        return search()
    except DeadlineExceeded:
        return Page([], path, {**pos, "path": path}, "deadline", {})


def _page_rows(
    rows: list[sqlite3.Row], limit: int, position: Callable[[sqlite3.Row], list[Any]]
) -> tuple[list[sqlite3.Row], dict[str, Any] | None]:
    if len(rows) > limit:
        page = rows[:limit]
        return page, {"at": position(page[-1])}
    return rows, None


def _fts_usable(ctx: Context, table: str) -> bool:
    return ctx.probe.has_table(table)


# --------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------

_MSG_COLS = "m.message_id, m.conversation_id, m.seq, m.role, m.created_at, julianday(m.created_at) AS jd"


def _message_hit(row: sqlite3.Row, snippet: str, rank: float | None = None) -> dict[str, Any]:
    hit: dict[str, Any] = {
        "type": "message",
        "id": row["message_id"],
        "conversationId": row["conversation_id"],
        "seq": row["seq"],
        "role": row["role"],
        "timestamp": row["created_at"],
        "snippet": snippet,
    }
    if rank is not None:
        hit["rank"] = rank
    return hit


def search_messages(q: Query, pos: dict[str, Any]) -> Page:
    if q.mode == "regex":
        return _regex_scan(q, pos, "messages")
    path = pos.get("path")
    if path is None:
        literal = fq.has_cjk(q.pattern) or not fq.fts_can_tokenize(q.pattern)
        path = "fts5" if not literal and _fts_usable(q.ctx, "messages_fts") else "like"
    if path == "fts5":
        try:
            return _guarded("fts5", pos, lambda: _messages_fts(q, pos))
        except sqlite3.Error:
            pass  # a build without FTS5, or a query FTS5 rejects: fall back, and say so
    return _guarded("like", pos, lambda: _messages_like(q, pos))


def _score_expr(q: Query, rank: str, jd: str) -> str | None:
    if q.sort == "relevance":
        return rank
    if q.sort == "hybrid":
        return f"({rank} / (1 + MAX(0.0, ({q.now_jd!r} - {jd}) * 24.0) * 0.001))"
    return None


def _messages_fts(q: Query, pos: dict[str, Any]) -> Page:
    match = fq.fts5_query(q.pattern)
    where = ["messages_fts MATCH ?"]
    params: list[Any] = [match]
    for clause, values in (_scope_clause("m.conversation_id", q.scope), _time_clause(MSG_TIME, q)):
        where += clause
        params += values
    score = _score_expr(q, "messages_fts.rank", "julianday(m.created_at)")
    inner_score = f", {score} AS score" if score else ", NULL AS score"
    inner = f"""SELECT {_MSG_COLS}{inner_score} FROM messages_fts
                JOIN messages m ON m.message_id = messages_fts.rowid WHERE {" AND ".join(where)}"""
    keyset, kparams = _keyset(pos, "score" if score else None, "jd", "message_id")
    order = ("score ASC, " if score else "") + "jd DESC, message_id DESC"
    outer_where = f"WHERE {' AND '.join(keyset)}" if keyset else ""
    rows = None if score else _newest_matches(q, pos, match)
    if rows is None:
        rows = _run(
            q,
            f"SELECT * FROM ({inner}) {outer_where} ORDER BY {order} LIMIT ?",
            params + kparams + [q.limit + 1],
        )
    page, next_pos = _page_rows(rows, q.limit, lambda r: [r["score"], r["jd"], r["message_id"]])
    snippets = {
        rowid: _flatten(text)
        for rowid, text in _fts_snippets(q, "messages_fts", 0, match, [r["message_id"] for r in page])
    }
    hits = [_message_hit(r, snippets.get(r["message_id"], ""), r["score"] if score else None) for r in page]
    if next_pos is not None:
        next_pos["path"] = "fts5"
    return Page(hits, "fts5", next_pos, "limit" if next_pos else None, {})


NEWEST_MIN_MATCHES = 2_000  # below this, reading every match's time is cheap enough
STEP_ROWS = 2_048  # messages one step of the newest-first walk reads, at most
FIRST_STEP_ROWS = 32  # a conversation's first step; each further step doubles, to STEP_ROWS
RUN_GAP = 256  # ids further apart than this are probed in the full-text index separately
SNIPPET_CHUNK = 50  # rowids per snippet query: FTS5 seeks each value of an IN list anew


def _walk_messages(
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
    tw, tp = _time_clause(MSG_TIME, q)
    where = "".join(" AND " + b for b in bounds + tw)
    bound_params += tp
    convs = q.scope.conversation_ids
    if convs is None:
        convs = [r[0] for r in _run(q, "SELECT conversation_id FROM conversations", [])]
    index = "messages m INDEXED BY lcm_messages_conv_julian_idx"
    order = "ORDER BY julianday(m.created_at) DESC, m.message_id DESC"
    # Each conversation's newest time in bounds: one index seek per conversation.
    heads = _run(
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
        rows = _run(q, step_sql, [conv, -neg_time, -neg_time, -neg_id] + bound_params + [size])
        kept = keep([r[1] for r in rows]) if keep is not None else None
        queue = [(r[0], r[1]) for r in reversed(rows) if kept is None or r[1] in kept]
        pending[conv] = queue
        if queue:
            jd, mid = queue.pop()
            heapq.heappush(heap, (-jd, -mid, 1, conv))
        if len(rows) == size:  # more may follow: the last row read bounds them
            last_time, last_id = rows[-1]
            heapq.heappush(heap, (-last_time, -(last_id - 1), 0, conv))


def _newest_matches(q: Query, pos: dict[str, Any], match: str) -> list[Any] | None:
    """The newest ``limit + 1`` matches after ``pos``, or None to use the plain join.

    Ordering every match by time means reading every matching row (its ``created_at``
    sits after the content): for a frequent word, hundreds of thousands of random reads.
    Instead the messages in scope are walked newest first in bounded steps
    (:func:`_walk_messages`); each step asks the full-text index which of its messages
    match (by rowid ranges), and the walk stops as soon as ``limit + 1`` matches are found.
    Exact: the walk is in (time, id) order. A word with fewer than
    :data:`NEWEST_MIN_MATCHES` matches uses the join (reading them is cheaper).
    """
    if not q.ctx.probe.has_index("lcm_messages_conv_julian_idx"):
        return None
    counted = _run(
        q,
        "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
        [match, NEWEST_MIN_MATCHES],
    )[0][0]
    if counted < NEWEST_MIN_MATCHES:
        return None
    walk = _walk_messages(q, pos, keep=lambda ids: _matching_ids(q, match, ids))
    top_ids = [message_id for _, message_id in itertools.islice(walk, q.limit + 1)]
    walk.close()
    if not top_ids:
        return []
    id_marks = ",".join("?" for _ in top_ids)
    by_id = {
        r["message_id"]: r
        for r in _run(
            q,
            f"SELECT {_MSG_COLS}, NULL AS score FROM messages m WHERE m.message_id IN ({id_marks})",
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
            for r in _run(
                q,
                f"""SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?
                    AND +rowid IN (SELECT value FROM json_each(?))""",
                [match, run[0], run[-1], json.dumps(run)],
            )
        )
    return matched


def _fts_snippets(q: Query, table: str, column: int, match: str, rowids: list[int]) -> list[Any]:
    """``(rowid, snippet)`` of the given full-text rows, a few rowids per query."""
    out: list[Any] = []
    ordered = sorted(set(rowids))
    for start in range(0, len(ordered), SNIPPET_CHUNK):
        chunk = ordered[start : start + SNIPPET_CHUNK]
        out += _run(
            q,
            f"""SELECT rowid, snippet({table}, {column}, '', '', '...', 32) FROM {table}
                WHERE {table} MATCH ? AND rowid IN ({",".join("?" for _ in chunk)})""",
            [match, *chunk],
        )
    return out


def _messages_like(q: Query, pos: dict[str, Any]) -> Page:
    terms = fq.like_terms(q.pattern)
    where, params = _like_filter(q.ctx, "m.content", [[t] for t in terms])
    for clause, values in (_scope_clause("m.conversation_id", q.scope), _time_clause(MSG_TIME, q)):
        where += clause
        params += values
    keyset, kparams = _keyset(pos, None, "julianday(m.created_at)", "m.message_id")
    where += keyset
    params += kparams
    rows = _run(
        q,
        f"""SELECT {_MSG_COLS}, m.content FROM messages m WHERE {" AND ".join(where)}
            ORDER BY julianday(m.created_at) DESC, m.message_id DESC LIMIT ?""",
        params + [q.limit + 1],
    )
    page, next_pos = _page_rows(rows, q.limit, lambda r: [None, r["jd"], r["message_id"]])
    hits = [_message_hit(r, _flatten(fq.like_snippet(r["content"], terms))) for r in page]
    if next_pos is not None:
        next_pos["path"] = "like"
    return Page(hits, "like", next_pos, "limit" if next_pos else None, {})


# --------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------

_SUM_COLS = f"""s.summary_id, s.conversation_id, s.kind, s.depth, s.token_count,
    {SUM_TIME} AS coverage_at, julianday({SUM_TIME}) AS jd"""


def _summary_hit(row: sqlite3.Row, snippet: str, rank: float | None = None) -> dict[str, Any]:
    hit: dict[str, Any] = {
        "type": "summary",
        "id": row["summary_id"],
        "conversationId": row["conversation_id"],
        "kind": row["kind"],
        "depth": row["depth"],
        "tokenCount": row["token_count"],
        "timestamp": row["coverage_at"],
        "snippet": snippet,
    }
    if rank is not None:
        hit["rank"] = rank
    return hit


def search_summaries(q: Query, pos: dict[str, Any]) -> Page:
    if q.mode == "regex":
        return _regex_scan(q, pos, "summaries")
    path = pos.get("path")
    cjk = fq.has_cjk(q.pattern)
    if path is None:
        if cjk:
            runs = fq.cjk_runs(q.pattern)
            path = (
                "trigram"
                if fq.trigram_query(runs) is not None and _fts_usable(q.ctx, "summaries_fts_cjk")
                else "like"
            )
        else:
            usable = fq.fts_can_tokenize(q.pattern) and _fts_usable(q.ctx, "summaries_fts")
            path = "fts5" if usable else "like"
    if path == "fts5":
        try:
            return _guarded("fts5", pos, lambda: _summaries_fts(q, pos, trigram=False))
        except sqlite3.Error:
            pass
    elif path == "trigram":
        try:
            page = _guarded("trigram", pos, lambda: _summaries_fts(q, pos, trigram=True))
            # No trigram rows on the first page: the looser CJK LIKE search may still match.
            if page.hits or pos or page.truncated_by:
                return page
        except sqlite3.Error:
            pass
    return _guarded("like", pos, lambda: _summaries_like(q, pos, cjk=cjk))


def _summaries_fts(q: Query, pos: dict[str, Any], *, trigram: bool) -> Page:
    table = "summaries_fts_cjk" if trigram else "summaries_fts"
    if trigram:
        match = fq.trigram_query(fq.cjk_runs(q.pattern)) or '""'
        latin = fq.latin_terms(q.pattern)
    else:
        match = fq.fts5_query(q.pattern)
        latin = []
    where = [f"{table} MATCH ?"]
    params: list[Any] = [match]
    like_where, like_params = _like_filter(q.ctx, "s.content", [[t] for t in latin])
    where += like_where
    params += like_params
    for clause, values in (_scope_clause("s.conversation_id", q.scope), _time_clause(SUM_TIME, q)):
        where += clause
        params += values
    score = _score_expr(q, f"{table}.rank", f"julianday({SUM_TIME})")
    inner_score = f", {score} AS score" if score else ", NULL AS score"
    inner = f"""SELECT {_SUM_COLS}{inner_score}, {table}.rowid AS fts_rowid FROM {table}
                JOIN summaries s ON s.summary_id = {table}.summary_id WHERE {" AND ".join(where)}"""
    keyset, kparams = _keyset(pos, "score" if score else None, "jd", "summary_id")
    order = ("score ASC, " if score else "") + "jd DESC, summary_id DESC"
    outer_where = f"WHERE {' AND '.join(keyset)}" if keyset else ""
    newest = None if score or latin else _newest_summary_matches(q, pos, table, match)
    if newest is None:
        rows = _run(
            q,
            f"SELECT * FROM ({inner}) {outer_where} ORDER BY {order} LIMIT ?",
            params + kparams + [q.limit + 1],
        )
        fts_rowids = {r["fts_rowid"]: r["summary_id"] for r in rows}
    else:
        rows, fts_rowids = newest
    page, next_pos = _page_rows(rows, q.limit, lambda r: [r["score"], r["jd"], r["summary_id"]])
    # Snippets by the full-text rowid: FTS5 cannot look up its UNINDEXED summary_id column.
    shown = {r["summary_id"] for r in page}
    snippets: dict[str, str] = {}
    wanted = [rowid for rowid, sid in fts_rowids.items() if sid in shown]
    for rowid, text in _fts_snippets(q, table, 1, match, wanted):
        snippets.setdefault(fts_rowids[rowid], _flatten(text))
    path = "trigram" if trigram else "fts5"
    hits = [_summary_hit(r, snippets.get(r["summary_id"], ""), r["score"] if score else None) for r in page]
    if next_pos is not None:
        next_pos["path"] = path
    return Page(hits, path, next_pos, "limit" if next_pos else None, {})


NEWEST_MIN_SUMMARY_MATCHES = 500


def _newest_summary_matches(
    q: Query, pos: dict[str, Any], table: str, match: str
) -> tuple[list[Any], dict[int, str]] | None:
    """The newest ``limit + 1`` matching summaries in every conversation and the full-text
    rowid of each match (rowid -> summary id), or None for the join.

    The global coverage-time index is walked newest first in bounded steps (as the
    messages are, :func:`_walk_messages`), each step probing the full-text index by rowid
    ranges, until enough matches are met. That needs each summary's full-text rowid: lcm
    and lossless-claw index a summary right after writing it, so it is the summary's own
    rowid, and each step checks so (the index row there names the summary). Where it does
    not (an index rebuilt or repaired), the match set is read from the index instead and
    the walk tests membership in it. Scoped searches use the join (their summaries are few).
    """
    if q.scope.conversation_ids is not None or not q.ctx.probe.has_index("lcm_summaries_coverage_idx"):
        return None
    counted = _run(
        q,
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
        [match, NEWEST_MIN_SUMMARY_MATCHES],
    )[0][0]
    if counted < NEWEST_MIN_SUMMARY_MATCHES:
        return None  # few matches: reading them is cheaper than walking the index to them
    found: list[tuple[str, int]] | None = None
    if q.ctx.probe.has_table(f"{table}_content"):
        found = _walk_summaries(q, pos, lambda step: _matching_summaries(q, table, match, step))
    if found is None:
        fts_rowids: dict[int, str] = {
            r[0]: r[1]
            for r in _run(q, f"SELECT rowid, summary_id FROM {table} WHERE {table} MATCH ?", [match])
        }
        by_summary = {summary_id: rowid for rowid, summary_id in fts_rowids.items()}
        found = _walk_summaries(q, pos, lambda step: [(s, by_summary[s]) for s, _ in step if s in by_summary])
    assert found is not None
    if not found:
        return [], {}
    ids = [summary_id for summary_id, _ in found]
    marks = ",".join("?" for _ in ids)
    by_id = {
        r["summary_id"]: r
        for r in _run(
            q, f"SELECT {_SUM_COLS}, NULL AS score FROM summaries s WHERE s.summary_id IN ({marks})", ids
        )
    }
    return [by_id[i] for i in ids if i in by_id], {rowid: summary_id for summary_id, rowid in found}


def _walk_summaries(
    q: Query,
    pos: dict[str, Any],
    keep: Callable[[list[tuple[str, int]]], list[tuple[str, int]] | None],
) -> list[tuple[str, int]] | None:
    """The first ``limit + 1`` summaries ``keep`` keeps, walking every summary after ``pos``
    newest first through the coverage-time index in steps (doubling to :data:`STEP_ROWS`).
    ``keep`` gets a step's ``(summary_id, rowid)`` and returns the kept ones in order, each
    with its full-text rowid, or None to give up (then so does the walk)."""
    where, params = _time_clause(SUM_TIME, q)
    jd = f"julianday({SUM_TIME})"
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
        rows = _run(
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
        for r in _run(
            q,
            f"SELECT id, c0 FROM {table}_content WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps([rowid for _, rowid in step])],
        )
    }
    if any(named.get(rowid) != summary_id for summary_id, rowid in step):
        return None
    matched = _matching_ids(q, match, [rowid for _, rowid in step], table)
    return [(summary_id, rowid) for summary_id, rowid in step if rowid in matched]


def _summaries_like(q: Query, pos: dict[str, Any], *, cjk: bool) -> Page:
    if cjk:
        groups = fq.cjk_like_groups(fq.cjk_runs(q.pattern)) + [[t] for t in fq.latin_terms(q.pattern)]
    else:
        groups = [[t] for t in fq.like_terms(q.pattern)]
    where, params = _like_filter(q.ctx, "s.content", groups)
    for clause, values in (_scope_clause("s.conversation_id", q.scope), _time_clause(SUM_TIME, q)):
        where += clause
        params += values
    keyset, kparams = _keyset(pos, None, f"julianday({SUM_TIME})", "s.summary_id")
    where += keyset
    params += kparams
    rows = _run(
        q,
        f"""SELECT {_SUM_COLS}, s.content FROM summaries s WHERE {" AND ".join(where)}
            ORDER BY julianday({SUM_TIME}) DESC, s.summary_id DESC LIMIT ?""",
        params + [q.limit + 1],
    )
    page, next_pos = _page_rows(rows, q.limit, lambda r: [None, r["jd"], r["summary_id"]])
    terms = [t for group in groups for t in group]
    hits = [_summary_hit(r, _flatten(fq.like_snippet(r["content"], terms))) for r in page]
    if next_pos is not None:
        next_pos["path"] = "like"
    return Page(hits, "like", next_pos, "limit" if next_pos else None, {})


# --------------------------------------------------------------------------------------
# Regex: Python over newest-first batches, bounded by a scan cap and the deadline
# --------------------------------------------------------------------------------------


def _regex_scan(q: Query, pos: dict[str, Any], source: str) -> Page:
    """Python regex over the newest-first candidates after ``pos``, at most REGEX_SCAN_ROWS.

    Two steps: the candidates' ``(julianday, id)`` come first, newest first -- messages
    from the merged per-conversation walk (:func:`_walk_messages`, bounded steps),
    summaries from one query over the coverage-time indexes -- then contents are read in
    batches by id. (Ordering full rows batch by batch would sort the scope every time.)
    """
    assert q.regex is not None
    if source == "messages":
        cols, table, time_expr, id_name, conv = (
            f"{_MSG_COLS}, m.content",
            "messages m",
            MSG_TIME,
            "message_id",
            "m",
        )
    else:
        cols, table, time_expr, id_name, conv = (
            f"{_SUM_COLS}, s.content",
            "summaries s",
            SUM_TIME,
            "summary_id",
            "s",
        )
    id_col = f"{conv}.{id_name}"
    where, params = _scope_clause(f"{conv}.conversation_id", q.scope)
    tw, tp = _time_clause(time_expr, q)
    keyset, kparams = _keyset(pos, None, f"julianday({time_expr})", id_col)
    where += tw + keyset
    params += tp + kparams
    hits: list[dict[str, Any]] = []
    scanned = 0
    at = pos.get("at")
    truncated_by: str | None = None
    current: sqlite3.Row | None = None
    info: dict[str, Any] = {}
    candidates: list[Any]
    try:
        if source == "messages" and q.ctx.probe.has_index("lcm_messages_conv_julian_idx"):
            walk = _walk_messages(q, pos)
            candidates = [(i, jd) for jd, i in itertools.islice(walk, REGEX_SCAN_ROWS + 1)]
            walk.close()
        else:
            candidates = _run(
                q,
                f"""SELECT {id_col} AS id, julianday({time_expr}) AS jd FROM {table}
                    {"WHERE " + " AND ".join(where) if where else ""}
                    ORDER BY julianday({time_expr}) DESC, {id_col} DESC LIMIT ?""",
                params + [REGEX_SCAN_ROWS + 1],
            )
        more_than_cap = len(candidates) > REGEX_SCAN_ROWS
        candidates = candidates[:REGEX_SCAN_ROWS]
        for start in range(0, len(candidates), REGEX_BATCH):
            chunk = [c[0] for c in candidates[start : start + REGEX_BATCH]]
            marks = ",".join("?" for _ in chunk)
            fetched = {
                r[id_name]: r
                for r in _run(q, f"SELECT {cols} FROM {table} WHERE {id_col} IN ({marks})", chunk)
            }
            rows = [fetched[row_id] for row_id in chunk if row_id in fetched]  # absent: deleted since
            cut_short = False
            try:
                results = scan_texts(
                    q.regex,
                    [row["content"] or "" for row in rows],
                    per_text=1,
                    max_hits=q.limit - len(hits),
                    seconds=q.deadline.remaining(),
                )
            except ScanTimedOut as cut:
                results, cut_short = cut.results, True
                current = rows[cut.stuck] if cut.stuck < len(rows) else None
            except ScanAbandoned:
                raise _abandoned() from None
            for row, spans in zip(rows, results):
                scanned += 1
                at = [None, row["jd"], row[id_name]]
                if spans:
                    snippet = _flatten((row["content"] or "")[spans[0][0] : spans[0][1]])
                    hits.append(
                        _message_hit(row, snippet) if source == "messages" else _summary_hit(row, snippet)
                    )
            if cut_short:
                q.deadline.hit = True
                raise DeadlineExceeded()
            if len(hits) >= q.limit:
                break
        if len(hits) >= q.limit and (scanned < len(candidates) or more_than_cap):
            truncated_by = "limit"
        elif more_than_cap:
            truncated_by = "scanLimit"
    except DeadlineExceeded:
        truncated_by = "deadline"
        if current is not None:
            # The match on this row was cut: report it and move past it, so a pathological
            # row cannot pin every following page to the same spot.
            info["unsearchedIds"] = [current[id_name]]
            at = [None, current["jd"], current[id_name]]
    if truncated_by is None:
        return Page(hits, "regex", None, None, {"scannedRows": scanned, **info})
    next_pos: dict[str, Any] = {"path": "regex"}
    if at is not None:
        next_pos["at"] = at
    return Page(hits, "regex", next_pos, truncated_by, {"scannedRows": scanned, **info})


# --------------------------------------------------------------------------------------
# Files: text payloads on disk, inside largeFilesDir only
# --------------------------------------------------------------------------------------


def _check_file_ids(ctx: Context, file_ids: list[str], scope: Scope) -> None:
    if not ctx.probe.has_table("large_files"):
        raise LcmError(
            "FILE_NOT_FOUND",
            "This database has no large_files table, so it holds no file_ ids.",
            {"fileIds": file_ids},
        )
    marks = ",".join("?" for _ in file_ids)
    rows = {
        r[0]: r[1]
        for r in ctx.query(
            f"SELECT file_id, conversation_id FROM large_files WHERE file_id IN ({marks})", file_ids
        )
    }
    missing = [f for f in file_ids if f not in rows]
    if missing:
        raise LcmError(
            "FILE_NOT_FOUND",
            f"No large file with id {', '.join(missing)}. Find ids with `lcm conversations show`.",
            {"fileIds": missing},
        )
    for file_id, cid in rows.items():
        if not scope.allows(cid):
            raise not_in_scope("file", file_id, scope)


def _search_files(q: Query, pos: dict[str, Any]) -> Page:
    ctx = q.ctx
    if not ctx.probe.has_table("large_files"):
        return Page([], "regex" if q.regex else "like", None, None, {"filesScanned": 0, "skipped": []})
    root = str(ctx.effective.get("largeFilesDir") or "")
    where, params = _scope_clause("f.conversation_id", q.scope)
    if q.file_ids:
        where.append(f"f.file_id IN ({','.join('?' for _ in q.file_ids)})")
        params += q.file_ids
    tw, tp = _time_clause(FILE_TIME, q)
    where += tw
    params += tp
    keyset, kparams = _keyset(pos, None, f"julianday({FILE_TIME})", "f.file_id")
    where += keyset
    params += kparams
    rows = ctx.query(
        f"""SELECT f.file_id, f.conversation_id, f.file_name, f.mime_type, f.storage_uri, f.created_at,
                   julianday(f.created_at) AS jd
            FROM large_files f {"WHERE " + " AND ".join(where) if where else ""}
            ORDER BY julianday(f.created_at) DESC, f.file_id DESC""",
        params,
    )
    terms = fq.like_terms(q.pattern) if q.mode == "full_text" else []
    hits: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    scanned = 0
    at: list[Any] | None = None
    truncated_by: str | None = None
    remaining = list(rows)
    while remaining:
        if len(hits) >= q.limit:
            truncated_by = "limit"
            break
        if q.deadline.expired():
            truncated_by = "deadline"
            break
        row = remaining.pop(0)
        at = [None, row["jd"], row["file_id"]]
        reason = None
        text = ""
        cut = False
        if not is_text_mime(row["mime_type"]):
            reason = f"not text ({row['mime_type']})"
        else:
            path = resolve_inside(row["storage_uri"], root) if root else None
            if path is None:
                reason = "outside largeFilesDir"
            else:
                try:
                    with open_input(path) as handle:
                        data = handle.read(FILE_SCAN_BYTES + 1)
                except OSError:
                    reason = "unreadable"
                    data = b""
                if reason is None:
                    cut = len(data) > FILE_SCAN_BYTES
                    data = data[:FILE_SCAN_BYTES]
                    if b"\x00" in data:
                        reason = "binary content"
                    else:
                        text = data.decode("utf-8", errors="ignore")
        if reason is not None:
            skipped.append({"fileId": row["file_id"], "reason": reason})
            continue
        scanned += 1
        try:
            found = _file_matches(text, q.regex, terms, q.deadline)
        except DeadlineExceeded:
            truncated_by = "deadline"
            break
        for start, end in found:
            hits.append(
                {
                    "type": "file",
                    "id": row["file_id"],
                    "conversationId": row["conversation_id"],
                    "fileName": row["file_name"],
                    "timestamp": row["created_at"],
                    "line": text.count("\n", 0, start) + 1,
                    "byteOffset": len(text[:start].encode("utf-8")),
                    "match": text[start:end],
                    "snippet": _line_snippet(text, start, end),
                    "scanTruncated": cut,
                }
            )
    next_pos = {"at": at} if truncated_by else None
    path = "regex" if q.regex is not None else "like"
    return Page(hits, path, next_pos, truncated_by, {"filesScanned": scanned, "skipped": skipped})


def _file_matches(
    text: str, regex: re.Pattern[str] | None, terms: list[str], deadline: Deadline
) -> list[tuple[int, int]]:
    if regex is not None:
        try:
            found = scan_texts(
                regex, [text], per_text=FILE_MATCHES_PER_FILE, max_hits=1, seconds=deadline.remaining()
            )
        except ScanTimedOut:
            deadline.hit = True
            raise DeadlineExceeded() from None
        except ScanAbandoned:
            raise _abandoned() from None
        return found[0] if found else []

    folded = text.lower()
    if not terms or not all(t in folded for t in terms):
        return []
    # Offsets come from a case-insensitive search of the text itself: lower() can change
    # a string's length (e.g. U+0130), so positions in ``folded`` may not map back.
    first = re.compile(re.escape(terms[0]), re.IGNORECASE)
    return [(m.start(), m.end()) for _, m in zip(range(FILE_MATCHES_PER_FILE), first.finditer(text))]


def _abandoned() -> LcmError:
    return LcmError(
        "SERVER_STOPPING",
        "The server is stopping and abandoned this search; send it again to the next server.",
    )


def _line_snippet(text: str, start: int, end: int) -> str:
    begin = max(0, start - 80)
    stop = min(len(text), end + 80)
    piece = " ".join(text[begin:stop].split())
    return ("..." if begin > 0 else "") + piece + ("..." if stop < len(text) else "")
