"""The records the read operations answer with: what each item of a list holds, by name and type.

They are ``TypedDict`` s: the operations still build and print plain dicts (the JSON is
what it was), and type checkers hold every builder to its record. Nothing imports this
module at run time (the operations import it under ``TYPE_CHECKING``), so typing costs
no start-up. ``NotRequired`` marks a field that only some calls carry.

:data:`ITEM_RECORDS` says which operation's list items each record types; a test holds
every column an operation's render hints name (``OpSpec.render``) to its record's fields.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, NotRequired


class ConversationIdentity(TypedDict):
    """Who a conversation is: its ids, session key, state and times (``active`` a boolean)."""

    conversationId: int
    sessionId: str
    sessionKey: str | None
    active: bool
    archivedAt: str | None
    title: str | None
    bootstrappedAt: str | None
    createdAt: str
    updatedAt: str


class ConversationItem(ConversationIdentity):
    """An item of `conversations list` (and `conversations show`'s conversation): its identity,
    then its message, summary, context and fresh-tail figures."""

    messageCount: int
    messageTokens: int
    earliestMessageAt: str | None
    latestMessageAt: str | None
    summaryCount: int
    summaryTokens: int
    summarizedSourceTokens: int
    earliestSummaryAt: str | None
    latestSummaryAt: str | None
    maxSummaryDepth: int | None
    contextItems: int
    contextTokens: int
    freshTailMessages: int
    freshTailTokens: int


class SummaryDepth(TypedDict):
    """Summary count and tokens of one (kind, depth) group."""

    kind: str
    depth: int
    count: int
    tokens: int


class ContextByType(TypedDict):
    """A conversation's context items of one type: how many, and their stored tokens."""

    itemType: str
    count: int
    tokens: int


class FocusBriefs(TypedDict):
    """A conversation's focus briefs: how many, and the newest active one (its row, or None)."""

    count: int
    activeBrief: dict[str, Any] | None


class LargeFileTotals(TypedDict):
    """A conversation's large files: how many, their bytes, and when the newest was stored."""

    count: int
    bytes: int
    latestAt: str | None


class ConversationDetail(TypedDict):
    """`conversations show`: the conversation, its summary groups and context, and the state
    rows of the optional tables (None when the file lacks the table or has no row)."""

    conversation: ConversationItem
    summaryDepths: list[SummaryDepth]
    context: list[ContextByType]
    telemetry: dict[str, Any] | None
    maintenance: dict[str, Any] | None
    bootstrap: dict[str, Any] | None
    focusBriefs: FocusBriefs | None
    largeFiles: LargeFileTotals | None


class ContentCut(TypedDict):
    """How much of a text ``--max-tokens`` kept: ``chars`` of ``totalChars``."""

    chars: int
    totalChars: int


class MessageItem(TypedDict):
    """An item of `messages list` and `messages tail`: a stored message, its preview, and its
    ``content`` when asked for (`--include-content`; always in the tail)."""

    messageId: int
    conversationId: int
    seq: int
    role: str
    tokenCount: int
    createdAt: str
    largeContent: str | None
    preview: str
    content: NotRequired[str]
    # Only on a page cut by --max-tokens whose first message alone is over the cap.
    contentTruncated: NotRequired[ContentCut]


class MessagePage(TypedDict):
    """`messages list`: the conversation, one page of its messages, and the budget report
    when `--max-tokens` fitted the page."""

    conversation: ConversationIdentity
    items: list[MessageItem]
    budget: NotRequired[dict[str, Any]]


class TailLimits(TypedDict):
    """The fresh tail's bounds: at most ``count`` messages and ``maxTokens`` tokens (None: no cap)."""

    count: int
    maxTokens: int | None


class TailSelection(TypedDict):
    """What the fresh tail holds: messages, tokens, and its first and last ``seq``."""

    messages: int
    tokens: int
    firstSeq: int | None
    lastSeq: int | None


class MessageTotals(TypedDict):
    """A conversation's stored messages and their tokens."""

    messages: int
    tokens: int


class MessageTail(TypedDict):
    """`messages tail`: the fresh tail with full content, oldest first, and the totals."""

    conversationIdentity: ConversationIdentity
    limits: TailLimits
    selected: TailSelection
    conversation: MessageTotals
    messages: list[MessageItem]


class SummaryPlace(TypedDict):
    """Where a summary stands: its id, conversation, place in the DAG, size and time range."""

    summaryId: str
    conversationId: int
    kind: str
    depth: int
    tokenCount: int
    earliestAt: str | None
    latestAt: str | None


class SummaryItem(SummaryPlace):
    """An item of `summaries list` (and a node of `summaries show`, `describe`): a stored summary,
    its link counts and preview, and its ``content`` when asked for."""

    coverageAt: str
    descendantCount: int
    descendantTokenCount: int
    sourceMessageTokenCount: int
    createdAt: str
    fileIds: list[str]
    model: str | None  # None in files older than the column
    parentCount: int
    childCount: int
    sourceMessageCount: int
    preview: str
    content: NotRequired[str]


class SummaryPage(TypedDict):
    """`summaries list`: one page of summaries, and the conversation it was narrowed to (or None)."""

    conversationId: int | None
    items: list[SummaryItem]


class SourceMessage(TypedDict):
    """A message a leaf summary was made from, in the summary's order."""

    messageId: int
    seq: int
    role: str
    tokenCount: int
    createdAt: str
    content: str


class SummaryDetail(TypedDict):
    """`summaries show`: a summary with its neighbours in the DAG and its source messages."""

    summary: SummaryItem
    parents: list[SummaryItem]
    children: list[SummaryItem]
    sourceMessages: list[SourceMessage]
    budget: NotRequired[dict[str, Any]]


class ConversationCounts(TypedDict):
    """How many conversations the file holds, and how many are active."""

    total: int
    active: int


class MessageStatus(TypedDict):
    """All stored messages: count, tokens and the raw-text time range."""

    count: int
    tokens: int
    earliestAt: str | None
    latestAt: str | None


class SummaryStatus(TypedDict):
    """All summaries: count, tokens, the tokens they cover, time range, and per (kind, depth)."""

    count: int
    tokens: int
    sourceMessageTokens: int
    earliestAt: str | None
    latestAt: str | None
    byDepth: list[SummaryDepth]


class ContextStatus(TypedDict):
    """All context items and their stored tokens."""

    items: int
    tokens: int


class MaintenanceCounts(TypedDict):
    """Conversations whose compaction maintenance is pending, running, or last failed."""

    pending: int
    running: int
    failed: int


class GlobalStatus(TypedDict):
    """The ``status`` object of `lcm status`: the whole file's figures (maintenance None when
    the file has no maintenance table)."""

    conversations: ConversationCounts
    messages: MessageStatus
    summaries: SummaryStatus
    context: ContextStatus
    maintenance: MaintenanceCounts | None


class FreshTailSettings(TypedDict):
    """The effective fresh-tail settings: ``freshTailCount`` as configured (a number such as
    1e300 means every message), and the token cap (None: none)."""

    count: float | None
    maxTokens: int | None


class StatusData(TypedDict):
    """`lcm status`: the version, the file's size, the fresh-tail settings and the figures."""

    version: str
    databaseSizeBytes: int
    freshTail: FreshTailSettings
    status: GlobalStatus


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {
    "conversations.list": ConversationItem,
    "messages.list": MessageItem,
    "messages.tail": MessageItem,
    "summaries.list": SummaryItem,
}
