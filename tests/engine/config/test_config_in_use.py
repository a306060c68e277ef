"""The config in use is read as lossless-claw's runtime reads it, and checked by `config set`'s rules.

A hand-written value that `config set` would refuse never stops a command: it is used as
the runtime uses it (coerced, clamped or fallen through) and reported in
``meta.configProblems`` with the value in effect; only `config set` refuses it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.config.schema import allowed_text, config_problems
from tests.commands.test_doors import hook
from tests.compat.test_config_goldens import VERSIONS, golden
from tests.conftest import lcm

# (key, stored value, allowed text): one per key class.
INVALID_STORED = [
    ("freshTailCount", 0, "an integer >= 1"),  # int below its range
    ("freshTailCount", -5, "an integer >= 1"),
    ("freshTailCount", 2.5, "an integer >= 1"),  # not integral
    ("freshTailMaxTokens", -1, "an integer >= 0"),
    ("contextThreshold", 1.5, "a number from 0 to 1"),  # float above its range
    ("leafMinFanout", 1, "an integer >= 2"),
    ("proactiveThresholdCompactionMode", "sometimes", "one of: deferred, inline"),  # enum
    ("enabled", "yes", "true or false"),  # boolean given a string
    ("freshTailCount", "64", "an integer >= 1"),  # wrong type: a numeric string
    ("ignoreSessionPatterns", "agent:*", "an array"),  # wrong type: string for a list
    ("autoRotateSessionFiles.enabled", 1, "true or false"),  # nested boolean
]


def write_plugin_config(state: Path, config: dict[str, Any]) -> None:
    root = {"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": config}}}}
    (state / "openclaw.json").write_text(json.dumps(root), encoding="utf-8")


def nested(path: str, value: Any) -> dict[str, Any]:
    *parents, leaf = path.split(".")
    out: dict[str, Any] = {leaf: value}
    for parent in reversed(parents):
        out = {parent: out}
    return out


@pytest.mark.parametrize(("key", "value", "allowed"), INVALID_STORED, ids=lambda v: json.dumps(v))
def test_a_value_config_set_refuses_is_reported_never_fatal(
    state_dir: Path, key: str, value: Any, allowed: str
) -> None:
    write_plugin_config(state_dir, nested(key, value))
    for argv in (
        ("messages", "tail", "--conversation-id", "1"),
        ("conversations", "list"),
        ("compact", "--conversation-id", "1"),
        ("status",),
        ("context", "show", "--conversation-id", "1"),
    ):
        out = lcm("--openclaw-dir", str(state_dir), *argv)
        assert out.code == 0, (argv, out.stderr)
        problem = out.json["meta"]["configProblems"][0]
        assert problem["key"] == key and problem["source"] == "plugin-config"
        assert problem["allowed"] == allowed and "used" in problem
    # `config set` refuses exactly that value (the same rules), and `config show` lists it.
    refused = lcm("--openclaw-dir", str(state_dir), "config", "set", key, json.dumps(value))
    assert refused.code == 4 and refused.error["code"] == "CONFIG_VALIDATION_FAILED"
    shown = lcm("--openclaw-dir", str(state_dir), "config", "show")
    assert shown.code == 0, shown.stderr
    assert shown.json["meta"]["configProblems"][0]["key"] == key


# Values as users write them, which the runtime reads: (stored, key, recorded).
# recorded: the value in effect is lossless-claw's recorded answer for exactly this config
# (tests/compat/goldens/config, both versions); False where no recorded case holds it.
AS_USERS_WRITE = [
    ({"freshTailCount": "16"}, "freshTailCount", True),
    ({"leafChunkTokens": " 7000 "}, "leafChunkTokens", True),
    ({"proactiveThresholdCompactionMode": "INLINE"}, "proactiveThresholdCompactionMode", True),
    ({"pruneHeartbeatOk": "false"}, "pruneHeartbeatOk", True),
    ({"ignoreSessionPatterns": "agent:*:cron:*, agent:*:subagent:*"}, "ignoreSessionPatterns", False),
    ({"fallbackMaxTokens": 23}, "fallbackMaxTokens", True),
]


def recorded_in_effect(stored: dict[str, Any], key: str) -> list[Any]:
    """The value of ``key`` each recorded lossless-claw version put in effect for ``stored``
    alone (no environment), from the config goldens."""
    return [
        case["effective"][key]
        for version in VERSIONS
        for case in golden(version)["byKey"].get(key, [])
        if case["plugin"] == stored and not case.get("env") and "effective" in case
    ]


@pytest.mark.parametrize(("stored", "key", "recorded"), AS_USERS_WRITE, ids=lambda v: json.dumps(v))
def test_configs_the_runtime_reads_never_stop_lcm(
    state_dir: Path, stored: dict[str, Any], key: str, recorded: bool
) -> None:
    """The engine's own hook, the reads and the importer all run; the value in effect is
    the runtime's recorded answer (where one is recorded), and the problem is said."""
    write_plugin_config(state_dir, stored)
    effective = lcm("--openclaw-dir", str(state_dir), "config", "get", key).json["data"]["effectiveValue"]
    answers = recorded_in_effect(stored, key)
    assert bool(answers) == recorded, answers
    for answer in answers:
        assert effective == answer
    for argv in (
        ("status",),
        ("conversations", "list"),
        ("messages", "tail", "--conversation-id", "1"),
        ("migrate-sessions",),
    ):
        out = lcm("--openclaw-dir", str(state_dir), *argv)
        assert out.code == 0, (argv, out.stderr)
    done = hook(state_dir, "context.assemble", json.dumps({"conversationId": 1, "tokenBudget": 4000}))
    assert done.returncode == 0, done.stderr


