"""`lcm_cli.render` knows no command: it imports only the kernel and names no operation."""

from __future__ import annotations

import ast
from pathlib import Path

from lcm_cli.engine.core.registry import OPERATIONS, command_words

RENDER = Path(__file__).resolve().parents[2] / "lcm_cli" / "render"


def _modules() -> list[Path]:
    return sorted(RENDER.glob("*.py"))


def _imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):  # walks function bodies too: the lazy imports count
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


def test_render_imports_only_the_kernel_from_lcm_cli() -> None:
    assert _modules(), RENDER
    for path in _modules():
        for name in _imported(ast.parse(path.read_text(), str(path))):
            assert not name.startswith("."), f"{path.name}: relative import {name}"
            if name == "lcm_cli" or name.startswith("lcm_cli."):
                # The package root holds only constants (the version, TYPE_CHECKING).
                allowed = name == "lcm_cli" or name.startswith(("lcm_cli.engine.core.", "lcm_cli.render."))
                assert allowed, f"{path.name} imports {name}"


def test_render_names_no_operation() -> None:
    # Dotted names and CLI spellings (`migrate-sessions`, `context show`, `status`).
    names = set(OPERATIONS) | {" ".join(command_words(name, spec)) for name, spec in OPERATIONS.items()}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value not in names, f"{path.name} names the command {node.value!r}"
