"""Backup benchmark for `lcm`: how long a backup of the 500,000-message database takes, and
how long a concurrent writer waits meanwhile.

Works on a copy of ``benchmarks/data/bench.db`` (built by ``bench_read.py --build-only``
when missing) in a temp directory; the original is never opened for writing. For each
``pages_per_step`` setting a writer process starts on the copy and commits one small
transaction through the project's write path (``Store``: ``BEGIN IMMEDIATE``, one message
with its FTS row and context item, ``COMMIT``) every ``--writer-interval-ms``; after a
second of writer-only baseline, :func:`lcm_cli.engine.maintenance.backup.create.create_backup` backs the copy
up. The writer records, for every transaction, the time from requesting ``BEGIN
IMMEDIATE`` to the end of ``COMMIT`` ("wait") and the part spent getting the lock. The
table reports the backup's duration and speed and the writer's waits during the backup
(target: max ≤ 50 ms).

A last row copies with the raw backup API *without* holding a read transaction across
the steps (what ``create_backup`` does in WAL mode) to show why it does: every commit
between two steps restarts the copy from page 1.

It is a report, not a test: it always exits 0 once it has printed its results::

    .venv/bin/python benchmarks/bench_backup.py                  # table on stdout
    .venv/bin/python benchmarks/bench_backup.py --steps 256,-1   # fewer settings
    .venv/bin/python benchmarks/bench_backup.py --json           # machine-readable
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BENCH_DB = HERE / "data" / "bench.db"
TARGET_MAX_WAIT_MS = 50.0
BASELINE_S = 1.0
AFTER_COPY_S = 0.5

WRITER = """
import json, os, sys, time
from lcm_cli.engine.db.store import Store
db, stop_path, interval = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
store = Store.open(db)
cid = store.create_conversation("bench-backup-writer")
print("ready", flush=True)
samples = []
i = 0
while not os.path.exists(stop_path):
    i += 1
    requested = time.monotonic()
    with store.transaction():  # BEGIN IMMEDIATE ... COMMIT
        locked = time.monotonic()
        store.add_message(cid, "assistant", f"writer message {i} " + "lorem ipsum " * 20)
    done = time.monotonic()
    samples.append((requested, done - requested, locked - requested))
    if interval:
        time.sleep(interval)
