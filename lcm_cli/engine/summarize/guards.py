"""Circuit breaker and spend guard for model-backed summarizers (docs/reference/engine.md §5.7).

Both live in process memory: a one-shot ``lcm`` command starts with closed guards, a warm
``lcm serve`` keeps their state across requests. The clock is injectable so tests can move
time without sleeping.

* The circuit breaker counts compaction runs that ended with an authentication failure,
  per model (``provider:<p>;model:<m>``). At ``circuitBreakerThreshold`` it opens;
  compaction then reports ``circuit breaker open`` without calling the model, until
  ``circuitBreakerCooldownMs`` has passed. Any successful compaction resets the count.
* The spend guard counts model calls per scope (``compaction:<queue key>``,
  ``large-file:<conversation id or global>``) in a sliding ``summaryCallWindowMs``
  window. A call made when the count has reached ``summaryMaxCallsPerWindow`` opens a
  backoff of ``summarySpendBackoffMs``; while it is open calls are refused with
  :class:`SpendLimitError`. Manual or forced compaction clears it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.summarize.base import (
    SpendLimitError,
    Summarizer,
    SummarizerAuthError,
    SummaryRequest,
    stored_model,
)

Clock = Callable[[], float]  # seconds, monotonic


def _positive(value: float, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        return default
    return int(value)


class CircuitBreaker:
    """Opens after repeated auth failures for one model key; closes after a cooldown."""

    def __init__(self, *, threshold: int = 5, cooldown_ms: int = 1_800_000, clock: Clock = time.monotonic):
        self.threshold = threshold
        self.cooldown_ms = cooldown_ms
        self.clock = clock
        self._failures: dict[str, int] = {}
        self._opened_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def configure(self, effective: Mapping[str, Any]) -> CircuitBreaker:
        """Take threshold and cooldown from the effective config; returns self."""
        settings = EngineSettings(effective)
        self.threshold = _positive(settings.circuit_breaker_threshold, 5)
        self.cooldown_ms = _positive(settings.circuit_breaker_cooldown_ms, 1_800_000)
        return self

    def is_open(self, key: str | None) -> bool:
        """True while ``key``'s breaker is open (it closes itself once the cooldown passed)."""
        if key is None:
            return False
        with self._lock:
            opened = self._opened_at.get(key)
            if opened is None:
                return False
            if (self.clock() - opened) * 1000 >= self.cooldown_ms:
                del self._opened_at[key]
                self._failures.pop(key, None)
                return False
            return True

    def record_auth_failure(self, key: str | None) -> bool:
        """Count one run that ended in an auth failure; True when the breaker is now open."""
        if key is None:
            return False
        with self._lock:
            count = self._failures.get(key, 0) + 1
            self._failures[key] = count
            if count >= self.threshold and key not in self._opened_at:
                self._opened_at[key] = self.clock()
            return key in self._opened_at

    def record_success(self, key: str | None) -> None:
        """A successful compaction: forget the failures and close the breaker."""
        if key is None:
            return
        with self._lock:
            self._failures.pop(key, None)
            self._opened_at.pop(key, None)

    def failures(self, key: str) -> int:
        """How many auth failures are currently counted for ``key``."""
        with self._lock:
            return self._failures.get(key, 0)


