"""Rotate benchmark for `lcm`: `lcm rotate --apply --backup none` of a 20,000-message session.

Builds, in a temp directory, an OpenClaw state dir with one session: a generated
20,000-message transcript (tests/support/transcripts.py: every role and block type,
structural entries, about 10 MB) bootstrapped into a fresh lcm.db through the project's
own write path, with the raw messages outside the fresh tail folded into leaf summaries
the way compaction leaves them (a live engine compacts as it goes, so that is the state a
rotation meets). Then it times the real `lcm` executable as a subprocess, several runs,
restoring the database and transcript (bytes and mtime) before each run so every run does
the same work: reconcile (checkpoint hit), leaf-compaction check, transcript scan and
rewrite, atomic replace, frontier refresh.

Target: ≤ 2 s wall time per rotation (issue 6). It is a report, not a test: it always
exits 0 once it has printed its results::

    .venv/bin/python benchmarks/bench_rotate.py                 # table on stdout
    .venv/bin/python benchmarks/bench_rotate.py --messages 5000 # a smaller session
    .venv/bin/python benchmarks/bench_rotate.py --json          # machine-readable
    .venv/bin/python benchmarks/bench_rotate.py --raw --runs 1  # include the leaf compaction
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGET_S = 2.0

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def build(root: Path, messages: int, raw: bool) -> Any:
    """The seeded session (see tests/support/rotation.py); ``raw``: nothing summarized yet."""
    from tests.support.rotation import seed_session

    return seed_session(root, messages=messages, chunk=40, summarize=not raw)


def main() -> int:
    """Build the session, time the rotations, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="leave every message raw, so each run also leaf-compacts the whole session first",
    )
    parser.add_argument("--lcm", default=str(Path(sys.executable).with_name("lcm")))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lcm-bench-rotate-"))
    try:
        started = time.monotonic()
        print(f"building a {args.messages:,}-message session ...", file=sys.stderr)
        session = build(work / "oc", args.messages, args.raw)
        build_s = time.monotonic() - started
        old_bytes = session.transcript.read_bytes()
        old_mtime = session.transcript.stat().st_mtime_ns
        db_bytes = session.db.read_bytes()
        command = [
            args.lcm,
            "--openclaw-dir",
            str(session.root),
            "rotate",
            "--session-key",
            "agent:main:main",
            "--apply",
            "--backup",
            "none",
        ]
        times: list[float] = []
        last: dict[str, Any] = {}
        for run in range(args.runs):
            for leftover in session.transcript.parent.glob("*.bak"):
                leftover.unlink()
            for side in ("-wal", "-shm"):
                Path(str(session.db) + side).unlink(missing_ok=True)
            session.db.write_bytes(db_bytes)
            session.transcript.write_bytes(old_bytes)
            os.utime(session.transcript, ns=(old_mtime, old_mtime))
            print(f"run {run + 1}/{args.runs}", file=sys.stderr)
            t0 = time.monotonic()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            times.append(time.monotonic() - t0)
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                break
            last = json.loads(done.stdout)["data"]
        report = {
            "messages": args.messages,
            "raw": args.raw,
            "leafPasses": len(last.get("compaction", {}).get("passes", [])),
            "dbBytes": len(db_bytes),
            "transcriptBytes": len(old_bytes),
            "newTranscriptBytes": last.get("transcript", {}).get("newSizeBytes"),
            "preservedTailMessages": last.get("transcript", {}).get("preservedTailMessageCount"),
            "buildSeconds": round(build_s, 1),
            "runs": [round(t, 3) for t in times],
            "medianSeconds": round(statistics.median(times), 3) if times else None,
            "maxSeconds": round(max(times), 3) if times else None,
            "targetSeconds": TARGET_S,
        }
        report["meetsTarget"] = bool(times) and max(times) <= TARGET_S
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            state = "all raw (rotate leaf-compacts first)" if args.raw else "older messages summarized"
            print(f"lcm rotate --apply --backup none, {args.messages:,}-message session, {state}")
            print(f"  leaf passes     {report['leafPasses']}")
            print(
                f"  transcript      {report['transcriptBytes']:>12,} bytes -> {report['newTranscriptBytes']} bytes"
            )
            print(f"  lcm.db          {report['dbBytes']:>12,} bytes")
            print(f"  preserved tail  {report['preservedTailMessages']} messages")
            print(f"  runs (s)        {', '.join(f'{t:.3f}' for t in times)}")
            print(
                f"  median {report['medianSeconds']} s, max {report['maxSeconds']} s "
                f"(target <= {TARGET_S} s: {'met' if report['meetsTarget'] else 'NOT met'})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
