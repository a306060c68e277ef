"""Engine benchmark: a full compaction sweep over 20,000 raw messages, then `context.assemble`.

Builds a fresh temporary lcm.db with one 20,000-message conversation through the write
store, times one full sweep that folds every message outside the fresh tail into leaf
summaries and condenses them (a 2-level DAG: leaves under depth-1 nodes, and depth-2
nodes once the pressure phase runs), then times `context.assemble` in process over that
conversation: the engine function on an open connection, and the whole operation through
``lcm_cli.engine.api.call`` (config resolution, read-only open, query, close).

Targets (issue 4): sweep ≤ 10 s with the extractive summarizer (the default; set
``LCM_SUMMARIZER`` to measure another); assemble p50 ≤ 5 ms and p99 ≤ 20 ms. A report, not a test: it always exits 0 once it has printed its figures.

    .venv/bin/python benchmarks/bench_engine.py
    .venv/bin/python benchmarks/bench_engine.py --json
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from lcm_cli.engine.assembly.assembler import assemble  # noqa: E402
from lcm_cli.engine.compaction.compactor import Compactor  # noqa: E402
from lcm_cli.engine.config.resolve import resolve_effective  # noqa: E402
from lcm_cli.engine.db.store import Store  # noqa: E402
from lcm_cli.engine.summarize.base import Summarizer  # noqa: E402
from lcm_cli.engine.summarize.factory import build_summarizer  # noqa: E402

MESSAGES = 20_000
SEED = 20261129
WORDS = [f"w{i:03d}" for i in range(600)] + [
    "deploy",
    "error",
    "src/app.py",
    "npm test",
    "migration",
    "retry",
]


def pick_summarizer(effective: dict[str, Any]) -> Summarizer:
    """The configured summarizer: the offline extractive one unless LCM_SUMMARIZER says otherwise."""
    import os

    return build_summarizer(effective, dict(os.environ))


def build(path: Path) -> int:
    """One conversation of MESSAGES user/assistant/tool messages with realistic lengths."""
    rng = random.Random(SEED)
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    rows = []
    moment = start
    for i in range(MESSAGES):
        role = ("user", "assistant", "tool", "assistant")[i % 4]
        length = max(4, int(rng.lognormvariate(3.2, 0.7)))
        text = " ".join(rng.choice(WORDS) for _ in range(length))
        moment += timedelta(seconds=rng.randint(1, 90))
        rows.append({"role": role, "content": f"{text}.", "created_at": moment.strftime("%Y-%m-%d %H:%M:%S")})
    with Store.open(path) as store:
        cid = store.create_conversation("bench-session", session_key="agent:main:bench")
        for offset in range(0, MESSAGES, 5000):
            store.add_messages(cid, rows[offset : offset + 5000])
    return cid


def percentile(samples: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``samples`` (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def main() -> None:
    """Build, sweep, assemble; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--runs", type=int, default=500, help="assemble calls to time (default 500)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"messages": MESSAGES}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lcm.db"
        began = time.perf_counter()
        cid = build(db)
        figures["buildSeconds"] = round(time.perf_counter() - began, 2)
        # One sweep may run as many passes as the conversation needs (the default cap of
        # 12 passes per sweep is for live turns); the deadline stays the default 120 s.
        config = {"maxSweepIterations": 10_000}
        effective = resolve_effective(config, {}, tmp)
        summarizer = pick_summarizer(effective)
        figures["summarizer"] = summarizer.model
        with Store.open(db) as store:
            compactor = Compactor(store, cid, effective, summarizer)
            began = time.perf_counter()
            sweep = compactor.full_sweep(token_budget=128_000, force=True)
            figures["sweepSeconds"] = round(time.perf_counter() - began, 2)
            figures["sweep"] = {
                "passes": len(sweep.passes),
                "leafPasses": sum(1 for p in sweep.passes if p["kind"] == "leaf"),
                "condensedPasses": sum(1 for p in sweep.passes if p["kind"] == "condensed"),
                "tokensBefore": sweep.tokens_before,
                "tokensAfter": sweep.tokens_after,
                "stoppedAtBudget": sweep.stopped_at_budget,
            }
            depths = store.conn.execute(
                "SELECT depth, COUNT(*) FROM summaries GROUP BY depth ORDER BY depth"
            ).fetchall()
            figures["summariesByDepth"] = {str(d): n for d, n in depths}
            figures["contextItems"] = store.conn.execute(
                "SELECT COUNT(*) FROM context_items WHERE conversation_id = ?", (cid,)
            ).fetchone()[0]
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        engine_ms = []
        for _ in range(args.runs):
            began = time.perf_counter()
            result = assemble(conn, cid, effective, token_budget=128_000)
            engine_ms.append((time.perf_counter() - began) * 1000)
        conn.close()
        figures["assembledMessages"] = len(result["messages"])
        figures["assembledTokens"] = result["estimatedTokens"]
        figures["assembleEngineMs"] = {
            "p50": round(statistics.median(engine_ms), 3),
            "p99": round(percentile(engine_ms, 0.99), 3),
        }
        from lcm_cli.engine.api import call

        op_ms = []
        env = {"OPENCLAW_STATE_DIR": tmp}
        for _ in range(args.runs):
            began = time.perf_counter()
            call("context.assemble", {"conversation_id": cid}, db=str(db), env=env)
            op_ms.append((time.perf_counter() - began) * 1000)
        figures["assembleOperationMs"] = {
            "p50": round(statistics.median(op_ms), 3),
            "p99": round(percentile(op_ms, 0.99), 3),
        }
    figures["targets"] = {
        "sweepSeconds<=10": figures["sweepSeconds"] <= 10,
        "assembleP50<=5ms": figures["assembleOperationMs"]["p50"] <= 5,
        "assembleP99<=20ms": figures["assembleOperationMs"]["p99"] <= 20,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        print(f"{key:22} {json.dumps(value)}")


if __name__ == "__main__":
    main()
