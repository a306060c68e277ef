"""Reading argv the way the reference `lcm` does, from the operation table alone.

The reference accepts options anywhere (before, between or after the command words) and
reports problems in a fixed order: unknown option or missing value, then unknown command
or wrong argument count, then an option the command does not take. This module does that
without importing typer, so a JSON read costs no more than its query; typer is loaded
only for help and completion. The typer app (:mod:`lcm_cli.commands.app`) is generated
from the same declarations, so there is nothing to keep in step.
"""

from __future__ import annotations

import json
import os
import sys

from lcm_cli import TYPE_CHECKING
from lcm_cli.commands.specs import DOOR_COMMANDS
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import (
    ALL_PAGES,
    FIELDS,
    FORMATS,
    NO_HEADERS,
    PARAMS,
    Param,
    option_name,
    unsupported_option,
)
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.registry import (
    ARGUMENTS,
    OPERATIONS,
    REFERENCE_COMMANDS,
    command_words,
)
from lcm_cli.engine.core.suggest import suggest

if TYPE_CHECKING:
    from typing import Any

ROOT_HELP = (
    "Inspect and maintain an agent's Lossless Context Management database (lcm.db).\n\n"
    "JSON on stdout by default; errors as one JSON object on stderr."
)
# Shown under every command's help: global options are accepted anywhere on the line.
GLOBALS_EPILOG = (
    "Global options work anywhere on the line: --db PATH, --config PATH, --openclaw-dir DIR, --agent ID, "
    f"--format {'|'.join(FORMATS)}, --pretty, --fields A,B.C, --all (see `lcm --help`)."
)
# The options of `lcm` itself, accepted before, between or after the command words.
GLOBALS: tuple[Param[object], ...] = (
    Param(
        "db",
        {"type": "array", "items": {"type": "string"}},
        "lcm.db path (beats LCM_DATABASE_PATH and plugin config); repeat it or give a glob to read "
        "several databases at once (status, conversations list, grep, doctor, backup list).",
        metavar="PATH",
    ),
    Param("config", {"type": "string"}, "openclaw.json path (beats OPENCLAW_CONFIG_PATH).", metavar="PATH"),
    Param(
        "openclaw_dir",
        {"type": "array", "items": {"type": "string"}},
        "OpenClaw state dir (beats LCM_OPENCLAW_DIR, OPENCLAW_STATE_DIR); repeat it to read each "
        "dir's database at once.",
        metavar="DIR",
    ),
    Param(
        "agent",
        {"type": "string"},
        "Read as this agent (beats LCM_AGENT_ID): under agentScope agent or session-family, history "
        "reads see only its conversations (docs/agents.md).",
        metavar="ID",
    ),
    Param(
        "format",
        {"type": "string", "enum": list(FORMATS), "default": "json"},
        "json (default; on a terminal, $LCM_FORMAT if set), table (rich), tsv (the reference's report "
        "layout), ndjson (a list: one item a line), csv or tsv-plain (a header and one line per record).",
        metavar="FORMAT",
    ),
    Param("pretty", {"type": "boolean", "default": False}, "Indent JSON output."),
    FIELDS,
    ALL_PAGES,
    NO_HEADERS,
    Param("version", {"type": "boolean", "default": False}, "Print the version as JSON and exit."),
)
VERSION_FLAGS = ("--version", "-v")
HELP_FLAGS = ("--help", "-h")
COMPLETION_FLAGS = ("--show-completion", "--install-completion")
# Global option -> takes a value?
GLOBAL_OPTIONS: dict[str, bool] = {
    **{p.option: not p.flag for p in GLOBALS},
    **dict.fromkeys(VERSION_FLAGS + HELP_FLAGS, False),
}


def is_flag(field: str) -> bool:
    """True for request fields given as bare flags."""
    return PARAMS[field].flag


class CommandShape(Record):
    """What argv may hold for one command: its options (name -> field) and argument names."""

    name: str
    options: dict[str, str]
    args: tuple[str, ...]


def command_table() -> dict[tuple[str, ...], CommandShape]:
    """Every command's words mapped to its shape, from the operation registry."""
    table = {
        command_words(name, spec): CommandShape(name, {option_name(f): f for f in spec.options}, spec.args)
        for name, spec in OPERATIONS.items()
    }
    for word, spec in DOOR_COMMANDS.items():
        table[(word,)] = CommandShape(word, {option_name(f): f for f in spec.options}, spec.args)
    return table


class Parsed(Record):
    """argv, read: the command, its request values and arguments, and the global options."""

    command: CommandShape | None
    words: tuple[str, ...]
    params: dict[str, Any]
    args: tuple[str, ...]
    globals: dict[str, Any]
    help: bool = False
    version: bool = False


def _is_json_number(token: str) -> bool:
    try:
        value = json.loads(token)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _takes_json_at(table: dict[tuple[str, ...], CommandShape], words: list[str], position: int) -> bool:
    """True when word ``position`` of ``words`` is a command's declared JSON argument."""
    for depth in (2, 1):
        shape = table.get(tuple(words[:depth]))
        if shape is not None:
            args = shape.args
            index = position - depth
            return len(words) - depth == len(args) and 0 <= index < len(args) and ARGUMENTS[args[index]].json
    return False


