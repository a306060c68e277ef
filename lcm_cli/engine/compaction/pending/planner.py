"""Laying out a pending batch as lossless-claw 1.0 does, and choosing what to publish.

Leaf nodes cover runs of raw messages outside the fresh tail, each closed once it
reaches ``leafChunkTokens`` (a shorter run is left raw, unless it sits before the last
full leaf: then it becomes a bridge leaf, so later work stays reachable). Condensed
nodes group adjacent nodes of one depth (canonical summaries in the context count as
nodes) while the group fits ``condensedChunkTokens``, with at least ``condensedMinFanout``
members and ``condensedMinSourceTokens`` tokens, layer upon layer. The publish frontier
walks from the batch's first ordinal, taking at each step the deepest, then widest, node
that starts there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from lcm_cli.engine.compaction.pending.projection import SnapshotItem, fresh_tail_start, non_negative

MAX_CONDENSED_LAYERS = 32


@dataclass
class PlanNode:
    """A planned (or already ready, or canonical) node of a batch."""

    node_id: str
    kind: str
    depth: int
    ordinal_start: int
    ordinal_end: int
    token_count: int
    fingerprints: list[str] = field(default_factory=list)
    message_ids: list[int] = field(default_factory=list)
    #: (child node id, child summary id), one of the two set, in order.
    children: list[tuple[str | None, str | None]] = field(default_factory=list)
    canonical_summary_id: str | None = None


def _positive(value: int, fallback: int) -> int:
    return math.floor(value) if value > 0 else fallback


def _leaf(prefix: str, chunk: Sequence[SnapshotItem], tokens: int) -> PlanNode:
    start, end = chunk[0].ordinal, chunk[-1].ordinal
    return PlanNode(
        f"{prefix}-leaf-{start}-{end}",
        "leaf",
        0,
        start,
        end,
        tokens,
        [i.fingerprint for i in chunk],
        [i.message_id for i in chunk if i.message_id is not None],
    )


def _planning_order(node: PlanNode) -> tuple[int, int, int, str]:
    return (node.depth, node.ordinal_start, node.ordinal_end, node.node_id)


def plan_leaves(
    items: Sequence[SnapshotItem],
    *,
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None,
    leaf_chunk_tokens: int,
    prefix: str,
) -> list[PlanNode]:
    """1.0's ``planPendingLeafNodes``."""
    ordered = sorted(items, key=lambda i: i.ordinal)
    tail = fresh_tail_start(ordered, fresh_tail_count, fresh_tail_max_tokens)
    budget = _positive(leaf_chunk_tokens, 1)
    nodes: list[PlanNode] = []
    chunk: list[SnapshotItem] = []
    tokens = 0

    def flush() -> None:
        nonlocal chunk, tokens
        if chunk and tokens >= budget:
            nodes.append(_leaf(prefix, chunk, tokens))
        chunk, tokens = [], 0

    for item in ordered:
        if item.ordinal >= tail:
            break
        if not item.is_message:
            flush()
            continue
        chunk.append(item)
        tokens += non_negative(item.token_count)
        if tokens >= budget:
            flush()
    flush()
    if not nodes:
        return nodes
    last = max(n.ordinal_end for n in nodes)
    bridges: list[PlanNode] = []
    bridge: list[SnapshotItem] = []
    bridge_tokens = 0
    for item in ordered:
        if item.ordinal > last:
            break
        covered = any(n.ordinal_start <= item.ordinal <= n.ordinal_end for n in nodes)
        if not item.is_message or covered:
            if bridge:
                bridges.append(_leaf(prefix, bridge, bridge_tokens))
            bridge, bridge_tokens = [], 0
            continue
        bridge.append(item)
        bridge_tokens += non_negative(item.token_count)
    if bridge:
        bridges.append(_leaf(prefix, bridge, bridge_tokens))
    return sorted(nodes + bridges, key=_planning_order)


