"""Broken and truncated summaries: every fallback-marker shape the reference writes.

Classification follows docs/reference/operations.md §4.2 (first matching rule wins). Candidates
are pre-filtered in SQL by substring, then classified here.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

TRUNCATION_FALLBACK = "[LCM fallback summary; truncated for context management]"
DIRECTIVE_FALLBACK = "[LCM fallback summary; directive-shaped untrusted content omitted]"
TRUNCATED_PREFIX = "[Truncated from "
BARE_EMERGENCY = "[Truncated for context management]"
EMERGENCY_MODEL = "emergency-fallback"
ALL_MARKERS = (TRUNCATION_FALLBACK, DIRECTIVE_FALLBACK, TRUNCATED_PREFIX, BARE_EMERGENCY)

# kind -> the counter the reference reports it under
COUNTED_AS = {"fallback": "fallback", "old": "oldMarker", "new": "truncatedMarker", "emergency": "emergency"}


def classify(content: str, model: str | None) -> str | None:
    """The marker kind of a summary (``fallback``, ``old``, ``new``, ``emergency``) or None."""
    if content.startswith(DIRECTIVE_FALLBACK):
        return "fallback"
    if content.startswith(TRUNCATION_FALLBACK):
        return "old"
    if DIRECTIVE_FALLBACK in content:
        return "fallback"
    at = content.find(TRUNCATED_PREFIX)
    if at >= 0 and len(content) - at < 40:
        return "new"
    at = content.find(TRUNCATION_FALLBACK)
    if at >= 0 and len(content) - at < 80:
        return "fallback"
    if model is not None and model.strip() == EMERGENCY_MODEL:
        return "emergency"
    if model == "unknown" and BARE_EMERGENCY in content:
        return "emergency"
    return None


def contains_marker(text: str) -> bool:
    """True when ``text`` holds any marker string (a repair must never produce one)."""
    return any(marker in text for marker in ALL_MARKERS)


def marked_summaries(source: ScanInput) -> list[dict[str, Any]]:
    """Every summary in scope that classifies as broken, in repair order.

    Order: conversation, depth, ``created_at``, id (the reference's global-scan order).
    """
    has_model = source.probe.has_column("summaries", "model")
    model = "s.model" if has_model else "NULL"
    where, params = source.scope.clause("s.conversation_id")
    model_rule = (
        f" OR trim({model}) = '{EMERGENCY_MODEL}' OR ({model} = 'unknown' AND instr(s.content, ?) > 0)"
        if has_model
        else ""
    )
    sql = f"""SELECT s.summary_id, s.conversation_id, s.depth, s.kind, s.content, {model} AS model
        FROM summaries s
        WHERE (instr(s.content, ?) > 0 OR instr(s.content, ?) > 0{model_rule}){where}
        ORDER BY s.conversation_id, s.depth, s.created_at, s.summary_id"""
    # Both fallback markers share this prefix: one substring test covers them.
    markers: list[Any] = ["[LCM fallback summary; ", TRUNCATED_PREFIX]
    if has_model:
        markers.append(BARE_EMERGENCY)
    found = []
    for row in source.rows(sql, markers + params):
        kind = classify(row["content"], row["model"])
        if kind is not None:
            found.append(
                {
                    "summaryId": row["summary_id"],
                    "conversationId": row["conversation_id"],
                    "depth": row["depth"],
                    "summaryKind": row["kind"],
                    "marker": kind,
                }
            )
    return found


def check_markers(source: ScanInput) -> Outcome:
    """`summaries.markers`: summaries written by a fallback path (truncated, emergency, ...)."""
    if not source.has("summaries"):
        return skipped("no summaries table")
    found = marked_summaries(source)
    counts = {name: 0 for name in COUNTED_AS.values()}
    for item in found:
        counts[COUNTED_AS[item["marker"]]] += 1
    found.sort(key=lambda item: item["summaryId"])
    return Outcome(
        affected=[item["summaryId"] for item in found],
        details={"byKind": counts},
        notes={item["summaryId"]: item["marker"] for item in found},
    )


def marker_counts(ctx: Any, conversation_id: int) -> dict[str, int]:
    """Per-kind counts of broken summaries in one conversation (for the control contract)."""
    from lcm_cli.engine.maintenance.findings import Scope
    from lcm_cli.engine.maintenance.junk import scan_input

    found = marked_summaries(scan_input(ctx, Scope([conversation_id])))
    counts = {name: 0 for name in COUNTED_AS.values()}
    for item in found:
        counts[COUNTED_AS[item["marker"]]] += 1
    return counts
