"""Seeded conversations for the cross-engine goldens, the summarizer stub both engines use,
and the normalized snapshot of an ``lcm.db`` that both engines' results are compared by.

One module serves the three sides of ``tests/compat/test_engine_goldens.py``:

* ``python -m tests.compat.engine_seeds inputs SET PATH`` writes the scenarios of one set
  (``0.15.3`` or ``1.0.0-beta.4``: config and steps, as that line's host drives them) as
  JSON: the input a driver of lossless-claw's engine reads (docs/compat.md, "Engine
  goldens", says what that driver does);
* ``python -m tests.compat.engine_seeds serve PORT`` runs the deterministic chat-completions
  stub on 127.0.0.1 for such a driver; ``GET /requests`` returns what it was sent;
* ``python -m tests.compat.engine_seeds golden SET RAW OUT`` turns the driver's raw output (its
  answers and a copy of the database after each step) into the golden JSON files, with the
  same :func:`snapshot` and :func:`source_texts` the test applies to our engine.

Everything here is data and normalization: no engine code of either side.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import sqlite3
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: The two lossless-claw lines the goldens were recorded from (``goldens/engine-<set>/``).
SET_0_15 = "0.15.3"
SET_1_0 = "1.0.0-beta.4"
SETS = (SET_0_15, SET_1_0)

SESSION_ID = "0b7e3c1a-5f00-4c2e-9a00-00000000e001"
SESSION_KEY = "agent:main:main"
BASE_MS = 1_780_000_000_000
BIG_BUDGET = 200_000
#: The host store a committed turn's anchors name (no such file: neither engine reads it).
STORE_PATH = "/nonexistent/openclaw/agents/main/agent/openclaw-agent.sqlite"

WORDS = (
    "deploy billing schema index migration nightly build cache worker queue retry timeout "
    "token budget summary context window tail leaf condense parent child branch merge rebase "
    "lint format check type error warning stack trace module package import export config "
    "file path read write rename delete server client socket request response header body"
).split()
CJK = ("会话测试", "日本語の文章", "中文内容", "東京で会議", "한국어 문장", "かなカナ")
EMOJI = ("👋🏽", "🚀", "✅", "🔥", "👨‍👩‍👧", "🇯🇵")
SENDERS = (
    {"senderId": "42", "senderName": "Ada"},
    {"senderId": "7", "senderName": "Grace", "senderUsername": "ghopper"},
    {"senderName": "Linus"},
)
# A 1x1 PNG, and a letters-only payload that still looks like base64 to a detector.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _sentence(rng: random.Random, words: int, *, exotic: bool = False) -> str:
    out = [rng.choice(WORDS) for _ in range(words)]
    if exotic:
        out.insert(rng.randrange(len(out) + 1), rng.choice(CJK))
        out.insert(rng.randrange(len(out) + 1), rng.choice(EMOJI))
    return " ".join(out).capitalize() + "."


def _text(rng: random.Random, sentences: int, *, exotic: bool = False) -> str:
    return " ".join(_sentence(rng, rng.randint(6, 16), exotic=exotic) for _ in range(sentences))


class Clock:
    """Message timestamps: deterministic, 37 seconds apart."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return BASE_MS + self.n * 37_000


def user(clock: Clock, text: Any, sender: dict[str, str] | None = None) -> dict[str, Any]:
    """A host user message (``__openclaw`` carries the sender envelope, as OpenClaw sends it)."""
    message: dict[str, Any] = {"role": "user", "content": text, "timestamp": clock()}
    if sender:
        message["__openclaw"] = dict(sender)
    return message


def assistant(clock: Clock, blocks: list[dict[str, Any]], stop: str = "stop") -> dict[str, Any]:
    """A host assistant message with content blocks."""
    return {
        "role": "assistant",
        "content": blocks,
        "api": "openai-completions",
        "provider": "stub",
        "model": "stub-model",
        "stopReason": stop,
        "timestamp": clock(),
    }


def tool_result(clock: Clock, call_id: str, name: str, text: str, error: bool = False) -> dict[str, Any]:
    """A host tool result message."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": clock(),
    }


class Script:
    """Builds one scenario: the host's live message list grows; each turn is an afterTurn."""

    def __init__(self, name: str, config: dict[str, Any]) -> None:
        self.name = name
        self.config = config
        self.rng = random.Random(name)
        self.clock = Clock()
        self.live: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        # Driver options: "stubMode" ("auth-fail": the stub answers 401), "useSessionFile"
        # (our side passes the transcript path too; the reference's afterTurn always gets one).
        self.options: dict[str, Any] = {}
        # The lines whose engine this scenario runs against (1.0 has no rotate; 0.15.3 no
        # commitTurn, pending summaries or model identity).
        self.sets: tuple[str, ...] = SETS

    def turn(self, messages: list[dict[str, Any]], token_budget: int = BIG_BUDGET) -> None:
        before = len(self.live)
        self.live.extend(messages)
        self.steps.append(
            {
                "op": "afterTurn",
                "messages": list(self.live),
                "prePromptMessageCount": before,
                "tokenBudget": token_budget,
            }
        )

    def assemble(
        self, token_budget: int, *, prompt: str | None = None, tools: list[str] | None = None
    ) -> None:
        step: dict[str, Any] = {"op": "assemble", "messages": list(self.live), "tokenBudget": token_budget}
        if prompt is not None:
            step["prompt"] = prompt
        if tools is not None:
            step["availableTools"] = tools
        self.steps.append(step)

    def compact(
        self, token_budget: int, *, manual: bool = False, force: bool = False, target: str | None = None
    ) -> None:
        step: dict[str, Any] = {
            "op": "compact",
            "tokenBudget": token_budget,
            "manual": manual,
            "force": force,
        }
        if target:
            step["compactionTarget"] = target
        self.steps.append(step)

    def text_turn(
        self, sentences: int = 3, *, exotic: bool = False, sender: dict[str, str] | None = None
    ) -> None:
        rng = self.rng
        self.turn(
            [
                user(self.clock, _text(rng, rng.randint(1, 2), exotic=exotic), sender),
                assistant(self.clock, [{"type": "text", "text": _text(rng, sentences, exotic=exotic)}]),
            ]
        )

    def tool_turn(self, *, thinking: bool, exotic: bool, sender: dict[str, str] | None = None) -> None:
        rng, clock = self.rng, self.clock
        call_id = f"call_{self.name[:6]}_{len(self.live)}"
        step: list[dict[str, Any]] = []
        if thinking:
            step.append(
                {"type": "thinking", "thinking": _text(rng, 2), "thinkingSignature": "sig-" + call_id}
            )
        path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        # Arguments with and without text the summarizer source can read (command, query).
        name, arguments = rng.choice(
            (
                ("read", {"path": path}),
                ("exec", {"command": f"grep -n {rng.choice(WORDS)} {path}", "timeout": 30}),
                ("search", {"query": _sentence(rng, 3), "limit": 5}),
            )
        )
        step.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
        self.turn(
            [
                user(clock, _text(rng, 1, exotic=exotic), sender),
                assistant(clock, step, stop="toolUse"),
                tool_result(clock, call_id, name, _text(rng, rng.randint(3, 8), exotic=exotic)),
                assistant(clock, [{"type": "text", "text": _text(rng, 2, exotic=exotic)}]),
            ]
        )

    def done(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": self.config,
            "options": self.options,
            "sessionId": SESSION_ID,
            "sessionKey": SESSION_KEY,
            "sets": list(self.sets),
            "steps": self.steps,
        }


