"""The operation specs of assembly: the context the model sees.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.render_hints import Fold, Render, Transcript
from lcm_cli.engine.core.spec_parts import SELECTOR

_CONTEXT = Render(
    transcript=Transcript(
        field="messages",
        title="{command}: what the model sees",
        # What a person checks; the engine's internal counts stay in `--format json` (details).
        totals=(
            ("messages", "#messages"),
            ("estimatedTokens", "estimatedTokens"),
            ("tokenBudget", "details.tokenBudget"),
            ("summaryItems", "details.summaryItems"),
            ("freshTailItems", "details.freshTailItems"),
            ("droppedItems", "details.droppedItems"),
            ("reason", "reason"),
        ),
        # An assembled summary is a user message wrapping `<summary …><content>…</content>`.
        fold=Fold(
            role="user",
            prefix="<summary ",
            pattern=r'<summary id="(?P<id>[^"]*)"[^>]* depth="(?P<depth>\d+)".*?<content>(?P<content>.*)</content>',
            shown_role="summary d{depth}",
            shown_text="{id}: {content}",
        ),
    )
)

SPECS: dict[str, OpSpec] = {
    "context.assemble": OpSpec(
        "lcm_cli.engine.assembly.ops",
        SELECTOR
        + (
            "session_id",
            "token_budget",
            "prompt",
            "messages",
            "available_tools",
            "model",
            "runtime_settings",
            "max_tokens",
        ),
        words=("context", "show"),
        summary="The context the model would see: summaries as XML, then the fresh tail, within a budget.",
        help=(
            "The assembled context exactly as the model would see it, with token totals.\n\n"
            "--max-tokens N prints only the newest messages that fit in N tokens (data.truncated "
            "says how many were left out); estimatedTokens stays the whole context's size."
        ),
        example="lcm context show --conversation-id 1 --token-budget 32000 --max-tokens 4000 --format table",
        param_help={
            "messages": (
                "The host's live messages: the fallback, a fork's live suffix, large tool outputs to stub."
            ),
        },
        render=_CONTEXT,
        cuts="messages",
        cuts_oldest=True,
    ),
}
