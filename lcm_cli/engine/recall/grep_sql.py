"""What every grep back-end shares: the search being run, one source's page, SQL pieces.

A search (:class:`Query`) is run source by source; each back-end returns a :class:`Page`:
its hits in the source's order, each with the keyset position it sits at, where the source
continues, and what cut it short. Queries run through :func:`run`, under the deadline.
"""

from __future__ import annotations

import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_cli.engine.context import Context
from lcm_cli.engine.recall import fts_query as fq
from lcm_cli.engine.recall.deadline import Deadline, DeadlineExceeded
from lcm_cli.engine.recall.scope import Scope

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import GrepHit

SNIPPET_CHARS = 200
# A regex hit's snippet: this much text before the match, the rest of the line after it.
CONTEXT_BEFORE = 60
_SPACE = re.compile(r"\s+")


class Query(NamedTuple):
    """Everything a source searcher needs."""

    ctx: Context
    pattern: str
    mode: str  # full_text | regex (auto is resolved before a search runs)
    sort: str
    regex: re.Pattern[str] | None
    scope: Scope
    after: str | None
    before: str | None
    limit: int
    deadline: Deadline
    now_jd: float
    file_ids: list[str]
    scan_limit: int = 20_000  # regex: rows read per source per call, at most


class Page(NamedTuple):
    """One source's share of a page."""

    hits: list[GrepHit]
    path: str  # fts5 | trigram | like | regex
    next_pos: dict[str, Any] | None  # where this source continues; None = exhausted
    truncated_by: str | None  # limit | deadline | scanLimit
    info: dict[str, Any]
    # Each hit's keyset position ``[score, julianday, id]``, in order: the page can be cut
    # after any hit and continue right after it.
    keys: list[list[Any]] = []


def julian_now() -> float:
    """Now as a Julian day number (SQLite's ``julianday('now')``)."""
    return time.time() / 86400.0 + 2440587.5


def run(q: Query, sql: str, params: list[Any]) -> list[sqlite3.Row]:
    """Run a search query under the deadline; sqlite3 errors propagate (for fallbacks)."""
    with q.deadline.bound_sqlite(q.ctx.db):
        return q.ctx.db.execute(sql, params).fetchall()


def guarded(path: str, pos: dict[str, Any], search: Callable[[], Page]) -> Page:
    """Run one back-end; if the deadline cuts it, an empty page that resumes at ``pos``."""
    try:
        return search()
    except DeadlineExceeded:
        return Page([], path, {**pos, "path": path}, "deadline", {})


def scope_clause(column: str, scope: Scope) -> tuple[list[str], list[Any]]:
    """``column IN (...)`` for a scope of listed conversations; nothing for every conversation."""
    if scope.conversation_ids is None:
        return [], []
    marks = ",".join("?" for _ in scope.conversation_ids)
    return [f"{column} IN ({marks})"], list(scope.conversation_ids)


def time_clause(expr: str, q: Query) -> tuple[list[str], list[Any]]:
    """The time filters (after inclusive, before exclusive) on ``expr``."""
    where: list[str] = []
    params: list[Any] = []
    if q.after:
        where.append(f"julianday({expr}) >= julianday(?)")
        params.append(q.after)
    if q.before:
        where.append(f"julianday({expr}) < julianday(?)")
        params.append(q.before)
    return where, params


def keyset(pos: dict[str, Any], score: str | None, jd: str, row_id: str) -> tuple[list[str], list[Any]]:
    """Rows after ``pos`` in (score ASC,) jd DESC, id DESC order."""
    at = pos.get("at")
    if not at:
        return [], []
    after_time = f"({jd} < ? OR ({jd} = ? AND {row_id} < ?))"
    if score is None:
        return [after_time], [at[1], at[1], at[2]]
    return [f"({score} > ? OR ({score} = ? AND {after_time}))"], [at[0], at[0], at[1], at[1], at[2]]


def page_rows(
    rows: list[sqlite3.Row], limit: int, position: Callable[[sqlite3.Row], list[Any]]
) -> tuple[list[sqlite3.Row], dict[str, Any] | None]:
    """The first ``limit`` of ``limit + 1`` rows, and where the next page starts (None: no more)."""
    if len(rows) > limit:
        page = rows[:limit]
        return page, {"at": position(page[-1])}
    return rows, None