def _base_config(**extra: Any) -> dict[str, Any]:
    # Every engine knob a scenario depends on is spelled out, so neither side's defaults matter.
    config: dict[str, Any] = {
        "summaryModel": "stub/stub-model",
        "summaryProvider": "stub",
        "timezone": "UTC",
        "freshTailCount": 4,
        "leafChunkTokens": 800,
        "leafMinFanout": 4,
        "condensedMinFanout": 3,
        "condensedMinFanoutHard": 2,
        "contextThreshold": 0.75,
        "proactiveThresholdCompactionMode": "deferred",
        "incrementalMaxDepth": 0,
    }
    config.update(extra)
    return config


def scenario_text_compact() -> dict[str, Any]:
    s = Script("text-compact", _base_config())
    for _ in range(24):
        s.text_turn()
    s.assemble(BIG_BUDGET)
    s.compact(3000, manual=True)
    s.assemble(BIG_BUDGET)
    s.assemble(1500)
    for _ in range(6):
        s.text_turn()
    s.compact(2000, manual=True)
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_text_tokyo_condense() -> dict[str, Any]:
    s = Script("text-tokyo-condense", _base_config(timezone="Asia/Tokyo", leafChunkTokens=500))
    for _ in range(40):
        s.text_turn(4)
    s.compact(2500, manual=True)
    s.assemble(BIG_BUDGET)
    s.compact(1200, force=True)
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_threshold_inline() -> dict[str, Any]:
    s = Script("threshold-inline", _base_config(proactiveThresholdCompactionMode="inline"))
    for _ in range(20):
        before = len(s.live)
        s.text_turn()
        s.steps[-1]["tokenBudget"] = 2400
        s.steps[-1]["prePromptMessageCount"] = before
    s.assemble(2400)
    return s.done()


def scenario_tools_mixed() -> dict[str, Any]:
    s = Script("tools-mixed", _base_config(timezone="America/New_York"))
    for i in range(16):
        sender = SENDERS[i % len(SENDERS)] if i % 2 == 0 else None
        if i % 3 == 2:
            s.text_turn(exotic=True, sender=sender)
        else:
            s.tool_turn(thinking=i % 2 == 0, exotic=i % 4 == 0, sender=sender)
    s.assemble(BIG_BUDGET)
    s.compact(3000, manual=True)
    s.assemble(BIG_BUDGET)
    s.assemble(2500, prompt="what about the billing schema?", tools=["read", "write"])
    s.assemble(1800)
    return s.done()


def scenario_images() -> dict[str, Any]:
    s = Script("images", _base_config())
    letters = base64.b64encode(b"\x00" * 900).decode().replace("A", "Q")[:1200]
    for i in range(6):
        s.text_turn()
        payload = PNG if i % 2 == 0 else letters
        s.turn(
            [
                user(
                    s.clock,
                    [
                        {"type": "text", "text": "look at this " + s.rng.choice(WORDS)},
                        {"type": "image", "data": payload, "mimeType": "image/png"},
                    ],
                ),
                assistant(s.clock, [{"type": "text", "text": _text(s.rng, 2)}]),
            ]
        )
    s.assemble(BIG_BUDGET)
    s.compact(2000, manual=True)
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_large_tool_result() -> dict[str, Any]:
    s = Script("large-tool-result", _base_config())
    for _ in range(3):
        s.text_turn()
    rng, clock = s.rng, s.clock
    lines = [f"{n:05d} {_sentence(rng, 12)}" for n in range(1400)]
    big = "\n".join(lines)
    assert len(big.encode()) > 100_000
    s.turn(
        [
            user(clock, "dump the log please"),
            assistant(
                clock,
                [{"type": "toolCall", "id": "call_big", "name": "exec", "arguments": {"cmd": "cat app.log"}}],
                stop="toolUse",
            ),
            tool_result(clock, "call_big", "exec", big),
            assistant(clock, [{"type": "text", "text": "The log shows nightly build retries."}]),
        ]
    )
    for _ in range(3):
        s.text_turn()
    s.assemble(BIG_BUDGET)
    s.assemble(BIG_BUDGET, prompt="and the log?", tools=["exec"])
    return s.done()


def scenario_new_reset() -> dict[str, Any]:
    s = Script("new-reset", _base_config(newSessionRetainDepth=0, leafChunkTokens=400))
    for _ in range(18):
        s.text_turn()
    s.compact(1500, manual=True)
    s.steps.append({"op": "beforeReset", "reason": "new"})
    s.assemble(BIG_BUDGET, prompt="fresh start", tools=[])
    for _ in range(2):
        s.text_turn()
    s.steps.append({"op": "beforeReset", "reason": "reset"})
    s.live = []
    s.text_turn()
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_deferred_drain() -> dict[str, Any]:
    s = Script("deferred-drain", _base_config(leafChunkTokens=500))
    for _ in range(8):
        s.text_turn(6)
        s.steps[-1]["tokenBudget"] = 2400
    s.assemble(4000)  # over the threshold, under the budget: debt stays pending
    s.assemble(2400)  # stored context over the budget: the emergency drain runs first
    for _ in range(6):
        s.text_turn(6)
        s.steps[-1]["tokenBudget"] = 2400
    s.steps.append({"op": "maintain"})
    s.assemble(2400)
    return s.done()


