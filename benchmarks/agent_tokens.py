"""What an agent pays to read `lcm`: tokens of the ten most used agent calls, default and cheap.

Runs each call on a fresh copy of the bundled example (``examples/openclaw``) twice: as
the docs first show it ("default") and in its cheap form ("cheap": ``--fields``,
``--limit``, ``--count`` or ``--max-tokens``, as skills/lcm/SKILL.md teaches). Each
answer is measured as printed on stdout, two ways: the project's token estimate
(``lcm_cli.engine.core.tokens.estimate_tokens``, lossless-claw's) and bytes / 4.

``--lcm PATH`` measures another executable (e.g. an older checkout's ``.venv/bin/lcm``,
for the "before" column of issue 16); a cheap form that executable does not know is
shown as ``n/a``. It reports, it does not test: it always exits 0::

    .venv/bin/python benchmarks/agent_tokens.py                 # table on stdout
    .venv/bin/python benchmarks/agent_tokens.py --json          # machine-readable
    .venv/bin/python benchmarks/agent_tokens.py --lcm /other/checkout/.venv/bin/lcm
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lcm_cli.engine.core.tokens import estimate_tokens

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "openclaw"
SUMMARY = "sum_1b2c3d4e5f607182"  # a leaf of the example's main session
KEY = "agent:main:main"

# (name, default call, cheap call): the cheap call answers the same question.
CALLS: list[tuple[str, list[str], list[str]]] = [
    (
        "status",
        ["status"],
        ["status", "--fields", "status.messages.count,status.conversations,status.maintenance"],
    ),
    (
        "conversations list",
        ["conversations", "list"],
        [
            "conversations",
            "list",
            "--limit",
            "20",
            "--fields",
            "conversationId,sessionKey,active,title,updatedAt",
        ],
    ),
    (
        "messages tail",
        ["messages", "tail", "--session-key", KEY],
        ["messages", "tail", "--session-key", KEY, "--count", "4", "--fields", "role,content"],
    ),
    (
        "summaries list",
        ["summaries", "list"],
        ["summaries", "list", "--limit", "20", "--fields", "summaryId,kind,depth,preview"],
    ),
    (
        "grep",
        ["grep", "nightly", "--all-conversations"],
        [
            "grep",
            "nightly",
            "--all-conversations",
            "--limit",
            "10",
            "--fields",
            "type,id,conversationId,snippet",
        ],
    ),
    (
        "describe",
        ["describe", SUMMARY],
        ["describe", SUMMARY, "--fields", "summary.content,sourceMessageIds"],
    ),
    ("expand", ["expand", SUMMARY], ["expand", SUMMARY, "--max-tokens", "600", "--fields", "role,content"]),
    (
        "context show",
        ["context", "show", "--session-key", KEY],
        [
            "context",
            "show",
            "--session-key",
            KEY,
            "--fields",
            "estimatedTokens,messages.role,messages.content",
        ],
    ),
    (
        "migrate-sessions (dry run)",
        ["migrate-sessions"],
        ["migrate-sessions", "--fields", "scannedFiles,wouldImportFiles,wouldImportMessages,errorFiles"],
    ),
    ("doctor", ["doctor"], ["doctor", "--fields", "healthy,status,counts,checks.check,checks.status"]),
]


def _measure(lcm: str, argv: list[str], env: dict[str, str]) -> dict[str, int] | None:
    """Tokens and bytes/4 of one call's stdout; None when the call fails."""
    done = subprocess.run([lcm, *argv], capture_output=True, text=True, env=env, timeout=120, check=False)
    if done.returncode not in (0, 6) or not done.stdout:  # 6: doctor found something
        return None
    size = len(done.stdout.encode("utf-8"))
    return {"tokens": estimate_tokens(done.stdout), "bytes4": (size + 3) // 4}


def measure(lcm: str) -> list[dict[str, object]]:
    """Every call, default and cheap, each on a fresh copy of the example."""
    rows: list[dict[str, object]] = []
    for name, default, cheap in CALLS:
        row: dict[str, object] = {"call": name, "default": " ".join(default), "cheap": " ".join(cheap)}
        for label, argv in (("defaultCost", default), ("cheapCost", cheap)):
            with tempfile.TemporaryDirectory(prefix="lcm-agent-tokens-") as scratch:
                state = Path(scratch) / "openclaw"
                shutil.copytree(EXAMPLE, state)
                env = {
                    **{k: v for k, v in os.environ.items() if not k.startswith(("LCM_", "OPENCLAW_"))},
                    "HOME": scratch,
                    "LCM_OPENCLAW_DIR": str(state),
                }
                row[label] = _measure(lcm, argv, env)
        rows.append(row)
    return rows


def _cell(cost: object, key: str) -> str:
    return f"{cost[key]:,}" if isinstance(cost, dict) else "n/a"


def table(rows: list[dict[str, object]]) -> str:
    """The report: one line per call, default and cheap, in tokens and bytes/4."""
    lines = [
        f"{'call':<28} {'default tok':>11} {'bytes/4':>8} {'cheap tok':>10} {'bytes/4':>8}",
        "-" * 70,
    ]
    totals = {"d": 0, "db": 0, "c": 0, "cb": 0}
    for row in rows:
        d, c = row["defaultCost"], row["cheapCost"]
        lines.append(
            f"{row['call']:<28} {_cell(d, 'tokens'):>11} {_cell(d, 'bytes4'):>8} "
            f"{_cell(c, 'tokens'):>10} {_cell(c, 'bytes4'):>8}"
        )
        if isinstance(d, dict):
            totals["d"] += d["tokens"]
            totals["db"] += d["bytes4"]
        if isinstance(c, dict):
            totals["c"] += c["tokens"]
            totals["cb"] += c["bytes4"]
    lines.append("-" * 70)
    lines.append(f"{'total':<28} {totals['d']:>11,} {totals['db']:>8,} {totals['c']:>10,} {totals['cb']:>8,}")
    lines.append("")
    lines += [f"{row['call']}: `lcm {row['default']}` -> `lcm {row['cheap']}`" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Measure and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lcm", default=str(Path(sys.executable).with_name("lcm")), help="the lcm to measure"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    options = parser.parse_args()
    rows = measure(options.lcm)
    sys.stdout.write(json.dumps(rows, indent=2) + "\n" if options.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