store.close()
json.dump(samples, sys.stdout)
"""


def note(text: str) -> None:
    """Progress for a person: stderr, so stdout stays the report."""
    print(text, file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


class Writer:
    """The concurrent writer process and the waits it recorded."""

    def __init__(self, db: Path, work: Path, interval_ms: float) -> None:
        self.stop = work / "writer.stop"
        self.stop.unlink(missing_ok=True)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), str(self.stop), str(interval_ms)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("writer did not start")

    def finish(self) -> list[tuple[float, float, float]]:
        self.stop.touch()
        out, _ = self.proc.communicate(timeout=120)
        return [(float(t), float(w), float(lk)) for t, w, lk in json.loads(out)]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_stats(waits: list[float], locks: list[float]) -> dict[str, Any]:
    """Summary of per-transaction waits and lock waits, in ms."""
    return {
        "transactions": len(waits),
        "maxWaitMs": max(waits, default=float("nan")),
        "p99WaitMs": percentile(waits, 0.99),
        "p50WaitMs": statistics.median(waits) if waits else float("nan"),
        "maxLockWaitMs": max(locks, default=float("nan")),
        "overTarget": sum(1 for w in waits if w > TARGET_MAX_WAIT_MS),
    }


def window(
    samples: list[tuple[float, float, float]], start: float, end: float
) -> tuple[list[float], list[float]]:
    """(waits, lock waits) in ms of the transactions requested in [start, end]."""
    inside = [(w * 1000, lk * 1000) for t, w, lk in samples if start <= t <= end]
    return [w for w, _ in inside], [lk for _, lk in inside]


def run_backup(db: Path, work: Path, pages: int, interval_ms: float, quick: bool) -> dict[str, Any]:
    from lcm_cli.engine.maintenance.backup.create import create_backup

    out = work / f"backup-{pages}.bak"
    marks: list[float] = []
    writer = Writer(db, work, interval_ms)
    try:
        time.sleep(BASELINE_S)
        start = time.monotonic()
        result = create_backup(
            str(db),
            out=str(out),
            quick=quick,
            pages_per_step=pages,
            progress=lambda done, total: marks.append(time.monotonic()),
        )
        end = time.monotonic()
        time.sleep(0.2)
        samples = writer.finish()
    finally:
        writer.kill()
        for path in (out, Path(str(out) + ".manifest.json")):
            path.unlink(missing_ok=True)
    seconds = end - start
    waits, locks = window(samples, start, end)
    base_waits, base_locks = window(samples, start - BASELINE_S, start)
    # Just after the copy lets go of its snapshot, the frames the writer added meanwhile
    # get checkpointed (by the backup; else by the writer's next commit, which waits).
    copy_end = marks[-1] if marks else start
    after_copy, _ = window(samples, copy_end, copy_end + AFTER_COPY_S)
    return {
        "pagesPerStep": pages,
        "steps": len(marks),
        "backupSeconds": seconds,
        "copySeconds": (marks[-1] - start) if marks else float("nan"),
        "mibPerSecond": result["sizeBytes"] / 1048576 / seconds,
        "check": result["check"],
        "waits": waits,
        "locks": locks,
        "baseWaits": base_waits,
        "baseLocks": base_locks,
        "afterCopyWaits": after_copy,
    }


def aggregate(pages: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One table row from every round of one setting: medians of times, pooled waits."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"pagesPerStep": pages, "error": runs[0]["error"]}
    pool = {key: [v for r in good for v in r[key]] for key in ("waits", "locks", "baseWaits", "baseLocks")}
    return {
        "pagesPerStep": pages,
        "runs": len(good),
        "errors": [r["error"] for r in runs if "error" in r],
        "steps": good[0]["steps"],
        "check": good[0]["check"],
        "backupSeconds": statistics.median(r["backupSeconds"] for r in good),
        "backupSecondsEach": [round(r["backupSeconds"], 3) for r in good],
        "copySeconds": statistics.median(r["copySeconds"] for r in good),
        "mibPerSecond": statistics.median(r["mibPerSecond"] for r in good),
        "baseline": wait_stats(pool["baseWaits"], pool["baseLocks"]),
        "maxAfterCopyMs": max((w for r in good for w in r["afterCopyWaits"]), default=float("nan")),
        **wait_stats(pool["waits"], pool["locks"]),
    }


def run_unpinned(db: Path, work: Path, pages: int, interval_ms: float, cap_s: float) -> dict[str, Any]:
    """The raw backup API with a fresh read transaction per step, as SQLite does by default."""
    target = work / "unpinned.bak"
    target.unlink(missing_ok=True)
    state = {"restarts": 0, "last": -1, "best": 0.0, "steps": 0}
    writer = Writer(db, work, interval_ms)
    finished = False
    try:
        time.sleep(BASELINE_S)
        start = time.monotonic()
        src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        dst = sqlite3.connect(target)

        def on_step(status: int, remaining: int, total: int) -> None:
            state["steps"] += 1
            if 0 <= state["last"] < remaining:
                state["restarts"] += 1
            state["last"] = remaining
            state["best"] = max(state["best"], 1 - remaining / total)
            if time.monotonic() - start > cap_s:
                raise TimeoutError

        try:
            src.backup(dst, pages=pages, progress=on_step)
            finished = True
        except TimeoutError:
            pass
        finally:
            src.close()
            dst.close()
        end = time.monotonic()
        samples = writer.finish()
    finally:
        writer.kill()
        target.unlink(missing_ok=True)
    return {
        "pagesPerStep": pages,
        "finished": finished,
        "seconds": end - start,
        "restarts": state["restarts"],
        "bestProgress": state["best"],
        **wait_stats(*window(samples, start, end)),
    }


def ensure_database(path: Path) -> None:
    if path.exists():
        return
    note(f"{path} is missing: building it with bench_read.py --build-only (1-2 minutes)")
    subprocess.run([sys.executable, str(HERE / "bench_read.py"), "--build-only"], check=True, cwd=REPO)


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def render(meta: dict[str, Any], rows: list[dict[str, Any]], unpinned: dict[str, Any] | None) -> str:
    lines = [
        f"backup of a copy of {meta['source']} ({fmt(meta['sizeMiB'])} MiB, {meta['pageCount']} pages "
        f"of {meta['pageSize']} B); SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs",
        f"writer: one Store transaction (1 message + FTS + context item) every {meta['writerIntervalMs']} ms; "
        f"wait = BEGIN IMMEDIATE requested -> COMMIT done; target max wait <= {TARGET_MAX_WAIT_MS:.0f} ms",
        "",
    ]
    header = (
        "pages/step",
        "runs",
        "steps",
        "backup s",
        "copy s",
        "MiB/s",
        "txns",
        "max wait ms",
        "p99 ms",
        "p50 ms",
        "max lock ms",
        f"> {TARGET_MAX_WAIT_MS:.0f} ms",
        "max after copy ms",
        "baseline max/p99 ms",
        f"baseline > {TARGET_MAX_WAIT_MS:.0f} ms",
        "target",
    )
    table = []
    for row in rows:
        if "error" in row:
            table.append((str(row["pagesPerStep"]), "ERROR: " + row["error"]) + ("",) * (len(header) - 2))
            continue
        base = row["baseline"]
        table.append(
            (
                "all (-1)" if row["pagesPerStep"] == -1 else str(row["pagesPerStep"]),
                str(row["runs"]),
                str(row["steps"]),
                fmt(row["backupSeconds"], 2),
                fmt(row["copySeconds"], 2),
                fmt(row["mibPerSecond"], 0),
                str(row["transactions"]),
                fmt(row["maxWaitMs"]),
                fmt(row["p99WaitMs"]),
                fmt(row["p50WaitMs"], 2),
                fmt(row["maxLockWaitMs"], 2),
                str(row["overTarget"]),
                fmt(row["maxAfterCopyMs"]),
                f"{fmt(base['maxWaitMs'])}/{fmt(base['p99WaitMs'])}",
                f"{base['overTarget']} of {base['transactions']}",
                "ok" if row["maxWaitMs"] <= TARGET_MAX_WAIT_MS else "MISSED",
            )
        )
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(header)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in table)
    lines.append("")
    lines.append(
        "backup s = whole create_backup (copy + integrity_check + fsync + sha256 + row counts + manifest), "
        "median of the runs; copy s = the online-copy part; waits are pooled over the runs (baseline = the "
        f"writer alone, {BASELINE_S:.0f} s before each backup); > {TARGET_MAX_WAIT_MS:.0f} ms counts the "
        f"waits over the target; after copy = the writer's longest wait in the {AFTER_COPY_S:g} s after the "
        "copy's last step, when the frames it wrote during the copy are checkpointed."
    )
    if unpinned is not None:
        outcome = (
            f"finished in {fmt(unpinned['seconds'], 1)} s"
            if unpinned["finished"]
            else f"gave up after {fmt(unpinned['seconds'], 1)} s at best {unpinned['bestProgress'] * 100:.1f}% copied"
        )
        lines.append(
            f"without a pinned read transaction ({unpinned['pagesPerStep']} pages/step, raw backup API): "
            f"{outcome}, {unpinned['restarts']} restarts (every writer commit between two steps restarts the "
            f"copy); writer max wait {fmt(unpinned['maxWaitMs'])} ms."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--db", type=Path, default=BENCH_DB, help="database to copy and back up")
    parser.add_argument("--steps", default="64,256,1024,-1", help="pages_per_step settings to compare")
    parser.add_argument(
        "--writer-interval-ms", type=float, default=5.0, help="pause between writer transactions"
    )
    parser.add_argument("--rounds", type=int, default=2, help="runs of every setting (round-robin)")
    parser.add_argument("--quick", action="store_true", help="quick_check instead of integrity_check")
    parser.add_argument(
        "--unpinned-cap", type=float, default=15.0, help="seconds for the unpinned row (0: skip)"
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="where the copy goes (default: a /tmp dir)"
    )
    parser.add_argument("--json", action="store_true", help="results as JSON on stdout")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))

    try:
        steps = [int(s) for s in args.steps.split(",") if s.strip()]
    except ValueError:
        note(f"--steps must be comma-separated integers, got {args.steps!r}")
        return 0
    try:
        ensure_database(args.db)
    except (OSError, subprocess.CalledProcessError) as exc:
        note(f"cannot build {args.db}: {exc}")
        return 0

    work = Path(tempfile.mkdtemp(prefix="lcm-bench-backup-", dir=args.work_dir))
    try:
        size = args.db.stat().st_size + (
            Path(str(args.db) + "-wal").stat().st_size if Path(str(args.db) + "-wal").exists() else 0
        )
        free = shutil.disk_usage(work).free
        if free < 2.5 * size:
            note(
                f"{work} has {free / 2**30:.1f} GiB free; the copy and one backup need {2.5 * size / 2**30:.1f} GiB"
            )
            return 0
        db = work / "lcm.db"
        note(f"copying {args.db} to {db} ...")
        # A consistent copy without writing to the original: the backup API from a read-only connection.
        src = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        dst = sqlite3.connect(db)
        src.backup(dst)
        src.close()
        dst.execute("PRAGMA journal_mode = WAL")
        meta = {
            "source": str(args.db),
            "sizeMiB": db.stat().st_size / 1048576,
            "pageSize": dst.execute("PRAGMA page_size").fetchone()[0],
            "pageCount": dst.execute("PRAGMA page_count").fetchone()[0],
            "writerIntervalMs": args.writer_interval_ms,
        }
        dst.close()
        # Flush the copy now, so its write-back does not land inside the first timed row.
        with open(db, "rb") as handle:
            os.fsync(handle.fileno())

        # An untimed first backup: the first one after the copy runs measurably slower.
        note("warm-up backup (untimed) ...")
        from lcm_cli.engine.maintenance.backup.create import create_backup

        warm = create_backup(str(db), out=str(work / "warm-up.bak"), quick=True)
        for path in (warm["backupPath"], warm["manifestPath"]):
            Path(path).unlink()

        runs: dict[int, list[dict[str, Any]]] = {pages: [] for pages in steps}
        for round_no in range(1, args.rounds + 1):  # round-robin, so drift spreads evenly
            for pages in steps:
                note(f"round {round_no}: backup with pages_per_step={pages} while the writer runs ...")
                try:
                    runs[pages].append(run_backup(db, work, pages, args.writer_interval_ms, args.quick))
                except Exception as exc:  # a report, not a test: show the failure and go on
                    runs[pages].append({"error": f"{type(exc).__name__}: {exc}"})
        rows = [aggregate(pages, runs[pages]) for pages in steps]
        unpinned = None
        if args.unpinned_cap > 0:
            note(f"raw backup without a pinned snapshot (capped at {args.unpinned_cap:.0f} s) ...")
            unpinned = run_unpinned(db, work, 256, args.writer_interval_ms, args.unpinned_cap)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.json:
        print(json.dumps({"meta": meta, "rows": rows, "unpinned": unpinned}, indent=2))
    else:
        print(render(meta, rows, unpinned))
    return 0


if __name__ == "__main__":
    sys.exit(main())
