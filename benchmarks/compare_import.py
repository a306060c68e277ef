"""Prove two `lcm migrate-sessions --apply` runs store exactly the same rows.

Imports the benchmark's cached state dir (``benchmarks/data/import/openclaw``, built by
``bench_import.py``) twice into fresh databases, then dumps every row of every table
(ordered by primary key / rowid, FTS content included) and compares them. Columns that
hold the wall-clock time of the run (``datetime('now')`` defaults) and the random
``message_parts.part_id`` UUIDs are masked; every
other value must be byte-identical.

By default run A is the in-process reader (``LCM_MIGRATE_WORKERS=0``) and run B the
forked reader pipeline of the same ``lcm``; ``--reference-lcm`` compares against another
installation instead (e.g. main's venv, the code before a change)::

    .venv/bin/python benchmarks/compare_import.py
    .venv/bin/python benchmarks/compare_import.py --reference-lcm /work/main/.venv/bin/lcm

Exits 0 when identical, 1 with the first differences otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATE_DIR = HERE / "data" / "import" / "openclaw"
# Columns filled with the time of the run (not from the transcript).
CLOCK_COLUMNS = {"created_at", "updated_at", "bootstrapped_at", "completed_at"}
# Planner statistics: derived from the clock columns' spread, not from what was imported.
SKIPPED_TABLES = {"sqlite_sequence", "sqlite_stat1"}


def run_import(lcm: str, db: Path, env_extra: dict[str, str], home: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCM_", "OPENCLAW_"))}
    env.update(env_extra, HOME=home, NO_COLOR="1")
    proc = subprocess.run(
        [lcm, "--openclaw-dir", str(STATE_DIR), "--db", str(db), "migrate-sessions", "--apply"],
        env=env,
        capture_output=True,
    )
    if proc.returncode != 0:
        sys.exit(f"import failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (FTS shadow tables skipped: their content table is dumped)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        if not any(r[0].endswith(s) for s in ("_data", "_idx", "_docsize", "_config", "_content"))
        and r[0] not in SKIPPED_TABLES
    ]
    out: dict[str, list[tuple[object, ...]]] = {}
    for table in tables:
        cursor = conn.execute(f'SELECT rowid, * FROM "{table}" ORDER BY rowid')
        names = [d[0] for d in cursor.description]
        masked = [i for i, n in enumerate(names) if n in CLOCK_COLUMNS]
        rows = []
        for row in cursor:
            values = list(row)
            if table == "message_parts":
                values[names.index("part_id")] = "<random uuid>"  # random v4 ids by design
            for i in masked:
                if values[i] is not None and table not in ("messages",):
                    values[i] = "<clock>"
            rows.append(tuple(values))
        out[table] = rows
    conn.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lcm", default=str(Path(sys.executable).parent / "lcm"))
    parser.add_argument(
        "--reference-lcm", help="compare against this lcm (default: same lcm, in-process reader)"
    )
    parser.add_argument(
        "--additive",
        action="store_true",
        help=(
            "the lcm under test may add tables and migration records the reference lacks"
            " (e.g. a new migration's lcm_* tables): list them, do not count them as differences"
        ),
    )
    args = parser.parse_args()
    if not STATE_DIR.is_dir():
        sys.exit(f"{STATE_DIR} is missing: run benchmarks/bench_import.py --build-only first")
    with tempfile.TemporaryDirectory(prefix="lcm-compare-import-") as work_text:
        work = Path(work_text)
        a, b = work / "a.db", work / "b.db"
        if args.reference_lcm:
            run_import(args.reference_lcm, a, {}, work_text)
        else:
            run_import(args.lcm, a, {"LCM_MIGRATE_WORKERS": "0"}, work_text)
        run_import(args.lcm, b, {}, work_text)
        left, right = dump(a), dump(b)
    problems = 0
    if args.additive:
        added = sorted(set(right) - set(left))
        if added:
            print(f"tables only the lcm under test has (additive): {added}")
        for table in added:
            del right[table]
        old = set(left.get("lcm_migration_state", []))
        extra = [r for r in right.get("lcm_migration_state", []) if r not in old]
        if extra:
            print(f"migration records only the lcm under test has (additive): {[r[1] for r in extra]}")
            right["lcm_migration_state"] = [r for r in right["lcm_migration_state"] if r in old]
    if sorted(left) != sorted(right):
        print(f"tables differ: {sorted(set(left) ^ set(right))}")
        problems += 1
    total = 0
    for table in sorted(set(left) & set(right)):
        rows_a, rows_b = left[table], right[table]
        total += len(rows_a)
        digest_a = hashlib.sha256(repr(rows_a).encode()).hexdigest()[:16]
        digest_b = hashlib.sha256(repr(rows_b).encode()).hexdigest()[:16]
        same = rows_a == rows_b
        print(f"{table:40} {len(rows_a):>8} rows  {digest_a} {'==' if same else '!='} {digest_b}")
        if not same:
            problems += 1
            if len(rows_a) != len(rows_b):
                print(f"  row counts differ: {len(rows_a)} vs {len(rows_b)}")
            for x, y in zip(rows_a, rows_b, strict=False):
                if x != y:
                    print(f"  first difference:\n    A {x!r:.400}\n    B {y!r:.400}")
                    break
    print(f"{total} rows compared: {'IDENTICAL' if not problems else f'{problems} table(s) DIFFER'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