#: A person's default format, read only when stdout is a terminal: piped output, which
#: agents and scripts read, stays JSON unless ``--format`` says otherwise.
FORMAT_VARIABLE = "LCM_FORMAT"


def terminal_format() -> str | None:
    """The format ``$LCM_FORMAT`` names when stdout is a terminal, else None."""
    value = os.environ.get(FORMAT_VARIABLE, "").strip()
    try:
        on_terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):
        on_terminal = False
    if not value or not on_terminal:
        return None
    if value not in FORMATS:
        raise invalid_argument(
            f"{FORMAT_VARIABLE}={value!r} is not an output format: set it to one of {', '.join(FORMATS)}, "
            "or unset it.",
            {"variable": FORMAT_VARIABLE, "value": value, "allowed": list(FORMATS)},
        )
    return value


def parse_argv(argv: list[str]) -> Parsed:
    """Read ``argv`` against the command table; raise the reference's first error."""
    table = command_table()
    every_option: dict[str, bool] = dict(GLOBAL_OPTIONS)
    for shape in table.values():
        every_option.update({name: not is_flag(field) for name, field in shape.options.items()})
    try:
        positionals, negatives, options = _tokens(argv, every_option)
    except _UnknownOption as unknown:
        raise _unknown_option(unknown.name, argv, table, every_option) from None
    if negatives:
        positionals = _with_negatives(table, positionals, negatives)

    words = [t for _, t in positionals]
    names = {n for n, _ in options}
    version = bool(names & set(VERSION_FLAGS))
    help_ = bool(names & set(HELP_FLAGS)) and not version  # --version wins over --help
    globals_ = _globals(options)
    if words[:1] == ["help"] and len(words) > 1 and ("help",) not in table:
        # `lcm help CMD...` is `lcm CMD... --help`, an improvement on the reference, which
        # answers INVALID_COMMAND; a bare `lcm help` keeps the reference's answer.
        words, help_ = words[1:], not version
    if not words:
        return Parsed(None, (), {}, (), globals_, help=not version, version=version)
    path, command = _command_of(table, words)
    if command is None:
        return _group_help(table, words, help_, globals_)
    if help_:
        return Parsed(command, path, {}, (), globals_, help=True)
    for name in set(globals_) & set(command.options):
        del globals_[name]  # the command's own option of that spelling (`summaries rewrite --all`)
    if "--format" not in globals_ and command.name in OPERATIONS and (chosen := terminal_format()):
        globals_["--format"] = chosen
    args = tuple(words[len(path) :])
    # A door's argument may be left out (`lcm hook --list`); an operation's may not.
    if len(args) > len(command.args) or (len(args) < len(command.args) and command.name in OPERATIONS):
        message = (
            f"`lcm {' '.join(path)}` takes {len(command.args)} argument(s), got {len(args)}. "
            f"Run `lcm {' '.join(path)} --help`."
        )
        # `lcm backup lst`: a mistyped subcommand of a command that is also a group.
        subcommands = [p[1] for p in table if len(p) == 2 and p[0] == path[0]]
        close = suggest(args[0], subcommands) if len(path) == 1 and args else []
        if close:
            shown = [f"lcm {path[0]} {c}" for c in close]
            raise LcmError(
                "INVALID_COMMAND", f"{message} Did you mean `{'` or `'.join(shown)}`?", {"suggestions": shown}
            )
        raise LcmError("INVALID_COMMAND", message)
    return Parsed(command, path, _command_params(command, path, options), args, globals_, version=version)


def _globals(options: list[tuple[str, Any]]) -> dict[str, Any]:
    """The global options given: one value each, except a repeatable one given more than once
    (``--db a --db b``: a fleet), which keeps every value in a list."""
    repeatable = {p.option for p in GLOBALS if p.repeatable}
    found: dict[str, Any] = {}
    for name, value in options:
        if name not in GLOBAL_OPTIONS or name in VERSION_FLAGS + HELP_FLAGS:
            continue
        if name in repeatable and name in found:
            before = found[name]
            found[name] = [*before, value] if isinstance(before, list) else [before, value]
        else:
            found[name] = value
    return found


_Positional = tuple[int, str]  # (1-based position in argv, the word)


