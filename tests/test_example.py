"""The bundled example state dir: reproducible from its script, and readable by every command."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, lcm

EXAMPLE = REPO / "examples" / "openclaw"
SHARDS = "9b1f0c2e-0000-4000-8000-0000000000a1"  # has an abandoned branch
CHAT = "9b1f0c2e-0000-4000-8000-0000000000a2"  # its last line was cut by a crash
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
    assert files_under(tmp_path / "out" / "agents") == files_under(EXAMPLE / "agents")


def files_under(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` by its relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_demo_commands_run_on_the_example_without_touching_it() -> None:
    before = files_under(EXAMPLE)
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
        ["migrate-sessions"],
        ["migrate-sessions", "--verify"],
        ["backup", "list"],
    ):
        out = lcm(*base, *words)
        # The bundled transcripts are not imported yet: verify reports them missing (exit 6).
        assert out.code == (6 if "--verify" in words else 0), out.stderr
    assert files_under(EXAMPLE) == before


def test_demo_backfill_of_the_bundled_transcripts(tmp_path: Path) -> None:
    """The demo's backfill: two pre-LCM sessions, an abandoned branch, a crash-cut line."""
    work = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, work)
    base = ("--openclaw-dir", str(work))

    dry = lcm(*base, "migrate-sessions")
    assert dry.code == 0, dry.stderr
    by_file = {Path(f["file"]).name: f for f in dry.json["data"]["files"]}
    shards, chat = by_file[f"{SHARDS}.jsonl"], by_file[f"{CHAT}.jsonl"]
    assert (shards["status"], shards["wouldImportMessages"]) == ("would-import", 9)
    assert shards["skippedLines"]["lines"] == [
        {"line": 7, "reason": "abandoned_branch"},
        {"line": 8, "reason": "abandoned_branch"},
    ]
    assert chat["skippedLines"]["lines"] == [{"line": 5, "reason": "truncated_last_line"}]
    assert chat["sessionKey"] == "agent:main:telegram:direct:42"
    assert not (work / "lcm.db-wal").exists()  # a dry run opens nothing for writing

    applied = lcm(*base, "migrate-sessions", "--apply").json["data"]
    assert applied["importedMessages"] == 12 and applied["errorFiles"] == 0
    assert Path(applied["backupPath"]).exists()
    conversation = {Path(f["file"]).name: f["conversationId"] for f in applied["files"]}[f"{SHARDS}.jsonl"]
    contents = [
        m["content"]
        for m in lcm(
            *base, "messages", "list", "--conversation-id", str(conversation), "--include-content"
        ).json["data"]["items"]
    ]
    # Ada's edited message is kept; the answer she replaced (and its reply) is not.
    assert "Use pytest-split so the shards stay balanced by duration." in contents
    assert "Just split the test files alphabetically." not in contents

    again = lcm(*base, "migrate-sessions", "--apply").json["data"]
    assert again["importedMessages"] == 0
    assert {f["status"] for f in again["files"]} == {"up-to-date"}
    verified = lcm(*base, "migrate-sessions", "--verify").json["data"]
    # the two old transcripts, and the live session LCM already held
    assert verified["completeFiles"] == 3 and verified["incompleteFiles"] == 0

    made = lcm(*base, "backup").json["data"]
    checked = lcm(*base, "backup", "verify", made["backupPath"])
    assert checked.code == 0 and checked.json["data"]["ok"] is True, checked.stdout

    table = lcm(*base, "migrate-sessions", "--verify", "--format", "table")
    # Complete files need no attention: they are counted, not listed.
    assert "3 files complete" in table.stdout and f"{SHARDS}.jsonl" not in table.stdout


def test_a_fresh_copy_of_the_example_is_healthy(tmp_path: Path) -> None:
    """doctor passes on it, and rotate finds the main session's transcript in the copy."""
    work = tmp_path / "copy"
    shutil.copytree(EXAMPLE, work)
    doctor = lcm("--openclaw-dir", str(work), "doctor")
    assert doctor.code == 0, doctor.stdout
    rotate = lcm("--openclaw-dir", str(work), "rotate", "--session-key", "agent:main:main")
    assert rotate.code == 0, rotate.stderr
    assert rotate.json["data"]["transcript"]["sessionFile"].startswith(str(work))
