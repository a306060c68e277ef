"""Re-summarizing broken summaries from their own sources (compat/operations.md §5.2).

Order is bottom-up: leaves in the live context first (by ordinal), other leaves, then
condensed summaries by depth, so a condensed node is rebuilt from sources that were
repaired a moment earlier. Each summary is one unit: the summarizer is called with no
transaction open, then one ``BEGIN IMMEDIATE`` re-checks that the row still holds the
text that was read and writes content, token count, model and both summary FTS rows.

A repair never copies a marker from a neighbour: the continuity context is the nearest
previous summary *without* a marker, and an answer that contains any marker is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import timezone
from typing import Any

from lcm_cli.doctor.writer import is_busy, unit_of_work
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store.stamps import parse_timestamp
from lcm_cli.engine.maintenance.findings import ScanInput
from lcm_cli.engine.maintenance.markers import ALL_MARKERS, contains_marker, marked_summaries


def strip_markers(text: str) -> str:
    """``text`` without any fallback-marker string."""
    for marker in ALL_MARKERS:
        text = text.replace(marker, "")
    return text


def repair_order(source: ScanInput) -> list[dict[str, Any]]:
    """The marked summaries in scope, bottom-up: live leaves by ordinal, other leaves, condensed."""
    found = marked_summaries(source)
    if not found:
        return []
    ids = [item["summaryId"] for item in found]
    marks = ",".join("?" for _ in ids)
    ordinals = {
        r[0]: r[1]
        for r in source.rows(
            f"SELECT summary_id, MIN(ordinal) FROM context_items WHERE summary_id IN ({marks}) GROUP BY summary_id",
            ids,
        )
    }
    created = {
        r[0]: r[1] or ""
        for r in source.rows(
            f"SELECT summary_id, created_at FROM summaries WHERE summary_id IN ({marks})", ids
        )
    }

    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        sid = item["summaryId"]
        if item["depth"] == 0 and sid in ordinals:
            return (0, item["conversationId"], ordinals[sid], "", sid)
        group = 1 if item["depth"] == 0 else 2
        return (group, item["depth"], item["conversationId"], created[sid], sid)

    return sorted(found, key=key)


def _zone(effective: Mapping[str, Any]) -> Any:
    name = effective.get("timezone")
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


def resummarize(
    conn: sqlite3.Connection,
    targets: list[dict[str, Any]],
    *,
    effective: Mapping[str, Any],
    env: Mapping[str, str],
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Rebuild each target; one result entry per summary (applied, unchanged, skipped or failed)."""
    from lcm_cli.engine.summarize.base import SpendLimitError
    from lcm_cli.engine.summarize.escalation import summarize_with_escalation
    from lcm_cli.engine.summarize.factory import build_summarizer

    summarizer = build_summarizer(effective, env)
    zone = _zone(effective)
    has_model = "model" in {r[1] for r in conn.execute("PRAGMA table_info(summaries)")}
    fts = [
        t
        for t in ("summaries_fts", "summaries_fts_cjk")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()
    ]
    repaired: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    stop: str | None = None
    for index, target in enumerate(targets):
        if progress is not None:
            progress(index, len(targets))
        sid = target["summaryId"]
        entry: dict[str, Any] = {
            "unit": f"summary:{sid}",
            "check": "summaries.markers",
            "conversationId": target["conversationId"],
            "summaryId": sid,
            "marker": target["marker"],
        }
        results.append(entry)
        if stop is not None:
            entry.update(status="skipped", reason=stop, changes=[])
            continue
        row = conn.execute(
            "SELECT summary_id, conversation_id, kind, depth, content FROM summaries WHERE summary_id = ?",
            (sid,),
        ).fetchone()
        if row is None:
            entry.update(status="skipped", reason="summary-gone", changes=[])
            continue
        summary = {
            "summary_id": row[0],
            "conversation_id": row[1],
            "kind": row[2],
            "depth": row[3],
            "content": row[4],
        }
        text = source_text(conn, summary, repaired, zone)
        if not text.strip():
            entry.update(status="skipped", reason="no-source-text", changes=[])
            continue
        try:
            result = summarize_with_escalation(
                summarizer,
                text,
                depth=summary["depth"],
                effective=effective,
                previous_context=previous_context(conn, summary, repaired),
            )
        except SpendLimitError as exc:
            stop = "spend-limit"
            entry.update(
                status="failed", error={"code": "SUMMARIZER_FAILED", "message": str(exc)}, changes=[]
            )
            continue
        except Exception as exc:  # a broken summarizer fails this unit only
            entry.update(
                status="failed",
                error={"code": "SUMMARIZER_FAILED", "message": f"{type(exc).__name__}: {exc}"},
                changes=[],
            )
            continue
        if result.auth_failure:
            stop = "summarizer-auth-failure"
            entry.update(
                status="failed",
                error={"code": "SUMMARIZER_FAILED", "message": "authentication failed"},
                changes=[],
            )
            continue
        new = result.content.strip()
        if not new or result.level == "fallback":
            entry.update(status="skipped", reason="summarizer-gave-no-usable-text", changes=[])
            continue
        if contains_marker(new):
            entry.update(status="skipped", reason="output-contains-marker", changes=[])
            continue
        if new == summary["content"]:
            entry.update(status="unchanged", changes=[])
            continue
        tokens = estimate_tokens(new)
        change = {
            "action": "resummarize",
            "summaryId": sid,
            "level": result.level,
            "model": summarizer.model,
            "oldTokenCount": estimate_tokens(summary["content"]),
            "newTokenCount": tokens,
        }
        try:
            with unit_of_work(conn):
                sets = "content = ?, token_count = ?" + (", model = ?" if has_model else "")
                params: list[Any] = [new, tokens] + ([summarizer.model] if has_model else [])
                updated = conn.execute(
                    f"UPDATE summaries SET {sets} WHERE summary_id = ? AND content = ?",
                    params + [sid, summary["content"]],
                ).rowcount
                if updated != 1:
                    raise LcmError(
                        "STATE_CHANGED", f"Summary {sid} changed while it was being re-summarized."
                    )
                for table in fts:
                    conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (sid,))
                    conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (sid, new))
        except LcmError as exc:
            entry.update(status="failed", error=exc.to_dict(), changes=[])
            continue
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise
            entry.update(
                status="failed", error={"code": "DATABASE_QUERY_FAILED", "message": str(exc)}, changes=[]
            )
            continue
        repaired[sid] = new
        entry.update(status="applied", changes=[change])
    return results


def planned(targets: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """Dry-run units: which summaries would be rebuilt, in order, by which summarizer."""
    return [
        {
            "unit": f"summary:{t['summaryId']}",
            "check": "summaries.markers",
            "conversationId": t["conversationId"],
            "changes": [
                {
                    "action": "resummarize",
                    "summaryId": t["summaryId"],
                    "marker": t["marker"],
                    "depth": t["depth"],
                    "model": model,
                }
            ],
        }
        for t in targets
    ]
