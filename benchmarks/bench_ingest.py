"""Ingest benchmark: in-process ``session.ingest`` of one message into a 20,000-message conversation.

Builds (in a temp dir) a conversation that already holds 20,000 messages, written by
ingest itself in batches, then times single-message ingests the way a warm host process
makes them: the write store stays open and each call is
:func:`lcm_cli.engine.ingest.ingest_messages` with one message (its own ``BEGIN
IMMEDIATE`` transaction, dedup checks, replay guard, row, parts, FTS row, context item).
Target: p50 <= 3 ms. A second figure times the same through the registry
(:func:`lcm_cli.engine.api.call`), which also resolves paths and config and opens the
database per call, as a one-shot door does.

It is a report, not a test: it always exits 0 once it has printed its figures::

    .venv/bin/python benchmarks/bench_ingest.py             # 500 timed ingests (default)
    .venv/bin/python benchmarks/bench_ingest.py --runs 2000
    .venv/bin/python benchmarks/bench_ingest.py --json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lcm_cli.engine.api import call  # noqa: E402
from lcm_cli.engine.ingest import IngestSettings, ingest_messages  # noqa: E402
from lcm_cli.engine.store import Store  # noqa: E402

EXISTING = 20_000
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu file path error run test".split()


def message(rng: random.Random, i: int) -> dict[str, Any]:
    role = ("user", "assistant", "toolResult")[i % 3]
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
    if role == "assistant":
        return {"role": role, "content": [{"type": "text", "text": text}], "responseId": f"resp_{i}"}
    if role == "toolResult":
        return {"role": role, "toolCallId": f"call_{i:016d}", "toolName": "read", "content": text}
    return {"role": role, "content": f"{text} #{i}"}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(20261129)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "openclaw"
        home.mkdir()
        db = home / "lcm.db"
        settings = IngestSettings(str(home / "lcm-files"))
        started = time.perf_counter()
        with Store.open(db) as store:
            for start in range(0, EXISTING, 1000):
                batch = [message(rng, i) for i in range(start, start + 1000)]
                ingest_messages(store, settings, "bench", batch, session_key="agent:main:main")
            build_s = time.perf_counter() - started
            timings = []
            for i in range(EXISTING, EXISTING + args.runs):
                one = [message(rng, i)]
                t0 = time.perf_counter()
                result = ingest_messages(store, settings, "bench", one, session_key="agent:main:main")
                timings.append((time.perf_counter() - t0) * 1000)
                assert result["ingested"] == 1
        door = []
        for i in range(EXISTING + args.runs, EXISTING + args.runs + min(args.runs, 100)):
            t0 = time.perf_counter()
            call(
                "session.ingest",
                {"session_id": "bench", "session_key": "agent:main:main", "message": message(rng, i)},
                openclaw_dir=str(home),
            )
            door.append((time.perf_counter() - t0) * 1000)
    report = {
        "existingMessages": EXISTING,
        "buildSeconds": round(build_s, 2),
        "runs": args.runs,
        "ingestOneP50Ms": round(statistics.median(timings), 3),
        "ingestOneP90Ms": round(percentile(timings, 0.9), 3),
        "ingestOneP99Ms": round(percentile(timings, 0.99), 3),
        "targetP50Ms": 3.0,
        "viaApiCallP50Ms": round(statistics.median(door), 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"conversation of {EXISTING:,} messages built by ingest in {report['buildSeconds']} s")
        print(
            f"session.ingest of one message, in process, store open ({args.runs} runs): "
            f"p50 {report['ingestOneP50Ms']} ms, p90 {report['ingestOneP90Ms']} ms, "
            f"p99 {report['ingestOneP99Ms']} ms (target p50 <= 3 ms)"
        )
        print(
            f"through lcm_cli.engine.api.call (paths, config, open per call): p50 {report['viaApiCallP50Ms']} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