def test_environment_value_out_of_range_is_reported_with_the_variable(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "0")
    out = lcm("--openclaw-dir", str(state_dir), "messages", "tail", "--conversation-id", "1")
    assert out.code == 0, out.stderr
    assert out.json["meta"]["configProblems"] == [
        {
            "key": "freshTailCount",
            "source": "LCM_FRESH_TAIL_COUNT",
            "message": "below minimum (1)",
            "allowed": "an integer >= 1",
            "used": 0,
        }
    ]


def test_unknown_keys_and_valid_values_are_accepted(state_dir: Path) -> None:
    """Reads ignore keys a newer lossless-claw may add; the valid edge values pass."""
    write_plugin_config(
        state_dir,
        {"freshTailCount": 1, "contextThreshold": 1, "leafMinFanout": 2, "someFutureKey": {"x": 1}},
    )
    out = lcm("--openclaw-dir", str(state_dir), "conversations", "list")
    assert out.code == 0, out.stderr
    assert config_problems({"someFutureKey": 1, "enabled": False}, {}) == []


def test_config_get_still_reads_an_invalid_key(state_dir: Path) -> None:
    write_plugin_config(state_dir, {"freshTailCount": 0})
    out = lcm("--openclaw-dir", str(state_dir), "config", "get", "freshTailCount")
    assert out.code == 0, out.stderr
    assert out.json["data"]["rawValue"] == 0


def test_allowed_text_covers_every_key_class() -> None:
    assert allowed_text({"type": "integer", "minimum": -1}) == "an integer >= -1"
    assert allowed_text({"type": "number", "minimum": 0, "maximum": 1}) == "a number from 0 to 1"
    assert allowed_text({"type": "string", "enum": ["a", "b"]}) == "one of: a, b"
    assert allowed_text({"type": "boolean"}) == "true or false"
    assert allowed_text({"type": "string"}) == "a string"


def test_config_set_fixes_an_invalid_stored_value(state_dir: Path) -> None:
    write_plugin_config(state_dir, {"freshTailCount": 0})
    fixed = lcm("--openclaw-dir", str(state_dir), "config", "set", "freshTailCount", "8")
    assert fixed.code == 0, fixed.stderr
    out = lcm("--openclaw-dir", str(state_dir), "messages", "tail", "--conversation-id", "1")
    assert out.code == 0, out.stderr
    assert out.json["data"]["limits"]["count"] == 8
    assert "configProblems" not in out.json["meta"]