def scenario_emergency_drain() -> dict[str, Any]:
    # The summarizer refuses (401): the background drain fails and the debt stays pending,
    # so an over-budget assemble runs the emergency drain, which fails too (degraded).
    s = Script("emergency-drain", _base_config(leafChunkTokens=500, circuitBreakerThreshold=4))
    s.options["stubMode"] = "auth-fail"
    for _ in range(14):
        s.text_turn(6)
        s.steps[-1]["tokenBudget"] = 2400
    s.assemble(2400)
    s.assemble(1500)
    s.assemble(1500, prompt="next step?", tools=["read"])
    s.text_turn(6)
    s.steps[-1]["tokenBudget"] = 2400
    s.assemble(1500)
    return s.done()


def scenario_prompt_aware() -> dict[str, Any]:
    s = Script("prompt-aware", _base_config(promptAwareEviction=True))
    for i in range(26):
        if i in (3, 11):
            s.turn(
                [
                    user(s.clock, "Where is the zebrafish migration log? " + _text(s.rng, 1)),
                    assistant(
                        s.clock, [{"type": "text", "text": "The zebrafish log is in var. " + _text(s.rng, 2)}]
                    ),
                ]
            )
        else:
            s.text_turn()
    s.assemble(1500, prompt="zebrafish status?", tools=[])
    s.assemble(1500, prompt="zebrafish")
    s.assemble(3000, prompt="what about the zebrafish migration")
    s.compact(2500, manual=True)
    s.assemble(900, prompt="zebrafish log", tools=["read"])
    s.assemble(1300, prompt="billing")
    return s.done()


