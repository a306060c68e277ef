"""Choosing the summarizer and chat model from config and environment."""

from __future__ import annotations

from lcm_cli.engine.config.resolve import resolve_effective
from lcm_cli.engine.summarize.base import ChatModel, Summarizer
from lcm_cli.engine.summarize.extractive import ExtractiveSummarizer
from lcm_cli.engine.summarize.factory import (
    build_chat_model,
    build_summarizer,
    describe_choice,
    model_candidates,
    split_model,
)
from lcm_cli.engine.summarize.fallback import EmergencySummarizer
from lcm_cli.engine.summarize.openai_compat import OpenAICompatSummarizer


def effective(env: dict[str, str] | None = None, **plugin: object) -> dict[str, object]:
    return resolve_effective(dict(plugin), env or {}, "/tmp/lcm-state")


def test_default_is_extractive() -> None:
    summarizer = build_summarizer(effective(), {})
    assert isinstance(summarizer, ExtractiveSummarizer) and isinstance(summarizer, Summarizer)
    assert build_chat_model(effective(), {}) is None


def test_a_model_without_an_endpoint_stays_extractive() -> None:
    assert isinstance(build_summarizer(effective(summaryModel="llama3"), {}), ExtractiveSummarizer)
    assert isinstance(build_summarizer(effective(summaryModel="acme/x1"), {}), ExtractiveSummarizer)


def test_ollama_and_openai_providers_have_default_endpoints() -> None:
    env = {"LCM_SUMMARY_MODEL": "ollama/llama3.1"}
    summarizer = build_summarizer(effective(env), env)
    assert isinstance(summarizer, OpenAICompatSummarizer)
    assert summarizer.model == "ollama/llama3.1"
    assert summarizer.candidates[0].base_url == "http://127.0.0.1:11434/v1"
    assert summarizer.breaker_key == "provider:ollama;model:llama3.1"
    bare = build_summarizer(effective(summaryModel="gpt-4o-mini", summaryProvider="openai"), {})
    assert isinstance(bare, OpenAICompatSummarizer)
    assert bare.candidates[0].base_url == "https://api.openai.com/v1"
    assert bare.candidates[0].model == "gpt-4o-mini"


def test_base_url_key_timeout_and_thinking_come_from_env_and_config() -> None:
    env = {
        "LCM_SUMMARY_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "k2",
        "LCM_SUMMARY_API_KEY": "k1",
    }
    eff = effective(env, summaryModel="local-model", summaryTimeoutMs=1234, enableSummaryThinking=False)
    summarizer = build_summarizer(eff, env)
    assert isinstance(summarizer, OpenAICompatSummarizer)
    assert summarizer.candidates[0].base_url == "http://127.0.0.1:9/v1"
    assert (
        summarizer.api_key == "k1" and summarizer.timeout_ms == 1234 and summarizer.enable_thinking is False
    )
    env2 = {"OPENAI_BASE_URL": "http://127.0.0.1:8/v1", "OPENAI_API_KEY": "k2"}
    other = build_summarizer(effective(summaryModel="m"), env2)
    assert isinstance(other, OpenAICompatSummarizer)
    assert other.candidates[0].base_url == "http://127.0.0.1:8/v1" and other.api_key == "k2"


def test_candidates_in_order_without_duplicates() -> None:
    eff = effective(
        summaryModel="ollama/a",
        fallbackProviders=[{"provider": "ollama", "model": "a"}, {"provider": "ollama", "model": "b"}],
    )
    assert [c.label for c in model_candidates(eff, {})] == ["ollama/a", "ollama/b"]


def test_forcing_the_choice() -> None:
    env = {"LCM_SUMMARY_MODEL": "ollama/llama3.1", "LCM_SUMMARIZER": "extractive"}
    assert isinstance(build_summarizer(effective(env), env), ExtractiveSummarizer)
    forced = build_summarizer(effective(), {"LCM_SUMMARIZER": "openai"})
    assert isinstance(forced, EmergencySummarizer) and forced.model == "emergency-fallback"
    assert build_summarizer(effective(), {"LCM_SUMMARIZER": "emergency"}).model == "emergency-fallback"


def test_chat_model_prefers_the_expansion_model() -> None:
    eff = effective(summaryModel="ollama/sum", expansionModel="ollama/exp")
    chat = build_chat_model(eff, {})
    assert isinstance(chat, ChatModel) and isinstance(chat, OpenAICompatSummarizer)
    assert [c.label for c in chat.candidates] == ["ollama/exp", "ollama/sum"]
    only_summary = build_chat_model(effective(summaryModel="ollama/sum"), {})
    assert only_summary is not None and only_summary.model == "ollama/sum"
    large = build_chat_model(
        effective(summaryModel="ollama/sum", largeFileSummaryModel="ollama/lf"), {}, purpose="large-file"
    )
    assert large is not None and large.model == "ollama/lf"


def test_split_model() -> None:
    assert split_model("openai/gpt-4o", "") == ("openai", "gpt-4o")
    assert split_model("gpt-4o", "") == ("", "gpt-4o")
    assert split_model("meta-llama/Llama-3.1-8B", "vllm") == ("vllm", "meta-llama/Llama-3.1-8B")
    assert split_model("vllm/meta-llama/Llama-3.1-8B", "vllm") == ("vllm", "meta-llama/Llama-3.1-8B")


def test_describe_choice() -> None:
    env = {"LCM_SUMMARY_BASE_URL": "http://127.0.0.1:9/v1", "LCM_SUMMARY_API_KEY": "secret"}
    described = describe_choice(effective(summaryModel="m"), env)
    assert described == {
        "summarizer": "m",
        "forced": None,
        "candidates": [{"model": "m", "baseUrl": "http://127.0.0.1:9/v1"}],
        "apiKey": True,
    }
    assert "secret" not in str(described)
    assert describe_choice(effective(), {})["summarizer"] == "extractive"
