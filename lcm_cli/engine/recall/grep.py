"""`lcm grep`: search messages, summaries and large files, and answer in one call.

The request is checked and its mode chosen (``auto``: full text for words, regex for
regex syntax); each source is searched by the best back-end this file and query allow
(:mod:`grep_sources` for messages and summaries, :mod:`grep_files` for files); the
sources' pages are merged in the search's order and cut to ``--limit`` for the whole
answer; every hit names its conversation and session key. ``meta`` reports which
back-end ran, and whether the answer is complete or what cut it: the limit, a regex
source's row budget (``scanLimit``) or the deadline. Pages continue with a keyset cursor
per source.
"""

from __future__ import annotations

import heapq
import json
import re
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.cursor import open_cursor, seal
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import DEADLINE_MS, FILE_ID, MODE, SCAN_LIMIT, SCOPE, SORT, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.recall import fts_query as fq
from lcm_cli.engine.recall.deadline import Deadline
from lcm_cli.engine.recall.grep_files import FILE_SCAN_BYTES, check_file_ids, search_files
from lcm_cli.engine.recall.grep_sources import search_source
from lcm_cli.engine.recall.grep_sql import MESSAGES, SUMMARIES, Page, Query, julian_now
from lcm_cli.engine.recall.scope import Scope, choice, resolve_scope

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import GrepHit

__all__ = ["FILE_SCAN_BYTES", "REGEX_SCAN_ROWS", "check_full_text", "grep", "run_search"]

SCOPES = {
    "messages": ("messages",),
    "summaries": ("summaries",),
    "both": ("messages", "summaries"),
    "files": ("files",),
}
MAX_PATTERN_CHARS = 500
REGEX_SCAN_ROWS = 20_000  # the default row budget: rows a regex reads per source per call
DEFAULT_DEADLINE_MS = 5_000
HIT_TYPES = {"messages": "message", "summaries": "summary", "files": "file"}


@operation("grep")
def grep(ctx: Context, req: Request) -> Result:
    """Search in scope; one page of hits, ``--limit`` in all, with an honest ``meta``."""
    return run_search(ctx, req)


def run_search(ctx: Context, req: Request, *, per_source: bool = False) -> Result:
    """The search of ``req``: ``limit`` hits in all, or (``per_source``, as lossless-claw's
    ``lcm_grep`` counts) up to ``limit`` from each source."""
    pattern = req.args[0].strip()
    requested_mode = choice(req, MODE) or "auto"
    scope_name = choice(req, SCOPE) or "both"
    requested_sort = choice(req, SORT) or "recency"
    file_ids = list(req[FILE_ID] or [])
    deadline = Deadline(req[DEADLINE_MS] or DEFAULT_DEADLINE_MS)
    if not pattern:
        raise LcmError(
            "INVALID_PATTERN",
            "The pattern is empty. Give a word or phrase (--mode full_text) or a regular expression.",
            {"pattern": req.args[0], "mode": requested_mode, "reason": "empty"},
        )
    mode = choose_mode(pattern) if requested_mode == "auto" else requested_mode
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
    fingerprint = _fingerprint(pattern, mode, scope_name, sort, scope, file_ids, req, per_source)
    positions: dict[str, Any] = {source: {} for source in sources}
    now_jd = julian_now()
    if req.cursor:
        state = _decode_cursor(req.cursor, fingerprint)
        positions = state["pos"]
        now_jd = state["now"]
    if "files" in sources and file_ids:
        check_file_ids(ctx, file_ids, scope)
    scan_limit = req[SCAN_LIMIT] or REGEX_SCAN_ROWS
    q = Query(
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
        scan_limit,
    )
    pages: dict[str, Page] = {}
    for source in sources:
        if source in positions:  # else exhausted on an earlier page
            pages[source] = _search(q, source, positions[source])
    if not per_source:
        pages = _cut_to_limit(pages, positions, sort, req.limit)
    hits = [hit for page in pages.values() for hit in page.hits]
    if not per_source and len(pages) > 1:
        hits = [hit for _, hit in _merged(pages, sort)]
    _add_session_keys(ctx, hits)
    next_positions = {source: page.next_pos for source, page in pages.items() if page.next_pos is not None}
    next_cursor = (
        _encode_cursor({"q": fingerprint, "now": now_jd, "pos": next_positions}) if next_positions else None
    )
    truncated = {source: page.truncated_by for source, page in pages.items() if page.truncated_by}
    meta: dict[str, Any] = {
        "searchPath": {source: page.path for source, page in pages.items()},
        "scopes": list(sources),
        "scope": scope.to_dict(),
        "mode": mode,
        "sort": sort,
        "complete": not truncated,
        "truncatedBy": truncated,
        "deadlineMs": deadline.ms,
        "elapsedMs": deadline.elapsed_ms(),
    }
    if requested_mode != mode:
        meta["modeRequested"] = requested_mode
    if requested_sort != sort:
        meta["sortRequested"] = requested_sort
    if mode == "regex":
        meta["scanLimit"] = scan_limit
    info = {source: page.info for source, page in pages.items() if page.info}
    if info:
        meta["sources"] = info
    counts = {source: sum(1 for h in hits if h["type"] == HIT_TYPES[source]) for source in sources}
    data = {"pattern": pattern, "counts": counts, "hits": hits}
    pagination = {
        "limit": req.limit,
        "returned": len(hits),
        "hasMore": next_cursor is not None,
        "nextCursor": next_cursor,
    }
    return Result(data, pagination, meta)


