"""The records the recall operations answer with: what each search hit holds, by name and type.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the operations build and print
plain dicts, type checkers hold every builder to its record, and nothing imports this
module at run time. :data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NotRequired


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


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {"grep": GrepHit}
