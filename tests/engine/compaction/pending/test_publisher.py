"""Publishing pending summaries as lossless-claw 1.0 does (compaction/pending/publisher.py).

The goldens hold files 1.0.0-beta.4's own coordinator planned and prepared, and the rows
its own publication left (record_goldens.py). Our publisher, given the same prepared
rows, must leave the same rows: summary ids, coverage metadata, links, context items,
batch and node states. With a 1.0 build at hand (LCM_LC10_NODE, LCM_LC10_DRIVER) the
other direction runs live: 1.0 publishes a batch we prepared, as we would.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.compaction.pending.coordinator import Coordinator
from lcm_cli.engine.db.store import Store
from tests.engine.compaction.pending.crossengine import GOLDENS, copy, driver, load, outcome, run_driver
from tests.support.compaction_sim import HeadSummarizer, check_invariants, effective

#: The coordinator config the goldens were recorded with.
#: Read at import: the test fixtures isolate the environment.
LC10 = driver()
CONFIG = {
    "freshTailCount": 16,
    "leafChunkTokens": 1500,
    "condensedMinFanout": 3,
    "condensedTargetTokens": 100,
}


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDENS / f"{name}.json").read_text())
    return data


def prepared_file(tmp_path: Path, name: str) -> Path:
    """A file our store created, holding the rows 1.0 prepared."""
    path = tmp_path / f"{name}.db"
    store = Store.open(path)
    try:
        with store.transaction() as conn:
            load(conn, golden(name)["prepared"])
    finally:
        store.close()
    return path


def publish(path: Path, policy: str = "publish-ready-only") -> dict[str, Any]:
    store = Store.open(path)
    try:
        return Coordinator(store, 1, effective(**CONFIG)).run_once(policy)
    finally:
        store.close()


@pytest.mark.parametrize("name", ["leaves", "condensed"])
def test_publishing_a_batch_lc10_prepared_leaves_the_rows_lc10_leaves(tmp_path: Path, name: str) -> None:
    path = prepared_file(tmp_path, name)
    result = publish(path)
    expected = golden(name)
    assert result == expected["publish"][0]
    assert outcome(path) == expected["published"]
    conn = sqlite3.connect(path)
    try:
        check_invariants(conn, 1)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def test_a_published_batch_is_not_published_twice(tmp_path: Path) -> None:
    path = prepared_file(tmp_path, "leaves")
    publish(path)
    after = outcome(path)
    assert publish(path) == {"status": "idle", "reason": "no active pending summary batch"}
    assert outcome(path) == after


def test_a_batch_whose_source_moved_goes_stale_and_nothing_is_published(tmp_path: Path) -> None:
    path = prepared_file(tmp_path, "leaves")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE messages SET content = content || ' (edited)' WHERE message_id = 5")
    conn.close()
    before = outcome(path)
    result = publish(path)
    assert result["status"] == "stale"
    assert result["reason"] == "source projection fingerprint changed before publish"
    after = outcome(path)
    assert after["context_items"] == before["context_items"]
    assert after["summaries"] == before["summaries"]
    assert {row[1] for row in after["batches"]} == {"stale"}
    assert {row[1] for row in after["nodes"]} == {"stale"}


def test_publication_never_calls_a_model(tmp_path: Path) -> None:
    path = prepared_file(tmp_path, "leaves")
    store = Store.open(path)
    summarizer = HeadSummarizer()
    try:
        result = Coordinator(store, 1, effective(**CONFIG), summarizer).run_once("publish-ready-only")
    finally:
        store.close()
    assert result["status"] == "published"
    assert summarizer.calls == []


_KILLED_PUBLISH = """
import os, sys
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.compaction.pending.coordinator import Coordinator
from tests.support.compaction_sim import effective
store = Store.open(sys.argv[1])
steps = [0]
def tick():
    steps[0] += 1
    if steps[0] >= int(sys.argv[2]):
        os._exit(9)
    return 0
