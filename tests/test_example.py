"""The bundled example state dir: reproducible from its script, and readable by every command."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, lcm

EXAMPLE = REPO / "examples" / "openclaw"
TABLES = (
    "conversations",
    "messages",
    "summaries",
    "summary_messages",
    "summary_parents",
    "context_items",
    "conversation_bootstrap_state",
    "conversation_compaction_maintenance",
)


def dump(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
    finally:
        conn.close()


def test_example_is_reproducible_from_the_script(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_example.py"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    rebuilt = dump(tmp_path / "out" / "lcm.db")
    committed = dump(EXAMPLE / "lcm.db")
    # created_at defaults of derived rows use "now"; everything the script sets is fixed.
    for table in TABLES:
        assert len(rebuilt[table]) == len(committed[table]), table
    assert rebuilt["messages"] == committed["messages"]
    assert rebuilt["summaries"] == committed["summaries"]
    assert (tmp_path / "out" / "openclaw.json").read_text() == (EXAMPLE / "openclaw.json").read_text()


def test_demo_commands_run_on_the_example_without_touching_it() -> None:
    before = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    base = (
        "--openclaw-dir",
        str(EXAMPLE),
        "--db",
        str(EXAMPLE / "lcm.db"),
        "--config",
        str(EXAMPLE / "openclaw.json"),
    )
    for words in (
        ["status"],
        ["conversations", "list"],
        ["messages", "tail", "--session-key", "agent:main:main"],
        ["summaries", "show", "sum_2c3d4e5f60718293"],
        ["config", "show"],
    ):
        out = lcm(*base, *words)
        assert out.code == 0, out.stderr
    assert {p.name: p.read_bytes() for p in EXAMPLE.iterdir()} == before