def plan_condensed(
    nodes: Sequence[PlanNode],
    *,
    min_fanout: int,
    min_source_tokens: int,
    chunk_tokens: int,
    prefix: str,
) -> list[PlanNode]:
    """1.0's ``planPendingCondensedNodes``: parents layer by layer until none forms."""
    fanout = max(2, _positive(min_fanout, 2))
    min_tokens = non_negative(min_source_tokens)
    budget = _positive(chunk_tokens, 1)
    planned: list[PlanNode] = []
    candidates = sorted(nodes, key=_planning_order)
    for _ in range(MAX_CONDENSED_LAYERS):
        layer = _one_layer(candidates, fanout, min_tokens, budget, prefix)
        if not layer:
            break
        planned += layer
        candidates = sorted(candidates + layer, key=_planning_order)
    return planned


def _one_layer(
    nodes: Sequence[PlanNode], fanout: int, min_tokens: int, budget: int, prefix: str
) -> list[PlanNode]:
    result: list[PlanNode] = []
    for depth in sorted({n.depth for n in nodes}):
        group: list[PlanNode] = []
        group_tokens = 0

        def flush(depth: int = depth) -> None:
            nonlocal group, group_tokens
            if len(group) >= fanout and group_tokens >= min_tokens:
                result.append(_parent(prefix, depth + 1, group, group_tokens))
            group, group_tokens = [], 0

        for node in sorted((n for n in nodes if n.depth == depth), key=_planning_order):
            expected = node.ordinal_start if not group else group[-1].ordinal_end + 1
            fits = not group or group_tokens + node.token_count <= budget
            if node.ordinal_start != expected or not fits:
                flush()
            group.append(node)
            group_tokens += non_negative(node.token_count)
            if group_tokens >= budget:
                flush()
        flush()
    existing = {(n.depth, n.ordinal_start, n.ordinal_end) for n in nodes}
    return [n for n in result if (n.depth, n.ordinal_start, n.ordinal_end) not in existing]


def _parent(prefix: str, depth: int, children: Sequence[PlanNode], tokens: int) -> PlanNode:
    start, end = children[0].ordinal_start, children[-1].ordinal_end
    return PlanNode(
        f"{prefix}-condensed-d{depth}-{start}-{end}",
        "condensed",
        depth,
        start,
        end,
        tokens,
        [f for c in children for f in c.fingerprints],
        [m for c in children for m in c.message_ids],
        [(None, c.canonical_summary_id) if c.canonical_summary_id else (c.node_id, None) for c in children],
    )


def coverage_target(nodes: Sequence[PlanNode], start: int, end: int) -> tuple[int, list[PlanNode]] | None:
    """1.0's ``selectPendingPublishCoverageTarget``: (last covered ordinal, frontier) or None."""
    start, end = non_negative(start), non_negative(end)
    if end < start:
        return None
    frontier: list[PlanNode] = []
    cursor = start
    while cursor <= end:
        starting = [n for n in nodes if n.ordinal_start == cursor and n.ordinal_start <= n.ordinal_end <= end]
        if not starting:
            break
        best = min(starting, key=lambda n: (-n.depth, -n.ordinal_end, n.node_id))
        frontier.append(best)
        cursor = best.ordinal_end + 1
    if not frontier:
        return None
    return cursor - 1, frontier


def publish_frontier(nodes: Sequence[PlanNode], start: int, end: int) -> list[PlanNode] | None:
    """1.0's ``selectPendingPublishFrontier``: a frontier covering exactly ``start..end``."""
    target = coverage_target(nodes, start, end)
    if target is None or target[0] != non_negative(end):
        return None
    return target[1]


def canonical_nodes(items: Sequence[SnapshotItem], fresh_tail: int | None) -> list[PlanNode]:
    """The context's summaries outside the fresh tail, as one-ordinal planner nodes."""
    limit = math.inf if fresh_tail is None else fresh_tail
    return [
        PlanNode(
            f"canonical-{i.summary_id}",
            i.kind or "leaf",
            i.depth or 0,
            i.ordinal,
            i.ordinal,
            i.token_count,
            [i.fingerprint],
            canonical_summary_id=i.summary_id,
        )
        for i in items
        if not i.is_message and i.summary_id is not None and i.ordinal < limit
    ]
