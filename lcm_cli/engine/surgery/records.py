"""The records summary surgery answers with: what each item of its lists holds, by name and type.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the operations build plain
dicts, type checkers hold them to these records, and nothing imports this module at run
time. :data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict


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


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {"summaries.dissolve": ContextItem}
