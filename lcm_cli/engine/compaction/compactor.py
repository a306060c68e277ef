"""Compaction: fold old raw messages into leaf summaries and leaves into condensed nodes.

Follows docs/reference/engine.md §4: leaf chunks outside the fresh tail (§4.4), leaf passes
(§4.5), condensation with fan-outs and a pressure phase (§4.6), the bounded full sweep
(§4.7), the host ``compact`` routing reduced to what a CLI or host call needs (§4.8),
``compactUntilUnder`` (§4.9), and the deferred-debt row (§4.12).

Every pass calls the summarizer first, outside any transaction, then writes in one
``BEGIN IMMEDIATE`` transaction that re-checks the chunk is still in place. A summarizer
failure skips the pass: nothing is written and the failure is reported.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, tzinfo
from typing import Any, Literal, NamedTuple

from lcm_cli.engine.compaction import context_items as ci
from lcm_cli.engine.compaction import leaf_source as src
from lcm_cli.engine.compaction.context_items import Item
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store.stamps import iso_timestamp
from lcm_cli.engine.summarize.base import SpendLimitError, Summarizer, stored_model

DEFAULT_TOKEN_BUDGET = 128000
UNTIL_UNDER_MAX_ROUNDS = 10
# How a leaf pass's previous context is picked (§5.4): the sweep's rule, or compactLeaf's.
LeafContext = Literal["sweep", "nearest"]


def _int(value: float) -> int:
    """A count or size key, floored (the resolver gives each a finite number: integers from
    the environment, any finite number from the plugin config, config.md §5)."""
    return math.floor(value)


class Settings(NamedTuple):
    """The config keys compaction reads, resolved once per call."""

    fresh_tail_count: int
    fresh_tail_max_tokens: int | None
    leaf_chunk_tokens: int
    leaf_min_fanout: int
    condensed_min_fanout: int
    condensed_min_fanout_hard: int
    leaf_target_tokens: int
    condensed_target_tokens: int
    sweep_max_depth: int
    max_sweep_iterations: int
    sweep_deadline_ms: int
    until_under_deadline_ms: int
    context_threshold: float
    summary_prefix_target_tokens: int | None
    max_assembly_token_budget: int | None
    custom_instructions: str
    strip_tags: tuple[str, ...]
    zone: tzinfo

    @classmethod
    def from_effective(cls, effective: Mapping[str, Any]) -> Settings:
        """Read the effective config (reference key names, defaults already applied)."""
        s = EngineSettings(effective)
        cap = s.fresh_tail_max_tokens
        prefix = s.summary_prefix_target_tokens
        budget_cap = s.max_assembly_token_budget
        return cls(
            fresh_tail_count=_int(s.fresh_tail_count),
            fresh_tail_max_tokens=math.floor(cap) if isinstance(cap, (int, float)) and cap >= 0 else None,
            leaf_chunk_tokens=max(1, _int(s.leaf_chunk_tokens)),
            leaf_min_fanout=max(1, _int(s.leaf_min_fanout)),
            condensed_min_fanout=max(1, _int(s.condensed_min_fanout)),
            condensed_min_fanout_hard=max(1, _int(s.condensed_min_fanout_hard)),
            leaf_target_tokens=max(1, _int(s.leaf_target_tokens)),
            condensed_target_tokens=max(1, _int(s.condensed_target_tokens)),
            sweep_max_depth=_int(s.sweep_max_depth),
            max_sweep_iterations=max(1, _int(s.max_sweep_iterations)),
            sweep_deadline_ms=max(1, _int(s.sweep_deadline_ms)),
            until_under_deadline_ms=max(1, _int(s.compact_until_under_deadline_ms)),
            context_threshold=float(s.context_threshold),
            summary_prefix_target_tokens=math.floor(prefix)
            if isinstance(prefix, (int, float)) and prefix > 0
            else None,
            max_assembly_token_budget=math.floor(budget_cap)
            if isinstance(budget_cap, (int, float)) and budget_cap > 0
            else None,
            custom_instructions=str(s.custom_instructions),
            strip_tags=tuple(str(t) for t in s.strip_injected_context_tags),
            zone=src.zone_of(s.timezone),  # an empty TZ reads as UTC there
        )

    def budget(self, requested: int | None) -> int:
        """The token budget: the requested one (default 128000), capped by ``maxAssemblyTokenBudget``."""
        budget = requested if requested and requested > 0 else DEFAULT_TOKEN_BUDGET
        if self.max_assembly_token_budget is not None:
            budget = min(budget, self.max_assembly_token_budget)
        return budget

    def threshold(self, budget: int) -> int:
        """``floor(contextThreshold × budget)`` (§4.2)."""
        return math.floor(self.context_threshold * budget)

    def prefix_target(self, budget: int) -> int:
        """The summarized-prefix target P of §4.7 step 4."""
        if self.summary_prefix_target_tokens is not None:
            return self.summary_prefix_target_tokens
        half = math.floor(max(1, self.threshold(budget)) * 0.5)
        return max(self.condensed_target_tokens, min(self.leaf_chunk_tokens, half))


# --------------------------------------------------------------------------
# Summarizer call
# --------------------------------------------------------------------------


class Summary(NamedTuple):
    """What one summarizer call produced."""

    content: str
    level: str  # normal | aggressive | capped | fallback
    auth_failure: bool


def summarize(
    summarizer: Summarizer,
    source_text: str,
    *,
    depth: int,
    effective: Mapping[str, Any],
    previous_context: str | None,
    custom_instructions: str | None,
) -> Summary:
    """One summarization with the reference's escalation (§5.1); auth failures come back flagged.

    An endpoint that fails without an auth error yields the deterministic fallback;
    :class:`SpendLimitError` and unexpected exceptions propagate to the pass, which
    then writes nothing.
    """
    from lcm_cli.engine.summarize.escalation import summarize_with_escalation

    result = summarize_with_escalation(
        summarizer,
        source_text,
        depth=depth,
        effective=effective,
        previous_context=previous_context,
        custom_instructions=custom_instructions,
    )
    return Summary(result.content, result.level, bool(result.auth_failure))


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


class SweepResult(NamedTuple):
    """One full sweep: what it did and why it stopped."""

    action_taken: bool
    tokens_before: int
    tokens_after: int
    passes: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    auth_failure: bool = False
    stopped_at_budget: bool = False
    failure: str | None = None
    no_progress: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON form (camelCase keys, like the rest of the envelope)."""
        return {
            "actionTaken": self.action_taken,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "passes": self.passes,
            "skipped": self.skipped,
            "authFailure": self.auth_failure,
            "stoppedAtBudget": self.stopped_at_budget,
            "failure": self.failure,
        }


