"""Escalation around one summarization (docs/reference/engine.md §5.1, target sizes of §5.3).

Compaction calls :func:`summarize_with_escalation` once per pass. It asks for a normal
summary, asks again aggressively only when the answer did not shrink the input, falls back
to deterministic truncation when the model gives nothing usable, and caps an oversized
answer instead of failing. An authentication failure is the one outcome that yields no
summary: the caller aborts the pass and feeds the circuit breaker.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.tokens import estimate_tokens, token_quarters
from lcm_cli.engine.summarize.base import (
    SpendLimitError,
    Summarizer,
    SummarizerAuthError,
    SummarizerError,
    SummaryRequest,
)
from lcm_cli.engine.summarize.fallback import (
    compaction_fallback,
    fallback_budget,
    summarizer_fallback,
)
from lcm_cli.engine.summarize.sanitize import strip_reasoning, truncate_to_quarters

__all__ = [
    "EscalationResult",
    "cap_summary",
    "compaction_fallback",
    "summarize_with_escalation",
    "target_tokens_for",
]

log = logging.getLogger("lcm.summarize")

DEFAULT_LEAF_TARGET = 2400
DEFAULT_CONDENSED_TARGET = 2000
DEFAULT_OVERAGE_FACTOR = 3.0


class EscalationResult(NamedTuple):
    """What one escalated summarization produced.

    ``level`` is ``normal``, ``aggressive``, ``capped`` or ``fallback``; with
    ``auth_failure`` True there is no summary (``content`` is empty) and the caller aborts.
    """

    content: str
    level: str
    auth_failure: bool


def _number(value: float, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return default
    return float(value)


def configured_target(effective: Mapping[str, Any], depth: int) -> int:
    """``leafTargetTokens`` for a leaf (depth 0), ``condensedTargetTokens`` otherwise."""
    if depth <= 0:
        return int(_number(EngineSettings(effective).leaf_target_tokens, DEFAULT_LEAF_TARGET))
    return int(_number(EngineSettings(effective).condensed_target_tokens, DEFAULT_CONDENSED_TARGET))


def target_tokens_for(
    effective: Mapping[str, Any], *, depth: int, aggressive: bool, input_tokens: int
) -> int:
    """The target size asked of the summarizer (§5.3).

    Condensed: ``max(512, condensedTargetTokens)`` whatever the mode. Leaf: a share of the
    input bounded by ``leafTargetTokens`` — 35 % normally, 20 % aggressively.
    """
    if depth > 0:
        return max(512, configured_target(effective, depth))
    limit = max(192, configured_target(effective, 0))
    if not aggressive:
        return max(192, min(limit, math.floor(input_tokens * 0.35)))
    aggressive_limit = max(96, min(limit, math.floor(limit * 0.55)))
    return max(96, min(aggressive_limit, math.floor(input_tokens * 0.2)))


def max_summary_tokens(effective: Mapping[str, Any], depth: int) -> int:
    """``ceil(target × summaryMaxOverageFactor)``: above it a summary is capped."""
    factor = max(1.0, _number(EngineSettings(effective).summary_max_overage_factor, DEFAULT_OVERAGE_FACTOR))
    return math.ceil(configured_target(effective, depth) * factor)


def cap_summary(text: str, max_tokens: int) -> str:
    """``text`` truncated to ``max_tokens`` with the first suffix of the ladder that fits:
    ``[Capped from N tokens to ~M]``, ``[Capped to ~M]``, ``[Capped]``, then none."""
    original = estimate_tokens(text)
    budget = max_tokens * 4
    for suffix in (
        f"\n[Capped from {original} tokens to ~{max_tokens}]",
        f"\n[Capped to ~{max_tokens}]",
        "\n[Capped]",
        "",
    ):
        room = budget - token_quarters(suffix)
        if room >= 0:
            return truncate_to_quarters(text, room).rstrip() + suffix
    return ""  # unreachable: the empty suffix always fits


def _custom(effective: Mapping[str, Any], custom_instructions: str | None) -> str:
    # A per-call value wins even when empty; otherwise the configured text.
    if custom_instructions is not None:
        return custom_instructions
    configured = EngineSettings(effective).custom_instructions
    return configured if isinstance(configured, str) else ""


def summarize_with_escalation(
    summarizer: Summarizer,
    source_text: str,
    *,
    depth: int,
    effective: Mapping[str, Any],
    previous_context: str | None = None,
    custom_instructions: str | None = None,
) -> EscalationResult:
    """Summarize ``source_text`` for a summary of ``depth`` with the reference's escalation.

    Raises :class:`SpendLimitError` (the caller decides); any other
    :class:`SummarizerError` becomes the summarizer-level fallback.
    """
    if not source_text.strip():
        return EscalationResult(compaction_fallback("", effective), "fallback", False)
    input_tokens = max(1, estimate_tokens(source_text))
    context = strip_reasoning(previous_context or "") or None
    custom = _custom(effective, custom_instructions)

    def ask(aggressive: bool) -> str:
        target = target_tokens_for(effective, depth=depth, aggressive=aggressive, input_tokens=input_tokens)
        request = SummaryRequest(source_text, target, depth, aggressive, context, custom)
        return strip_reasoning(summarizer.summarize(request))

    def model_failed() -> EscalationResult:
        target = target_tokens_for(effective, depth=depth, aggressive=False, input_tokens=input_tokens)
        text = summarizer_fallback(source_text, fallback_budget(effective), target)
        return EscalationResult(text, "fallback", False)

    try:
        content = ask(False)
    except SummarizerAuthError:
        return EscalationResult("", "fallback", True)
    except SpendLimitError:
        raise
    except SummarizerError as exc:
        log.warning("summarizer failed, using the deterministic fallback: %s", exc)
        return model_failed()
    if not content:
        return EscalationResult(compaction_fallback(source_text, effective), "fallback", False)
    level = "normal"
    if estimate_tokens(content) >= input_tokens:
        try:
            content = ask(True)
        except SummarizerAuthError:
            return EscalationResult("", "fallback", True)
        except SpendLimitError:
            raise
        except SummarizerError as exc:
            log.warning("aggressive summarization failed, using the deterministic fallback: %s", exc)
            return model_failed()
        if not content or estimate_tokens(content) >= input_tokens:
            return EscalationResult(compaction_fallback(source_text, effective), "fallback", False)
        level = "aggressive"
    limit = max_summary_tokens(effective, depth)
    tokens = estimate_tokens(content)
    if tokens > configured_target(effective, depth) * 1.5:
        log.warning("summary of %d tokens is above 1.5x its target", tokens)
    if tokens > limit:
        return EscalationResult(cap_summary(content, limit), "capped", False)
    return EscalationResult(content, level, False)
