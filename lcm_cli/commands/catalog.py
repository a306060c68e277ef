"""The machine-readable command inventory behind `lcm commands`.

Built from the typer app itself (so it cannot drift from `--help`) plus the engine's
parameter schemas for types and bounds.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.core.params import PARAMS
from lcm_cli.engine.core.registry import OPERATIONS, command_words


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""


def _example(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.strip().startswith("Example:"):
            return line.strip()[len("Example:") :].strip()
    return None


def _describe_param(param: Any) -> dict[str, Any]:
    is_option = bool(getattr(param, "opts", None)) and param.opts[0].startswith("-")
    entry: dict[str, Any] = {"name": param.opts[0] if is_option else (param.metavar or param.name.upper())}
    schema = PARAMS[param.name].schema if param.name in PARAMS else None
    if getattr(param, "is_flag", False):
        entry["type"] = "boolean"
        entry["default"] = False
    elif schema is not None:
        entry.update({k: v for k, v in schema.items() if k != "description"})
        entry.setdefault("type", "string")
        if "enum" in schema:
            entry["type"] = "string"
    else:
        entry["type"] = "string"
        if param.default is not None and not callable(param.default):
            entry["default"] = param.default
    if getattr(param, "multiple", False):
        entry["repeatable"] = True
    if not is_option:
        entry["required"] = bool(param.required)
    entry["help"] = _first_line(getattr(param, "help", None))
    return entry


def build_inventory(root: Any) -> dict[str, Any]:
    """Every leaf command with its arguments, options, operation name and example."""
    commands: list[dict[str, Any]] = []

    by_words = {command_words(name, spec): name for name, spec in OPERATIONS.items()}

    def describe(command: Any, words: list[str]) -> None:
        name = by_words.get(tuple(words))
        params = [p for p in command.params if not getattr(p, "hidden", False)]
        entry: dict[str, Any] = {
            "command": " ".join(words),
            "operation": name,
            "help": _first_line(command.help),
            "arguments": [_describe_param(p) for p in params if not p.opts[0].startswith("-")],
            "options": [_describe_param(p) for p in params if p.opts[0].startswith("-") and p.name != "help"],
            "example": _example(command.help),
        }
        if name is not None:
            entry["needsSelector"] = OPERATIONS[name].needs_selector
            entry["readsDatabase"] = OPERATIONS[name].opens_db
        commands.append(entry)

    def walk(group: Any, prefix: list[str]) -> None:
        for name in group.list_commands(None):
            sub = group.commands[name]
            if hasattr(sub, "list_commands"):
                if getattr(sub, "invoke_without_command", False):
                    describe(sub, prefix + [name])  # the group runs too (`lcm backup`)
                walk(sub, prefix + [name])
            else:
                describe(sub, prefix + [name])

    walk(root, [])
    global_options = [
        _describe_param(p)
        for p in root.params
        if p.opts[0].startswith("-") and p.name not in ("help", "install_completion", "show_completion")
    ]
    return {"globalOptions": global_options, "commands": commands}