class SpendGuard:
    """Limits model calls per scope and window; an open backoff refuses calls."""

    def __init__(
        self,
        *,
        window_ms: int = 600_000,
        max_calls: int = 24,
        backoff_ms: int = 1_800_000,
        clock: Clock = time.monotonic,
    ):
        self.window_ms = window_ms
        self.max_calls = max_calls
        self.backoff_ms = backoff_ms
        self.clock = clock
        self._calls: dict[str, deque[float]] = {}
        self._backoff_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def configure(self, effective: Mapping[str, Any]) -> SpendGuard:
        """Take window, call limit and backoff from the effective config; returns self."""
        settings = EngineSettings(effective)
        self.window_ms = _positive(settings.summary_call_window_ms, 600_000)
        self.max_calls = _positive(settings.summary_max_calls_per_window, 24)
        self.backoff_ms = _positive(settings.summary_spend_backoff_ms, 1_800_000)
        return self

    def _recent(self, scope: str, now: float) -> deque[float]:
        calls = self._calls.setdefault(scope, deque())
        horizon = now - self.window_ms / 1000
        while calls and calls[0] <= horizon:
            calls.popleft()
        return calls

    def backoff_remaining_ms(self, scope: str) -> int:
        """Milliseconds until ``scope``'s backoff closes (0 when none is open)."""
        with self._lock:
            until = self._backoff_until.get(scope)
            if until is None:
                return 0
            left = until - self.clock()
            if left <= 0:
                del self._backoff_until[scope]
                return 0
            return int(left * 1000 + 0.999)

    def check(self, scope: str) -> None:
        """Refuse a call (:class:`SpendLimitError`) while a backoff is open or opens now."""
        if self.backoff_remaining_ms(scope):
            raise SpendLimitError(f"summary spend backoff open for {scope}")
        with self._lock:
            now = self.clock()
            if len(self._recent(scope, now)) >= self.max_calls:
                self._backoff_until[scope] = now + self.backoff_ms / 1000
                raise SpendLimitError(
                    f"summary spend backoff open for {scope}: {self.max_calls} model calls "
                    f"within {self.window_ms} ms"
                )

    def record_call(self, scope: str) -> None:
        """Count one model call that was made (auth failures are not counted)."""
        with self._lock:
            now = self.clock()
            self._recent(scope, now).append(now)

    def open_backoff(self, scope: str) -> None:
        """Open ``scope``'s backoff now (non-progressing sweeps, failed compact-until-under)."""
        with self._lock:
            self._backoff_until[scope] = self.clock() + self.backoff_ms / 1000

    def clear(self, scope: str) -> None:
        """Close ``scope``'s backoff and forget its calls (manual or forced compaction)."""
        with self._lock:
            self._backoff_until.pop(scope, None)
            self._calls.pop(scope, None)

    def calls_in_window(self, scope: str) -> int:
        """Calls counted for ``scope`` in the current window."""
        with self._lock:
            return len(self._recent(scope, self.clock()))


class GuardedSummarizer:
    """A summarizer whose every call passes ``guard`` for ``scope`` first.

    Only model-backed summarizers (``billable``) are counted; the extractive and emergency
    summarizers cost nothing and pass straight through.
    """

    def __init__(self, inner: Summarizer, guard: SpendGuard, scope: str) -> None:
        self.inner = inner
        self.guard = guard
        self.scope = scope
        self.model = inner.model
        self.model_id = stored_model(inner)
        self.billable = bool(getattr(inner, "billable", False))
        self.breaker_key = breaker_key(inner)

    def summarize(self, request: SummaryRequest) -> str:
        """Check the guard, call the inner summarizer, count the call."""
        if not self.billable:
            return self.inner.summarize(request)
        self.guard.check(self.scope)
        try:
            text = self.inner.summarize(request)
        except SummarizerAuthError:
            raise
        except Exception:
            self.guard.record_call(self.scope)
            raise
        self.guard.record_call(self.scope)
        return text


def breaker_key(summarizer: Summarizer) -> str | None:
    """The circuit-breaker key of a summarizer: its first candidate, none for offline ones."""
    key = getattr(summarizer, "breaker_key", None)
    return key if isinstance(key, str) else None


_BREAKER = CircuitBreaker()
_SPEND = SpendGuard()


def circuit_breaker(effective: Mapping[str, Any] | None = None) -> CircuitBreaker:
    """The process-wide circuit breaker, reconfigured from ``effective`` when given."""
    return _BREAKER.configure(effective) if effective is not None else _BREAKER


def spend_guard(effective: Mapping[str, Any] | None = None) -> SpendGuard:
    """The process-wide spend guard, reconfigured from ``effective`` when given."""
    return _SPEND.configure(effective) if effective is not None else _SPEND


def guarded(summarizer: Summarizer, effective: Mapping[str, Any], scope: str) -> GuardedSummarizer:
    """``summarizer`` behind the process-wide spend guard for ``scope``.

    Compaction wraps its summarizer once per run, e.g. scope ``compaction:<session key>``,
    and reads :func:`breaker_key` of the result for the circuit breaker.
    """
    return GuardedSummarizer(summarizer, spend_guard(effective), scope)
