"""Host-store benchmark: reading an OpenClaw SQLite session store while the host writes to it.

Builds its own store in a temp directory (the host's table shapes from
tests/support/host_store.py): ``--events`` transcript events over ``--sessions`` sessions,
half of them large enough to be zstd rows, as the host stores them. Then a writer process
(standing in for the host) appends one event to a live session every
``--writer-interval-ms`` in its own ``BEGIN IMMEDIATE`` ... ``COMMIT`` and records how long
each commit took from the request to the end of ``COMMIT``. Three phases:

1. baseline: the writer alone, for ``--baseline-s`` seconds;
2. snapshot: :func:`lcm_cli.engine.transcript.host_store.write_snapshot` of every session, repeated
   ``--rounds`` times (the reader's own throughput is measured here);
3. import: ``lcm migrate-sessions --store STORE --apply`` into a new lcm.db.

For each phase it prints the writer's commit count, longest and p99 wait. It is a report,
not a test (exit 0 once printed)::

    .venv/bin/python benchmarks/bench_host_store.py
    .venv/bin/python benchmarks/bench_host_store.py --events 50000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lcm_cli.engine import host_store  # noqa: E402
from tests.support.host_store import create_store, event_row  # noqa: E402

_WORDS = "lossless context management keeps every message of the agent conversation in sqlite".split()

_WRITER = r"""
import json, sqlite3, sys, time
store, interval, out = sys.argv[1], float(sys.argv[2]) / 1000, sys.argv[3]
conn = sqlite3.connect(store, isolation_level=None, timeout=30)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = NORMAL")
seq = conn.execute("SELECT COALESCE(MAX(seq), -1) FROM transcript_events WHERE session_id = 'live'").fetchone()[0]
waits = []
event = json.dumps({"type": "message", "message": {"role": "user", "content": "x" * 200}})
with open(out, "w") as log:
    while True:
        seq += 1
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO transcript_events VALUES ('live', ?, ?, ?, NULL, ?, NULL)",
                     (seq, event, int(time.time() * 1000), len(event)))
        conn.execute("COMMIT")
        log.write(f"{time.monotonic():.6f} {(time.perf_counter() - start) * 1000:.3f}\n")
        log.flush()
        time.sleep(interval)
