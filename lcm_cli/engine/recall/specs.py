"""The operation specs of recall: grep, describe, expand, export, expand-query and the model's recall tools.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import Fleet, OpSpec
from lcm_cli.engine.core.render_hints import Render, Text
from lcm_cli.engine.core.spec_parts import (
    NO_HISTORY,
    RECORDS,
    SELECTOR,
    TIME_FILTERS,
    WHEN_HELP,
    WHEN_METAVARS,
)

SPECS: dict[str, OpSpec] = {
    "grep": OpSpec(
        "lcm_cli.engine.recall.grep",
        SELECTOR
        + TIME_FILTERS
        + (
            "mode",
            "scope",
            "file_id",
            "all_conversations",
            "sort",
            "limit",
            "cursor",
            "deadline_ms",
            "scan_limit",
        ),
        args=("pattern",),
        summary="Search messages, summaries or large files by regex or full text; meta says what ran.",
        help=(
            "Search messages, summaries or large files; meta says what ran and if it is complete.\n\n"
            "--session-key searches the whole session family (active and archived conversations)."
        ),
        example='lcm grep "deploy failed" --mode full_text --session-key agent:main:main',
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
            **WHEN_HELP,
        },
        render=Render(rows=RECORDS.rows, meta=("complete", "truncatedBy")),
        metavars=WHEN_METAVARS,
        items="hits",
        fleet=Fleet("list", order="timestamp", ranked_by="sort"),
    ),
    "describe": OpSpec(
        "lcm_cli.engine.recall.describe",
        SELECTOR + ("all_conversations", "max_bytes", "max_tokens", "cursor"),
        args=("item_id",),
        summary="One summary (metadata, DAG neighbours, source ids) or large file (metadata, content).",
        help=(
            "Describe one summary (sum_…) or large file (file_…): metadata, links, content.\n\n"
            "A summary shows its time range, parents, children, source message ids and file ids; a "
            "file its metadata, exploration summary and content up to --max-bytes."
        ),
        example="lcm describe sum_1b2c3d4e5f607182 --max-tokens 800",
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
        },
        render=RECORDS,
        caps_output=True,
    ),
    "expand": OpSpec(
        "lcm_cli.engine.recall.expand",
        SELECTOR + ("all_conversations", "max_tokens", "cursor"),
        args=("summary_id",),
        summary="Walk a summary down the DAG to its source messages, in order, within a token cap.",
        help=(
            "A summary's source messages, in order, within a token cap (default maxExpandTokens).\n\n"
            "Reports what was left out and a cursor that continues exactly there."
        ),
        example="lcm expand sum_1b2c3d4e5f607182 --max-tokens 2000",
        param_help={
            "summary_id": "The summary to expand.",
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
        },
        render=RECORDS,
        items="messages",
        caps_output=True,
    ),
    "export": OpSpec(
        "lcm_cli.engine.recall.export",
        SELECTOR + ("to", "out", "include_summaries"),
        needs_selector=True,
        summary="Export one conversation's messages as Markdown or a re-importable JSONL transcript.",
        help=(
            "Export one conversation's raw messages as Markdown or a JSONL transcript.\n\n"
            "The JSONL form re-imports with `lcm migrate-sessions --file` to the same messages."
        ),
        example="lcm export --session-key agent:main:main --to jsonl --out main.jsonl",
        param_help={
            "out": "Write here (must not exist); default: the document on stdout.",
        },
        outputs={"out": "file"},
        render=RECORDS,
    ),
    "expand.query": OpSpec(
        "lcm_cli.engine.recall.expand_query",
        SELECTOR + ("all_conversations", "query", "summary_id", "max_tokens", "token_cap", "timeout_ms"),
        args=("prompt",),
        words=("expand-query",),
        summary="Answer a prompt from expanded summaries (found by --query or given by --summary-id).",
        help=(
            "Answer PROMPT from expanded summaries with the configured model.\n\n"
            "Without a model it returns the ranked, expanded evidence and says no answer was "
            "generated."
        ),
        example='lcm expand-query "Why did the deploy fail?" --query deploy --session-key agent:main:main',
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
            "max_tokens": "Hard cap on the answer in tokens (default 2000); a longer reply is cut.",
        },
        render=RECORDS,
    ),
    # The OpenClaw model's recall tools (lossless-claw's names and parameters), one call each.
    "recall.tool": OpSpec(
        "lcm_cli.engine.recall.tools",
        ("tool", "arguments", "session_key", "session_id"),
        words=("tool",),
        summary="Run one agent tool call (lcm_grep, lcm_describe, lcm_expand, lcm_expand_query) as text.",
        help=(
            "Run one call of an agent tool and answer the text the model reads.\n\n"
            "The tools are lossless-claw's lcm_grep, lcm_describe, lcm_expand and lcm_expand_query, "
            "with its parameter names; they search the calling session's conversations unless "
            "the arguments name a conversationId or set allConversations. A mistake in the "
            "arguments is an answer with isError true, not a failure."
        ),
        example=(
            'lcm tool --tool lcm_grep --arguments \'{"pattern": "flaky", "mode": "full_text"}\' '
            "--session-key agent:main:main"
        ),
        param_help={
            "session_key": "The calling session's key: its session family is the default scope.",
            "session_id": "The calling session's runtime id (its active conversation wins over a stale key).",
        },
        render=Render(text=Text("text", "# {tool}")),
    ),
    "recall.tool_specs": OpSpec(
        "lcm_cli.engine.recall.tools",
        words=("tool", "specs"),
        opens_db=False,
        resolves_paths=False,
        summary="The agent tools' names, labels, descriptions and parameter JSON Schemas.",
        help=(
            "The four agent tools as data: name, label, description and parameter JSON Schema.\n\n"
            "The OpenClaw plugin registers its tools from this list."
        ),
        example="lcm tool specs --pretty",
        items="tools",
        unscoped=NO_HISTORY,
    ),
}
