"""Which conversations a recall command may read (docs/reference/engine.md §7.1, shell form).

A shell has no "current session", so the scope is always named: ``--conversation-id``
is that conversation only; ``--session-key`` is the whole session family of that key
(the active row and every archived row, active first, newest first);
``--all-conversations`` lifts the filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import ALL_CONVERSATIONS, Param, Request
from lcm_cli.engine.core.suggest import id_kind_hint
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables


class Scope(NamedTuple):
    """The resolved scope: ``conversation_ids`` in scope order, or None for every conversation."""

    kind: str  # "conversation" | "sessionFamily" | "all" | "unscoped"
    conversation_ids: list[int] | None

    def allows(self, conversation_id: int) -> bool:
        """True when a row of ``conversation_id`` may be shown."""
        return self.conversation_ids is None or conversation_id in self.conversation_ids

    def to_dict(self) -> dict[str, Any]:
        """The scope as reported in ``meta.scope``."""
        return {"kind": self.kind, "conversationIds": self.conversation_ids}


def resolve_scope(ctx: Context, req: Request, *, required: bool) -> Scope:
    """Resolve the selector options of ``req`` to a :class:`Scope`.

    ``required``: with no selector and no ``--all-conversations``, MISSING_SELECTOR
    (grep, expand-query); otherwise the scope is "unscoped" (describe, expand by id).
    """
    require_lcm_tables(ctx)
    everything = req[ALL_CONVERSATIONS]
    if req.selector is not None and everything:
        raise LcmError(
            "INVALID_SELECTOR",
            "Use one of --conversation-id, --session-key or --all-conversations, not several.",
        )
    if everything:
        return Scope("all", None)
    if req.selector is None:
        if required:
            raise LcmError(
                "MISSING_SELECTOR",
                "Say where to look: pass --conversation-id <id>, --session-key <key> (its whole "
                "session family) or --all-conversations.",
            )
        return Scope("unscoped", None)
    try:
        row = find_conversation(ctx, req.selector)
    except LcmError as exc:
        hint = id_kind_hint(req.selector.value, "--session-key") if req.selector.kind == "sessionKey" else []
        if exc.code == "CONVERSATION_NOT_FOUND" and hint:
            exc.details = {**exc.details, "suggestions": hint}
            exc.message += f" Did you mean `{hint[0]}`?"
        raise
    if req.selector.kind == "conversationId":
        return Scope("conversation", [row["conversation_id"]])
    return Scope("sessionFamily", session_family(ctx, row))


def session_family(ctx: Context, row: Any) -> list[int]:
    """Every conversation sharing ``row``'s session key (or session id when keyless).

    Ordered active first, then newest ``created_at`` first; ``row`` itself is included.
    """
    probe = ctx.probe
    active = "active DESC, " if probe.has_column("conversations", "active") else ""
    if row["session_key"] is not None:
        column, value = "session_key", row["session_key"]
    else:
        column, value = "session_id", row["session_id"]
    rows = ctx.query(
        f"""SELECT conversation_id FROM conversations WHERE {column} = ?
            ORDER BY {active}julianday(created_at) DESC, conversation_id DESC""",
        (value,),
    )
    ids = [r[0] for r in rows]
    return ids or [row["conversation_id"]]


def summary_not_found(summary_id: str) -> LcmError:
    """SUMMARY_NOT_FOUND for `describe`/`expand`; an id of another kind says which call takes it."""
    details: dict[str, Any] = {"summaryId": summary_id}
    message = f"No summary matched id {summary_id}. Find ids with `lcm grep` or `lcm summaries list`."
    hint = id_kind_hint(summary_id, "SUMMARY_ID")
    if hint:
        details["suggestions"] = hint
        message += f" It looks like another kind of id: try `{hint[0]}`."
    return LcmError("SUMMARY_NOT_FOUND", message, details)


def not_in_scope(kind: str, item_id: str, scope: Scope) -> LcmError:
    """NOT_IN_SCOPE: the item exists but belongs to a conversation outside the scope."""
    return LcmError(
        "NOT_IN_SCOPE",
        f"{kind} {item_id} exists but is not in the requested scope "
        f"({scope.kind} {scope.conversation_ids}). Widen the scope (another --session-key, "
        "--conversation-id, or --all-conversations) or drop the selector.",
        {"id": item_id, "scope": scope.to_dict()},
    )


def choice(req: Request, param: Param[Any], choices: Sequence[str] | None = None) -> str | None:
    """The value of an enumerated option (``--mode``, ``--scope``, ``--sort``, ``--to``), checked
    against ``choices`` (default: its schema's enum): INVALID_ARGUMENT naming the accepted values."""
    value = req[param]
    choices = param.schema["enum"] if choices is None else choices
    if value is not None and value not in choices:
        raise invalid_argument(
            f"Invalid {param.option} value {value!r}: expected one of {', '.join(choices)}.",
            {"value": value},
        )
    return str(value) if value is not None else None
