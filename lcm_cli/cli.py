"""The `lcm` entry point: argument normalization, the typer app, and the error -> exit table.

The reference CLI accepts options anywhere (before, between or after the command words).
Click wants root options before the subcommand and command options after it, so
:func:`normalize` first reads argv against the option table of the typer app itself,
reports unknown options, bad command words and unsupported options in the reference's
order, and rebuilds argv in click's order. Typer then parses it and calls the command.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from lcm_cli import __version__
from lcm_cli.engine.errors import LcmError, invalid_argument

VERSION_FLAGS = ("--version", "-v")
HELP_FLAGS = ("--help", "-h")


def _version_line(pretty: bool = False) -> str:
    envelope = {"ok": True, "command": "version", "data": {"version": __version__}, "meta": {}}
    if pretty:
        return json.dumps(envelope, indent=2) + "\n"
    return json.dumps(envelope, separators=(",", ":")) + "\n"


def _fast_version(argv: list[str]) -> bool:
    """``lcm --version`` alone answers without importing typer (agents call it to probe)."""
    return bool(argv) and any(a in VERSION_FLAGS for a in argv) and all(
        a in VERSION_FLAGS or a == "--pretty" or a == "--format=json" for a in argv
    )


# --- the typer app --------------------------------------------------------------------


def build_app() -> Any:
    """Assemble the typer app from the command modules."""
    import typer

    from lcm_cli.commands import config as config_cmds
    from lcm_cli.commands import inventory, read, root

    app = typer.Typer(
        name="lcm",
        context_settings={"help_option_names": ["--help", "-h"]},
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    app.callback()(root.root)
    from lcm_cli.commands.options import GLOBALS_EPILOG

    app.command("status", epilog=GLOBALS_EPILOG)(read.status)
    app.add_typer(read.conversations, name="conversations")
    app.add_typer(read.messages, name="messages")
    app.add_typer(read.summaries, name="summaries")
    app.add_typer(config_cmds.config, name="config")
    app.command("doctor", epilog=GLOBALS_EPILOG)(read.doctor)
    app.command("commands", epilog=GLOBALS_EPILOG)(inventory.commands)
    return app


# --- argv normalization ---------------------------------------------------------------


@dataclass
class Normalized:
    """argv read against the command tree."""

    path: list[str]
    argv: list[str]
    help: bool = False
    version: bool = False
    pretty: bool = False
    globals: dict[str, Any] = field(default_factory=dict)


class _HelpFlag:
    """Stands in for the help option click adds to every command on the fly."""

    is_flag = True


def _option_table(command: Any) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for param in getattr(command, "params", []):
        for opt in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
            if opt.startswith("-"):
                table[opt] = param
    return table


def _is_json_number(token: str) -> bool:
    try:
        value = json.loads(token)
    except ValueError:
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def normalize(argv: list[str], root: Any) -> Normalized:
    """Read argv like the reference parser and rebuild it in click's order."""
    root_opts = _option_table(root)
    leaves: dict[tuple[str, ...], Any] = {}

    def collect(group: Any, prefix: tuple[str, ...]) -> None:
        for name, sub in getattr(group, "commands", {}).items():
            if getattr(sub, "commands", None) is not None and hasattr(sub, "list_commands"):
                collect(sub, prefix + (name,))
            else:
                leaves[prefix + (name,)] = sub

    collect(root, ())
    every_option: dict[str, Any] = {flag: _HelpFlag for flag in HELP_FLAGS}
    every_option.update(root_opts)
    for leaf in leaves.values():
        every_option.update(_option_table(leaf))

    positionals: list[tuple[int, str]] = []
    negatives: list[tuple[int, str]] = []
    options: list[tuple[str, Any]] = []
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "--":
            positionals.extend((index + i, t) for i, t in enumerate(tokens[index:]))
            break
        if token.startswith("--") or (token.startswith("-") and len(token) > 1):
            name, eq, inline = token.partition("=")
            if name not in every_option:
                if token.startswith("-") and not token.startswith("--") and _is_json_number(token):
                    negatives.append((index, token))
                    continue
                raise invalid_argument(f"Unknown option '{name}'. Run `lcm --help` for the options.")
            param = every_option[name]
            if getattr(param, "is_flag", False):
                if eq:
                    raise invalid_argument(f"Option '{name}' does not take a value.")
                options.append((name, True))
                continue
            if eq:
                value = inline
            else:
                if index >= len(tokens) or (tokens[index].startswith("-") and tokens[index] != "-"):
                    raise invalid_argument(f"Option '{name} <value>' needs a value; for a value starting with '-' use {name}=VALUE.")
                value = tokens[index]
                index += 1
            options.append((name, value))
        else:
            positionals.append((index, token))

    # A negative JSON number is a value only as the fourth word of `config set`.
    if negatives:
        merged = sorted(positionals + negatives)
        words = [t for _, t in merged]
        if len(negatives) == 1 and len(words) == 4 and words[:2] == ["config", "set"] and merged[3] == negatives[0]:
            positionals = merged
        else:
            raise invalid_argument(f"Unknown option '{negatives[0][1]}'. Run `lcm --help` for the options.")
    words = [t for _, t in positionals]
    names = [n for n, _ in options]
    wants_version = any(n in VERSION_FLAGS for n in names)
    wants_help = any(n in HELP_FLAGS for n in names) and not wants_version  # version wins

    if not words:
        if not wants_version:  # bare `lcm` prints help, like `lcm --help`
            return Normalized([], ["--help"], help=True)
        leaf_path: tuple[str, ...] = ()
    else:
        leaf_path = ()
        for depth in (1, 2):
            if tuple(words[:depth]) in leaves:
                leaf_path = tuple(words[:depth])
                break
        if not leaf_path:
            groups = {p[:1] for p in leaves if len(p) > 1}
            if tuple(words[:1]) in groups:
                if wants_help:
                    return Normalized(words[:1], words[:1] + ["--help"], help=True)
                if len(words) == 1:
                    raise LcmError("INVALID_COMMAND", f"`lcm {words[0]}` needs a subcommand; see `lcm {words[0]} --help`.")
            raise LcmError("INVALID_COMMAND", f"Unknown command `lcm {' '.join(words)}`. Run `lcm --help` for the commands.")
    if wants_help:
        return Normalized(list(leaf_path), list(leaf_path) + ["--help"], help=True)
    leaf = leaves.get(leaf_path)
    arguments = [p for p in getattr(leaf, "params", []) if not getattr(p, "opts", [""])[0].startswith("-")] if leaf else []
    extra = words[len(leaf_path):]
    if leaf is not None and len(extra) != len(arguments):
        raise LcmError(
            "INVALID_COMMAND",
            f"`lcm {' '.join(leaf_path)}` takes {len(arguments)} argument(s), got {len(extra)}. "
            f"Run `lcm {' '.join(leaf_path)} --help`.",
        )
    command_key = ".".join(leaf_path) if leaf_path else "version"
    leaf_opts = _option_table(leaf) if leaf is not None else {}
    root_args: list[str] = []
    leaf_args: list[str] = []
    globals_: dict[str, Any] = {}
    for name, value in options:
        if name in HELP_FLAGS:  # only reached when --version overrides it
            continue
        if name in root_opts:
            if name in VERSION_FLAGS:
                continue
            root_args += [name] if value is True else [name, value]
            globals_[name] = value
        elif name in leaf_opts:
            leaf_args += [name] if value is True else [name, value]
        else:
            raise invalid_argument(
                f"{name} is not supported by `{command_key}`; see `lcm {' '.join(leaf_path) or ''} --help`.",
                {"option": name, "command": command_key},
            )
    argv_out = root_args + list(leaf_path) + leaf_args + (["--"] + extra if extra else [])
    return Normalized(list(leaf_path), argv_out, version=wants_version, pretty="--pretty" in globals_, globals=globals_)


