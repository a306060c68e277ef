"""argv parsing without typer must agree with the typer app that documents it."""

from __future__ import annotations

from typing import Any

import typer.main

from lcm_cli.cli import build_app
from lcm_cli.commands.argv import GLOBAL_OPTIONS, command_table, is_flag
from lcm_cli.engine.core.params import FIELD_SCHEMAS


def typer_leaves() -> dict[tuple[str, ...], Any]:
    leaves: dict[tuple[str, ...], Any] = {}

    def walk(group: Any, prefix: tuple[str, ...]) -> None:
        for name, sub in group.commands.items():
            if hasattr(sub, "list_commands"):
                if getattr(sub, "invoke_without_command", False):
                    leaves[prefix + (name,)] = sub  # the group itself runs (`lcm backup`)
                walk(sub, prefix + (name,))
            else:
                leaves[prefix + (name,)] = sub

    walk(typer.main.get_command(build_app()), ())
    return leaves


def test_every_command_exists_in_both() -> None:
    assert set(typer_leaves()) == set(command_table())


def test_options_flags_and_arguments_agree() -> None:
    table = command_table()
    for path, command in typer_leaves().items():
        shape = table[path]
        options = {p.opts[0]: p for p in command.params if p.opts[0].startswith("--") and p.name != "help"}
        assert set(options) == set(shape.options), path
        for name, param in options.items():
            field = shape.options[name]
            assert param.name == field, (path, name)
            assert bool(getattr(param, "is_flag", False)) == is_flag(field), (path, name)
            is_array = FIELD_SCHEMAS[field].get("type") == "array"
            assert bool(getattr(param, "multiple", False)) == is_array, (path, name)
        arguments = [p.name for p in command.params if not p.opts[0].startswith("-")]
        assert tuple(arguments) == shape.args, path


def test_global_options_agree() -> None:
    root = typer.main.get_command(build_app())
    declared = {
        opt for p in root.params for opt in p.opts if p.name not in ("install_completion", "show_completion")
    }
    assert declared | {"--help", "-h"} == set(GLOBAL_OPTIONS)
    for param in root.params:
        for opt in param.opts:
            if opt in GLOBAL_OPTIONS:
                assert GLOBAL_OPTIONS[opt] == (not param.is_flag), opt


def test_typer_door_gives_the_same_envelope(state_dir: Any) -> None:
    from typer.testing import CliRunner

    from tests.conftest import lcm

    direct = lcm(
        "--openclaw-dir", str(state_dir), "messages", "list", "--conversation-id", "1", "--limit", "2"
    )
    via_typer = CliRunner().invoke(
        build_app(),
        ["--openclaw-dir", str(state_dir), "messages", "list", "--conversation-id", "1", "--limit", "2"],
    )
    assert via_typer.exit_code == 0, via_typer.output
    assert via_typer.stdout == direct.stdout
