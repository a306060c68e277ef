"""Grep's third source: large files' text payloads on disk, inside ``largeFilesDir`` only.

Files are searched newest first across the scope; the first :data:`FILE_SCAN_BYTES` of
each are read, and up to :data:`FILE_MATCHES_PER_FILE` matches are reported per file,
each with its line, byte offset, matched text and a one-line snippet around it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.recall import fts_query as fq
from lcm_cli.engine.recall import grep_sql as sql
from lcm_cli.engine.recall.deadline import Deadline, DeadlineExceeded
from lcm_cli.engine.recall.files import is_text_mime, resolve_inside
from lcm_cli.engine.recall.grep_sources import abandoned
from lcm_cli.engine.recall.grep_sql import Page, Query
from lcm_cli.engine.recall.regex_worker import ScanAbandoned, ScanTimedOut
from lcm_cli.engine.recall.regex_worker import scan as scan_texts
from lcm_cli.engine.recall.scope import Scope, not_in_scope

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import GrepHit

FILE_SCAN_BYTES = 512_000
FILE_MATCHES_PER_FILE = 10
FILE_TIME = "f.created_at"


def check_file_ids(ctx: Context, file_ids: list[str], scope: Scope) -> None:
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


def search_files(q: Query, pos: dict[str, Any]) -> Page:
    """One page of file matches after ``pos``: exactly ``limit`` at most, a file's matches
    split across pages when the page fills inside it (``skip`` in the position)."""
    ctx = q.ctx
    if not ctx.probe.has_table("large_files"):
        return Page([], "regex" if q.regex else "like", None, None, {"filesScanned": 0, "skipped": []})
    root = str(ctx.engine_settings.large_files_dir or "")
    where, params = sql.scope_clause("f.conversation_id", q.scope)
    if q.file_ids:
        where.append(f"f.file_id IN ({','.join('?' for _ in q.file_ids)})")
        params += q.file_ids
    tw, tp = sql.time_clause(FILE_TIME, q)
    where += tw
    params += tp
    keyset, kparams = sql.keyset(pos, None, f"julianday({FILE_TIME})", "f.file_id")
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
    hits: list[GrepHit] = []
    keys: list[list[Any]] = []
    skipped: list[dict[str, Any]] = []
    scanned = 0
    at: list[Any] | None = pos.get("at")
    skip = int(pos.get("skip") or 0)  # matches of the next file an earlier page showed
    truncated_by: str | None = None
    next_pos: dict[str, Any] | None = None
    for row in rows:
        if len(hits) >= q.limit:
            truncated_by = "limit"
            break
        if q.deadline.expired():
            truncated_by = "deadline"
            break
        before = at
        at = [None, row["jd"], row["file_id"]]
        text, cut, reason = _read_text(row, root)
        if reason is not None:
            skipped.append({"fileId": row["file_id"], "reason": reason})
            continue
        scanned += 1
        try:
            found = _file_matches(text, q.regex, terms, q.deadline)
        except DeadlineExceeded:
            truncated_by = "deadline"
            break
        found, shown, skip = found[skip:], skip, 0
        room = q.limit - len(hits)
        for start, end in found[:room]:
            hits.append(_file_hit(row, text, start, end, cut))
            keys.append(at)
        if len(found) > room:  # the page is full inside this file: continue inside it
            truncated_by = "limit"
            next_pos = {"skip": shown + room, **({"at": before} if before else {})}
            break
    if truncated_by and next_pos is None:
        next_pos = {"at": at} if at else {}
    path = "regex" if q.regex is not None else "like"
    return Page(hits, path, next_pos, truncated_by, {"filesScanned": scanned, "skipped": skipped}, keys)


def _read_text(row: Any, root: str) -> tuple[str, bool, str | None]:
    """The first FILE_SCAN_BYTES of a file as text, whether it was longer, and why it
    cannot be searched (None when it can)."""
    if not is_text_mime(row["mime_type"]):
        return "", False, f"not text ({row['mime_type']})"
    path = resolve_inside(row["storage_uri"], root) if root else None
    if path is None:
        return "", False, "outside largeFilesDir"
    try:
        with open_input(path) as handle:
            data = handle.read(FILE_SCAN_BYTES + 1)
    except OSError:
        return "", False, "unreadable"
    cut = len(data) > FILE_SCAN_BYTES
    data = data[:FILE_SCAN_BYTES]
    if b"\x00" in data:
        return "", cut, "binary content"
    return data.decode("utf-8", errors="ignore"), cut, None


def _file_hit(row: Any, text: str, start: int, end: int, cut: bool) -> GrepHit:
    return {
        "type": "file",
        "id": row["file_id"],
        "conversationId": row["conversation_id"],
        "sessionKey": None,  # filled in once the page is chosen
        "fileName": row["file_name"],
        "timestamp": row["created_at"],
        "line": text.count("\n", 0, start) + 1,
        "byteOffset": len(text[:start].encode("utf-8")),
        "match": text[start:end],
        "snippet": _line_snippet(text, start, end),
        "scanTruncated": cut,
    }


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
            raise abandoned() from None
        return found[0] if found else []

    folded = text.lower()
    if not terms or not all(t in folded for t in terms):
        return []
    # Offsets come from a case-insensitive search of the text itself: lower() can change
    # a string's length (e.g. U+0130), so positions in ``folded`` may not map back.
    first = re.compile(re.escape(terms[0]), re.IGNORECASE)
    return [(m.start(), m.end()) for _, m in zip(range(FILE_MATCHES_PER_FILE), first.finditer(text))]


def _line_snippet(text: str, start: int, end: int) -> str:
    begin = max(0, start - 80)
    stop = min(len(text), end + 80)
    piece = " ".join(text[begin:stop].split())
    return ("..." if begin > 0 else "") + piece + ("..." if stop < len(text) else "")
