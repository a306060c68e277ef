"""Interim summaries: what the turn path writes instead of waiting for a summarizer model.

``context.assemble``, ``session.commit_turn``, ``session.after_turn`` and ingest never call
a model. Where the turn path still has to compact now (assemble's emergency drain when the
stored context is over the budget, after-turn's ``inline`` mode), it summarizes with the
local extractive summarizer when the configured one is a model. The summaries it writes
are labelled :data:`INTERIM_MODEL` in ``summaries.model`` and the conversation's debt row
stays pending.

The next drain with the model (`lcm serve`'s follow-up after a turn, `lcm maintain`)
re-summarizes each interim summary from its own sources, bottom-up (leaves first, then
condensed nodes by depth), in place: same id, same sources and links, new content, token
count, model and FTS rows; the descendant token totals of the nodes above it are
refreshed in the same transaction. Each model call runs with no lock and no transaction
held; the write re-checks that the row still holds the interim text it read.

A configured local summarizer (extractive, emergency) is used as it is: nothing it writes
is interim, since a model would not be asked anyway.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.compaction.compactor import Compactor, summarize
from lcm_cli.engine.compaction.context_items import Item, load_items
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.summarize.base import Summarizer, stored_model
from lcm_cli.engine.summarize.extractive import EXTRACTIVE_MODEL, ExtractiveSummarizer
from lcm_cli.engine.summarize.fallback import EmergencySummarizer

INTERIM_MODEL = "extractive-interim"


class InterimSummarizer(ExtractiveSummarizer):
    """The extractive summarizer, labelling what it writes as waiting for the model."""

    model = INTERIM_MODEL


def is_local(summarizer: Summarizer) -> bool:
    """True for a summarizer that calls no model (extractive, interim, emergency)."""
    return isinstance(summarizer, (ExtractiveSummarizer, EmergencySummarizer))


def is_interim(summarizer: Summarizer) -> bool:
    """True for the turn path's stand-in."""
    return isinstance(summarizer, InterimSummarizer)


def turn_path_summarizer(configured: Summarizer) -> Summarizer:
    """What the turn path summarizes with: ``configured`` when it is local, else the stand-in."""
    return configured if is_local(configured) else InterimSummarizer()


def _has_model_column(conn: Any) -> bool:
    return "model" in {r[1] for r in conn.execute("PRAGMA table_info(summaries)")}


def count(conn: Any, conversation_id: int) -> int:
    """How many interim summaries the conversation holds."""
    if not _has_model_column(conn):
        return 0
    row = conn.execute(
        "SELECT COUNT(*) FROM summaries WHERE conversation_id = ? AND model = ?",
        (conversation_id, INTERIM_MODEL),
    ).fetchone()
    return int(row[0])


def _pending(conn: Any, conversation_id: int) -> list[tuple[str, int, str]]:
    """(id, depth, content) of the interim summaries, bottom-up, oldest first."""
    if not _has_model_column(conn):
        return []
    rows = conn.execute(
        "SELECT summary_id, depth, content FROM summaries WHERE conversation_id = ? AND model = ?"
        " ORDER BY depth, created_at, summary_id",
        (conversation_id, INTERIM_MODEL),
    ).fetchall()
    return [(str(r[0]), int(r[1] or 0), str(r[2] or "")) for r in rows]


def _source_text(compactor: Compactor, summary_id: str, depth: int) -> str:
    conn = compactor.conn
    if depth == 0:
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal", (summary_id,)
            )
        ]
        items = [Item(n, True, mid, None, None, 0, None, None) for n, mid in enumerate(ids)]
        text, _ = compactor.leaf_source(items)
        return text
    parents = [
        str(r[0])
        for r in conn.execute(
            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
            (summary_id,),
        )
    ]
    text, _, _ = compactor.condensed_source(parents)
    return text


