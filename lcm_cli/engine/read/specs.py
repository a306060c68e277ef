"""The operation specs of reading the history: status, conversations, messages, summaries.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import Fleet, OpSpec
from lcm_cli.engine.core.render_hints import Render
from lcm_cli.engine.core.spec_parts import (
    CONVERSATION_ROWS,
    MESSAGE_ROWS,
    RECORDS,
    SELECTOR,
    SUMMARY_ROWS,
    TIME_FILTERS,
)

SPECS: dict[str, OpSpec] = {
    "status": OpSpec(
        "lcm_cli.engine.read.status",
        summary="Database-wide counts, token totals, coverage and maintenance state.",
        help="Database-wide counts, token totals, time coverage and maintenance state.",
        example="lcm status --pretty",
        fleet=Fleet("summary", totals=("databaseSizeBytes", "status")),
    ),
    "conversations.list": OpSpec(
        "lcm_cli.engine.read.conversations",
        ("limit", "cursor"),
        summary="List conversations, most recently updated first, with aggregate figures.",
        help="Conversations, most recently updated first, with message, summary and tail figures.",
        example="lcm conversations list --limit 20",
        render=Render(rows=(CONVERSATION_ROWS,), labels=(("items", "Conversations"),)),
        items="items",
        fleet=Fleet("list", order="updatedAt"),
    ),
    "conversations.show": OpSpec(
        "lcm_cli.engine.read.conversations",
        SELECTOR,
        needs_selector=True,
        summary="One conversation's figures, summary depths, context, maintenance and bootstrap state.",
        help="One conversation: figures, summary depths, context, telemetry, maintenance, bootstrap.",
        example="lcm conversations show --session-key agent:main:main",
        render=RECORDS,
    ),
    "messages.list": OpSpec(
        "lcm_cli.engine.read.messages",
        SELECTOR + TIME_FILTERS + ("limit", "cursor", "role", "include_content", "max_tokens"),
        needs_selector=True,
        summary="Page through a conversation's messages, newest first, with role and time filters.",
        help="A conversation's messages, newest first, with previews (or full content).",
        example="lcm messages list --conversation-id 1 --role user --recency 2d",
        render=Render(rows=(MESSAGE_ROWS,), labels=(("items", "Messages"),)),
        items="items",
        caps_output=True,
    ),
    "messages.tail": OpSpec(
        "lcm_cli.engine.read.messages",
        SELECTOR + ("count",),
        needs_selector=True,
        summary="The protected fresh tail: the newest raw messages in the conversation's context.",
        help="The fresh tail: newest raw messages in context, oldest first, with full content.",
        example="lcm messages tail --session-key agent:main:main --count 10",
        render=Render(rows=(MESSAGE_ROWS,)),
        items="messages",
    ),
    "summaries.list": OpSpec(
        "lcm_cli.engine.read.summaries",
        SELECTOR + TIME_FILTERS + ("limit", "cursor", "include_content", "depth", "kind"),
        summary="Page through summaries (one conversation or all), newest coverage first.",
        help="Summaries (one conversation, or all), newest coverage first.",
        example="lcm summaries list --conversation-id 1 --kind condensed",
        render=Render(rows=(SUMMARY_ROWS,), labels=(("items", "Summaries"),)),
        items="items",
    ),
    "summaries.show": OpSpec(
        "lcm_cli.engine.read.summaries",
        ("max_tokens",),
        args=("summary_id",),
        summary=(
            "One summary with full content, the summaries that consume it, its sources and source messages."
        ),
        help=(
            "One summary with full content, its parents (summaries that consume it), its children "
            "(its source summaries) and its source messages."
        ),
        example="lcm summaries show sum_1b2c3d4e5f607182 --format table",
        render=RECORDS,
        caps_output=True,
    ),
}
