"""Summary DAG invariants (docs/reference/database.md §8): links stay in one conversation, depth
matches kind and sources, no cycles, every source exists, descendant counts add up."""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.core.graph import nodes_on_cycles
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

_TABLES = ("summaries", "summary_messages", "summary_parents", "messages")


def leaf_link_problems(source: ScanInput) -> dict[str, str]:
    """Leaf links to a missing message, to another conversation's message, or of a missing summary.

    One query per conversation holding summaries: its summaries' links whose message is
    not among the conversation's own messages (read from the narrow ``(conversation_id,
    seq)`` index, never a message row). Only those suspects are then looked up, to tell a
    missing message from one of another conversation. Joining each link to its message
    instead would read every linked message row (wide, with its content) at random.
    """
    if "leaf_links" in source.memo:
        result: dict[str, str] = source.memo["leaf_links"]
        return result
    narrow = " INDEXED BY messages_conv_seq_idx" if source.probe.has_index("messages_conv_seq_idx") else ""
    conversations = source.scope.conversation_ids
    if conversations is None:
        conversations = [r[0] for r in source.rows("SELECT DISTINCT conversation_id FROM summaries")]
    suspects: list[str] = []
    for conversation_id in conversations:
        suspects += [
            r[0]
            for r in source.rows(
                f"""SELECT DISTINCT s.summary_id FROM summaries s
                      JOIN summary_messages sm ON sm.summary_id = s.summary_id
                    WHERE s.conversation_id = ?
                      AND sm.message_id NOT IN (SELECT message_id FROM messages{narrow} WHERE conversation_id = ?)""",
                [conversation_id, conversation_id],
            )
        ]
    kinds: dict[str, set[str]] = {}
    for start in range(0, len(suspects), 500):
        chunk = suspects[start : start + 500]
        for summary_id, missing, elsewhere in source.rows(
            f"""SELECT sm.summary_id, m.message_id IS NULL, m.conversation_id != s.conversation_id
                FROM summary_messages sm JOIN summaries s ON s.summary_id = sm.summary_id
                  LEFT JOIN messages m ON m.message_id = sm.message_id
                WHERE sm.summary_id IN ({",".join("?" for _ in chunk)})""",
            chunk,
        ):
            if missing:
                kinds.setdefault(summary_id, set()).add("missing-message")
            elif elsewhere:
                kinds.setdefault(summary_id, set()).add("message-of-another-conversation")
    problems: dict[str, str] = {}
    for summary_id, found in kinds.items():  # a missing message outranks one of another conversation
        problems[summary_id] = "missing-message" if "missing-message" in found else next(iter(found))
    if source.scope.whole:
        for row in source.rows(
            """SELECT DISTINCT summary_id FROM summary_messages
               WHERE summary_id NOT IN (SELECT summary_id FROM summaries)"""
        ):
            problems[row[0]] = "link-of-missing-summary"
    source.memo["leaf_links"] = problems
    return problems


def parent_link_problems(source: ScanInput) -> dict[str, str]:
    """Condensed links to a missing summary, to another conversation's summary, or of a missing summary."""
    if "parent_links" in source.memo:
        result: dict[str, str] = source.memo["parent_links"]
        return result
    where, params = source.scope.clause("s.conversation_id")
    problems: dict[str, str] = {}
    for row in source.rows(
        f"""SELECT DISTINCT s.summary_id FROM summary_parents sp
              JOIN summaries s ON s.summary_id = sp.summary_id
              JOIN summaries p ON p.summary_id = sp.parent_summary_id
            WHERE p.conversation_id != s.conversation_id{where}""",
        params,
    ):
        problems[row[0]] = "summary-of-another-conversation"
    for row in source.rows(
        f"""SELECT DISTINCT s.summary_id FROM summary_parents sp JOIN summaries s ON s.summary_id = sp.summary_id
            WHERE sp.parent_summary_id NOT IN (SELECT summary_id FROM summaries){where}""",
        params,
    ):
        problems[row[0]] = "missing-source-summary"
    if source.scope.whole:
        for row in source.rows(
            """SELECT DISTINCT summary_id FROM summary_parents
               WHERE summary_id NOT IN (SELECT summary_id FROM summaries)"""
        ):
            problems[row[0]] = "link-of-missing-summary"
    source.memo["parent_links"] = problems
    return problems


def check_cross_conversation(source: ScanInput) -> Outcome:
    """`dag.cross-conversation`: a summary linked to a message or summary of another conversation."""
    if not source.has(*_TABLES):
        return skipped("summary link tables missing")
    found = {
        k: v
        for k, v in {**parent_link_problems(source), **leaf_link_problems(source)}.items()
        if v.endswith("another-conversation")
    }
    return Outcome(affected=sorted(found), notes=found)


def check_missing_sources(source: ScanInput) -> Outcome:
    """`dag.missing-sources`: a leaf without source messages, a condensed node without source
    summaries, or a link pointing at a message or summary that does not exist."""
    if not source.has(*_TABLES):
        return skipped("summary link tables missing")
    where, params = source.scope.clause("s.conversation_id")
    problems: dict[str, str] = {}
    queries = (
        (
            "leaf-without-messages",
            f"""SELECT s.summary_id FROM summaries s WHERE s.kind = 'leaf'
                AND NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.summary_id = s.summary_id){where}""",
        ),
        (
            "condensed-without-sources",
            f"""SELECT s.summary_id FROM summaries s WHERE s.kind = 'condensed'
                AND NOT EXISTS (SELECT 1 FROM summary_parents sp WHERE sp.summary_id = s.summary_id){where}""",
        ),
    )
    for label, sql in queries:
        for row in source.rows(sql, params):
            problems.setdefault(row[0], label)
    for links in (leaf_link_problems(source), parent_link_problems(source)):
        for summary_id, problem in links.items():
            if not problem.endswith("another-conversation"):
                problems.setdefault(summary_id, problem)
    ids = sorted(problems)
    return Outcome(affected=ids, notes=problems)


