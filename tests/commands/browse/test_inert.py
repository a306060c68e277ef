"""`lcm browse` shows stored escape sequences escaped: its SVG screenshot is well-formed XML.

The example copy holds every C0 and C1 control and the common escape families in its
messages, summaries, session keys, titles and file paths (tests/support/hostile_text.py).
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.commands.browse.test_snapshots import SCREENS, render
from tests.conftest import REPO, lcm_process
from tests.support.hostile_text import RAW_CONTROL, poison

pytestmark = pytest.mark.slow  # the terminal app, driven headlessly: seconds per test

# The screens of the snapshot tests, and the panels that show one record whole.
PANELS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    **SCREENS,
    "message": ({"conversation_id": 2}, ("enter",)),
    "summary": ({"conversation_id": 2}, ("s", "down", "enter")),
    "files": ({"conversation_id": 2}, ("f",)),
    "file": ({"conversation_id": 2}, ("f", "enter")),
    "search-evil": ({}, ("slash", *"evil", *["full_stop"] * 6, "enter")),  # the hit: "evil \x1b[2J\x1b"
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    target = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", target)
    poison(target)
    return target


def assert_inert(svg: str) -> None:
    raw = RAW_CONTROL.search(svg)
    assert raw is None, f"raw {raw[0]!r} in {svg[max(raw.start() - 80, 0) : raw.end() + 20]!r}"
    ET.fromstring(svg)  # well-formed XML


@pytest.mark.parametrize("name", list(PANELS))
def test_every_screen_shows_controls_escaped(name: str, hostile_dir: Path) -> None:
    start, keys = PANELS[name]
    svg = render(hostile_dir, start, keys, (160, 48))
    assert_inert(svg)
    if name in ("home", "messages", "message", "summary", "file", "search-evil"):
        assert "\\x1b" in svg, name  # the text is there, escaped


@pytest.mark.parametrize("start", [(), ("--conversation-id", "2")], ids=["home", "conversation"])
def test_screenshot_door_writes_well_formed_xml(
    start: tuple[str, ...], hostile_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "browse.svg"
    out = lcm_process("--openclaw-dir", str(hostile_dir), "browse", *start, "--screenshot", str(target))
    assert out.code == 0, out.stderr
    assert_inert(target.read_text(encoding="utf-8"))
