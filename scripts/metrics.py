#!/usr/bin/env python3
"""Size and shape figures of the lcm_cli package: what issue notes report before/after.

Prints, as JSON: files and lines per package, the largest file, functions above
cyclomatic complexity 20 (ruff's mccabe rule C901), and how often ``Any`` appears.

Usage: python scripts/metrics.py [PACKAGE_DIR]   (default: lcm_cli next to this script)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ANY = re.compile(r"\bAny\b")


def package_of(path: Path, root: Path) -> str:
    """The package a module belongs to: its directory, dotted, relative to the root's parent."""
    return ".".join(path.relative_to(root.parent).parent.parts)


def complex_functions(root: Path, threshold: int = 20) -> list[str]:
    """Functions whose cyclomatic complexity exceeds ``threshold``, as ruff's C901 reports them."""
    ruff = Path(sys.executable).with_name("ruff")
    out = subprocess.run(
        [
            str(ruff),
            "check",
            str(root),
            "--isolated",
            "--select",
            "C901",
            "--output-format",
            "json",
            "--config",
            f"lint.mccabe.max-complexity={threshold}",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return sorted(
        f"{Path(d['filename']).relative_to(root.parent)}: {d['message']}" for d in json.loads(out or "[]")
    )


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "lcm_cli"
    per_package: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    largest = ("", 0)
    any_count = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        entry = per_package[package_of(path, root)]
        entry[0] += 1
        entry[1] += lines
        any_count += len(ANY.findall(text))
        if lines > largest[1]:
            largest = (str(path.relative_to(root.parent)), lines)
    complex_ = complex_functions(root)
    report = {
        "packages": {name: {"files": f, "lines": n} for name, (f, n) in sorted(per_package.items())},
        "total": {
            "files": sum(f for f, _ in per_package.values()),
            "lines": sum(n for _, n in per_package.values()),
        },
        "largestFile": {"path": largest[0], "lines": largest[1]},
        "complexityAbove20": len(complex_),
        "complexFunctions": complex_,
        "anyCount": any_count,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
