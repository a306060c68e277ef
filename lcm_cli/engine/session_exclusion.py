"""Ignore and stateless session patterns (compat/config.md §7, compat/engine.md §1.3).

``*`` matches any run of characters except ``:``, ``**`` any run including ``:``; the
whole key must match, case-sensitively. ``?`` is not escaped, exactly as the reference
does it: it makes the previous character optional.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

_LITERAL = set(".+^${}()|[]\\")


@lru_cache(maxsize=256)
def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The anchored regex for one session-pattern glob."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^:]*")
        elif char in _LITERAL:
            out.append("\\" + char)
        else:
            out.append(char)
        index += 1
    try:
        return re.compile("^" + "".join(out) + "$")
    except re.error:
        # A '?' after nothing (e.g. a leading '?') is a syntax error in Python's engine
        # where JavaScript's would also throw; such a pattern matches nothing.
        return re.compile(r"(?!)")


def matches_any(value: str, patterns: Iterable[str]) -> bool:
    """True when ``value`` matches one of the globs."""
    return any(pattern_regex(p).match(value) for p in patterns if isinstance(p, str) and p)


def exclusion(effective: Mapping[str, Any], session_key: str | None, session_id: str | None) -> str | None:
    """``"ignored"``, ``"stateless"`` or None for a conversation's key and id."""
    key = (session_key or "").strip()
    ignore = effective.get("ignoreSessionPatterns") or []
    target = key or (session_id or "").strip()
    if ignore and target and matches_any(target, ignore):
        return "ignored"
    stateless = effective.get("statelessSessionPatterns") or []
    if stateless and effective.get("skipStatelessSessions", True) and key and matches_any(key, stateless):
        return "stateless"
    return None
