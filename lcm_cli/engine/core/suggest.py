"""Did-you-mean: the closest known names to a mistyped one, and the right option for an id.

Errors of lcm's own commands carry these in ``details.suggestions`` (a list of strings,
best first), so an agent can retry without reading `--help`. The reference's eleven
commands keep the reference's details exactly (none for an unknown option).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SESSION_KEY = r"^agent:[^\s]+$"
_UUID = r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def suggest(name: str, candidates: Iterable[str], *, count: int = 3) -> list[str]:
    """The ``candidates`` closest to a mistyped ``name`` (difflib ratio >= 0.6), best first.

    Options are compared without their leading dashes, which every one shares.
    """
    import difflib  # only a failed command pays for it (about 1.5 ms)

    by_bare = {c.lstrip("-"): c for c in candidates}
    close = difflib.get_close_matches(name.lstrip("-"), list(by_bare), n=count, cutoff=0.6)
    return [by_bare[c] for c in close]


def id_kind_hint(value: object, option: str) -> list[str]:
    """What to pass instead when ``value`` is an id of another kind than ``option`` takes.

    ``--conversation-id`` takes digits: a summary or file id goes to `lcm describe`, a
    session key to ``--session-key``, a session id (a UUID) to ``--session-id``; digits
    given to ``--session-key`` go to ``--conversation-id``; a conversation id or session
    key given as a ``SUMMARY_ID`` goes to `lcm conversations show`.
    """
    if not isinstance(value, str):
        return []
    text = value.strip()
    if option == "--conversation-id":
        if text.startswith(("sum_", "file_")):
            return [f"lcm describe {text}"]
        if re.match(_SESSION_KEY, text):
            return [f"--session-key {text}"]
        if re.match(_UUID, text):
            return [f"--session-id {text}"]
    if option == "--session-key" and text.isdigit():
        return [f"--conversation-id {text}"]
    if option == "SUMMARY_ID":  # a summary id argument (describe, expand)
        if text.isdigit():
            return [f"lcm conversations show --conversation-id {text}"]
        if re.match(_SESSION_KEY, text):
            return [f"lcm conversations show --session-key {text}"]
    return []
