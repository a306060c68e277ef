"""Fixtures of the surgery tests: a copy of the bundled example, a real model endpoint on
127.0.0.1, and the checks every surgery must pass afterwards."""

from __future__ import annotations

import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, lcm
from tests.support.chat_model import ChatModel, configured

EXAMPLE = REPO / "examples" / "openclaw"
LEAF_A = "sum_0a1b2c3d4e5f6071"
LEAF_B = "sum_1b2c3d4e5f607182"
CONDENSED = "sum_2c3d4e5f60718293"


def kill_midway(root: Path, args: list[str], env: dict[str, str], rng: random.Random, longest: float) -> None:
    """Start `lcm --openclaw-dir ROOT ARGS`, SIGKILL it after 0.05 s to ``longest``, and reap it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lcm_cli", "--openclaw-dir", str(root), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    time.sleep(rng.uniform(0.05, longest))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A fresh copy of the bundled example state dir (conversation 2 holds a two-leaf DAG)."""
    root = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, root)
    return root


def run(root: Path, *args: str) -> Any:
    """`lcm --openclaw-dir ROOT ARGS...` in-process, the outcome."""
    return lcm("--openclaw-dir", str(root), *args)


class Model(ChatModel):
    """Answers ``Rewritten #N``, or fails (HTTP 500) while ``fail`` is set."""

    def __init__(self) -> None:
        self.fail = False
        super().__init__()

    def reply(self, prompt: str) -> str | None:
        return None if self.fail else f"Rewritten #{len(self.prompts)}: the port collision and its fix."


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Model]:
    """The configured summarizer is the endpoint above."""
    with configured(Model(), monkeypatch) as server:
        yield server


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables a surgery may touch, for before/after comparisons."""
    # Read-write: after a kill the WAL index may need recovery, which a read-only handle cannot run.
    conn = sqlite3.connect(db)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("summaries", "summary_parents", "summary_messages", "context_items", "messages")
        }
    finally:
        conn.close()


def same_conversation_view(db: Path, conversation_id: int) -> dict[str, tuple[int, int, int, int]]:
    """What lossless-claw's `lcm summaries show` would see of each summary, against all its links.

    Its read queries keep only same-conversation children and source messages
    (docs/reference/cli-contract.md §11.8; this query restates that rule); a write
    that left a cross-conversation link would show here as seen < stored.
    Per summary: (children seen, children stored, source messages seen, stored).
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {}
        for (sid,) in conn.execute(
            "SELECT summary_id FROM summaries WHERE conversation_id = ?", (conversation_id,)
        ):
            seen_children = conn.execute(
                """SELECT COUNT(*) FROM summaries s JOIN summary_parents e ON e.parent_summary_id = s.summary_id
                   WHERE e.summary_id = ? AND s.conversation_id = ?""",
                (sid, conversation_id),
            ).fetchone()[0]
            all_children = conn.execute(
                "SELECT COUNT(*) FROM summary_parents WHERE summary_id = ?", (sid,)
            ).fetchone()[0]
            seen_sources = conn.execute(
                """SELECT COUNT(*) FROM summary_messages sm JOIN messages m ON m.message_id = sm.message_id
                   WHERE sm.summary_id = ? AND m.conversation_id = ?""",
                (sid, conversation_id),
            ).fetchone()[0]
            all_sources = conn.execute(
                "SELECT COUNT(*) FROM summary_messages WHERE summary_id = ?", (sid,)
            ).fetchone()[0]
            out[sid] = (seen_children, all_children, seen_sources, all_sources)
        return out
    finally:
        conn.close()


def assert_healthy(root: Path, conversation_id: int) -> None:
    """After a surgery: `lcm doctor` is clean, `summaries show` reads every summary of the
    conversation, `context show` assembles it, and lossless-claw's reads lose no link."""
    doctor = run(root, "doctor", "--conversation-id", str(conversation_id))
    assert doctor.code == 0, doctor.stdout
    # Conversation 3 of the example is a cron session: that INFO finding was there before.
    # A killed surgery leaves its change records in lcm.db (INFO until the next command writes them).
    expected = {"junk.cron-sessions", "storage.change-log"}
    failing = [
        c["check"]
        for c in doctor.json["data"]["checks"]
        if c["status"] not in ("PASS", "SKIP") and c["check"] not in expected
    ]
    assert not failing, failing
    whole = run(root, "doctor")  # the database-wide checks too
    assert whole.code == 0, whole.stdout
    view = same_conversation_view(root / "lcm.db", conversation_id)
    assert view, "the conversation has no summaries"
    for sid, (seen_children, all_children, seen_sources, all_sources) in view.items():
        assert (seen_children, seen_sources) == (all_children, all_sources), sid
        shown = run(root, "summaries", "show", sid)
        assert shown.code == 0, shown.stderr
        summary = shown.json["data"]
        assert len(summary["children"]) == all_children
        assert len(summary["sourceMessages"]) == all_sources
    context = run(root, "context", "show", "--conversation-id", str(conversation_id))
    assert context.code == 0, context.stderr
    assert context.json["data"]["messages"], "nothing assembled"
