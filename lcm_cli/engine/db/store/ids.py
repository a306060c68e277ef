"""Identifiers as lossless-claw makes them (database.md §5): identity hashes, part, summary,
file and focus brief ids."""

from __future__ import annotations

import hashlib
import uuid

from lcm_cli.engine.core import identity


def message_identity_hash(role: str, content: str) -> str:
    """lossless-claw's ``identity_hash`` of a stored message (database.md §5).

    Hex SHA-256 of role, a NUL byte, then the content, with user content that opens
    with OpenClaw's "untrusted metadata" blocks canonicalized first
    (:func:`lcm_cli.engine.core.identity.identity_hash`).
    """
    return identity.identity_hash(role, content)


class PartIds:
    """UUID v4 strings for ``message_parts.part_id`` that sort in insertion order.

    The reference uses random v4 UUIDs. Fully random keys land all over the primary-key
    B-tree, so a bulk import touches a different page for every part; here each writer
    draws one random 122-bit UUID and counts upwards from it (version and variant bits
    kept), so consecutive parts share index pages. Every id is still a valid, unique v4
    string: two writers collide only if their random starts fall within a batch of each
    other in a 2^122 space.
    """

    _COUNTER_MASK = (1 << 62) - 1
    _VARIANT = 0b10 << 62

    def __init__(self) -> None:
        start = uuid.uuid4()
        # The high 64 bits (with the version nibble) stay fixed: keep them as text.
        self._prefix = str(start)[:19]
        # The low 64 bits hold the variant (2 bits) and a 62-bit counter; start it in the
        # lower half so it cannot wrap within any plausible number of parts.
        self._counter = (start.int & self._COUNTER_MASK) >> 1

    def next(self) -> str:
        """The next id."""
        self._counter += 1
        low = self._VARIANT | (self._counter & self._COUNTER_MASK)
        return f"{self._prefix}{low >> 48:04x}-{low & 0xFFFFFFFFFFFF:012x}"

    def reserve(self, count: int) -> tuple[str, int]:
        """Take the next ``count`` ids for SQL to spell: ``(prefix, first counter)``.

        :data:`PART_ID_SQL` spells the id of counter ``first + k`` exactly as
        :meth:`next` would have (a bulk copy then builds no id strings in Python).
        """
        first = self._counter + 1
        self._counter += count
        return self._prefix, first


#: The part id of counter value ``:c`` with prefix ``:prefix`` (see PartIds.reserve), as
#: an SQL expression over named parameters: the variant bits 10 over a 62-bit counter.
PART_ID_SQL = (
    "printf('%s%04x-%012x', {prefix}, 32768 + ((({c}) & 4611686018427387903) >> 48), ({c}) & 281474976710655)"
)


def new_summary_id(content: str) -> str:
    """A fresh summary id: ``sum_`` + 16 hex digits of SHA-256(content + random UUID)."""
    return "sum_" + hashlib.sha256((content + str(uuid.uuid4())).encode()).hexdigest()[:16]


def new_file_id() -> str:
    """A fresh large-file id: ``file_`` + the first 16 hex digits of a random UUID."""
    return "file_" + uuid.uuid4().hex[:16]


def new_focus_brief_id() -> str:
    """A fresh focus brief id: ``focus_`` + 16 hex digits (8 random bytes)."""
    return "focus_" + uuid.uuid4().hex[:16]
