"""One step of lossless-claw 1.0's pending-summary lifecycle for one conversation.

:func:`run_once` does at most one of: plan a batch over the compactable range outside the
fresh tail, prepare one node with the summarizer (claimed under a lease in a short
transaction; the model is called with no transaction and no lock held; the answer is
stored only while the lease is still ours), or publish the batch once a ready frontier
covers it. Policies as 1.0 names them:

- ``prepare-only`` (background: `lcm serve`'s follow-up lane, ``maintain``): plan and
  prepare, never publish;
- ``publish-ready-only`` (the turn path at the threshold): revalidate and publish what is
  ready, never claim a node and never call a model;
- ``publish-if-ready``: both.

Failures follow 1.0: a failed node is retried after its backoff, up to 3 attempts; an
auth failure or exhausted retries mark the batch ``stale``; a spend-guard refusal gives
the claim back untouched. A batch whose source moved (range shrunk, fingerprint changed,
a gap, a leaf's source hash or a condensed node's canonical child gone) is marked
``stale`` before anything is published.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timezone
from typing import Any, NamedTuple

from lcm_cli.engine.compaction import leaf_source as src
from lcm_cli.engine.compaction.pending import planner, projection, publisher, rows
from lcm_cli.engine.compaction.pending.planner import PlanNode
from lcm_cli.engine.compaction.pending.projection import Snapshot
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.pending_state import NODES, has_table
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import SpendLimitError, Summarizer, stored_model

POLICIES = ("prepare-only", "publish-ready-only", "publish-if-ready")


class PendingSettings(NamedTuple):
    """The config 1.0's coordinator reads (with a threshold override's sizing applied)."""

    fresh_tail_count: int
    fresh_tail_max_tokens: int | None
    leaf_chunk_tokens: int
    condensed_min_fanout: int
    condensed_min_source_tokens: int
    condensed_chunk_tokens: int
    lease_ms: int
    strip_tags: tuple[str, ...]

    @classmethod
    def from_effective(cls, effective: Mapping[str, Any]) -> PendingSettings:
        """As 1.0's engine builds the coordinator's config."""
        s = EngineSettings(effective)
        leaf = s.leaf_chunk_tokens
        leaf_tokens = math.floor(leaf) if isinstance(leaf, (int, float)) and leaf > 0 else 20_000
        target = s.condensed_target_tokens
        target_tokens = math.floor(target) if isinstance(target, (int, float)) and target > 0 else 2_000
        cap = s.fresh_tail_max_tokens
        lease = s.summary_timeout_ms
        return cls(
            fresh_tail_count=math.floor(s.fresh_tail_count or 0),
            fresh_tail_max_tokens=math.floor(cap) if isinstance(cap, (int, float)) and cap >= 0 else None,
            leaf_chunk_tokens=leaf_tokens,
            condensed_min_fanout=math.floor(s.condensed_min_fanout or 0),
            condensed_min_source_tokens=max(target_tokens, math.floor(leaf_tokens * 0.1)),
            condensed_chunk_tokens=leaf_tokens,
            lease_ms=math.floor(lease) if isinstance(lease, (int, float)) and lease > 0 else 60_000,
            strip_tags=tuple(str(t) for t in s.strip_injected_context_tags or ()),
        )


class Coordinator:
    """Runs pending steps for one conversation on one store."""

    def __init__(
        self,
        store: Store,
        conversation_id: int,
        effective: Mapping[str, Any],
        summarizer: Summarizer | None = None,
        *,
        session_key: str | None = None,
        lease_owner: str = "lcm",
        write_lock: Callable[[], AbstractContextManager[None]] | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.store = store
        self.cid = conversation_id
        self.effective = effective
        self.settings = PendingSettings.from_effective(effective)
        self.summarizer = summarizer
        self.session_key = session_key
        self.lease_owner = lease_owner
        self.write_lock = write_lock or nullcontext
        self.now = now

    @property
    def model(self) -> str:
        """What ``model`` columns of a planned batch say: the summarizer's stored model."""
        return stored_model(self.summarizer) if self.summarizer is not None else "unknown"

    def available(self) -> bool:
        """True when the file has 1.0's pending tables."""
        return has_table(self.store.conn, NODES)

    def snapshot(self) -> Snapshot:
        """The live projection."""
        return projection.snapshot(
            self.store.conn,
            self.cid,
            fresh_tail_count=self.settings.fresh_tail_count,
            fresh_tail_max_tokens=self.settings.fresh_tail_max_tokens,
        )

    # -- the step ---------------------------------------------------------------

    def run_once(self, policy: str = "publish-if-ready") -> dict[str, Any]:
        """Advance the conversation by at most one step; the result says which."""
        if not self.available():
            return {"status": "idle", "reason": "no pending summary tables"}
        conn = self.store.conn
        batch = rows.active_batch(conn, self.cid)
        if policy == "publish-ready-only":
            # The turn path: no housekeeping write when nothing is open (retention is
            # left to the background steps), and the prune runs inside the publication.
            if batch is None:
                return {"status": "idle", "reason": "no active pending summary batch"}
            published = self.publish_if_ready()
            return published or {"status": "idle", "reason": "no ready pending summary frontier"}
        if batch is None:
            with self.write_lock(), self.store.transaction():
                rows.delete_finished(conn, self.cid, self.now())
            snap = self.snapshot()
            if snap.compactable_start is None or snap.compactable_end is None:
                return {"status": "idle", "reason": "no compactable context outside fresh tail"}
            return self.plan_batch(snap)
        with self.write_lock(), self.store.transaction():
            rows.prune_superseded(conn, batch.batch_id)
        prepared = self.prepare_one(batch)
        if prepared is not None:
            return prepared
        snap = self.snapshot()
        if snap.compactable_start is None or snap.compactable_end is None:
            return {"status": "idle", "reason": "no compactable context outside fresh tail"}
        batch = rows.active_batch(conn, self.cid)
        if batch is None:
            return {"status": "idle", "reason": "pending batch disappeared before validation"}
        reason = stale_reason(conn, batch, snap)
        if reason:
            with self.write_lock(), self.store.transaction():
                rows.mark_stale(conn, batch.batch_id, reason)
            return {"status": "stale", "batchId": batch.batch_id, "reason": reason}
        if policy == "prepare-only":
            if select_frontier(conn, batch, snap) is not None:
                extended = self.extend_if_grown(batch, snap)
                if extended is not None:
                    return extended
                return {
                    "status": "ready",
                    "batchId": batch.batch_id,
                    "reason": "pending summaries ready for publish",
                }
            return {"status": "idle", "reason": "no claimable pending summary nodes"}
        return self.publish_if_ready() or {"status": "idle", "reason": "no claimable pending summary nodes"}

    # -- planning -----------------------------------------------------------------

    def plan_batch(self, snap: Snapshot) -> dict[str, Any]:
        """Lay out a new batch over the compactable range (1.0's ``planBatch``)."""
        s = self.settings
        prefix_digest = projection.short_digest(
            "pending-summary-prefix", [str(self.cid), snap.projection_fingerprint, self.model]
        )
        attempt = projection.short_digest("pending-summary-attempt", [str(uuid.uuid4())])
        batch_id = f"pcb_{prefix_digest}_{attempt}"
        prefix = f"psn_{prefix_digest}_{attempt}"
        canonical = planner.canonical_nodes(snap.items, snap.fresh_tail_start)
        leaves = planner.plan_leaves(
            snap.items,
            fresh_tail_count=s.fresh_tail_count,
            fresh_tail_max_tokens=s.fresh_tail_max_tokens,
            leaf_chunk_tokens=s.leaf_chunk_tokens,
            prefix=prefix,
        )
        condensed = planner.plan_condensed(
            canonical + leaves,
            min_fanout=s.condensed_min_fanout,
            min_source_tokens=s.condensed_min_source_tokens,
            chunk_tokens=s.condensed_chunk_tokens,
            prefix=prefix,
        )
        pending = leaves + condensed
        if not pending:
            return {"status": "idle", "reason": "no pending summary nodes planned"}
        start = snap.compactable_start or 0
        target = planner.coverage_target(canonical + pending, start, snap.compactable_end or 0)
        if target is None or all(n.canonical_summary_id for n in target[1]):
            return {"status": "idle", "reason": "no publishable pending summary coverage planned"}
        end = target[0]
        conn = self.store.conn
        with self.write_lock(), self.store.transaction():
            rows.create_batch(
                conn,
                batch_id=batch_id,
                conversation_id=self.cid,
                session_key=self.session_key,
                fingerprint=projection.batch_fingerprint(self.cid, snap.items, start, end),
                start=start,
                end=end,
                fresh_tail_start=snap.fresh_tail_start,
                model=self.model,
            )
            for node in pending:
                self._insert(batch_id, node)
        return {"status": "planned", "batchId": batch_id, "nodeCount": len(pending)}

    def extend_if_grown(self, batch: rows.Batch, snap: Snapshot) -> dict[str, Any] | None:
        """Widen a ready batch over context that became compactable since it was planned
        (1.0's ``extendReadyBatchIfRangeGrew``): new leaves for the suffix once it holds
        ``leafChunkTokens`` of raw messages, and condensed parents that reuse the ready prefix."""
        s = self.settings
        if snap.compactable_start is None or snap.compactable_end is None:
            return None
        if batch.compactable_end >= snap.compactable_end:
            return None
        conn = self.store.conn
        existing = rows.batch_nodes(conn, batch.batch_id)
        reusable = [_planner_node(n) for n in existing if n.status in ("ready", "promoted")]
        suffix = [i for i in snap.items if batch.compactable_end < i.ordinal <= snap.compactable_end]
        if sum(projection.non_negative(i.token_count) for i in suffix if i.is_message) < max(
            1, s.leaf_chunk_tokens
        ):
            return None
        prefix = "psn_" + projection.short_digest(
            "pending-summary-extension", [batch.batch_id, snap.projection_fingerprint, str(uuid.uuid4())]
        )
        leaves = planner.plan_leaves(
            suffix,
            fresh_tail_count=0,
            fresh_tail_max_tokens=None,
            leaf_chunk_tokens=s.leaf_chunk_tokens,
            prefix=prefix,
        )
        canonical = planner.canonical_nodes(snap.items, snap.fresh_tail_start)
        covering = [n for n in reusable if n.kind == "condensed"]
        candidates = [
            n
            for n in canonical + reusable + leaves
            if not any(
                c.depth > n.depth and c.ordinal_start <= n.ordinal_start and c.ordinal_end >= n.ordinal_end
                for c in covering
            )
        ]
        condensed = planner.plan_condensed(
            candidates,
            min_fanout=s.condensed_min_fanout,
            min_source_tokens=s.condensed_min_source_tokens,
            chunk_tokens=s.condensed_chunk_tokens,
            prefix=prefix,
        )
        known = {(n.kind, n.depth, n.ordinal_start, n.ordinal_end) for n in existing}
        pending = [
            n for n in leaves + condensed if (n.kind, n.depth, n.ordinal_start, n.ordinal_end) not in known
        ]
        if not pending:
            return None
        target = planner.coverage_target(
            canonical + reusable + pending, batch.compactable_start, snap.compactable_end
        )
        if target is None or target[0] <= batch.compactable_end:
            return None
        with self.write_lock(), self.store.transaction():
            widened = rows.update_planning_target(
                conn,
                batch.batch_id,
                fingerprint=projection.batch_fingerprint(
                    self.cid, snap.items, batch.compactable_start, target[0]
                ),
                start=snap.compactable_start,
                end=target[0],
                fresh_tail_start=snap.fresh_tail_start,
            )
            if not widened:
                raise RuntimeError(f"Pending compaction batch {batch.batch_id} is not active for extension")
            for node in pending:
                self._insert(batch.batch_id, node)
        return {"status": "planned", "batchId": batch.batch_id, "nodeCount": len(pending)}

    def _insert(self, batch_id: str, node: PlanNode) -> None:
        rows.insert_node(
            self.store.conn,
            node_id=node.node_id,
            batch_id=batch_id,
            conversation_id=self.cid,
            kind=node.kind,
            depth=node.depth,
            start=node.ordinal_start,
            end=node.ordinal_end,
            source_fingerprint=projection.node_source_fingerprint(node.fingerprints),
            context_hash=projection.node_context_hash(
                node.ordinal_start, node.ordinal_end, node.fingerprints
            ),
            model=self.model,
            message_ids=node.message_ids,
            children=node.children,
        )

    # -- preparation --------------------------------------------------------------

    def prepare_one(self, batch: rows.Batch) -> dict[str, Any] | None:
        """Claim one node, summarize it with no lock held, store the answer (None: nothing claimable)."""
        if self.summarizer is None:
            return None
        conn = self.store.conn
        with self.write_lock(), self.store.transaction():
            node = rows.claim_next(conn, self.cid, self.lease_owner, self.settings.lease_ms, self.now())
        if node is None or not node.lease_expires_at:
            return None
        try:
            source = self.source_text(node).strip()
            if not source:
                raise ValueError("empty pending summary source")
            content = self._summarize(source, node).strip()
            if not content:
                raise ValueError("empty pending summary content")
        except SpendLimitError:
            with self.write_lock(), self.store.transaction():
                rows.release_claim(conn, node, self.lease_owner)
            return {"status": "idle", "reason": "summary spend backoff open"}
        except Exception as exc:  # recorded on the node; the batch survives unless retries ran out
            return self._failed(batch, node, _describe(exc), auth=isinstance(exc, _AuthFailure))
        with self.write_lock(), self.store.transaction():
            saved = rows.mark_ready(
                conn, node, self.lease_owner, content, estimate_tokens(content), self.now()
            )
        if not saved:
            return {"status": "idle", "reason": "pending summary lease lost"}
        return {"status": "prepared", "batchId": batch.batch_id, "nodeId": node.node_id}

    def _failed(self, batch: rows.Batch, node: rows.Node, failure: str, *, auth: bool) -> dict[str, Any]:
        conn = self.store.conn
        with self.write_lock(), self.store.transaction():
            saved = rows.mark_failed(conn, node, self.lease_owner, failure, self.now())
            if not saved:
                return {"status": "idle", "reason": "pending summary lease lost"}
            current = rows.get_node(conn, node.node_id)
            if auth or (current is not None and current.retry_count >= rows.MAX_NODE_RETRIES):
                rows.mark_stale(conn, batch.batch_id, failure)
        out: dict[str, Any] = {
            "status": "failed",
            "batchId": batch.batch_id,
            "nodeId": node.node_id,
            "failureSummary": failure,
        }
        if auth:
            out["authFailure"] = True
        return out

    def _summarize(self, source: str, node: rows.Node) -> str:
        from lcm_cli.engine.compaction.compactor import summarize

        assert self.summarizer is not None
        answer = summarize(
            self.summarizer,
            source,
            depth=node.depth if node.kind == "condensed" else 0,
            effective=self.effective,
            previous_context=None,
            custom_instructions=str(EngineSettings(self.effective).custom_instructions or "") or None,
        )
        if answer.auth_failure:
            raise _AuthFailure("provider auth failure")
        if answer.level == "fallback":
            # The deterministic truncation is no summary: the attempt counts as failed.
            raise ValueError("summarizer failed: no usable answer")
        return answer.content

    def source_text(self, node: rows.Node) -> str:
        """What the model reads for a node: its messages (leaf) or its children's texts."""
        conn = self.store.conn
        if node.kind == "leaf":
            chunks: list[str] = []
            for mid in rows.node_messages(conn, node.node_id):
                row = conn.execute(
                    "SELECT role, content, created_at FROM messages WHERE message_id = ?", (mid,)
                ).fetchone()
                if row is None:
                    continue
                role, content, created = row
                text = src.message_text(content or "", (), self.settings.strip_tags).strip()
                if not text:
                    text = src.message_text("", _parts(conn, mid), self.settings.strip_tags, role).strip()
                if text:
                    chunks.append(f"[{projection.iso_of(created)} | {role}]\n{text}".strip())
            return "\n\n".join(chunks)
        texts: list[str] = []
        for child_id, summary_id in rows.node_children(conn, node.node_id):
            if child_id is not None:
                child = rows.get_node(conn, child_id)
                if child is None or not child.content:
                    raise ValueError(f"Pending child summary {child_id} is not ready")
                texts.append(child.content)
            elif summary_id is not None:
                found = conn.execute(
                    "SELECT content FROM summaries WHERE summary_id = ?", (summary_id,)
                ).fetchone()
                if found is None:
                    raise ValueError(f"Canonical child summary {summary_id} was not found")
                texts.append(str(found[0] or ""))
        return "\n\n".join(t for t in texts if t)

    # -- publication ----------------------------------------------------------------

    def publish_if_ready(self) -> dict[str, Any] | None:
        """Revalidate the active batch and publish its ready frontier, all in one transaction.

        No node is claimed and no model is called. None: nothing ready to publish.
        """
        conn = self.store.conn
        if not self._frontier_in_sight():
            return None  # nothing ready: no write transaction, no hashing on the turn path
        with self.write_lock(), self.store.transaction():
            batch = rows.active_batch(conn, self.cid)
            if batch is None:
                return None
            rows.prune_superseded(conn, batch.batch_id)
            snap = self.snapshot()
            reason = stale_reason(conn, batch, snap)
            if reason:
                rows.mark_stale(conn, batch.batch_id, reason)
                return {"status": "stale", "batchId": batch.batch_id, "reason": reason}
            selection = select_frontier(conn, batch, snap)
            if selection is None:
                return None
            frontier, pending = selection
            remaining = snap.compactable_end is not None and batch.compactable_end < snap.compactable_end
            if not pending:
                rows.mark_published(conn, batch.batch_id)
                ids = [n.canonical_summary_id or "" for n in frontier]
            else:
                done = publisher.publish_in_transaction(
                    self.store, batch.batch_id, [n.node_id for n in pending]
                )
                by_node = dict(zip([n.node_id for n in pending], done.frontier_summary_ids, strict=True))
                ids = [n.canonical_summary_id or by_node[n.node_id] for n in frontier]
        out: dict[str, Any] = {"status": "published", "batchId": batch.batch_id, "frontierSummaryIds": ids}
        if remaining:
            out["remainingCompactableWork"] = True
        return out

    def _frontier_in_sight(self) -> bool:
        """Whether the active batch's ready nodes cover its range (read only, no text read);
        publication then revalidates everything inside its transaction."""
        conn = self.store.conn
        batch = rows.active_batch(conn, self.cid)
        if batch is None:
            return False
        ready = [
            _planner_node(n)
            for n in rows.batch_nodes(conn, batch.batch_id)
            if n.status in ("ready", "promoted")
        ]
        if not ready:
            return False
        items = projection.read_light_items(conn, self.cid)
        tail = projection.fresh_tail_start(
            items, self.settings.fresh_tail_count, self.settings.fresh_tail_max_tokens
        )
        canonical = planner.canonical_nodes(items, None if tail == math.inf else int(tail))
        return (
            planner.publish_frontier(canonical + ready, batch.compactable_start, batch.compactable_end)
            is not None
        )


