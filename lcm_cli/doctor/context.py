"""context_items: ordinals, references to rows that are gone or belong elsewhere, and rows
referenced twice. Ids of affected items are ``<conversationId>:<ordinal>``."""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped


def _item_id(conversation_id: int, ordinal: int) -> str:
    return f"{conversation_id}:{ordinal}"


def check_ordinals(source: ScanInput) -> Outcome:
    """`context.ordinals`: a conversation whose context ordinals are not exactly 0..N-1.

    Gaps are legal (soft-reset pruning leaves them), so this is informational; the repair
    renumbers them.
    """
    if not source.has("context_items"):
        return skipped("no context_items table")
    where, params = source.scope.clause("conversation_id")
    rows = source.rows(
        f"""SELECT conversation_id, MIN(ordinal), MAX(ordinal), COUNT(*) FROM context_items
            WHERE 1 = 1{where} GROUP BY conversation_id
            HAVING MIN(ordinal) != 0 OR MAX(ordinal) != COUNT(*) - 1 ORDER BY conversation_id""",
        params,
    )
    notes = {r[0]: {"min": r[1], "max": r[2], "items": r[3]} for r in rows}
    return Outcome(affected=[r[0] for r in rows], notes=notes)


def dangling_items(source: ScanInput) -> dict[str, dict[str, Any]]:
    """Context items that point at a missing row or at a row of another conversation."""
    where, params = source.scope.clause("ci.conversation_id")
    rows = source.rows(
        f"""SELECT ci.conversation_id, ci.ordinal, ci.item_type, ci.message_id, ci.summary_id,
                   m.conversation_id AS m_conv, s.conversation_id AS s_conv
            FROM context_items ci
              LEFT JOIN messages m ON ci.item_type = 'message' AND m.message_id = ci.message_id
              LEFT JOIN summaries s ON ci.item_type = 'summary' AND s.summary_id = ci.summary_id
            WHERE ((ci.item_type = 'message' AND (m.message_id IS NULL OR m.conversation_id != ci.conversation_id))
                OR (ci.item_type = 'summary' AND (s.summary_id IS NULL OR s.conversation_id != ci.conversation_id))
                OR ci.item_type NOT IN ('message', 'summary')){where}
            ORDER BY ci.conversation_id, ci.ordinal""",
        params,
    )
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["item_type"] == "message":
            ref: Any = r["message_id"]
            problem = "missing-message" if r["m_conv"] is None else "message-of-another-conversation"
        elif r["item_type"] == "summary":
            ref = r["summary_id"]
            problem = "missing-summary" if r["s_conv"] is None else "summary-of-another-conversation"
        else:
            ref, problem = None, "unknown-item-type"
        out[_item_id(r["conversation_id"], r["ordinal"])] = {
            "conversationId": r["conversation_id"],
            "ordinal": r["ordinal"],
            "problem": problem,
            "ref": ref,
        }
    return out


def check_dangling(source: ScanInput) -> Outcome:
    """`context.dangling`: a context item whose message or summary is gone or foreign."""
    if not source.has("context_items", "messages", "summaries"):
        return skipped("context_items, messages or summaries missing")
    found = dangling_items(source)
    return Outcome(affected=sorted(found, key=_sort_key), notes={k: v["problem"] for k, v in found.items()})


def duplicate_items(source: ScanInput) -> dict[str, dict[str, Any]]:
    """Context items that repeat a message or summary already earlier in the same context."""
    where, params = source.scope.clause("ci.conversation_id")
    rows = source.rows(
        f"""SELECT ci.conversation_id, ci.ordinal, ci.item_type, COALESCE(ci.message_id, ci.summary_id) AS ref
            FROM context_items ci
            JOIN (SELECT conversation_id, item_type, COALESCE(message_id, summary_id) AS ref, MIN(ordinal) AS first
                  FROM context_items ci WHERE 1 = 1{where}
                  GROUP BY conversation_id, item_type, COALESCE(message_id, summary_id) HAVING COUNT(*) > 1) d
              ON d.conversation_id = ci.conversation_id AND d.item_type = ci.item_type
             AND d.ref = COALESCE(ci.message_id, ci.summary_id) AND ci.ordinal > d.first
            ORDER BY ci.conversation_id, ci.ordinal""",
        params,
    )
    return {
        _item_id(r[0], r[1]): {"conversationId": r[0], "ordinal": r[1], "itemType": r[2], "ref": r[3]}
        for r in rows
    }


def check_duplicates(source: ScanInput) -> Outcome:
    """`context.duplicates`: the same message or summary referenced twice in one context."""
    if not source.has("context_items"):
        return skipped("no context_items table")
    found = duplicate_items(source)
    return Outcome(
        affected=sorted(found, key=_sort_key),
        notes={k: f"{v['itemType']} {v['ref']} again" for k, v in found.items()},
    )


def _sort_key(item_id: str) -> tuple[int, int]:
    conversation, _, ordinal = item_id.partition(":")
    return int(conversation), int(ordinal)
