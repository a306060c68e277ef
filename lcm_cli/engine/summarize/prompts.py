"""Depth-aware prompt templates for model-backed summarizers (docs/reference/engine.md §5.5).

The builtin templates ship as package data (``templates/<name>.tmpl``). A user overrides
one by placing a file of the same name in the override folder:
``$LCM_PROMPTS_DIR`` when set, else ``<platformdirs user_config_dir("lcm")>/prompts``.
Templates use ``string.Template`` ``$variables``; unknown ``$names`` in an override are
left as written rather than failing a summarization.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from string import Template
from typing import NamedTuple

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.summarize.base import SummaryRequest

SYSTEM = "system"
LEAF = "leaf"
TEMPLATE_NAMES: tuple[str, ...] = (SYSTEM, LEAF, "condensed-d1", "condensed-d2", "condensed-d3")
SUFFIX = ".tmpl"
PROMPTS_DIR_ENV = "LCM_PROMPTS_DIR"

#: The variables each template may use, with a one-line meaning (shown by `prompts show`).
VARIABLES: dict[str, str] = {
    "target_tokens": "the summary length to aim for, in tokens",
    "source_text": "the messages or summaries to summarize",
    "previous_context": "earlier summary text for continuity, or (none)",
    "previous_context_block": "condensed-d1: the previous context with its instruction, or a continuation note",
    "custom_instructions": "operator instructions (customInstructions), or (none)",
    "policy": "leaf: the normal or aggressive summary policy block",
    "depth": "depth of the summary being written (0 = leaf)",
}

NORMAL_POLICY = (
    "Normal summary policy:\n"
    "- Keep decisions and their rationale, constraints, tasks that are still active, and the technical\n"
    "  details (names, values, paths, commands, errors) needed to continue.\n"
    "- Drop repetition, pleasantries and filler."
)
AGGRESSIVE_POLICY = (
    "Aggressive summary policy:\n"
    "- Keep only durable facts and the current state of the task.\n"
    "- Drop examples, repetition and narrative.\n"
    "- Still keep TODOs, blockers, decisions and constraints."
)
_WITH_PREVIOUS = (
    "The previous context below was already summarized; do not repeat what it says unless it changed.\n"
    "<previous_context>\n{context}\n</previous_context>"
)
_WITHOUT_PREVIOUS = (
    "There is no earlier summary: focus on what this part of the conversation continues and leaves open."
)


class PromptTemplate(NamedTuple):
    """One effective template: its text, where it comes from and the file behind it."""

    name: str
    text: str
    source: str  # "builtin" | "override"
    path: str


def check_name(name: str) -> str:
    """``name`` itself when it is a known template name, else ``PROMPT_NOT_FOUND``."""
    stem = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name
    if stem not in TEMPLATE_NAMES:
        raise LcmError(
            "PROMPT_NOT_FOUND",
            f"No prompt template named {name!r}. Run `lcm prompts list` to see the names "
            f"({', '.join(TEMPLATE_NAMES)}).",
            {"name": name, "known": list(TEMPLATE_NAMES)},
        )
    return stem


def builtin_dir() -> Path:
    """The folder of the builtin templates inside the installed package."""
    return Path(__file__).with_name("templates")


@cache
def builtin_text(name: str) -> str:
    """The builtin text of template ``name``."""
    return (builtin_dir() / f"{check_name(name)}{SUFFIX}").read_text(encoding="utf-8")


def override_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where user overrides live: ``$LCM_PROMPTS_DIR`` or the platformdirs config dir."""
    env = os.environ if env is None else env
    configured = env.get(PROMPTS_DIR_ENV, "").strip()
    if configured:
        return Path(os.path.expanduser(configured))
    import platformdirs

    return Path(platformdirs.user_config_dir("lcm")) / "prompts"


def load_template(name: str, env: Mapping[str, str] | None = None) -> PromptTemplate:
    """The effective template ``name``: the override file when it exists, else the builtin."""
    stem = check_name(name)
    override = override_dir(env) / f"{stem}{SUFFIX}"
    try:
        text = override.read_text(encoding="utf-8")
    except FileNotFoundError:
        return PromptTemplate(stem, builtin_text(stem), "builtin", str(builtin_dir() / f"{stem}{SUFFIX}"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LcmError(
            "PROMPT_UNREADABLE",
            f"Cannot read the prompt override {override}: {exc}. Fix or remove the file "
            "(`lcm prompts diff` compares it with the builtin).",
            {"path": str(override)},
        ) from None
    return PromptTemplate(stem, text, "override", str(override))


def template_name_for_depth(depth: int) -> str:
    """``leaf`` for depth 0, ``condensed-d1``/``-d2`` for 1 and 2, ``condensed-d3`` for 3+."""
    if depth <= 0:
        return LEAF
    return f"condensed-d{min(depth, 3)}"


def variables_for(request: SummaryRequest) -> dict[str, str]:
    """The ``$variables`` a summary request fills in."""
    context = (request.previous_context or "").strip()
    custom = request.custom_instructions.strip()
    return {
        "target_tokens": str(request.target_tokens),
        "source_text": request.source_text,
        "previous_context": context or "(none)",
        "previous_context_block": _WITH_PREVIOUS.format(context=context) if context else _WITHOUT_PREVIOUS,
        "custom_instructions": custom or "(none)",
        "policy": AGGRESSIVE_POLICY if request.aggressive else NORMAL_POLICY,
        "depth": str(request.depth),
    }


def render(text: str, variables: Mapping[str, str]) -> str:
    """Fill ``$variables`` in ``text``; unknown ones stay as written."""
    return Template(text).safe_substitute(variables)


def render_summary_prompt(request: SummaryRequest, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(system prompt, user prompt)`` for one summary request, overrides applied."""
    variables = variables_for(request)
    system = render(load_template(SYSTEM, env).text, variables).strip()
    user = render(load_template(template_name_for_depth(request.depth), env).text, variables).strip()
    return system, user
