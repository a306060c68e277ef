"""Large-file payloads on disk: which ones are text, and whether a stored path may be read.

Only text-like payloads are searched or printed, and only from inside ``largeFilesDir``
(symlinks resolved), so a crafted ``storage_uri`` cannot make `lcm` read arbitrary files.
"""

from __future__ import annotations

import os
import re

_TEXT_MIME = re.compile(r"^text/|json|javascript|xml|yaml|yml|toml", re.IGNORECASE)


def is_text_mime(mime: str | None) -> bool:
    """Text-like MIME types (null counts as text): the only payloads grep and describe read."""
    return mime is None or bool(_TEXT_MIME.search(mime))


def resolve_inside(storage_uri: str, root: str) -> str | None:
    """The real path of ``storage_uri`` if it lies inside ``root`` (symlinks resolved), else None."""
    try:
        real = os.path.realpath(storage_uri)
        base = os.path.realpath(root)
    except (OSError, ValueError):
        return None
    if os.path.commonpath([real, base]) != base:
        return None
    return real
