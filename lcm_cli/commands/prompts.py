"""`lcm prompts list|show|export|diff|render`: the summary prompt templates and their overrides."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG
from lcm_cli.commands.runner import run

prompts = typer.Typer(
    help="Summary prompt templates (leaf, condensed-d1..d3, system): list, show, export, diff, render.",
    no_args_is_help=True,
)

Name = Annotated[
    str,
    typer.Argument(
        metavar="NAME", help="Template name: system, leaf, condensed-d1, condensed-d2, condensed-d3."
    ),
]


@prompts.command("list", epilog=GLOBALS_EPILOG)
def prompts_list(ctx: typer.Context) -> None:
    """Every template with its source (builtin or override), its path and its variables.

    Overrides live in $LCM_PROMPTS_DIR, else in the user config dir (lcm/prompts).

    Example: lcm prompts list --format table
    """
    run(ctx, "prompts.list", {})


@prompts.command("show", epilog=GLOBALS_EPILOG)
def prompts_show(ctx: typer.Context, name: Name) -> None:
    """The effective text of one template (the override when there is one).

    Example: lcm prompts show leaf
    """
    run(ctx, "prompts.show", {}, args=(name,))


@prompts.command("export", epilog=GLOBALS_EPILOG)
def prompts_export(
    ctx: typer.Context,
    out: Annotated[
        Optional[str],
        typer.Option("--out", metavar="DIR", help="Write here instead of the override folder."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite templates that already exist.")] = False,
) -> None:
    """Copy the builtin templates into the override folder, ready to edit.

    Existing files are kept unless --force; every file is written atomically.

    Example: lcm prompts export --out ./my-prompts
    """
    run(ctx, "prompts.export", {"out": out, "force": force})


@prompts.command("diff", epilog=GLOBALS_EPILOG)
def prompts_diff(ctx: typer.Context, name: Name) -> None:
    """Unified diff of a template's override against the builtin (empty without an override).

    Example: lcm prompts diff condensed-d1
    """
    run(ctx, "prompts.diff", {}, args=(name,))


@prompts.command("render", epilog=GLOBALS_EPILOG)
def prompts_render(
    ctx: typer.Context,
    name: Name,
    var: Annotated[
        Optional[list[str]],
        typer.Option(
            "--var",
            metavar="NAME=VALUE",
            help="Set a template variable (target_tokens, previous_context, custom_instructions, "
            "source_text, aggressive, ...); repeatable.",
        ),
    ] = None,
    source_file: Annotated[
        Optional[str],
        typer.Option("--source-file", metavar="PATH", help="Use this UTF-8 file as $source_text."),
    ] = None,
) -> None:
    """Fill a template with sample values, or with --var and --source-file, as a model would see it.

    Example: lcm prompts render leaf --var target_tokens=800 --var aggressive=true
    """
    run(ctx, "prompts.render", {"var": var or [], "source_file": source_file}, args=(name,))
