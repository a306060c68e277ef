"""lossless-claw 1.0's durable-turn rows: pending batches, their links, the turn ledger, epochs.

* open-batches: a batch still ``planning``/``ready``/``publishing`` that nothing touched for
  a day. lcm and 1.0 both publish or mark stale on the conversation's next turn, so an
  idle conversation can hold one legitimately; one a crashed engine left waits for that turn.
* dangling: pending rows naming something that is gone (a canonical summary, a source
  message, a child summary or node, their batch or conversation). Foreign keys prevent
  these while enforced; a writer with enforcement off leaves them.
* orphaned turns: ``turn_advancements`` rows whose session has no conversation.
* epoch frontier: an epoch whose ``frontier_entry_id`` no message of its conversation holds.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.db.pending_state import (
    ANCHOR_TRUST,
    BATCHES,
    EPOCHS,
    NODE_CHILDREN,
    NODE_MESSAGES,
    NODES,
    OPEN_BATCH_STATES,
    TURNS,
)
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

OPEN_FOR_HOURS = 24
_OPEN = "(" + ", ".join(f"'{s}'" for s in OPEN_BATCH_STATES) + ")"


def open_batches(source: ScanInput) -> dict[str, dict[str, Any]]:
    """Open batches untouched for over :data:`OPEN_FOR_HOURS` hours: batch id -> facts."""
    where, params = source.scope.clause("b.conversation_id")
    rows = source.rows(
        f"""SELECT b.batch_id, b.conversation_id, b.status, b.updated_at FROM {BATCHES} b
            WHERE b.status IN {_OPEN}
              AND julianday(b.updated_at) < julianday(?, 'unixepoch') - ? / 24.0{where}
            ORDER BY b.batch_id""",
        [source.now_ms / 1000, OPEN_FOR_HOURS] + params,
    )
    return {r[0]: {"conversationId": r[1], "status": r[2], "updatedAt": r[3]} for r in rows}


def check_open_batches(source: ScanInput) -> Outcome:
    """`pending.open-batches`: open pending compaction batches left for over a day."""
    if not source.has(BATCHES):
        return skipped(f"no {BATCHES} table (not a lossless-claw 1.0 database)")
    found = open_batches(source)
    return Outcome(affected=sorted(found), notes=found)


def dangling(source: ScanInput) -> dict[str, str]:
    """``table:key`` -> what it names that is gone."""
    if not source.has(BATCHES, NODES, NODE_MESSAGES, NODE_CHILDREN):
        return {}
    where, params = source.scope.clause("n.conversation_id")
    queries = (
        (
            f"""SELECT 'node:' || n.node_id, 'canonical summary ' || n.canonical_summary_id || ' is gone'
                FROM {NODES} n WHERE n.canonical_summary_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = n.canonical_summary_id){where}""",
            params,
        ),
        (
            f"""SELECT 'node:' || n.node_id, 'batch ' || n.batch_id || ' is gone' FROM {NODES} n
                WHERE NOT EXISTS (SELECT 1 FROM {BATCHES} b WHERE b.batch_id = n.batch_id){where}""",
            params,
        ),
        (
            f"""SELECT 'node:' || n.node_id, 'conversation ' || n.conversation_id || ' is gone' FROM {NODES} n
                WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.conversation_id = n.conversation_id){where}""",
            params,
        ),
        (
            f"""SELECT 'node-message:' || m.node_id || ':' || m.message_id, 'source message ' || m.message_id
                || ' is gone' FROM {NODE_MESSAGES} m LEFT JOIN {NODES} n ON n.node_id = m.node_id
                WHERE NOT EXISTS (SELECT 1 FROM messages x WHERE x.message_id = m.message_id){where}""",
            params,
        ),
        (
            f"""SELECT 'node-child:' || k.node_id || ':' || k.ordinal,
                CASE WHEN k.child_summary_id IS NOT NULL THEN 'child summary ' || k.child_summary_id || ' is gone'
                     ELSE 'child node ' || k.child_node_id || ' is gone' END
                FROM {NODE_CHILDREN} k LEFT JOIN {NODES} n ON n.node_id = k.node_id
                WHERE ((k.child_summary_id IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = k.child_summary_id))
                    OR (k.child_node_id IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM {NODES} c WHERE c.node_id = k.child_node_id))){where}""",
            params,
        ),
    )
    found: dict[str, str] = {}
    for sql, args in queries:
        for key, problem in source.rows(sql, args):
            found.setdefault(key, problem)
    return found


def check_dangling(source: ScanInput) -> Outcome:
    """`pending.dangling`: pending nodes or links naming rows that no longer exist."""
    if not source.has(BATCHES, NODES, NODE_MESSAGES, NODE_CHILDREN):
        return skipped(f"no {NODES} tables (not a lossless-claw 1.0 database)")
    found = dangling(source)
    return Outcome(affected=sorted(found), notes=found)


def check_orphaned_turns(source: ScanInput) -> Outcome:
    """`turns.orphaned`: commitTurn ledger rows whose session has no conversation."""
    if not source.has(TURNS, "conversations"):
        return skipped(f"no {TURNS} table (not a lossless-claw 1.0 database)")
    rows = source.rows(
        f"""SELECT t.advancement_key, t.session_id, t.committed_at FROM {TURNS} t
            WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.session_id = t.session_id)
            ORDER BY t.advancement_key"""
    )
    notes = {r[0]: {"sessionId": r[1], "committedAt": r[2]} for r in rows}
    return Outcome(affected=sorted(notes), notes=notes, details={"sessions": len({r[1] for r in rows})})


def check_epoch_frontier(source: ScanInput) -> Outcome:
    """`epochs.frontier-missing`: transcript epochs whose frontier entry no message holds."""
    if not source.has(EPOCHS, "messages") or not source.probe.has_column("messages", "transcript_entry_id"):
        return skipped(f"no {EPOCHS} table (not a lossless-claw 1.0 database)")
    where, params = source.scope.clause("e.conversation_id")
    rows = source.rows(
        f"""SELECT e.conversation_id, e.frontier_entry_id, e.frontier_seq FROM {EPOCHS} e
            WHERE e.frontier_entry_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = e.conversation_id
                              AND m.transcript_entry_id = e.frontier_entry_id){where}
            ORDER BY 1""",
        params,
    )
    notes = {r[0]: {"frontierEntryId": r[1], "frontierSeq": r[2]} for r in rows}
    anchors = source.has(ANCHOR_TRUST)
    return Outcome(affected=sorted(notes), notes=notes, details={"anchorTrustTable": anchors})
