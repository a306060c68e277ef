"""The records the recall operations answer with: search hits and expanded messages, by name and type.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the operations build and print
plain dicts, type checkers hold every builder to its record, and nothing imports this
module at run time. :data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.read.records import SummaryPlace

if TYPE_CHECKING:
    from typing import Any, Literal, NotRequired

    from lcm_cli.engine.read.records import SummaryItem


class GrepHit(TypedDict):
    """An item of `lcm grep`: a message, summary or large file that matched, and its snippet.

    Which fields a hit has beyond the common ones follows its ``type``: a message's ``seq``
    and ``role``; a summary's ``kind``, ``depth`` and ``tokenCount``; a file's ``fileName``,
    ``line``, ``byteOffset``, ``match`` and ``scanTruncated``. ``timestamp`` is a message's
    creation time, a summary's coverage time (``latest_at``, else ``created_at``) or a
    file's storage time.
    """

    type: str  # message | summary | file
    id: int | str  # a message id; a summary id (sum_…) or file id (file_…)
    conversationId: int
    sessionKey: str | None  # the conversation's, filled in once the page is chosen
    seq: NotRequired[int]
    role: NotRequired[str]
    kind: NotRequired[str]
    depth: NotRequired[int]
    tokenCount: NotRequired[int]
    fileName: NotRequired[str | None]
    timestamp: str
    line: NotRequired[int]
    byteOffset: NotRequired[int]
    match: NotRequired[str]
    snippet: str
    scanTruncated: NotRequired[bool]
    rank: NotRequired[float]  # the full-text score, when --sort relevance ranked the hit


class DagMessage(TypedDict):
    """A raw message under a summary, in summarized order, without its text: which leaf
    summary it was summarized into (``leafSummaryId``)."""

    messageId: int
    seq: int
    role: str
    tokenCount: int
    createdAt: str
    leafSummaryId: str


class ExpandedMessage(DagMessage):
    """An item of `lcm expand`: a source message with its text. A page that starts inside a
    message says where (``contentOffset``); a message alone over the cap is cut
    (``contentCut``) and the cursor continues inside it."""

    content: str
    contentOffset: NotRequired[int]
    contentCut: NotRequired[bool]


class ExpandSummary(SummaryPlace):
    """The summary `lcm expand` expands: its place in the DAG, time range and source tokens."""

    sourceMessageTokenCount: int


class ExpandTotals(TypedDict):
    """Every source message under the summary, and their tokens."""

    messages: int
    tokens: int


class ExpandWindow(TypedDict):
    """Where this page starts among the source messages, and how many it returns."""

    offset: int
    returned: int


class ExpandPage(TypedDict):
    """One page of a summary's source messages within the token cap, and the budget report."""

    messages: list[ExpandedMessage]
    total: ExpandTotals
    window: ExpandWindow
    budget: dict[str, Any]


class Expansion(ExpandPage):
    """`lcm expand ID`: the summary, then one page of its source messages."""

    summary: ExpandSummary


class SummaryLink(TypedDict):
    """A summary's neighbour in the DAG: which summary, its kind, depth and tokens."""

    summaryId: str
    kind: str
    depth: int
    tokenCount: int


class TimeRange(TypedDict):
    """The time a summary covers (its messages' earliest and latest)."""

    earliestAt: str | None
    latestAt: str | None


class Subtree(TypedDict):
    """Everything beneath a summary: its summaries, deepest level, source messages, and what
    expanding it costs without and with the messages."""

    summaries: int
    maxLevel: int
    sourceMessages: int
    summaryTokens: int
    withMessagesTokens: int


class ContentWindow(TypedDict):
    """Which characters of a text this page shows: ``chars`` from ``offset`` of ``totalChars``."""

    offset: int
    chars: int
    totalChars: int


class SummaryDescription(TypedDict):
    """`lcm describe sum_…`: the summary (with its text), its neighbours, its subtree and the
    raw message ids beneath it. ``contentWindow`` and ``budget`` come with `--cursor` or
    `--max-tokens`."""

    type: Literal["summary"]
    summary: SummaryItem
    timeRange: TimeRange
    descendantCount: int
    parents: list[SummaryLink]
    children: list[SummaryLink]
    subtree: Subtree
    sourceMessageIds: list[int]
    fileIds: list[str]
    contentWindow: NotRequired[ContentWindow]
    budget: NotRequired[dict[str, Any]]


class LargeFile(TypedDict):
    """A large file stored out of a message: ids, name, type, size and where it is stored."""

    fileId: str
    conversationId: int
    fileName: str | None
    mimeType: str | None
    byteSize: int | None
    lineCount: int | None  # None in files older than the column
    storageUri: str
    createdAt: str
    explorationSummary: str | None


class FileDescription(TypedDict):
    """`lcm describe file_…`: the file and its text, capped by `--max-bytes` (None with a
    ``note`` for binary or unreadable content). ``contentWindow`` and ``budget`` come with
    `--cursor` or `--max-tokens`."""

    type: Literal["file"]
    file: LargeFile
    content: str | None
    contentSource: str | None  # file | message: where the text was read
    contentCut: bool
    maxBytes: int
    note: str | None
    contentWindow: NotRequired[ContentWindow]
    budget: NotRequired[dict[str, Any]]


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {"grep": GrepHit, "expand": ExpandedMessage}