class _AuthFailure(Exception):
    pass


def _describe(exc: BaseException) -> str:
    return str(exc) or "unknown pending summary preparation failure"


def _parts(conn: Any, message_id: int) -> list[dict[str, Any]]:
    keys = ("part_type", "text_content", "tool_name", "tool_input", "tool_output")
    found = conn.execute(
        "SELECT part_type, text_content, tool_name, tool_input, tool_output FROM message_parts"
        " WHERE message_id = ? ORDER BY ordinal",
        (message_id,),
    ).fetchall()
    return [dict(zip(keys, r, strict=True)) for r in found]


def _planner_node(node: rows.Node) -> PlanNode:
    return PlanNode(
        node.node_id,
        node.kind,
        node.depth,
        node.ordinal_start,
        node.ordinal_end,
        projection.non_negative(node.token_count or 0),
        [node.source_fingerprint],
        canonical_summary_id=node.canonical_summary_id,
    )


def select_frontier(
    conn: Any, batch: rows.Batch, snap: Snapshot
) -> tuple[list[PlanNode], list[PlanNode]] | None:
    """1.0's ``selectPublishFrontier``: (frontier, its pending part) covering the batch exactly."""
    nodes = rows.batch_nodes(conn, batch.batch_id)
    ready = [_planner_node(n) for n in nodes if n.status in ("ready", "promoted")]
    canonical = planner.canonical_nodes(snap.items, snap.fresh_tail_start)
    frontier = planner.publish_frontier(canonical + ready, batch.compactable_start, batch.compactable_end)
    if frontier is None:
        return None
    pending = [n for n in frontier if not n.canonical_summary_id]
    if not pending and any(n.status != "promoted" for n in nodes):
        return None
    return frontier, pending


