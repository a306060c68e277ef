"""Turn-path benchmark: engine time in `assemble` + `commit-turn` with a slow summarizer model.

Issue 30: no model call on the turn's path. A stub chat-completions server on 127.0.0.1
answers every summarizer request after ``--model-delay`` seconds (5 by default) and is the
configured summarizer. N turns run in-process through ``lcm_cli.engine.api`` in one session
under a small budget, so the context crosses the threshold and, while the model is still
busy, the budget:

- each turn: ``context.assemble`` (the host's live history, a prompt) then
  ``session.commit_turn`` (the turn's two messages), each timed;
- a commit that records debt starts ``session.maintain`` on a background thread when none
  is running, as `lcm serve`'s follow-up does after answering; it is timed on its own and
  the model's requests are counted against it.

It prints p50/p95/max of assemble, commit-turn and their sum per turn, how many turns ran
the emergency drain (locally), the requests the model got while a turn was in the engine
(must be 0), and maintain's runs, model calls and wall time, with its share of all engine
time. A report, not a test: it exits 0 once it has printed its figures::

    .venv/bin/python benchmarks/bench_turn_path.py                  # 40 turns, 5 s model
    .venv/bin/python benchmarks/bench_turn_path.py --turns 80 --model-delay 2
    .venv/bin/python benchmarks/bench_turn_path.py --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KEY = "agent:main:bench"
CONFIG = {
    "freshTailCount": 8,
    "leafChunkTokens": 1200,
    "leafTargetTokens": 120,
    "condensedTargetTokens": 100,
    "leafMinFanout": 4,
    "condensedMinFanout": 3,
}


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": pct(values, 50),
        "p95": pct(values, 95),
        "max": max(values) if values else math.nan,
        "mean": statistics.fmean(values) if values else math.nan,
        "total": sum(values),
    }


class SlowModel:
    """A chat-completions endpoint that answers after ``delay`` seconds; counts requests."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.requests = 0
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers["Content-Length"]))
                with model.lock:
                    model.requests += 1
                time.sleep(model.delay)
                data = json.dumps(
                    {
                        "choices": [
                            {"message": {"content": "Model summary of the turns."}, "finish_reason": "stop"}
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def messages(n: int) -> list[dict[str, Any]]:
    words = " ".join(f"topic{(n * 13 + k) % 211} detail" for k in range(50))
    return [
        {"role": "user", "content": f"question {n}: {words}", "timestamp": 1796172403934 + 2000 * n},
        {"role": "assistant", "content": f"answer {n}: {words}", "timestamp": 1796172404934 + 2000 * n},
    ]


class Maintainer:
    """`session.maintain` on a background thread, one run at a time (serve's follow-up)."""

    def __init__(self, call: Any, home: str, env: dict[str, str], budget: int, model: SlowModel) -> None:
        self.call, self.home, self.env, self.budget, self.model = call, home, env, budget, model
        self.thread: threading.Thread | None = None
        self.runs: list[dict[str, Any]] = []

    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self) -> None:
        if self.busy():
            return
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        before = self.model.requests
        started = time.perf_counter()
        envelope = self.call(
            "session.maintain",
            {"session_key": KEY, "token_budget": self.budget},
            openclaw_dir=self.home,
            env=self.env,
        )
        data = envelope.get("data") or {}
        self.runs.append(
            {
                "seconds": time.perf_counter() - started,
                "modelCalls": self.model.requests - before,
                "reason": data.get("reason"),
                "refined": (data.get("interim") or {}).get("refined", 0),
            }
        )

    def join(self, timeout: float | None) -> None:
        if self.thread is not None:
            self.thread.join(timeout)


def owed(home: Path) -> bool:
    """Whether the session's debt row is still pending or running."""
    import sqlite3

    conn = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT pending, running FROM conversation_compaction_maintenance").fetchone()
    finally:
        conn.close()
    return bool(row and (row[0] or row[1]))


def run(turns: int, delay: float, budget: int, wait: float) -> dict[str, Any]:
    from lcm_cli.engine.api import call

    model = SlowModel(delay)
    workdir = tempfile.mkdtemp(prefix="lcm-bench-turn-path-")
    home = Path(workdir) / "oc"
    home.mkdir()
    entry = {"enabled": True, "config": CONFIG}
    (home / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LCM_")},
        "LCM_SUMMARIZER": "openai",
        "LCM_SUMMARY_MODEL": "bench-model",
        "LCM_SUMMARY_PROVIDER": "local",
        "LCM_SUMMARY_BASE_URL": model.url,
    }
    maintainer = Maintainer(call, str(home), env, budget, model)
    assemble_ms: list[float] = []
    commit_ms: list[float] = []
    turn_ms: list[float] = []
    emergency = 0
    over_budget = 0
    model_calls_in_turns = 0
    live: list[dict[str, Any]] = []
    for n in range(turns):
        turn = messages(n)
        before = model.requests
        in_flight_before = maintainer.busy()
        t0 = time.perf_counter()
        # The session's first turn has no lcm.db yet to assemble from.
        assembled = (
            call(
                "context.assemble",
                {
                    "session_key": KEY,
                    "token_budget": budget,
                    "messages": [*live, turn[0]],
                    "prompt": turn[0]["content"],
                },
                openclaw_dir=str(home),
                env=env,
            )
            if n
            else {"ok": True, "data": {"estimatedTokens": 0, "details": {}}}
        )
        t1 = time.perf_counter()
        committed = call(
            "session.commit_turn",
            {
                "advancement_key": f"turn-{n}",
                "session_id": "bench-session",
                "session_key": KEY,
                "messages": turn,
                "token_budget": budget,
            },
            openclaw_dir=str(home),
            env=env,
        )
        t2 = time.perf_counter()
        # Requests during the turn that maintain (running in the background) did not make.
        if not in_flight_before and not maintainer.busy():
            model_calls_in_turns += model.requests - before
        assert assembled["ok"] and committed["ok"], (assembled, committed)
        data = assembled["data"]
        emergency += "emergencyDrain" in ((data.get("details") or {}).get("debt") or {})
        over_budget += data["estimatedTokens"] > budget
        if n:
            assemble_ms.append((t1 - t0) * 1000)
        commit_ms.append((t2 - t1) * 1000)
        turn_ms.append((t2 - t0) * 1000)
        live.extend(turn)
        if committed["data"].get("debt"):
            maintainer.start()
    # After the last turn, as the next turns' follow-ups would: drain until the debt is paid.
    waited_from = time.perf_counter()
    end = waited_from + wait
    while time.perf_counter() < end:
        maintainer.join(max(0.0, end - time.perf_counter()))
        if maintainer.busy() or not owed(home):
            break
        maintainer.start()
    waited = time.perf_counter() - waited_from
    maintain_s = [r["seconds"] for r in maintainer.runs]
    engine_turn_s = sum(turn_ms) / 1000
    maintain_total = sum(maintain_s)
    return {
        "turns": turns,
        "modelDelaySeconds": delay,
        "tokenBudget": budget,
        "assembleMs": summary(assemble_ms),
        "commitTurnMs": summary(commit_ms),
        "turnMs": summary(turn_ms),
        "emergencyDrains": emergency,
        "assemblesOverBudget": over_budget,
        "modelCallsDuringTurns": model_calls_in_turns,
        "maintain": {
            "runs": len(maintainer.runs),
            "stillRunning": maintainer.busy(),
            "debtOwedAtExit": owed(home),
            "modelCalls": sum(r["modelCalls"] for r in maintainer.runs),
            "refined": sum(r["refined"] for r in maintainer.runs),
            "seconds": summary(maintain_s),
            "waitedAfterLastTurnSeconds": waited,
            "shareOfEngineTime": maintain_total / (maintain_total + engine_turn_s)
            if maintain_total + engine_turn_s
            else math.nan,
        },
        "modelRequestsTotal": model.requests,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--model-delay", type=float, default=5.0, help="seconds per summarizer answer")
    parser.add_argument("--token-budget", type=int, default=4000)
    parser.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the last maintain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.turns, args.model_delay, args.token_budget, args.wait)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['turns']} turns, model answers in {result['modelDelaySeconds']:g} s, "
        f"budget {result['tokenBudget']} tokens"
    )
    for label, key in (
        ("assemble", "assembleMs"),
        ("commit-turn", "commitTurnMs"),
        ("assemble + commit", "turnMs"),
    ):
        s = result[key]
        print(f"  {label:<18} p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms  max {s['max']:7.2f} ms")
    print(f"  emergency drains (local): {result['emergencyDrains']}")
    print(f"  assembles over budget: {result['assemblesOverBudget']}")
    print(f"  model requests during turns: {result['modelCallsDuringTurns']}")
    m = result["maintain"]
    print(
        f"maintain (background): {m['runs']} runs, {m['modelCalls']} model calls, {m['refined']} interim "
        f"summaries re-summarized, {m['seconds']['total']:.1f} s in all (p50 {m['seconds']['p50']:.1f} s), "
        f"{m['shareOfEngineTime'] * 100:.2f}% of engine time"
        + (" (still running at exit)" if m["stillRunning"] else "")
        + (" (debt still owed at exit)" if m["debtOwedAtExit"] else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
