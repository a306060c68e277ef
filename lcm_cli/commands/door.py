"""What every door does after parsing: call the operation, deliver its outcome, exit alike.

A door (the CLI fast path, the typer app, `lcm hook`, `lcm serve`) parses its own input,
then ends here: :func:`lcm_cli.engine.api.invoke` gives the envelope, the exit status and
the follow-ups of a successful call, and this module turns them into the door's output in
one way for all of them. The exit status comes from the operation's result (``lcm doctor
--fail-on`` findings, ``migrate-sessions`` failed files); an error's comes from its code
(:mod:`lcm_cli.engine.core.exit_codes`). Follow-ups are run by a warm door (`lcm serve`) and
left undone by a cold one, whose recorded state waits for the next call that handles it.

The CLI doors own the process's stdin: :func:`cli_stdin` reads it for an operation that
takes messages as text, so no operation ever reads a door's stream.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.commands.argv import Parsed
from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.params import ROW_FORMATS
from lcm_cli.engine.core.registry import OPERATIONS

if TYPE_CHECKING:
    from typing import IO, Any, TextIO


def cli_stdin(name: str, params: Mapping[str, Any], stdin: IO[bytes] | None = None) -> bytes | None:
    """The bytes the CLI door hands an operation that takes messages from its stdin, else None.

    Read only when the call gives no ``message``/``messages`` and no ``--file`` other than
    ``-``; a terminal is not read unless ``--file -`` asks for it (the operation then says
    how to pass the messages). At most ``LCM_MAX_INPUT_BYTES`` are read (``INPUT_TOO_LARGE``).
    """
    from lcm_cli.engine.core.limits import read_capped

    spec = OPERATIONS.get(name)
    if spec is None or not spec.stdin:
        return None
    if params.get("message") is not None or params.get("messages") is not None:
        return None
    files = params.get("file") or []
    if isinstance(files, str):
        files = [files]
    if list(files) not in ([], ["-"]):
        return None
    if stdin is None:
        if not files and sys.stdin.isatty():
            return None
        stdin = sys.stdin.buffer
    return read_capped(stdin, "stdin")


def request_params(parsed: Parsed) -> dict[str, Any]:
    """The command's request fields plus ``--fields``, which every operation takes."""
    params = dict(parsed.params)
    if parsed.globals.get("--fields") is not None:
        params["fields"] = parsed.globals["--fields"]
    return params


def validate_parsed(parsed: Parsed) -> None:
    """Validate a parsed command's request before anything runs (the operation checks it again, cheaply)."""
    from lcm_cli.engine.core.params import validate_request

    if parsed.command is None or parsed.command.name not in OPERATIONS:
        return
    spec = OPERATIONS[parsed.command.name]
    validate_request(
        parsed.command.name,
        spec.options,
        request_params(parsed),
        needs_selector=spec.needs_selector,
        output_format=parsed.globals.get("--format", "json"),
        args=parsed.args,
    )


def run_parsed(parsed: Parsed, output: Any) -> int:
    """Run a validated command of a CLI door (fast path or typer) and print its outcome; the exit status."""
    assert parsed.command is not None
    _path_options(parsed)
    output.format = parsed.globals.get("--format", "json")
    output.headers = not parsed.globals.get("--no-headers")
    if not output.headers and output.format not in ROW_FORMATS:
        raise invalid_argument(
            f"--no-headers applies to --format csv or tsv-plain; --format {output.format} has no header "
            "line to leave out.",
            {"option": "no-headers", "format": output.format},
        )
    if parsed.command.name == "commands":
        from lcm_cli.commands.catalog import build_inventory

        envelope = {"ok": True, "command": "commands", "data": build_inventory(), "meta": {}}
        if parsed.globals.get("--fields"):
            from lcm_cli.engine.core.projection import apply_fields

            apply_fields(envelope, parsed.globals["--fields"], "commands")
        output.emit(envelope)
        return 0
    if parsed.command.name in ("hook", "serve"):
        return run_door(parsed)
    if parsed.command.name == "browse":
        from lcm_cli.commands.browse import main_browse

        return main_browse(parsed.params, parsed.globals)
    if parsed.globals.get("--all"):
        return run_all(parsed, output)
    return run_cli(
        parsed.command.name,
        request_params(parsed),
        args=parsed.args,
        db=parsed.globals.get("--db"),
        config=parsed.globals.get("--config"),
        openclaw_dir=parsed.globals.get("--openclaw-dir"),
        agent=parsed.globals.get("--agent"),
        output=output,
        output_format=output.format,
    )


def _path_options(parsed: Parsed) -> None:
    """``--db`` and ``--openclaw-dir`` as one path, or a list for a fleet (any door's spelling).

    A door that keeps one database open (`lcm serve`, `lcm browse`) refuses a fleet here;
    an operation refuses it in :func:`lcm_cli.engine.api.invoke` unless it declares one.
    """
    from lcm_cli.engine.fleet import members_of, normalize_path_option, unsupported

    assert parsed.command is not None
    for option in ("--db", "--openclaw-dir"):
        if option in parsed.globals:
            value = normalize_path_option(parsed.globals[option])
            if value is None:
                del parsed.globals[option]
            else:
                parsed.globals[option] = value
    name = parsed.command.name
    if name in OPERATIONS or name in ("hook", "commands"):
        return
    if members_of(parsed.globals.get("--db"), parsed.globals.get("--openclaw-dir"), name) is not None:
        raise unsupported(name, f"`lcm {name}` works on one database.")


