"""A summarizer over any OpenAI-compatible chat-completions endpoint (docs/reference/engine.md §5.3).

Works with OpenAI itself and with local servers that speak the same protocol (Ollama's
``/v1``, vLLM, llama.cpp, LM Studio). Each call is one ``POST <base>/chat/completions``
with a system and a user message and ``max_tokens``; no temperature is sent. Several model
candidates may be configured: on failure the next one is tried after a growing pause, an
empty or cut-off answer is retried once with a larger ``max_tokens``, and reasoning blocks
are stripped from every answer. Authentication refusals (401/403) surface as
:class:`SummarizerAuthError` so the circuit breaker can count them; every other failure,
once all candidates are exhausted, as :class:`SummarizerError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.summarize.base import SummarizerAuthError, SummarizerError, SummaryRequest
from lcm_cli.engine.summarize.prompts import render_summary_prompt
from lcm_cli.engine.summarize.sanitize import strip_reasoning

THINKING_HEADROOM = 2048
DEFAULT_TIMEOUT_MS = 60000
_TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length"})
_ERROR_BODY_CHARS = 300


class Candidate(NamedTuple):
    """One model to try: provider (may be empty), model id as the server knows it, base URL."""

    provider: str
    model: str
    base_url: str

    @property
    def label(self) -> str:
        """``provider/model``, or the bare model id without a provider."""
        return f"{self.provider}/{self.model}" if self.provider else self.model


def backoff_ms(index: int) -> int:
    """Pause before the candidate after the one at ``index``: ``min(500 × 2^index, 8000)`` ms."""
    return min(500 << min(index, 5), 8000)


def _is_loopback(url: str) -> bool:
    import ipaddress
    import urllib.parse

    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAICompatSummarizer:
    """Summarizer and chat model over ``<base>/chat/completions`` with candidate failover."""

    billable = True

    def __init__(
        self,
        candidates: Sequence[Candidate],
        *,
        api_key: str | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        enable_thinking: bool = True,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not candidates:
            raise ValueError("at least one model candidate is required")
        self.candidates = list(candidates)
        self.api_key = api_key or None
        self.timeout_ms = max(1, int(timeout_ms))
        self.enable_thinking = enable_thinking
        self.env = env
        self.sleep = sleep
        first = self.candidates[0]
        self.model = first.label
        self.model_id = first.model  # what summaries.model stores (base.stored_model)
        self.breaker_key = f"provider:{first.provider};model:{first.model}"

    # --- the two protocols ------------------------------------------------------------------

    def summarize(self, request: SummaryRequest) -> str:
        """The model's summary of ``request`` (blank input → ``""`` without a call)."""
        if not request.source_text.strip():
            return ""
        system, prompt = render_summary_prompt(request, self.env)
        max_tokens = request.target_tokens + (THINKING_HEADROOM if self.enable_thinking else 0)
        return self._ask(system, prompt, max_tokens, request.target_tokens, self.timeout_ms)

    def complete(self, system: str, prompt: str, *, max_tokens: int, timeout_ms: int) -> str:
        """A free-form answer (expand-query), with the same failover and retry rules."""
        return self._ask(system, prompt, max(1, int(max_tokens)), max(1, int(max_tokens)), timeout_ms)

    # --- failover ---------------------------------------------------------------------------

    def _ask(self, system: str, prompt: str, max_tokens: int, target: int, timeout_ms: int) -> str:
        last_error: SummarizerError | None = None
        auth_error: SummarizerAuthError | None = None
        for index, candidate in enumerate(self.candidates):
            if index > 0:
                self.sleep(backoff_ms(index - 1) / 1000)
            try:
                text, truncated = self._post(candidate, system, prompt, max_tokens, timeout_ms)
                if text and not truncated:
                    return text
                # Empty or cut off: one retry with room to finish.
                try:
                    retry, _ = self._post(candidate, system, prompt, max(2 * max_tokens, target), timeout_ms)
                except SummarizerAuthError:
                    raise
                except SummarizerError:
                    if text:
                        return text
                    raise
                if retry:
                    return retry
                if text:
                    return text
                last_error = SummarizerError(f"{candidate.label} returned an empty answer twice")
            except SummarizerAuthError as exc:
                auth_error = last_error = exc
            except SummarizerError as exc:
                last_error = exc
        if auth_error is not None:
            raise auth_error
        raise SummarizerError(f"every summary model failed; last: {last_error}")

    # --- one HTTP call ----------------------------------------------------------------------

    def _post(
        self, candidate: Candidate, system: str, prompt: str, max_tokens: int, timeout_ms: int
    ) -> tuple[str, bool]:
        """``(answer text, cut off?)`` of one chat-completions call."""
        # Imported here: http.client and urllib cost tens of milliseconds, and most
        # processes that build a summarizer never make a call.
        import http.client
        import socket
        import urllib.error
        import urllib.request

        body = {
            "model": candidate.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
        }
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = candidate.base_url.rstrip("/") + "/chat/completions"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        # A local server must never be reached through a proxy taken from the environment.
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(url) else []
        opener = urllib.request.build_opener(*handlers)
        where = f"{candidate.label} at {candidate.base_url}"
        try:
            with opener.open(request, timeout=timeout_ms / 1000) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(_ERROR_BODY_CHARS).decode("utf-8", "replace") if exc.fp else ""
            if exc.code in (401, 403):
                raise SummarizerAuthError(f"{where} refused the credentials (HTTP {exc.code})") from None
            raise SummarizerError(f"{where} answered HTTP {exc.code}: {detail.strip()}") from None
        except TimeoutError:
            raise SummarizerError(f"{where} timed out after {timeout_ms} ms") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise SummarizerError(f"{where} timed out after {timeout_ms} ms") from None
            raise SummarizerError(f"{where} is unreachable: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise SummarizerError(f"{where} failed: {exc}") from None
        try:
            data = loads_bounded(raw)
        except ValueError:
            raise SummarizerError(f"{where} sent a reply that is not JSON: {raw[:80]!r}") from None
        if not isinstance(data, dict):
            raise SummarizerError(f"{where} sent a JSON reply without a response object")
        text, reason = _answer_of(data)
        return strip_reasoning(text), reason in _TRUNCATED_REASONS


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict) and item.get("type", "text") in ("text", "output_text"):
                text = item.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return ""


def _answer_of(data: Mapping[str, Any]) -> tuple[str, str]:
    """The answer text and finish reason; falls back to top-level fields some servers use."""
    text = ""
    reason = ""
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        message = choice.get("message")
        if isinstance(message, dict):
            text = _text_of(message.get("content"))
        if not text:
            text = _text_of(choice.get("text"))
        if isinstance(choice.get("finish_reason"), str):
            reason = choice["finish_reason"]
    if not text:
        for key in ("output_text", "content", "text", "response"):
            text = _text_of(data.get(key))
            if text:
                break
    if not reason:
        for key in ("stop_reason", "finish_reason"):
            if isinstance(data.get(key), str):
                reason = data[key]
                break
    return text, reason.lower()
