"""The records summary surgery answers with: what each item of its lists holds, by name and type.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the operations build plain
dicts, type checkers hold them to these records, and nothing imports this module at run
time. :data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, NotRequired


class ContextItem(TypedDict):
    """An item of the context `lcm summaries dissolve` leaves: its new ordinal, what it holds
    (a message or a summary, with the summary's kind, depth and tokens; None for a message),
    and whether the dissolve restored it."""

    ordinal: int
    itemType: str  # message | summary
    messageId: int | None
    summaryId: str | None
    kind: str | None
    depth: int | None
    tokenCount: int | None
    restored: bool


class RewriteEntry(TypedDict):
    """An item of `lcm summaries rewrite`: one summary rebuilt from its sources, bottom-up.

    ``status``: ``would-rewrite`` (dry run), ``rewritten``, ``unchanged``, ``failed`` or
    ``skipped``, with ``reason`` when not done; ``level`` is the summarizer's escalation
    level; ``diff`` a unified diff of the old and new text (empty when none).
    """

    summaryId: str
    conversationId: int
    kind: str
    depth: int
    cascaded: bool  # a summary built on a target, rewritten because its sources change
    status: str
    oldTokenCount: int
    newTokenCount: int
    level: str | None
    reason: str | None
    diff: str
    error: NotRequired[dict[str, Any]]  # a failed entry's error object (code, message)
    consumersUpdated: NotRequired[int]  # a rewritten entry's: summaries that consume it


class PlannedRewrite(RewriteEntry):
    """A rewrite entry while it is planned and applied: the summary's row, and the new text
    it would get; both are taken out before the answer is returned."""

    row: NotRequired[Any]
    new: NotRequired[str]


class CopiedSummary(TypedDict):
    """An item of `lcm summaries transplant`: a summary copied into the target conversation,
    its new id once applied (None in a dry run), and whether its copy enters the context."""

    summaryId: str
    newSummaryId: str | None
    kind: str
    depth: int
    tokenCount: int
    inContext: bool
    contentSha256: str


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {
    "summaries.dissolve": ContextItem,
    "summaries.rewrite": RewriteEntry,
    "summaries.transplant": CopiedSummary,
}
