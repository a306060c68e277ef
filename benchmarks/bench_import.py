"""Import benchmark for `lcm migrate-sessions`: 100,000 messages in 200 OpenClaw sessions.

Generates (once, cached under ``benchmarks/data/import/``) an OpenClaw state dir whose
``agents/*/sessions/*.jsonl`` hold 200 transcripts written by the test suite's generator
(``tests/support/transcripts.py``), 100,000 message entries in all: one session of
20,000, one of exactly 500, the other 198 uneven (lognormal). Then it times whole
``lcm`` processes, each into a fresh temp database:

- ``migrate-sessions`` (dry run, the database does not exist yet);
- ``migrate-sessions --apply`` (the import);
- ``migrate-sessions --apply`` again (the idempotent re-run: nothing new);
- ``migrate-sessions --verify``;
- ``--apply --file`` of only the 20,000-message file, and of only the 500-message file,
  into fresh databases: their peak RSS must be the same (memory is flat).

Peak RSS is the larger of the child's own ``ru_maxrss`` (read with ``wait4`` by a small
launcher interpreter that also times the child; see ``bench_read.py`` for why a launcher)
and the sum of VmRSS over the child and its forked reader processes, sampled every 10 ms
in the first (warm-up) round (``migrate-sessions`` forks readers; pages they share with
the parent count twice, so the sum errs high). The timed rounds do not sample: polling
/proc takes CPU from the command on a 2-core machine.

It is a report, not a test: it always exits 0 once it has printed its table::

    .venv/bin/python benchmarks/bench_import.py              # generate once, time, print
    .venv/bin/python benchmarks/bench_import.py --runs 5     # more rounds (median; default 3)
    .venv/bin/python benchmarks/bench_import.py --json       # machine-readable
    .venv/bin/python benchmarks/bench_import.py --rebuild    # regenerate the transcripts
    .venv/bin/python benchmarks/bench_import.py --build-only # just generate (or reuse)
    .venv/bin/python benchmarks/bench_import.py --reference-cmd "node /path/lossless-claw/dist/migrate-sessions.js"

With ``--reference-cmd`` (or ``LCM_BENCH_REFERENCE_IMPORT_CMD``) the reference's importer
(lossless-claw's ``lossless-claw-migrate-sessions``) runs on the same transcripts, right
after ours in every round and into its own fresh database, for the dry run and the
import: the table gives its time, its peak memory and our time as a ratio of its time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "data" / "import"
STATE_DIR = DATA_DIR / "openclaw"
META_FILE = DATA_DIR / "import.json"
GENERATOR = REPO / "tests" / "support" / "transcripts.py"

SESSIONS = 200
MESSAGES = 100_000
BIG_MESSAGES = 20_000
SMALL_MESSAGES = 500
OTHER_FLOOR = 20
OTHER_CAP = 3_000
SEED = 20260301
# Agents the sessions are spread over (the big one is main's "agent:main:main").
AGENTS = (("main", 170), ("ops", 30))

TARGET_IMPORT_S = 5.0
# Our --apply time as a multiple of the reference importer's (issue 17).
TARGET_IMPORT_RATIO = 0.3
REFERENCE_ENV = "LCM_BENCH_REFERENCE_IMPORT_CMD"
TARGET_DRY_RUN_S = 1.0
TARGET_RSS_MIB = 200.0
# "The largest transcript must not raise peak memory": importing only the 20,000-message
# file may peak at most this much above importing only the 500-message file.
FLAT_TOLERANCE_MIB = 8.0

SPEC = {
    "version": 1,
    "sessions": SESSIONS,
    "messages": MESSAGES,
    "big": BIG_MESSAGES,
    "small": SMALL_MESSAGES,
    "seed": SEED,
    "agents": [list(a) for a in AGENTS],
}


def note(text: str) -> None:
    """Progress for a person: stderr, so stdout stays the report."""
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# The transcripts
# ---------------------------------------------------------------------------------------


def message_counts(rng: random.Random) -> list[int]:
    """Messages per session: BIG, SMALL, then the rest uneven with an exact total."""
    others = SESSIONS - 2
    budget = MESSAGES - BIG_MESSAGES - SMALL_MESSAGES
    weights = [rng.lognormvariate(0.0, 1.1) for _ in range(others)]
    total = sum(weights)
    counts = [min(OTHER_CAP, max(OTHER_FLOOR, int(w / total * budget))) for w in weights]
    # Spread the rounding (and clipping) difference one message at a time.
    i = 0
    while sum(counts) != budget:
        step = 1 if sum(counts) < budget else -1
        j = i % others
        if OTHER_FLOOR <= counts[j] + step <= OTHER_CAP:
            counts[j] += step
        i += 1
    return [BIG_MESSAGES, SMALL_MESSAGES, *counts]


def generator_digest() -> str:
    return hashlib.sha256(GENERATOR.read_bytes()).hexdigest()[:16]


def build_state_dir(target: Path) -> dict[str, Any]:
    """Write the state dir: transcripts under agents/<agent>/sessions and a sessions.json each."""
    sys.path.insert(0, str(REPO))
    from tests.support.transcripts import append_truncated, write_sessions_index, write_transcript

    rng = random.Random(SEED)
    counts = message_counts(rng)
    agent_of: list[str] = []
    for agent, n in AGENTS:
        agent_of.extend([agent] * n)
    order = list(range(SESSIONS))
    rng.shuffle(order)  # the big and the small files land somewhere in the listing
    big_path = small_path = ""
    written = imported = 0
    keys: dict[str, dict[str, str]] = {agent: {} for agent, _ in AGENTS}
    for slot, which in enumerate(order):
        count = counts[which]
        agent = "main" if which < 2 else agent_of[slot]
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        path = target / "agents" / agent / "sessions" / f"{session_id}.jsonl"
        roll = rng.random()
        result = write_transcript(
            path,
            session_id=session_id,
            messages=count,
            seed=SEED + slot,
            # A few history edits, and a few legacy files without entry ids.
            branches=which >= 2 and roll < 0.08,
            with_ids=not (which >= 2 and 0.08 <= roll < 0.10),
        )
        if which >= 2 and 0.10 <= roll < 0.12:
            append_truncated(path)  # a crash mid-write
        written += count
        imported += result.message_count
        if which == 0:
            big_path = str(path)
            keys[agent]["agent:main:main"] = session_id
        elif which == 1:
            small_path = str(path)
        elif rng.random() < 0.5:
            keys[agent][f"agent:{agent}:telegram:direct:{slot}"] = session_id
    for agent, mapping in keys.items():
        write_sessions_index(target / "agents" / agent, mapping)
    size = sum(p.stat().st_size for p in target.rglob("*.jsonl"))
    return {
        "writtenMessages": written,
        "importableMessages": imported,
        "bigFile": big_path,
        "smallFile": small_path,
        "bytes": size,
    }


def _under_state_dir(path: str) -> Path:
    """A recorded transcript path relative to the state dir (the part from ``agents/`` on).

    The cache may have been generated in another checkout and linked or copied here, so
    its recorded absolute paths are re-anchored on this STATE_DIR.
    """
    parts = Path(path).parts
    return Path(*parts[len(parts) - 1 - parts[::-1].index("agents") :])


def ensure_state_dir(rebuild: bool) -> dict[str, Any]:
    """The cached state dir (generated now if missing, stale or ``rebuild``) and its facts."""
    spec = {**SPEC, "generator": generator_digest()}
    if not rebuild and META_FILE.exists() and STATE_DIR.is_dir():
        try:
            meta = json.loads(META_FILE.read_text())
        except ValueError:
            meta = None
        if meta is not None and meta.get("spec") == spec:
            meta["builtNow"] = False
            for key in ("bigFile", "smallFile"):
                meta[key] = str(STATE_DIR / _under_state_dir(meta[key]))
            return dict(meta)
        note("cached transcripts were made from another recipe or generator; regenerating")
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    building = DATA_DIR / "openclaw.building"
    building.mkdir(parents=True)
    note(f"generating {SESSIONS} transcripts, {MESSAGES:,} messages (seed {SEED}) ...")
    started = time.perf_counter()
    facts = build_state_dir(building)
    seconds = time.perf_counter() - started
    building.rename(STATE_DIR)
    for key in ("bigFile", "smallFile"):
        facts[key] = str(STATE_DIR / Path(facts[key]).relative_to(building))
    meta = {"spec": spec, "buildSeconds": round(seconds, 1), **facts}
    META_FILE.write_text(json.dumps(meta, indent=2) + "\n")
    note(f"generated in {seconds:.1f} s")
    meta["builtNow"] = True
    return meta


# ---------------------------------------------------------------------------------------
# Running lcm
# ---------------------------------------------------------------------------------------

# Times the child and reads its own peak RSS with wait4. Measured from this process
# (RUSAGE_CHILDREN, or wait4 on a child spawned from here) ru_maxrss would start at this
# process's high-water mark, which Linux carries across exec(); the launcher is a bare
# interpreter (~10 MiB), below any command's peak.
_LAUNCHER = (
    "import os, sys, time\n"
    "out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
    "err = os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
    "def tree_kib(pid):\n"
    "    total = 0\n"
    "    try:\n"
    "        with open(f'/proc/{pid}/status') as f:\n"
    "            for line in f:\n"
    "                if line.startswith('VmRSS:'):\n"
    "                    total += int(line.split()[1])\n"
    "        with open(f'/proc/{pid}/task/{pid}/children') as f:\n"
    "            kids = f.read().split()\n"
    "    except OSError:\n"
    "        return total\n"
    "    return total + sum(tree_kib(int(k)) for k in kids)\n"
    "started = time.perf_counter()\n"
    "pid = os.posix_spawn(sys.argv[4], sys.argv[6:], os.environ,\n"
    "    file_actions=[(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, err, 2)])\n"
    "tree = 0\n"
    "sample = sys.argv[5] == '1' and sys.platform == 'linux'\n"
    "while True:\n"
    "    done, status, usage = os.wait4(pid, 0 if not sample else os.WNOHANG)\n"
    "    if done:\n"
    "        break\n"
    "    tree = max(tree, tree_kib(pid))\n"
    "    time.sleep(0.01)\n"
    "elapsed = time.perf_counter() - started\n"
    "open(sys.argv[1], 'w').write(f'{elapsed} {usage.ru_maxrss} {tree}')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


class Run:
    """One measured process: wall seconds, peak RSS in MiB, exit code, parsed stdout."""

    def __init__(self, seconds: float, rss_mib: float, code: int, data: Any, stderr: str) -> None:
        self.seconds = seconds
        self.rss_mib = rss_mib
        self.code = code
        self.data = data
        self.stderr = stderr


def run_measured(argv: list[str], env: dict[str, str], scratch: Path, *, sample: bool = False) -> Run:
    """Run ``argv`` once: its wall time, or (``sample``) its RSS summed over its readers too.

    Sampling polls /proc every 10 ms from the launcher, which takes CPU from the command
    on a 2-core machine, so timed runs do not sample and the sampled runs are not timed.
    """
    report, out, err = scratch / "launch.txt", scratch / "stdout.json", scratch / "stderr.txt"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _LAUNCHER,
            str(report),
            str(out),
            str(err),
            argv[0],
            "1" if sample else "0",
            *argv,
        ],
        stdin=subprocess.DEVNULL,
        env=env,
    )
    seconds_text, rss_text, tree_text = report.read_text().split()
    # The larger of the process's own high-water mark and the sampled sum over it and its
    # forked readers (migrate-sessions forks; shared pages count once per process here).
    rss_kib = max(int(rss_text) // (1024 if sys.platform == "darwin" else 1), int(tree_text))
    try:
        data = json.loads(out.read_bytes())
    except ValueError:
        data = None
    return Run(float(seconds_text), rss_kib / 1024, proc.returncode, data, err.read_text(errors="replace"))


def clean_env(home: str) -> dict[str, str]:
    """The environment minus anything that would point lcm at another database or config."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LCM_", "OPENCLAW_")) and k not in ("PYTHONPATH", "PYTHONSTARTUP")
    }
    # Let lcm cache its bytecode as in any normal install (some sandboxes set this).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    env["HOME"] = home
    return env