def flatten(text: str, cap: int = SNIPPET_CHARS) -> str:
    """One line of at most ``cap`` characters (``cap - 3`` and ``...`` when cut)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


def context_snippet(text: str, start: int, end: int, cap: int = SNIPPET_CHARS) -> str:
    """The match at ``start:end`` with the text around it, on one line of at most ``cap``
    characters: up to :data:`CONTEXT_BEFORE` characters before it (from a word's start),
    then the match and what follows, ``...`` on cut sides."""
    begin = max(0, start - CONTEXT_BEFORE)
    if begin > 0:
        space = _SPACE.search(text, begin, start)
        begin = space.end() if space else begin
    stop = min(len(text), max(end, begin + 4 * cap))
    flat = ("..." if begin > 0 else "") + " ".join(text[begin:stop].split())
    if len(flat) > cap or stop < len(text):
        return flat[: cap - 3] + "..."
    return flat


def fold(text: str | None) -> str:
    """NFC and case folding (SQLite's LOWER only knows ASCII)."""
    return unicodedata.normalize("NFC", text or "").casefold()


def like_filter(ctx: Context, column: str, groups: list[list[str]]) -> tuple[list[str], list[Any]]:
    """Every group must match; a group matches when any of its terms occurs (case-folded).

    ASCII terms use LIKE (ASCII case-insensitive in SQLite); other terms go through a
    Python fold (NFC + casefold), because SQLite's LOWER only knows ASCII.
    """
    where: list[str] = []
    params: list[Any] = []
    needs_fold = any(not term.isascii() for group in groups for term in group)
    if needs_fold:
        ctx.db.create_function("lcm_fold", 1, fold, deterministic=True)
    for group in groups:
        alternatives = []
        for term in group:
            if term.isascii():
                alternatives.append(f"{column} LIKE ? ESCAPE '\\'")
                params.append(fq.like_escape(term))
            else:
                alternatives.append(f"instr(lcm_fold({column}), ?) > 0")
                params.append(fold(term))
        where.append("(" + " OR ".join(alternatives) + ")")
    return where, params


class Source(NamedTuple):
    """A table grep searches row by row (messages, summaries): one search path serves both."""

    name: str  # messages | summaries
    kind: str  # the hit's type: message | summary
    alias: str  # the table's alias in every query: m | s
    table: str
    id_col: str
    time: str  # the time a row is ordered and filtered by
    cols: str  # what a hit is built from (with ``jd``, the time as a Julian day)
    fts: str  # the full-text table
    fts_join: str  # how a full-text row joins its record
    fts_column: int  # the content column snippet() reads
    trigram: str | None  # the CJK trigram table, if the source has one
    cjk_pieces: bool  # CJK LIKE: runs as overlapping 2-character pieces (else whole runs)
    make: Callable[[sqlite3.Row, str], GrepHit]  # the hit of a row, with its snippet

    def hit(self, row: sqlite3.Row, snippet: str, rank: float | None = None) -> GrepHit:
        """One hit: ``{type, id, conversationId, sessionKey, ..., timestamp, snippet}`` (``rank`` when ranked)."""
        hit = self.make(row, snippet)
        if rank is not None:
            hit["rank"] = rank
        return hit


def _message_hit(row: sqlite3.Row, snippet: str) -> GrepHit:
    return {
        "type": "message",
        "id": row["message_id"],
        "conversationId": row["conversation_id"],
        "sessionKey": None,  # filled in once the page is chosen
        "seq": row["seq"],
        "role": row["role"],
        "timestamp": row["created_at"],
        "snippet": snippet,
    }


def _summary_hit(row: sqlite3.Row, snippet: str) -> GrepHit:
    return {
        "type": "summary",
        "id": row["summary_id"],
        "conversationId": row["conversation_id"],
        "sessionKey": None,  # filled in once the page is chosen
        "kind": row["kind"],
        "depth": row["depth"],
        "tokenCount": row["token_count"],
        "timestamp": row["coverage_at"],
        "snippet": snippet,
    }


MSG_TIME = "m.created_at"
SUM_TIME = "COALESCE(s.latest_at, s.created_at)"

MESSAGES = Source(
    "messages",
    "message",
    "m",
    "messages",
    "message_id",
    MSG_TIME,
    "m.message_id, m.conversation_id, m.seq, m.role, m.created_at, julianday(m.created_at) AS jd",
    "messages_fts",
    "m.message_id = messages_fts.rowid",
    0,
    None,
    False,
    _message_hit,
)
SUMMARIES = Source(
    "summaries",
    "summary",
    "s",
    "summaries",
    "summary_id",
    SUM_TIME,
    f"""s.summary_id, s.conversation_id, s.kind, s.depth, s.token_count,
        {SUM_TIME} AS coverage_at, julianday({SUM_TIME}) AS jd""",
    "summaries_fts",
    "s.summary_id = {fts}.summary_id",
    1,
    "summaries_fts_cjk",
    True,
    _summary_hit,
)
