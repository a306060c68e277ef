"""``context.assemble``: the context the model would see for one session's conversation."""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.assembly import flow as assemble_flow
from lcm_cli.engine.assembly.fallback import strip_prefill
from lcm_cli.engine.compaction.ops import option_int
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.core.params import (
    AVAILABLE_TOOLS,
    MESSAGES,
    MODEL,
    PROMPT,
    RUNTIME_SETTINGS,
    TOKEN_BUDGET,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read.target import resolve_target, target_identity


def _live_messages(req: Request, *, strip: bool = True) -> list[dict[str, Any]]:
    """The host's live messages (``messages``), trailing assistant prefill stripped unless ``strip`` is False."""
    raw = req[MESSAGES]
    if isinstance(raw, str):
        try:
            raw = loads_bounded(raw)
        except ValueError:
            raise invalid_argument("--messages is not JSON: pass a JSON array of message objects.") from None
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise invalid_argument("--messages must be a JSON array of message objects.")
    messages = list(raw)
    while strip and messages and messages[-1].get("role") == "assistant":
        messages.pop()
    return messages


def _available_tools(req: Request) -> list[str] | None:
    """The host's ``availableTools`` (JSON array, its text, or comma-separated names); None when absent."""
    raw = req[AVAILABLE_TOOLS]
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = loads_bounded(text)
            except ValueError:
                raise invalid_argument(
                    "--available-tools is not a JSON array: pass a JSON array of tool names or "
                    "comma-separated names."
                ) from None
        else:
            return [name.strip() for name in text.split(",") if name.strip()]
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise invalid_argument(
            "--available-tools must be a JSON array of tool names or comma-separated names."
        )
    return list(raw)


def host_prompt_budget(req: Request) -> int | None:
    """The prompt budget the host framed itself (``runtimeSettings.limits.promptTokenBudget``).

    OpenClaw 2026.8+ counts its own system prompt, tool schemas and output reserve into it;
    when it is smaller than ``tokenBudget`` it is the one the model can take.
    """
    raw = req[RUNTIME_SETTINGS]
    if isinstance(raw, str):
        try:
            raw = loads_bounded(raw)
        except ValueError:
            raise invalid_argument(
                "--runtime-settings is not JSON: pass the host's runtimeSettings object."
            ) from None
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise invalid_argument("runtimeSettings must be a JSON object.", {"field": "runtimeSettings"})
    limits = raw.get("limits")
    value = limits.get("promptTokenBudget") if isinstance(limits, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return int(value) if value < 2**53 else None


@operation("context.assemble")
def assemble(ctx: Context, req: Request) -> Result:
    """Assemble one conversation's context (docs/reference/engine.md §6.1).

    Mostly read-only: with deferred debt over the budget it drains the debt first, and
    with ``stubLargeToolPayloads`` it stores large live tool outputs (never for a
    stateless session).
    """
    raw = _live_messages(req, strip=False)
    tools = _available_tools(req)
    framed = host_prompt_budget(req)
    prompt = req[PROMPT]
    found = resolve_target(ctx, req)
    base = target_identity(found)
    if found.excluded == "excluded" or found.row is None:
        # Ignored sessions never touch the database, and a session without a conversation
        # has nothing stored: the host's own live messages pass through (unbounded).
        reason = "session excluded" if found.excluded == "excluded" else "no conversation found for session"
        live = strip_prefill(raw, prompt is not None and tools is not None)
        return Result(
            {
                **base,
                "messages": live,
                "estimatedTokens": 0,
                "systemPromptAddition": None,
                "contextProjection": None,
                "promptAuthority": None,
                "reason": reason,
            }
        )
    session = assemble_flow.Session(
        int(found.row["conversation_id"]), found.session_id, found.session_key, found.excluded is None
    )
    budget = option_int(req, TOKEN_BUDGET)
    if framed is not None:
        budget = framed if budget is None or budget <= 0 else min(budget, framed)
    result = assemble_flow.run(
        ctx, session, raw, prompt=prompt, available_tools=tools, token_budget=budget, model=req[MODEL]
    )
    return Result({**base, **result})
