"""The one redaction helper: secrets never reach output, logs or error details.

What counts as a secret: the userinfo of a URL (``https://user:key@host``), the value of a
secret-looking query parameter (``?key=``, ``api_key=``, ``token=``, …), an
``Authorization`` header or ``Bearer`` token, and the value of a config key whose name
says it is a secret (``apiKey``, ``token``, ``password``, ``secret``, ``authorization``).
Each is replaced by :data:`MASK`; the rest of the text is kept so the message still says
which host failed.

Standard library only; the regexes compile on first use (error paths, config output).
"""

from __future__ import annotations

import re
from functools import lru_cache

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MASK = "***"

#: Config or header key names whose values are secrets (compared without case, ``-``, ``_``).
SECRET_KEY_NAMES = frozenset(
    {
        "apikey",
        "token",
        "accesstoken",
        "refreshtoken",
        "authtoken",
        "password",
        "passwd",
        "secret",
        "clientsecret",
        "authorization",
        "bearer",
        "sig",
        "signature",
    }
)


def is_secret_key(name: str) -> bool:
    """True for a key name such as ``apiKey``, ``api_key``, ``X-Api-Key`` or ``password``."""
    folded = re.sub(r"[-_\s]", "", name).lower()
    return folded in SECRET_KEY_NAMES or folded.endswith(("apikey", "token", "password", "secret"))


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    userinfo = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s?#@'\"<>]+@")
    query = re.compile(r"(?i)([?&;](?:[a-z0-9_\-]*)=)([^&;#\s'\"<>]*)")
    auth = re.compile(r"(?i)\b(authorization\s*[:=]\s*)(?:(bearer|basic|token)\s+)?[^\s,;'\"<>]+")
    bearer = re.compile(r"(?i)\b(bearer\s+)[a-z0-9._~+/\-]+=*")
    return userinfo, query, auth, bearer


def _query_value(match: re.Match[str]) -> str:
    name = match.group(1)[1:-1]
    secret = name.lower() == "key" or is_secret_key(name)
    return match.group(1) + MASK if secret and match.group(2) else match.group(0)


def _auth_value(match: re.Match[str]) -> str:
    scheme = match.group(2)
    return f"{match.group(1)}{scheme + ' ' if scheme else ''}{MASK}"


def redact(text: str) -> str:
    """``text`` with URL credentials, secret query values and auth tokens masked."""
    if not text or not any(mark in text for mark in ("@", "=", "earer", "uthorization", "AUTHORIZATION")):
        return text  # the common case costs one scan
    userinfo, query, auth, bearer = _patterns()
    text = userinfo.sub(lambda m: m.group(1) + MASK + "@", text)
    text = query.sub(_query_value, text)
    text = auth.sub(_auth_value, text)
    return bearer.sub(lambda m: m.group(1) + MASK, text)


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value: every string redacted, secret-named keys' values masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            key: (
                MASK
                if isinstance(key, str) and is_secret_key(key) and item not in (None, "")
                else redact_value(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value