def check_depth_kind(source: ScanInput) -> Outcome:
    """`dag.depth-kind`: leaf at depth 0, condensed at depth >= 1 and one above its deepest source."""
    if not source.has("summaries", "summary_parents"):
        return skipped("summaries or summary_parents missing")
    where, params = source.scope.clause("s.conversation_id")
    problems: dict[str, str] = {}
    for row in source.rows(
        f"""SELECT s.summary_id, s.kind, s.depth FROM summaries s
            WHERE ((s.kind = 'leaf' AND s.depth != 0) OR (s.kind = 'condensed' AND s.depth < 1)){where}""",
        params,
    ):
        problems[row[0]] = f"{row[1]} at depth {row[2]}"
    for row in source.rows(
        f"""SELECT s.summary_id, s.depth, MAX(p.depth) FROM summaries s
              JOIN summary_parents sp ON sp.summary_id = s.summary_id
              JOIN summaries p ON p.summary_id = sp.parent_summary_id
            WHERE s.kind = 'condensed'{where}
            GROUP BY s.summary_id HAVING s.depth != MAX(p.depth) + 1""",
        params,
    ):
        problems.setdefault(row[0], f"depth {row[1]} over sources of depth {row[2]}")
    ids = sorted(problems)
    return Outcome(affected=ids, notes=problems)


def check_cycles(source: ScanInput) -> Outcome:
    """`dag.cycles`: a summary that is (transitively) its own source.

    Along any cycle the depth cannot fall at every step, so every cycle holds a link whose
    higher node is not deeper than its source. Only when such links exist is the graph
    walked, and only from them, loading each node's sources as it is reached: a sound DAG
    costs one pass over the links and no memory.
    """
    if not source.has("summaries", "summary_parents"):
        return skipped("summaries or summary_parents missing")
    where, params = source.scope.clause("s.conversation_id")
    starts = [
        r[0]
        for r in source.rows(
            f"""SELECT DISTINCT sp.summary_id FROM summary_parents sp
                  JOIN summaries s ON s.summary_id = sp.summary_id
                  JOIN summaries p ON p.summary_id = sp.parent_summary_id
                WHERE (s.depth > p.depth) IS NOT 1{where}""",
            params,
        )
    ]
    if not starts:
        return Outcome()
    edges = _reachable_edges(source, starts, where, params)
    on_cycle = nodes_on_cycles(edges)
    return Outcome(affected=sorted(on_cycle))


def _reachable_edges(
    source: ScanInput, starts: list[str], where: str, params: list[Any]
) -> dict[str, list[str]]:
    """The links (higher -> sources) of every summary reachable from ``starts``, as the scan's
    edge set has them (links of in-scope summaries that exist)."""
    edges: dict[str, list[str]] = {}
    frontier = list(dict.fromkeys(starts))
    seen = set(frontier)
    while frontier:
        chunk, frontier = frontier[:500], frontier[500:]
        for higher, lower in source.rows(
            f"""SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp
                JOIN summaries s ON s.summary_id = sp.summary_id
                WHERE sp.summary_id IN ({",".join("?" for _ in chunk)}){where}""",
            [*chunk, *params],
        ):
            edges.setdefault(higher, []).append(lower)
            if lower not in seen:
                seen.add(lower)
                frontier.append(lower)
    return edges


def descendant_mismatches(source: ScanInput) -> dict[str, dict[str, int]]:
    """Summaries whose stored descendant counts differ from what their direct sources add up to."""
    where, params = source.scope.clause("s.conversation_id")
    out: dict[str, dict[str, int]] = {}
    for row in source.rows(
        f"""SELECT s.summary_id, s.descendant_count, s.descendant_token_count FROM summaries s
            WHERE s.kind = 'leaf' AND (s.descendant_count != 0 OR s.descendant_token_count != 0){where}""",
        params,
    ):
        out[row[0]] = {"stored": row[1], "expected": 0, "storedTokens": row[2], "expectedTokens": 0}
    for row in source.rows(
        f"""SELECT s.summary_id, s.descendant_count, s.descendant_token_count,
                   SUM(p.descendant_count + 1), SUM(p.token_count + p.descendant_token_count)
            FROM summaries s
              JOIN summary_parents sp ON sp.summary_id = s.summary_id
              JOIN summaries p ON p.summary_id = sp.parent_summary_id
            WHERE s.kind = 'condensed'{where}
            GROUP BY s.summary_id
            HAVING s.descendant_count != SUM(p.descendant_count + 1)
                OR s.descendant_token_count != SUM(p.token_count + p.descendant_token_count)""",
        params,
    ):
        out[row[0]] = {"stored": row[1], "expected": row[3], "storedTokens": row[2], "expectedTokens": row[4]}
    return out


def check_descendant_counts(source: ScanInput) -> Outcome:
    """`dag.descendant-counts`: stored descendant counts that do not add up over the sources."""
    if not source.has("summaries", "summary_parents"):
        return skipped("summaries or summary_parents missing")
    found = descendant_mismatches(source)
    return Outcome(affected=sorted(found), notes=found)
