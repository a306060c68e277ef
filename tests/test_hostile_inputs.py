"""No input ends in INTERNAL_ERROR: crafted files, cursors and config values get a stable code.

Each case is a real file on disk and a real `lcm` process; the last test holds every error
code raised anywhere in lcm_cli to the exit-code table (an unknown code would exit 1).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import pytest

from lcm_cli.engine.core.exit_codes import ERRORS
from tests.conftest import REPO, lcm, lcm_process

DEEP = "[" * 5000 + "]" * 5000  # far past Python's recursion limit for json.loads


def _config(state_dir: Path, plugin: str) -> None:
    """Write openclaw.json by hand (the JSON text exactly as given)."""
    entry = '{"lossless-claw": {"enabled": true, "config": ' + plugin + "}}"
    (state_dir / "openclaw.json").write_text('{"plugins": {"entries": ' + entry + "}}")


def test_a_deeply_nested_backup_manifest(state_dir: Path) -> None:
    made = lcm("--openclaw-dir", str(state_dir), "backup")
    assert made.code == 0, made.stderr
    backup = made.json["data"]["backupPath"]
    Path(made.json["data"]["manifestPath"]).write_text(DEEP)
    verify = lcm_process("--openclaw-dir", str(state_dir), "backup", "verify", backup)
    assert verify.error["code"] == "BACKUP_VERIFY_FAILED"
    restore = lcm_process("--openclaw-dir", str(state_dir), "backup", "restore", backup, "--apply")
    assert restore.error["code"] == "BACKUP_VERIFY_FAILED"
    listed = lcm_process("--openclaw-dir", str(state_dir), "backup", "list")
    assert listed.code == 0, listed.stderr
    assert [b["path"] for b in listed.json["data"]["backups"]] == [backup]


def test_a_deeply_nested_prune_archive_line(state_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "crafted.jsonl.gz"
    header = {"format": "lcm-prune-archive", "version": 1, "conversationIds": [1], "tables": []}
    archive.write_bytes(gzip.compress((json.dumps(header) + "\n" + DEEP + "\n").encode()))
    out = lcm_process("--openclaw-dir", str(state_dir), "prune", "restore", str(archive), "--apply")
    assert out.error["code"] == "ARCHIVE_CORRUPT"


@pytest.mark.parametrize(
    "words",
    [
        ("doctor",),
        ("messages", "list", "--conversation-id", "1"),
        ("conversations", "list"),
        ("grep", "the", "--all-conversations"),
    ],
)
def test_a_crafted_cursor(state_dir: Path, words: tuple[str, ...]) -> None:
    cursor = base64.urlsafe_b64encode(DEEP.encode()).decode().rstrip("=")
    out = lcm_process("--openclaw-dir", str(state_dir), *words, "--cursor", cursor)
    assert out.code == 2 and out.error["code"] == "INVALID_CURSOR", out.stderr


def test_a_db_path_holding_nul(state_dir: Path) -> None:
    _config(state_dir, '{"dbPath": "/tmp/lcm\\u0000.db"}')
    out = lcm_process("--openclaw-dir", str(state_dir), "status")
    assert out.code == 3 and out.error["code"] == "DATABASE_NOT_FOUND"
    assert "NUL" in out.error["message"]
    shown = lcm_process("--openclaw-dir", str(state_dir), "config", "show")  # still readable, to fix it
    assert shown.code == 0


def test_a_huge_fresh_tail_count(state_dir: Path) -> None:
    _config(state_dir, '{"freshTailCount": 1e300}')
    out = lcm_process("--openclaw-dir", str(state_dir), "messages", "tail", "--conversation-id", "1")
    assert out.code == 0, out.stderr
    assert out.json["data"]["messages"]


def test_an_output_path_holding_nul(state_dir: Path, tmp_path: Path) -> None:
    out = lcm(
        "--openclaw-dir", str(state_dir), "summaries", "graph", "--conversation-id", "2", "--out", "a\x00b"
    )
    assert out.code == 2 and out.error["code"] == "INVALID_ARGUMENT"


# LcmError("CODE", ...) and the keyword arguments helpers take a code by (code=, not_a_database=).
_RAISED = re.compile(r'LcmError\(\s*"([A-Z][A-Z0-9_]*)"|\b(?:code|not_a_database)\s*=\s*"([A-Z][A-Z0-9_]*)"')


def test_every_raised_code_is_declared() -> None:
    raised: dict[str, str] = {}
    for path in sorted((REPO / "lcm_cli").rglob("*.py")):
        for match in _RAISED.finditer(path.read_text(encoding="utf-8")):
            raised.setdefault(match.group(1) or match.group(2), str(path.relative_to(REPO)))
    assert len(raised) > 40  # the pattern still finds them
    undeclared = {code: where for code, where in raised.items() if code not in ERRORS}
    assert undeclared == {}, "declare these in engine/core/exit_codes.py ERRORS"
