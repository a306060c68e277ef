"""Turn-time benchmark: summaries prepared between turns, published at the threshold.

Issue 30 item 3. A stub chat-completions server on 127.0.0.1 answers every summarizer
request after ``--model-delay`` seconds (5 by default) and is the configured summarizer.
A long conversation (``--turns``, 150 by default) runs in-process through
``lcm_cli.engine.api`` in one session under a small budget, so it crosses the threshold
again and again:

- each turn: ``context.assemble`` (the live history and the prompt), then
  ``session.commit_turn`` (the turn's two messages), each timed; then ``--turn-gap``
  seconds pass (the host's own model answering, the user typing);
- after every commit, ``session.maintain`` runs on a background thread unless one is
  already running (then once more when it ends), as `lcm serve`'s follow-up lane does: it
  drains debt and prepares pending summaries with the model for up to
  ``pendingPreparationBudgetMs`` (``--prepare-budget-ms``), timed on its own.

Reported: p50/p95/max of assemble, commit-turn and their sum (target: p95 of the sum under
50 ms); the requests the model got while a turn was in the engine (must be 0); how the
commits over the threshold were met (a prepared batch published, or debt recorded for
the follow-up); the emergency drains (local); assembles over the budget (must be 0); the
summaries by model at the end; maintain's runs, model calls, prepared nodes and wall time. A report, not a test: it exits 0 once it has printed its figures::

    .venv/bin/python benchmarks/bench_turn_time.py                     # 150 turns, 5 s model
    .venv/bin/python benchmarks/bench_turn_time.py --turns 60 --model-delay 1 --turn-gap 0.5
    .venv/bin/python benchmarks/bench_turn_time.py --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_turn_path import SlowModel, messages, summary  # noqa: E402 (after the path is set)

KEY = "agent:main:bench-turn-time"
CONFIG = {
    "freshTailCount": 8,
    "leafChunkTokens": 1000,
    "leafTargetTokens": 120,
    "condensedTargetTokens": 100,
    "leafMinFanout": 4,
    "condensedMinFanout": 3,
}


class FollowUpLane:
    """`session.maintain` on one background thread, as serve's follow-up lane: one run at a
    time, and one more queued when asked while running."""

    def __init__(self, call: Any, home: str, env: dict[str, str], budget: int, model: SlowModel) -> None:
        self.call, self.home, self.env, self.budget, self.model = call, home, env, budget, model
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.again = False
        self.runs: list[dict[str, Any]] = []

    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def offer(self) -> None:
        with self.lock:
            if self.busy():
                self.again = True
                return
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()

    def _loop(self) -> None:
        while True:
            self._run()
            with self.lock:
                if not self.again:
                    return
                self.again = False

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
        pending = data.get("pending") or {}
        self.runs.append(
            {
                "seconds": time.perf_counter() - started,
                "modelCalls": self.model.requests - before,
                "prepared": pending.get("prepared", 0),
                "published": (pending.get("status") == "published"),
                "refined": (data.get("interim") or {}).get("refined", 0),
            }
        )

    def join(self, timeout: float) -> None:
        end = time.perf_counter() + timeout
        while self.busy() and time.perf_counter() < end:
            self.thread.join(max(0.0, end - time.perf_counter()))  # type: ignore[union-attr]


def final_state(home: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(pending batches by status, summaries by model) at the end."""
    import sqlite3

    conn = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
    try:
        batches = dict(
            conn.execute("SELECT status, COUNT(*) FROM pending_compaction_batches GROUP BY status")
        )
        models = dict(conn.execute("SELECT model, COUNT(*) FROM summaries GROUP BY model"))
        return batches, models
    finally:
        conn.close()


