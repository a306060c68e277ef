"""lcm's settings live in its own plugin entry; lossless-claw's is still read.

``plugins.entries.lcm.config`` (the entry of lcm's OpenClaw plugin) and
``plugins.entries.lossless-claw.config`` (users who switched keep their settings) are both
read; where both set a key, lcm's wins. ``config set`` writes to lcm's entry once it exists.
The plugin manifest the host validates lcm's entry against accepts every key.
"""

from __future__ import annotations

import json
from pathlib import Path

from lcm_cli.engine.config.keys import CONFIG_KEYS, LCM_KEYS, SHIM_KEYS
from tests.conftest import lcm

REPO = Path(__file__).resolve().parents[3]


def _write(path: Path, entries: dict[str, object]) -> None:
    path.write_text(json.dumps({"plugins": {"entries": entries}}, indent=2))


def test_lcm_entry_wins_key_by_key_and_the_legacy_entry_still_counts(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    _write(
        config,
        {
            "lossless-claw": {"enabled": False, "config": {"freshTailCount": 9, "contextThreshold": 0.6}},
            "lcm": {"enabled": True, "config": {"freshTailCount": 12, "callTimeoutMs": 8000}},
        },
    )
    effective = lcm("--openclaw-dir", str(tmp_path), "config", "show").json["data"]["effective"]
    assert effective["freshTailCount"] == 12  # lcm's entry wins
    assert effective["contextThreshold"] == 0.6  # lossless-claw's still read
    got = lcm("--openclaw-dir", str(tmp_path), "config", "get", "callTimeoutMs").json["data"]
    assert got["isSet"] and got["rawValue"] == 8000  # the plugin's own key is accepted


def test_config_set_writes_to_the_entry_lcm_reads(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    _write(config, {"lossless-claw": {"config": {"freshTailCount": 9}}})
    assert lcm("--openclaw-dir", str(tmp_path), "config", "set", "leafChunkTokens", "5000").code == 0
    entries = json.loads(config.read_text())["plugins"]["entries"]
    assert entries["lossless-claw"]["config"]["leafChunkTokens"] == 5000  # no lcm entry yet
    entries["lcm"] = {"enabled": True}
    _write(config, entries)
    done = lcm("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "14")
    assert done.code == 0, done.stderr
    entries = json.loads(config.read_text())["plugins"]["entries"]
    assert entries["lcm"]["config"] == {"freshTailCount": 14}
    assert entries["lossless-claw"]["config"]["freshTailCount"] == 9  # untouched, and overridden
    effective = lcm("--openclaw-dir", str(tmp_path), "config", "show").json["data"]["effective"]
    assert effective["freshTailCount"] == 14 and effective["leafChunkTokens"] == 5000


def test_the_plugin_manifest_accepts_every_engine_and_plugin_key() -> None:
    manifest = json.loads((REPO / "integrations" / "openclaw" / "openclaw.plugin.json").read_text())
    schema = manifest["configSchema"]
    assert schema["additionalProperties"] is False
    top = {key.path.split(".")[0] for key in (*CONFIG_KEYS, *LCM_KEYS, *SHIM_KEYS)}
    assert set(schema["properties"]) == top
    for shim in SHIM_KEYS:
        assert schema["properties"][shim.path]["default"] == shim.default