def find_lcm(override: str | None) -> Path:
    """The venv's own lcm script: next to sys.executable (not resolved, so not a shim)."""
    if override:
        return Path(override)
    return Path(sys.executable).parent / ("lcm.exe" if os.name == "nt" else "lcm")


# ---------------------------------------------------------------------------------------
# The rows
# ---------------------------------------------------------------------------------------


class Row:
    """One measured command: its runs, targets and any problem seen."""

    def __init__(self, name: str, target_s: float | None, target_rss: float | None = TARGET_RSS_MIB) -> None:
        self.name = name
        self.target_s = target_s
        self.target_rss = target_rss
        self.seconds: list[float] = []
        self.rss: list[float] = []
        self.problems: list[str] = []
        self.facts = ""
        # The same step through the reference importer (--reference-cmd), when given.
        self.ref_seconds: list[float] = []
        self.ref_rss: list[float] = []
        self.ref_problems: list[str] = []
        self.ratio_target: float | None = None

    @property
    def ref_median_s(self) -> float | None:
        return statistics.median(self.ref_seconds) if self.ref_seconds else None

    @property
    def ratio(self) -> float | None:
        """Our median over the reference's (below 1: we are faster)."""
        ours, theirs = self.median_s, self.ref_median_s
        return ours / theirs if ours is not None and theirs else None

    def ratio_verdict(self) -> str:
        if self.ref_problems:
            return "ERROR"
        if self.ratio_target is None or self.ratio is None:
            return "-"
        return "PASS" if self.ratio <= self.ratio_target else "FAIL"

    def add(self, run: Run, problem: str | None, *, timed: bool = True) -> None:
        if timed:
            self.seconds.append(run.seconds)
        self.rss.append(run.rss_mib)
        if run.code != 0 or not isinstance(run.data, dict) or run.data.get("ok") is not True:
            self.problems.append(f"exit {run.code}: {run.stderr.strip()[:300]}")
        elif problem:
            self.problems.append(problem)

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def peak_rss(self) -> float | None:
        return max(self.rss) if self.rss else None

    def verdict(self) -> str:
        if self.problems:
            return "ERROR"
        if self.target_s is None and self.target_rss is None:
            return "-"
        ok = True
        if self.target_s is not None and self.median_s is not None:
            ok = ok and self.median_s <= self.target_s
        if self.target_rss is not None and self.peak_rss is not None:
            ok = ok and self.peak_rss <= self.target_rss
        return "PASS" if ok else "FAIL"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "medianSeconds": self.median_s,
            "seconds": self.seconds,
            "peakRssMiB": self.peak_rss,
            "rssMiB": self.rss,
            "targetSeconds": self.target_s,
            "targetRssMiB": self.target_rss,
            "verdict": self.verdict(),
            "facts": self.facts,
            "problems": self.problems,
            "reference": None
            if not (self.ref_seconds or self.ref_problems)
            else {
                "medianSeconds": self.ref_median_s,
                "seconds": self.ref_seconds,
                "peakRssMiB": max(self.ref_rss) if self.ref_rss else None,
                "ratio": self.ratio,
                "ratioTarget": self.ratio_target,
                "ratioVerdict": self.ratio_verdict(),
                "problems": self.ref_problems,
            },
        }


