"""`lcm hook <operation>`: the one-shot door the host spawns per lifecycle call.

The parameters are one JSON object on stdin (empty stdin means ``{}``); the result
envelope goes to stdout and a failure to stderr with the usual exit statuses, exactly as
the matching `lcm` command would print them (a report that fails the run, `doctor.scan`
with `failOn`, exits non-zero as the CLI does). `lcm hook --list` prints every operation
with the JSON Schema of its parameters.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from lcm_cli.engine.core.errors import LcmError


def read_params(stream: IO[bytes]) -> Any:
    """The JSON object on ``stream`` (``{}`` when empty), or ``INVALID_REQUEST``.

    At most ``LCM_MAX_HOOK_BYTES`` (64 MiB) are read; past it, ``REQUEST_TOO_LARGE``.
    JSON nested deeper than 200 levels is ``INVALID_REQUEST`` (reason ``too-deep``).
    """
    from lcm_cli.engine.core.limits import LIMITS, JsonTooDeep, limit, loads_bounded, too_large

    cap = limit("hook_bytes")
    raw = stream.read(cap + 1)
    if len(raw) > cap:
        raise too_large("Hook input", cap, LIMITS["hook_bytes"].env, "REQUEST_TOO_LARGE")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LcmError(
            "INVALID_REQUEST",
            f"Hook input is not UTF-8 (byte {exc.start}). Send the parameters as one UTF-8 JSON object.",
            {"offset": exc.start},
        ) from None
    if not text.strip():
        return {}
    try:
        value = loads_bounded(text)
    except JsonTooDeep as exc:
        raise LcmError(
            "INVALID_REQUEST",
            f"Hook input nests deeper than {exc.max_depth} levels. Send the parameters as one flat JSON object.",
            {"maxDepth": exc.max_depth, "reason": "too-deep"},
        ) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        raise LcmError(
            "INVALID_REQUEST",
            f"Hook input is not valid JSON ({exc}). Send the parameters as one JSON object.",
            {"line": line, "column": column},
        ) from None
    return value


def run_hook(method: str | None, *, list_only: bool, globals_: dict[str, Any], stdin: IO[bytes]) -> int:
    """Run one hook call; returns the exit status (errors raise ``LcmError``)."""
    from lcm_cli.render.output import Output

    out = Output(pretty=globals_.get("--pretty") is True)
    if list_only:
        from lcm_cli.commands.dispatch import operation_list

        out.emit({"ok": True, "command": "hook.list", "data": {"operations": operation_list()}, "meta": {}})
        return 0
    if not method:
        raise LcmError(
            "INVALID_COMMAND",
            "`lcm hook` needs an operation name, e.g. `lcm hook status`; see `lcm hook --list`.",
        )
    from lcm_cli.commands.dispatch import operation_spec, split_params
    from lcm_cli.commands.door import deliver
    from lcm_cli.engine.api import invoke

    operation_spec(method)  # an unknown name fails before stdin is read
    fields, args = split_params(method, read_params(stdin))
    if globals_.get("--fields") is not None and "fields" not in fields:
        fields["fields"] = globals_["--fields"]
    outcome = invoke(
        method,
        fields,
        args=args,
        db=globals_.get("--db"),
        config=globals_.get("--config"),
        openclaw_dir=globals_.get("--openclaw-dir"),
        agent=globals_.get("--agent"),
    )
    return deliver(outcome, out)


def main_door(request: Any, args: tuple[str, ...], globals_: dict[str, Any]) -> int:
    """`lcm hook [OPERATION] [--list]`, its options already read from their declarations."""
    from lcm_cli.engine.core.params import LIST

    method = args[0] if args else None
    return run_hook(method, list_only=request[LIST], globals_=globals_, stdin=sys.stdin.buffer)
