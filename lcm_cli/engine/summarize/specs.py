"""The operation specs of the summary prompt templates.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.render_hints import Render, Text
from lcm_cli.engine.core.spec_parts import NO_HISTORY

_PROMPTS = "lcm_cli.engine.summarize.ops"


def _prompt_text(field: str) -> Render:
    """A prompt is read as a whole: a person wants the text itself, not a cell preview."""
    where = ("path", "overridePath", "builtinPath")
    return Render(text=Text(field, "# {name} ({source}): {where}", where, "(no differences)\n"))


SPECS: dict[str, OpSpec] = {
    "prompts.list": OpSpec(
        _PROMPTS,
        opens_db=False,
        resolves_paths=False,
        summary="The summary prompt templates: builtin or overridden, and where.",
        help=(
            "Every template with its source (builtin or override), its path and its variables.\n\n"
            "Overrides live in $LCM_PROMPTS_DIR, else in the user config dir (lcm/prompts)."
        ),
        example="lcm prompts list --format table",
        render=Render(labels=(("items", "Templates"),)),
        items="items",
        unscoped=NO_HISTORY,
    ),
    "prompts.show": OpSpec(
        _PROMPTS,
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="The effective text of one prompt template.",
        help="The effective text of one template (the override when there is one).",
        example="lcm prompts show leaf",
        render=_prompt_text("text"),
        unscoped=NO_HISTORY,
    ),
    "prompts.export": OpSpec(
        _PROMPTS,
        ("out", "force"),
        opens_db=False,
        resolves_paths=False,
        summary="Copy the builtin templates into the override folder to edit them.",
        help=(
            "Copy the builtin templates into the override folder, ready to edit.\n\n"
            "Existing files are kept unless --force; every file is written atomically."
        ),
        example="lcm prompts export --out ./my-prompts",
        param_help={
            "out": "Write here instead of the override folder.",
            "force": "Overwrite templates that already exist.",
        },
        metavars={"out": "DIR"},
        outputs={"out": "directory"},
        unscoped=NO_HISTORY,
    ),
    "prompts.diff": OpSpec(
        _PROMPTS,
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="Unified diff of an override against the builtin template.",
        help="Unified diff of a template's override against the builtin (empty without an override).",
        example="lcm prompts diff condensed-d1",
        render=_prompt_text("diff"),
        unscoped=NO_HISTORY,
    ),
    "prompts.render": OpSpec(
        _PROMPTS,
        ("var", "source_file"),
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="Fill a prompt template with sample or given values.",
        help=(
            "Fill a template with sample values, or with --var and --source-file, as a model would see it."
        ),
        example="lcm prompts render leaf --var target_tokens=800 --var aggressive=true",
        render=_prompt_text("text"),
        unscoped=NO_HISTORY,
    ),
}
