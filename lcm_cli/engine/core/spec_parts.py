"""Pieces the operation specs of several concepts share: the selector and time options,
the table rows of stored records, and why the agent scope leaves an operation alone."""

from __future__ import annotations

from lcm_cli.engine.core.render_hints import Render, Rows

# The columns a person scans first in a list of records, and those dropped first (least
# important first) when the terminal is narrow; JSON output carries every field.
SUMMARY_ROWS = Rows(
    "summaryId",
    ("summaryId", "kind", "depth", "tokenCount", "coverageAt", "descendantCount", "preview"),
    drop=("descendantCount", "coverageAt", "depth"),
)

MESSAGE_ROWS = Rows(
    "messageId",
    ("messageId", "seq", "role", "tokenCount", "createdAt", "preview", "content"),
    drop=("createdAt", "seq", "tokenCount"),
    text="content",
)

CONVERSATION_ROWS = Rows(
    "sessionId",
    (
        "database",  # a fleet's items only (see Fleet)
        "conversationId",
        "sessionKey",
        "active",
        "title",
        "messageCount",
        "summaryCount",
        "contextTokens",
        "updatedAt",
    ),
    drop=("contextTokens", "summaryCount", "active", "updatedAt", "title"),
)

# Search hits: messages and summaries in one list.
HIT_ROWS = Rows(
    "snippet",
    ("database", "type", "id", "conversationId", "sessionKey", "role", "kind", "timestamp", "snippet"),
    drop=("kind", "role", "timestamp"),
    text="snippet",  # one line per hit (where it is), its snippet below at full width
)

# Lists that may hold any stored record: summaries, messages, conversations, search hits.
RECORDS = Render(rows=(SUMMARY_ROWS, MESSAGE_ROWS, CONVERSATION_ROWS, HIT_ROWS))

TIME_FILTERS = ("after", "before", "between", "recency")

# How lcm's own commands word the time options: one grammar (timefilter.parse_when).
WHEN_HELP = {
    "after": "Inclusive lower bound: a timestamp, a date (2026-07-01) or a duration back (7d).",
    "before": "Exclusive upper bound: a timestamp, a date or a duration back (36h).",
    "between": "Both bounds at once: START..END, each a timestamp, a date or a duration.",
    "recency": "Only since WHEN: a duration (12h, 7d, 2w), a date or a timestamp.",
}

WHEN_METAVARS = {"after": "WHEN", "before": "WHEN", "recency": "WHEN"}

SELECTOR = ("conversation_id", "session_key")

# Why the agent scope (docs/agents.md) leaves an operation alone, said once per kind.
NO_HISTORY = "reads no conversation history"

WHOLE_FILE = (
    "whole-file maintenance run by an operator or the host, never by a model: it sees the whole file "
    "(per-agent database files are its boundary)"
)

HOST_LIFECYCLE = "the host's lifecycle call for the session it names: it reads and writes that session only"
