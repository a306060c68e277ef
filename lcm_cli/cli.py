"""The `lcm` entry point: read argv, run the operation, map errors to exit statuses.

JSON reads never import typer: :mod:`lcm_cli.commands.argv` parses argv from the operation table
and the operation is called directly through :mod:`lcm_cli.engine.api`. The typer app
(built by :func:`build_app`) serves `--help`, shell completion and `lcm commands`, and is
itself a working door over the same operations.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from lcm_cli import __version__
from lcm_cli.commands.argv import (
    COMPLETION_FLAGS,
    GLOBAL_OPTIONS,
    HELP_FLAGS,
    VERSION_FLAGS,
    Parsed,
    parse_argv,
)
from lcm_cli.engine.core.errors import LcmError, invalid_argument


def _version_line(pretty: bool = False) -> str:
    envelope = {"ok": True, "command": "version", "data": {"version": __version__}, "meta": {}}
    if pretty:
        return json.dumps(envelope, indent=2) + "\n"
    return json.dumps(envelope, separators=(",", ":")) + "\n"


def build_app() -> Any:
    """Assemble the typer app from the command modules."""
    import typer

    from lcm_cli.commands import (
        backup,
        compact,
        control,
        doctor,
        doors,
        ingest,
        inventory,
        migrate,
        prompts,
        prune,
        read,
        recall,
        root,
    )
    from lcm_cli.commands import config as config_cmds
    from lcm_cli.commands import rotate as rotate_cmds
    from lcm_cli.commands.options import GLOBALS_EPILOG

    app = typer.Typer(
        name="lcm",
        context_settings={"help_option_names": ["--help", "-h"]},
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(root.root)
    # Order of `lcm --help`: inspect, recall, keep and maintain, operate, host doors.
    # (Typer lists single commands first, then groups, each in this order.)
    app.command("status", epilog=GLOBALS_EPILOG)(read.status)
    app.add_typer(read.conversations, name="conversations")
    app.add_typer(read.messages, name="messages")
    app.add_typer(read.summaries, name="summaries")
    app.command("grep", epilog=GLOBALS_EPILOG)(recall.grep)
    app.command("describe", epilog=GLOBALS_EPILOG)(recall.describe)
    app.command("expand", epilog=GLOBALS_EPILOG)(recall.expand)
    app.command("expand-query", epilog=GLOBALS_EPILOG)(recall.expand_query)
    app.command("export", epilog=GLOBALS_EPILOG)(recall.export)
    app.add_typer(compact.context, name="context")
    app.command("ingest", epilog=GLOBALS_EPILOG)(ingest.ingest)
    app.command("after-turn", epilog=GLOBALS_EPILOG)(compact.after_turn)
    app.command("commit-turn", epilog=GLOBALS_EPILOG)(compact.commit_turn)
    app.add_typer(ingest.session, name="session")
    app.command("compact", epilog=GLOBALS_EPILOG)(compact.compact)
    app.command("maintain", epilog=GLOBALS_EPILOG)(compact.maintain)
    app.command("migrate-sessions", epilog=GLOBALS_EPILOG)(migrate.migrate_sessions)
    app.add_typer(backup.backup, name="backup")
    app.add_typer(doctor.doctor, name="doctor")
    app.add_typer(prune.prune, name="prune")
    app.command("rotate", epilog=GLOBALS_EPILOG)(rotate_cmds.rotate)
    app.add_typer(config_cmds.config, name="config")
    app.add_typer(prompts.prompts, name="prompts")
    app.add_typer(control.control, name="control")
    app.command("hook", epilog=GLOBALS_EPILOG)(doors.hook)
    app.command("serve", epilog=GLOBALS_EPILOG)(doors.serve)
    app.command("commands", epilog=GLOBALS_EPILOG)(inventory.commands)
    return app


def main(argv: list[str] | None = None) -> int:
    """Run `lcm`; returns the exit status (errors mapped through ``lcm_cli.engine.core.exit_codes``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from lcm_cli.render.output import Output

    fallback = Output()
    try:
        return _run(argv, fallback)
    except LcmError as err:
        from lcm_cli.engine.core.exit_codes import exit_status

        fallback.error(err)
        return exit_status(err.code)
    except BrokenPipeError:
        # The reader went away (`lcm export ... | head`): not an error worth a message.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        fallback.error(LcmError("INTERNAL_ERROR", "Interrupted."))
        return 130
    except Exception as exc:  # the last line of defence: still one JSON error object
        if os.environ.get("LCM_DEBUG") == "1":
            raise
        fallback.error(
            LcmError(
                "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}. Re-run with LCM_DEBUG=1 for a traceback."
            )
        )
        return 1


def _run(argv: list[str], fallback: Any) -> int:
    if any(name.startswith("_LCM") and name.endswith("_COMPLETE") for name in os.environ) or any(
        a.split("=")[0] in COMPLETION_FLAGS for a in argv
    ):
        return _typer(argv, completion=True)
    door = _door_command(argv)
    if door is not None:
        return door
    parsed = parse_argv(argv)
    pretty = parsed.globals.get("--pretty", False) is True
    if parsed.version:
        sys.stdout.write(_version_line(pretty))
        return 0
    if parsed.help:
        return _typer(list(parsed.words) + ["--help"])
    # The reference pretty-prints only once its argument checks all pass: a request's
    # validation errors (selectors, format, roles, kind, time filters, integers) stay compact.
    _validate_request(parsed)
    fallback.pretty = pretty
    if parsed.command is not None and parsed.command.name == "commands":
        return _typer(_canonical(parsed))
    return _call(parsed, fallback)


def _validate_request(parsed: Parsed) -> None:
    """Validate the parsed command's request (the operation validates it again, cheaply)."""
    from lcm_cli.engine.core.params import validate_request
    from lcm_cli.engine.core.registry import OPERATIONS

    if parsed.command is None or parsed.command.name not in OPERATIONS:
        return
    spec = OPERATIONS[parsed.command.name]
    validate_request(
        parsed.command.name,
        spec.options,
        parsed.params,
        needs_selector=spec.needs_selector,
        output_format=parsed.globals.get("--format", "json"),
        args=parsed.args,
    )


# Doors that are not operations: they read their own arguments.
_DOORS = ("hook", "serve")


def _door_command(argv: list[str]) -> int | None:
    """Run `lcm hook ...` / `lcm serve ...` (global options may stand anywhere); None otherwise."""
    globals_: dict[str, Any] = {}
    rest: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        name, eq, inline = token.partition("=")
        if name in GLOBAL_OPTIONS and name not in HELP_FLAGS + VERSION_FLAGS:
            if not GLOBAL_OPTIONS[name]:
                globals_[name] = True
            elif eq:
                globals_[name] = inline
            elif index < len(argv):
                globals_[name] = argv[index]
                index += 1
            continue
        rest.append(token)
    if not rest or rest[0] not in _DOORS:
        return None
    if any(t in VERSION_FLAGS for t in rest):
        sys.stdout.write(_version_line(globals_.get("--pretty") is True))
        return 0
    if any(t in HELP_FLAGS for t in rest):
        return _typer([rest[0], "--help"])
    if rest[0] == "hook":
        from lcm_cli.commands.hook import main_hook

        return main_hook(rest[1:], globals_)
    from lcm_cli.commands.serve import main_serve

    return main_serve(rest[1:], globals_)


def _call(parsed: Parsed, fallback: Any) -> int:
    """Run the parsed command's operation and emit its outcome (exit status from the result)."""
    from lcm_cli.commands.door import run_cli

    assert parsed.command is not None
    fallback.format = parsed.globals.get("--format", "json")
    return run_cli(
        parsed.command.name,
        parsed.params,
        args=parsed.args,
        db=parsed.globals.get("--db"),
        config=parsed.globals.get("--config"),
        openclaw_dir=parsed.globals.get("--openclaw-dir"),
        output=fallback,
        output_format=fallback.format,
    )


def _canonical(parsed: Parsed) -> list[str]:
    """argv in click's order: global options, then the command words and arguments."""
    out: list[str] = []
    for name, value in parsed.globals.items():
        out += [name] if value is True else [name, value]
    return out + list(parsed.words) + list(parsed.args)


def _typer(argv: list[str], *, completion: bool = False) -> int:
    """Hand argv to the typer app (help, completion, `lcm commands`)."""
    import typer
    import typer.main
    from typer._click.exceptions import UsageError  # typer 0.28 vendors click

    command = typer.main.get_command(build_app())
    if completion:
        try:
            command.main(argv, prog_name="lcm")
        except SystemExit as done:  # click exits after printing completions
            return done.code if isinstance(done.code, int) else 0
        return 0
    try:
        result = command.main(argv, prog_name="lcm", standalone_mode=False)
    except typer.Exit as done:
        return done.exit_code or 0
    except UsageError as exc:
        raise invalid_argument(exc.format_message()) from None
    except typer.Abort:
        raise LcmError("INTERNAL_ERROR", "Aborted.") from None
    # With standalone_mode off, click returns the exit code of --help and friends.
    return result if isinstance(result, int) else 0
