"""The OpenClaw plugin shim's own Node tests, run against the real `lcm serve` of this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SHIM = REPO / "integrations" / "openclaw"


@pytest.mark.slow  # the Node shim suite against a real lcm serve
def test_node_shim_suite_passes_against_real_lcm_serve(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed for the OpenClaw shim tests (CI machines have it)"
    lcm = Path(sys.executable).with_name("lcm")
    # TMPDIR: the suite's fresh databases land under pytest's tmp_path, not in /tmp for good.
    env = {**os.environ, "LCM_BIN": str(lcm), "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [node, "--test", "test/"], cwd=SHIM, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout
