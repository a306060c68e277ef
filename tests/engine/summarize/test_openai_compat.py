"""The OpenAI-compatible summarizer against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.summarize.base import ChatModel, SummarizerAuthError, SummarizerError, SummaryRequest
from lcm_cli.engine.summarize.escalation import summarize_with_escalation
from lcm_cli.engine.summarize.factory import build_chat_model, build_summarizer
from lcm_cli.engine.summarize.openai_compat import Candidate, OpenAICompatSummarizer, backoff_ms

SOURCE = (
    "[2026-01-01 10:00 UTC | user]\n"
    + "We moved the billing tables to the new schema and fixed the index. " * 60
)
FALLBACK_NOTE = "[LCM fallback summary; truncated for context management]"


def reply(content: Any, finish: str = "stop") -> dict[str, Any]:
    return {
        "status": 200,
        "json": {
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}]
        },
    }


class Endpoint:
    """A scripted chat-completions server: one scripted action per request, in order."""

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                endpoint.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                action = endpoint.script.pop(0) if endpoint.script else reply("default answer")
                if action.get("sleep"):
                    time.sleep(action["sleep"])
                raw = action["raw"] if "raw" in action else json.dumps(action["json"]).encode()
                self.send_response(action.get("status", 200))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.close()


def summarizer(
    base_url: str, *models: str, timeout_ms: int = 5000, sleeps: list[float] | None = None, **kw: Any
) -> OpenAICompatSummarizer:
    recorded = sleeps if sleeps is not None else []
    return OpenAICompatSummarizer(
        [Candidate("local", m, base_url) for m in (models or ("m1",))],
        timeout_ms=timeout_ms,
        sleep=recorded.append,
        env={},
        **kw,
    )


def escalate(model: OpenAICompatSummarizer, **effective: Any) -> Any:
    return summarize_with_escalation(model, SOURCE, depth=0, effective=effective)


def test_success_request_shape(endpoint: Endpoint) -> None:
    endpoint.script = [
        reply("Billing tables moved; index fixed.\nFiles: none\nExpand for details about: index")
    ]
    model = summarizer(endpoint.base_url, api_key="sk-test")
    result = escalate(model)
    assert result.level == "normal"
    assert result.content.startswith("Billing tables moved")
    (seen,) = endpoint.requests
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["Authorization"] == "Bearer sk-test"
    body = seen["body"]
    assert "temperature" not in body
    assert body["model"] == "m1"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    target = max(192, min(2400, int(estimate_tokens(SOURCE) * 0.35)))
    assert body["max_tokens"] == target + 2048
    user = body["messages"][1]["content"]
    assert "<conversation_segment>" in user and "billing tables" in user
    assert "Normal summary policy:" in user and f"about {target} tokens" in user
    assert "untrusted" in body["messages"][0]["content"]


def test_no_thinking_headroom_when_disabled_and_no_key_header(endpoint: Endpoint) -> None:
    endpoint.script = [reply("Short.")]
    summarizer(endpoint.base_url, enable_thinking=False).summarize(SummaryRequest(SOURCE, 300))
    seen = endpoint.requests[0]
    assert seen["body"]["max_tokens"] == 300
    assert "Authorization" not in seen["headers"]


def test_slow_server_times_out_and_fails_over(endpoint: Endpoint) -> None:
    endpoint.script = [{"sleep": 1.0, **reply("too late")}, reply("From the second model.")]
    sleeps: list[float] = []
    model = summarizer(endpoint.base_url, "slow", "fast", timeout_ms=200, sleeps=sleeps)
    result = escalate(model)
    assert result.content == "From the second model."
    assert sleeps == [0.5]
    assert [r["body"]["model"] for r in endpoint.requests] == ["slow", "fast"]


def test_timeout_of_every_candidate_gives_the_fallback(endpoint: Endpoint) -> None:
    endpoint.script = [{"sleep": 1.0, **reply("late")}]
    result = escalate(summarizer(endpoint.base_url, timeout_ms=150))
    assert result.level == "fallback" and not result.auth_failure
    assert result.content.endswith("\n" + FALLBACK_NOTE)


def test_unauthorized_is_an_auth_failure(endpoint: Endpoint) -> None:
    endpoint.script = [
        {"status": 401, "json": {"error": "bad key"}},
        {"status": 403, "json": {"error": "no"}},
    ]
    sleeps: list[float] = []
    model = summarizer(endpoint.base_url, "a", "b", sleeps=sleeps)
    result = escalate(model)
    assert result.auth_failure is True and result.content == ""
    assert sleeps == [0.5]
    endpoint.script = [{"status": 401, "json": {}}]
    with pytest.raises(SummarizerAuthError):
        summarizer(endpoint.base_url).summarize(SummaryRequest(SOURCE, 300))


def test_garbage_reply_is_an_error_then_fallback(endpoint: Endpoint) -> None:
    endpoint.script = [{"raw": b"<html>oops</html>"}]
    with pytest.raises(SummarizerError):
        summarizer(endpoint.base_url).summarize(SummaryRequest(SOURCE, 300))
    endpoint.script = [{"raw": b"{not json"}, {"json": [1, 2]}, {"status": 500, "json": {"error": "boom"}}]
    result = escalate(summarizer(endpoint.base_url, "a", "b", "c"))
    assert result.level == "fallback" and result.content.endswith(FALLBACK_NOTE)
    assert len(endpoint.requests) == 4


def test_oversized_summary_is_capped(endpoint: Endpoint) -> None:
    endpoint.script = [reply("word " * 800)]  # 1000 tokens, below the input, above 3 x 200
    result = escalate(summarizer(endpoint.base_url), leafTargetTokens=200)
    assert result.level == "capped"
    assert result.content.endswith("\n[Capped from 1000 tokens to ~600]")
    assert estimate_tokens(result.content) <= 600


def test_connection_refused_falls_back() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = escalate(summarizer(f"http://127.0.0.1:{port}/v1"))
    assert result.level == "fallback" and result.content.endswith(FALLBACK_NOTE)


def test_empty_output_is_retried_with_more_room(endpoint: Endpoint) -> None:
    endpoint.script = [reply("<think>only thoughts</think>"), reply("Second try worked.")]
    model = summarizer(endpoint.base_url)
    assert model.summarize(SummaryRequest(SOURCE, 300)) == "Second try worked."
    first, second = (r["body"]["max_tokens"] for r in endpoint.requests)
    assert (first, second) == (2348, 4696)


def test_cut_off_answer_is_kept_when_the_retry_is_empty(endpoint: Endpoint) -> None:
    endpoint.script = [reply("Partial summary", finish="length"), reply("")]
    assert summarizer(endpoint.base_url).summarize(SummaryRequest(SOURCE, 300)) == "Partial summary"
    assert len(endpoint.requests) == 2


def test_empty_twice_moves_to_the_next_candidate(endpoint: Endpoint) -> None:
    endpoint.script = [reply(""), reply(None), reply([{"type": "text", "text": "From b."}])]
    assert summarizer(endpoint.base_url, "a", "b").summarize(SummaryRequest(SOURCE, 300)) == "From b."


def test_blank_input_makes_no_call(endpoint: Endpoint) -> None:
    assert summarizer(endpoint.base_url).summarize(SummaryRequest("  ", 300)) == ""
    assert endpoint.requests == []


def test_chat_model_complete_via_factory(endpoint: Endpoint) -> None:
    env = {"LCM_SUMMARY_BASE_URL": endpoint.base_url, "LCM_SUMMARY_API_KEY": "k"}
    chat = build_chat_model({"expansionModel": "exp", "summaryModel": "sum"}, env)
    assert isinstance(chat, ChatModel)
    endpoint.script = [reply("The answer is 42.")]
    assert chat.complete("You answer.", "What is it?", max_tokens=50, timeout_ms=2000) == "The answer is 42."
    body = endpoint.requests[0]["body"]
    assert body["model"] == "exp" and body["max_tokens"] == 50
    assert body["messages"][1]["content"] == "What is it?"


def test_factory_summarizer_uses_prompt_overrides(endpoint: Endpoint, tmp_path: Path) -> None:
    (tmp_path / "leaf.tmpl").write_text("CUSTOM LEAF $target_tokens\n$source_text", encoding="utf-8")
    env = {"LCM_SUMMARY_BASE_URL": endpoint.base_url, "LCM_PROMPTS_DIR": str(tmp_path)}
    model = build_summarizer({"summaryModel": "m"}, env)
    endpoint.script = [reply("ok")]
    model.summarize(SummaryRequest("hello there", 200))
    assert endpoint.requests[0]["body"]["messages"][1]["content"] == "CUSTOM LEAF 200\nhello there"


def test_backoff_schedule() -> None:
    assert [backoff_ms(i) for i in range(6)] == [500, 1000, 2000, 4000, 8000, 8000]


def test_summary_larger_than_its_input_gets_the_aggressive_retry(endpoint: Endpoint) -> None:
    endpoint.script = [reply(SOURCE + " and more"), reply("Billing moved.")]
    result = escalate(summarizer(endpoint.base_url))
    assert result == ("Billing moved.", "aggressive", False)
    first, second = (r["body"] for r in endpoint.requests)
    assert "Normal summary policy:" in first["messages"][1]["content"]
    assert "Aggressive summary policy:" in second["messages"][1]["content"]
    assert second["max_tokens"] < first["max_tokens"]
    endpoint.script = [reply(SOURCE), reply(SOURCE)]
    fallback = escalate(summarizer(endpoint.base_url))
    assert fallback.level == "fallback"
    assert fallback.content.endswith(f"\n[Truncated from {estimate_tokens(SOURCE.strip())} tokens]")
