"""Rollover splits (docs/reference/operations.md §7.2): one session key whose history is spread over
several conversations, because a rollover archived a row that still holds data.

The scan reports each split key and whether the reference's repair would consider it safe.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.db.sessions import is_isolated_cron
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped


def split_groups(source: ScanInput) -> dict[str, dict[str, Any]]:
    """Session keys with more than one conversation and at least one archived source holding data."""
    probe = source.probe
    if not (probe.has_column("conversations", "session_key") and probe.has_column("conversations", "active")):
        return {}
    where, params = source.scope.clause("c.conversation_id")
    cause = probe.col("conversations", "archive_cause", prefix="c.")
    archived = probe.col("conversations", "archived_at", prefix="c.")
    rows = source.rows(
        f"""SELECT c.conversation_id, c.session_key, c.active, c.created_at, {archived}, {cause},
                   EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.conversation_id)
                OR EXISTS (SELECT 1 FROM summaries s WHERE s.conversation_id = c.conversation_id)
                OR EXISTS (SELECT 1 FROM context_items ci WHERE ci.conversation_id = c.conversation_id) AS has_data
            FROM conversations c
            WHERE c.session_key IN (SELECT session_key FROM conversations WHERE session_key IS NOT NULL
                                    GROUP BY session_key HAVING COUNT(*) > 1){where}
            ORDER BY c.session_key, julianday(c.created_at), c.conversation_id""",
        params,
    )
    by_key: dict[str, list[Any]] = {}
    for row in rows:
        by_key.setdefault(row["session_key"], []).append(row)
    groups: dict[str, dict[str, Any]] = {}
    for key, members in by_key.items():
        if is_isolated_cron(key):
            continue
        sources = [
            m for m in members if m["active"] == 0 and m["has_data"] and m["archive_cause"] != "manual-reset"
        ]
        if not sources:
            continue
        targets = [m for m in members if m["active"] == 1]
        reasons = []
        if len(targets) != 1:
            reasons.append(f"{len(targets)} active conversations")
        else:
            target = targets[0]
            for m in sources:
                if m["archived_at"] is None:
                    reasons.append(f"source {m['conversation_id']} has no archived_at")
                elif (m["created_at"], m["conversation_id"]) >= (
                    target["created_at"],
                    target["conversation_id"],
                ):
                    reasons.append(f"source {m['conversation_id']} is not older than the active one")
        groups[key] = {
            "activeConversationId": targets[0]["conversation_id"] if len(targets) == 1 else None,
            "sourceConversationIds": [m["conversation_id"] for m in sources],
            "safe": not reasons,
            "unsafeBecause": reasons,
        }
    return groups


def check_rollover_splits(source: ScanInput) -> Outcome:
    """`rollover.splits`: a session key's history split over an active and archived conversations."""
    if not source.has("conversations", "messages", "summaries", "context_items"):
        return skipped("core tables missing")
    groups = split_groups(source)
    return Outcome(affected=sorted(groups), notes=groups)
