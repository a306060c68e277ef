"""A real OpenAI-compatible chat-completions endpoint on 127.0.0.1 for summarizer tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class ChatModel:
    """Records every prompt (the request's messages joined) and answers :meth:`reply`'s text.

    Subclasses decide the answer; ``None`` answers HTTP 500, as a failing provider does.
    """

    def __init__(self) -> None:
        self.prompts: list[str] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = "\n".join(m["content"] for m in body["messages"])
                model.prompts.append(prompt)
                text = model.reply(prompt)
                if text is None:
                    self.send_response(500)
                    self.end_headers()
                    return
                data = json.dumps(
                    {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, prompt: str) -> str | None:
        """The answer to ``prompt`` (the default: a fixed summary)."""
        return "Summary."


@contextmanager
def configured(model: ChatModel, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatModel]:
    """Make ``model`` the configured summarizer (through LCM_* variables) until the block ends."""
    monkeypatch.setenv("LCM_SUMMARIZER", "openai")
    monkeypatch.setenv("LCM_SUMMARY_MODEL", "test-model")
    monkeypatch.setenv("LCM_SUMMARY_PROVIDER", "local")
    monkeypatch.setenv("LCM_SUMMARY_BASE_URL", model.url)
    try:
        yield model
    finally:
        model.server.shutdown()
