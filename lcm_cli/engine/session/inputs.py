"""What a session operation is handed: the session it names and the messages it carries.

Shared by the session operations (:mod:`lcm_cli.engine.session.ops`), the turn commit
(:mod:`lcm_cli.engine.session.turns`) and the after-turn step
(:mod:`lcm_cli.engine.session.after_turn`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.limits import JsonTooDeep, loads_bounded, read_capped
from lcm_cli.engine.core.params import SESSION_ID, Request
from lcm_cli.engine.session.ingest import input_error


def request_session(req: Request, *, required: bool = True) -> tuple[str | None, str | None]:
    """The session id and key a call names (INVALID_ARGUMENT when ``required`` and it names neither)."""
    session_id = (req[SESSION_ID] or "").strip() or None
    key = str(req.selector.value) if req.selector is not None and req.selector.kind == "sessionKey" else None
    if required and session_id is None and key is None:
        raise invalid_argument(
            "Name the session: pass --session-id ID (and --session-key KEY when the host has one)."
        )
    return session_id, key


def parse_messages_text(data: bytes, source: str) -> list[Any]:
    """Messages from text: one JSON object, a JSON array of them, or JSON lines.

    Invalid UTF-8 or JSON is an ``INVALID_INPUT`` error naming the line; nothing is
    written for any of the messages.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise input_error(
            f"{source} is not valid UTF-8 (line {line}, byte {exc.start}); send UTF-8 JSON.",
            {"source": source, "line": line, "byte": exc.start, "reason": "invalid-utf8"},
        ) from None
    stripped = text.strip()
    if not stripped:
        raise input_error(
            f"{source} holds no messages; send one JSON object, a JSON array, or one object per line.",
            {"source": source, "reason": "empty"},
        )
    try:
        value = loads_bounded(stripped)
        return value if isinstance(value, list) else [value]
    except JsonTooDeep as exc:
        raise _too_deep(source, exc) from None
    except ValueError:
        pass
    out: list[Any] = []
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip():
            continue
        try:
            out.append(loads_bounded(row))
        except JsonTooDeep as exc:
            raise _too_deep(source, exc, number) from None
        except json.JSONDecodeError as exc:
            raise input_error(
                f"{source} line {number} is not JSON ({exc.msg}); send one JSON object, a JSON array, "
                "or one object per line.",
                {"source": source, "line": number, "column": exc.colno, "reason": "invalid-json"},
            ) from None
    return out


def _too_deep(source: str, exc: JsonTooDeep, line: int | None = None) -> LcmError:
    where = f" line {line}" if line is not None else ""
    return input_error(
        f"{source}{where} nests deeper than {exc.max_depth} levels; send flatter JSON.",
        {"source": source, "line": line, "maxDepth": exc.max_depth, "reason": "too-deep"},
    )


def _structured(value: Any, field: str) -> Any:
    if isinstance(value, str):
        try:
            return loads_bounded(value)
        except JsonTooDeep as exc:
            raise _too_deep(f"--{field}", exc) from None
        except ValueError as exc:
            raise input_error(
                f"--{field} is not JSON ({exc}).", {"field": field, "reason": "invalid-json"}
            ) from None
    return value


def read_input(
    given: dict[str, Any], stdin: bytes | None, needs: str = "`session.ingest` needs its messages"
) -> tuple[list[Any], bool]:
    """The messages to ingest and whether they came as text (a file or the CLI's stdin).

    ``stdin`` is what the CLI door read from its own stdin (None through hook, serve and
    Python): without ``message``, ``messages`` or a ``file``, and without it, the call is
    an immediate ``INVALID_ARGUMENT`` (``needs`` starts its message), never a read.
    """
    if given.get("message") is not None and given.get("messages") is not None:
        raise invalid_argument("Pass either --message or --messages, not both.")
    if given.get("message") is not None:
        return [_structured(given["message"], "message")], False
    if given.get("messages") is not None:
        value = _structured(given["messages"], "messages")
        if not isinstance(value, list):
            raise input_error(
                "--messages must be a JSON array of message objects.", {"reason": "not-an-array"}
            )
        return value, False
    files = given.get("file") or []
    if len(files) > 1:
        raise invalid_argument("`lcm ingest` reads one --file at a time.")
    if files and files[0] != "-":
        path = files[0]
        try:
            with open_input(path) as handle:
                data = read_capped(handle, f"--file {path}")
        except OSError as exc:
            raise LcmError(
                "INPUT_NOT_FOUND", f"Cannot read --file {path}: {exc.strerror or exc}.", {"file": path}
            ) from None
        return parse_messages_text(data, path), True
    if stdin is None:
        raise invalid_argument(
            f"{needs}: pass the parameter 'messages' (--messages JSON) or 'file' (--file PATH), "
            "or pipe JSON messages on the command line's stdin.",
            {"parameter": "messages"},
        )
    return parse_messages_text(stdin, "stdin"), True


def session_id_for_key(ctx: Context, key: str | None) -> str:
    """With only a key: the session id of its active conversation (a new session needs --session-id)."""
    if key is not None and os.path.exists(ctx.database_path):
        row = ctx.query_one(
            "SELECT session_id FROM conversations WHERE session_key = ? AND active = 1"
            " ORDER BY julianday(created_at) DESC, conversation_id DESC LIMIT 1",
            (key,),
        )
        if row is not None:
            return str(row[0])
    raise invalid_argument(
        f"No active conversation has session key {key!r}; pass --session-id for a new session.",
        {"sessionKey": key},
    )
