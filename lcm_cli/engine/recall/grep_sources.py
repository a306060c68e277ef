"""One search path for the row sources, messages and summaries: full text, LIKE, regex.

Both sources are searched by the same code, told apart by their :class:`Source`
descriptor (table, time, full-text table, hit fields). The back-end is chosen per query
and per database: FTS5; the trigram table for CJK where the source has one; a LIKE scan
for what FTS5 cannot tokenize (or when its table is missing or broken); or a Python regex
over a bounded, newest-first candidate set. The page says which one ran.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.recall import fts_query as fq
from lcm_cli.engine.recall import grep_newest as newest
from lcm_cli.engine.recall import grep_sql as sql
from lcm_cli.engine.recall.deadline import DeadlineExceeded
from lcm_cli.engine.recall.grep_sql import MESSAGES, Page, Query, Source
from lcm_cli.engine.recall.regex_worker import ScanAbandoned, ScanTimedOut
from lcm_cli.engine.recall.regex_worker import scan as scan_texts

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import GrepHit

REGEX_BATCH = 1_000  # rows whose content one regex step reads
SNIPPET_CHUNK = 50  # rowids per snippet query: FTS5 seeks each value of an IN list anew


def search_source(q: Query, source: Source, pos: dict[str, Any]) -> Page:
    """One page of ``source`` after ``pos``, by the back-end the query and database allow."""
    if q.mode == "regex":
        return regex_scan(q, source, pos)
    path = pos.get("path") or _choose_path(q, source)
    if path == "fts5":
        try:
            return sql.guarded("fts5", pos, lambda: _full_text(q, source, pos, source.fts))
        except sqlite3.Error:
            pass  # a build without FTS5, or a query FTS5 rejects: fall back, and say so
    elif path == "trigram" and source.trigram:
        table = source.trigram
        try:
            page = sql.guarded("trigram", pos, lambda: _full_text(q, source, pos, table))
            # No trigram rows on the first page: the looser CJK LIKE search may still match.
            if page.hits or pos or page.truncated_by:
                return page
        except sqlite3.Error:
            pass
    return sql.guarded("like", pos, lambda: _like(q, source, pos))


def _choose_path(q: Query, source: Source) -> str:
    if fq.has_cjk(q.pattern):
        trigram = source.trigram is not None and fq.trigram_query(fq.cjk_runs(q.pattern)) is not None
        return "trigram" if trigram and q.ctx.probe.has_table(str(source.trigram)) else "like"
    usable = fq.fts_can_tokenize(q.pattern) and q.ctx.probe.has_table(source.fts)
    return "fts5" if usable else "like"


def _score_expr(q: Query, rank: str, jd: str) -> str | None:
    if q.sort == "relevance":
        return rank
    if q.sort == "hybrid":
        return f"({rank} / (1 + MAX(0.0, ({q.now_jd!r} - {jd}) * 24.0) * 0.001))"
    return None


def _full_text(q: Query, source: Source, pos: dict[str, Any], table: str) -> Page:
    """FTS5 (or the trigram table) in the requested order, with FTS5's snippets."""
    trigram = table == source.trigram
    if trigram:
        match = fq.trigram_query(fq.cjk_runs(q.pattern)) or '""'
        latin = fq.latin_terms(q.pattern)
    else:
        match = fq.fts5_query(q.pattern)
        latin = []
    a = source.alias
    where = [f"{table} MATCH ?"]
    params: list[Any] = [match]
    like_where, like_params = sql.like_filter(q.ctx, f"{a}.content", [[t] for t in latin])
    where += like_where
    params += like_params
    for clause, values in (
        sql.scope_clause(f"{a}.conversation_id", q.scope),
        sql.time_clause(source.time, q),
    ):
        where += clause
        params += values
    score = _score_expr(q, f"{table}.rank", f"julianday({source.time})")
    inner = f"""SELECT {source.cols}, {score or "NULL"} AS score, {table}.rowid AS fts_rowid
                FROM {table} JOIN {source.table} {a} ON {source.fts_join.format(fts=table)}
                WHERE {" AND ".join(where)}"""
    keys, kparams = sql.keyset(pos, "score" if score else None, "jd", source.id_col)
    order = ("score ASC, " if score else "") + f"jd DESC, {source.id_col} DESC"
    outer_where = f"WHERE {' AND '.join(keys)}" if keys else ""
    newest_rows = None if score or latin else newest.newest_matches(q, source, pos, table, match)
    if newest_rows is None:
        rows = sql.run(
            q,
            f"SELECT * FROM ({inner}) {outer_where} ORDER BY {order} LIMIT ?",
            params + kparams + [q.limit + 1],
        )
        fts_rowids = {r["fts_rowid"]: r[source.id_col] for r in rows}
    else:
        rows, fts_rowids = newest_rows
    page, next_pos = sql.page_rows(rows, q.limit, lambda r: _position(r, source, score))
    # Snippets by the full-text rowid: FTS5 cannot look up a summary's UNINDEXED id column.
    shown = {r[source.id_col] for r in page}
    snippets: dict[Any, str] = {}
    wanted = [rowid for rowid, record in fts_rowids.items() if record in shown]
    for rowid, text in _fts_snippets(q, table, source.fts_column, match, wanted):
        snippets.setdefault(fts_rowids[rowid], sql.flatten(text))
    path = "trigram" if trigram else "fts5"
    hits = [source.hit(r, snippets.get(r[source.id_col], ""), r["score"] if score else None) for r in page]
    if next_pos is not None:
        next_pos["path"] = path
    keys_out = [_position(r, source, score) for r in page]
    return Page(hits, path, next_pos, "limit" if next_pos else None, {}, keys_out)


