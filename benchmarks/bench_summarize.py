"""Extractive summarizer throughput: MB of source text summarized per second (target ≥ 1).

Generates its own deterministic conversation text (a fixed seed; prose, file paths,
commands, error lines and timestamps in leaf-source format), then times
:func:`lcm_cli.engine.summarize.extractive.summarize_extractive` on

* leaf chunks of 20,000 tokens (the default ``leafChunkTokens``) with a 2,400-token target,
* one 1 MiB source with the same target,
* condensed-style input (summaries with ``[start - end]`` headers) with a 2,000-token target,

and prints MB/s for each (best of ``--runs``). It is a report, not a test: it always exits 0::

    .venv/bin/python benchmarks/bench_summarize.py
    .venv/bin/python benchmarks/bench_summarize.py --runs 5 --json
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.summarize.extractive import summarize_extractive

WORDS = (
    "schema migration parser invoice deploy cache token budget summary compaction context thread "
    "session request latency index query cursor backup restore rotate gateway plugin config "
    "the a of to and in for with on at by from we will should could after before because while"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 22))]
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])


def message(rng: random.Random, index: int) -> str:
    role = "user" if index % 2 == 0 else "assistant"
    header = f"[2026-03-{1 + index // 1440 % 28:02d} {index // 60 % 24:02d}:{index % 60:02d} UTC | {role}]"
    lines = [" ".join(sentence(rng) for _ in range(rng.randint(1, 6)))]
    roll = rng.random()
    if roll < 0.15:
        lines.append(f"$ pytest tests/test_{rng.choice(WORDS)}.py -q -x")
    elif roll < 0.25:
        lines.append(
            f"Error: {rng.choice(WORDS)} failed with ValueError at src/{rng.choice(WORDS)}/mod.py:{index}"
        )
    elif roll < 0.35:
        lines.append(f"Edited lcm_cli/engine/{rng.choice(WORDS)}.py and docs/{rng.choice(WORDS)}.md")
    return header + "\n" + "\n".join(lines)


def leaf_source(rng: random.Random, tokens: int) -> str:
    parts: list[str] = []
    size = 0
    index = 0
    while size < tokens:
        part = message(rng, index)
        parts.append(part)
        size += estimate_tokens(part) + 1
        index += 1
    return "\n\n".join(parts)


def condensed_source(rng: random.Random, tokens: int) -> str:
    parts: list[str] = []
    size = 0
    while size < tokens:
        body = " ".join(sentence(rng) for _ in range(30))
        part = f"[2026-03-01 10:00 UTC - 2026-03-01 11:00 UTC]\n{body}\nFiles: a.py\nExpand for details about: x, y"
        parts.append(part)
        size += estimate_tokens(part)
    return "\n\n".join(parts)


def measure(texts: list[str], target: int, leaf: bool, runs: int) -> dict[str, Any]:
    total = sum(len(t.encode()) for t in texts)
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        for text in texts:
            summarize_extractive(text, target, leaf=leaf)
        best = min(best, time.perf_counter() - start)
    return {"bytes": total, "seconds": round(best, 4), "mb_per_s": round(total / 1e6 / best, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(20260304)
    cases = {
        "leaf chunks 20k tokens x10": measure(
            [leaf_source(rng, 20000) for _ in range(10)], 2400, True, args.runs
        ),
        "one 1 MiB source": measure([leaf_source(rng, 262144)], 2400, True, args.runs),
        "condensed 20k tokens x10": measure(
            [condensed_source(rng, 20000) for _ in range(10)], 2000, False, args.runs
        ),
    }
    if args.json:
        print(json.dumps(cases, indent=2))
        return
    print(f"{'case':32} {'MB':>7} {'seconds':>8} {'MB/s':>7}")
    for name, row in cases.items():
        print(f"{name:32} {row['bytes'] / 1e6:7.2f} {row['seconds']:8.3f} {row['mb_per_s']:7.2f}")
    print("target: >= 1 MB/s")


if __name__ == "__main__":
    main()