# --- main -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run `lcm`; returns the exit status (errors mapped through ``lcm_cli.errors``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if _fast_version(argv):
        sys.stdout.write(_version_line("--pretty" in argv))
        return 0
    from lcm_cli.output import Output

    fallback = Output()
    try:
        return _run(argv, fallback)
    except LcmError as err:
        from lcm_cli.errors import exit_status

        fallback.error(err, pretty=fallback.pretty)
        return exit_status(err.code)
    except KeyboardInterrupt:
        fallback.error(LcmError("INTERNAL_ERROR", "Interrupted."))
        return 130
    except Exception as exc:  # the last line of defence: still one JSON error object
        if os.environ.get("LCM_DEBUG") == "1":
            raise
        fallback.error(LcmError("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}. Re-run with LCM_DEBUG=1 for a traceback."))
        return 1


def _run(argv: list[str], fallback: Any) -> int:
    import typer
    import typer.main

    app = build_app()
    command = typer.main.get_command(app)
    completion_flags = ("--show-completion", "--install-completion")
    if any(name.endswith("_COMPLETE") and name.startswith("_LCM") for name in os.environ) or any(
        a.split("=")[0] in completion_flags for a in argv
    ):
        # Shell completion is typer's own mechanism; hand argv over untouched.
        try:
            command.main(argv, prog_name="lcm")
        except SystemExit as done:  # click exits after printing completions
            return done.code if isinstance(done.code, int) else 0
        return 0
    normalized = normalize(argv, command)
    if normalized.version:
        sys.stdout.write(_version_line(normalized.pretty))
        return 0
    # Parsing succeeded: from here on errors honour --pretty.
    fallback.pretty = normalized.pretty
    from typer._click.exceptions import UsageError  # typer 0.28 vendors click

    try:
        result = command.main(normalized.argv, prog_name="lcm", standalone_mode=False)
    except typer.Exit as done:
        return done.exit_code or 0
    except UsageError as exc:
        raise invalid_argument(exc.format_message()) from None
    except typer.Abort:
        raise LcmError("INTERNAL_ERROR", "Aborted.") from None
    # With standalone_mode off, click returns the exit code of --help and friends.
    return result if isinstance(result, int) else 0