store.conn.set_progress_handler(tick, 50)
Coordinator(store, 1, effective(**{config})).run_once("publish-ready-only")
os._exit(0)
"""


@pytest.mark.slow
def test_a_kill_at_any_instant_leaves_the_state_before_or_after(tmp_path: Path) -> None:
    base = prepared_file(tmp_path, "leaves")
    before = outcome(base)
    expected = golden("leaves")["published"]
    script = textwrap.dedent(_KILLED_PUBLISH).replace("{config}", repr(CONFIG))
    seen = set()
    for steps in (1, 20, 60, 120, 200, 300, 450, 700, 1000, 1500, 2500, 4000, 100000):
        path = copy(base, tmp_path / f"kill-{steps}.db")
        done = subprocess.run(
            [sys.executable, "-c", script, str(path), str(steps)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode in (0, 9), done.stderr
        state = outcome(path)
        assert state in (before, expected), steps
        seen.add("after" if state == expected else "before")
        if state == before:
            # The next publication finishes the work.
            publish(path)
            assert outcome(path) == expected
    assert seen == {"before", "after"}


# -- live, against a 1.0 build -------------------------------------------------------


def _ours_prepare(path: Path) -> list[str]:
    store = Store.open(path)
    try:
        coordinator = Coordinator(store, 1, effective(**CONFIG), HeadSummarizer())
        statuses = []
        for _ in range(40):
            result = coordinator.run_once("prepare-only")
            statuses.append(result["status"])
            if result["status"] not in ("planned", "prepared"):
                break
        return statuses
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.skipif(LC10 is None, reason="no lossless-claw 1.0 build (LCM_LC10_NODE, LCM_LC10_DRIVER)")
def test_lc10_publishes_what_we_prepared_as_we_do(tmp_path: Path) -> None:
    tools = LC10
    assert tools is not None
    work = tmp_path / "work.db"
    run_driver(tools, "add", str(work), "0", "200")
    for more in (None, ("200", "160")):
        if more:
            run_driver(tools, "add", str(work), *more)
        assert _ours_prepare(work)[-1] == "ready"
        theirs, ours = copy(work, tmp_path / "theirs.db"), copy(work, tmp_path / "ours.db")
        assert run_driver(tools, "publish", str(theirs), "1")[0]["status"] == "published"
        assert publish(ours)["status"] == "published"
        assert outcome(theirs) == outcome(ours)
        copy(ours, work)


@pytest.mark.slow
@pytest.mark.skipif(LC10 is None, reason="no lossless-claw 1.0 build (LCM_LC10_NODE, LCM_LC10_DRIVER)")
def test_we_publish_what_lc10_prepared_as_it_does_live(tmp_path: Path) -> None:
    tools = LC10
    assert tools is not None
    work = tmp_path / "work.db"
    run_driver(tools, "add", str(work), "0", "200")
    assert run_driver(tools, "prepare", str(work), "1")[-1]["status"] == "ready"
    theirs, ours = copy(work, tmp_path / "theirs.db"), copy(work, tmp_path / "ours.db")
    run_driver(tools, "publish", str(theirs), "1")
    publish(ours)
    assert outcome(theirs) == outcome(ours)


def _plan_shape(path: Path) -> tuple[Any, ...]:
    """A batch's plan with node ids replaced by their rank (extension ids carry a random part)."""
    conn = sqlite3.connect(path)
    try:
        names: dict[str, str] = {}

        def name(node_id: str | None) -> str | None:
            return None if node_id is None else names.setdefault(node_id, f"n{len(names)}")

        nodes = [
            (name(r[0]), *r[1:])
            for r in conn.execute(
                "SELECT node_id, kind, depth, ordinal_start, ordinal_end, source_fingerprint, source_context_hash"
                " FROM pending_summary_nodes ORDER BY ordinal_start, depth, kind, ordinal_end"
            )
        ]
        children = sorted(
            (name(r[0]), r[1], name(r[2]), r[3])
            for r in conn.execute(
                "SELECT node_id, ordinal, child_node_id, child_summary_id FROM pending_summary_node_children"
            )
        )
        batches = conn.execute(
            "SELECT status, source_projection_fingerprint, compactable_start_ordinal, compactable_end_ordinal,"
            " planned_fresh_tail_start_ordinal FROM pending_compaction_batches"
        ).fetchall()
        return [n[1:] for n in nodes], children, batches
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.skipif(LC10 is None, reason="no lossless-claw 1.0 build (LCM_LC10_NODE, LCM_LC10_DRIVER)")
def test_a_ready_batch_widens_as_lc10_widens_it(tmp_path: Path) -> None:
    tools = LC10
    assert tools is not None
    work = tmp_path / "work.db"
    run_driver(tools, "add", str(work), "0", "200")
    run_driver(tools, "prepare", str(work), "1")
    run_driver(tools, "add", str(work), "200", "200")
    theirs, ours = copy(work, tmp_path / "theirs.db"), copy(work, tmp_path / "ours.db")
    assert run_driver(tools, "prepare", str(theirs), "1")[0]["status"] == "planned"
    store = Store.open(ours)
    try:
        assert Coordinator(store, 1, effective(**CONFIG)).run_once("prepare-only")["status"] == "planned"
    finally:
        store.close()
    assert _plan_shape(ours) == _plan_shape(theirs)
