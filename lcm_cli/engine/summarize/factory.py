"""Choosing the summarizer and the chat model from config and environment.

:func:`build_summarizer` returns the OpenAI-compatible summarizer when a model resolves
*and* an endpoint is known for it, otherwise the offline extractive summarizer:

* model candidates, in order: ``summaryModel`` (a bare name takes ``summaryProvider`` as
  its provider), then each ``fallbackProviders`` entry; duplicates dropped. These are
  config keys: the effective config already holds each one's environment variable
  (``LCM_SUMMARY_MODEL``, ...) over its plugin-config value, and this module reads them
  through :class:`~lcm_cli.engine.config.view.EngineSettings` only;
* endpoint: ``LCM_SUMMARY_BASE_URL``, else ``OPENAI_BASE_URL`` — one endpoint for every
  candidate; without either, provider ``ollama`` means ``http://127.0.0.1:11434/v1`` and
  provider ``openai`` ``https://api.openai.com/v1``; a candidate with no endpoint is
  skipped;
* API key: ``LCM_SUMMARY_API_KEY``, else ``OPENAI_API_KEY``, else none (local servers).

``LCM_SUMMARIZER`` forces the choice: ``extractive``, ``openai`` (a model is required;
when none resolves the emergency summarizer stands in, labelled ``emergency-fallback``),
``emergency``; ``auto`` or unset applies the rule above.

The endpoint, the API key and ``LCM_SUMMARIZER`` are environment variables only, not
config keys: lossless-claw takes its endpoint and credentials from the host's provider
setup and has no key for them, so a config key would widen the plugin config beyond
the reference's (and invite an API key into openclaw.json); ``LCM_SUMMARIZER`` is an
operator's and a test's override, not a setting of a deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.summarize.base import ChatModel, Summarizer
from lcm_cli.engine.summarize.extractive import ExtractiveSummarizer
from lcm_cli.engine.summarize.fallback import EmergencySummarizer, fallback_budget
from lcm_cli.engine.summarize.openai_compat import DEFAULT_TIMEOUT_MS, Candidate, OpenAICompatSummarizer

SUMMARIZER_ENV = "LCM_SUMMARIZER"
SUMMARIZER_CHOICES = ("auto", "extractive", "openai", "emergency")
PROVIDER_BASE_URLS = {
    "ollama": "http://127.0.0.1:11434/v1",
    "openai": "https://api.openai.com/v1",
}
#: The purposes a chat model serves; each but ``summary`` tries its own model first.
PURPOSES = ("summary", "expansion", "large-file")


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _model_choices(settings: EngineSettings, purpose: str) -> list[tuple[str, str]]:
    """``(model, provider)`` of each configured model for ``purpose``, first choice first."""
    choices = [(settings.summary_model, settings.summary_provider)]
    if purpose == "expansion":
        choices.insert(0, (settings.expansion_model, settings.expansion_provider))
    elif purpose == "large-file":
        choices.insert(0, (settings.large_file_summary_model, settings.large_file_summary_provider))
    return [(_text(model), _text(provider)) for model, provider in choices]


def split_model(model: str, provider: str) -> tuple[str, str]:
    """``(provider, model id)`` of a configured model name.

    ``provider/model`` splits at the first slash. With a provider hint the name is kept
    whole (minus a leading ``<hint>/``), so ids that contain slashes, such as vLLM's
    ``meta-llama/Llama-3.1-8B-Instruct``, survive when ``summaryProvider`` is set.
    """
    model = model.strip()
    provider = provider.strip()
    if provider:
        prefix = provider + "/"
        return provider, model[len(prefix) :] if model.startswith(prefix) else model
    if "/" in model:
        head, tail = model.split("/", 1)
        if head and tail:
            return head, tail
    return "", model


def base_url_for(provider: str, env: Mapping[str, str]) -> str | None:
    """The endpoint for ``provider``: the environment's base URL, else a known default."""
    for name in ("LCM_SUMMARY_BASE_URL", "OPENAI_BASE_URL"):
        value = env.get(name, "").strip()
        if value:
            return value
    return PROVIDER_BASE_URLS.get(provider.lower())


def model_candidates(
    effective: Mapping[str, Any], env: Mapping[str, str], *, purpose: str = "summary"
) -> list[Candidate]:
    """The ordered, de-duplicated candidates that have an endpoint."""
    settings = EngineSettings(effective)
    pairs = [split_model(model, provider) for model, provider in _model_choices(settings, purpose) if model]
    providers: Any = settings.fallback_providers
    if isinstance(providers, list):
        for entry in providers:
            if isinstance(entry, Mapping):
                fallback_provider, fallback_model = entry.get("provider"), entry.get("model")
                if (
                    isinstance(fallback_provider, str)
                    and isinstance(fallback_model, str)
                    and fallback_provider.strip()
                    and fallback_model.strip()
                ):
                    pairs.append(split_model(fallback_model, fallback_provider))
    out: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    for provider, model in pairs:
        if not model or (provider, model) in seen:
            continue
        seen.add((provider, model))
        base = base_url_for(provider, env)
        if base:
            out.append(Candidate(provider, model, base))
    return out


def _api_key(env: Mapping[str, str]) -> str | None:
    for name in ("LCM_SUMMARY_API_KEY", "OPENAI_API_KEY"):
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _timeout_ms(settings: EngineSettings) -> int:
    value = settings.summary_timeout_ms
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        return DEFAULT_TIMEOUT_MS
    return int(value)


def _openai(
    effective: Mapping[str, Any], env: Mapping[str, str], purpose: str
) -> OpenAICompatSummarizer | None:
    candidates = model_candidates(effective, env, purpose=purpose)
    if not candidates:
        return None
    settings = EngineSettings(effective)
    return OpenAICompatSummarizer(
        candidates,
        api_key=_api_key(env),
        timeout_ms=_timeout_ms(settings),
        enable_thinking=settings.enable_summary_thinking is not False,
        env=env,
    )


def build_summarizer(effective: Mapping[str, Any], env: Mapping[str, str]) -> Summarizer:
    """The summarizer the configuration asks for (see the module doc); never raises."""
    choice = env.get(SUMMARIZER_ENV, "").strip().lower()
    if choice == "extractive":
        return ExtractiveSummarizer()
    if choice == "emergency":
        return EmergencySummarizer(fallback_budget(effective))
    model = _openai(effective, env, "summary")
    if model is not None:
        return model
    if choice == "openai":
        return EmergencySummarizer(fallback_budget(effective))
    return ExtractiveSummarizer()


def build_chat_model(
    effective: Mapping[str, Any], env: Mapping[str, str], *, purpose: str = "expansion"
) -> ChatModel | None:
    """A model for free-form prompts, or None when no model and endpoint are configured.

    ``purpose`` ``expansion`` tries ``expansionModel`` first, ``large-file``
    ``largeFileSummaryModel``; both then fall back to the summary model candidates.
    """
    return _openai(effective, env, purpose if purpose in PURPOSES else "summary")


def describe_choice(effective: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """What :func:`build_summarizer` would pick and why, for status output and docs."""
    from lcm_cli.engine.core.redact import redact

    summarizer = build_summarizer(effective, env)
    candidates = model_candidates(effective, env)
    return {
        "summarizer": summarizer.model,
        "forced": env.get(SUMMARIZER_ENV, "").strip().lower() or None,
        "candidates": [{"model": c.label, "baseUrl": redact(c.base_url)} for c in candidates],
        "apiKey": bool(_api_key(env)),
    }
