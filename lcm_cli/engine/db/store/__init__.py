"""The write store: builds and extends lcm.db files the way lossless-claw writes them.

Used by tests, benchmarks, the example-data builder and any operation that
writes rows. It keeps the invariants of docs/reference/database.md §8: per-conversation
``seq`` and context ``ordinal`` sequences, summary metadata derived from the
sources, DAG links with 0-based ordinals, and the optional FTS tables in step
with their base rows.

Every public write runs in one ``BEGIN IMMEDIATE`` transaction; wrap several
calls in :meth:`Store.transaction` to make them one unit of work.
"""

from __future__ import annotations

from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.context_items import ContextWrites
from lcm_cli.engine.db.store.conversation_state import ConversationStateWrites
from lcm_cli.engine.db.store.conversations import ConversationWrites
from lcm_cli.engine.db.store.focus_briefs import FocusBriefWrites
from lcm_cli.engine.db.store.large_files import LargeFileWrites
from lcm_cli.engine.db.store.messages import MessageWrites
from lcm_cli.engine.db.store.summaries import SummaryWrites


class Store(
    ConversationWrites,
    MessageWrites,
    SummaryWrites,
    ContextWrites,
    LargeFileWrites,
    ConversationStateWrites,
    FocusBriefWrites,
    StoreBase,
):
    """A writable lcm.db: schema migrated, WAL, foreign keys on, explicit transactions."""
