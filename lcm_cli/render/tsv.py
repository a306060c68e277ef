"""The reference's `--format tsv` layout: TAB-separated lines, one fact per line.

The layout is the same for every command (it is the reference's contract), so it needs
no rendering hint, and it never loads rich. Piped, the values are exact (but for their
line breaks); on a terminal their control characters are shown escaped.
"""

from __future__ import annotations

import re
from typing import Any

from lcm_cli.engine.core.jscompat import JsNumber, stringify

_BREAKS = re.compile(r"[\t\r\n]+")


def cell(value: Any) -> str:
    """One value on one line: JSON literals for null, booleans, objects and lists."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        text = stringify(value)
    elif isinstance(value, JsNumber):
        text = value.text
    else:
        text = str(value)
    return _BREAKS.sub(" ", text)


def render_tsv(envelope: dict[str, Any], *, inert: bool = False) -> str:
    """The reference `lcm --format table` layout: TAB-separated lines, one fact per line.

    ``inert`` (stdout is a terminal): control characters are shown escaped.
    """
    lines = [f"command\t{envelope['command']}"]
    data = envelope.get("data")
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        items = data["items"]
        header: list[str] = []
        for item in items:
            for key in item:
                if key not in header:
                    header.append(key)
        if items:
            lines.append("\t".join(header))
            lines.extend("\t".join(cell(item.get(k)) for k in header) for item in items)
        else:
            lines.append("(no rows)")
        lines.extend(f"data.{k}\t{cell(v)}" for k, v in data.items() if k != "items")
    elif isinstance(data, dict):
        lines.extend(f"data.{k}\t{cell(v)}" for k, v in data.items())
    else:
        lines.append(f"data\t{cell(data)}")
    for key, value in (envelope.get("pagination") or {}).items():
        lines.append(f"pagination.{key}\t{cell(value)}")
    for key, value in (envelope.get("meta") or {}).items():
        lines.append(f"meta.{key}\t{cell(value)}")
    text = "\n".join(lines) + "\n"
    if inert:
        from lcm_cli.render.visible import visible

        return visible(text)  # cells hold no TAB or LF, so only the layout's own survive
    return text