def check(envelope: Any, **wanted: Any) -> str | None:
    """None when every ``key=value`` holds in the result's data, else what differed."""
    data = envelope.get("data", {}) if isinstance(envelope, dict) else {}
    if "missingEntries" in wanted:
        # --verify: no file may miss an entry (files without entry ids cannot be checked).
        wanted = dict(wanted)
        expected = wanted.pop("missingEntries")
        missing = sum(f.get("missingEntries", 0) for f in data.get("files", []))
        if missing != expected:
            return f"missingEntries={missing} (expected {expected})"
    wrong = [f"{k}={data.get(k)!r} (expected {v!r})" for k, v in wanted.items() if data.get(k) != v]
    return "; ".join(wrong) or None


# Every line of every transcript through the stdlib's C JSON parser, in one process: how
# fast this machine runs the one step no importer can skip (bad lines are passed over).
_PARSE_ALL = """
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/agents/*/sessions/*.jsonl")):
    with open(path, "rb") as handle:
        for line in handle:
            try:
                json.loads(line)
            except ValueError:
                pass
"""


def reference_command(given: str | None) -> list[str] | None:
    """The reference importer's command words (``--reference-cmd``, else the environment), or None."""
    text = given if given is not None else os.environ.get(REFERENCE_ENV, "")
    words = shlex.split(text)
    return words or None