class _UnknownOption(Exception):
    """An option no command declares (turned into the error by :func:`_unknown_option`)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _unknown_option(
    name: str, argv: list[str], table: dict[tuple[str, ...], CommandShape], every_option: dict[str, bool]
) -> LcmError:
    """The reference's unknown-option error; the closest options the command takes ride along
    in ``details.suggestions`` (the reference's own commands get them too: an improvement)."""
    message = f"Unknown option '{name}'. Run `lcm --help` for the options."
    words: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = every_option.get(token, False)  # the value of a known option is no command word
        else:
            words.append(token)
    _, command = _command_of(table, words)
    if command is None:
        return invalid_argument(message)
    close = suggest(name, [*command.options, *(p.option for p in GLOBALS)])
    if not close:
        if command.name in REFERENCE_COMMANDS:
            return invalid_argument(message)  # as the reference: no details
        return invalid_argument(message, {"option": name.lstrip("-"), "command": command.name})
    return invalid_argument(
        f"{message} Did you mean {' or '.join(close)}?",
        {"option": name.lstrip("-"), "command": command.name, "suggestions": close},
    )


def _tokens(
    argv: list[str], every_option: dict[str, bool]
) -> tuple[list[_Positional], list[_Positional], list[tuple[str, Any]]]:
    """Split ``argv`` into positional words, tokens that look like negative JSON numbers
    (placed later), and (option, value) pairs in order; flags get True."""
    positionals: list[_Positional] = []
    negatives: list[_Positional] = []
    options: list[tuple[str, Any]] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            positionals.extend((index + i, t) for i, t in enumerate(argv[index:]))
            break
        if not token.startswith("-") or token == "-":
            positionals.append((index, token))
            continue
        name, eq, inline = token.partition("=")
        if name not in every_option:
            if not token.startswith("--") and _is_json_number(token):
                negatives.append((index, token))
                continue
            raise _UnknownOption(name)
        if not every_option[name]:
            if eq:
                raise invalid_argument(f"Option '{name}' does not take a value.")
            options.append((name, True))
            continue
        if eq:
            options.append((name, inline))
            continue
        if index >= len(argv) or (argv[index].startswith("-") and argv[index] != "-"):
            raise invalid_argument(
                f"Option '{name} <value>' needs a value; for a value starting with '-' use {name}=VALUE."
            )
        options.append((name, argv[index]))
        index += 1
    return positionals, negatives, options


def _with_negatives(
    table: dict[tuple[str, ...], CommandShape], positionals: list[_Positional], negatives: list[_Positional]
) -> list[_Positional]:
    """The positionals with the negative number put back in place: a negative JSON number
    is a value only where the command declares a JSON argument, else an unknown option."""
    merged = sorted(positionals + negatives)
    if len(negatives) == 1 and _takes_json_at(table, [t for _, t in merged], merged.index(negatives[0])):
        return merged
    raise invalid_argument(f"Unknown option '{negatives[0][1]}'. Run `lcm --help` for the options.")


def _command_of(
    table: dict[tuple[str, ...], CommandShape], words: list[str]
) -> tuple[tuple[str, ...], CommandShape | None]:
    """The command the leading words name (two words before one), and its path."""
    for depth in (2, 1):
        if tuple(words[:depth]) in table:
            path = tuple(words[:depth])
            return path, table[path]
    return (), None


def _group_help(
    table: dict[tuple[str, ...], CommandShape], words: list[str], help_: bool, globals_: dict[str, Any]
) -> Parsed:
    """Words naming no command: a group's help when asked for, else the reference's error
    (a group without its subcommand, or an unknown command)."""
    groups = {p[0] for p in table if len(p) > 1}
    if words[0] in groups:
        if help_:
            return Parsed(None, (words[0],), {}, (), globals_, help=True)
        if len(words) == 1:
            raise LcmError(
                "INVALID_COMMAND", f"`lcm {words[0]}` needs a subcommand; see `lcm {words[0]} --help`."
            )
    message = f"Unknown command `lcm {' '.join(words)}`. Run `lcm --help` for the commands."
    if words[0] in groups:
        prefix, typed, known = (
            f"lcm {words[0]} ",
            words[1],
            [p[1] for p in table if p[0] == words[0] and len(p) > 1],
        )
    else:
        prefix, typed, known = "lcm ", words[0], sorted({p[0] for p in table})
    close = [prefix + c for c in suggest(typed, known)]
    if len(words) > 1 and words[0] not in groups:
        close = [_with_subcommand(table, c, words[1]) for c in close]
    if not close:
        raise LcmError("INVALID_COMMAND", message)  # as the reference: no details
    raise LcmError(
        "INVALID_COMMAND", f"{message} Did you mean `{'` or `'.join(close)}`?", {"suggestions": close}
    )


def _with_subcommand(table: dict[tuple[str, ...], CommandShape], suggestion: str, typed: str) -> str:
    """`lcm conversation lst` -> `lcm conversations list`: a fixed group completed by the
    (fixed) subcommand typed after it; the group alone when the next word is no subcommand."""
    group = suggestion.removeprefix("lcm ")
    subcommands = [p[1] for p in table if len(p) == 2 and p[0] == group]
    if typed in subcommands:
        return f"{suggestion} {typed}"
    close = suggest(typed, subcommands)
    return f"{suggestion} {close[0]}" if close else suggestion


def _command_params(
    command: CommandShape, path: tuple[str, ...], options: list[tuple[str, Any]]
) -> dict[str, Any]:
    """The command's parameters from its options (global options are not parameters)."""
    params: dict[str, Any] = {}
    for name, value in options:
        if name in GLOBAL_OPTIONS and name not in command.options:
            continue
        field = command.options.get(name)
        if field is None:
            raise unsupported_option(command.name, name, tuple(command.options.values()))
        if PARAMS[field].repeatable:
            params.setdefault(field, []).append(value)
        else:
            params[field] = value  # a repeated option: the last one wins
    return params
