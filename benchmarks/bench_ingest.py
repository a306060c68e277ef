"""Ingest benchmark: in-process ``session.ingest`` of one message into a 20,000-message conversation.

Builds (in a temp dir) a conversation that already holds 20,000 messages, written by
ingest itself in batches, then times single-message ingests the way a warm host process
makes them: the write store stays open and each call is
:func:`lcm_cli.engine.session.ingest.ingest_messages` with one message (its own ``BEGIN
IMMEDIATE`` transaction, dedup checks, replay guard, row, parts, FTS row, context item).
Target: p50 <= 3 ms. A second figure times the same through the registry
(:func:`lcm_cli.engine.api.call`), which also resolves paths and config and opens the
database per call, as a one-shot door does.

A third figure is the bootstrap append-only fast path (docs/reference/engine.md §3.1 step 6): a
generated 20,000-message transcript is bootstrapped whole, 10 lines are appended, and
``bootstrap_session`` is timed on copies of that database twice: taking the fast path
(only the appended slice is read) and forced to read the whole file (``append_only=False``).
Both import the same 10 messages (``--skip-bootstrap`` leaves this part out).

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
from lcm_cli.engine.db.store import Store  # noqa: E402
from lcm_cli.engine.session.ingest import IngestSettings, ingest_messages  # noqa: E402

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


def bootstrap_figures(tmp: Path, runs: int) -> dict[str, Any]:
    """Full read vs append-only fast path on a 20,000-message transcript + 10 appended lines."""
    import shutil

    from lcm_cli.engine.session.bootstrap import bootstrap_session
    from tests.support.transcripts import append_lines, write_transcript

    folder = tmp / "bootstrap"
    folder.mkdir()
    path = folder / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=EXISTING, seed=7, entry_every=0)
    base = folder / "base.db"
    settings = IngestSettings(str(folder / "lcm-files"))
    started = time.perf_counter()
    with Store.open(base) as store:
        first = bootstrap_session(
            store, settings, "s1", str(path), session_key="agent:main:s1", max_tokens=10**9
        )
    build_s = time.perf_counter() - started
    last_id = json.loads(path.read_bytes().split(b"\n")[-2])["id"]
    appended = []
    for i in range(10):
        entry_id = f"bench{i:04d}"
        role = "user" if i % 2 == 0 else "assistant"
        appended.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": last_id,
                "timestamp": f"2026-06-10T01:00:{i:02d}.000Z",
                "message": {"role": role, "content": f"appended line {i} " + " ".join(WORDS[: 5 + i])},
            }
        )
        last_id = entry_id
    append_lines(path, appended)
    figures: dict[str, list[float]] = {"fast": [], "full": []}
    for _ in range(runs):
        for name, fast in (("fast", True), ("full", False)):
            copy = folder / f"{name}.db"
            shutil.copyfile(base, copy)
            with Store.open(copy) as store:
                t0 = time.perf_counter()
                out = bootstrap_session(
                    store,
                    settings,
                    "s1",
                    str(path),
                    session_key="agent:main:s1",
                    max_tokens=10**9,
                    append_only=fast,
                )
                figures[name].append((time.perf_counter() - t0) * 1000)
            assert out["importedMessages"] == 10, out
            assert (out.get("fastPath") == "taken") is fast, out
    return {
        "transcriptMessages": first["importedMessages"],
        "transcriptBytes": path.stat().st_size,
        "firstBootstrapSeconds": round(build_s, 2),
        "appendedLines": 10,
        "runs": runs,
        "fullReadP50Ms": round(statistics.median(figures["full"]), 2),
        "fastPathP50Ms": round(statistics.median(figures["fast"]), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-bootstrap", action="store_true")
    parser.add_argument("--bootstrap-runs", type=int, default=5)
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
        boot = None if args.skip_bootstrap else bootstrap_figures(Path(tmp), args.bootstrap_runs)
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
    if boot is not None:
        report["bootstrapAppend"] = boot
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
        if boot is not None:
            print(
                f"bootstrap of a {boot['transcriptMessages']:,}-message transcript ({boot['transcriptBytes']:,} bytes)"
                f" + {boot['appendedLines']} appended lines ({boot['runs']} runs): full read p50"
                f" {boot['fullReadP50Ms']} ms, append-only fast path p50 {boot['fastPathP50Ms']} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
