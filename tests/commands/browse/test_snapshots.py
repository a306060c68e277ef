"""SVG snapshots of the `lcm browse` screens on the bundled example, at 80×24 and 160×48.

Each screen is exported with Textual's ``export_screenshot`` and compared with the stored
file under ``tests/commands/browse/snapshots/``. Run with ``LCM_UPDATE_SNAPSHOTS=1`` to write them
again after a deliberate change (then look at the SVGs before committing them).
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.commands.browse.screens import make_app

pytestmark = pytest.mark.slow  # the terminal app, driven headlessly: seconds per test

SNAPSHOTS = Path(__file__).parent / "snapshots"
SIZES = [(80, 24), (160, 48)]
# Read at import: the autouse fixture clears every LCM_* variable before a test runs.
UPDATE = os.environ.get("LCM_UPDATE_SNAPSHOTS") == "1"
# What the screens are reached by: the conversation to open first, then the keys pressed.
SCREENS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "home": ({}, ()),
    "messages": ({"conversation_id": 2}, ()),
    "summaries": ({"conversation_id": 2}, ("s", "down", "space")),
    "context": ({"conversation_id": 2}, ("c",)),
    "doctor": ({}, ("d",)),
    "search": ({}, ("slash", *"retry", "enter")),
}
# The SVG's CSS class prefix is a hash of its content: stable, but not worth a diff line.
_CLASS_IDS = re.compile(r"terminal-\d+")


def normalised(svg: str) -> str:
    """The SVG without what may differ between two runs of the same screen."""
    return _CLASS_IDS.sub("terminal-N", svg)


def render(example_dir: Path, start: dict[str, Any], keys: tuple[str, ...], size: tuple[int, int]) -> str:
    """The screen reached by ``keys`` as an SVG."""
    app = make_app(example_dir, **start)
    shot: list[str] = []

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            if keys:
                await pilot.press(*keys)
            await pilot.pause()
            await pilot.pause()
            shot.append(app.export_screenshot(title="lcm browse"))

    asyncio.run(run())
    return normalised(shot[0])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", list(SCREENS))
def test_screen_snapshot(name: str, size: tuple[int, int], example_dir: Path, tmp_path: Path) -> None:
    start, keys = SCREENS[name]
    got = render(example_dir, start, keys, size)
    stored = SNAPSHOTS / f"{name}-{size[0]}x{size[1]}.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        stored.write_text(got, encoding="utf-8")
        return
    assert stored.exists(), f"no snapshot {stored.name}: run with LCM_UPDATE_SNAPSHOTS=1 to write it"
    if stored.read_text(encoding="utf-8") != got:
        actual = tmp_path / stored.name
        actual.write_text(got, encoding="utf-8")
        pytest.fail(
            f"{stored.name} changed; the new rendering is {actual}. If the change is meant, "
            "regenerate with LCM_UPDATE_SNAPSHOTS=1 and review the SVGs.",
            pytrace=False,
        )