def _previous_context(compactor: Compactor, summary_id: str, depth: int) -> str | None:
    """As a compaction pass would have had it: the nearest summaries before this one in the
    context (any depth for a leaf, depth-0 ones for a depth-1 node, none deeper)."""
    if depth > 1:
        return None
    row = compactor.conn.execute(
        "SELECT MIN(ordinal) FROM context_items WHERE conversation_id = ? AND summary_id = ?",
        (compactor.cid, summary_id),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    ordinal = int(row[0])
    head = load_items(compactor.conn, compactor.cid, before=ordinal)
    return compactor.nearest_summaries(head, ordinal, None if depth == 0 else 0)


_ANCESTORS = """
WITH RECURSIVE up(id) AS (
  SELECT summary_id FROM summary_parents WHERE parent_summary_id = ?
  UNION
  SELECT sp.summary_id FROM summary_parents sp JOIN up ON sp.parent_summary_id = up.id
)
SELECT s.summary_id FROM summaries s JOIN up ON s.summary_id = up.id ORDER BY s.depth
"""
_DESCENDANT_TOKENS = """
UPDATE summaries SET descendant_token_count = (
  SELECT COALESCE(SUM(p.token_count + p.descendant_token_count), 0)
  FROM summary_parents sp JOIN summaries p ON p.summary_id = sp.parent_summary_id
  WHERE sp.summary_id = ?
) WHERE summary_id = ?
"""


def _write(compactor: Compactor, summary_id: str, old: str, new: str) -> bool:
    """Replace one interim summary's text (False: it changed meanwhile, nothing written)."""
    store = compactor.store
    with compactor.write_lock(), store.transaction() as conn:
        updated = conn.execute(
            "UPDATE summaries SET content = ?, token_count = ?, model = ?"
            " WHERE summary_id = ? AND content = ? AND model = ?",
            (new, estimate_tokens(new), stored_model(compactor.summarizer), summary_id, old, INTERIM_MODEL),
        ).rowcount
        if updated != 1:
            return False
        for table, present in (
            ("summaries_fts", store.has_summaries_fts),
            ("summaries_fts_cjk", store.has_summaries_fts_cjk),
        ):
            if present:
                conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (summary_id,))
                conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (summary_id, new))
        for (ancestor,) in conn.execute(_ANCESTORS, (summary_id,)).fetchall():
            conn.execute(_DESCENDANT_TOKENS, (ancestor, ancestor))
    return True


def _settle(compactor: Compactor, summary_id: str, old: str) -> None:
    """An interim summary with no source text left: no model can do better, so it stays as
    it is, labelled as what it is (extractive) and no longer owed."""
    with compactor.write_lock(), compactor.store.transaction() as conn:
        conn.execute(
            "UPDATE summaries SET model = ? WHERE summary_id = ? AND content = ? AND model = ?",
            (EXTRACTIVE_MODEL, summary_id, old, INTERIM_MODEL),
        )


def refine(compactor: Compactor, *, deadline: float) -> dict[str, Any]:
    """Re-summarize the conversation's interim summaries with ``compactor.summarizer``.

    Stops at ``deadline`` (the compactor's clock), at the first failure, or at an auth
    failure. A model answer that fell back to the deterministic truncation counts as a
    failure: the interim summary is the better text, and stays.
    """
    refined: list[str] = []
    skipped: list[str] = []
    failure: str | None = None
    auth_failure = False
    todo = _pending(compactor.conn, compactor.cid)
    for summary_id, depth, old in todo:
        if compactor.clock() >= deadline:
            break
        source = _source_text(compactor, summary_id, depth)
        if not source.strip():
            _settle(compactor, summary_id, old)
            skipped.append(summary_id)
            continue
        try:
            answer = summarize(
                compactor.summarizer,
                source,
                depth=depth,
                effective=compactor.effective,
                previous_context=_previous_context(compactor, summary_id, depth),
                custom_instructions=compactor.custom,
            )
        except Exception as exc:  # the interim text stays; the debt keeps the failure
            failure = f"{type(exc).__name__}: {exc}"
            break
        if answer.auth_failure:
            auth_failure = True
            break
        if answer.level == "fallback" or not answer.content.strip():
            failure = "summarizer failed: no usable answer"
            break
        if _write(compactor, summary_id, old, answer.content):
            refined.append(summary_id)
        else:
            skipped.append(summary_id)
    return {
        "refined": len(refined),
        "summaryIds": refined,
        "skipped": skipped,
        "remaining": count(compactor.conn, compactor.cid),
        "failure": failure,
        "authFailure": auth_failure,
    }
