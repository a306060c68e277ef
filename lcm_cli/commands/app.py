"""The typer app, generated from the operation manifest: `--help` and shell completion.

Nothing here is written per command. :func:`build_command` walks
:func:`lcm_cli.commands.catalog.command_tree` and makes typer's own command, group,
option and argument classes from the declarations (the operation's help and example,
each field's option spelling, metavar and help), so typer renders help and completion
in its usual style. A command run through this app takes the CLI door's own path
(:func:`lcm_cli.cli.run_parsed`): the same validation, output and exit status as the
typer-free fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
import typer.main
from typer._click.globals import get_current_context  # typer 0.28 vendors click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from lcm_cli.commands.argv import GLOBALS, GLOBALS_EPILOG, ROOT_HELP, CommandShape, Parsed
from lcm_cli.commands.catalog import Node, command_tree, option_help, option_metavar
from lcm_cli.commands.specs import COMMAND_SECTIONS
from lcm_cli.engine.core.params import PARAMS, Param
from lcm_cli.engine.core.registry import ARGUMENTS, OPERATIONS, OpSpec

_HELP_OPTIONS = {"help_option_names": ["--help", "-h"]}


def _option(param: Param[Any], help_text: str, metavar: str, *aliases: str) -> TyperOption:
    """A click option for one declared field (values stay text: the engine validates them)."""
    decls = [param.option, *aliases, param.name]
    if param.flag:
        return TyperOption(param_decls=decls, is_flag=True, default=False, help=help_text)
    return TyperOption(
        param_decls=decls,
        type=str,
        default=None,
        multiple=param.repeatable,
        metavar=metavar or None,
        help=help_text,
    )


def _params(spec: OpSpec, *, required: bool) -> list[Any]:
    """The arguments, then the options, of one command, as its declaration words them."""
    params: list[Any] = [
        TyperArgument(
            param_decls=[arg],
            type=str,
            required=required,
            default=None,
            metavar=option_metavar(spec, arg),
            help=option_help(spec, arg),
        )
        for arg in spec.args
    ]
    params += [
        _option(PARAMS[field], option_help(spec, field), option_metavar(spec, field))
        for field in spec.options
    ]
    return params


def _help(spec: OpSpec) -> str:
    return f"{spec.help}\n\nExample: {spec.example}" if spec.example else spec.help


def _one_line(node: Node) -> str:
    """The command's one-line help, whole: lists wrap it rather than cut it at '...'."""
    return node.help.strip().split("\n")[0]


class _SectionedGroup(TyperGroup):
    """The root command: `lcm --help` lists the commands under the sections they are declared in."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        width = max(len(word) for word in self.commands)  # one column across the sections
        for title, words in COMMAND_SECTIONS.items():
            rows = [(word.ljust(width), self.commands[word].get_short_help_str()) for word in words]
            with formatter.section(title):
                formatter.write_dl(rows)


def _root_params(ctx: Any) -> dict[str, Any]:
    return ctx.find_root().params  # type: ignore[no-any-return]


def _run_operation(node: Node, values: dict[str, Any]) -> None:
    """Run a command the way the fast path does, from the values click parsed."""
    from lcm_cli.commands.door import run_parsed, validate_parsed
    from lcm_cli.render.output import Output

    assert node.name is not None and node.spec is not None
    spec = node.spec
    params: dict[str, Any] = {}
    for field in spec.options:
        value = values.get(field)
        if isinstance(value, tuple):
            value = list(value)
        if value not in (None, False, []):
            params[field] = value
    root = _root_params(get_current_context())
    globals_: dict[str, Any] = {
        p.option: root[p.name]
        for p in GLOBALS
        if p.name != "version" and root.get(p.name) not in (None, False)
    }
    shape = CommandShape(node.name, {PARAMS[f].option: f for f in spec.options}, spec.args)
    args = tuple(values[a] for a in spec.args if values.get(a) is not None)  # a door's may be left out
    parsed = Parsed(shape, node.words, params, args, globals_)
    validate_parsed(parsed)
    status = run_parsed(parsed, Output(pretty=globals_.get("--pretty") is True))
    if status:
        raise typer.Exit(status)


def _callback(node: Node) -> Callable[..., None]:
    def run(**values: Any) -> None:
        ctx = get_current_context()
        if node.children and ctx.invoked_subcommand is not None:
            return  # `lcm backup list`: the group's own operation does not run
        _run_operation(node, values)  # every command, hook and serve too, takes the parsed path

    return run


def _command(node: Node) -> Any:
    """The click command (or group) of one node of the tree."""
    spec = node.spec
    if not node.children:
        assert spec is not None
        return TyperCommand(
            node.words[-1],
            callback=_callback(node),
            params=_params(spec, required=node.name in OPERATIONS),
            help=_help(spec),
            short_help=_one_line(node),
            epilog=GLOBALS_EPILOG,
            rich_markup_mode=None,
            # A JSON argument may be a negative number: click must not read `-1` as an option.
            context_settings={"ignore_unknown_options": any(ARGUMENTS[a].json for a in spec.args)},
        )
    return TyperGroup(
        name=node.words[-1],
        commands={child.words[-1]: _command(child) for child in node.children},
        callback=_callback(node) if spec is not None else None,
        params=_params(spec, required=True) if spec is not None else [],
        help=_help(spec) if spec is not None else node.help,
        short_help=_one_line(node),
        epilog=GLOBALS_EPILOG if spec is not None else None,
        invoke_without_command=spec is not None,
        no_args_is_help=spec is None,
        rich_markup_mode=None,
    )


def build_command() -> TyperGroup:
    """`lcm` as a click command tree: global options, completion, every command."""
    root_params: list[Any] = [
        _option(p, p.help, p.metavar, *(("-v",) if p.name == "version" else ())) for p in GLOBALS
    ]
    root_params += list(typer.main.get_install_completion_arguments())
    return _SectionedGroup(
        name="lcm",
        commands={node.words[0]: _command(node) for node in command_tree()},
        callback=lambda **_: None,
        params=root_params,
        help=ROOT_HELP,
        no_args_is_help=True,
        context_settings=_HELP_OPTIONS,
        rich_markup_mode=None,
    )
