"""What reading a transcript yields: its header, skipped lines, message rows and scan
candidates, and the role and entry-type sets every reader step shares.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lcm_cli.engine.core.identity import entry_hash_canonical as _entry_hash


class Header(NamedTuple):
    """The transcript's identity: the session id it imports under, and its header id."""

    session_id: str
    header_id: str | None


class SkippedLine(NamedTuple):
    """One line that was not imported (or was repaired), and why."""

    line: int
    reason: str


class TranscriptMessage(NamedTuple):
    """One message ready to be written as a ``messages`` row with its parts."""

    entry_id: str | None
    line: int
    role: str
    content: str
    token_count: int
    created_at: str | None
    identity_hash: str
    canonical: str  # the content as the identity and entry hashes see it
    sender_metadata: str | None
    parts: list[dict[str, str | None]]
    byte_size: int

    @property
    def entry_hash(self) -> str:
        """The bootstrap checkpoint's hash of this message (computed on demand: an import
        needs it for the last message only)."""
        return _entry_hash(self.role, self.canonical)

    def as_row(self) -> dict[str, Any]:
        """The row mapping ``Store.add_messages`` accepts (``created_at`` None means now)."""
        return {
            "role": self.role,
            "content": self.content,
            "token_count": self.token_count,
            "created_at": self.created_at,
            "identity_hash": self.identity_hash,
            "transcript_entry_id": self.entry_id,
            "sender_metadata": self.sender_metadata,
            "parts": self.parts,
        }


class RawEntry(NamedTuple):
    """One chosen message object as read from the file, with its envelope facts."""

    message: dict[str, Any]
    entry_id: str | None
    envelope_timestamp: str | None
    line: int
    byte_size: int


class Candidate(NamedTuple):
    """A message the import would write, as the scan knows it (nothing is re-read).

    ``position`` is its place in import order (0 .. ``candidate_count`` - 1); ``entry_id``,
    ``line`` and ``byte_size`` are those of its :class:`TranscriptMessage`, and ``parts``
    is ``len(message.parts)``.
    """

    position: int
    entry_id: str | None
    line: int
    byte_size: int
    parts: int


class PathEntry(NamedTuple):
    """One record of the active path as read back from the file (every kind, not only messages).

    ``entry`` is the parsed JSON object (``JSON.parse`` semantics, see
    :mod:`lcm_cli.engine.core.jscompat`); ``is_message`` is True for message-shaped records
    (persistable or not), False for the other id-bearing entries (``model_change``,
    ``session_info``, ``compaction``, ...).
    """

    line: int
    entry: dict[str, Any]
    is_message: bool


PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
# scan_transcript(keep_parsed=True) keeps the parsed messages of files up to this size
# (their objects take several times the file's bytes).
KEEP_PARSED_MAX_BYTES = 2 << 20
STRUCTURAL_ENTRY_TYPES = frozenset(
    {
        "session",
        "model_change",
        "thinking_level_change",
        "session_info",
        "compaction",
        "custom",
        "custom_message",
        "label",
        "branch_summary",
    }
)