class _PassOutcome(NamedTuple):
    status: str  # done | empty-source | chunk-changed | auth-failure | failed
    removed: int = 0
    added: int = 0
    content: str = ""
    record: dict[str, Any] | None = None
    error: str | None = None


def _failed(exc: Exception) -> _PassOutcome:
    if isinstance(exc, SpendLimitError):
        return _PassOutcome("failed", error=f"summary spend backoff open: {exc}")
    return _PassOutcome("failed", error=f"{type(exc).__name__}: {exc}")


class _Sweep:
    """One full sweep's running state: stored tokens now, the passes made and chunks
    skipped, and the iteration and time budget."""

    def __init__(
        self,
        before: int,
        stop_at_tokens: int | None,
        end: float,
        max_iterations: int,
        clock: Callable[[], float],
    ) -> None:
        self.before = before
        self.running = before
        self.stop_at_tokens = stop_at_tokens
        self.end = end
        self.max_iterations = max_iterations
        self.clock = clock
        self.iterations = 0
        self.budget_spent = False
        self.passes: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []

    def out_of_budget(self) -> bool:
        """Whether the sweep has used its iterations or its time."""
        return self.iterations >= self.max_iterations or self.clock() >= self.end

    def proceed(self) -> bool:
        """Whether another leaf pass may run; a no is kept in ``budget_spent``."""
        self.budget_spent = self.out_of_budget()
        return not self.budget_spent

    def finish(self, **flags: Any) -> SweepResult:
        """The sweep's result as it stands, with the flags saying why it stopped."""
        return SweepResult(bool(self.passes), self.before, self.running, self.passes, self.skipped, **flags)

    def skip(self, kind: str, reason: str, chunk: Sequence[Item]) -> None:
        """Note a chunk the sweep passed over."""
        self.skipped.append({"kind": kind, "reason": reason, "ordinals": _span(chunk)})

    def failure(self, kind: str, outcome: _PassOutcome, chunk: Sequence[Item]) -> SweepResult | None:
        """The result to stop with when a pass failed (a summarizer failure also notes the
        chunk as skipped); None when it did not."""
        if outcome.status == "auth-failure":
            return self.finish(auth_failure=True, failure=outcome.error)
        if outcome.status == "failed":
            self.skip(kind, "summarizer-failed", chunk)
            return self.finish(failure=outcome.error)
        return None

    def record(self, outcome: _PassOutcome) -> int:
        """Count a pass that replaced its chunk; returns the stored tokens before it."""
        pass_start = self.running
        self.running = self.running - outcome.removed + outcome.added
        assert outcome.record is not None
        self.passes.append({**outcome.record, "tokensBefore": pass_start, "tokensAfter": self.running})
        return pass_start

    def under_pressure(self, items: Sequence[Item], prefix_target: int) -> bool:
        """Whether condensation should go on: still over the stop point, or the summaries
        in ``items`` (the ones before the fresh tail) exceed the prefix target."""
        if self.stop_at_tokens is not None and self.running > self.stop_at_tokens:
            return True
        return sum(i.tokens for i in items if not i.is_message) > prefix_target


