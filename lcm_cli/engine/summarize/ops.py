"""`lcm prompts list|show|export|diff|render`: managing the summary prompt templates.

None of these operations opens the database or reads openclaw.json: they work on the
builtin templates shipped with the package and on the override folder
(``$LCM_PROMPTS_DIR`` or ``<user config dir>/lcm/prompts``).
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from pathlib import Path
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import fsync_dir
from lcm_cli.engine.core.params import FORCE, OUT, SOURCE_FILE, VAR, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.summarize.base import SummaryRequest
from lcm_cli.engine.summarize.prompts import (
    SUFFIX,
    TEMPLATE_NAMES,
    VARIABLES,
    builtin_dir,
    builtin_text,
    check_name,
    load_template,
    override_dir,
    render,
    variables_for,
)

_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
SAMPLE_SOURCE = (
    "[2026-07-01 09:12 UTC | user]\n"
    "The nightly export fails with `PermissionError: /var/data/export.csv`. Can you look?\n\n"
    "[2026-07-01 09:14 UTC | assistant]\n"
    "The export job runs as the `backup` user, which cannot write /var/data. I changed the target to\n"
    "/var/data/exports/ (owned by backup) in jobs/export.toml and re-ran it: 1,204 rows written."
)
SAMPLE_PREVIOUS = "Earlier the user set up the nightly export job (jobs/export.toml) for the sales tables."


def _used_variables(text: str) -> list[str]:
    """The ``$variables`` a template text uses, in first-use order."""
    seen: dict[str, None] = {}
    for match in _VARIABLE.finditer(text):
        seen.setdefault(match.group(1) or match.group(2), None)
    return list(seen)


def _describe(name: str, ctx: Context) -> dict[str, Any]:
    template = load_template(name, ctx.env)
    return {
        "name": template.name,
        "source": template.source,
        "path": template.path,
        "builtinPath": str(builtin_dir() / f"{template.name}{SUFFIX}"),
        "variables": _used_variables(template.text),
    }


@operation("prompts.list")
def list_prompts(ctx: Context, req: Request) -> Result:
    """Each template with its source (builtin/override), path and the variables it uses."""
    return Result(
        {
            "overrideDir": str(override_dir(ctx.env)),
            "items": [_describe(name, ctx) for name in TEMPLATE_NAMES],
        }
    )


@operation("prompts.show")
def show_prompt(ctx: Context, req: Request) -> Result:
    """The template text the summarizer would use (the override when there is one)."""
    (name,) = req.args
    template = load_template(name, ctx.env)
    return Result({**_describe(template.name, ctx), "text": template.text})


def _fsync_dir(folder: Path) -> None:
    # Best effort: an override folder may sit on a filesystem that cannot sync one.
    with contextlib.suppress(OSError):
        fsync_dir(str(folder))


@operation("prompts.export")
def export_prompts(ctx: Context, req: Request) -> Result:
    """Write every builtin template into the override folder (or ``--out``).

    Existing files are kept unless ``--force``; each file is written atomically, and never
    over the database, the config or through a symlink (:func:`output_target`).
    """
    from lcm_cli.engine.core.outputs import check_output_folder, output_target, refusal

    out = req[OUT]
    folder = Path(os.path.expanduser(out)) if out else override_dir(ctx.env)
    force = req[FORCE]
    protected = ctx.protected_files()
    check_output_folder(str(folder), protected)  # before mkdir: never a folder at lcm.db-wal
    written: list[str] = []
    skipped: list[str] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        targets = []
        for name in TEMPLATE_NAMES:  # every file checked before the first is written
            path = str(folder / f"{name}{SUFFIX}")
            if not force and os.path.lexists(path) and refusal(path, protected) is None:
                skipped.append(path)
                continue
            targets.append((name, output_target(path, protected=protected, force=force)))
        for name, target in targets:
            target.write(builtin_text(name).encode("utf-8"))
            written.append(target.path)
        _fsync_dir(folder)
    except OSError as exc:
        raise LcmError(
            "PROMPT_WRITE_FAILED",
            f"Cannot write prompt templates into {folder}: {exc.strerror or exc}. "
            "Pass --out with a writable folder or fix its permissions.",
            {"dir": str(folder), "written": written},
        ) from None
    return Result({"dir": str(folder), "written": written, "skipped": skipped, "force": force})


@operation("prompts.diff")
def diff_prompt(ctx: Context, req: Request) -> Result:
    """How the override of one template differs from the builtin (empty when there is none)."""
    (name,) = req.args
    template = load_template(name, ctx.env)
    builtin = builtin_text(template.name)
    builtin_path = str(builtin_dir() / f"{template.name}{SUFFIX}")
    lines = difflib.unified_diff(
        builtin.splitlines(keepends=True),
        template.text.splitlines(keepends=True),
        fromfile=f"builtin/{template.name}{SUFFIX}",
        tofile=template.path if template.source == "override" else f"builtin/{template.name}{SUFFIX}",
    )
    diff = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return Result(
        {
            "name": template.name,
            "source": template.source,
            "overridePath": template.path if template.source == "override" else None,
            "builtinPath": builtin_path,
            "identical": template.text == builtin,
            "diff": diff,
        }
    )


def _parse_vars(pairs: list[str]) -> dict[str, str]:
    known = set(VARIABLES) | {"aggressive"}
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise invalid_argument(
                f"Invalid --var {pair!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(known))}.",
                {"value": pair},
            )
        values[key] = value
    return values


@operation("prompts.render")
def render_prompt(ctx: Context, req: Request) -> Result:
    """The prompt text a model would receive, from sample values or ``--var`` / ``--source-file``."""
    (name,) = req.args
    stem = check_name(name)
    given = _parse_vars(list(req[VAR] or []))
    source_file = req[SOURCE_FILE]
    if source_file:
        try:
            given["source_text"] = Path(source_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise invalid_argument(
                f"Cannot read --source-file {source_file}: {exc}. Pass a readable UTF-8 text file.",
                {"value": source_file},
            ) from None
    depth = {"leaf": 0, "condensed-d1": 1, "condensed-d2": 2, "condensed-d3": 3}.get(stem, 0)
    target = given.get("target_tokens", "2400" if depth == 0 else "2000")
    if not target.isdigit():
        raise invalid_argument(f"Invalid --var target_tokens={target!r}: expected a whole number.")
    request = SummaryRequest(
        source_text=given.get("source_text", SAMPLE_SOURCE),
        target_tokens=int(target),
        depth=depth,
        aggressive=given.get("aggressive", "false").lower() in ("1", "true", "yes"),
        previous_context=given.get("previous_context", SAMPLE_PREVIOUS),
        custom_instructions=given.get("custom_instructions", ""),
    )
    variables = variables_for(request)
    variables.update({k: v for k, v in given.items() if k in ("policy", "previous_context_block", "depth")})
    template = load_template(stem, ctx.env)
    text = render(template.text, variables)
    shown = {k: v for k, v in variables.items() if k in _used_variables(template.text)}
    return Result(
        {"name": stem, "source": template.source, "path": template.path, "variables": shown, "text": text}
    )