def _position(row: sqlite3.Row, source: Source, score: str | None) -> list[Any]:
    return [row["score"] if score else None, row["jd"], row[source.id_col]]


def _fts_snippets(q: Query, table: str, column: int, match: str, rowids: list[int]) -> list[Any]:
    """``(rowid, snippet)`` of the given full-text rows, a few rowids per query."""
    out: list[Any] = []
    ordered = sorted(set(rowids))
    for start in range(0, len(ordered), SNIPPET_CHUNK):
        chunk = ordered[start : start + SNIPPET_CHUNK]
        out += sql.run(
            q,
            f"""SELECT rowid, snippet({table}, {column}, '', '', '...', 32) FROM {table}
                WHERE {table} MATCH ? AND rowid IN ({",".join("?" for _ in chunk)})""",
            [match, *chunk],
        )
    return out


def _like(q: Query, source: Source, pos: dict[str, Any]) -> Page:
    """Every term as a case-insensitive substring, newest first (no rank)."""
    if fq.has_cjk(q.pattern) and source.cjk_pieces:
        groups = fq.cjk_like_groups(fq.cjk_runs(q.pattern)) + [[t] for t in fq.latin_terms(q.pattern)]
    else:
        groups = [[t] for t in fq.like_terms(q.pattern)]
    a = source.alias
    where, params = sql.like_filter(q.ctx, f"{a}.content", groups)
    for clause, values in (
        sql.scope_clause(f"{a}.conversation_id", q.scope),
        sql.time_clause(source.time, q),
    ):
        where += clause
        params += values
    jd = f"julianday({source.time})"
    keys, kparams = sql.keyset(pos, None, jd, f"{a}.{source.id_col}")
    rows = sql.run(
        q,
        f"""SELECT {source.cols}, {a}.content FROM {source.table} {a} WHERE {" AND ".join(where + keys)}
            ORDER BY {jd} DESC, {a}.{source.id_col} DESC LIMIT ?""",
        params + kparams + [q.limit + 1],
    )
    page, next_pos = sql.page_rows(rows, q.limit, lambda r: _position(r, source, None))
    terms = [t for group in groups for t in group]
    hits = [source.hit(r, sql.flatten(fq.like_snippet(r["content"], terms))) for r in page]
    if next_pos is not None:
        next_pos["path"] = "like"
    keys_out = [_position(r, source, None) for r in page]
    return Page(hits, "like", next_pos, "limit" if next_pos else None, {}, keys_out)


