"""The command tree of the CLI door, read from the declarations alone (no typer).

:func:`command_tree` turns :data:`~lcm_cli.engine.core.registry.OPERATIONS`,
:data:`~lcm_cli.commands.specs.DOOR_COMMANDS` and the group table into the tree that
`lcm --help` shows; the typer app (:mod:`lcm_cli.commands.app`) and `lcm commands` (the
machine-readable inventory built here) are both made from it, with each option's help
and metavar resolved once by :func:`option_help` and :func:`option_metavar`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lcm_cli.commands.specs import COMMAND_SECTIONS, DOOR_COMMANDS, GROUPS
from lcm_cli.engine.core.params import PARAMS, Param
from lcm_cli.engine.core.registry import (
    ARGUMENTS,
    OPERATIONS,
    REFERENCE_COMMANDS,
    Argument,
    OpSpec,
    command_words,
)


class Node(NamedTuple):
    """One command of the tree: its words, what it runs (None: a group only) and its subcommands."""

    words: tuple[str, ...]
    name: str | None  # the operation or door command it runs
    spec: OpSpec | None
    children: tuple[Node, ...] = ()

    @property
    def help(self) -> str:
        """The command's help text (without its example)."""
        return self.spec.help if self.spec is not None else GROUPS[self.words[-1]]


def command_tree() -> list[Node]:
    """The top-level commands in `lcm --help` order, each group with its subcommands."""
    by_words: dict[tuple[str, ...], tuple[str, OpSpec]] = {
        command_words(name, spec): (name, spec) for name, spec in OPERATIONS.items()
    }
    by_words.update({(word,): (word, spec) for word, spec in DOOR_COMMANDS.items()})
    nodes = []
    for word in (word for words in COMMAND_SECTIONS.values() for word in words):
        children = tuple(
            Node(words, *by_words[words]) for words in by_words if len(words) == 2 and words[0] == word
        )
        name, spec = by_words.get((word,), (None, None))
        nodes.append(Node((word,), name, spec, children))
    return nodes


def runnable() -> list[Node]:
    """Every command that runs something, in help order (`lcm backup` runs and is a group)."""
    out: list[Node] = []
    for node in command_tree():
        if node.spec is not None:
            out.append(node)
        out += list(node.children)
    return out


def option_help(spec: OpSpec, field: str) -> str:
    """The help of a field or argument as this command words it."""
    if spec.param_help and field in spec.param_help:
        return spec.param_help[field]
    if field in spec.args:
        return ARGUMENTS[field].help
    return PARAMS[field].help


def option_metavar(spec: OpSpec, field: str) -> str:
    """The metavar of a field or argument as this command shows it ('' for a flag)."""
    if spec.metavars and field in spec.metavars:
        return spec.metavars[field]
    if field in spec.args:
        return ARGUMENTS.get(field, Argument(field.upper(), "")).metavar
    return PARAMS[field].metavar


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


# Time inputs of lcm's own commands read one grammar (timefilter.parse_when): "when".
_WHEN_FIELDS = frozenset(("after", "before", "between", "recency", "since", "prune_before"))


def _describe_option(param: Param[Any], help_text: str, command: str | None = None) -> dict[str, Any]:
    """One option as `lcm commands` lists it.

    ``type`` is what one value is: ``boolean`` (a bare flag), ``integer``, ``string`` (an
    ``enum`` lists the choices) or ``json`` (a JSON value given as its text); a repeatable
    option gives one value per use (``repeatable``). ``format: when`` is lcm's time
    grammar (a timestamp, a date or a duration back from now).
    """
    entry: dict[str, Any] = {"name": param.option}
    schema = param.schema
    if param.flag:
        entry.update(type="boolean", default=schema.get("default", False))
    elif "oneOf" in schema:
        entry["type"] = "json"
    else:
        value = schema.get("items", {}) if param.repeatable else schema
        entry["type"] = value.get("type", "string")
        entry.update({k: value[k] for k in ("enum", "minimum", "maximum", "pattern", "format") if k in value})
        if "default" in schema:
            entry["default"] = schema["default"]
    if param.name in _WHEN_FIELDS and command is not None and command not in REFERENCE_COMMANDS:
        entry.pop("pattern", None)
        entry["format"] = "when"
    if param.repeatable:
        entry["repeatable"] = True
    entry["help"] = help_text
    return entry


def _writes(node: Node) -> dict[str, Any]:
    """What running the command writes, read off its declaration.

    ``database`` (lcm.db), ``config`` (openclaw.json) and ``files``: the options that name
    a file or folder it writes (their help gives the default when the option is left out).
    `lcm hook` and `lcm serve` write what the operations they run write.
    """
    spec = node.spec
    assert spec is not None
    if node.words[0] in ("hook", "serve"):
        return {"database": True, "config": True, "files": [], "byOperation": True}
    writes = node.name in OPERATIONS and spec.writes
    return {
        "database": writes and spec.opens_db,
        "config": writes and not spec.opens_db,
        "files": [PARAMS[field].option for field in spec.outputs or ()],
    }


def _section(words: tuple[str, ...]) -> str:
    return next(title for title, top in COMMAND_SECTIONS.items() if words[0] in top)


def build_inventory() -> dict[str, Any]:
    """`lcm commands`: every runnable command with its arguments, options, operation and example."""
    from lcm_cli.commands.argv import GLOBALS

    commands: list[dict[str, Any]] = []
    for node in runnable():
        spec = node.spec
        assert spec is not None
        is_operation = node.name in OPERATIONS
        entry: dict[str, Any] = {
            "command": " ".join(node.words),
            "operation": node.name if is_operation else None,
            "help": _first_paragraph(spec.help),
            "arguments": [
                {
                    "name": option_metavar(spec, arg),
                    "type": "string",
                    "required": is_operation,
                    "help": option_help(spec, arg),
                }
                for arg in spec.args
            ],
            "options": [_describe_option(PARAMS[f], option_help(spec, f), node.name) for f in spec.options],
            "example": spec.example,
            "section": _section(node.words),
            "writes": _writes(node),
        }
        for option, field in zip(entry["options"], spec.options):
            if spec.outputs and field in spec.outputs:
                # The path lcm writes ("file", or "directory" of files): never the database or config.
                option["output"] = spec.outputs[field]
        if is_operation:
            entry["needsSelector"] = spec.needs_selector
            entry["readsDatabase"] = spec.opens_db
            # A writer that takes --apply only previews without it.
            entry["dryRunByDefault"] = "apply" in spec.options
        elif spec.interactive:
            entry["interactive"] = True  # takes over the terminal: not for scripts or agents
        commands.append(entry)
    return {"globalOptions": [_describe_option(p, p.help) for p in GLOBALS], "commands": commands}
