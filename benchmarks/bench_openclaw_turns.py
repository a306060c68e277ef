"""Real-host benchmark: turns with the lcm shim vs. the host's legacy engine.

For each pinned host version (``tests/support/openclaw_host.py``: installed from npm on first
use, cached in ``.cache/openclaw-hosts/``) it runs N turns in one session against a stub
model on 127.0.0.1 (one-shot `openclaw agent --local` runs, or with ``--gateway`` turns
through one long-running Gateway, ``tests/support/openclaw_gateway.py``), twice:

- with the lcm plugin shim (this checkout's ``integrations/openclaw``, this venv's
  ``lcm serve``), reading the shim's per-call timings from ``LCM_SHIM_TRACE``;
- without any plugin (the host's built-in "legacy" context engine).

It prints, per version: each lifecycle call's shim latency (p50/p99/max, count), the shim
time per turn (the sum of its calls in that turn), and the turn wall time (host start-up
included) with lcm and with the legacy engine. A report, not a test: it exits 0 once it has
printed its figures::

    .venv/bin/python benchmarks/bench_openclaw_turns.py                 # 10 turns per version and mode
    .venv/bin/python benchmarks/bench_openclaw_turns.py --turns 20 --version 2026.9.6
    .venv/bin/python benchmarks/bench_openclaw_turns.py --json
    .venv/bin/python benchmarks/bench_openclaw_turns.py --gateway --turns 40 --version 2026.9.6

With ``--gateway`` the shim time per turn counts what the reply waits for (bootstrap, the
assembles, commitTurn); ``maintain`` runs after the reply and is listed on its own line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.openclaw_host import HOST_VERSIONS, HostRun, StubModel, ensure_host  # noqa: E402


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
        "p99": pct(values, 99),
        "max": max(values) if values else math.nan,
        "mean": statistics.fmean(values) if values else math.nan,
    }


class GatewayTurns:
    """Turns through one long-running Gateway (started once, stopped at the end)."""

    def __init__(self, run: HostRun) -> None:
        from tests.support.openclaw_gateway import Gateway

        self.gateway = Gateway(run)
        self.gateway.start()

    def turn(self, session_id: str, message: str) -> Any:
        from tests.support.openclaw_host import TurnResult

        done = self.gateway.turn(session_id, message)
        return TurnResult(0 if done.ok else 1, done.text, done.detail, done.elapsed, True)

    def close(self) -> None:
        self.gateway.stop()


def run_turns(version: str, turns: int, plugin: bool, root: Path, gateway: bool = False) -> dict[str, Any]:
    host = ensure_host(version)
    with StubModel() as model:
        run = HostRun(host, root, model, plugin=plugin, turn_timeout=300)
        driver: Any = GatewayTurns(run) if gateway else run
        try:
            return _measure(version, turns, plugin, run, driver, gateway)
        finally:
            if gateway:
                driver.close()


def _measure(
    version: str, turns: int, plugin: bool, run: HostRun, driver: Any, gateway: bool
) -> dict[str, Any]:
    """Run the turns through DRIVER, reading the shim's per-call timings from RUN's trace."""
    walls: list[float] = []
    per_turn_shim: list[float] = []
    calls: dict[str, list[float]] = defaultdict(list)
    failed_calls = 0
    seen = 0
    for n in range(1, turns + 1):
        result = driver.turn("bench", f"benchmark turn {n}: tell me something about the number {n}")
        if result.code != 0 or not result.exited_by_itself:
            print(
                f"  turn {n} failed (code {result.code}, exited by itself: {result.exited_by_itself})",
                file=sys.stderr,
            )
            print(result.output[-2000:], file=sys.stderr)
        walls.append(result.elapsed)
        lines = run.trace_lines()
        new, seen = lines[seen:], len(lines)
        for line in new:
            calls[str(line["method"])].append(float(line["ms"]))
            failed_calls += 0 if line.get("ok") else 1
        if plugin:
            # Through a Gateway, maintain runs after the reply: the reply does not wait for it.
            waited = [line for line in new if not (gateway and line["method"] == "session.maintain")]
            per_turn_shim.append(sum(float(line["ms"]) for line in waited))
        print(
            f"  {version} {'lcm' if plugin else 'legacy'} turn {n}: {result.elapsed:.1f} s",
            file=sys.stderr,
        )
    return {
        "wall_s": summary(walls),
        "shim_ms_per_turn": summary(per_turn_shim) if plugin else None,
        "calls_ms": {method: summary(values) for method, values in sorted(calls.items())},
        "failed_calls": failed_calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="turns per version and mode (default 10)")
    parser.add_argument("--version", action="append", choices=HOST_VERSIONS, help="host version (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--gateway", action="store_true", help="turns through one long-running Gateway")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-openclaw-") as tmp:
        for version in args.version or HOST_VERSIONS:
            started = time.monotonic()
            ensure_host(version)
            print(f"{version}: host ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
            results[version] = {
                "lcm": run_turns(version, args.turns, True, Path(tmp) / version / "lcm", args.gateway),
                "legacy": run_turns(version, args.turns, False, Path(tmp) / version / "legacy", args.gateway),
            }
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for version, modes in results.items():
        lcm, legacy = modes["lcm"], modes["legacy"]
        how = "through the Gateway" if args.gateway else "one-shot --local"
        print(f"\nopenclaw {version}, {args.turns} turns per mode, {how}")
        print(f"  {'shim call':<22} {'n':>4} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'max ms':>9}")
        for method, s in lcm["calls_ms"].items():
            print(
                f"  {method:<22} {s['n']:>4} {s['p50']:>9.1f} {s['p95']:>9.1f} {s['p99']:>9.1f} {s['max']:>9.1f}"
            )
        s = lcm["shim_ms_per_turn"]
        print(
            f"  {'shim per turn':<22} {s['n']:>4} {s['p50']:>9.1f} {s['p95']:>9.1f} {s['p99']:>9.1f} {s['max']:>9.1f}"
        )
        if lcm["failed_calls"]:
            print(f"  calls that fell back: {lcm['failed_calls']}")
        print(f"  {'turn wall time':<22} {'':>4} {'p50 s':>9} {'p99 s':>9} {'mean s':>9}")
        for name, mode in (("with lcm", lcm), ("legacy engine", legacy)):
            w = mode["wall_s"]
            print(f"  {name:<22} {w['n']:>4} {w['p50']:>9.2f} {w['p99']:>9.2f} {w['mean']:>9.2f}")


if __name__ == "__main__":
    main()