def run(turns: int, delay: float, budget: int, gap: float, prepare_ms: int, wait: float) -> dict[str, Any]:
    from lcm_cli.engine.api import call

    model = SlowModel(delay)
    home = Path(tempfile.mkdtemp(prefix="lcm-bench-turn-time-")) / "oc"
    home.mkdir()
    entry = {"enabled": True, "config": {**CONFIG, "pendingPreparationBudgetMs": prepare_ms}}
    (home / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lcm": entry}}}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LCM_")},
        "LCM_SUMMARIZER": "openai",
        "LCM_SUMMARY_MODEL": "bench-model",
        "LCM_SUMMARY_PROVIDER": "local",
        "LCM_SUMMARY_BASE_URL": model.url,
    }
    lane = FollowUpLane(call, str(home), env, budget, model)
    assemble_ms: list[float] = []
    commit_ms: list[float] = []
    turn_ms: list[float] = []
    crossings = {"publishedPrepared": 0, "debtRecorded": 0}
    emergency = over_budget = model_calls_in_turns = 0
    live: list[dict[str, Any]] = []
    for n in range(turns):
        turn = messages(n)
        with model.lock:
            before = model.requests
        t0 = time.perf_counter()
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
        assert assembled["ok"] and committed["ok"], (assembled, committed)
        # A request that arrived while the turn ran and that no background maintain made:
        # the lane's own requests happen only while it is busy.
        if not lane.busy():
            model_calls_in_turns += model.requests - before
        data = assembled["data"]
        emergency += "emergencyDrain" in ((data.get("details") or {}).get("debt") or {})
        over_budget += data["estimatedTokens"] > budget
        outcome = committed["data"]
        if (outcome.get("pending") or {}).get("status") == "published":
            crossings["publishedPrepared"] += 1
        elif outcome.get("debt"):
            crossings["debtRecorded"] += 1
        if n:
            assemble_ms.append((t1 - t0) * 1000)
        commit_ms.append((t2 - t1) * 1000)
        turn_ms.append((t2 - t0) * 1000)
        live.extend(turn)
        lane.offer()
        time.sleep(gap)
    lane.join(wait)
    maintain_s = [r["seconds"] for r in lane.runs]
    engine_turn_s = sum(turn_ms) / 1000
    maintain_total = sum(maintain_s)
    batches, models = final_state(home)
    return {
        "turns": turns,
        "modelDelaySeconds": delay,
        "turnGapSeconds": gap,
        "tokenBudget": budget,
        "prepareBudgetMs": prepare_ms,
        "assembleMs": summary(assemble_ms),
        "commitTurnMs": summary(commit_ms),
        "turnMs": summary(turn_ms),
        "thresholdCrossings": crossings,
        "emergencyDrains": emergency,
        "assemblesOverBudget": over_budget,
        "modelCallsDuringTurns": model_calls_in_turns,
        "pendingBatches": batches,
        "summariesByModel": models,
        "maintain": {
            "runs": len(lane.runs),
            "stillRunning": lane.busy(),
            "modelCalls": sum(r["modelCalls"] for r in lane.runs),
            "preparedNodes": sum(r["prepared"] for r in lane.runs),
            "refinedInterim": sum(r["refined"] for r in lane.runs),
            "seconds": summary(maintain_s),
            "shareOfEngineTime": maintain_total / (maintain_total + engine_turn_s)
            if maintain_total + engine_turn_s
            else math.nan,
        },
        "modelRequestsTotal": model.requests,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--model-delay", type=float, default=5.0, help="seconds per summarizer answer")
    parser.add_argument("--token-budget", type=int, default=6000)
    parser.add_argument("--turn-gap", type=float, default=2.0, help="seconds between turns")
    parser.add_argument("--prepare-budget-ms", type=int, default=30000, help="pendingPreparationBudgetMs")
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the last maintain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(
        args.turns, args.model_delay, args.token_budget, args.turn_gap, args.prepare_budget_ms, args.wait
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['turns']} turns {result['turnGapSeconds']:g} s apart, model answers in "
        f"{result['modelDelaySeconds']:g} s, budget {result['tokenBudget']} tokens"
    )
    for label, key in (
        ("assemble", "assembleMs"),
        ("commit-turn", "commitTurnMs"),
        ("assemble + commit", "turnMs"),
    ):
        s = result[key]
        print(f"  {label:<18} p50 {s['p50']:7.2f} ms  p95 {s['p95']:7.2f} ms  max {s['max']:7.2f} ms")
    c = result["thresholdCrossings"]
    print(
        f"  commits over the threshold: {c['publishedPrepared']} published a prepared batch, {c['debtRecorded']} "
        f"recorded debt; emergency drains (local) {result['emergencyDrains']}"
    )
    print(f"  assembles over budget: {result['assemblesOverBudget']}")
    print(f"  model requests during turns: {result['modelCallsDuringTurns']}")
    print(f"  pending batches: {result['pendingBatches']}; summaries by model: {result['summariesByModel']}")
    m = result["maintain"]
    print(
        f"maintain (follow-up lane): {m['runs']} runs, {m['modelCalls']} model calls, {m['preparedNodes']} nodes "
        f"prepared, {m['refinedInterim']} interim summaries re-summarized, {m['seconds']['total']:.1f} s in all "
        f"(p50 {m['seconds']['p50']:.2f} s, max {m['seconds']['max']:.1f} s), "
        f"{m['shareOfEngineTime'] * 100:.2f}% of engine time"
        + (" (still running at exit)" if m["stillRunning"] else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
