"""`lcm backup` through the CLI door: paths from the usual precedence, codes and exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import lcm


def test_create_list_verify_restore(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    created = lcm(*base, "backup")
    assert created.code == 0, created.stderr
    data = created.json["data"]
    backup = Path(data["backupPath"])
    assert backup.parent == state_dir and backup.name.startswith("lcm.db.backup-") and backup.suffix == ".bak"
    assert data["integrity"] == "ok" and data["tables"]["messages"] == 27
    manifest = json.loads(Path(data["manifestPath"]).read_text())
    assert manifest["sha256"] == data["sha256"]

    listed = lcm(*base, "backup", "list").json["data"]["backups"]
    assert [b["path"] for b in listed] == [str(backup)]

    assert lcm(*base, "backup", "verify", str(backup)).json["data"]["ok"] is True
    dry = lcm(*base, "backup", "restore", str(backup)).json["data"]
    assert dry["applied"] is False and dry["restorable"] is True


def test_keep_prunes_older_backups(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    for _ in range(3):
        assert lcm(*base, "backup").code == 0
    pruned = lcm(*base, "backup", "--keep", "2").json["data"]["pruned"]
    assert len(pruned) == 2
    assert len(lcm(*base, "backup", "list").json["data"]["backups"]) == 2


def test_errors(state_dir: Path, tmp_path: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    taken = tmp_path / "taken.bak"
    taken.write_text("occupied")
    exists = lcm(*base, "backup", "--out", str(taken))
    assert exists.code == 4 and exists.error["code"] == "BACKUP_TARGET_EXISTS"
    assert taken.read_text() == "occupied"
    missing = lcm(*base, "backup", "verify", str(tmp_path / "nope.bak"))
    assert missing.code == 3 and missing.error["code"] == "BACKUP_NOT_FOUND"
    no_db = lcm("--openclaw-dir", str(tmp_path / "empty"), "backup")
    assert no_db.code == 3 and no_db.error["code"] == "DATABASE_NOT_FOUND"
    assert lcm(*base, "backup", "--keep", "0").error["code"] == "INVALID_ARGUMENT"
    assert lcm(*base, "backup", "list", "--out", "x").error["code"] == "INVALID_ARGUMENT"


def test_tampered_backup_fails_verification(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    backup = Path(lcm(*base, "backup").json["data"]["backupPath"])
    raw = bytearray(backup.read_bytes())
    raw[-100] ^= 0xFF
    backup.write_bytes(bytes(raw))
    out = lcm(*base, "backup", "verify", str(backup))
    assert out.code == 4 and out.error["code"] == "BACKUP_VERIFY_FAILED"
    assert out.error["details"]["ok"] is False
    refused = lcm(*base, "backup", "restore", str(backup), "--apply")
    assert refused.code == 4 and refused.error["code"] == "BACKUP_VERIFY_FAILED"
