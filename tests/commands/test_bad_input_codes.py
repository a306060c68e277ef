"""Bad input gets its own code, never INTERNAL_ERROR: a damaged schema byte, a lone surrogate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lcm_cli.engine.config import file as config_file
from tests.conftest import lcm
from tests.support.sample import build_sample

READS = [
    ("status",),
    ("conversations", "list"),
    ("messages", "tail", "--conversation-id", "1"),
    ("summaries", "list"),
    ("grep", "hello", "--all-conversations"),
]


def damaged(tmp_path: Path, where: str) -> Path:
    """An lcm.db with one byte flipped: inside a CREATE statement, or in page 1's b-tree header."""
    state = tmp_path / "state"
    state.mkdir()
    db = state / "lcm.db"
    build_sample(db)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    data = bytearray(db.read_bytes())
    create = data.find(b"CREATE TABLE")
    offset = {"schema-keyword": create, "schema-text": create + 3, "page-header": 100}[where]
    data[offset] ^= 0xFF
    db.write_bytes(bytes(data))
    (state / "openclaw.json").write_text("{}", encoding="utf-8")
    return state


@pytest.mark.parametrize("where", ["schema-keyword", "schema-text", "page-header"])
def test_damaged_database_is_database_corrupt_for_every_read(tmp_path: Path, where: str) -> None:
    state = damaged(tmp_path, where)
    before = (state / "lcm.db").read_bytes()
    for argv in READS:
        out = lcm("--openclaw-dir", str(state), *argv)
        assert out.code == 5, (argv, out.stderr)
        error = out.error
        assert error["code"] == "DATABASE_CORRUPT", (argv, error)
        assert "lcm doctor" in error["message"] and "lcm backup restore" in error["message"]
        assert error["details"]["sqliteError"]
    # doctor reports the damage rather than failing
    out = lcm("--openclaw-dir", str(state), "doctor")
    assert out.code == 6, out.stderr
    report = out.json["data"]
    assert report["healthy"] is False and report["status"] == "FAIL"
    quick = next(c for c in report["checks"] if c["check"] == "storage.quick-check")
    assert quick["status"] == "FAIL" and "lcm backup restore" in quick["advice"]
    assert "lcm backup restore" in report["damaged"]["next"]
    assert (state / "lcm.db").read_bytes() == before


LONE = '{"plugins":{"entries":{"lossless-claw":{"config":{"summaryModel":"a\\ud800b"}}}}}'


@pytest.mark.parametrize(
    "argv",
    [
        ("status",),
        ("conversations", "list"),
        ("config", "show"),
        ("config", "get", "summaryModel"),
        ("config", "set", "freshTailCount", "9"),
    ],
)
def test_lone_surrogate_in_config_is_config_parse_failed(state_dir: Path, argv: tuple[str, ...]) -> None:
    (state_dir / "openclaw.json").write_text(LONE, encoding="utf-8")
    before = sorted(os.listdir(state_dir))
    out = lcm("--openclaw-dir", str(state_dir), *argv)
    assert out.code == 4, out.stderr
    assert out.error["code"] == "CONFIG_PARSE_FAILED"
    assert "surrogate" in out.error["message"]
    assert sorted(os.listdir(state_dir)) == before  # no temp file, no backup
    assert (state_dir / "openclaw.json").read_text(encoding="utf-8") == LONE


@pytest.mark.parametrize(
    "value,code,status",
    [
        ('"\\ud800"', "CONFIG_VALIDATION_FAILED", 4),
        ('"\\udfff tail"', "CONFIG_VALIDATION_FAILED", 4),
        ('["ok", "\\udc80"]', "CONFIG_VALIDATION_FAILED", 4),
        ("\udcff", "INVALID_ARGUMENT", 2),  # a raw undecodable argv byte: refused with the other argv
    ],
)
def test_config_set_refuses_a_lone_surrogate_value(
    state_dir: Path, value: str, code: str, status: int
) -> None:
    before = sorted(os.listdir(state_dir))
    out = lcm("--openclaw-dir", str(state_dir), "config", "set", "summaryModel", value)
    assert (out.code, out.error["code"]) == (status, code)
    assert sorted(os.listdir(state_dir)) == before


def test_surrogate_pairs_are_fine(state_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(state_dir), "config", "set", "summaryModel", '"m \\ud83d\\ude00"')
    assert out.code == 0, out.stderr
    assert json.loads((state_dir / "openclaw.json").read_text(encoding="utf-8"))


def test_a_failed_rewrite_leaves_no_temp_file(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever stops the write (not only OSError), the temp sibling is removed."""

    def boom(*_: object) -> None:
        raise RuntimeError("stop")

    monkeypatch.setattr(config_file.os, "replace", boom)
    with pytest.raises(RuntimeError):
        config_file.write_with_backup(str(state_dir / "openclaw.json"), "{}\n")
    assert not [name for name in os.listdir(state_dir) if name.endswith(".tmp")]
