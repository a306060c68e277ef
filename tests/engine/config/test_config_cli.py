"""`lcm config show|get|set`: what is shown, and a `set` that cannot hurt."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import lcm

BASE_CONFIG = {
    "gateway": {"token": "SECRET-TOKEN"},
    "models": {"providers": {"openai": {"apiKey": "sk-SECRET"}}},
    "plugins": {
        "entries": {
            "lossless-claw": {
                "enabled": True,
                "llm": {"allowModelOverride": True},
                "config": {
                    "freshTailCount": 12,
                    "autoRotateSessionFiles": {"enabled": False},
                    "ünïcode": None,
                },
            },
            "other-plugin": {"config": {"apiKey": "other-SECRET"}},
        }
    },
}


def write_config(directory: Path, body: object | str, mode: int = 0o640) -> Path:
    path = directory / "openclaw.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body, indent=4), encoding="utf-8")
    os.chmod(path, mode)
    return path


@pytest.fixture
def cfg_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "state"
    directory.mkdir()
    config = json.loads(json.dumps(BASE_CONFIG))
    del config["plugins"]["entries"]["lossless-claw"]["config"]["ünïcode"]
    write_config(directory, config)
    return directory


def backups(directory: Path) -> list[Path]:
    return sorted(directory.glob("openclaw.json.lcm-backup-*"))


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# --- show / get -----------------------------------------------------------------------


def test_show_never_prints_other_sections(cfg_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "20")
    monkeypatch.setenv("LCM_OPENCLAW_DIR", str(cfg_dir))
    out = lcm("config", "show")
    assert out.code == 0, out.stderr
    assert "SECRET" not in out.stdout and "allowModelOverride" not in out.stdout
    data = out.json["data"]
    assert list(data) == ["configPath", "raw", "effective", "diagnostics", "environmentOverrides"]
    assert data["raw"] == {"freshTailCount": 12, "autoRotateSessionFiles": {"enabled": False}}
    assert data["effective"]["freshTailCount"] == 20  # environment beats plugin config
    assert data["effective"]["autoRotateSessionFiles"]["enabled"] is False
    assert data["effective"]["databasePath"] == str(cfg_dir / "lcm.db")
    assert "freshTailMaxTokens" not in data["effective"]  # unset optional values are omitted
    assert data["environmentOverrides"] == ["LCM_FRESH_TAIL_COUNT", "LCM_OPENCLAW_DIR"]
    assert data["diagnostics"]["ignoreSessionPatternsSource"] == "default"


def test_show_without_config_file_uses_defaults(tmp_path: Path) -> None:
    out = lcm("--openclaw-dir", str(tmp_path), "config", "show")
    assert out.code == 0
    assert out.json["data"]["raw"] == {}
    assert out.json["data"]["effective"]["freshTailCount"] == 64


def test_get_raw_effective_and_aliases(cfg_dir: Path) -> None:
    base = ("--openclaw-dir", str(cfg_dir))
    assert lcm(*base, "config", "get", "freshTailCount").json["data"] == {
        "path": "freshTailCount",
        "isSet": True,
        "rawValue": 12,
        "effectiveValue": 12,
    }
    assert lcm(*base, "config", "get", "leafChunkTokens").json["data"] == {
        "path": "leafChunkTokens",
        "isSet": False,
        "rawValue": None,
        "effectiveValue": 20000,
    }
    assert lcm(*base, "config", "get", "dbPath").json["data"]["effectiveValue"] == str(cfg_dir / "lcm.db")
    whole = lcm(*base, "config", "get", "autoRotateSessionFiles").json["data"]
    assert whole["rawValue"] == {"enabled": False} and whole["effectiveValue"]["sizeBytes"] == 2097152
    missing = lcm(*base, "config", "get", "contextThresholdOverrides.0")
    assert missing.code == 3 and missing.error["code"] == "CONFIG_KEY_NOT_FOUND"
    assert missing.error["details"] == {"path": "contextThresholdOverrides.0"}


@pytest.mark.parametrize("command", [["status"], ["config", "show"], ["config", "get", "enabled"]])
@pytest.mark.parametrize(
    "body, code",
    [
        ('{"plugins": {}, // comment\n}', "CONFIG_PARSE_FAILED"),
        ("[1, 2]", "CONFIG_PARSE_FAILED"),
        ('{"a": NaN}', "CONFIG_PARSE_FAILED"),
        ('{"plugins": []}', "CONFIG_SHAPE_INVALID"),
        ('{"plugins": {"entries": {"lossless-claw": {"config": 5}}}}', "CONFIG_SHAPE_INVALID"),
        (
            '{"plugins": {"entries": {"lossless-claw": {"config": {"contextThresholdOverrides": [{"match": {}, "contextThreshold": 0.5}]}}}}}',
            "CONFIG_VALIDATION_FAILED",
        ),
    ],
)
def test_unreadable_config_fails_every_command(
    tmp_path: Path, command: list[str], body: str, code: str
) -> None:
    write_config(tmp_path, body)
    out = lcm("--openclaw-dir", str(tmp_path), *command)
    assert out.code == 4, out.stderr
    assert out.error["code"] == code
    assert out.error["details"]["configPath"] == str(tmp_path / "openclaw.json")


# --- set: success -----------------------------------------------------------------------


def test_set_changes_only_the_target_key(cfg_dir: Path) -> None:
    path = cfg_dir / "openclaw.json"
    original_bytes = path.read_bytes()
    before = json.loads(original_bytes)
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "freshTailCount", "32")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["oldValue"] == 12 and data["newValue"] == 32
    assert data["configPath"] == str(path)
    after = json.loads(path.read_text())
    before["plugins"]["entries"]["lossless-claw"]["config"]["freshTailCount"] = 32
    assert after == before  # every other section, secrets included, unchanged
    assert list(after) == list(before)  # key order kept
    text = path.read_text()
    assert text.endswith("}\n") and '\n  "gateway": {' in text  # 2-space indent
    (backup,) = backups(cfg_dir)
    assert backup.name == Path(data["backupPath"]).name
    assert backup.read_bytes() == original_bytes
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # mode preserved
    assert not list(cfg_dir.glob(".openclaw.json.lcm-*.tmp"))


def test_set_creates_missing_levels_and_nested_keys(tmp_path: Path) -> None:
    write_config(tmp_path, {"gateway": {"port": 1}})
    out = lcm("--openclaw-dir", str(tmp_path), "config", "set", "autoRotateSessionFiles.startup", '"warn"')
    assert out.code == 0, out.stderr
    assert out.json["data"]["oldValue"] is None
    saved = json.loads((tmp_path / "openclaw.json").read_text())
    assert saved["plugins"]["entries"]["lossless-claw"]["config"] == {
        "autoRotateSessionFiles": {"startup": "warn"}
    }


def test_set_numbers_like_javascript(cfg_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "newSessionRetainDepth", "-1e0")
    assert out.code == 0, out.stderr
    assert '"newSessionRetainDepth": -1\n' in (cfg_dir / "openclaw.json").read_text()
    assert lcm("--openclaw-dir", str(cfg_dir), "config", "set", "contextThreshold", "0.5").code == 0
    assert '"contextThreshold": 0.5' in (cfg_dir / "openclaw.json").read_text()


def test_set_keeps_non_ascii_raw(tmp_path: Path) -> None:
    write_config(tmp_path, {"title": "Zürich 東京"})
    assert lcm("--openclaw-dir", str(tmp_path), "config", "set", "customInstructions", '"Résumé"').code == 0
    text = (tmp_path / "openclaw.json").read_text(encoding="utf-8")
    assert "Zürich 東京" in text and "Résumé" in text


def test_set_meta_uses_rewritten_db_path(cfg_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "dbPath", f'"{cfg_dir}/other.db"')
    assert out.code == 0, out.stderr
    assert out.json["meta"]["databasePath"] == f"{cfg_dir}/other.db"


def test_set_can_repair_a_config_that_fails_runtime_validation(tmp_path: Path) -> None:
    bad = {
        "plugins": {
            "entries": {
                "lossless-claw": {
                    "config": {"contextThresholdOverrides": [{"match": {}, "contextThreshold": 0.5}]}
                }
            }
        }
    }
    write_config(tmp_path, bad)
    assert lcm("--openclaw-dir", str(tmp_path), "status").code == 4
    out = lcm("--openclaw-dir", str(tmp_path), "config", "set", "contextThresholdOverrides", "[]")
    assert out.code == 0, out.stderr


# --- set: refusals leave the file byte-for-byte unchanged, with no backup -----------------


@pytest.mark.parametrize(
    "args, code",
    [
        (["noSuchKey", "1"], "CONFIG_VALIDATION_FAILED"),
        (["freshTailCount", "0"], "CONFIG_VALIDATION_FAILED"),  # minimum 1
        (["freshTailCount", "1.5"], "CONFIG_VALIDATION_FAILED"),  # integer
        (["freshTailCount", '"12"'], "CONFIG_VALIDATION_FAILED"),  # type
        (["freshTailCount", "twelve"], "CONFIG_VALIDATION_FAILED"),  # not JSON
        (["contextThreshold", "1.5"], "CONFIG_VALIDATION_FAILED"),  # maximum 1
        (["proactiveThresholdCompactionMode", '"sometimes"'], "CONFIG_VALIDATION_FAILED"),  # enum
        (["autoRotateSessionFiles", '{"bogus": 1}'], "CONFIG_VALIDATION_FAILED"),  # additionalProperties
        (["contextThresholdOverrides.0", "{}"], "CONFIG_VALIDATION_FAILED"),  # arrays not addressable
        (["__proto__", "{}"], "CONFIG_VALIDATION_FAILED"),
        (["fresh..count", "1"], "CONFIG_VALIDATION_FAILED"),
        (
            [
                "contextThresholdOverrides",
                '[{"match": {"modelContextWindowMin": 9, "modelContextWindowMax": 3}, "contextThreshold": 0.5}]',
            ],
            "CONFIG_VALIDATION_FAILED",
        ),
    ],
)
def test_set_refusals(cfg_dir: Path, args: list[str], code: str) -> None:
    before = snapshot(cfg_dir)
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", *args)
    assert out.code == 4, out.stderr
    assert out.error["code"] == code
    assert snapshot(cfg_dir) == before
    assert backups(cfg_dir) == []


def test_set_validation_errors_are_listed(cfg_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "freshTailCount", "0")
    errors = out.error["details"]["errors"]
    assert out.error["details"]["path"] == "freshTailCount"
    assert errors[0]["path"] == "/freshTailCount"


def test_set_blocked_by_a_preexisting_unknown_key(tmp_path: Path) -> None:
    write_config(tmp_path, {"plugins": {"entries": {"lossless-claw": {"config": {"legacyThing": 1}}}}})
    before = snapshot(tmp_path)
    out = lcm("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "5")
    assert out.error["code"] == "CONFIG_VALIDATION_FAILED"
    assert any(e["path"] == "/legacyThing" for e in out.error["details"]["errors"])
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "body, code",
    [
        ('{"plugins": {"entries": {}}, }', "CONFIG_PARSE_FAILED"),
        ('{"$include": "other.json"}', "CONFIG_INCLUDE_UNSUPPORTED"),
        ('{"plugins": {"$include": "p.json"}}', "CONFIG_INCLUDE_UNSUPPORTED"),
        (
            '{"plugins": {"entries": {"lossless-claw": {"config": {"$include": "c.json"}}}}}',
            "CONFIG_INCLUDE_UNSUPPORTED",
        ),
        ('{"plugins": {"entries": "x"}}', "CONFIG_SHAPE_INVALID"),
    ],
)
def test_set_refuses_unsafe_files(tmp_path: Path, body: str, code: str) -> None:
    write_config(tmp_path, body)
    before = snapshot(tmp_path)
    out = lcm("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "5")
    assert out.code == 4 and out.error["code"] == code
    assert snapshot(tmp_path) == before


def test_set_include_details(tmp_path: Path) -> None:
    write_config(tmp_path, '{"plugins": {"entries": {"lossless-claw": {"$include": "x.json"}}}}')
    details = lcm("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "5").error["details"]
    assert details == {
        "configPath": str(tmp_path / "openclaw.json"),
        "includePath": "plugins.entries.lossless-claw",
    }


def test_set_refuses_symlink_and_missing_file(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "openclaw.json").symlink_to(real)
    out = lcm("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "5")
    assert out.error["code"] == "CONFIG_SYMLINK_UNSUPPORTED" and out.code == 4
    assert real.read_text() == "{}"
    missing = lcm("--openclaw-dir", str(tmp_path / "nowhere"), "config", "set", "freshTailCount", "5")
    assert missing.code == 3 and missing.error["code"] == "CONFIG_NOT_FOUND"
    assert not (tmp_path / "nowhere").exists()


def test_set_backup_collision_is_refused_cleanly(cfg_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_cli.engine.config import file as config_file

    monkeypatch.setattr(config_file, "backup_stamp", lambda now=None: "20260101T000000000Z")
    (cfg_dir / "openclaw.json.lcm-backup-20260101T000000000Z").write_text("occupied")
    before = (cfg_dir / "openclaw.json").read_bytes()
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "freshTailCount", "5")
    assert out.code == 4 and out.error["code"] == "CONFIG_BACKUP_FAILED"
    assert (cfg_dir / "openclaw.json").read_bytes() == before


def test_set_write_failure_removes_temp_and_keeps_original(
    cfg_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lcm_cli.engine.config.file as config_file

    def fail_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(config_file.os, "replace", fail_replace)
    before = (cfg_dir / "openclaw.json").read_bytes()
    out = lcm("--openclaw-dir", str(cfg_dir), "config", "set", "freshTailCount", "5")
    assert out.code == 4 and out.error["code"] == "CONFIG_WRITE_FAILED"
    assert (cfg_dir / "openclaw.json").read_bytes() == before
    assert not list(cfg_dir.glob(".openclaw.json.lcm-*.tmp"))