# --------------------------------------------------------------------------
# The compactor
# --------------------------------------------------------------------------


class Compactor:
    """Compaction of one conversation through one writable :class:`Store`."""

    def __init__(
        self,
        store: Store,
        conversation_id: int,
        effective: Mapping[str, Any],
        summarizer: Summarizer,
        *,
        custom_instructions: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        write_lock: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> None:
        """Bind a conversation, its effective config and the summarizer to use.

        ``write_lock``: taken around each write only (the session's in-process lock), so a
        slow summarizer call never holds it: the turn path, which takes the same lock,
        never waits for a model. Without it the caller is expected to hold what it needs.
        """
        self.store = store
        self.conn = store.conn
        self.cid = conversation_id
        self.effective = effective
        self.settings = Settings.from_effective(effective)
        self.summarizer = summarizer
        self.custom = (
            custom_instructions if custom_instructions is not None else self.settings.custom_instructions
        )
        self.clock = clock
        self.write_lock: Callable[[], AbstractContextManager[Any]] = write_lock or contextlib.nullcontext

    # -- reading -----------------------------------------------------------

    def items(self) -> list[Item]:
        """The current context items (light rows)."""
        return ci.load_items(self.conn, self.cid)

    def boundary(self, items: Sequence[Item]) -> int:
        """The fresh-tail boundary ordinal for these items (configured tail settings)."""
        s = self.settings
        return ci.tail_boundary(items, s.fresh_tail_count, s.fresh_tail_max_tokens)

    def current_boundary(self) -> int:
        """The fresh-tail boundary read from the database, newest items only."""
        s = self.settings
        return ci.find_boundary(self.conn, self.cid, s.fresh_tail_count, s.fresh_tail_max_tokens)

    def raw_tokens_outside_tail(self, items: Sequence[Item]) -> int:
        """Leaf-source tokens of raw messages before the fresh-tail boundary."""
        edge = self.boundary(items)
        return sum(i.tokens for i in items if i.is_message and i.ordinal < edge)

    # -- leaf ----------------------------------------------------------------

    def leaf_chunk(self, items: Iterable[Item], boundary: int, scan_after: int) -> list[Item]:
        """The oldest contiguous raw run outside the tail, capped at ``leafChunkTokens`` (§4.4)."""
        cap = self.settings.leaf_chunk_tokens
        chunk: list[Item] = []
        total = 0
        for item in items:
            if item.ordinal >= boundary:
                break
            if item.ordinal <= scan_after:
                continue
            if not item.is_message:
                if chunk:
                    break
                continue
            if chunk and total + item.tokens > cap:
                break
            chunk.append(item)
            total += item.tokens
            if total >= cap:
                break
        return chunk

    def _message_rows(self, ids: Sequence[int]) -> dict[int, Any]:
        rows = self.conn.execute(
            "SELECT message_id, role, content, created_at, openclaw_sender_metadata FROM messages"
            " WHERE message_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        ).fetchall()
        return {r[0]: r for r in rows}

    def _parts(self, message_id: int) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT part_type, text_content, tool_name, tool_input, tool_output FROM message_parts"
            " WHERE message_id = ? ORDER BY ordinal",
            (message_id,),
        ).fetchall()
        keys = ("part_type", "text_content", "tool_name", "tool_input", "tool_output")
        return [dict(zip(keys, r)) for r in rows]

    def leaf_source(self, chunk: Sequence[Item]) -> tuple[str, list[str]]:
        """The leaf source text of a chunk and the cleaned texts (for file ids)."""
        rows = self._message_rows([i.message_id for i in chunk if i.message_id is not None])
        blocks: list[str] = []
        texts: list[str] = []
        for item in chunk:
            row = rows.get(item.message_id or -1)
            if row is None:
                continue
            _, role, content, created_at, sender = row
            text = src.message_text(content or "", (), self.settings.strip_tags)
            if not text:
                text = src.message_text("", self._parts(row[0]), self.settings.strip_tags, role)
            if not text:
                continue
            speaker = ci.speaker_line(sender) if role == "user" else ""
            blocks.append(src.leaf_block(created_at, role, speaker, text, self.settings.zone))
            texts.append(text)
        return "\n\n".join(blocks), texts

    def leaf_pass(self, chunk: Sequence[Item], previous_context: str | None) -> _PassOutcome:
        """Summarize one leaf chunk and write it (§4.5)."""
        source_text, texts = self.leaf_source(chunk)
        if not source_text.strip():
            return _PassOutcome("empty-source")
        message_ids = [i.message_id for i in chunk if i.message_id is not None]
        return self._summarize_and_replace(
            chunk,
            source_text,
            0,
            previous_context,
            lambda summary, removed: self.store.add_leaf_summary(
                self.cid,
                message_ids,
                summary.content,
                model=stored_model(self.summarizer),
                file_ids=src.find_file_ids(texts),
                source_message_token_count=removed,
            ),
        )

    def _summarize_and_replace(
        self,
        chunk: Sequence[Item],
        source_text: str,
        depth: int,
        previous_context: str | None,
        insert: Callable[[Summary, int], str],
    ) -> _PassOutcome:
        """One pass: summarize outside any transaction, then write it and swap the chunk out.

        ``insert(summary, removed_tokens)`` writes the summary row and its links inside the
        pass's transaction and returns the new id. The chunk is re-checked first: if
        another writer changed it meanwhile, nothing is written.
        """
        try:
            summary = summarize(
                self.summarizer,
                source_text,
                depth=depth,
                effective=self.effective,
                previous_context=previous_context,
                custom_instructions=self.custom,
            )
        except Exception as exc:  # any summarizer failure skips the pass; nothing is written
            return _failed(exc)
        if summary.auth_failure:
            return _PassOutcome("auth-failure", error="provider auth failure")
        removed = sum(i.tokens for i in chunk)
        with self.write_lock(), self.store.transaction() as conn:
            if not ci.chunk_is_intact(conn, self.cid, chunk):
                return _PassOutcome("chunk-changed")
            summary_id = insert(summary, removed)
            ci.replace_range(conn, self.cid, chunk[0].ordinal, chunk[-1].ordinal, summary_id)
        added = estimate_tokens(summary.content)
        return _PassOutcome(
            "done",
            removed,
            added,
            summary.content,
            {
                "kind": "leaf" if depth == 0 else "condensed",
                "depth": depth,
                "summaryId": summary_id,
                "level": summary.level,
                "sourceCount": len(chunk),
                "sourceTokens": removed,
                "summaryTokens": added,
                "ordinals": [chunk[0].ordinal, chunk[-1].ordinal],
            },
        )

    # -- condensed -------------------------------------------------------------

    def _summary_rows(self, ids: Sequence[str]) -> dict[str, Any]:
        rows = self.conn.execute(
            "SELECT summary_id, content, earliest_at, latest_at, created_at, file_ids FROM summaries"
            " WHERE summary_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        ).fetchall()
        return {r[0]: r for r in rows}

    def condensed_chunk(
        self, items: Sequence[Item], boundary: int, depth: int, fanout: int
    ) -> list[Item] | None:
        """The oldest contiguous run of depth-``depth`` summaries, if eligible (§4.6)."""
        run: list[Item] = []
        for item in items:
            if item.ordinal >= boundary:
                break
            if not item.is_message and item.depth == depth:
                run.append(item)
            elif run:
                break
        if not run:
            return None
        contents = self._summary_rows([i.summary_id for i in run if i.summary_id])
        cap = self.settings.leaf_chunk_tokens
        chunk: list[Item] = []
        counted = 0
        meaningful = 0
        for item in run:
            text = src.sanitize_summary(contents[item.summary_id][1]) if item.summary_id in contents else ""
            if not text:
                if chunk:
                    chunk.append(item)  # carried along, not counted
                continue
            if chunk and counted + item.tokens > cap:
                break
            chunk.append(item)
            counted += item.tokens
            meaningful += 1
            if counted >= cap:
                break
        minimum = max(self.settings.condensed_target_tokens, math.floor(cap * 0.1))
        if meaningful < fanout or counted < minimum:
            return None
        return chunk

    def condensed_candidate(self, items: Sequence[Item], boundary: int, *, hard: bool) -> list[Item] | None:
        """The shallowest eligible condensation chunk before the tail, or None."""
        s = self.settings
        depths = sorted(
            {i.depth for i in items if not i.is_message and i.ordinal < boundary and i.depth is not None}
        )
        for depth in depths:
            if hard:
                fanout = s.condensed_min_fanout_hard
            else:
                fanout = s.leaf_min_fanout if depth == 0 else s.condensed_min_fanout
            chunk = self.condensed_chunk(items, boundary, depth, fanout)
            if chunk:
                return chunk
        return None

    def condensed_source(self, ids: Sequence[str]) -> tuple[str, dict[str, Any], list[str]]:
        """The condensed source text of summaries ``ids`` (in order), their rows and the
        file ids they carry."""
        rows = self._summary_rows(ids)
        blocks: list[str] = []
        seeds: list[str] = []
        for sid in ids:
            row = rows[sid]
            seeds.extend(_json_list(row[5]))
            text = src.sanitize_summary(row[1])
            if text:
                blocks.append(
                    src.condensed_block(row[2] or row[4], row[3] or row[4], text, self.settings.zone)
                )
        return "\n\n".join(blocks), rows, seeds

    def condensed_pass(self, chunk: Sequence[Item], previous_context: str | None) -> _PassOutcome:
        """Summarize one run of same-depth summaries into a depth+1 node and write it."""
        ids = [i.summary_id for i in chunk if i.summary_id is not None]
        source_text, rows, seeds = self.condensed_source(ids)
        return self._summarize_and_replace(
            chunk,
            source_text,
            (chunk[0].depth or 0) + 1,
            previous_context,
            lambda summary, removed: self.store.add_condensed_summary(
                self.cid,
                ids,
                summary.content,
                model=stored_model(self.summarizer),
                file_ids=src.find_file_ids([rows[s][1] for s in ids], seed=seeds),
            ),
        )

    def nearest_summaries(self, items: Sequence[Item], before: int, depth: int | None) -> str | None:
        """Up to two nearest preceding summaries (optionally of one depth), oldest first (§5.4)."""
        picked: list[str] = []
        candidates = [
            i
            for i in items
            if not i.is_message and i.ordinal < before and (depth is None or i.depth == depth)
        ]
        rows = self._summary_rows([i.summary_id for i in candidates[-8:] if i.summary_id])
        for item in reversed(candidates[-8:]):
            row = rows.get(item.summary_id or "")
            text = src.sanitize_summary(row[1]) if row else ""
            if text:
                picked.append(text)
            if len(picked) == 2:
                break
        return "\n\n".join(reversed(picked)) if picked else None

    def _summaries_before(self, chunk: Sequence[Item]) -> str | None:
        """The two nearest summaries before ``chunk``, any depth (§5.4)."""
        head = ci.load_items(self.conn, self.cid, before=chunk[0].ordinal)
        return self.nearest_summaries(head, chunk[0].ordinal, None)

    # -- the leaf loop -----------------------------------------------------------

    def leaf_passes(
        self, previous: LeafContext, *, proceed: Callable[[], bool] | None = None
    ) -> Iterator[tuple[list[Item], _PassOutcome]]:
        """Leaf passes over the raw chunks outside the fresh tail, oldest first; yields each
        chunk with its pass's outcome.

        The one leaf loop of the sweep (§4.7) and of rotate (§4.13, §8). It re-reads the
        boundary and the next chunk before each pass, steps past a chunk with no text
        (``empty-source``) and retries one another writer changed (``chunk-changed``). It
        ends when no chunk is left, or when ``proceed()``, asked before each model call,
        says no; the caller ends it sooner by leaving the loop (on a failure, a bound).
        ``previous`` picks each pass's previous context (§5.4): ``"sweep"`` gives the
        last leaf this loop wrote, else after a skipped chunk the summaries nearest before
        the chunk, else none; ``"nearest"`` (``compactLeaf``, which rotate repeats) gives
        the summaries nearest before the chunk every time.
        """
        scan_after = -1
        previous_leaf: str | None = None
        after_skip = False
        while True:
            edge = self.current_boundary()
            chunk = self.leaf_chunk(
                ci.iter_items(self.conn, self.cid, after=scan_after, before=edge), edge, scan_after
            )
            if not chunk:
                return
            if proceed is not None and not proceed():
                return
            if previous == "nearest" or (previous_leaf is None and after_skip):
                context = self._summaries_before(chunk)
            else:
                context = previous_leaf
            outcome = self.leaf_pass(chunk, context)
            if outcome.status == "empty-source":
                scan_after = chunk[-1].ordinal
                after_skip = True
            elif outcome.status == "done":
                previous_leaf = outcome.content
            yield chunk, outcome

    # -- the sweep ---------------------------------------------------------------

    def full_sweep(
        self,
        *,
        token_budget: int,
        force: bool = False,
        stop_at_tokens: int | None = None,
        deadline: float | None = None,
    ) -> SweepResult:
        """Leaf passes over every eligible chunk, then condensation while under pressure (§4.7)."""
        s = self.settings
        items = self.items()
        before = ci.stored_context_tokens(items)
        threshold = s.threshold(token_budget)
        over_stop = stop_at_tokens is not None and before > stop_at_tokens
        if not items or not (force or before > threshold or over_stop):
            return SweepResult(False, before, before, [], [])
        end = self.clock() + s.sweep_deadline_ms / 1000
        if deadline is not None:
            end = min(end, deadline)
        sweep = _Sweep(before, stop_at_tokens, end, s.max_sweep_iterations, self.clock)
        stopped = self._leaf_phase(sweep)
        if stopped is not None:
            return stopped
        return self._condense_phase(sweep, s.prefix_target(token_budget))

    def _leaf_phase(self, sweep: _Sweep) -> SweepResult | None:
        """Phase 1: leaf passes over every eligible raw chunk outside the tail. Returns the
        sweep's result when it must stop here (budget, failure), else None."""
        for chunk, outcome in self.leaf_passes("sweep", proceed=sweep.proceed):
            if outcome.status == "empty-source":
                sweep.skip("leaf", "empty-source", chunk)
                continue
            sweep.iterations += 1
            if outcome.status == "chunk-changed":
                sweep.skip("leaf", "chunk-changed", chunk)
                continue
            failed = sweep.failure("leaf", outcome, chunk)
            if failed is not None:
                return failed
            pass_start = sweep.record(outcome)
            if sweep.stop_at_tokens is not None and sweep.running <= sweep.stop_at_tokens:
                return None
            if sweep.running >= pass_start:
                return None
        if sweep.budget_spent:
            return sweep.finish(stopped_at_budget=True)
        return None

    def _condense_phase(self, sweep: _Sweep, prefix_target: int) -> SweepResult:
        """Phase 2: condensation while summary tokens before the tail exceed the prefix
        target; soft passes first, then hard ones unless a soft pass made no progress."""
        max_depth = self.settings.sweep_max_depth
        no_progress = False
        for hard in (False, True):
            if hard and no_progress:
                break
            while True:
                edge = self.current_boundary()
                items = ci.load_items(self.conn, self.cid, before=edge)
                if not sweep.under_pressure(items, prefix_target):
                    break
                chunk = self.condensed_candidate(items, edge, hard=hard)
                if chunk is None:
                    break
                depth = chunk[0].depth or 0
                if not hard and max_depth >= 0 and depth >= max_depth:
                    break
                if sweep.out_of_budget():
                    return sweep.finish(stopped_at_budget=True)
                previous = self.nearest_summaries(items, chunk[0].ordinal, 0) if depth == 0 else None
                outcome = self.condensed_pass(chunk, previous)
                sweep.iterations += 1
                if outcome.status == "chunk-changed":
                    sweep.skip("condensed", "chunk-changed", chunk)
                    continue
                failed = sweep.failure("condensed", outcome, chunk)
                if failed is not None:
                    return failed
                pass_start = sweep.record(outcome)
                if sweep.running >= pass_start:
                    no_progress = True
                    break
        return sweep.finish(no_progress=no_progress)

    # -- routing -------------------------------------------------------------------

    def compact_until_under(
        self, *, token_budget: int, target_tokens: int | None = None, current_tokens: int | None = None
    ) -> dict[str, Any]:
        """Forced sweeps until stored tokens are at or under the target (§4.9)."""
        target = target_tokens if target_tokens and target_tokens > 0 else token_budget
        items = self.items()
        stored = ci.stored_context_tokens(items)
        start = max(stored, current_tokens or 0)
        if start < target:
            return _route_result(True, False, "already under target", stored, stored, 0, target, [], [])
        deadline = self.clock() + self.settings.until_under_deadline_ms / 1000
        passes: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        rounds = 0
        tokens = start
        reason = "could not reach target"
        failure: str | None = None
        ok = False
        spend = False
        while True:
            if rounds >= UNTIL_UNDER_MAX_ROUNDS or (rounds and self.clock() >= deadline):
                ok = tokens <= target
                reason = "compacted" if ok else "could not reach target"
                break
            rounds += 1
            sweep = self.full_sweep(token_budget=token_budget, force=True, deadline=deadline)
            passes += sweep.passes
            skipped += sweep.skipped
            if sweep.auth_failure:
                # As the reference words it: any round counts as "partial compaction".
                reason, failure, tokens = (
                    "provider auth failure after partial compaction",
                    sweep.failure,
                    sweep.tokens_after,
                )
                break
            if sweep.failure:
                failure = sweep.failure
                spend = sweep.failure.startswith("summary spend")
                reason = "summary spend backoff open" if spend else "summarizer failed"
                tokens = sweep.tokens_after
                break
            # Under target wins over the no-progress bail: a forced run whose stored context
            # is already under the budget is "compacted" (the reference tests in this order).
            if sweep.tokens_after <= target:
                ok, reason, tokens = True, "compacted", sweep.tokens_after
                break
            if not sweep.action_taken or sweep.tokens_after >= tokens:
                tokens = sweep.tokens_after
                break
            tokens = sweep.tokens_after
        # The reference reports compacted = rounds > 0; a spend-guard refusal leaves its
        # compactUntilUnder as an error (nothing compacted), a failed summarizer is ours.
        compacted = rounds > 0
        if spend:
            compacted = False
        elif reason == "summarizer failed":
            compacted = bool(passes)
        return _route_result(ok, compacted, reason, stored, tokens, rounds, target, passes, skipped, failure)

    def compact(
        self,
        *,
        token_budget: int | None = None,
        target: str = "budget",
        force: bool = False,
        manual: bool = False,
        current_token_count: int | None = None,
        until_under_target: bool = False,
    ) -> dict[str, Any]:
        """The engine's ``compact`` routing (§4.8), without breaker and spend guard.

        ``manual`` (an operator's `lcm compact --manual`) runs one full sweep, as the
        reference; ``target="threshold"`` chains sweeps while they make progress and the
        context is over the target. ``until_under_target`` (our option) chains a manual
        run's sweeps the same way. Otherwise ``compactUntilUnder`` against the budget.
        """
        s = self.settings
        budget = s.budget(token_budget)
        threshold = s.threshold(budget)
        items = self.items()
        stored = ci.stored_context_tokens(items)
        observed = current_token_count if current_token_count and current_token_count > 0 else 0
        current = max(stored, observed)
        if not (force or manual) and current <= threshold:
            result = _route_result(True, False, "below threshold", stored, stored, 0, threshold, [], [])
            result["threshold"] = threshold
            return result
        if not (manual or target == "threshold"):
            current_tokens = observed or (budget if force else None)
            return self.compact_until_under(
                token_budget=budget, target_tokens=budget, current_tokens=current_tokens
            )
        target_tokens = threshold if target == "threshold" else budget
        overhead = max(0, observed - stored) if target == "threshold" and observed else 0
        stop_at = max(1, target_tokens - overhead) if overhead > 0 and observed > target_tokens else None
        raw_outside = self.raw_tokens_outside_tail(items)
        forced = manual or force or stop_at is not None or (current > target_tokens and raw_outside > 0)
        deadline = self.clock() + s.until_under_deadline_ms / 1000
        passes: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        rounds = 0
        tokens = stored
        last: SweepResult | None = None
        chain_stopped_by_spend = False
        while True:
            rounds += 1
            last = self.full_sweep(
                token_budget=budget, force=forced, stop_at_tokens=stop_at, deadline=deadline
            )
            passes += last.passes
            skipped += last.skipped
            if (
                rounds > 1
                and last.failure
                and not last.auth_failure
                and last.failure.startswith("summary spend")
            ):
                # The reference ends a chain the spend guard refused and judges the rounds
                # before it; the refused round's partial passes stay stored.
                rounds -= 1
                chain_stopped_by_spend = True
                break
            progressed = last.action_taken and last.tokens_after < tokens
            tokens = last.tokens_after
            if last.auth_failure or last.failure:
                break
            if not progressed or tokens + overhead <= target_tokens:
                break
            if target != "threshold" and not until_under_target:
                break  # the reference chains threshold sweeps only
            if rounds >= s.max_sweep_iterations or self.clock() >= deadline:
                break
        over = tokens + overhead > target_tokens

        def finish(ok: bool, compacted: bool, reason: str, failure: str | None = None) -> dict[str, Any]:
            return _route_result(
                ok, compacted, reason, stored, tokens, rounds, target_tokens, passes, skipped, failure
            )

        if last.auth_failure:
            reason = "provider auth failure after partial compaction" if passes else "provider auth failure"
            return finish(False, bool(passes), reason, last.failure)
        if last.failure and not chain_stopped_by_spend:
            if last.failure.startswith("summary spend"):
                # The spend guard's refusal leaves the reference's first sweep as an error:
                # not compacted, whatever passes ran before it.
                return finish(False, False, "summary spend backoff open", last.failure)
            return finish(False, bool(passes), "summarizer failed", last.failure)
        threshold_sweep = target == "threshold"
        if not passes:
            rounds = 0  # the reference reports rounds only when a sweep acted
            if not over:
                return finish(True, False, "already under target")
            exhausted = threshold_sweep and not last.stopped_at_budget
            if exhausted and observed:
                reason = (
                    "stored compaction exhausted but live context still exceeds target;"
                    " transcript reset required"
                )
            else:
                reason = "nothing to compact" if manual else "live context still exceeds target"
            result = finish(False, False, reason)
            if exhausted:
                result["exhausted"] = True
            return result
        if over and threshold_sweep:
            # The reference keeps the pending work: a threshold sweep is ok only under target.
            return finish(False, True, "compacted but still over target")
        return finish(True, True, "compacted")


def _route_result(
    ok: bool,
    compacted: bool,
    reason: str,
    before: int,
    after: int,
    rounds: int,
    target: int,
    passes: list[dict[str, Any]],
    skipped: list[dict[str, Any]],
    failure: str | None = None,
) -> dict[str, Any]:
    return {
        "ok": ok,
        "compacted": compacted,
        "reason": reason,
        "result": {
            "tokensBefore": before,
            "tokensAfter": after,
            "details": {"rounds": rounds, "targetTokens": target},
        },
        "passes": passes,
        "skipped": skipped,
        "failure": failure,
    }


def _span(chunk: Sequence[Item]) -> list[int]:
    return [chunk[0].ordinal, chunk[-1].ordinal]


def _json_list(raw: Any) -> list[str]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    return [x for x in parsed if isinstance(x, str)] if isinstance(parsed, list) else []


# --------------------------------------------------------------------------
# Deferred compaction debt (§4.12)
# --------------------------------------------------------------------------


def record_debt(
    store: Store,
    conversation_id: int,
    *,
    reason: str = "threshold",
    token_budget: int | None = None,
    current_token_count: int | None = None,
    projected_token_count: int | None = None,
    raw_tokens_outside_tail: int | None = None,
    context_threshold: float | None = None,
    context_threshold_source: str | None = None,
    context_fresh_tail_count: int | None = None,
    context_leaf_chunk_tokens: int | None = None,
    now: datetime | None = None,
) -> None:
    """Record (or coalesce into) the conversation's pending compaction debt row."""
    with store.transaction() as conn:
        old = conn.execute(
            "SELECT current_token_count, projected_token_count, raw_tokens_outside_tail"
            " FROM conversation_compaction_maintenance WHERE conversation_id = ?",
            (conversation_id,),
        ).fetchone()
        kept = old or (None, None, None)
        store.set_maintenance(
            conversation_id,
            pending=True,
            running=False,
            requested_at=iso_timestamp(now),
            reason=reason,
            token_budget=token_budget,
            current_token_count=current_token_count if current_token_count is not None else kept[0],
            projected_token_count=projected_token_count if projected_token_count is not None else kept[1],
            raw_tokens_outside_tail=raw_tokens_outside_tail
            if raw_tokens_outside_tail is not None
            else kept[2],
            context_threshold=context_threshold,
            context_threshold_source=context_threshold_source,
            context_fresh_tail_count=context_fresh_tail_count,
            context_leaf_chunk_tokens=context_leaf_chunk_tokens,
            resolution_reason=None,
            resolved_at=None,
            updated_at=iso_timestamp(now),
        )
