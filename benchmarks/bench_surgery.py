"""Summary surgery on a large DAG: how long each `lcm summaries` surgery takes, end to end.

Builds (through the project's Store, into a temp dir) one conversation of ``--messages``
messages folded into leaves of 20 messages, condensed 10 to 1 at depth 1 and again at
depth 2 (the depth-2 nodes and a raw tail in the context), plus an empty target
conversation. Then times, as real `lcm` processes on fresh copies: graph (mermaid, dot),
rewrite of the depth-2 summaries (extractive summarizer, dry run and --apply with its
backup), dissolve of one depth-2 node (dry run, --apply), transplant of the whole DAG
(dry run, --apply). Reports; never fails.

    .venv/bin/python benchmarks/bench_surgery.py [--messages 20000] [--runs 3] [--json]
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

LEAF = 20
FAN = 10


def build(db: Path, messages: int) -> dict[str, Any]:
    """The big conversation and an empty target, through Store."""
    from lcm_cli.engine.db.store import Store

    with Store.open(db) as store:
        cid = store.create_conversation("bench-source", session_key="agent:main:bench")
        rows = [
            {
                "role": ("user", "assistant")[i % 2],
                "content": f"message {i}: the deploy of service {i % 37} and the port {8000 + i % 500}",
                "created_at": f"2026-07-{1 + i // 2000:02d} {(i // 60) % 24:02d}:{i % 60:02d}:00",
            }
            for i in range(messages)
        ]
        ids = store.add_messages(cid, rows)
        tail = ids[-(messages % (LEAF * FAN * FAN) or LEAF * 4) :]
        folded = ids[: len(ids) - len(tail)]
        with store.transaction():
            leaves = [
                store.add_leaf_summary(
                    cid, folded[i : i + LEAF], f"leaf {i // LEAF}: messages {i}..{i + LEAF - 1}"
                )
                for i in range(0, len(folded), LEAF)
            ]
            d1 = [
                store.add_condensed_summary(
                    cid, leaves[i : i + FAN], f"d1 {i // FAN}: leaves {i}..{i + FAN - 1}"
                )
                for i in range(0, len(leaves), FAN)
            ]
            d2 = [
                store.add_condensed_summary(cid, d1[i : i + FAN], f"d2 {i // FAN}: d1 {i}..{i + FAN - 1}")
                for i in range(0, len(d1), FAN)
            ]
            # The context: the depth-2 nodes, then the raw tail.
            store.conn.execute("DELETE FROM context_items WHERE conversation_id = ?", (cid,))
            for summary_id in d2:
                store.append_context_item(cid, summary_id=summary_id)
            for message_id in tail:
                store.append_context_item(cid, message_id=message_id)
        target = store.create_conversation("bench-target", session_key="agent:main:target")
        store.add_messages(target, [{"role": "user", "content": "hello"}])
    return {"source": cid, "target": target, "leaves": len(leaves), "d1": len(d1), "d2": d2}


def timed(lcm: str, db: Path, args: list[str], env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([lcm, "--db", str(db), *args], capture_output=True, env=env, check=False)
    return (time.perf_counter() - started) * 1000, done.returncode


def main() -> None:
    """Build, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    lcm = str(Path(sys.executable).with_name("lcm"))
    env = {**os.environ, "LCM_SUMMARIZER": "extractive"}
    with tempfile.TemporaryDirectory(prefix="bench-surgery-") as scratch:
        base = Path(scratch) / "base.db"
        started = time.perf_counter()
        made = build(base, options.messages)
        print(
            f"built in {time.perf_counter() - started:.1f}s: {made['leaves']} leaves, {made['d1']} d1, "
            f"{len(made['d2'])} d2, {base.stat().st_size / 2**20:.1f} MiB",
            file=sys.stderr,
        )
        src, dst, top = str(made["source"]), str(made["target"]), made["d2"][0]
        cases = {
            "graph mermaid": ["summaries", "graph", "--conversation-id", src],
            "graph dot": ["summaries", "graph", "--conversation-id", src, "--to", "dot"],
            "rewrite --depth 2 (dry run)": ["summaries", "rewrite", "--depth", "2", "--conversation-id", src],
            "rewrite --depth 2 --apply": [
                "summaries",
                "rewrite",
                "--depth",
                "2",
                "--conversation-id",
                src,
                "--apply",
            ],
            "dissolve (dry run)": ["summaries", "dissolve", top],
            "dissolve --apply": ["summaries", "dissolve", top, "--apply"],
            "transplant (dry run)": ["summaries", "transplant", "--from", src, "--to", dst],
            "transplant --apply": ["summaries", "transplant", "--from", src, "--to", dst, "--apply"],
        }
        results = {}
        for name, args in cases.items():
            times, codes = [], set()
            for _ in range(options.runs):
                copy = Path(scratch) / "run" / "lcm.db"
                shutil.rmtree(copy.parent, ignore_errors=True)
                copy.parent.mkdir()
                shutil.copy(base, copy)
                ms, code = timed(lcm, copy, args, env)
                times.append(ms)
                codes.add(code)
            results[name] = {
                "medianMs": round(statistics.median(times)),
                "minMs": round(min(times)),
                "exit": sorted(codes),
            }
    if options.json:
        json.dump(
            {
                "messages": options.messages,
                **{k: v for k, v in made.items() if k != "d2"},
                "results": results,
            },
            sys.stdout,
            indent=2,
        )
        print()
        return
    print(f"{'operation':32} {'median ms':>10} {'min ms':>8}  exit")
    for name, r in results.items():
        print(f"{name:32} {r['medianMs']:>10} {r['minMs']:>8}  {r['exit']}")


if __name__ == "__main__":
    main()
