"""The summarizer interface that compaction, large-file summaries and recall call.

Compaction never talks to a model directly: it builds a :class:`SummaryRequest` and asks
a :class:`Summarizer` for text. Escalation, capping and deterministic fallbacks
(docs/reference/engine.md §5.1–§5.2) wrap this interface, so every implementation only has to
turn one request into plain text or raise one of the errors below.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable


class SummaryRequest(NamedTuple):
    """One summarization call.

    ``depth`` is the depth of the summary being written: 0 for a leaf summary over raw
    messages, 1, 2, 3+ for condensed summaries (it selects the prompt template).
    ``previous_context`` is the continuity text of docs/reference/engine.md §5.4, or None.
    """

    source_text: str
    target_tokens: int
    depth: int = 0
    aggressive: bool = False
    previous_context: str | None = None
    custom_instructions: str = ""


@runtime_checkable
class Summarizer(Protocol):
    """Turns a :class:`SummaryRequest` into summary text.

    ``model`` names the summarizer in results and logs (for example ``extractive`` or
    ``ollama/llama3.1``). ``summaries.model`` gets :func:`stored_model` of it: a
    model-backed summarizer also has ``model_id``, the model id alone, which is what
    lossless-claw stores there.
    """

    model: str

    def summarize(self, request: SummaryRequest) -> str:
        """Return the summary text (may be blank; callers fall back deterministically)."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A model that can answer a free-form prompt (expand-query); only model-backed summarizers."""

    model: str

    def complete(self, system: str, prompt: str, *, max_tokens: int, timeout_ms: int) -> str:
        """Return the model's answer text."""
        ...


def stored_model(summarizer: object) -> str:
    """The ``summaries.model`` value for summaries ``summarizer`` writes.

    lossless-claw (0.15.3 and 1.0) stores the first resolved candidate's model id without
    its provider (``llama3.1``, not ``ollama/llama3.1``), ``emergency-fallback`` for its
    truncation summarizer, and ``unknown`` when it knows no model; summarizers without a
    ``model_id`` (extractive, emergency) store their ``model`` label.
    """
    for name in ("model_id", "model"):
        value = getattr(summarizer, name, None)
        if isinstance(value, str) and value.strip():
            return value
    return "unknown"


class SummarizerError(Exception):
    """The model could not produce an answer (endpoint down, timeout, garbage reply).

    The message is redacted when the error is made, so the URL's credentials or a token
    echoed by the server never reach a log line, a result or an error envelope.
    """

    def __init__(self, message: str = "") -> None:
        from lcm_cli.engine.core.redact import redact

        super().__init__(redact(message))


class SummarizerAuthError(SummarizerError):
    """The endpoint refused our credentials (HTTP 401/403); feeds the circuit breaker."""


class SpendLimitError(SummarizerError):
    """The per-scope spend guard is open; no call was made."""
