"""Choosing the summarizer and the chat model from config and environment.

:func:`build_summarizer` returns the OpenAI-compatible summarizer when a model resolves
*and* an endpoint is known for it, otherwise the offline extractive summarizer:

* model candidates, in order: ``LCM_SUMMARY_MODEL`` / ``summaryModel`` (a bare name takes
  ``LCM_SUMMARY_PROVIDER`` / ``summaryProvider`` as its provider), then each
  ``fallbackProviders`` entry; duplicates dropped;
* endpoint: ``LCM_SUMMARY_BASE_URL``, else ``OPENAI_BASE_URL`` — one endpoint for every
  candidate; without either, provider ``ollama`` means ``http://127.0.0.1:11434/v1`` and
  provider ``openai`` ``https://api.openai.com/v1``; a candidate with no endpoint is
  skipped;
* API key: ``LCM_SUMMARY_API_KEY``, else ``OPENAI_API_KEY``, else none (local servers).

``LCM_SUMMARIZER`` forces the choice: ``extractive``, ``openai`` (a model is required;
when none resolves the emergency summarizer stands in, labelled ``emergency-fallback``),
``emergency``; ``auto`` or unset applies the rule above.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
#: Which config keys name the first-choice model of each purpose (before the summary model).
_PURPOSE_KEYS = {
    "summary": None,
    "expansion": ("expansionModel", "expansionProvider", "LCM_EXPANSION_MODEL", "LCM_EXPANSION_PROVIDER"),
    "large-file": (
        "largeFileSummaryModel",
        "largeFileSummaryProvider",
        "LCM_LARGE_FILE_SUMMARY_MODEL",
        "LCM_LARGE_FILE_SUMMARY_PROVIDER",
    ),
}
_SUMMARY_KEYS = ("summaryModel", "summaryProvider", "LCM_SUMMARY_MODEL", "LCM_SUMMARY_PROVIDER")


def _setting(effective: Mapping[str, Any], env: Mapping[str, str], key: str, env_name: str) -> str:
    # Config rule (docs/reference/config.md): a set environment variable wins even when empty.
    if env_name in env:
        return env[env_name].strip()
    value = effective.get(key)
    return value.strip() if isinstance(value, str) else ""


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
    pairs: list[tuple[str, str]] = []
    keys = _PURPOSE_KEYS.get(purpose)
    for group in ([keys] if keys else []) + [_SUMMARY_KEYS]:
        model_key, provider_key, model_env, provider_env = group
        model = _setting(effective, env, model_key, model_env)
        if model:
            pairs.append(split_model(model, _setting(effective, env, provider_key, provider_env)))
    providers = effective.get("fallbackProviders")
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


def _timeout_ms(effective: Mapping[str, Any]) -> int:
    value = effective.get("summaryTimeoutMs")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        return DEFAULT_TIMEOUT_MS
    return int(value)


def _openai(
    effective: Mapping[str, Any], env: Mapping[str, str], purpose: str
) -> OpenAICompatSummarizer | None:
    candidates = model_candidates(effective, env, purpose=purpose)
    if not candidates:
        return None
    return OpenAICompatSummarizer(
        candidates,
        api_key=_api_key(env),
        timeout_ms=_timeout_ms(effective),
        enable_thinking=effective.get("enableSummaryThinking") is not False,
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
    return _openai(effective, env, purpose if purpose in _PURPOSE_KEYS else "summary")


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