"""


def _event(rng: random.Random, index: int, parent: str | None, large: bool) -> str:
    words = 600 if large else 40
    text = " ".join(rng.choice(_WORDS) for _ in range(words)) + f" #{index}"
    role = "toolResult" if large else ("user" if index % 2 else "assistant")
    message: dict[str, Any] = {
        "role": role,
        "content": [{"type": "text", "text": text}],
        "timestamp": 1_780_000_000_000 + index,
    }
    if role == "toolResult":
        message.update(toolCallId=f"call-{index}", toolName="read")
    return json.dumps(
        {
            "type": "message",
            "id": f"e{index}",
            "parentId": parent,
            "timestamp": "2026-11-01T00:00:00.000Z",
            "message": message,
        },
        separators=(",", ":"),
    )


def build_store(path: Path, events: int, sessions: int, seed: int = 1) -> dict[str, Any]:
    """A store of ``events`` events over ``sessions`` sessions, every other one zstd."""
    rng = random.Random(seed)
    conn = create_store(path)
    per = events // sessions
    compressed = raw_bytes = 0
    for s in range(sessions):
        sid = f"bench-{s:03d}"
        conn.execute("BEGIN")
        conn.execute("INSERT INTO session_nodes VALUES (?, ?, '{}', 0)", (f"agent:main:explicit:{sid}", sid))
        conn.execute(
            "INSERT INTO session_windows (session_id, session_key, created_at, updated_at) VALUES (?, ?, 0, 0)",
            (sid, f"agent:main:explicit:{sid}"),
        )
        header = json.dumps(
            {"type": "session", "version": 4, "id": sid, "timestamp": "2026-11-01T00:00:00.000Z"}
        )
        rows = [(sid, 0, header, 0, None, len(header), None)]
        parent = None
        for i in range(1, per):
            text = _event(rng, s * per + i, parent, large=i % 2 == 0)
            parent = f"e{s * per + i}"
            event_json, frame, size = event_row(text)
            compressed += frame is not None
            raw_bytes += size
            rows.append((sid, i, event_json, 0, frame, size, '{"version":1}' if frame else None))
        conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    conn.execute("INSERT INTO session_nodes VALUES ('agent:main:explicit:live', 'live', '{}', 0)")
    conn.execute(
        "INSERT INTO session_windows (session_id, session_key, created_at, updated_at) VALUES ('live', 'agent:main:explicit:live', 0, 0)"
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {
        "events": per * sessions,
        "compressed": compressed,
        "eventMiB": raw_bytes / 2**20,
        "storeMiB": path.stat().st_size / 2**20,
    }


def _waits(log: Path, start: float, end: float) -> list[float]:
    out = []
    for line in log.read_text().splitlines():
        moment, wait = line.split()
        if start <= float(moment) <= end:
            out.append(float(wait))
    return out


def _summary(waits: list[float]) -> dict[str, Any]:
    if not waits:
        return {"commits": 0, "maxMs": None, "p99Ms": None}
    p99 = statistics.quantiles(waits, n=100)[98] if len(waits) >= 2 else waits[0]
    return {"commits": len(waits), "maxMs": round(max(waits), 2), "p99Ms": round(p99, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--writer-interval-ms", type=float, default=3.0)
    parser.add_argument("--baseline-s", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-host-store-"))
    try:
        store = work / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
        built = build_store(store, args.events, args.sessions)
        log = work / "writer.log"
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(store), str(args.writer_interval_ms), str(log)]
        )
        results: dict[str, Any] = {"store": built}
        try:
            time.sleep(0.5)  # the writer's start-up
            start = time.monotonic()
            time.sleep(args.baseline_s)
            results["baseline"] = _summary(_waits(log, start, time.monotonic()))

            snap_dir = work / "snap"
            snap_dir.mkdir()
            sessions = [s for s in host_store.list_sessions(str(store)) if s.session_id != "live"]
            start = time.monotonic()
            size = events = 0
            for _ in range(args.rounds):
                for session in sessions:
                    path = host_store.write_snapshot(str(store), session.session_id, str(snap_dir))
                    size += os.path.getsize(path)
                    events += session.event_count
                    os.unlink(path)
            elapsed = time.monotonic() - start
            results["snapshot"] = _summary(_waits(log, start, time.monotonic()))
            results["snapshot"].update(
                seconds=round(elapsed, 2),
                eventsPerSecond=round(events / elapsed),
                mibPerSecond=round(size / 2**20 / elapsed, 1),
            )

            lcm = Path(sys.executable).with_name("lcm")
            start = time.monotonic()
            done = subprocess.run(
                [
                    str(lcm),
                    "--db",
                    str(work / "lcm.db"),
                    "migrate-sessions",
                    "--store",
                    str(store),
                    "--apply",
                ],
                capture_output=True,
                text=True,
            )
            elapsed = time.monotonic() - start
            data = json.loads(done.stdout)["data"] if done.returncode == 0 else {}
            results["import"] = _summary(_waits(log, start, time.monotonic()))
            results["import"].update(
                seconds=round(elapsed, 2), exit=done.returncode, importedMessages=data.get("importedMessages")
            )
        finally:
            writer.kill()
            writer.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    s = results["store"]
    print(
        f"store: {s['events']} events ({s['compressed']} zstd), {s['eventMiB']:.1f} MiB of event JSON,"
        f" {s['storeMiB']:.1f} MiB file; writer commits every {args.writer_interval_ms} ms"
    )
    print(f"{'phase':<10} {'commits':>8} {'max ms':>8} {'p99 ms':>8}  reader")
    for phase in ("baseline", "snapshot", "import"):
        r = results[phase]
        extra = ""
        if phase == "snapshot":
            extra = f"{r['seconds']} s, {r['eventsPerSecond']} events/s, {r['mibPerSecond']} MiB/s"
        elif phase == "import":
            extra = f"{r['seconds']} s, exit {r['exit']}, {r['importedMessages']} messages imported"
        print(f"{phase:<10} {r['commits']:>8} {r['maxMs']!s:>8} {r['p99Ms']!s:>8}  {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
