"""Every error code lcm raises is declared once, with its exit status and next step."""

from __future__ import annotations

from tests.conftest import REPO


def test_every_error_code_raised_is_declared() -> None:
    """A code missing from exit_codes.ERRORS would exit 1 with no documented next step."""
    import ast

    from lcm_cli.engine.core.exit_codes import ERRORS

    undeclared = []
    for path in sorted((REPO / "lcm_cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(node, "func", None)
            called = getattr(name, "id", None) or getattr(name, "attr", None)
            if isinstance(node, ast.Call) and called == "LcmError" and node.args:
                code = node.args[0]
                if isinstance(code, ast.Constant) and code.value not in ERRORS:
                    undeclared.append(f"{path.relative_to(REPO)}:{node.lineno} {code.value}")
    assert not undeclared, undeclared