def run_door(parsed: Parsed) -> int:
    """`lcm hook` or `lcm serve`: their options checked by their declarations, as every command's are."""
    from lcm_cli.commands.specs import DOOR_COMMANDS
    from lcm_cli.engine.core.params import validate_request

    assert parsed.command is not None
    name = parsed.command.name
    spec = DOOR_COMMANDS[name]
    request = validate_request(name, spec.options, parsed.params)
    # The declaration names the module, as an operation's does; it imports this one.
    door: Any = importlib.import_module(spec.module)
    status: int = door.main_door(request, parsed.args, parsed.globals)
    return status


def run_cli(
    name: str,
    params: Mapping[str, Any],
    *,
    args: tuple[str, ...] = (),
    db: str | list[str] | None = None,
    config: str | None = None,
    openclaw_dir: str | list[str] | None = None,
    agent: str | None = None,
    output: Any,
    output_format: str = "json",
) -> int:
    """Run ``name`` for a CLI door (fast path or typer) and print its outcome; the exit status.

    The CLI doors stream a document-producing operation to stdout, hand it what they read
    from stdin, and show a progress bar for a long operation on a terminal.
    """
    from lcm_cli.engine.api import invoke

    progress = None
    if OPERATIONS[name].long_running:
        from lcm_cli.render.progress import terminal_progress

        progress = terminal_progress()
    try:
        outcome = invoke(
            name,
            params,
            args=args,
            db=db,
            config=config,
            openclaw_dir=openclaw_dir,
            agent=agent,
            output_format=output_format,
            progress=progress,
            stream=_document_stream(),
            stdin=cli_stdin(name, params),
        )
    finally:
        if progress is not None:
            progress.close()
    return deliver(outcome, output)


def _document_stream() -> TextIO:
    """Where a document-producing operation streams: stdout, with its control characters
    shown escaped when stdout is a terminal (a person reads it there; a pipe gets it exact)."""
    if not sys.stdout.isatty():
        return sys.stdout
    from typing import cast  # only here: a JSON run never loads typing

    from lcm_cli.render.visible import VisibleWriter

    return cast("TextIO", VisibleWriter(sys.stdout))


def run_all(parsed: Parsed, output: Any) -> int:
    """`--all`: run a list command page after page, following ``pagination.nextCursor``, and
    stream every item as one NDJSON line; memory holds one page at a time."""
    from lcm_cli.engine.api import invoke
    from lcm_cli.render.output import to_ndjson

    assert parsed.command is not None
    name = parsed.command.name
    spec = OPERATIONS[name]
    if not spec.items:
        raise invalid_argument(
            f"--all streams the items of a list command; `{name}` returns no list. Drop --all.",
            {"option": "all", "command": name},
        )
    if output.format not in ("json", "ndjson", *ROW_FORMATS):
        raise invalid_argument(
            f"--all writes NDJSON, CSV or plain TSV; drop --format {output.format}.", {"option": "all"}
        )
    params = request_params(parsed)
    header: list[str] | None = None
    while True:
        outcome = invoke(
            name,
            params,
            args=parsed.args,
            db=parsed.globals.get("--db"),
            config=parsed.globals.get("--config"),
            openclaw_dir=parsed.globals.get("--openclaw-dir"),
            agent=parsed.globals.get("--agent"),
            output_format="ndjson",
        )
        if output.format in ROW_FORMATS:
            from lcm_cli.render.rows import header_of, records, render_rows

            rows = records(outcome.envelope, spec.items)
            first = header is None
            header = header if header is not None else header_of(rows)  # the first page's columns
            output.stdout.write(render_rows(rows, header, output.format, headers=first and output.headers))
        else:
            output.stdout.write(to_ndjson(outcome.envelope, continuation=False))
        output.stdout.flush()
        pagination = outcome.envelope.get("pagination") or {}
        cursor = pagination.get("nextCursor")
        if "cursor" not in spec.options or not pagination.get("hasMore") or not cursor:
            return exit_status(outcome)
        params["cursor"] = cursor


def deliver(outcome: Any, output: Any) -> int:
    """Print a successful outcome through ``output`` (unless it streamed); its exit status.

    The one place where a result becomes a process exit status (CLI, typer, hook).
    """
    if outcome.envelope.get("streamed"):
        sys.stdout.flush()  # the document itself was the output
    else:
        output.emit(outcome.envelope)
    return exit_status(outcome)


def exit_status(outcome: Any) -> int:
    """The exit status of a successful outcome (0 unless its report asks for more)."""
    status = outcome.exit_status
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


def serve_answer(request_id: Any, outcome: Any) -> dict[str, Any]:
    """The `lcm serve` answer line of a successful outcome.

    ``result`` is exactly the envelope; a non-zero exit status (which a process door
    would exit with) rides beside it as ``exitStatus``, so a host sees the same verdict
    as from `lcm hook` without the envelope changing.
    """
    answer: dict[str, Any] = {"id": request_id, "result": outcome.envelope}
    status = exit_status(outcome)
    if status:
        answer["exitStatus"] = status
    return answer