def scenario_numbers_live() -> dict[str, Any]:
    s = Script("numbers-live", _base_config())
    values: list[dict[str, Any]] = [
        {"eps": 1e-7, "x": 0.1, "sum": 0.1 + 0.2},
        {"big": 1e21, "bigger": 1.5e300, "n": 123456789012, "neg": -2.5e-6},
        {"f": 1.5e-6, "arr": [1e-7, 2.5, 100.0], "half": 0.5, "whole": 3.0},
    ]
    for i, arguments in enumerate(values):
        call_id = f"call_num_{i}"
        s.turn(
            [
                user(s.clock, f"compute case {i}"),
                assistant(
                    s.clock,
                    [{"type": "toolCall", "id": call_id, "name": "calc", "arguments": arguments}],
                    stop="toolUse",
                ),
                tool_result(s.clock, call_id, "calc", json.dumps({"result": arguments})),
                assistant(s.clock, [{"type": "text", "text": f"done case {i}"}]),
            ]
        )
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_live_images() -> dict[str, Any]:
    s = Script("live-images", _base_config())
    letters = "".join(
        s.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(2400)
    )
    live = [
        user(
            s.clock,
            [
                {"type": "text", "text": "what is in this picture"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ],
        ),
        assistant(s.clock, [{"type": "text", "text": "a single pixel"}]),
        user(
            s.clock,
            [
                {"type": "text", "text": "and this one"},
                {"type": "image", "data": letters, "mimeType": "image/jpeg"},
            ],
        ),
    ]
    s.live = list(live)
    s.assemble(BIG_BUDGET)
    s.live = []
    s.turn(live[:2])
    s.live.append(live[2])
    s.assemble(BIG_BUDGET)
    return s.done()


def _transcript_entries(messages: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    entries = []
    for n, message in enumerate(messages, start):
        stamp = message["timestamp"] / 1000
        entries.append(
            {
                "type": "message",
                "id": f"e{n:04d}",
                "parentId": f"e{n - 1:04d}" if n else None,
                "timestamp": _iso(stamp),
                "message": message,
            }
        )
    return entries


def _iso(seconds: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def scenario_bootstrap_reconcile() -> dict[str, Any]:
    s = Script("bootstrap-reconcile", _base_config())
    s.options["useSessionFile"] = True
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": _iso(BASE_MS / 1000),
        "cwd": "/tmp",
    }

    def transcript() -> None:
        s.steps.append({"op": "writeTranscript", "entries": [header, *_transcript_entries(s.live, 0)]})

    for _ in range(10):
        s.text_turn()
    s.steps.clear()  # the first ten turns reach the engine through the transcript only
    transcript()
    s.steps.append({"op": "bootstrap"})
    s.assemble(BIG_BUDGET)
    for _ in range(3):
        # The host appends each turn to the transcript before the engine's afterTurn.
        s.text_turn()
        after = s.steps.pop()
        transcript()
        s.steps.append(after)
    # Two turns the engine never saw (a crash between transcript write and afterTurn):
    for _ in range(2):
        s.text_turn()
        s.steps.pop()
    transcript()
    s.steps.append({"op": "bootstrap"})
    s.assemble(BIG_BUDGET)
    s.text_turn()
    after = s.steps.pop()
    transcript()
    s.steps.append(after)
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_fork_bounded() -> dict[str, Any]:
    # A forked session (header names its parent) whose history is over bootstrapMaxTokens:
    # the bootstrap keeps the newest part, and assembly appends the host's live suffix.
    s = Script("fork-bounded", _base_config(bootstrapMaxTokens=1500))
    s.options["useSessionFile"] = True
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": _iso(BASE_MS / 1000),
        "cwd": "/tmp",
        "parentSession": "/tmp/parent-session.jsonl",
    }
    for _ in range(16):
        s.text_turn(4)
    s.steps.clear()
    s.steps.append({"op": "writeTranscript", "entries": [header, *_transcript_entries(s.live, 0)]})
    s.steps.append({"op": "bootstrap"})
    s.assemble(BIG_BUDGET)
    s.live.append(user(s.clock, "and now? " + _text(s.rng, 1)))
    s.assemble(BIG_BUDGET)
    s.assemble(2500)
    s.assemble(2500, prompt="and now?", tools=["read"])
    # Live images in the suffix the host passes (not stored): their serialized estimate.
    letters = "".join(
        s.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(3000)
    )
    s.live.append(assistant(s.clock, [{"type": "text", "text": "send the screenshots"}]))
    s.live.append(
        user(
            s.clock,
            [
                {"type": "text", "text": "here"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "image", "data": letters, "mimeType": "image/jpeg"},
            ],
        )
    )
    s.assemble(BIG_BUDGET)
    s.assemble(3000, prompt="here", tools=[])
    return s.done()


def scenario_rotate() -> dict[str, Any]:
    # A JSONL host: the transcript grows with each turn; rotate cuts it to the preserved tail.
    s = Script("rotate", _base_config())
    s.sets = (SET_0_15,)  # the 1.0 line rotates nothing: the host owns the transcript
    s.options["useSessionFile"] = True
    header = {
        "type": "session",
        "version": 3,
        "id": SESSION_ID,
        "timestamp": _iso(BASE_MS / 1000),
        "cwd": "/tmp",
    }
    for _ in range(12):
        s.text_turn()
        after = s.steps.pop()
        s.steps.append({"op": "writeTranscript", "entries": [header, *_transcript_entries(s.live, 0)]})
        s.steps.append(after)
    s.compact(2000, manual=True)
    s.steps.append({"op": "rotate"})
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_circuit_breaker() -> dict[str, Any]:
    s = Script("circuit-breaker", _base_config(circuitBreakerThreshold=2))
    s.options["stubMode"] = "auth-fail"
    for _ in range(14):
        s.text_turn()
    for _ in range(3):
        s.compact(2000, manual=True)
    s.compact(2000, target="threshold")
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_spend_guard() -> dict[str, Any]:
    s = Script("spend-guard", _base_config(summaryMaxCallsPerWindow=2, leafChunkTokens=400))
    for _ in range(24):
        s.text_turn()
    s.compact(1500, target="threshold")
    s.compact(1500, target="threshold")
    s.compact(1500, manual=True)
    s.assemble(BIG_BUDGET)
    return s.done()


def _mention(s: Script, words: int, identifier: str, tail: str) -> str:
    # The identifier sits past the first twenty words, so the stub's summaries (which quote
    # the source's first twenty words) do not carry it and a compacted mention is gone.
    return f"{_sentence(s.rng, words)} {_sentence(s.rng, words)} The {identifier} {tail}. {_text(s.rng, 1)}"


# The recall cue is prepended only when the assembly before it plus the cue fits the budget:
# these budgets sit around that sum (585 + 127 tokens in this conversation), on both sides.
RECALL_BUDGETS = (560, 600, 700, 708, 710, 711, 712, 713, 716, 730)


def scenario_prompt_recall() -> dict[str, Any]:
    s = Script("prompt-recall", _base_config())
    for i in range(22):
        if i in (2, 6):
            name = "BILLING_SCHEMA_V2" if i == 2 else "ZEBRA_LOG_PATH"
            s.turn(
                [
                    user(s.clock, _mention(s, 12, name, "is the one we keep")),
                    assistant(s.clock, [{"type": "text", "text": _mention(s, 12, name, "is noted")}]),
                ]
            )
        else:
            s.text_turn()
    s.compact(2500, manual=True)
    s.assemble(BIG_BUDGET, prompt="where is ZEBRA_LOG_PATH and what is BILLING_SCHEMA_V2?")
    for budget in RECALL_BUDGETS:
        s.assemble(budget, prompt="where is ZEBRA_LOG_PATH and what is BILLING_SCHEMA_V2?", tools=["read"])
    s.assemble(BIG_BUDGET, prompt="ZEBRA_LOG_PATH again, and API_TOKEN_VALUE?")
    return s.done()


def scenario_prompt_aware_tools() -> dict[str, Any]:
    # Prompt-aware eviction scored over tool calls, tool results, thinking and summaries.
    s = Script("prompt-aware-tools", _base_config(promptAwareEviction=True, timezone="Asia/Tokyo"))
    for i in range(18):
        sender = SENDERS[i % len(SENDERS)] if i % 3 == 0 else None
        if i in (2, 9):
            call_id = f"call_zebra_{i}"
            s.turn(
                [
                    user(s.clock, "check the zebrafish migration " + _text(s.rng, 1), sender),
                    assistant(
                        s.clock,
                        [
                            {
                                "type": "thinking",
                                "thinking": "zebrafish " + _text(s.rng, 1),
                                "thinkingSignature": "sig",
                            },
                            {
                                "type": "toolCall",
                                "id": call_id,
                                "name": "read",
                                "arguments": {"path": "zebrafish.log"},
                            },
                        ],
                        stop="toolUse",
                    ),
                    tool_result(s.clock, call_id, "read", "zebrafish migration ok. " + _text(s.rng, 4)),
                    assistant(s.clock, [{"type": "text", "text": _text(s.rng, 2)}]),
                ]
            )
        elif i % 2:
            s.tool_turn(thinking=i % 4 == 1, exotic=i % 5 == 0, sender=sender)
        else:
            s.text_turn(exotic=i % 4 == 0, sender=sender)
    s.assemble(2000, prompt="zebrafish migration?", tools=["read", "exec"])
    s.assemble(1500, prompt="zebrafish", tools=["read"])
    s.compact(2500, manual=True)
    s.assemble(1200, prompt="zebrafish migration log", tools=["read", "search"])
    s.assemble(900, prompt="billing schema", tools=[])
    s.assemble(1200, prompt="zebrafish")
    return s.done()


def scenario_manual_sweep() -> dict[str, Any]:
    # Manual compaction is one sweep, even when the context stays over the budget; a forced
    # budget compaction and a threshold compaction that cannot get under its target follow.
    s = Script("manual-sweep", _base_config(leafChunkTokens=600))
    for _ in range(36):
        s.text_turn(4)
    s.compact(600, manual=True)
    s.assemble(BIG_BUDGET)
    s.compact(600, manual=True)
    s.compact(900, target="threshold")
    s.compact(700, force=True)
    s.assemble(BIG_BUDGET)
    for _ in range(4):
        s.text_turn(4)
    s.compact(400, target="threshold")
    s.assemble(1200)
    return s.done()


def scenario_sender_threshold() -> dict[str, Any]:
    # Every user message carries sender metadata: the stored-context count the threshold is
    # judged by must not count the sender lines, or compaction fires turns early.
    s = Script(
        "sender-threshold", _base_config(proactiveThresholdCompactionMode="inline", timezone="Asia/Tokyo")
    )
    for i in range(18):
        before = len(s.live)
        s.text_turn(sender=SENDERS[i % len(SENDERS)])
        s.steps[-1]["tokenBudget"] = 2000
        s.steps[-1]["prePromptMessageCount"] = before
    s.assemble(2000)
    return s.done()


def scenario_large_payloads() -> dict[str, Any]:
    # Every externalization path with a low threshold: <file> blocks of each content class
    # in user messages, whole oversized messages (text and blocks), a JSON tool result.
    s = Script("large-payloads", _base_config(largeFileThresholdTokens=1500))
    rng = s.rng
    csv = "id, name ,score\n" + "\n".join(f"{n},{rng.choice(WORDS)},{rng.randint(0, 99)}" for n in range(900))
    code = "import os\nfrom pathlib import Path\n\n" + "\n".join(
        f"def {rng.choice(WORDS)}_{n}(x):\n    return x + {n}\n" for n in range(260)
    )
    data = json.dumps({"items": [{"id": n, "tags": [rng.choice(WORDS)]} for n in range(400)], "ok": True})
    notes = "# Notes\n\n" + "\n".join(f"## Part {n}\n{_text(rng, 3)}" for n in range(40))
    s.text_turn()
    s.turn(
        [
            user(
                s.clock,
                f'Please read these.\n<file name="scores.csv" mime="text/csv">{csv}</file>\n'
                f'<file name="tiny.yaml">a: 1\nb: 2</file>\n<file name="tool.py" mime="text/x-python">{code}</file>',
            ),
            assistant(s.clock, [{"type": "text", "text": "Read both files."}]),
        ]
    )
    s.turn(
        [
            user(s.clock, f'<file name="dump.json">{data}</file> and <file name="notes.md">{notes}</file>'),
            assistant(s.clock, [{"type": "text", "text": _text(rng, 2)}]),
        ]
    )
    s.turn(
        [
            user(
                s.clock, [{"type": "text", "text": _text(rng, 60)}, {"type": "text", "text": _text(rng, 60)}]
            ),
            assistant(s.clock, [{"type": "text", "text": "\n".join(_text(rng, 4) for _ in range(40))}]),
        ]
    )
    call_id = "call_json_1"
    s.turn(
        [
            user(s.clock, "list the items"),
            assistant(
                s.clock,
                [{"type": "toolCall", "id": call_id, "name": "search", "arguments": {"query": "items"}}],
                stop="toolUse",
            ),
            tool_result(s.clock, call_id, "search", data),
            assistant(s.clock, [{"type": "text", "text": "There are 400 items."}]),
        ]
    )
    for _ in range(3):
        s.text_turn()
    s.assemble(BIG_BUDGET)
    s.assemble(BIG_BUDGET, prompt="the scores?", tools=["read"])
    s.compact(2000, manual=True)
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_live_inputs() -> dict[str, Any]:
    # What the host passes to assemble besides the stored history: the turn's own prompt
    # not yet ingested, a retry marker and an internal-context block (volatile inputs).
    s = Script("live-inputs", _base_config())
    for _ in range(10):
        s.text_turn()
    s.compact(2000, manual=True)
    stored = list(s.live)
    s.live = [*stored, user(s.clock, "and the next step?")]
    s.assemble(BIG_BUDGET)
    s.assemble(BIG_BUDGET, prompt="and the next step?", tools=["read"])
    retry = user(s.clock, "[Retry after the previous model attempt failed or timed out]\ncontinue please")
    s.live = [*stored, retry]
    s.assemble(BIG_BUDGET)
    s.assemble(1500, prompt="continue please", tools=[])
    internal = user(
        s.clock,
        "[Inter-session message]\n<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nsubagent finished: "
        + _text(s.rng, 2)
        + "\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
    )
    s.live = [*stored[:-2], internal, *stored[-2:]]
    s.assemble(BIG_BUDGET)
    s.live = [*stored, retry]
    s.turn([assistant(s.clock, [{"type": "text", "text": "continuing"}])])
    s.assemble(BIG_BUDGET)
    return s.done()


def scenario_parallel_tools() -> dict[str, Any]:
    # The common agent step: thinking, two tool calls at once, their results (one an
    # error), then the reply; a deeper DAG (incremental condensation) and tight budgets
    # that cut between a call and its results.
    s = Script("parallel-tools", _base_config(incrementalMaxDepth=2, leafChunkTokens=600))
    rng, clock = s.rng, s.clock
    for i in range(20):
        if i % 3 == 1:
            s.text_turn()
            continue
        first, second = f"call_par_{i}_a", f"call_par_{i}_b"
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": _text(rng, 1), "thinkingSignature": f"sig-{i}"},
            {
                "type": "toolCall",
                "id": first,
                "name": "read",
                "arguments": {"path": f"src/{rng.choice(WORDS)}.py"},
            },
            {
                "type": "toolCall",
                "id": second,
                "name": "exec",
                "arguments": {"command": f"ls {rng.choice(WORDS)}"},
            },
        ]
        s.turn(
            [
                user(clock, _text(rng, 1)),
                assistant(clock, blocks, stop="toolUse"),
                tool_result(clock, first, "read", _text(rng, rng.randint(2, 6))),
                tool_result(clock, second, "exec", "No such file or directory", error=i % 2 == 0),
                assistant(clock, [{"type": "text", "text": _text(rng, 2)}]),
            ]
        )
        s.steps[-1]["tokenBudget"] = 3000
    s.assemble(3000)
    s.assemble(1200, prompt="what did ls say?", tools=["read", "exec"])
    s.compact(1500, force=True)
    s.assemble(900)
    s.assemble(700, prompt="next?", tools=["exec"])
    return s.done()


