"""Circuit breaker and spend guard (docs/reference/engine.md §5.7) with an injected clock."""

from __future__ import annotations

import pytest

from lcm_cli.engine.summarize.base import SpendLimitError, SummarizerAuthError, SummaryRequest
from lcm_cli.engine.summarize.extractive import ExtractiveSummarizer
from lcm_cli.engine.summarize.guards import (
    CircuitBreaker,
    GuardedSummarizer,
    SpendGuard,
    breaker_key,
    circuit_breaker,
    guarded,
    spend_guard,
)
from lcm_cli.engine.summarize.openai_compat import Candidate, OpenAICompatSummarizer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_at_threshold_and_closes_after_cooldown() -> None:
    clock = Clock()
    breaker = CircuitBreaker(threshold=3, cooldown_ms=60_000, clock=clock)
    key = "provider:p;model:m"
    assert breaker.record_auth_failure(key) is False
    assert breaker.record_auth_failure(key) is False
    assert not breaker.is_open(key)
    assert breaker.record_auth_failure(key) is True
    assert breaker.is_open(key)
    assert not breaker.is_open("provider:p;model:other")
    clock.now += 59.9
    assert breaker.is_open(key)
    clock.now += 0.2
    assert not breaker.is_open(key)
    assert breaker.failures(key) == 0


def test_success_resets_the_breaker() -> None:
    breaker = CircuitBreaker(threshold=2, clock=Clock())
    breaker.record_auth_failure("k")
    breaker.record_success("k")
    breaker.record_auth_failure("k")
    assert not breaker.is_open("k")
    breaker.record_auth_failure("k")
    assert breaker.is_open("k")
    breaker.record_success("k")
    assert not breaker.is_open("k")
    assert breaker.is_open(None) is False and breaker.record_auth_failure(None) is False


def test_breaker_configuration_from_effective() -> None:
    breaker = CircuitBreaker().configure({"circuitBreakerThreshold": 7, "circuitBreakerCooldownMs": 5})
    assert (breaker.threshold, breaker.cooldown_ms) == (7, 5)
    assert circuit_breaker() is circuit_breaker({"circuitBreakerThreshold": 5})


def test_spend_guard_window_and_backoff() -> None:
    clock = Clock()
    guard = SpendGuard(window_ms=10_000, max_calls=3, backoff_ms=60_000, clock=clock)
    scope = "compaction:agent:main"
    for _ in range(3):
        guard.check(scope)
        guard.record_call(scope)
    assert guard.calls_in_window(scope) == 3
    with pytest.raises(SpendLimitError):
        guard.check(scope)
    assert guard.backoff_remaining_ms(scope) == 60_000
    guard.check("large-file:global")  # other scopes are independent
    clock.now += 30
    with pytest.raises(SpendLimitError):
        guard.check(scope)  # the window passed but the backoff is still open
    clock.now += 31
    guard.check(scope)
    assert guard.calls_in_window(scope) == 0


def test_calls_age_out_of_the_window() -> None:
    clock = Clock()
    guard = SpendGuard(window_ms=10_000, max_calls=2, backoff_ms=60_000, clock=clock)
    guard.record_call("s")
    clock.now += 6
    guard.record_call("s")
    clock.now += 5  # the first call is now older than the window
    guard.check("s")
    assert guard.calls_in_window("s") == 1


def test_open_and_clear_backoff() -> None:
    guard = SpendGuard(clock=Clock())
    guard.open_backoff("s")
    with pytest.raises(SpendLimitError):
        guard.check("s")
    guard.clear("s")
    guard.check("s")
    configured = SpendGuard().configure(
        {"summaryCallWindowMs": 1, "summaryMaxCallsPerWindow": 2, "summarySpendBackoffMs": 3}
    )
    assert (configured.window_ms, configured.max_calls, configured.backoff_ms) == (1, 2, 3)
    assert spend_guard() is spend_guard({})


class Billable:
    model = "scripted"
    billable = True
    breaker_key = "provider:x;model:y"

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        if self.error:
            raise self.error
        return "ok"


def test_guarded_summarizer_counts_model_calls_only() -> None:
    guard = SpendGuard(max_calls=2, clock=Clock())
    inner = Billable()
    guarded = GuardedSummarizer(inner, guard, "compaction:k")
    request = SummaryRequest("text", 100)
    assert guarded.summarize(request) == "ok"
    assert guarded.summarize(request) == "ok"
    with pytest.raises(SpendLimitError):
        guarded.summarize(request)
    assert inner.calls == 2
    # Auth failures are not counted.
    auth_guard = SpendGuard(max_calls=1, clock=Clock())
    failing = GuardedSummarizer(Billable(SummarizerAuthError("401")), auth_guard, "s")
    with pytest.raises(SummarizerAuthError):
        failing.summarize(request)
    assert auth_guard.calls_in_window("s") == 0
    # The offline summarizer is never limited.
    free = GuardedSummarizer(ExtractiveSummarizer(), SpendGuard(max_calls=1, clock=Clock()), "s")
    for _ in range(3):
        free.summarize(SummaryRequest("Some text to keep. " * 20, 50))


def test_breaker_keys() -> None:
    model = OpenAICompatSummarizer([Candidate("ollama", "llama3", "http://127.0.0.1:1/v1")])
    assert breaker_key(model) == "provider:ollama;model:llama3"
    assert breaker_key(ExtractiveSummarizer()) is None


def test_guarded_uses_the_process_guard() -> None:
    scope = "compaction:test-guarded-scope"
    wrapped = guarded(Billable(), {"summaryMaxCallsPerWindow": 1}, scope)
    assert wrapped.guard is spend_guard() and wrapped.breaker_key == "provider:x;model:y"
    try:
        wrapped.summarize(SummaryRequest("text", 100))
        with pytest.raises(SpendLimitError):
            wrapped.summarize(SummaryRequest("text", 100))
    finally:
        spend_guard().clear(scope)
        spend_guard({})
