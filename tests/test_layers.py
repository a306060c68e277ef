"""The import contracts of docs/architecture.md (`[tool.importlinter]` in pyproject.toml).

Runs `scripts/check layers` (lint-imports): core imports nothing else in lcm_cli, db only
core, the engine never imports doors, rendering, migrate or doctor, the engine's concept
packages are layered, and no import cycles.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.support.check import load_check

check = load_check()
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def test_the_import_contracts_hold() -> None:
    result = check.run_step("layers")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_engine_package_has_a_layer() -> None:
    # A new concept package must be placed in the layer order, or it escapes the contract.
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "engine-concept-layers")["layers"]
    declared = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {
        "lcm_cli.engine." + path.name
        for path in (REPO / "lcm_cli" / "engine").iterdir()
        if (path / "__init__.py").exists()
    }
    assert packages == declared
