"""Maintenance benchmark for `lcm`: `lcm doctor` full scan and `lcm prune` of half the
conversations, on the 500,000-message benchmark database of ``bench_read.py``.

The database is the one ``bench_read.py`` builds and caches (imported, never rebuilt
here unless it is missing). The scan runs read-only on it; prune runs on a copy in a
temporary directory (the copy is not timed), once per run. Each command is a separate
process of the venv's ``lcm``. It is a report, not a test: it always exits 0.

    .venv/bin/python benchmarks/bench_doctor.py            # table on stdout
    .venv/bin/python benchmarks/bench_doctor.py --json     # machine-readable results
    .venv/bin/python benchmarks/bench_doctor.py --runs 5 --prune-runs 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_read import DATA_DIR, DB_FILE, clean_env, ensure_database, find_lcm, note, run_process  # noqa: E402

SCAN_TARGET_MS = 3000
PRUNE_TARGET_MS = 20000


def half_cutoff(db: Path) -> tuple[str, int, int]:
    """An ISO cutoff with half the conversations' last activity before it, and their counts."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            """SELECT julianday(COALESCE((SELECT m.created_at FROM messages m
                     WHERE m.conversation_id = c.conversation_id ORDER BY m.seq DESC LIMIT 1), c.updated_at)) AS jd,
                   (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id)
               FROM conversations c ORDER BY jd"""
        ).fetchall()
        half = len(rows) // 2
        cut = (rows[half - 1][0] + rows[half][0]) / 2
        stamp = conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?)", (cut,)).fetchone()[0]
        return stamp, half, sum(r[1] for r in rows[:half])
    finally:
        conn.close()


def bench_scan(lcm: Path, db: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """Median wall time of `lcm doctor` (every check) as a whole process."""
    times, inner, last = [], [], {}
    run_process([str(lcm), "--db", str(db), "doctor"], env)  # warm the page cache once
    for _ in range(runs):
        ms, code, out, err = run_process([str(lcm), "--db", str(db), "doctor", "--fail-on", "none"], env)
        if code != 0:
            raise SystemExit(f"lcm doctor failed ({code}): {err.decode()[:500]}")
        data = json.loads(out)["data"]
        times.append(ms)
        inner.append(data["elapsedMs"])
        last = {c["check"]: c["elapsedMs"] for c in data["checks"]}
    slowest = sorted(last.items(), key=lambda kv: -kv[1])[:5]
    return {
        "name": "doctor full scan",
        "medianMs": round(statistics.median(times)),
        "minMs": round(min(times)),
        "inProcessMedianMs": round(statistics.median(inner)),
        "targetMs": SCAN_TARGET_MS,
        "ok": statistics.median(times) <= SCAN_TARGET_MS,
        "slowestChecksMs": dict(slowest),
    }


def bench_prune(lcm: Path, db: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """`lcm prune --before <median> --include-active --apply` on a fresh copy, per run."""
    cutoff, conversations, messages = half_cutoff(db)
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=DATA_DIR.resolve().parent) as scratch:
            copy = Path(scratch) / "copy.db"
            note(f"copying {db.name} for prune ...")
            shutil.copyfile(db, copy)
            ms, code, out, err = run_process(
                [str(lcm), "--db", str(copy), "prune", "--before", cutoff, "--include-active", "--apply"], env
            )
            if code != 0:
                raise SystemExit(f"lcm prune failed ({code}): {err.decode()[:500]}")
            data = json.loads(out)["data"]
            results.append((ms, data))
    ms, data = sorted(results, key=lambda r: r[0])[len(results) // 2]
    return {
        "name": "prune 50% of conversations (archive + verify + delete)",
        "medianMs": round(ms),
        "targetMs": PRUNE_TARGET_MS,
        "ok": ms <= PRUNE_TARGET_MS,
        "conversations": data["conversationCount"],
        "expectedConversations": conversations,
        "messages": data["messageCount"],
        "expectedMessages": messages,
        "archiveBytes": data["archive"]["bytes"],
        "reclaimedBytes": data["reclaimedBytes"],
        "timingsMs": data["timingsMs"],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print a table (or JSON)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="scan runs (median reported)")
    parser.add_argument("--prune-runs", type=int, default=1, help="prune runs, each on a fresh copy")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--lcm", help="the lcm executable to time")
    args = parser.parse_args(argv)
    ensure_database(False)
    db = DATA_DIR / DB_FILE
    lcm = find_lcm(args.lcm)
    with tempfile.TemporaryDirectory() as home:
        env = clean_env(home)
        results = [bench_scan(lcm, db, env, args.runs), bench_prune(lcm, db, env, args.prune_runs)]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        verdict = "ok" if r["ok"] else "OVER"
        print(f"{r['name']:<58} {r['medianMs']:>7} ms  (target {r['targetMs']} ms)  {verdict}")
        for key, value in r.items():
            if key not in ("name", "medianMs", "targetMs", "ok"):
                print(f"    {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
