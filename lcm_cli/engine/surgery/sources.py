"""The text a summary is rebuilt from, shared by `lcm summaries rewrite` and doctor's repair.

A leaf is rebuilt from its source messages, a condensed summary from its direct sources
(with the new text of sources rewritten a moment earlier); the continuity context is the
nearest earlier same-depth summary that carries no fallback marker.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import timezone
from typing import Any, NamedTuple

from lcm_cli.engine.db.store.stamps import parse_timestamp
from lcm_cli.engine.maintenance.markers import ALL_MARKERS, contains_marker


def strip_markers(text: str) -> str:
    """``text`` without any fallback-marker string."""
    for marker in ALL_MARKERS:
        text = text.replace(marker, "")
    return text


def zone_of(effective: Mapping[str, Any]) -> Any:
    """The configured ``timezone`` source times are shown in (UTC when unset or unknown)."""
    from lcm_cli.engine.config.view import EngineSettings

    name = EngineSettings(effective).timezone
    if isinstance(name, str) and name and name != "UTC":
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(name)
        except (ImportError, KeyError, ValueError):
            return timezone.utc
    return timezone.utc


def _when(stamp: str | None, zone: Any) -> str:
    moment = parse_timestamp(stamp) if stamp else None
    if moment is None:
        return stamp or "unknown time"
    local = moment.astimezone(zone)
    return local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or "UTC")


def source_text(
    conn: sqlite3.Connection, summary: Mapping[str, Any], repaired: Mapping[str, str], zone: Any
) -> str:
    """The text a summary is rebuilt from: its messages (leaf) or its direct sources (condensed)."""
    if summary["depth"] == 0 or summary["kind"] == "leaf":
        rows = conn.execute(
            """SELECT m.role, m.content, m.created_at FROM summary_messages sm
               JOIN messages m ON m.message_id = sm.message_id
               WHERE sm.summary_id = ? ORDER BY sm.ordinal""",
            (summary["summary_id"],),
        ).fetchall()
        return "\n\n".join(f"[{_when(r[2], zone)} | {r[0]}]\n{r[1]}" for r in rows)
    rows = conn.execute(
        """SELECT p.summary_id, p.content, p.earliest_at, p.latest_at, p.created_at FROM summary_parents sp
           JOIN summaries p ON p.summary_id = sp.parent_summary_id
           WHERE sp.summary_id = ? ORDER BY sp.ordinal""",
        (summary["summary_id"],),
    ).fetchall()
    blocks = []
    for sid, content, earliest, latest, created in rows:
        # A source whose own repair failed still carries its marker: send the text without it.
        text = strip_markers(repaired.get(sid, content)).strip()
        if not text:
            continue
        blocks.append(f"[{_when(earliest or created, zone)} - {_when(latest or created, zone)}]\n{text}")
    return "\n\n".join(blocks)


def previous_context(
    conn: sqlite3.Connection, summary: Mapping[str, Any], repaired: Mapping[str, str]
) -> str | None:
    """The continuity text: the nearest earlier same-depth summary that carries no marker.

    Candidates in the reference's order (earlier in the live context, previous sibling
    under the same consumer, previous by creation time); marked ones are passed over.
    """
    sid, cid, depth = summary["summary_id"], summary["conversation_id"], summary["depth"]
    candidates: list[str] = []
    candidates += [
        r[0]
        for r in conn.execute(
            """SELECT ci.summary_id FROM context_items ci JOIN summaries s ON s.summary_id = ci.summary_id
               WHERE ci.conversation_id = ? AND s.depth = ? AND ci.ordinal < COALESCE(
                 (SELECT MIN(ordinal) FROM context_items WHERE conversation_id = ? AND summary_id = ?), -1)
               ORDER BY ci.ordinal DESC""",
            (cid, depth, cid, sid),
        )
    ]
    candidates += [
        r[0]
        for r in conn.execute(
            """SELECT sib.parent_summary_id FROM summary_parents me
               JOIN summary_parents sib ON sib.summary_id = me.summary_id AND sib.ordinal < me.ordinal
               WHERE me.parent_summary_id = ? ORDER BY sib.ordinal DESC""",
            (sid,),
        )
    ]
    candidates += [
        r[0]
        for r in conn.execute(
            """SELECT summary_id FROM summaries WHERE conversation_id = ? AND depth = ?
                 AND (created_at, summary_id) < (SELECT created_at, summary_id FROM summaries WHERE summary_id = ?)
               ORDER BY created_at DESC, summary_id DESC LIMIT 20""",
            (cid, depth, sid),
        )
    ]
    for candidate in candidates:
        if candidate == sid:
            continue
        text = repaired.get(candidate)
        if text is None:
            row = conn.execute("SELECT content FROM summaries WHERE summary_id = ?", (candidate,)).fetchone()
            text = row[0] if row else None
        if text and text.strip() and not contains_marker(text):
            return text
    return None


class Rebuilt(NamedTuple):
    """One summary rebuilt from its sources: the new text, or why there is none."""

    text: str | None  # usable new text (never a fallback, never holding a marker)
    level: str | None  # the escalation level that produced it
    failure: str | None  # no-source-text, spend-limit, summarizer-error, summarizer-auth-failure,
    # no-usable-text (empty or a fallback) or contains-marker
    message: str = ""  # what went wrong, for the error object
    stops: bool = False  # the summaries after this one must not be tried (spend limit, auth)


def rebuild_text(
    conn: sqlite3.Connection,
    summary: Mapping[str, Any],
    rebuilt: Mapping[str, str],
    summarizer: Any,
    effective: Mapping[str, Any],
    zone: Any,
) -> Rebuilt:
    """Summarize ``summary`` anew from its sources (``rebuilt``: new texts of its sources)."""
    from lcm_cli.engine.summarize.base import SpendLimitError
    from lcm_cli.engine.summarize.escalation import summarize_with_escalation

    text = source_text(conn, summary, rebuilt, zone)
    if not text.strip():
        return Rebuilt(None, None, "no-source-text")
    try:
        result = summarize_with_escalation(
            summarizer,
            text,
            depth=summary["depth"],
            effective=effective,
            previous_context=previous_context(conn, summary, rebuilt),
        )
    except SpendLimitError as exc:
        return Rebuilt(None, None, "spend-limit", str(exc), stops=True)
    except Exception as exc:  # a broken summarizer fails this summary only
        return Rebuilt(None, None, "summarizer-error", f"{type(exc).__name__}: {exc}")
    if result.auth_failure:
        return Rebuilt(None, None, "summarizer-auth-failure", "authentication failed", stops=True)
    new = result.content.strip()
    if not new or result.level == "fallback":
        return Rebuilt(None, result.level, "no-usable-text", "the summarizer gave no usable text")
    if contains_marker(new):
        return Rebuilt(None, result.level, "contains-marker", "the summarizer's text holds a marker")
    return Rebuilt(new, result.level, None)