def reference_problem(run: Run, importable: int, apply: bool) -> str | None:
    """None when the reference's run succeeded and (applied) imported what ours imports."""
    if run.code != 0 or not isinstance(run.data, dict):
        return f"exit {run.code}: {run.stderr.strip()[:300]}"
    if apply and run.data.get("importedMessages") != importable:
        return f"importedMessages={run.data.get('importedMessages')!r} (ours: {importable})"
    return None


def measure(lcm: Path, meta: dict[str, Any], runs: int, reference: list[str] | None = None) -> list[Row]:
    """Run every command ``runs`` times (after one warm-up round), each into fresh databases."""
    importable = meta["importableMessages"]
    rows = {
        "floor": Row("python -c pass (floor)", None, None),
        "parse": Row("json.loads of every line, 1 process", None, None),
        "dry": Row("dry run (no database yet)", TARGET_DRY_RUN_S),
        "apply": Row("--apply into a fresh database", TARGET_IMPORT_S),
        "again": Row("--apply again (nothing new)", None),
        "verify": Row("--verify", None),
        "big": Row(f"--apply --file <{BIG_MESSAGES:,}-message file>", None),
        "small": Row(f"--apply --file <{SMALL_MESSAGES}-message file>", None),
        "without": Row(f"--apply of the other {SESSIONS - 1} files", None),
    }
    others = sorted(str(p) for p in STATE_DIR.glob("agents/*/sessions/*.jsonl") if str(p) != meta["bigFile"])
    with tempfile.TemporaryDirectory(prefix="lcm-bench-import-") as work_text:
        work = Path(work_text)
        env = clean_env(str(work))
        state = str(STATE_DIR)
        # Round 0 warms up (bytecode, page cache) and samples the summed RSS.
        for round_no in range(runs + 1):
            note(f"round {round_no}/{runs}" + ("" if round_no else " (warm-up, not counted)"))
            scratch = work / f"round{round_no}"
            scratch.mkdir()
            db = str(scratch / "lcm.db")
            base = [str(lcm), "--openclaw-dir", state, "--db", db, "migrate-sessions"]
            steps: list[tuple[str, list[str], dict[str, Any]]] = [
                ("floor", [sys.executable, "-c", "pass"], {}),
                ("parse", [sys.executable, "-c", _PARSE_ALL, state], {}),
                ("dry", base, {"mode": "dry-run", "scannedFiles": SESSIONS, "errorFiles": 0}),
                ("apply", [*base, "--apply"], {"importedMessages": importable, "errorFiles": 0}),
                ("again", [*base, "--apply"], {"importedMessages": 0, "importedFiles": 0, "errorFiles": 0}),
                ("verify", [*base, "--verify"], {"errorFiles": 0, "missingEntries": 0}),
            ]
            for key, file in (("big", meta["bigFile"]), ("small", meta["smallFile"])):
                single = str(scratch / f"{key}.db")
                argv = [str(lcm), "--openclaw-dir", state, "--db", single, "migrate-sessions"]
                steps.append((key, [*argv, "--apply", "--file", file], {"importedFiles": 1, "errorFiles": 0}))
            # The whole import again without the largest transcript: its peak must match
            # the full import's (the big file must not raise peak memory).
            argv = [
                str(lcm),
                "--openclaw-dir",
                state,
                "--db",
                str(scratch / "without.db"),
                "migrate-sessions",
            ]
            files = [arg for path in others for arg in ("--file", path)]
            steps.append(("without", [*argv, "--apply", *files], {"errorFiles": 0}))
            for key, argv, wanted in steps:
                # Round 0 samples memory (untimed); the other rounds are timed.
                run = run_measured(argv, env, scratch, sample=round_no == 0)
                row = rows[key]
                if reference is not None and key in ("dry", "apply"):
                    # The reference importer, right after ours, into its own fresh file.
                    ref_argv = [
                        *reference,
                        "--state-dir",
                        state,
                        "--db",
                        str(scratch / "reference.db"),
                        "--json",
                    ]
                    if key == "apply":
                        ref_argv.append("--apply")
                    ref = run_measured(ref_argv, env, scratch, sample=round_no == 0)
                    trouble = reference_problem(ref, importable, key == "apply")
                    if trouble:
                        row.ref_problems.append(trouble)
                    elif round_no:
                        row.ref_seconds.append(ref.seconds)
                    else:
                        row.ref_rss.append(ref.rss_mib)
                    if key == "apply":
                        row.ratio_target = TARGET_IMPORT_RATIO
                        for leftover in scratch.glob("reference.db*"):
                            leftover.unlink()
                if key in ("floor", "parse"):
                    if round_no:
                        row.seconds.append(run.seconds)
                        row.rss.append(run.rss_mib)
                    continue
                problem = check(run.data, **wanted)
                row.add(run, problem, timed=round_no > 0)
                data = run.data.get("data", {}) if isinstance(run.data, dict) else {}
                if key in ("apply", "big", "small", "without"):
                    row.facts = f"{data.get('importedMessages', 0):,} messages"
                elif key == "verify":
                    row.facts = f"{data.get('completeFiles')} files complete, {data.get('incompleteFiles')} without entry ids"
                elif key == "again":
                    row.facts = f"{data.get('skippedFiles')} files up to date"
            shutil.rmtree(scratch)
    flat = Row("peak RSS: 20,000-file minus 500-file", None, FLAT_TOLERANCE_MIB)
    big, small = rows["big"].peak_rss, rows["small"].peak_rss
    if big is not None and small is not None:
        flat.rss = [big - small]
    flat.facts = "memory flat in transcript size"
    raised = Row(f"peak RSS: all files minus all but the {BIG_MESSAGES:,}-file", None, FLAT_TOLERANCE_MIB)
    full, without = rows["apply"].peak_rss, rows["without"].peak_rss
    if full is not None and without is not None:
        raised.rss = [full - without]
    raised.facts = "the largest transcript does not raise the import's peak"
    parse, apply = rows["parse"].median_s, rows["apply"].median_s
    if parse and apply:
        # Machines differ in Python speed: the import as a multiple of this one's C JSON parse.
        rows["parse"].facts = "machine speed: the C parser alone, no lcm"
        rows["apply"].facts += f"; {apply / parse:.1f}x the json.loads row"
    return [*rows.values(), flat, raised]


