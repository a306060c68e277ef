"""An empty id, path or name argument is a missing one: INVALID_COMMAND at every door.

lossless-claw answers `summaries show ""`, `config get ""` and `config set "" V` so; every
lcm command's id, path and name arguments follow it. A pattern, a prompt and a JSON value
are judged by their own command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_cli.engine.api import invoke
from lcm_cli.engine.core.errors import LcmError
from tests.commands.test_doors import Client, hook
from tests.conftest import lcm

CASES = [
    (("summaries", "show", ""), "summaries.show", {"summary_id": ""}),
    (("config", "get", ""), "config.get", {"path": ""}),
    (("describe", ""), "describe", {"item_id": ""}),
    (("expand", ""), "expand", {"summary_id": ""}),
    (("backup", "verify", ""), "backup.verify", {"path": ""}),
]


@pytest.mark.parametrize(("argv", "name", "args"), CASES, ids=[c[1] for c in CASES])
def test_an_empty_argument_is_a_missing_one(
    state_dir: Path, argv: tuple[str, ...], name: str, args: dict[str, str]
) -> None:
    out = lcm("--openclaw-dir", str(state_dir), *argv)
    assert (out.code, out.error["code"]) == (2, "INVALID_COMMAND"), out.stderr
    with pytest.raises(LcmError) as raised:
        invoke(name, {}, args=tuple(args.values()), openclaw_dir=str(state_dir))
    assert raised.value.code == "INVALID_COMMAND"
    params = {"".join(w.title() if i else w for i, w in enumerate(k.split("_"))): v for k, v in args.items()}
    done = hook(state_dir, name, json.dumps(params))
    assert done.returncode == 2 and json.loads(done.stderr)["error"]["code"] == "INVALID_COMMAND"
    client = Client(state_dir)
    try:
        assert client.ask(1, name, params)["error"]["code"] == "INVALID_COMMAND"
    finally:
        assert client.close() == 0


def test_config_set_with_an_empty_value_is_judged_as_a_value(state_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(state_dir), "config", "set", "freshTailCount", "")
    assert out.code == 4 and out.error["code"] == "CONFIG_VALIDATION_FAILED"
    blank_path = lcm("--openclaw-dir", str(state_dir), "config", "set", "", "5")
    assert (blank_path.code, blank_path.error["code"]) == (2, "INVALID_COMMAND")
