"""The scale tier (issue 27): a 1M-message lcm.db with a live writer, checked for bounds, not speed.

``benchmarks/bench_scale.py`` builds the file (direct SQL into lcm's own schema, cached in
pytest's cache directory between runs) and provides the writer process and the launcher
that measures each command's peak RSS. While a second process commits one message every
5 ms, as the host does, ``lcm ingest``, ``status``, ``conversations list``, ``grep``,
``describe`` and ``expand`` each run once as a whole process on a copy of the file. Then:

- every write of the writer succeeded, and it never waited more than WRITER_BOUND_MS
  during one of those commands;
- every row it committed is still in the file;
- no read command peaked above READ_RSS_BOUND_MIB.

Marked ``scale`` and ``slow``: the README's quick loop (``-m 'not slow'``) skips it, CI
(``.ci/run``) runs it. Budget (benchmarks/README.md, "The scale pytest tier"): 1.5-3
minutes on a 2-core machine when the file must be built (it is then cached: 3 GB under
``.pytest_cache/d/lcm-scale``), about 10 s after. ``LCM_SCALE_MESSAGES`` overrides the
size (e.g. 300000 for a quicker local run).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = [pytest.mark.scale, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
SCALE_MESSAGES = int(os.environ.get("LCM_SCALE_MESSAGES", "1000000"))
WRITER_BOUND_MS = 2000.0
READ_RSS_BOUND_MIB = 256.0
COMMAND_TIMEOUT_S = 600.0


def _bench() -> ModuleType:
    path = REPO / "benchmarks" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_scale", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench()


@pytest.fixture(scope="module")
def scale_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, bench: ModuleType
) -> tuple[Path, dict[str, Any]]:
    """The cached database (pytest's cache dir; a temp dir when the cache plugin is off)."""
    cache = getattr(request.config, "cache", None)
    data_dir = Path(cache.mkdir("lcm-scale")) if cache is not None else tmp_path_factory.mktemp("lcm-scale")
    path, meta = bench.ensure_database(
        SCALE_MESSAGES, data_dir=data_dir, measure_shares=False, drop_other_recipes=True
    )
    return path, meta


def test_live_writer_keeps_every_row_and_never_waits_long(
    tmp_path: Path, bench: ModuleType, scale_db: tuple[Path, dict[str, Any]]
) -> None:
    cached, meta = scale_db
    db = tmp_path / "lcm.db"
    bench.copy_database(cached, db)
    state = tmp_path / "state"
    state.mkdir()
    env = bench.clean_env(state)
    lcm = bench.find_lcm(None)
    base = [str(lcm), "--db", str(db), "--openclaw-dir", str(state)]
    big = str(meta["bigConversationId"])
    depth1 = bench.depth1_summary(db, int(big))
    assert depth1 is not None
    commands = {
        "ingest": [
            "ingest",
            "--session-id",
            meta["bigSessionId"],
            "--session-key",
            bench.BIG_SESSION_KEY,
            "--message",
            json.dumps({"role": "user", "content": "Did the nightly build pass after the fix?"}),
        ],
        "status": ["status"],
        "conversations list": ["conversations", "list"],
        "grep": ["grep", meta["commonWord"], "--mode", "full_text", "--all-conversations", "--limit", "20"],
        "describe": ["describe", depth1, "--conversation-id", big],
        "expand": ["expand", depth1, "--conversation-id", big],
    }
    writer = bench.Writer(db, "ingest", state, tmp_path)
    writer.start()
    runs = {}
    try:
        time.sleep(0.5)
        for name, words in commands.items():
            runs[name] = bench.run_command(base + words, env, tmp_path / "scratch", COMMAND_TIMEOUT_S)
        time.sleep(0.3)
    finally:
        commits = writer.stop()

    for name, run in runs.items():
        assert run.problem() is None, f"{name}: {run.problem()}"
    failures = [c.error for c in commits if not c.ok]
    assert not failures, f"{len(failures)} writer commits failed, first: {failures[0]}"
    assert len(commits) > 50, "the writer hardly ran"
    waits = {name: bench.writer_window(commits, run.start, run.end)["maxMs"] for name, run in runs.items()}
    too_long = {name: ms for name, ms in waits.items() if ms is not None and ms > WRITER_BOUND_MS}
    assert not too_long, f"the writer waited longer than {WRITER_BOUND_MS:.0f} ms during {too_long}"
    committed, present = bench.committed_rows_present(db, commits)
    assert committed == len(commits)
    assert present == committed, f"{committed - present} of the writer's {committed} rows are gone"
    heavy = {
        name: None if run.rss_mib is None else round(run.rss_mib, 1)
        for name, run in runs.items()
        if name != "ingest" and (run.rss_mib is None or run.rss_mib > READ_RSS_BOUND_MIB)
    }
    assert not heavy, f"read commands above {READ_RSS_BOUND_MIB:.0f} MiB peak RSS: {heavy}"
