"""The host's sanitized control contract: `status`, `doctor`, `rotate` (docs/reference/operations.md §8).

Results carry counts and flags only: never paths, transcript text, backup paths,
credentials or provider output, because the host may show them to any chat participant.
An operation this `lcm` cannot perform yet answers ``CONTROL_UNAVAILABLE`` with the
reference's ``reasonCode``; it never pretends to succeed.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import OPERATION, SESSION_ID, Request
from lcm_cli.engine.core.registry import OPERATIONS, Result, operation

CONTROL_OPERATIONS = ("status", "doctor", "rotate")


def _available(name: str) -> bool:
    """True when operation ``name`` is registered and its module is installed."""
    spec = OPERATIONS.get(name)
    return spec is not None and importlib.util.find_spec(spec.module) is not None


def capabilities() -> dict[str, bool]:
    """Which control operations this build can perform."""
    return {"status": True, "doctor": _available("doctor.scan"), "rotate": _available("rotate")}


def unavailable(operation_name: str, reason_code: str, message: str) -> LcmError:
    """The structured refusal the host maps to ``{ok: false, code}``."""
    return LcmError("CONTROL_UNAVAILABLE", message, {"operation": operation_name, "reasonCode": reason_code})


def _current_conversation(ctx: Context, session_key: str | None, session_id: str | None) -> Any:
    """The conversation the caller's session names: active row first, else the newest."""
    from lcm_cli.engine.read.conversation_rows import require_lcm_tables

    require_lcm_tables(ctx)
    probe = ctx.probe
    order = "active DESC, " if probe.has_column("conversations", "active") else ""
    if session_key and probe.has_column("conversations", "session_key"):
        row = ctx.query_one(
            f"""SELECT conversation_id FROM conversations WHERE session_key = ?
                ORDER BY {order}julianday(created_at) DESC, conversation_id DESC LIMIT 1""",
            (session_key,),
        )
        if row is not None:
            return row
    if session_id:
        return ctx.query_one(
            f"""SELECT conversation_id FROM conversations WHERE session_id = ?
                ORDER BY {order}julianday(created_at) DESC, conversation_id DESC LIMIT 1""",
            (session_id,),
        )
    return None


@operation("control.capabilities")
def control_capabilities(ctx: Context, req: Request) -> Result:
    """``{status, doctor, rotate}`` booleans."""
    return Result(capabilities())


@operation("control")
def control(ctx: Context, req: Request) -> Result:
    """Dispatch one control operation; results hold counts and flags only."""
    name = req[OPERATION]
    if name not in CONTROL_OPERATIONS:
        raise unavailable(
            str(name), "unsupported_operation", "Control operation must be one of status, doctor, rotate."
        )
    session_key = str(req.selector.value) if req.selector is not None else None
    session_id = (req[SESSION_ID] or "").strip() or None
    if name == "status":
        if not os.path.exists(ctx.database_path):
            return Result({"operation": "status", "active": False, "messageCount": 0})
        row = _current_conversation(ctx, session_key, session_id)
        if row is None:
            return Result({"operation": "status", "active": False, "messageCount": 0})
        count = ctx.query_one(
            "SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (row["conversation_id"],)
        )
        return Result({"operation": "status", "active": True, "messageCount": int(count[0]) if count else 0})
    if name == "rotate":
        return Result(_rotate(ctx, session_key, session_id))
    if name == "doctor" and capabilities()["doctor"]:
        return Result(_doctor(ctx, session_key, session_id))
    if not capabilities()[name]:
        raise unavailable(
            name,
            "unavailable",
            f"`{name}` is not available in this lcm yet; use `lcm status` for counts.",
        )
    raise unavailable(name, "unavailable", f"`{name}` is not wired to the control contract yet.")


# Which reasonCode a failed rotate reports, by the error's code (docs/reference/operations.md §8.3).
_ROTATE_REASONS = (
    ("BACKUP_", "backup_failed"),
    ("TRANSCRIPT_", "transcript_unavailable"),
    ("DATABASE_", "database_unavailable"),
)


def _rotate(ctx: Context, session_key: str | None, session_id: str | None) -> dict[str, Any]:
    """Rotate the caller's session with the rolling backup; answer counts only."""
    from lcm_cli.engine.core.params import Request, Selector
    from lcm_cli.engine.maintenance import rotate

    if not session_key:
        raise unavailable("rotate", "session_key_unavailable", "Rotate needs the caller's session key.")
    if not os.path.exists(ctx.database_path):
        raise unavailable("rotate", "conversation_unavailable", "No LCM conversation for this session.")
    row = _current_conversation(ctx, session_key, None)
    if row is None:
        raise unavailable("rotate", "conversation_unavailable", "No LCM conversation for this session.")
    if session_id:
        bound = ctx.query_one(
            "SELECT session_id FROM conversations WHERE conversation_id = ?", (row["conversation_id"],)
        )
        if bound is not None and bound[0] and bound[0] != session_id:
            raise unavailable(
                "rotate",
                "session_id_unavailable",
                "The session id does not match this session's conversation.",
            )
    try:
        data = rotate.apply_rotation(
            ctx, Request(selector=Selector("sessionKey", session_key)), None, "latest"
        )
    except LcmError as exc:
        if exc.code == "ROTATE_UNAVAILABLE" and isinstance(exc.details, dict):
            code = str(exc.details.get("reasonCode") or "unavailable")
        else:
            code = next(
                (reason for prefix, reason in _ROTATE_REASONS if exc.code.startswith(prefix)), "rotate_failed"
            )
        # The generic message: the engine's own may name paths, which this contract never shows.
        raise unavailable("rotate", code, f"Rotate is unavailable for this session ({code}).") from None
    except Exception:
        raise unavailable(
            "rotate", "runtime_exception", "Rotate failed for this session (runtime_exception)."
        ) from None
    return rotate.counts_only(data)


def _doctor(ctx: Context, session_key: str | None, session_id: str | None) -> dict[str, Any]:
    """docs/reference/operations.md §8.2: count-only warnings about the current conversation's summaries."""
    unavailable_result = {
        "operation": "doctor",
        "ok": False,
        "warnings": ["current conversation unavailable"],
    }
    if not os.path.exists(ctx.database_path):
        return unavailable_result
    row = _current_conversation(ctx, session_key, session_id)
    if row is None:
        return unavailable_result
    from lcm_cli.engine.maintenance.markers import marker_counts

    counts = marker_counts(ctx, int(row["conversation_id"]))
    total = sum(counts.values())
    warnings: list[str] = []
    if total:
        warnings.append(f"{total} summaries were written by a fallback path and need repair")
        for key, phrase in (
            ("oldMarker", "old-marker"),
            ("truncatedMarker", "truncated-marker"),
            ("fallback", "fallback-marker"),
            ("emergency", "emergency-fallback"),
        ):
            if counts[key]:
                warnings.append(f"{counts[key]} {phrase} summaries")
    return {"operation": "doctor", "ok": not warnings, "warnings": warnings[:10]}
