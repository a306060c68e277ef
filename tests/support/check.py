"""scripts/check as a module, so the tests run exactly the steps CI and developers run."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from types import ModuleType

from tests.conftest import REPO


def load_check() -> ModuleType:
    """Import scripts/check (a script without a .py suffix)."""
    path = str(REPO / "scripts" / "check")
    loader = importlib.machinery.SourceFileLoader("lcm_scripts_check", path)
    spec = importlib.util.spec_from_loader("lcm_scripts_check", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
