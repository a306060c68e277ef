"""Helpers of the `lcm browse` tests: run the app headlessly and read what it shows."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from lcm_cli.commands.browse.app import BrowseApp
from lcm_cli.commands.browse.data import Source


def screen_text(app: BrowseApp) -> str:
    """The screen in front, as plain text (what a person reads)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None, record=True
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def make_app(state_dir: Any, **start: Any) -> BrowseApp:
    """The app on ``state_dir`` without the periodic refresh (tests press ctrl+r instead)."""
    return BrowseApp(Source(openclaw_dir=str(state_dir)), start=start, refresh_seconds=0)
