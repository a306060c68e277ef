"""Door benchmark: requests through a warm `lcm serve` and one-shot `lcm hook` processes.

Builds (in a temp dir) an lcm.db whose main conversation holds 20,000 messages, written
through ingest, then measures from this client process:

- ``lcm serve --stdio``: ``messages.tail`` (a read; target p50 <= 2 ms),
  ``session.ingest`` of one message (target p50 <= 3 ms), ``context.assemble`` on the
  20,000-message conversation after one manual compaction has folded it into a 2-level
  summary DAG (p50 <= 5 ms, p99 <= 20 ms), and ``session.after_turn`` of one new message
  in deferred mode (the live list holding just it, and holding 500 messages of which the
  newest is new); each is a round trip: write the request line, read the answer line;
- ``lcm serve --socket``: 1,000 ``messages.tail`` requests from 4 concurrent clients
  (no error allowed), with the wall time;
- ``lcm hook messages.tail``: a whole process per call, start-up included (target <= 120 ms).

It is a report, not a test: it always exits 0 once it has printed its figures::

    .venv/bin/python benchmarks/bench_serve.py            # default 500 requests per figure
    .venv/bin/python benchmarks/bench_serve.py --runs 2000
    .venv/bin/python benchmarks/bench_serve.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lcm_cli.engine.core.registry import OPERATIONS  # noqa: E402

MESSAGES = 20_000
KEY = "agent:main:bench"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu file path error run test".split()


def lcm_exe() -> list[str]:
    exe = Path(sys.executable).with_name("lcm")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "lcm_cli"]


def message(rng: random.Random, i: int) -> dict[str, Any]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
    role = ("user", "assistant")[i % 2]
    return {"role": role, "content": f"{text} #{i}"}


def build(db: Path) -> None:
    from lcm_cli.engine.api import call

    rng = random.Random(7)
    for start in range(0, MESSAGES, 2000):
        batch = [message(rng, i) for i in range(start, start + 2000)]
        call("session.ingest", {"session_id": "bench", "session_key": KEY, "messages": batch}, db=str(db))


def compact(db: Path) -> dict[str, Any]:
    """Fold the conversation into summaries (leaves and condensed nodes) before timing assembly."""
    from lcm_cli.engine.api import call

    start = time.perf_counter()
    data = call(
        "session.compact",
        {"session_key": KEY, "apply": True, "manual": True, "compaction_target": "threshold"},
        db=str(db),
    )["data"]
    seconds = time.perf_counter() - start
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        depths = dict(conn.execute("SELECT depth, COUNT(*) FROM summaries GROUP BY depth").fetchall())
        items = conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0]
    finally:
        conn.close()
    return {
        "seconds": round(seconds, 2),
        "passes": len(data["passes"]),
        "summariesByDepth": depths,
        "contextItems": items,
        "tokensAfter": data["after"]["tokens"],
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def figures(samples: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(samples) * 1000, 3),
        "p99_ms": round(percentile(samples, 0.99) * 1000, 3),
        "n": len(samples),
    }


class StdioClient:
    def __init__(self, env: dict[str, str], db: Path) -> None:
        self.proc = subprocess.Popen(
            [*lcm_exe(), "--db", str(db), "serve", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.next_id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write(
            json.dumps({"id": self.next_id, "method": method, "params": params}).encode() + b"\n"
        )
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer

    def timed(self, method: str, params_of: Any, runs: int) -> list[float]:
        self.ask(method, params_of(-1))  # warm this method's modules and statements
        samples = []
        for i in range(runs):
            params = params_of(i)
            start = time.perf_counter()
            self.ask(method, params)
            samples.append(time.perf_counter() - start)
        return samples

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def socket_load(env: dict[str, str], db: Path, work: Path, total: int, clients: int) -> dict[str, Any]:
    path = work / "lcm.sock"
    proc = subprocess.Popen([*lcm_exe(), "--db", str(db), "serve", "--socket", str(path)], env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(str(path))
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        errors: list[str] = []

        def client(number: int) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(str(path))
                stream = sock.makefile("rwb")
                for i in range(total // clients):
                    request = {"id": i, "method": "messages.tail", "params": {"sessionKey": KEY, "count": 20}}
                    stream.write(json.dumps(request).encode() + b"\n")
                    stream.flush()
                    answer = json.loads(stream.readline())
                    if "error" in answer:
                        errors.append(str(answer["error"]))

        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
        return {"requests": total, "clients": clients, "errors": len(errors), "seconds": round(seconds, 3)}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lcm-bench-serve-") as work_text:
        work = Path(work_text)
        db = work / "lcm.db"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LCM_")}
        env["HOME"] = str(work)
        print(f"building {MESSAGES:,} messages ...", file=sys.stderr)
        build(db)
        print("compacting (one manual threshold compaction) ...", file=sys.stderr)
        results["compaction before timing"] = compact(db)
        client = StdioClient(env, db)
        try:
            results["serve messages.tail"] = figures(
                client.timed("messages.tail", lambda i: {"sessionKey": KEY, "count": 20}, options.runs)
            )
            # Assembly is timed on the compacted conversation, before the ingest figures
            # below add hundreds of raw messages to its fresh end.
            if "context.assemble" in OPERATIONS:
                results["serve context.assemble"] = figures(
                    client.timed("context.assemble", lambda i: {"sessionKey": KEY}, options.runs)
                )
            rng = random.Random(11)
            results["serve session.ingest"] = figures(
                client.timed(
                    "session.ingest",
                    lambda i: {
                        "sessionId": "bench",
                        "sessionKey": KEY,
                        "message": message(rng, MESSAGES + 10 + i),
                    },
                    options.runs,
                )
            )
            if "session.after_turn" in OPERATIONS:
                live: list[dict[str, Any]] = []

                def one_new(i: int, window: int) -> dict[str, Any]:
                    live.append(message(rng, 2 * MESSAGES + i + window * 10_000))
                    del live[:-window]
                    return {
                        "sessionId": "bench",
                        "sessionKey": KEY,
                        "messages": list(live),
                        "prePromptMessageCount": len(live) - 1,
                    }

                for window in (1, 500):
                    live.clear()
                    live.extend(message(rng, 3 * MESSAGES + k) for k in range(window - 1))
                    name = f"serve session.after_turn ({window} live)"
                    results[name] = figures(
                        client.timed("session.after_turn", lambda i, w=window: one_new(i, w), options.runs)
                    )
        finally:
            client.close()
        results["socket 4 clients"] = socket_load(env, db, work, 1000, 4)
        samples = []
        for _ in range(min(options.runs, 30)):
            start = time.perf_counter()
            done = subprocess.run(
                [*lcm_exe(), "--db", str(db), "hook", "messages.tail"],
                input=json.dumps({"sessionKey": KEY, "count": 20}).encode(),
                capture_output=True,
                env=env,
            )
            samples.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise RuntimeError(done.stderr.decode())
        results["hook messages.tail (process)"] = figures(samples)
    targets = {
        "serve messages.tail": "p50 <= 2 ms",
        "serve session.ingest": "p50 <= 3 ms",
        "serve context.assemble": "p50 <= 5 ms, p99 <= 20 ms",
        "serve session.after_turn (1 live)": "p50 <= 5 ms",
        "socket 4 clients": "no error",
        "hook messages.tail (process)": "p50 <= 120 ms",
    }
    if options.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"lcm doors on a {MESSAGES:,}-message conversation, {os.cpu_count()} CPUs")
    for name, value in results.items():
        print(f"  {name:<36} {json.dumps(value):<60} target {targets.get(name, '-')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