# --------------------------------------------------------------------------------------
# Scenarios of the 1.0 line only (commitTurn, pending summaries, model identity, the clamp)
# --------------------------------------------------------------------------------------


def commit(
    s: Script, messages: list[dict[str, Any]], token_budget: int = BIG_BUDGET, key: str | None = None
) -> None:
    """A host-delivered turn (``commitTurn``): ``messages`` follow the live list's end."""
    s.turn(messages, token_budget)
    step = s.steps.pop()
    s.steps.append(commit_step(step, key or f"turn-{len(s.steps):03d}"))


def commit_step(step: dict[str, Any], key: str) -> dict[str, Any]:
    """The ``commitTurn`` a current host (OpenClaw 2026.8 and later) sends for an afterTurn step.

    The turn is the live list's suffix after ``prePromptMessageCount``; its anchors name
    transcript entries ``e<position>`` of one generation, as the host's SQLite transcript
    would, and the token budget travels as ``runtimeSettings.limits.promptTokenBudget``.
    """
    position = step["prePromptMessageCount"]
    messages = step["messages"][position:]
    target = {
        "agentId": "main",
        "sessionId": SESSION_ID,
        "sessionKey": SESSION_KEY,
        "storePath": STORE_PATH,
        "generation": "g1",
    }
    last = position + len(messages) - 1
    admission = {
        **target,
        "entryId": f"e{position:04d}",
        "effectiveParentId": f"e{position - 1:04d}" if position else None,
        "activeMessagePosition": position,
        "rawSeq": position,
        "logicalTurnId": key,
        "role": messages[0]["role"],
    }
    terminal = {
        **target,
        "entryId": f"e{last:04d}",
        "effectiveParentId": f"e{last - 1:04d}" if last else None,
        "activeMessagePosition": last,
        "rawSeq": last,
    }
    return {
        "op": "commitTurn",
        "advancementKey": key,
        "admission": admission,
        "terminal": terminal,
        "messages": messages,
        "tokenBudget": step["tokenBudget"],
    }


