"""The compaction threshold: which ``contextThreshold`` applies to a session, and whether
its context is over it.

docs/reference/config.md §6 (``contextThresholdOverrides`` matching) and docs/reference/engine.md §4.2
(threshold evaluation). Rules are the normalized ones of
:func:`lcm_cli.engine.config.resolve.normalize_threshold_overrides` (the effective config holds
them already validated). Every matcher of a rule must hold; the most specific rule wins
(model 100, session pattern 50, window min 20, window max 20), ties go to the earliest
rule. A window bound needs the host's explicit context-window size; without it a rule
with a bound never matches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.db.sessions import compile_session_pattern

_SPECIFICITY = (
    ("model", 100),
    ("sessionPattern", 50),
    ("modelContextWindowMin", 20),
    ("modelContextWindowMax", 20),
)


class Resolution(NamedTuple):
    """The threshold fraction that applies, where it came from, and the override's sizing."""

    context_threshold: float
    source: str  # "global" or "override"
    rule_index: int | None = None
    rule: Mapping[str, Any] | None = None

    @property
    def fresh_tail_count(self) -> int | None:
        """The override's ``freshTailCount`` (None: the global one applies)."""
        value = (self.rule or {}).get("freshTailCount")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def leaf_chunk_tokens(self) -> int | None:
        """The override's ``leafChunkTokens`` (None: the global one applies)."""
        value = (self.rule or {}).get("leafChunkTokens")
        return int(value) if isinstance(value, (int, float)) else None

    def to_dict(self) -> dict[str, Any]:
        """The resolution as reported in results."""
        override = None
        if self.rule is not None:
            override = {
                "index": self.rule_index,
                "name": self.rule.get("name"),
                "match": self.rule.get("match"),
            }
            for key in ("freshTailCount", "leafChunkTokens"):
                if key in self.rule:
                    override[key] = self.rule[key]
        return {"contextThreshold": self.context_threshold, "source": self.source, "override": override}

    def apply(self, effective: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of the effective config with this resolution's threshold and sizing in place."""
        sizing: dict[str, Any] = {"context_threshold": self.context_threshold}
        if self.fresh_tail_count is not None:
            sizing["fresh_tail_count"] = self.fresh_tail_count
        if self.leaf_chunk_tokens is not None:
            sizing["leaf_chunk_tokens"] = self.leaf_chunk_tokens
        return EngineSettings(effective).overridden(**sizing)


def global_threshold(effective: Mapping[str, Any]) -> float:
    """The global ``contextThreshold`` (0.75 when unset)."""
    value = EngineSettings(effective).context_threshold
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.75


def _model_matches(wanted: str, model: str | None) -> bool:
    # The host's model ref (`provider/model`) or the bare model id, exact after trimming.
    if not model:
        return False
    ref = model.strip()
    return wanted.strip() in (ref, ref.split("/", 1)[-1])


def rule_matches(
    rule: Mapping[str, Any], *, session_key: str | None, model: str | None, context_window: int | None
) -> bool:
    """True when every matcher of ``rule`` holds for this session."""
    match = rule.get("match") or {}
    if not match:
        return False
    if "model" in match and not _model_matches(str(match["model"]), model):
        return False
    if "sessionPattern" in match:
        key = (session_key or "").strip()
        if not key or compile_session_pattern(str(match["sessionPattern"])).fullmatch(key) is None:
            return False
    if "modelContextWindowMin" in match and (
        context_window is None or context_window < match["modelContextWindowMin"]
    ):
        return False
    if "modelContextWindowMax" in match and (
        context_window is None or context_window > match["modelContextWindowMax"]
    ):
        return False
    return True


def specificity(rule: Mapping[str, Any]) -> int:
    """100 for a model matcher, 50 for a session pattern, 20 per window bound."""
    match = rule.get("match") or {}
    return sum(points for key, points in _SPECIFICITY if key in match)


def resolve_threshold(
    effective: Mapping[str, Any],
    *,
    session_key: str | None = None,
    model: str | None = None,
    context_window: int | None = None,
) -> Resolution:
    """The ``contextThreshold`` for a session: the most specific matching override, else global.

    An override outside 0..1 (possible only in a hand-built config) falls back to global.
    """
    rules: Sequence[Any] = EngineSettings(effective).context_threshold_overrides or ()
    best: tuple[int, int, Mapping[str, Any]] | None = None
    for index, rule in enumerate(rules):
        if not isinstance(rule, Mapping):
            continue
        if not rule_matches(rule, session_key=session_key, model=model, context_window=context_window):
            continue
        score = specificity(rule)
        if best is None or score > best[0]:
            best = (score, index, rule)
    if best is not None:
        value = best[2].get("contextThreshold")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
            return Resolution(float(value), "override", best[1], best[2])
    return Resolution(global_threshold(effective), "global")


class Decision(NamedTuple):
    """The threshold test of docs/reference/engine.md §4.2."""

    token_budget: int
    stored_tokens: int
    observed_tokens: int | None
    threshold: int
    should_compact: bool

    @property
    def current_tokens(self) -> int:
        """``max(stored, observed)``: what the test compares."""
        return max(self.stored_tokens, self.observed_tokens or 0)


def evaluate(
    resolution: Resolution, token_budget: int, stored_tokens: int, observed_tokens: int | None
) -> Decision:
    """``max(stored, observed) > floor(contextThreshold × budget)`` (strict)."""
    threshold = math.floor(resolution.context_threshold * token_budget)
    observed = observed_tokens if observed_tokens is not None and observed_tokens > 0 else None
    current = max(stored_tokens, observed or 0)
    return Decision(token_budget, stored_tokens, observed, threshold, current > threshold)
