"""Read-path benchmark for `lcm`: whole-process latency and peak memory on a large lcm.db.

Builds (once, cached in ``benchmarks/data/``) a 500,000-message, 30,000-summary database
through the project's own write path (:class:`lcm_cli.engine.db.store.Store`), then runs every
read command as a separate process of the venv's ``lcm`` and reports the median wall time,
the peak RSS and whether each meets its target. It is a report, not a test: it always
exits 0 once it has printed its results.

Run it with the venv's interpreter, so the ``lcm`` next to it is the one measured::

    .venv/bin/python benchmarks/bench_read.py            # table on stdout
    .venv/bin/python benchmarks/bench_read.py --json     # machine-readable results
    .venv/bin/python benchmarks/bench_read.py --rebuild  # regenerate the database
    .venv/bin/python benchmarks/bench_read.py --reference-cmd "node /path/to/lossless-claw/dist/cli.js"

With ``--reference-cmd`` (or ``LCM_BENCH_REFERENCE_CMD``) every command is also timed through
the reference CLI (lossless-claw's ``lcm``) on the same database, in the same rounds, and
the report gives our time as a ratio of its time. See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"
DB_FILE = "bench.db"
META_FILE = "bench.json"

# What the database looks like. Changing any of these (or the generator) must change the
# spec hash, so a cached database built from another recipe is rebuilt automatically.
SEED = 20260501
GENERATOR_VERSION = 3
CONVERSATIONS = 200
MESSAGES = 500_000
BIG_MESSAGES = 14_000
OTHER_CAP = 9_000  # no other conversation outgrows the big one
OTHER_FLOOR = 12
SUMMARIES = 30_000
DEPTH2_CONVERSATIONS = 3  # the big one and the two next largest get depth-2 nodes
EPOCH = datetime(2025, 9, 1, tzinfo=timezone.utc)
START_SPREAD_DAYS = 150

SPEC = {
    "seed": SEED,
    "generator": GENERATOR_VERSION,
    "conversations": CONVERSATIONS,
    "messages": MESSAGES,
    "bigMessages": BIG_MESSAGES,
    "summaries": SUMMARIES,
}

PAGE_SIZE = 50
DEEP_PAGE = 100
DEEP_RATIO_TARGET = 1.2
RSS_TARGET_MIB = 80.0
# Our whole-process time as a multiple of the reference CLI's, per command (issue 17).
REFERENCE_ENV = "LCM_BENCH_REFERENCE_CMD"
RATIO_TARGETS = {
    "status": 0.3,
    "conversations.list": 0.8,
    "conversations.show": 0.9,
    "messages.tail": 0.9,
    "messages.list": 0.9,
}


def note(text: str) -> None:
    """Progress for a person: stderr, so stdout stays the report."""
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Building the database
# ---------------------------------------------------------------------------------------

_TECH_WORDS = (
    "the a to of and in is it that for on with as this be are was by not or from at have"
    " file function error test config database query index table column row cursor page"
    " limit offset commit branch merge build deploy server client request response token"
    " summary message conversation context agent session model prompt tool output input"
    " python sqlite json schema migration import module package install version release"
    " timeout retry cache memory thread process signal socket stream buffer parse format"
    " string integer boolean null list dict array object class method value key path"
    " directory user assistant system run check fix update create delete read write open"
    " close start stop wait log debug info warning trace stack frame line char byte"
).split()
_SYLLABLES = "ka lo mi ne su ta ri po an el ur is ox ve da ko be zu fi ga he ju ly mo".split()


def _corpus(rng: random.Random) -> str:
    """A few MB of word-like ASCII text that message and summary contents are cut from."""
    made = {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)}
    vocab = list(_TECH_WORDS) * 8 + sorted(made)
    words = rng.choices(vocab, k=900_000)
    for i in range(0, len(words), 11):
        words[i] = words[i] + rng.choice((".", ",", ".\n", ":", "", ""))
    return " ".join(words)


class TextSource:
    """Cheap realistic-looking text: slices of one pre-generated corpus."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.corpus = _corpus(rng)
        self.size = len(self.corpus)

    def text(self, length: int) -> str:
        length = max(1, min(length, self.size // 2))
        start = self.rng.randrange(0, self.size - length)
        return self.corpus[start : start + length].strip() or "ok"

    def lognormal_length(self, median: float, sigma: float, low: int, high: int) -> int:
        return int(min(high, max(low, self.rng.lognormvariate(math.log(median), sigma))))


def _message_counts(rng: random.Random) -> list[int]:
    """Messages per conversation: one of BIG_MESSAGES, the rest uneven (lognormal), exact total."""
    others = CONVERSATIONS - 1
    budget = MESSAGES - BIG_MESSAGES
    weights = [rng.lognormvariate(0.0, 1.3) for _ in range(others)]
    counts = [0] * others
    free = set(range(others))
    while True:  # cap the heaviest and share what they leave among the rest
        total = sum(weights[i] for i in free)
        over = [i for i in free if weights[i] / total * budget > OTHER_CAP]
        if not over:
            break
        for i in over:
            counts[i] = OTHER_CAP
            free.discard(i)
            budget -= OTHER_CAP
    total = sum(weights[i] for i in free)
    for i in free:
        counts[i] = max(OTHER_FLOOR, int(weights[i] / total * budget))
    diff = (MESSAGES - BIG_MESSAGES) - sum(counts)
    order = sorted(free, key=lambda i: -counts[i])
    k = 0
    while diff:
        i = order[k % len(order)]
        step = 1 if diff > 0 else -1
        if OTHER_FLOOR <= counts[i] + step <= OTHER_CAP:
            counts[i] += step
            diff -= step
        k += 1
    counts.insert(rng.randrange(CONVERSATIONS), BIG_MESSAGES)
    return counts


def _largest_remainder(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` into integers that sum to ``total``."""
    weight_sum = sum(weights)
    raw = [total * w / weight_sum for w in weights]
    shares = [int(x) for x in raw]
    leftover = total - sum(shares)
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - shares[i], reverse=True)[:leftover]:
        shares[i] += 1
    return shares


def _dag_plan(rng: random.Random, budget: int, depth2: bool) -> list[tuple[str, int]]:
    """Compaction order for ``budget`` summaries: leaves, condensed over 4-8 leaves, depth 2 over 3-5."""
    ops: list[tuple[str, int]] = []
    leaves = condensed = 0
    group, upper = rng.randint(4, 8), rng.randint(3, 5)
    while budget > 0:
        if leaves == group:
            ops.append(("condensed", group))
            budget -= 1
            leaves, group = 0, rng.randint(4, 8)
            condensed += 1
            if depth2 and condensed == upper and budget > 0:
                ops.append(("depth2", upper))
                budget -= 1
                condensed, upper = 0, rng.randint(3, 5)
        else:
            ops.append(("leaf", 1))
            budget -= 1
            leaves += 1
    return ops


def _run_sizes(rng: random.Random, total: int, runs: int) -> list[int]:
    """``runs`` positive sizes summing to ``total``, unevenly (leaf chunks vary in length)."""
    weights = [rng.uniform(0.5, 1.5) for _ in range(runs)]
    scale = sum(weights)
    sizes = [max(1, int(total * w / scale)) for w in weights]
    diff = total - sum(sizes)
    i = 0
    while diff:
        j = i % runs
        if diff > 0:
            sizes[j] += 1
            diff -= 1
        elif sizes[j] > 1:
            sizes[j] -= 1
            diff += 1
        i += 1
    return sizes


def _sqlite_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _messages_for(rng: random.Random, text: TextSource, count: int, start: datetime) -> list[dict[str, Any]]:
    """``count`` message rows with a plausible role rhythm, lengths and timestamps (some tied)."""
    rows: list[dict[str, Any]] = []
    moment = start
    role = "user"
    for i in range(count):
        if i == 0 and rng.random() < 0.3:
            role = "system"
        elif i > 0:
            prev = rows[-1]["role"]
            if prev == "system":
                role = "user"
            elif prev == "user":
                role = "assistant"
            elif prev == "assistant":
                role = "tool" if rng.random() < 0.4 else "user"
            else:  # after a tool result: more tools, or the assistant answers
                role = "tool" if rng.random() < 0.2 else "assistant"
        roll = rng.random()
        if i:
            # Ties: tool calls and results often land in the same second.
            if roll < 0.07:
                gap = 0.0
            elif roll < 0.65:
                gap = rng.uniform(1, 120)
            elif roll < 0.985:
                gap = rng.uniform(120, 1800)
            else:
                gap = rng.uniform(3600, 12 * 3600)  # the session goes quiet for a while
            moment += timedelta(seconds=gap)
        if role == "system":
            length = rng.randint(200, 900)
        elif role == "user":
            length = text.lognormal_length(70, 0.9, 6, 2500)
        elif role == "assistant":
            length = text.lognormal_length(180, 0.9, 15, 6000)
        elif rng.random() < 0.015:
            length = rng.randint(4000, 20000)  # a big file read or command output
        else:
            length = text.lognormal_length(200, 1.0, 15, 8000)
        body = text.text(length)
        if role == "tool" and rng.random() < 0.5:
            body = '{"status":"ok","exitCode":0,"output":' + json.dumps(body) + "}"
        rows.append({"role": role, "content": body, "created_at": _sqlite_time(moment)})
    return rows


def build_database(path: Path) -> dict[str, Any]:
    """Write the benchmark database at ``path`` through Store; return facts about it."""
    from lcm_cli.engine.db.store import Store
    from lcm_cli.engine.db.store.stamps import iso_timestamp

    rng = random.Random(SEED)
    text = TextSource(rng)
    counts = _message_counts(rng)
    big_index = counts.index(BIG_MESSAGES)
    # Each conversation keeps a fresh tail of raw messages; the rest is compacted.
    tails = [min(n, rng.randint(48, 140)) for n in counts]
    compactable = [n - t for n, t in zip(counts, tails)]
    budgets = _largest_remainder(SUMMARIES, compactable)
    depth2_set = set(sorted(range(CONVERSATIONS), key=lambda i: -counts[i])[:DEPTH2_CONVERSATIONS])
    archived = set(rng.sample([i for i in range(CONVERSATIONS) if i != big_index], 20))
    models = ("anthropic/claude-sonnet-4-5", "openai/gpt-5-mini", "google/gemini-2.5-flash")

    facts: dict[str, Any] = {"bigConversationId": None}
    store = Store.open(path)
    try:
        for index, count in enumerate(counts):
            start = EPOCH + timedelta(days=rng.uniform(0, START_SPREAD_DAYS))
            rows = _messages_for(rng, text, count, start)
            first, last = rows[0]["created_at"], rows[-1]["created_at"]
            is_big = index == big_index
            inactive = index in archived
            session_key = "agent:main:main" if (is_big or inactive) else f"agent:main:bench-{index:03d}"
            ops = _dag_plan(rng, budgets[index], index in depth2_set)
            leaf_count = sum(1 for kind, _ in ops if kind == "leaf")
            sizes = _run_sizes(rng, compactable[index], leaf_count) if leaf_count else []
            if not leaf_count:
                tails[index] = count
            with store.transaction():
                cid = store.create_conversation(
                    f"bench-{index:03d}-{rng.getrandbits(64):016x}",
                    session_key=session_key,
                    title=None if rng.random() < 0.3 else f"Bench conversation {index}: {text.text(40)}",
                    active=not inactive,
                    archived_at=last if inactive else None,
                    archive_cause="session_reset" if inactive else None,
                    created_at=first,
                    updated_at=last,
                )
                if is_big:
                    facts["bigConversationId"] = cid
                made: dict[str, datetime] = {}  # summary id -> created_at
                leaves: list[str] = []
                condensed: list[str] = []
                pos = run = 0
                for kind, width in ops:
                    if kind == "leaf":
                        chunk = rows[pos : pos + sizes[run]]
                        pos += sizes[run]
                        run += 1
                        ids = store.add_messages(cid, chunk)
                        at = datetime.strptime(chunk[-1]["created_at"], "%Y-%m-%d %H:%M:%S")
                        at = at.replace(tzinfo=timezone.utc) + timedelta(seconds=rng.randint(20, 900))
                        sid = store.add_leaf_summary(
                            cid,
                            ids,
                            "Leaf summary. " + text.text(text.lognormal_length(900, 0.4, 250, 3000)),
                            summary_id=f"sum_{rng.getrandbits(64):016x}",
                            created_at=_sqlite_time(at),
                            model=rng.choice(models),
                        )
                        leaves.append(sid)
                    else:
                        sources = leaves[-width:] if kind == "condensed" else condensed[-width:]
                        at = max(made[s] for s in sources) + timedelta(seconds=rng.randint(20, 900))
                        sid = store.add_condensed_summary(
                            cid,
                            sources,
                            f"Condensed summary (depth {1 if kind == 'condensed' else 2}). "
                            + text.text(text.lognormal_length(1500, 0.35, 400, 4000)),
                            summary_id=f"sum_{rng.getrandbits(64):016x}",
                            created_at=_sqlite_time(at),
                            model=rng.choice(models),
                        )
                        if kind == "condensed":
                            leaves.clear()
                            condensed.append(sid)
                        else:
                            del condensed[-width:]
                    made[sid] = at
                    store.replace_context_with_summary(cid, sid)
                tail_rows = rows[pos:]
                for i in range(0, len(tail_rows), 1000):
                    store.add_messages(cid, tail_rows[i : i + 1000])
                last_at = datetime.strptime(last, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
                if rng.random() < 0.5:
                    store.upsert_bootstrap_state(
                        cid,
                        f"/home/agent/.openclaw/agents/main/sessions/bench-{index:03d}.jsonl",
                        last_seen_size=count * 900,
                        last_seen_mtime_ms=int(last_at.timestamp() * 1000),
                        updated_at=last,
                    )
                if rng.random() < 0.4:
                    store.set_telemetry(
                        cid,
                        cache_state=rng.choice(("hot", "cold", "unknown")),
                        provider="anthropic",
                        model=models[0],
                        updated_at=last,
                    )
                if rng.random() < 0.25:
                    store.set_maintenance(
                        cid,
                        pending=rng.random() < 0.3,
                        reason="threshold",
                        requested_at=iso_timestamp(last_at),
                        updated_at=last,
                    )
            if (index + 1) % 20 == 0:
                note(f"  built {index + 1}/{CONVERSATIONS} conversations")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return facts


def ensure_database(rebuild: bool) -> dict[str, Any]:
    """The cached benchmark database (built now if missing, stale or ``rebuild``) and its facts."""
    db_path = DATA_DIR / DB_FILE
    meta_path = DATA_DIR / META_FILE
    meta: dict[str, Any] | None = None
    if not rebuild and db_path.exists() and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            meta = None
        if meta is not None and meta.get("spec") != SPEC:
            note("cached benchmark database was built from another recipe; rebuilding")
            meta = None
    if meta is not None:
        meta["builtNow"] = False
        return meta
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    building = DATA_DIR / (DB_FILE + ".building")
    for stale in DATA_DIR.glob(DB_FILE + "*"):
        stale.unlink()
    note(f"building {db_path} ({MESSAGES:,} messages, {SUMMARIES:,} summaries, seed {SEED}) ...")
    started = time.perf_counter()
    facts = build_database(building)
    seconds = time.perf_counter() - started
    for suffix in ("-wal", "-shm"):
        Path(str(building) + suffix).unlink(missing_ok=True)
    building.rename(db_path)
    meta = {"spec": SPEC, "buildSeconds": round(seconds, 1), **facts}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    note(f"built in {seconds:.1f} s")
    meta["builtNow"] = True
    return meta


def database_facts(db_path: Path) -> dict[str, Any]:
    """Row counts and size of the built file, read directly (not through lcm)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "sizeBytes": db_path.stat().st_size,
            "conversations": one("SELECT COUNT(*) FROM conversations"),
            "messages": one("SELECT COUNT(*) FROM messages"),
            "summaries": one("SELECT COUNT(*) FROM summaries"),
            "summariesByDepth": {
                str(d): n for d, n in conn.execute("SELECT depth, COUNT(*) FROM summaries GROUP BY depth")
            },
            "contextItems": one("SELECT COUNT(*) FROM context_items"),
            "hasStat1": one("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'") > 0,
        }
    finally:
        conn.close()


def pick_targets(db_path: Path) -> tuple[int, str | None]:
    """(the conversation with most messages, a condensed summary in it -- one with a parent if any)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        big = conn.execute(
            "SELECT conversation_id FROM messages GROUP BY conversation_id ORDER BY COUNT(*) DESC, conversation_id LIMIT 1"
        ).fetchone()[0]
        row = (
            conn.execute(
                """SELECT s.summary_id FROM summaries s
               WHERE s.conversation_id = ? AND s.kind = 'condensed'
               ORDER BY EXISTS (SELECT 1 FROM summary_parents sp WHERE sp.parent_summary_id = s.summary_id) DESC,
                        s.depth ASC, s.summary_id LIMIT 1""",
                (big,),
            ).fetchone()
            or conn.execute(
                "SELECT summary_id FROM summaries WHERE kind = 'condensed' ORDER BY summary_id LIMIT 1"
            ).fetchone()
        )
        return big, (row[0] if row else None)
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------


@dataclass
class Bench:
    """One measured command and its results."""

    name: str
    argv: list[str]
    target_ms: float | None
    operation: str | None = None  # for the in-process timing
    params: dict[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    times_ms: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    out_bytes: int = 0
    error: str | None = None
    in_process_ms: float | None = None
    # The same command through the reference CLI (--reference-cmd), when given.
    ref_argv: list[str] | None = None
    ref_times_ms: list[float] = field(default_factory=list)
    ref_rss_kib: list[int] = field(default_factory=list)
    ref_error: str | None = None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None

    @property
    def ref_median_ms(self) -> float | None:
        return statistics.median(self.ref_times_ms) if self.ref_times_ms else None

    @property
    def ratio(self) -> float | None:
        """Our median over the reference's (below 1: we are faster)."""
        ours, theirs = self.median_ms, self.ref_median_ms
        return ours / theirs if ours is not None and theirs else None

    @property
    def ratio_target(self) -> float | None:
        return RATIO_TARGETS.get(self.operation or "")

    @property
    def ref_max_rss_mib(self) -> float | None:
        return max(self.ref_rss_kib) / 1024 if self.ref_rss_kib else None

    @property
    def max_rss_mib(self) -> float | None:
        return max(self.rss_kib) / 1024 if self.rss_kib else None


def _rss_kib(ru_maxrss: int) -> int:
    # Linux reports KiB, macOS bytes.
    return ru_maxrss // 1024 if sys.platform == "darwin" else ru_maxrss


def run_process(argv: list[str], env: dict[str, str]) -> tuple[float, int, bytes, bytes]:
    """Run once and wait: (wall ms, exit code, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        proc.wait()
        elapsed = (time.perf_counter() - started) * 1000
        out.seek(0)
        err.seek(0)
        return elapsed, proc.returncode, out.read(), err.read()


# Peak RSS goes through a small launcher process. Measured straight from this process
# (wait4 / RUSAGE_CHILDREN) it would be wrong: Linux carries the RSS high-water mark of the
# address space a child had before exec() -- this process's, 100+ MiB here -- into the
# child's ru_maxrss. The launcher is a bare interpreter (~10 MiB), below any command's peak.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def peak_rss_kib(argv: list[str], env: dict[str, str]) -> int | None:
    """The command's own max RSS in KiB, via the launcher; None if it could not be read."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "maxrss"
        subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(report), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            return _rss_kib(int(report.read_text()))
        except (OSError, ValueError):
            return None


def output_problem(bench: Bench, code: int, stdout: bytes, stderr: bytes) -> str | None:
    """None when the command exited 0 with a successful JSON envelope, else what went wrong."""
    if code != 0:
        return f"exit {code}: {stderr.decode(errors='replace').strip()[:300]}"
    try:
        envelope = json.loads(stdout)
    except ValueError:
        if bench.operation is not None or "--version" in bench.argv:
            return "stdout is not JSON"
        return None
    if isinstance(envelope, dict) and envelope.get("ok") is not True:
        return f"not ok: {stdout[:300]!r}"
    return None


def check_output(bench: Bench, code: int, stdout: bytes, stderr: bytes) -> None:
    """Record an error unless the command exited 0 with a successful JSON envelope."""
    bench.error = output_problem(bench, code, stdout, stderr)


def reference_command(given: str | None) -> list[str] | None:
    """The reference CLI's command words (``--reference-cmd``, else the environment), or None."""
    text = given if given is not None else os.environ.get(REFERENCE_ENV, "")
    words = shlex.split(text)
    return words or None


def time_in_process(bench: Bench, common: dict[str, Any], runs: int) -> None:
    """Median time of the same operation through lcm_cli.engine.api.call (no start-up)."""
    from lcm_cli.engine.api import call

    if bench.operation is None:
        return
    samples = []
    try:
        call(bench.operation, bench.params, args=bench.args, **common)  # warm-up
        for _ in range(runs):
            started = time.perf_counter()
            call(bench.operation, bench.params, args=bench.args, **common)
            samples.append((time.perf_counter() - started) * 1000)
    except Exception as exc:
        note(f"in-process {bench.operation} failed: {exc!r}")
        return
    bench.in_process_ms = statistics.median(samples)


def walk_to_page(operation: str, params: dict[str, Any], common: dict[str, Any], page: int) -> str | None:
    """The cursor that opens page ``page`` (1-based) of a list, following nextCursor in-process."""
    from lcm_cli.engine.api import call

    cursor = None
    try:
        for _ in range(page - 1):
            envelope = call(operation, {**params, "cursor": cursor}, **common)
            cursor = envelope["pagination"]["nextCursor"]
            if cursor is None:
                return None
    except Exception as exc:  # a report, not a test: note it and let the row show the error
        note(f"walking {operation} failed: {exc!r}")
        return None
    return cursor


def find_lcm(override: str | None) -> Path:
    """The venv's own lcm script: next to sys.executable (not resolved, so not a shim)."""
    if override:
        return Path(override)
    return Path(sys.executable).parent / ("lcm.exe" if os.name == "nt" else "lcm")


def clean_env(openclaw_dir: str) -> dict[str, str]:
    """The environment minus anything that would point lcm at another database or config."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LCM_", "OPENCLAW_")) and k not in ("PYTHONPATH", "PYTHONSTARTUP")
    }
    # Let lcm cache its bytecode as in any normal install; with PYTHONDONTWRITEBYTECODE set
    # (some sandboxes do) every run would recompile the package's own modules.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    env["HOME"] = openclaw_dir  # no ~/.openclaw of the person running this leaks in
    return env


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def verdict(bench: Bench, baseline: Bench | None) -> tuple[str, float | None, str]:
    """(PASS/FAIL/ERROR/-, the effective target in ms, target text)."""
    if bench.error:
        return "ERROR", None, "-"
    target, text = bench.target_ms, "-"
    if baseline is not None and baseline.median_ms is not None:
        target = DEEP_RATIO_TARGET * baseline.median_ms
        text = f"{target:.0f} (1.2x)"
    elif target is not None:
        text = f"{target:.0f}"
    if target is None:
        return "-", None, text
    ok_time = bench.median_ms is not None and bench.median_ms <= target
    ok_rss = bench.max_rss_mib is not None and bench.max_rss_mib <= RSS_TARGET_MIB
    return ("PASS" if ok_time and ok_rss else "FAIL"), target, text


def ratio_verdict(bench: Bench) -> str:
    """PASS/FAIL against the command's ratio target, ERROR, or - (no target or no reference)."""
    if bench.ref_error:
        return "ERROR"
    target, ratio = bench.ratio_target, bench.ratio
    if target is None or ratio is None:
        return "-"
    return "PASS" if ratio <= target else "FAIL"


def _cell(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def render_table(benches: list[Bench], baselines: dict[str, Bench], with_reference: bool = False) -> str:
    header: tuple[str, ...] = ("command", "median ms", "target ms", "max RSS MiB", "in-proc ms", "out KiB")
    if with_reference:
        header += ("ref ms", "ref RSS MiB", "ratio", "ratio target", "ratio result")
    header += ("result",)
    lines = [header]
    for b in benches:
        status, _, target_text = verdict(b, baselines.get(b.name))
        if status != "ERROR" and b.max_rss_mib is not None and b.max_rss_mib > RSS_TARGET_MIB:
            status += " (RSS)"
        row: tuple[str, ...] = (
            b.name,
            _cell(b.median_ms),
            target_text,
            _cell(b.max_rss_mib),
            _cell(b.in_process_ms),
            f"{b.out_bytes / 1024:.1f}",
        )
        if with_reference:
            row += (
                _cell(b.ref_median_ms),
                _cell(b.ref_max_rss_mib),
                _cell(b.ratio, ".2f"),
                _cell(b.ratio_target, ".2f"),
                ratio_verdict(b),
            )
        lines.append(row + (status,))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = []
    for n, row in enumerate(lines):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1])]
        out.append("  ".join(cells + [row[-1]]))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=7, help="timed runs per command (median reported; default 7)"
    )
    parser.add_argument("--rebuild", action="store_true", help="regenerate the cached database first")
    parser.add_argument("--json", action="store_true", help="print machine-readable results on stdout")
    parser.add_argument("--lcm", help="lcm executable to time (default: the one next to sys.executable)")
    parser.add_argument("--build-only", action="store_true", help="build (or reuse) the database and stop")
    parser.add_argument("--db", help="time this existing lcm.db instead of the built one (it is only read)")
    parser.add_argument(
        "--reference-cmd",
        help=f"also time the reference CLI, e.g. 'node /path/lossless-claw/dist/cli.js' (default: ${REFERENCE_ENV})",
    )
    opts = parser.parse_args(argv)
    reference = reference_command(opts.reference_cmd)

    lcm = find_lcm(opts.lcm)
    if not lcm.exists():
        note(
            f"no lcm at {lcm}: run this with the venv's interpreter (.venv/bin/python benchmarks/bench_read.py) or pass --lcm"
        )
        return 0
    try:
        import lcm_cli  # noqa: F401
    except ImportError:
        note("lcm_cli is not importable by this interpreter: run it with the venv's python")
        return 0

    if opts.db:
        db_path = Path(opts.db).resolve()
        meta: dict[str, Any] = {"buildSeconds": None, "builtNow": False}
        origin = "given with --db"
    else:
        meta = ensure_database(opts.rebuild)
        db_path = DATA_DIR / DB_FILE
        origin = f"built in {meta['buildSeconds']} s" + ("" if meta["builtNow"] else ", cached")
    facts = database_facts(db_path)
    note(
        f"database {db_path}: {facts['sizeBytes'] / 2**20:.0f} MiB, {facts['conversations']} conversations, "
        f"{facts['messages']:,} messages, {facts['summaries']:,} summaries ({origin})"
    )
    if opts.build_only:
        return 0

    big, condensed = pick_targets(db_path)
    with tempfile.TemporaryDirectory(prefix="lcm-bench-") as openclaw_dir:
        env = clean_env(openclaw_dir)
        common = {"db": str(db_path), "openclaw_dir": openclaw_dir, "env": env}
        g = [str(lcm), "--db", str(db_path), "--openclaw-dir", openclaw_dir]
        cid = {"conversation_id": big}
        page = {"conversation_id": big, "limit": PAGE_SIZE}

        note(f"walking to page {DEEP_PAGE} of the big conversation's messages and of all summaries ...")
        msg_cursor = walk_to_page("messages.list", page, common, DEEP_PAGE)
        sum_cursor = walk_to_page("summaries.list", {"limit": PAGE_SIZE}, common, DEEP_PAGE)

        benches = [
            Bench("python -c pass (floor)", [sys.executable, "-c", "pass"], None),
            Bench("lcm --version", [str(lcm), "--version"], 60),
            Bench("status", g + ["status"], 150, "status"),
            Bench("conversations list", g + ["conversations", "list"], 120, "conversations.list"),
            Bench(
                f"conversations show --conversation-id {big}",
                g + ["conversations", "show", "--conversation-id", str(big)],
                100,
                "conversations.show",
                cid,
            ),
            Bench(
                f"messages list --conversation-id {big}",
                g + ["messages", "list", "--conversation-id", str(big), "--limit", str(PAGE_SIZE)],
                100,
                "messages.list",
                page,
            ),
            Bench(
                f"messages list --conversation-id {big} page {DEEP_PAGE}",
                g
                + [
                    "messages",
                    "list",
                    "--conversation-id",
                    str(big),
                    "--limit",
                    str(PAGE_SIZE),
                    "--cursor",
                    str(msg_cursor),
                ],
                None,
                "messages.list",
                {**page, "cursor": msg_cursor},
            ),
            Bench(
                f"messages tail --conversation-id {big}",
                g + ["messages", "tail", "--conversation-id", str(big)],
                100,
                "messages.tail",
                cid,
            ),
            Bench(
                "summaries list (global)",
                g + ["summaries", "list", "--limit", str(PAGE_SIZE)],
                120,
                "summaries.list",
                {"limit": PAGE_SIZE},
            ),
            Bench(
                f"summaries list (global) page {DEEP_PAGE}",
                g + ["summaries", "list", "--limit", str(PAGE_SIZE), "--cursor", str(sum_cursor)],
                None,
                "summaries.list",
                {"limit": PAGE_SIZE, "cursor": sum_cursor},
            ),
            Bench(
                f"summaries list --conversation-id {big}",
                g + ["summaries", "list", "--conversation-id", str(big)],
                120,
                "summaries.list",
                cid,
            ),
            Bench(
                f"summaries show {condensed}",
                g + ["summaries", "show", str(condensed)],
                100,
                "summaries.show",
                {},
                (str(condensed),),
            ),
        ]
        baselines = {benches[6].name: benches[5], benches[9].name: benches[8]}
        if reference is not None:
            # The same words after the executable: both CLIs spell these commands alike.
            for b in benches[1:]:
                b.ref_argv = reference + b.argv[1:]
        for deep in (msg_cursor, sum_cursor):
            if deep is None:
                note(f"warning: a list has fewer than {DEEP_PAGE} pages; its deep-page row will fail")

        note("warming up (one untimed run each) ...")
        for b in benches:
            _, code, out, err = run_process(b.argv, env)
            b.out_bytes = len(out)
            check_output(b, code, out, err)
            if b.error:
                note(f"  {b.name}: {b.error}")
            if b.ref_argv is not None:
                _, code, out, err = run_process(b.ref_argv, env)
                b.ref_error = output_problem(b, code, out, err)
                if b.ref_error:
                    note(f"  {b.name} (reference): {b.ref_error}")
        note(f"timing {opts.runs} runs of each command, round-robin ...")
        for _ in range(opts.runs):
            for b in benches:
                if not b.error:
                    ms, _, _, _ = run_process(b.argv, env)
                    b.times_ms.append(ms)
                # Ours then theirs, back to back: a load spike hits both alike.
                if b.ref_argv is not None and not b.ref_error:
                    ms, _, _, _ = run_process(b.ref_argv, env)
                    b.ref_times_ms.append(ms)
        note("measuring peak RSS (2 runs each, through a small launcher) ...")
        for _ in range(2):
            for b in benches:
                rss = None if b.error else peak_rss_kib(b.argv, env)
                if rss is not None:
                    b.rss_kib.append(rss)
                if b.ref_argv is not None and not b.ref_error:
                    rss = peak_rss_kib(b.ref_argv, env)
                    if rss is not None:
                        b.ref_rss_kib.append(rss)
        note("timing the same operations in-process (query + formatting, no start-up) ...")
        for b in benches:
            if not b.error:
                time_in_process(b, common, opts.runs)

    ratios = {}
    for deep_name, first in baselines.items():
        deep = next(b for b in benches if b.name == deep_name)
        ratio = (deep.median_ms / first.median_ms) if deep.median_ms and first.median_ms else None
        in_ratio = (
            deep.in_process_ms / first.in_process_ms if deep.in_process_ms and first.in_process_ms else None
        )
        ratios[deep_name] = {"firstPage": first.name, "processRatio": ratio, "inProcessRatio": in_ratio}

    if opts.json:
        results = []
        for b in benches:
            status, target, _ = verdict(b, baselines.get(b.name))
            results.append(
                {
                    "name": b.name,
                    "argv": b.argv,
                    "medianMs": b.median_ms,
                    "minMs": min(b.times_ms) if b.times_ms else None,
                    "samplesMs": [round(t, 2) for t in b.times_ms],
                    "targetMs": target,
                    "maxRssMiB": b.max_rss_mib,
                    "rssTargetMiB": RSS_TARGET_MIB if target is not None else None,
                    "inProcessMs": b.in_process_ms,
                    "stdoutBytes": b.out_bytes,
                    "result": status,
                    "error": b.error,
                    "reference": None
                    if b.ref_argv is None
                    else {
                        "argv": b.ref_argv,
                        "medianMs": b.ref_median_ms,
                        "samplesMs": [round(t, 2) for t in b.ref_times_ms],
                        "maxRssMiB": b.ref_max_rss_mib,
                        "ratio": b.ratio,
                        "ratioTarget": b.ratio_target,
                        "ratioResult": ratio_verdict(b),
                        "error": b.ref_error,
                    },
                }
            )
        report = {
            "lcm": str(lcm),
            "referenceCmd": reference,
            "python": sys.executable,
            "sqlite": sqlite3.sqlite_version,
            "runs": opts.runs,
            "database": {
                "path": str(db_path),
                **facts,
                "buildSeconds": meta.get("buildSeconds"),
                "builtNow": meta.get("builtNow"),
                "spec": meta.get("spec"),
                "bigConversationId": big,
                "condensedSummaryId": condensed,
            },
            "ratios": ratios,
            "results": results,
        }
        print(json.dumps(report, indent=2))
        return 0

    print(
        f"lcm: {lcm}   python {sys.version.split()[0]}   SQLite {sqlite3.sqlite_version}   runs: {opts.runs}"
    )
    print(
        f"db: {db_path} ({facts['sizeBytes'] / 2**20:.0f} MiB; {facts['conversations']} conversations, "
        f"{facts['messages']:,} messages, {facts['summaries']:,} summaries "
        f"by depth {facts['summariesByDepth']}; big conversation {big}; {origin})"
    )
    if reference is not None:
        print(f"reference: {shlex.join(reference)}")
    print()
    print(render_table(benches, baselines, with_reference=reference is not None))
    print()
    for deep_name, r in ratios.items():
        pr = f"{r['processRatio']:.2f}x" if r["processRatio"] else "-"
        ir = f"{r['inProcessRatio']:.2f}x" if r["inProcessRatio"] else "-"
        print(f"{deep_name} vs first page: process {pr} (target <= {DEEP_RATIO_TARGET}x), in-process {ir}")
    print(
        f"Every row also needs max RSS <= {RSS_TARGET_MIB:.0f} MiB. in-proc = lcm_cli.engine.api.call, no start-up."
    )
    if reference is not None:
        print(
            "ratio = our median / the reference's median, whole processes timed back to back in each round."
        )
    return 0


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise
    except Exception:  # a report, not a test: show what broke, still exit 0
        import traceback

        traceback.print_exc()
    sys.exit(0)