def stale_reason(conn: Any, batch: rows.Batch, snap: Snapshot) -> str | None:
    """1.0's ``getActiveBatchStaleReason``: why the batch no longer fits the live context."""
    start, end = snap.compactable_start, snap.compactable_end
    if start is None or end is None or batch.compactable_start < start or batch.compactable_end > end:
        return "pending batch range is no longer compactable"
    expected = projection.batch_fingerprint(
        batch.conversation_id, snap.items, batch.compactable_start, batch.compactable_end
    )
    if batch.source_projection_fingerprint != expected:
        return "source projection fingerprint changed before publish"
    by_ordinal = {i.ordinal: i for i in snap.items}
    if any(o not in by_ordinal for o in range(batch.compactable_start, batch.compactable_end + 1)):
        return "pending batch source range changed before publish"
    nodes = rows.batch_nodes(conn, batch.batch_id)
    node_ids = {n.node_id for n in nodes}
    summary_items = {i.summary_id: i for i in snap.items if not i.is_message and i.summary_id}
    for node in nodes:
        if node.kind == "leaf":
            fingerprints = [
                i.fingerprint for i in snap.items if node.ordinal_start <= i.ordinal <= node.ordinal_end
            ]
            if node.source_context_hash != projection.node_context_hash(
                node.ordinal_start, node.ordinal_end, fingerprints
            ):
                return "pending batch source changed before publish"
            continue
        for child_id, summary_id in rows.node_children(conn, node.node_id):
            if child_id is not None:
                if child_id not in node_ids:
                    return "pending batch source changed before publish"
            elif summary_id is not None:
                item = summary_items.get(summary_id)
                if item is None or not node.ordinal_start <= item.ordinal <= node.ordinal_end:
                    return "pending batch source changed before publish"
            else:
                return "pending batch source changed before publish"
    return None
