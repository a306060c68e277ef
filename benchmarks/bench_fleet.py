"""Fleet benchmark: one `lcm` call over 20 databases against 20 calls of one database each.

Builds ``--members`` small lcm.db files (tests/support/fleet.py: ``--conversations``
conversations of two messages each, in state dirs ``agent-NN``), then times, for each fleet
command (status, conversations list, grep, doctor, backup list):

- ``fleet``: one process, ``lcm CMD --db 'DIR/agent-*/lcm.db'``;
- ``singles``: ``--members`` processes, ``lcm CMD --db DIR/agent-NN/lcm.db``, one after another
  (what a script looping over the agents does);
- the same two through the Python door (``lcm_cli.engine.api.call``) in this process, where
  no interpreter start-up is paid.

Processes run ``python -m lcm_cli`` from this checkout (the venv's ``lcm`` script may be
another checkout's). Medians of ``--runs`` runs. It is a report, not a test: it exits 0.

    .venv/bin/python benchmarks/bench_fleet.py             # table on stdout
    .venv/bin/python benchmarks/bench_fleet.py --json      # machine-readable results
    .venv/bin/python benchmarks/bench_fleet.py --members 20 --conversations 200 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lcm_cli.engine.api import call  # noqa: E402
from tests.support.fleet import build_fleet  # noqa: E402

COMMANDS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    # name: (CLI words, Python parameters, positional arguments)
    "status": ("status", {}, ()),
    "conversations.list": ("conversations list --limit 50", {"limit": 50}, ()),
    "grep": (
        "grep deploy --all-conversations --limit 50",
        {"limit": 50, "all_conversations": True},
        ("deploy",),
    ),
    "doctor.scan": ("doctor", {}, ()),
    "backup.list": ("backup list", {}, ()),
}


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCM_", "OPENCLAW_"))}
    env.update(NO_COLOR="1", HOME=home, PYTHONPATH=str(REPO))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _process(words: str, db: str, env: dict[str, str]) -> float:
    """One `lcm` process: wall ms (a findings exit status 6 from doctor is an answer too)."""
    argv = [sys.executable, "-m", "lcm_cli", *words.split(), "--db", db]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, cwd=str(REPO), check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode not in (0, 6):
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[:400]}")
    return elapsed


def _python(name: str, params: dict[str, Any], args: tuple[str, ...], db: str | list[str]) -> float:
    started = time.perf_counter()
    call(name, params, args=args, db=db)
    return (time.perf_counter() - started) * 1000


def measure(members: int, conversations: int, runs: int) -> dict[str, Any]:
    """Build the fleet, run every command both ways; medians in ms."""
    with tempfile.TemporaryDirectory(prefix="lcm-fleet-bench-") as folder:
        started = time.perf_counter()
        paths = [str(p) for p in build_fleet(Path(folder) / "fleet", members, conversations)]
        built_s = time.perf_counter() - started
        pattern = str(Path(folder) / "fleet" / "agent-*" / "lcm.db")
        env = _env(folder)
        # The Python door reads the process environment: keep the caller's LCM_* out of it.
        for name in [n for n in os.environ if n.startswith(("LCM_", "OPENCLAW_"))]:
            del os.environ[name]
        os.environ["HOME"] = folder
        results: dict[str, Any] = {}
        for name, (words, params, args) in COMMANDS.items():
            fleet_cli, singles_cli, fleet_py, singles_py = [], [], [], []
            _process(words, pattern, env)  # warm the page cache and bytecode
            for _ in range(runs):
                fleet_cli.append(_process(words, pattern, env))
                singles_cli.append(sum(_process(words, p, env) for p in paths))
                fleet_py.append(_python(name, params, args, pattern))
                singles_py.append(sum(_python(name, params, args, p) for p in paths))
            results[name] = {
                "fleetProcessMs": round(statistics.median(fleet_cli), 1),
                "singleProcessesMs": round(statistics.median(singles_cli), 1),
                "fleetPythonMs": round(statistics.median(fleet_py), 1),
                "singlePythonCallsMs": round(statistics.median(singles_py), 1),
            }
        return {
            "members": members,
            "conversationsPerMember": conversations,
            "runs": runs,
            "buildSeconds": round(built_s, 1),
            "commands": results,
        }


def main() -> int:
    """Parse the options, measure, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = measure(options.members, options.conversations, options.runs)
    if options.json:
        print(json.dumps(report, indent=2))
        return 0
    n = report["members"]
    print(
        f"{n} databases, {report['conversationsPerMember']} conversations each; "
        f"median of {report['runs']} runs (ms)"
    )
    print(
        f"{'command':<20}{'1 fleet call':>14}{f'{n} single calls':>18}{'py fleet':>11}{f'py {n} singles':>15}"
    )
    for name, row in report["commands"].items():
        print(
            f"{name:<20}{row['fleetProcessMs']:>14}{row['singleProcessesMs']:>18}"
            f"{row['fleetPythonMs']:>11}{row['singlePythonCallsMs']:>15}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
