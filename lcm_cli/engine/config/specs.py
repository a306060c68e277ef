"""The operation specs of the plugin config in openclaw.json: show, get, set.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.render_hints import Render
from lcm_cli.engine.core.spec_parts import NO_HISTORY

SPECS: dict[str, OpSpec] = {
    "config.show": OpSpec(
        "lcm_cli.engine.config.ops",
        opens_db=False,
        summary="The Lossless plugin config: as stored, effective, and its sources.",
        help="The stored and effective Lossless config, pattern sources and LCM_* overrides.",
        example="lcm config show --pretty",
        render=Render(verbatim=("raw", "effective", "diagnostics")),
        unscoped=NO_HISTORY,
    ),
    "config.get": OpSpec(
        "lcm_cli.engine.config.ops",
        args=("path",),
        opens_db=False,
        summary="One config key: whether it is set, its stored and effective values.",
        help="One key: whether it is set, its stored value and its effective value.",
        example="lcm config get autoRotateSessionFiles.sizeBytes",
        unscoped=NO_HISTORY,
    ),
    "config.set": OpSpec(
        "lcm_cli.engine.config.ops",
        args=("path", "json_value"),
        opens_db=False,
        writes=True,
        summary="Set one Lossless config key in openclaw.json (validated, backed up, atomic).",
        help="Set one key after validating it; backs the file up and replaces it atomically.",
        example="lcm config set freshTailCount 32",
        unscoped=NO_HISTORY,
    ),
}