def for_set(scenario: dict[str, Any], line: str) -> dict[str, Any]:
    """``scenario`` as the host of lossless-claw line ``line`` drives it.

    0.15.3's hosts deliver turns through ``afterTurn`` with the whole live list; the 1.0
    line's hosts (OpenClaw 2026.8 and later) through ``commitTurn`` with the turn alone.
    """
    if line == SET_0_15:
        return scenario
    steps = [
        commit_step(step, f"turn-{index:03d}") if step["op"] == "afterTurn" else step
        for index, step in enumerate(scenario["steps"])
    ]
    return {**scenario, "steps": steps}


def scenario_pending_publish() -> dict[str, Any]:
    # Below the threshold, every leaf chunk outside the tail is prepared in the background
    # (pending summaries); the turn that crosses the threshold publishes the prepared
    # prefix without a model call in the foreground.
    s = Script("pending-publish", _base_config(leafChunkTokens=400))
    s.sets = (SET_1_0,)
    for i in range(18):
        s.text_turn(4)
        s.steps[-1] = commit_step(s.steps[-1], f"turn-{i:03d}")
        s.steps[-1]["tokenBudget"] = 1800
    s.assemble(1800)
    s.steps.append({"op": "maintain"})
    s.assemble(1800)
    s.assemble(1200, prompt="what about the nightly build?", tools=["read"])
    return s.done()


def _with_identity(message: dict[str, Any], identity: dict[str, str] | None) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k not in ("api", "provider", "model")}
    out.update(identity or {})
    return out


