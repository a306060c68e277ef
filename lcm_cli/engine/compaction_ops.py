"""Registry operations over compaction and assembly: `session.compact`, `context.assemble`,
`session.maintain`.

A conversation is named the way the read commands name it (``--conversation-id`` or
``--session-key`` → the active conversation). Ignore and stateless session patterns are
honoured (compat/engine.md §1.3): an ignored session is never compacted nor assembled
from the database; a stateless one is assembled but never written.
"""

from __future__ import annotations

import math
import os
import sqlite3
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lcm_cli.engine import context_items as ci
from lcm_cli.engine.context import Context
from lcm_cli.engine.conversation_rows import find_conversation, identity_of
from lcm_cli.engine.db import schema
from lcm_cli.engine.errors import LcmError, invalid_argument
from lcm_cli.engine.registry import Result, operation
from lcm_cli.engine.request import Request
from lcm_cli.engine.sessions import SessionPolicy, queue_key, session_lock
from lcm_cli.engine.summarize.base import Summarizer, SummaryRequest
from lcm_cli.engine.tokens import estimate_tokens

TARGETS = ("budget", "threshold")


class PlanningSummarizer:
    """Stands in for the model during a dry run: text of the size a summary would have.

    Output is ``min(target, 35% of the input)`` tokens (at least 1), so the plan shows
    which passes would run and roughly what they would save, without any model call.
    """

    model = "dry-run"

    def summarize(self, request: SummaryRequest) -> str:
        """Placeholder text sized like a summary of ``request``."""
        tokens = max(1, min(request.target_tokens, math.floor(estimate_tokens(request.source_text) * 0.35)))
        return "planned summary " + "x" * max(0, tokens * 4 - 16)


def configured_summarizer(ctx: Context) -> Summarizer:
    """The summarizer the config chooses (extractive by default)."""
    import importlib

    try:
        factory: Any = importlib.import_module("lcm_cli.engine.summarize.factory")
    except ImportError:  # the factory lands with the summarizer work
        raise LcmError(
            "SUMMARIZER_UNAVAILABLE",
            "No summarizer is installed in this build; dry runs work, --apply needs one.",
        ) from None
    summarizer: Summarizer = factory.build_summarizer(ctx.effective, dict(ctx.env))
    return summarizer


def _exclusion(ctx: Context, row: Any) -> str | None:
    """``excluded``, ``stateless`` or None for the conversation's session (§1.3)."""
    return SessionPolicy.from_config(ctx.effective).exclusion(row["session_id"], row["session_key"])


def _conversation(ctx: Context, req: Request) -> Any:
    assert req.selector is not None
    return find_conversation(ctx, req.selector)


# What a dry run copies: every row of one conversation, table by table.
_BY_CONVERSATION = "conversation_id = ?"
_BY_MESSAGE = "message_id IN (SELECT message_id FROM src.messages WHERE conversation_id = ?)"
_BY_SUMMARY = "summary_id IN (SELECT summary_id FROM src.summaries WHERE conversation_id = ?)"
_COPY = (
    ("conversations", _BY_CONVERSATION),
    ("messages", _BY_CONVERSATION),
    ("message_parts", _BY_MESSAGE),
    ("summaries", _BY_CONVERSATION),
    ("summary_messages", _BY_SUMMARY),
    ("summary_parents", _BY_SUMMARY),
    ("context_items", _BY_CONVERSATION),
)


def _conversation_copy(path: str, conversation_id: int) -> Any:
    """An in-memory database holding one conversation, for dry runs that must not touch the file.

    The copy has the current schema (an older file's rows fit: only shared columns are
    copied) and only this conversation's rows, so a dry run costs memory in proportion
    to the conversation, not to the whole database.
    """
    from lcm_cli.engine.store import Store

    target = sqlite3.connect("file::memory:", uri=True, isolation_level=None)
    try:
        schema.migrate(target)
        source = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
        target.execute("ATTACH DATABASE ? AS src", (source,))
        present = {r[0] for r in target.execute("SELECT name FROM src.sqlite_master WHERE type = 'table'")}
        for table, where in _COPY:
            if table not in present:
                continue
            mine = [r[1] for r in target.execute(f"PRAGMA main.table_info({table})")]
            theirs = {r[1] for r in target.execute(f"PRAGMA src.table_info({table})")}
            columns = ", ".join(c for c in mine if c in theirs)
            target.execute(
                f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM src.{table} WHERE {where}",
                (conversation_id,),
            )
        target.execute("DETACH DATABASE src")
        target.execute("PRAGMA foreign_keys = ON")
        return Store(target, Path(path))
    except BaseException:
        target.close()
        raise


def _option_int(req: Request, name: str) -> int | None:
    value = (req.extra or {}).get(name)
    return value if isinstance(value, int) else None


def _snapshot(compactor: Any) -> dict[str, Any]:
    items = compactor.items()
    return {
        "contextItems": len(items),
        "summaryItems": sum(1 for i in items if not i.is_message),
        "tokens": ci.stored_context_tokens(items),
        "rawTokensOutsideTail": compactor.raw_tokens_outside_tail(items),
    }


