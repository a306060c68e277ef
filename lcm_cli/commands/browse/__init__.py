"""`lcm browse`: a Textual app for looking around lcm.db (an optional extra).

The CLI door reaches :func:`main_browse` after parsing argv from the declaration in
:data:`~lcm_cli.commands.specs.DOOR_COMMANDS`. Textual is imported only here, after
the checks, so the base CLI never pays for it and a missing extra is a structured error
(``EXTRA_NOT_INSTALLED``) rather than a traceback.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from lcm_cli.engine.core.errors import LcmError

INSTALL_HINT = "pip install 'lcm-cli[browse]'"
SCREENSHOT_SIZE = (120, 36)


def textual_installed() -> bool:
    """True when the browse extra (Textual) can be imported."""
    return importlib.util.find_spec("textual") is not None


def main_browse(params: dict[str, Any], globals_: dict[str, Any]) -> int:
    """Validate `lcm browse`'s options, then run the app (or draw one screen); the exit status."""
    from lcm_cli.commands.specs import DOOR_COMMANDS
    from lcm_cli.engine.core.params import FORCE, SCREENSHOT, validate_request

    request = validate_request("browse", DOOR_COMMANDS["browse"].options, params)
    screenshot = request[SCREENSHOT]
    target = None
    if screenshot is not None:  # checked first: a refused path is said even without Textual
        from lcm_cli.engine.context import Context
        from lcm_cli.engine.core.outputs import output_target

        context = Context(
            db=globals_.get("--db"),
            config=globals_.get("--config"),
            openclaw_dir=globals_.get("--openclaw-dir"),
        )
        target = output_target(
            str(screenshot), protected=context.protected_files(), force=request[FORCE], option="--screenshot"
        )
    if not textual_installed():
        raise LcmError(
            "EXTRA_NOT_INSTALLED",
            f"`lcm browse` needs Textual, an optional dependency: install it with `{INSTALL_HINT}`.",
            {"extra": "browse", "install": INSTALL_HINT},
        )
    if screenshot is None and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise LcmError(
            "NOT_A_TERMINAL",
            "`lcm browse` is a full-screen app and needs a terminal on stdin and stdout; "
            "use --screenshot FILE.svg to draw one screen without one.",
        )
    from lcm_cli.commands.browse.app import BrowseApp
    from lcm_cli.commands.browse.data import Source

    source = Source(
        db=globals_.get("--db"),
        config=globals_.get("--config"),
        openclaw_dir=globals_.get("--openclaw-dir"),
        agent=globals_.get("--agent"),
    )
    start: dict[str, Any] = {}
    if request.selector is not None:
        field = "conversation_id" if request.selector.kind == "conversationId" else "session_key"
        start[field] = request.selector.value
    app = BrowseApp(source, start=start)
    if target is not None:
        return app.draw_once(target, SCREENSHOT_SIZE)
    app.run()
    return app.return_code or 0