def choose_mode(pattern: str) -> str:
    """``auto``: full text when the pattern is words full-text search accepts, else regex."""
    try:
        check_full_text(pattern)
    except LcmError:
        return "regex"
    return "full_text"


def _search(q: Query, source: str, pos: dict[str, Any]) -> Page:
    if source == "files":
        return search_files(q, pos)
    return search_source(q, MESSAGES if source == "messages" else SUMMARIES, pos)


def _merge_key(sort: str) -> Any:
    """The order hits of different sources are merged in: each source's own order.

    Recency: newest first. Relevance and hybrid: by score, then newest first; a source
    searched without a rank (the LIKE path) follows the ranked ones.
    """

    def key(item: tuple[list[Any], GrepHit]) -> tuple[float, float]:
        score, jd = item[0][0], item[0][1]
        newest = -jd if jd is not None else float("inf")
        if sort == "recency":
            return (0.0, newest)
        return (score if score is not None else float("inf"), newest)

    return key


def _merged(pages: dict[str, Page], sort: str) -> list[tuple[str, GrepHit]]:
    """Every source's hits, merged in the search's order: ``(source, hit)``."""
    streams = [
        [(key, hit, source) for key, hit in zip(page.keys, page.hits)] for source, page in pages.items()
    ]
    by = _merge_key(sort)
    merged = heapq.merge(*streams, key=lambda item: by((item[0], item[1])))
    return [(source, hit) for _, hit, source in merged]


def _cut_to_limit(
    pages: dict[str, Page], positions: dict[str, Any], sort: str, limit: int
) -> dict[str, Page]:
    """Keep the first ``limit`` hits of all sources together; a source cut short continues
    right after its last hit shown (or where it started, when none was shown)."""
    if sum(len(page.hits) for page in pages.values()) <= limit or len(pages) < 2:
        return pages
    shown: dict[str, int] = {source: 0 for source in pages}
    for source, _ in _merged(pages, sort)[:limit]:
        shown[source] += 1
    out: dict[str, Page] = {}
    for source, page in pages.items():
        n = shown[source]
        if n == len(page.hits):
            out[source] = page
            continue
        resume = dict(positions[source]) if n == 0 else {"at": page.keys[n - 1]}
        resume["path"] = page.path
        out[source] = page._replace(
            hits=page.hits[:n], keys=page.keys[:n], next_pos=resume, truncated_by="limit"
        )
    return out


def _add_session_keys(ctx: Context, hits: list[GrepHit]) -> None:
    """Each hit's ``sessionKey``: its conversation's (the field already sits after ``conversationId``)."""
    ids = sorted({hit["conversationId"] for hit in hits if hit.get("conversationId") is not None})
    keys: dict[int, Any] = {}
    if ids:
        rows = ctx.query(
            "SELECT conversation_id, session_key FROM conversations "
            "WHERE conversation_id IN (SELECT value FROM json_each(?))",
            [json.dumps(ids)],
        )
        keys = {r[0]: r[1] for r in rows}
    for hit in hits:
        hit["sessionKey"] = keys.get(hit["conversationId"])


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
    per_source: bool,
) -> str:
    import hashlib  # here: its OpenSSL binding costs a few ms at start-up

    raw = json.dumps(
        [
            pattern,
            mode,
            scope_name,
            sort,
            scope.conversation_ids,
            file_ids,
            req.time.after,
            req.time.before,
            per_source,
        ]
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]


def _encode_cursor(state: dict[str, Any]) -> str:
    return seal("grep", **state)


def _decode_cursor(text: str, fingerprint: str) -> dict[str, Any]:
    invalid = LcmError(
        "INVALID_CURSOR",
        "Invalid --cursor for this search: pass the nextCursor of the same `lcm grep` "
        "(same pattern, mode, scope, sort, selector and time filters) unchanged.",
    )
    payload = open_cursor(text, "grep", invalid)
    if (
        payload.get("q") != fingerprint
        or not isinstance(payload.get("pos"), dict)
        or not isinstance(payload.get("now"), (int, float))
    ):
        raise invalid
    return payload