@operation(
    "session.compact",
    summary="Compact a conversation: leaf passes, then condensation (dry run unless --apply).",
)
def compact(ctx: Context, req: Request) -> Result:
    """Run the compaction routing for one conversation; a dry run works on a copy."""
    from lcm_cli.engine.compaction import Compactor, Settings

    extra = req.extra or {}
    target = extra.get("target") or "budget"
    if target not in TARGETS:
        raise invalid_argument(
            f"Invalid --target value {target!r}: expected budget or threshold.", {"value": target}
        )
    row = _conversation(ctx, req)
    apply = bool(extra.get("apply"))
    settings = Settings.from_effective(ctx.effective)
    budget = settings.budget(_option_int(req, "token_budget"))
    base = {
        "conversation": identity_of(row),
        "dryRun": not apply,
        "tokenBudget": budget,
        "threshold": settings.threshold(budget),
        "target": target,
    }
    excluded = _exclusion(ctx, row)
    if excluded:
        reason = "session excluded" if excluded == "excluded" else "stateless session"
        return Result({**base, "ok": True, "compacted": False, "reason": reason, "passes": [], "skipped": []})
    summarizer: Summarizer = configured_summarizer(ctx) if apply else PlanningSummarizer()
    # A real run holds the session's in-process writer lock (one writer per session in a
    # warm `lcm serve`) and uses the context's store; a dry run works on its own copy.
    with ExitStack() as stack:
        if apply:
            stack.enter_context(session_lock(queue_key(row["session_id"], row["session_key"])))
            store = ctx.store()
        else:
            store = _conversation_copy(ctx.database_path, row["conversation_id"])
            stack.callback(store.close)
        compactor = Compactor(store, row["conversation_id"], ctx.effective, summarizer)
        before = _snapshot(compactor)
        outcome = compactor.compact(
            token_budget=budget,
            target=target,
            force=bool(extra.get("force")),
            # An operator's `lcm compact` is a manual compaction; a host passes --auto.
            manual=not extra.get("auto"),
            current_token_count=_option_int(req, "current_token_count"),
        )
        after = _snapshot(compactor)
    data = {**base, "summarizer": summarizer.model, "before": before, "after": after, **outcome}
    if not outcome["ok"] and outcome.get("failure"):
        raise LcmError(
            "SUMMARIZER_FAILED",
            f"The summarizer failed ({outcome['failure']}); passes before the failure were kept, "
            "the failed one wrote nothing. Check the summarizer settings (`lcm config show`) and retry.",
            data,
        )
    return Result(data)


@operation(
    "context.assemble",
    summary="The context the model would see: summaries as XML, then the fresh tail, within a budget.",
)
def assemble(ctx: Context, req: Request) -> Result:
    """Assemble one conversation's context (read-only)."""
    from lcm_cli.engine.assembly import assemble as assemble_context

    row = _conversation(ctx, req)
    extra = req.extra or {}
    base = {"conversation": identity_of(row)}
    if _exclusion(ctx, row) == "excluded":
        # The host would pass its live messages straight through; the CLI has none.
        return Result(
            {
                **base,
                "messages": [],
                "estimatedTokens": 0,
                "systemPromptAddition": None,
                "reason": "session excluded",
            }
        )
    result = assemble_context(
        ctx.db,
        row["conversation_id"],
        ctx.effective,
        token_budget=_option_int(req, "token_budget"),
        prompt=extra.get("prompt"),
    )
    return Result({**base, **result})


@operation(
    "session.maintain",
    summary="Drain a conversation's deferred compaction debt (the host's maintain step).",
)
def maintain(ctx: Context, req: Request) -> Result:
    """Run pending compaction debt now; ``--force`` ignores an active retry backoff."""
    from lcm_cli.engine.compaction import Compactor, drain_debt

    row = _conversation(ctx, req)
    extra = req.extra or {}
    base = {"conversation": identity_of(row)}
    excluded = _exclusion(ctx, row)
    if excluded:
        reason = "session excluded by pattern" if excluded == "excluded" else "stateless session"
        return Result({**base, "changed": False, "reason": reason})
    if not ctx.probe.has_table("conversation_compaction_maintenance"):
        return Result({**base, "changed": False, "reason": "no deferred compaction debt"})
    pending = ctx.query_one(
        "SELECT pending, running FROM conversation_compaction_maintenance WHERE conversation_id = ?",
        (row["conversation_id"],),
    )
    if pending is None or not (pending["pending"] or pending["running"]):
        return Result({**base, "changed": False, "reason": "no deferred compaction debt"})
    summarizer = configured_summarizer(ctx)
    with session_lock(queue_key(row["session_id"], row["session_key"])):
        compactor = Compactor(ctx.store(), row["conversation_id"], ctx.effective, summarizer)
        outcome = drain_debt(
            compactor, token_budget=_option_int(req, "token_budget"), force=bool(extra.get("force"))
        )
    return Result({**base, **outcome})