def regex_scan(q: Query, source: Source, pos: dict[str, Any]) -> Page:
    """Python regex over the newest-first candidates after ``pos``, at most ``q.scan_limit``.

    Candidates come in batches of :data:`REGEX_BATCH` ``(id, julianday)``, newest first
    (:func:`_candidates`); each batch's contents are read by id and matched before the
    next batch is read, so a deadline always leaves the rows scanned so far behind it and
    the cursor continues after them. (Ordering full rows would sort the scope every time.)
    A hit's ``snippet`` is the match with the text around it; ``match`` the matched text.
    """
    assert q.regex is not None
    a = source.alias
    id_col = f"{a}.{source.id_col}"
    hits: list[GrepHit] = []
    positions: list[list[Any]] = []
    scanned = 0
    seen = 0  # candidates taken, at most the budget
    at = pos.get("at")
    truncated_by: str | None = None
    current: sqlite3.Row | None = None
    info: dict[str, Any] = {}
    budget = q.scan_limit
    try:
        more = False  # candidates are left after the last one scanned
        for batch, last in _candidates(q, source, pos, budget + 1):
            over = seen + len(batch) > budget  # the one candidate past the budget
            batch = batch[: budget - seen]
            more = over or not last
            seen += len(batch)
            if not batch:
                break
            seconds = q.deadline.remaining()
            if seconds <= 0:
                q.deadline.hit = True
                raise DeadlineExceeded()
            chunk = [c[0] for c in batch]
            marks = ",".join("?" for _ in chunk)
            fetched = {
                r[source.id_col]: r
                for r in sql.run(
                    q,
                    f"SELECT {source.cols}, {a}.content FROM {source.table} {a} WHERE {id_col} IN ({marks})",
                    chunk,
                )
            }
            rows = [fetched[row_id] for row_id in chunk if row_id in fetched]  # absent: deleted since
            cut_short = False
            try:
                results = scan_texts(
                    q.regex,
                    [row["content"] or "" for row in rows],
                    per_text=1,
                    max_hits=q.limit - len(hits),
                    seconds=seconds,
                )
            except ScanTimedOut as cut:
                results, cut_short = cut.results, True
                current = rows[cut.stuck] if cut.stuck < len(rows) else None
            except ScanAbandoned:
                raise abandoned() from None
            for row, spans in zip(rows, results):
                scanned += 1
                at = [None, row["jd"], row[source.id_col]]
                if spans:
                    content = row["content"] or ""
                    begin, end = spans[0]
                    hit = source.hit(row, sql.context_snippet(content, begin, end))
                    hit["match"] = sql.flatten(content[begin:end])
                    hits.append(hit)
                    positions.append(at)
            if cut_short:
                q.deadline.hit = True
                raise DeadlineExceeded()
            if len(hits) >= q.limit:
                more = more or len(results) < len(rows)
                break
        if len(hits) >= q.limit and more:
            truncated_by = "limit"
        elif more and seen >= budget:
            truncated_by = "scanLimit"
    except DeadlineExceeded:
        truncated_by = "deadline"
        if current is not None:
            # The match on this row was cut: report it and move past it, so a pathological
            # row cannot pin every following page to the same spot.
            info["unsearchedIds"] = [current[source.id_col]]
            at = [None, current["jd"], current[source.id_col]]
    info = {"scannedRows": scanned, **info}
    if truncated_by is None:
        return Page(hits, "regex", None, None, info, positions)
    next_pos: dict[str, Any] = {"path": "regex"}
    if at is not None:
        next_pos["at"] = at
    return Page(hits, "regex", next_pos, truncated_by, info, positions)


def _candidates(
    q: Query, source: Source, pos: dict[str, Any], want: int
) -> Iterator[tuple[list[tuple[Any, float]], bool]]:
    """Up to ``want`` rows of ``source`` after ``pos``, newest first, as ``(id, julianday)``
    in batches of :data:`REGEX_BATCH`, each with whether it is the last one.

    Messages come from the merged per-conversation walk (bounded steps); other sources
    from the time index, one keyset query a batch.
    """
    if source is MESSAGES and q.ctx.probe.has_index("lcm_messages_conv_julian_idx"):
        walk = newest.walk_messages(q, pos)
        try:
            while want > 0:
                size = min(REGEX_BATCH, want)
                batch = [(i, jd) for jd, i in itertools.islice(walk, size)]
                want -= len(batch)
                yield batch, len(batch) < size
                if len(batch) < size:
                    return
        finally:
            walk.close()
        return
    a = source.alias
    id_col = f"{a}.{source.id_col}"
    jd = f"julianday({source.time})"
    where, params = sql.scope_clause(f"{a}.conversation_id", q.scope)
    tw, tp = sql.time_clause(source.time, q)
    where += tw
    params += tp
    after = pos
    while want > 0:
        size = min(REGEX_BATCH, want)
        keys, kparams = sql.keyset(after, None, jd, id_col)
        clauses = where + keys
        rows = sql.run(
            q,
            f"""SELECT {id_col} AS id, {jd} AS jd FROM {source.table} {a}
                {"WHERE " + " AND ".join(clauses) if clauses else ""}
                ORDER BY {jd} DESC, {id_col} DESC LIMIT ?""",
            params + kparams + [size],
        )
        want -= len(rows)
        yield [(r[0], r[1]) for r in rows], len(rows) < size
        if len(rows) < size:
            return
        after = {"at": [None, rows[-1][1], rows[-1][0]]}


def abandoned() -> LcmError:
    """SERVER_STOPPING: the regex helper was killed before it answered."""
    return LcmError(
        "SERVER_STOPPING",
        "The server is stopping and abandoned this search; send it again to the next server.",
    )