def scenario_model_identity() -> dict[str, Any]:
    # Assistant messages of the session's model, of another model and with no identity,
    # with thinking signed by the provider, by OpenClaw's reasoning_content sentinel and by
    # an OpenAI reasoning item: assembly re-attaches the stored identity and gates signatures.
    # No leaf chunk is ever due (leafChunkTokens): nothing is summarized, so every answer
    # is assembly's own.
    s = Script("model-identity", _base_config(leafChunkTokens=20_000))
    s.sets = (SET_1_0,)
    rng, clock = s.rng, s.clock
    same = {"api": "openai-completions", "provider": "stub", "model": "stub-model"}
    other = {
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4",
        "responseModel": "claude-sonnet-4-20250514",
    }
    reasoning_item = json.dumps({"type": "reasoning", "id": "rs_0001", "encrypted_content": "gAAAAB"})
    cases = [
        (same, "sig-provider-1"),
        (same, "reasoning_content"),
        (other, "sig-anthropic-2"),
        (None, "sig-legacy-3"),
        (None, "reasoning_content"),
        (same, reasoning_item),
        (other, "reasoning_content"),
    ]
    for i, (identity, signature) in enumerate(cases):
        call_id = f"call_ident_{i}"
        step = assistant(
            clock,
            [
                {"type": "thinking", "thinking": _text(rng, 1), "thinkingSignature": signature},
                {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": f"f{i}.py"}},
            ],
            stop="toolUse",
        )
        reply = assistant(
            clock,
            [
                {"type": "thinking", "thinking": _text(rng, 1), "thinkingSignature": signature},
                {"type": "text", "text": _text(rng, 2)},
            ],
        )
        commit(
            s,
            [
                user(clock, _text(rng, 1)),
                _with_identity(step, identity),
                tool_result(clock, call_id, "read", _text(rng, 3)),
                _with_identity(reply, identity),
            ],
        )
        if i % 3 == 2:
            s.text_turn()
            s.steps[-1] = commit_step(s.steps[-1], f"turn-{len(s.steps) - 1:03d}")
    s.assemble(BIG_BUDGET)
    s.assemble(1500, prompt="what did f3.py say?", tools=["read"])
    s.assemble(900)
    return s.done()


# Budgets around the point where the assembled messages fit the whole budget but not 90%
# of it (the 1.0 line's final clamp), from below the fresh tail to all of it.
CLAMP_BUDGETS = (400, 700, 900, 1100, 1300, 1500, 1700, 1900, 2100, 2400, 2800, 3400)


def scenario_final_clamp() -> dict[str, Any]:
    # The final clamp: 1.0 stops at 90% of the serialized budget, 0.15.3 at 100%. No leaf
    # chunk is ever due (leafChunkTokens): the answers are assembly's own.
    s = Script("final-clamp", _base_config(leafChunkTokens=20_000))
    s.sets = (SET_1_0,)
    for i in range(12):
        if i % 3 == 1:
            s.tool_turn(thinking=True, exotic=False)
        else:
            s.text_turn(4)
        s.steps[-1] = commit_step(s.steps[-1], f"turn-{i:03d}")
    for budget in CLAMP_BUDGETS:
        s.assemble(budget)
    for budget in CLAMP_BUDGETS[::3]:
        s.assemble(budget, prompt="the cache worker?", tools=["read"])
    return s.done()


def scenario_commit_retries() -> dict[str, Any]:
    # The host retries a commit it did not see acknowledged: the same key and payload
    # answers duplicate and stores nothing twice; a reused key with another payload fails.
    s = Script("commit-retries", _base_config())
    s.sets = (SET_1_0,)
    committed: list[dict[str, Any]] = []
    for i in range(6):
        s.text_turn()
        s.steps[-1] = commit_step(s.steps[-1], f"turn-{i:03d}")
        committed.append(s.steps[-1])
        if i in (1, 4):
            s.steps.append(dict(committed[-1]))  # the retry of the turn just committed
    s.steps.append(dict(committed[0]))  # a late retry of the first turn
    s.assemble(BIG_BUDGET)
    changed = dict(committed[2])
    changed["messages"] = [*changed["messages"][:-1], assistant(s.clock, [{"type": "text", "text": "other"}])]
    s.steps.append(changed)  # the key of turn 2 with another answer: refused, nothing stored
    s.text_turn()
    s.steps[-1] = commit_step(s.steps[-1], "turn-006")
    s.assemble(BIG_BUDGET)
    return s.done()


def scenarios(line: str | None = None) -> list[dict[str, Any]]:
    """Every seeded scenario, most valuable first; with ``line``, those of that line's set,
    as its host drives them (:func:`for_set`)."""
    every = [
        scenario_text_compact(),
        scenario_tools_mixed(),
        scenario_threshold_inline(),
        scenario_text_tokyo_condense(),
        scenario_large_tool_result(),
        scenario_images(),
        scenario_new_reset(),
        scenario_deferred_drain(),
        scenario_emergency_drain(),
        scenario_prompt_aware(),
        scenario_numbers_live(),
        scenario_live_images(),
        scenario_bootstrap_reconcile(),
        scenario_fork_bounded(),
        scenario_rotate(),
        scenario_circuit_breaker(),
        scenario_spend_guard(),
        scenario_prompt_recall(),
        scenario_prompt_aware_tools(),
        scenario_manual_sweep(),
        scenario_sender_threshold(),
        scenario_large_payloads(),
        scenario_live_inputs(),
        scenario_parallel_tools(),
        scenario_pending_publish(),
        scenario_model_identity(),
        scenario_final_clamp(),
        scenario_commit_retries(),
    ]
    if line is None:
        return every
    return [for_set(s, line) for s in every if line in s["sets"]]


# --------------------------------------------------------------------------------------
# The deterministic summarizer stub
# --------------------------------------------------------------------------------------

_TAGS = ("conversation_segment", "conversation_to_condense")


def source_of(prompt: str) -> tuple[str, str, str | None]:
    """``(kind, source text, previous context)`` of a summarizer prompt (either engine's)."""
    for tag in _TAGS:
        match = re.search(rf"<{tag}>\n(.*)\n</{tag}>", prompt, re.S)
        if match:
            previous = re.search(r"<previous_context>\n(.*?)\n</previous_context>", prompt, re.S)
            kind = "leaf" if tag == _TAGS[0] else "condensed"
            return kind, match.group(1), previous.group(1) if previous else None
    return "other", prompt, None


def _prompt_of(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if message.get("role") != "system":
            parts.append(str(content))
    return "\n".join(parts)


_RANDOM_ID = re.compile(r"\b(sum|file)_[0-9a-f]{16}\b")


def mask_ids(text: str) -> str:
    """``text`` with random summary and file ids masked (each run draws new ones)."""
    return _RANDOM_ID.sub(lambda m: m.group(1) + "_*", text)


def stub_summary(prompt: str) -> str:
    """The stub's answer: a function of the source text only (the prompts' wording differs)."""
    kind, source, _previous = source_of(prompt)
    source = mask_ids(source)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    words = re.findall(r"\w+", source)[:20]
    return f"{kind} summary {digest}: " + " ".join(words)


class Stub:
    """A chat-completions server on 127.0.0.1 that answers :func:`stub_summary`."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, payload: Any) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._send(stub.requests)
                if self.path.endswith("?clear=1"):
                    stub.requests.clear()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                prompt = _prompt_of(body)
                stub.requests.append({"prompt": prompt})
                if self.path.startswith("/auth-fail/"):
                    # What a provider answers a revoked key: the circuit breaker's input.
                    raw = json.dumps(
                        {
                            "error": {
                                "message": "Incorrect API key provided",
                                "type": "invalid_request_error",
                                "code": "invalid_api_key",
                            }
                        }
                    ).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                text = stub_summary(prompt)
                self._send(
                    {
                        "choices": [
                            {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ]
                    }
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def source_texts(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What each summarizer call was asked to summarize, in call order."""
    out = []
    for request in requests:
        kind, source, previous = source_of(request["prompt"])
        out.append({"kind": kind, "source": mask_ids(source), "previous": previous and mask_ids(previous)})
    return out


# --------------------------------------------------------------------------------------
# Normalized database snapshot
# --------------------------------------------------------------------------------------


class Names:
    """Random ids (``sum_…``, ``file_…``) renamed by first appearance, so two runs compare."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        return re.sub(r"\b(sum|file)_[0-9a-f]{16}\b", self._name, value)

    def _name(self, match: re.Match[str]) -> str:
        key = match.group(0)
        if key not in self.map:
            self.map[key] = f"{match.group(1)}#{sum(1 for k in self.map if k.startswith(match.group(1)))}"
        return self.map[key]


def snapshot(db: Path) -> dict[str, Any]:
    """The normalized state of ``db``: conversations, messages, parts, summaries, context."""
    if not db.exists():  # nothing written yet (our engine creates the file on first write)
        return {"conversations": [], "messages": [], "parts": [], "summaries": [], "context": {}}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    names = Names()
    try:
        summary_rows = conn.execute("SELECT * FROM summaries ORDER BY created_at, rowid").fetchall()
        for row in summary_rows:
            names(row["summary_id"])
        out: dict[str, Any] = {
            "conversations": [
                {
                    "id": r["conversation_id"],
                    "active": r["active"],
                    "archived": r["archived_at"] is not None,
                    "sessionKey": r["session_key"],
                }
                for r in conn.execute("SELECT * FROM conversations ORDER BY conversation_id")
            ],
            "messages": [
                {
                    "id": r["message_id"],
                    "conversation": r["conversation_id"],
                    "seq": r["seq"],
                    "role": r["role"],
                    "tokens": r["token_count"],
                    "content": names(r["content"] or ""),
                }
                for r in conn.execute("SELECT * FROM messages ORDER BY message_id")
            ],
            "parts": [
                {
                    "message": r["message_id"],
                    "ordinal": r["ordinal"],
                    "type": r["part_type"],
                    "text": names(r["text_content"]) if r["text_content"] is not None else None,
                    "toolCallId": r["tool_call_id"],
                    "toolName": r["tool_name"],
                }
                for r in conn.execute("SELECT * FROM message_parts ORDER BY message_id, ordinal")
            ],
            "summaries": [],
            "context": {},
        }
        for row in summary_rows:
            sid = row["summary_id"]
            out["summaries"].append(
                {
                    "id": names(sid),
                    "conversation": row["conversation_id"],
                    "kind": row["kind"],
                    "depth": row["depth"],
                    "tokens": row["token_count"],
                    "content": names(row["content"]),
                    "messages": [
                        m[0]
                        for m in conn.execute(
                            "SELECT message_id FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
                            (sid,),
                        )
                    ],
                    "children": [
                        names(p[0])
                        for p in conn.execute(
                            "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
                            (sid,),
                        )
                    ],
                }
            )
        for r in conn.execute("SELECT * FROM context_items ORDER BY conversation_id, ordinal"):
            item = f"m{r['message_id']}" if r["item_type"] == "message" else names(r["summary_id"])
            out["context"].setdefault(str(r["conversation_id"]), []).append(item)
        return out
    finally:
        conn.close()


def step_state(full: dict[str, Any]) -> dict[str, Any]:
    """What a golden keeps after each step: the context and the DAG's shape, not the texts.

    Messages and summaries are never rewritten, so their texts are compared once, in the
    final snapshot; each step keeps which items the context holds and how summaries link.
    """
    return {
        "conversations": full["conversations"],
        "context": full["context"],
        "messageCount": len(full["messages"]),
        "summaries": [
            {key: s[key] for key in ("id", "kind", "depth", "tokens", "messages", "children")}
            for s in full["summaries"]
        ],
    }


def transcript_shape(path: Path) -> list[list[Any]]:
    """A transcript's lines as ``[type, id, parentId, role]`` (what a rotation kept)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
            out.append([entry.get("type"), entry.get("id"), entry.get("parentId"), message.get("role")])
    return out


def normalize_messages(messages: Any) -> Any:
    """Assembled messages with random ids renamed (file and summary ids)."""
    names = Names()
    return json.loads(names(json.dumps(messages, ensure_ascii=False)))


# --------------------------------------------------------------------------------------
# Command line: inputs, stub server, goldens from a driver's raw output
# --------------------------------------------------------------------------------------


def _golden(raw: Path, out: Path, line: str) -> None:
    """Goldens from a driver's raw output: ``RAW/<scenario>/result.json`` and ``step-<n>.db``."""
    out.mkdir(parents=True, exist_ok=True)
    for scenario in scenarios(line):
        folder = raw / scenario["name"]
        result = json.loads((folder / "result.json").read_text())
        steps = []
        for index, step in enumerate(result["steps"]):
            entry = {"op": step["op"], "answer": step.get("answer")}
            if step["op"] == "assemble":
                entry["answer"] = {
                    "messages": normalize_messages(step["answer"]["messages"]),
                    "estimatedTokens": step["answer"]["estimatedTokens"],
                    "systemPromptAddition": step["answer"].get("systemPromptAddition"),
                }
            entry["summarizer"] = source_texts(step.get("requests", []))
            entry["state"] = step_state(snapshot(folder / f"step-{index}.db"))
            steps.append(entry)
        final = snapshot(folder / f"step-{len(result['steps']) - 1}.db")
        golden = {
            "scenario": scenario["name"],
            "reference": result["reference"],
            "steps": steps,
            "final": final,
        }
        text = json.dumps(golden, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        (out / f"{scenario['name']}.json").write_text(text, encoding="utf-8")


def _serve(port: int) -> None:
    stub = Stub(port)
    print(f"stub on {stub.base_url}", flush=True)
    stub.server.serve_forever()


def main(argv: list[str]) -> int:
    """``inputs SET PATH`` | ``serve PORT`` | ``golden SET RAW OUT`` (SET: 0.15.3 or 1.0.0-beta.4)."""
    if argv[:1] == ["inputs"] and len(argv) == 3 and argv[1] in SETS:
        Path(argv[2]).write_text(
            json.dumps(scenarios(argv[1]), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        return 0
    if argv[:1] == ["serve"] and len(argv) == 2:
        _serve(int(argv[1]))
        return 0
    if argv[:1] == ["golden"] and len(argv) == 4 and argv[1] in SETS:
        _golden(Path(argv[2]), Path(argv[3]), argv[1])
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


def iter_steps(scenario: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The steps of a scenario with their index."""
    yield from enumerate(scenario["steps"])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
