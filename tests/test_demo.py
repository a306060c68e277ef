"""README's first command, `bash scripts/demo.sh`, works and does what each step says.

The demo runs end to end as a new user runs it (a private ``HOME``, the example copied to a
temporary state dir). Then each of its `lcm` steps is replayed, in order, on a fresh copy of
the example with JSON output, and what the step claims is checked: the ingest stores the
turn, the compaction compacts, the search finds, the backfill imports and verifies, the
backup verifies, doctor passes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # the README's demo, end to end

DEMO = REPO / "scripts" / "demo.sh"
LCM = str(Path(sys.executable).with_name("lcm"))


def test_the_demo_runs_end_to_end(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LCM_", "OPENCLAW_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp_path))
    done = subprocess.run(["bash", str(DEMO)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = [line for line in done.stderr.splitlines() if line.startswith("$ lcm ")]
    assert len(steps) == len(_demo_steps()), steps
    assert "Healthy      yes" in done.stdout
    assert not list(home.iterdir()) or not (home / ".openclaw").exists()  # ~/.openclaw untouched


def _demo_steps() -> list[tuple[list[str], str | None]]:
    """Each `run ...` line of the demo: its argv and the JSON piped into it (if any)."""
    steps: list[tuple[list[str], str | None]] = []
    piped: str | None = None
    for line in (raw.strip() for raw in DEMO.read_text().splitlines()):
        if line.startswith(("#", "run()")):
            continue
        echo = re.match(r"^echo '(.*)' \\$", line)
        if echo:
            piped = echo[1]
            continue
        found = re.search(r"\brun ([^|)]*)", line)
        if found:
            steps.append((shlex.split(found[1]), piped if line.startswith("|") else None))
    return steps


def _plain(argv: list[str]) -> list[str]:
    """A step's argv with JSON output (no table, no pretty-printing)."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--format":
            skip = True
            continue
        if word != "--pretty":
            out.append(word)
    return out


def test_each_demo_step_does_what_it_says(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(REPO / "examples" / "openclaw", state)
    answers: dict[str, Any] = {}
    backup = ""
    for argv, stdin in _demo_steps():
        argv = [backup if word == "$BACKUP" else word for word in _plain(argv)]
        done = subprocess.run(
            [LCM, "--openclaw-dir", str(state), *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (argv, done.stderr)
        answer = json.loads(done.stdout)
        words = []
        for word in argv:  # the command's words (and grep's pattern), up to its first option or id
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            words.append(word)
        flags = [flag[2:] for flag in ("--apply", "--verify") if flag in argv]
        answers[" ".join(words + flags)] = answer
        if argv[0] == "backup" and len(argv) == 1:
            backup = answer["data"]["backupPath"]
    data = {k: v["data"] for k, v in answers.items()}
    assert data["status"]["status"]["messages"]["count"] > 0
    assert data["ingest"]["ingested"] == 1
    assert data["compact"]["dryRun"] is True
    assert data["compact apply"]["compacted"] is True  # "compact ... --apply": it compacts
    assert data["context show"]["messages"]
    assert data["grep flaky"]["hits"], "the search finds the flaky CI fix"
    assert data["expand"]["messages"], "expanding the summary gives its messages back"
    assert data["migrate-sessions"]["mode"] == "dry-run" or data["migrate-sessions"].get("apply") is False
    assert (
        data["migrate-sessions apply"]["importedFiles"] == 2
        and data["migrate-sessions apply"]["errorFiles"] == 0
    )
    verify = data["migrate-sessions verify"]
    assert all(f["status"] in ("complete", "up-to-date") for f in verify["files"] if f["status"] != "skipped")
    assert data["backup verify"]["ok"] is True
    assert data["doctor"]["healthy"] is True and data["doctor"]["exitStatus"] == 0
