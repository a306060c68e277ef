"""Deterministic fallback summaries (docs/reference/engine.md §5.2).

When a model gives nothing usable the source text itself, sanitized and truncated, becomes
the summary, followed by a note saying so. Three producers share the rules:

* the compaction-level fallback (``[Truncated from N tokens]``), used by escalation when an
  answer is blank or does not shrink the input;
* the summarizer-level fallback (``[LCM fallback summary; truncated for context
  management]``), used when every model candidate failed;
* the emergency summarizer, which stands in when no summarizer can be built at all and
  labels its summaries ``emergency-fallback``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_cli.engine.config.keys import MIN_FALLBACK_MAX_TOKENS
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.tokens import estimate_tokens, token_quarters
from lcm_cli.engine.summarize.base import SummaryRequest
from lcm_cli.engine.summarize.sanitize import (
    DIRECTIVE_NOTE,
    only_markers,
    remove_directives,
    truncate_to_quarters,
)

SUMMARIZER_FALLBACK_NOTE = "[LCM fallback summary; truncated for context management]"
EMERGENCY_MODEL = "emergency-fallback"
#: ``fallbackMaxTokens``'s default, as the key table declares it.
DEFAULT_FALLBACK_MAX_TOKENS: int = EngineSettings.fallback_max_tokens.default


def fallback_budget(effective: Mapping[str, Any]) -> int:
    """``fallbackMaxTokens`` when it is an integer ≥ 64, else the default 512."""
    value = EngineSettings(effective).fallback_max_tokens
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DEFAULT_FALLBACK_MAX_TOKENS
    if value != int(value) or value < MIN_FALLBACK_MAX_TOKENS:
        return DEFAULT_FALLBACK_MAX_TOKENS
    return int(value)


def _fit_with_note(text: str, note: str, budget: int) -> str:
    """``text`` cut so that ``text + "\\n" + note`` is within ``budget`` tokens, then the note."""
    room = budget * 4 - token_quarters("\n" + note)
    body = truncate_to_quarters(text, room).rstrip()
    return f"{body}\n{note}" if body else note


def compaction_fallback(source_text: str, effective: Mapping[str, Any]) -> str:
    """The compaction-level fallback: sanitized source within ``fallbackMaxTokens``, then
    ``[Truncated from <N> tokens]`` with N the estimate of the trimmed source."""
    trimmed = source_text.strip()
    note = f"[Truncated from {estimate_tokens(trimmed)} tokens]"
    if not trimmed:
        return note
    sanitized, removed = remove_directives(trimmed)
    if removed:
        note = f"{DIRECTIVE_NOTE}\n{note}"
        if only_markers(sanitized):
            return note
    return _fit_with_note(sanitized, note, fallback_budget(effective))


def summarizer_fallback(source_text: str, budget: int | None, target_tokens: int) -> str:
    """The summarizer-level fallback used when every model candidate failed.

    With a budget the note is always appended; without one the text is capped at
    ``max(256, target × 4)`` characters and the note only marks a cut.
    """
    trimmed = source_text.strip()
    sanitized, removed = remove_directives(trimmed)
    note = DIRECTIVE_NOTE if removed else SUMMARIZER_FALLBACK_NOTE
    if not sanitized or only_markers(sanitized):
        return note
    if budget is None:
        limit = max(256, target_tokens * 4)
        if len(sanitized) <= limit:
            return sanitized
        return f"{sanitized[:limit].rstrip()}\n{note}"
    return _fit_with_note(sanitized, note, budget)


class EmergencySummarizer:
    """Stands in when no summarizer can be built: the summarizer-level fallback, no model."""

    model = EMERGENCY_MODEL

    def __init__(self, budget: int = DEFAULT_FALLBACK_MAX_TOKENS) -> None:
        self.budget = budget

    def summarize(self, request: SummaryRequest) -> str:
        """The sanitized, truncated source followed by the fallback note."""
        return summarizer_fallback(request.source_text, self.budget, request.target_tokens)
