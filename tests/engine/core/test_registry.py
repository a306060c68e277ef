"""The manifest: each concept's specs beside its operations, gathered without importing them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lcm_cli.engine.core.registry import OPERATIONS, SPEC_MODULES, Manifest


def test_each_spec_module_declares_only_its_own_concepts_operations() -> None:
    for module_name in SPEC_MODULES:
        concept = module_name.rsplit(".", 1)[0]
        specs = importlib.import_module(module_name).SPECS
        outside = {
            name: spec.module for name, spec in specs.items() if not spec.module.startswith(concept + ".")
        }
        assert not outside, f"{module_name} declares operations implemented elsewhere: {outside}"


def test_every_operation_comes_from_exactly_one_spec_module() -> None:
    declared = [name for module in SPEC_MODULES for name in importlib.import_module(module).SPECS]
    assert sorted(declared) == sorted(OPERATIONS) and len(declared) == len(set(declared))


def test_a_name_declared_twice_is_refused_when_the_manifest_loads() -> None:
    twice = Manifest(("lcm_cli.engine.read.specs", "lcm_cli.engine.read.specs"))
    with pytest.raises(RuntimeError, match="'status' is declared twice"):
        len(twice)


def test_reading_the_manifest_imports_no_implementation() -> None:
    script = (
        "import json, sys\n"
        "from lcm_cli.engine.core.registry import OPERATIONS\n"
        "from lcm_cli.commands.argv import command_table\n"
        "command_table()\n"
        "print(json.dumps(sorted({s.module for s in OPERATIONS.values()} & set(sys.modules))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_spec_modules_import_only_the_kernel() -> None:
    """What makes the manifest free to load: a spec module's imports stop at engine/core."""
    for module_name in (*SPEC_MODULES, "lcm_cli.commands.specs"):
        source = importlib.util.find_spec(module_name)
        assert source is not None and source.origin is not None
        tree = ast.parse(Path(source.origin).read_text())
        imported = {
            node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
        }
        imported |= {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        beyond = {
            name
            for name in imported
            if name.startswith("lcm_cli") and not name.startswith("lcm_cli.engine.core")
        }
        assert not beyond - {"lcm_cli"}, f"{module_name} imports {sorted(beyond)}"
