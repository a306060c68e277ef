"""The input caps of every door, declared once and read from ``LCM_*`` environment variables.

These are the tool's own limits, not plugin config keys: the host never sees them. Each
is read at the moment it applies; a value that is not a whole number at least the
minimum falls back to the default (as ``LCM_BUSY_TIMEOUT_MS`` does). docs/doors.md lists
them and a test keeps that list complete.

Standard library only: every door imports this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.record import Record

if TYPE_CHECKING:
    from typing import IO, Any

MIB = 1024 * 1024


class Limit(Record):
    """One cap: its environment variable, default, smallest accepted value and meaning."""

    env: str
    default: int
    minimum: int
    unit: str
    applies_to: str


LIMITS: dict[str, Limit] = {
    "input_bytes": Limit(
        "LCM_MAX_INPUT_BYTES",
        64 * MIB,
        1024,
        "bytes",
        "messages read from stdin or --file by `lcm ingest`, `after-turn` and `commit-turn`",
    ),
    "hook_bytes": Limit("LCM_MAX_HOOK_BYTES", 64 * MIB, 1024, "bytes", "one `lcm hook` payload on stdin"),
    "serve_request_bytes": Limit(
        "LCM_SERVE_MAX_REQUEST_BYTES",
        32 * MIB,
        1024,
        "bytes",
        "one `lcm serve` request line (`--max-request-bytes` overrides it)",
    ),
    "serve_grace_ms": Limit(
        "LCM_SERVE_GRACE_MS",
        10_000,
        0,
        "ms",
        "how long SIGTERM or `shutdown` waits for writes in flight (reads get at most 1 s)",
    ),
}

# JSON nested deeper than this is refused: Python's parser would hit its recursion limit
# (about 1,000) on a worker thread's smaller stack, and no lcm payload nests past ~20.
MAX_JSON_DEPTH = 200


def limit(name: str, env: Mapping[str, str] | None = None) -> int:
    """The current value of cap ``name`` (its environment variable, else its default)."""
    spec = LIMITS[name]
    raw = (os.environ if env is None else env).get(spec.env, "").strip()
    if raw.isdigit() and len(raw) < 19 and int(raw) >= spec.minimum:
        return int(raw)
    return spec.default


def too_large(source: str, cap: int, env_name: str, code: str = "INPUT_TOO_LARGE") -> LcmError:
    """The error for input past its cap, naming the variable that raises it."""
    return LcmError(
        code,
        f"{source} is larger than {cap} bytes; send less at a time or raise {env_name}.",
        {"source": source, "limitBytes": cap, "setting": env_name},
    )


def read_capped(stream: IO[bytes], source: str, name: str = "input_bytes") -> bytes:
    """All of ``stream`` up to cap ``name``; ``INPUT_TOO_LARGE`` past it (reads at most cap + 1 bytes)."""
    cap = limit(name)
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = stream.read(min(cap + 1 - size, 4 * MIB))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > cap:
        raise too_large(source, cap, LIMITS[name].env)
    return b"".join(chunks)


class JsonTooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` (a ``ValueError``, like any bad JSON)."""

    def __init__(self, max_depth: int = MAX_JSON_DEPTH) -> None:
        super().__init__(f"JSON nests deeper than {max_depth} levels")
        self.msg = str(self)
        self.max_depth = max_depth


def loads_bounded(text: str | bytes, max_depth: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """``json.loads`` that refuses nesting past ``max_depth`` with :class:`JsonTooDeep`.

    The parser itself stops at Python's recursion limit; below that, a fast pass over the
    brackets of the text clears ordinary payloads, and only suspects are walked.
    """
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise JsonTooDeep(max_depth) from None
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _may_nest_deeper(data, max_depth) and nests_deeper(value, max_depth):
        raise JsonTooDeep(max_depth)
    return value


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _may_nest_deeper(data: bytes, max_depth: int) -> bool:
    """False when the brackets of ``data`` collapse within ``max_depth`` rounds of removing ``[]``/``{}``.

    Brackets inside strings can only make this say True (then the exact walk decides).
    """
    brackets = data.translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            return False
        reduced = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if reduced == brackets:
            return True
        brackets = reduced
    return bool(brackets)


def nests_deeper(value: Any, max_depth: int) -> bool:
    """True when lists and dicts in ``value`` nest deeper than ``max_depth`` (iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