def print_table(
    rows: list[Row], meta: dict[str, Any], runs: int, lcm: Path, reference: list[str] | None = None
) -> None:
    print(
        f"lcm migrate-sessions ({lcm}): {SESSIONS} sessions, {meta['writtenMessages']:,} message entries "
        f"({meta['importableMessages']:,} importable), {meta['bytes'] / 2**20:.1f} MiB of JSONL; "
        f"median of {runs} run(s), {os.cpu_count()} CPUs"
    )
    if reference is not None:
        print(f"reference importer: {shlex.join(reference)}")
    print()
    header = f"{'command':<40} {'median s':>9} {'target':>7} {'peak MiB':>9} {'target':>7}  {'verdict':<7}"
    if reference is not None:
        header += f" {'ref s':>7} {'ref MiB':>8} {'ratio':>6} {'target':>7} {'vs ref':<7}"
    header += " facts"
    print(header)
    print("-" * len(header))
    for row in rows:
        median = f"{row.median_s:.2f}" if row.median_s is not None else "-"
        target_s = f"≤{row.target_s:g}" if row.target_s is not None else "-"
        rss = f"{row.peak_rss:.1f}" if row.peak_rss is not None else "-"
        target_rss = f"≤{row.target_rss:g}" if row.target_rss is not None else "-"
        line = f"{row.name:<40} {median:>9} {target_s:>7} {rss:>9} {target_rss:>7}  {row.verdict():<7}"
        if reference is not None:
            ref_s = f"{row.ref_median_s:.2f}" if row.ref_median_s is not None else "-"
            ref_rss = f"{max(row.ref_rss):.1f}" if row.ref_rss else "-"
            ratio = f"{row.ratio:.2f}" if row.ratio is not None else "-"
            target_ratio = f"≤{row.ratio_target:g}" if row.ratio_target is not None else "-"
            line += f" {ref_s:>7} {ref_rss:>8} {ratio:>6} {target_ratio:>7} {row.ratio_verdict():<7}"
        print(f"{line} {row.facts}")
        for problem in row.problems[:3]:
            print(f"    ! {problem}")
        for problem in row.ref_problems[:3]:
            print(f"    ! reference: {problem}")
    print()
    print(
        f"Targets (issue 3): import ≤ {TARGET_IMPORT_S:g} s and every run ≤ {TARGET_RSS_MIB:g} MiB on 2 cores, "
        f"dry run ≤ {TARGET_DRY_RUN_S:g} s; the largest transcript must not raise peak memory "
        f"(here: the import's peak with and without it, and the {BIG_MESSAGES:,}-message file alone vs the "
        f"{SMALL_MESSAGES}-message file alone, each within {FLAT_TOLERANCE_MIB:g} MiB)."
    )
    if reference is not None:
        print(
            f"Issue 17: --apply ≤ {TARGET_IMPORT_RATIO:g}x the reference importer's time (ratio = our median / "
            "its median; each round runs ours, then the reference, on the same files)."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed rounds (median reported; default 3)")
    parser.add_argument("--rebuild", action="store_true", help="regenerate the cached transcripts first")
    parser.add_argument(
        "--build-only", action="store_true", help="generate (or reuse) the transcripts and stop"
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable results on stdout")
    parser.add_argument("--lcm", help="lcm executable to time (default: the one next to sys.executable)")
    parser.add_argument(
        "--reference-cmd",
        help="also time the reference importer, e.g. 'node /path/lossless-claw/dist/migrate-sessions.js'"
        f" (default: ${REFERENCE_ENV})",
    )
    opts = parser.parse_args(argv)
    runs = max(1, opts.runs)
    reference = reference_command(opts.reference_cmd)

    lcm = find_lcm(opts.lcm)
    if not lcm.exists():
        note(f"no lcm at {lcm}: run this with the venv's interpreter or pass --lcm")
        return 0
    meta = ensure_state_dir(opts.rebuild)
    note(
        f"state dir {STATE_DIR}: {SESSIONS} sessions, {meta['writtenMessages']:,} messages, "
        f"{meta['bytes'] / 2**20:.1f} MiB ({'generated' if meta['builtNow'] else 'cached'})"
    )
    if opts.build_only:
        return 0
    rows = measure(lcm, meta, runs, reference)
    if opts.json:
        result = {
            "lcm": str(lcm),
            "referenceCmd": reference,
            "meta": meta,
            "runs": runs,
            "rows": [r.as_json() for r in rows],
        }
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print_table(rows, meta, runs, lcm, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
