"""Every module of the package imports under the Python running the tests.

CI runs the quick loop under each Python the package claims (`.ci/run`); this is the part
that sees a module no test reaches, such as a syntax or import that only one version
refuses (Python 3.13 once refused a lone surrogate in a docstring, so every command failed).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from pathlib import Path

import lcm_cli


def _modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(lcm_cli.__path__, prefix="lcm_cli.")
        if not info.name.startswith("lcm_cli.commands.browse")  # the optional `browse` extra
    )


def test_every_module_imports() -> None:
    failed = []
    for name in _modules():
        try:
            importlib.import_module(name)
        except Exception as exc:  # report them all at once
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failed, f"Python {sys.version.split()[0]}: " + "; ".join(failed)


def test_the_package_claims_this_python() -> None:
    """`requires-python` admits the Python running the tests (it says only what is tested)."""
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    claim = re.search(r'^requires-python = ">=3\.(\d+),<3\.(\d+)"$', text, re.MULTILINE)
    assert claim, "requires-python names the oldest and the first untested minor version"
    assert int(claim[1]) <= sys.version_info.minor < int(claim[2])
