"""`lcm expand-query`: evidence without a model, and answers from a real chat-completions
server on 127.0.0.1 standing in for the model."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lcm
from tests.support.recall_corpus import build_recall_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("recall-eq")
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    return root, build_recall_corpus(root / "lcm.db", root / "lcm-files")


class FakeModel:
    """A chat-completions endpoint: records requests, answers as told."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: str = json.dumps({"answer": "The deploy failed on a postgres timeout.", "citedIds": []})
        self.status = 200
        self.delay = 0.0


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModel]:
    fake = FakeModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            if fake.delay:
                time.sleep(fake.delay)
            payload = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": fake.reply},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
            data = json.dumps(payload).encode() if fake.status == 200 else b'{"error": {"message": "boom"}}'
            try:
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("LCM_SUMMARY_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("LCM_EXPANSION_MODEL", "test-expander")
    monkeypatch.setenv("LCM_SUMMARY_API_KEY", "sk-test")
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def ask(root: Path, *args: str) -> dict[str, Any]:
    out = lcm("--openclaw-dir", str(root), "expand-query", *args)
    assert out.code == 0, out.stderr
    body: dict[str, Any] = out.json
    return body


FAMILY = ("--session-key", "agent:main:main")


def test_without_a_model_returns_ranked_evidence_and_no_answer(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    body = ask(root, "Why did the deploy fail?", "--query", "billing", *FAMILY)
    data = body["data"]
    assert data["answer"] is None and data["answerStatus"] == "no_model"
    assert "no answer was generated" in data["note"]
    assert [e["summaryId"] for e in data["evidence"]] == [
        data["evidence"][0]["summaryId"],
        data["evidence"][1]["summaryId"],
    ]
    assert {e["summaryId"] for e in data["evidence"]} == {c["condensed"], c["leaf_a"]}
    leaf = next(e for e in data["evidence"] if e["summaryId"] == c["leaf_a"])
    assert [m["messageId"] for m in leaf["messages"]] == [1, 2]
    assert data["expandedSummaryCount"] == 2 and data["totalSourceTokens"] > 0
    assert data["citedIds"] == [] and data["sourceConversationIds"] == [c["main"]]
    assert data["sourceConversationId"] == c["main"] and body["meta"]["candidateSource"] == "summaries"


def test_token_cap_bounds_the_evidence(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    data = ask(root, "What happened?", "--query", "billing", "--token-cap", "120", *FAMILY)["data"]
    assert data["totalSourceTokens"] <= 120 and data["truncated"] is True


def test_messages_lead_to_their_leaf_summary_when_no_summary_matches(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    root, c = corpus
    body = ask(root, "What was it connecting to?", "--query", "connecting", *FAMILY)
    assert [e["summaryId"] for e in body["data"]["evidence"]] == [c["leaf_a"]]
    assert body["meta"]["candidateSource"] == "messages"


def test_no_candidates_answers_so(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    data = ask(root, "Anything about kubernetes?", "--query", "kubernetes", *FAMILY)["data"]
    assert data["answer"] == "No matching summaries found for this scope."
    assert data["answerStatus"] == "no_candidates" and data["expandedSummaryCount"] == 0


def test_bad_input(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    for args, code, status in (
        (("expand-query", "Why?"), "INVALID_ARGUMENT", 2),
        (("expand-query", " ", "--query", "x", *FAMILY), "INVALID_ARGUMENT", 2),
        (("expand-query", "Why?", "--query", "billing"), "MISSING_SELECTOR", 2),
        (("expand-query", "Why?", "--summary-id", "sum_nope"), "SUMMARY_NOT_FOUND", 3),
        (
            ("expand-query", "Why?", "--summary-id", c["leaf_a"], "--conversation-id", str(c["other"])),
            "NOT_IN_SCOPE",
            3,
        ),
        (("expand-query", "Why?", "--query", "a|b", *FAMILY), "INVALID_PATTERN", 2),
        (("expand-query", "Why?", "--query", '""', *FAMILY), "INVALID_PATTERN", 2),
    ):
        out = lcm("--openclaw-dir", str(root), *args)
        assert (out.code, out.error["code"]) == (status, code), args


def test_answers_with_the_configured_model(corpus: tuple[Path, dict[str, Any]], model: FakeModel) -> None:
    root, c = corpus
    model.reply = (
        "```json\n"
        + json.dumps(
            {
                "answer": "A postgres timeout broke the billing deploy.",
                "citedIds": [c["leaf_a"], "msg#2", "sum_made_up"],
            }
        )
        + "\n```"
    )
    data = ask(root, "Why did the deploy fail?", "--summary-id", c["leaf_a"])["data"]
    assert data["answerStatus"] == "answered"
    assert data["answer"] == "A postgres timeout broke the billing deploy."
    assert data["citedIds"] == [c["leaf_a"], "msg#2"]  # ids not in the evidence are dropped
    assert data["model"] and data["expandedSummaryCount"] == 1
    (request,) = model.requests
    assert request["path"].endswith("/chat/completions") and request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "test-expander"
    text = json.dumps(request["body"]["messages"], ensure_ascii=False)
    assert "Why did the deploy fail?" in text and c["leaf_a"] in text
    assert "The billing deploy failed: timeout connecting to postgres" in text


def test_plain_text_reply_is_kept_and_ids_found_in_it(
    corpus: tuple[Path, dict[str, Any]], model: FakeModel
) -> None:
    root, c = corpus
    model.reply = f"It failed because of a timeout (see {c['leaf_a']})."
    data = ask(root, "Why?", "--query", "staging", *FAMILY)["data"]
    assert data["answer"] == model.reply and data["citedIds"] == [c["leaf_a"]]


def test_model_failure_and_timeout_are_reported_not_invented(
    corpus: tuple[Path, dict[str, Any]], model: FakeModel
) -> None:
    root, c = corpus
    model.status = 500
    failed = ask(root, "Why?", "--summary-id", c["leaf_a"])["data"]
    assert failed["answer"] is None and failed["answerStatus"] == "failed"
    assert failed["error"]["code"] == "EXPANSION_MODEL_FAILED" and failed["evidence"]
    model.status, model.delay = 200, 3.0
    started = time.monotonic()
    slow = ask(root, "Why?", "--summary-id", c["leaf_a"], "--timeout-ms", "700")["data"]
    assert time.monotonic() - started < 2.8
    assert slow["answerStatus"] == "failed" and slow["error"]["code"] == "EXPANSION_TIMEOUT"
