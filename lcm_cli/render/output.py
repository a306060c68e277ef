"""The one output sink: envelopes to stdout as JSON, NDJSON, a rich table or TSV; errors to stderr.

Data goes to stdout only on success. A failure leaves stdout empty and writes one JSON
error object on stderr, whatever ``--format`` says, so scripts can always parse it.
"""

from __future__ import annotations

import json
import re
import sys

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError

if TYPE_CHECKING:
    from typing import Any, TextIO


def js_numbers(value: Any) -> Any:
    """``value`` with every float as JavaScript holds it (see :func:`jscompat.js_number`):
    integral ones as ints, tiny and non-finite ones spelled as ``JSON.stringify`` does."""
    if isinstance(value, float):
        from lcm_cli.engine.core.jscompat import js_number

        return js_number(value)
    if isinstance(value, dict):
        return {k: js_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [js_numbers(v) for v in value]
    return value


# A float Python prints differently from JavaScript: integral ("3.0"), non-finite, or with
# an exponent ("1e-07", "2e-05", "1e+16"). Text inside strings can match too; that only
# costs the slow path, never a wrong answer.
_FLOATISH = r"\d\.0(?=[,\]}\s]|$)|NaN|Infinity|\de[-+]\d"


def to_json(value: Any, *, pretty: bool = False) -> str:
    """Compact (or 2-space indented) JSON with raw non-ASCII and a trailing newline.

    Numbers print as JavaScript would (see :func:`js_numbers`); the rewrite walk runs
    only when the plain output shows a float that needs it, since big envelopes (an
    assembled context) are mostly strings.
    """
    if pretty:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Substring tests are C-fast; the regex runs only when one of them hits.
    if (".0" in text or "NaN" in text or "Infinity" in text or "e-" in text or "e+" in text) and (
        re.search(_FLOATISH, text)
    ):
        from lcm_cli.engine.core.jscompat import stringify, stringify_indented

        numbers = js_numbers(value)
        text = stringify_indented(numbers, 2) if pretty else stringify(numbers)
    return text + "\n"


def _items_key(command: str) -> str:
    from lcm_cli.engine.core.registry import OPERATIONS

    spec = OPERATIONS.get(command)  # `hook.list`, `commands`: not operations
    return spec.items if spec is not None else ""


def to_ndjson(envelope: dict[str, Any], *, continuation: bool = True) -> str:
    """NDJSON: each item of a list operation's data on its own line (other data: one line).

    When more pages follow, a last line ``{"pagination": {...}}`` says where to continue
    (``continuation`` False leaves it out: `--all` follows it itself).
    """
    data = envelope.get("data")
    key = _items_key(str(envelope.get("command", "")))
    rows = data.get(key) if key and isinstance(data, dict) else None
    lines = [to_json(row) for row in rows] if isinstance(rows, list) else [to_json(data)]
    pagination = envelope.get("pagination")
    if continuation and isinstance(pagination, dict) and pagination.get("hasMore"):
        lines.append(to_json({"pagination": pagination}))
    return "".join(lines)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stand-in without isatty, or a closed stream
        return False


class Output:
    """Writes one envelope or one error; chooses the renderer from ``--format``."""

    def __init__(
        self,
        fmt: str = "json",
        pretty: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.format = fmt
        self.pretty = pretty
        self.headers = True  # --no-headers: csv and tsv-plain leave out their header line
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def emit(self, envelope: dict[str, Any]) -> None:
        """Render a success envelope on stdout."""
        if self.format == "table":
            from lcm_cli.engine.core.registry import OPERATIONS
            from lcm_cli.render.table import render_rich

            spec = OPERATIONS.get(envelope["command"])  # `hook.list`, `commands`: not operations
            render_rich(envelope, self.stdout, spec.render if spec is not None else None)
        elif self.format == "tsv":
            from lcm_cli.render.tsv import render_tsv

            self.stdout.write(render_tsv(js_numbers(envelope), inert=_is_terminal(self.stdout)))
        elif self.format == "ndjson":
            self.stdout.write(to_ndjson(envelope))
        elif self.format in ("csv", "tsv-plain"):
            from lcm_cli.render.rows import header_of, records, render_rows

            rows = records(js_numbers(envelope), _items_key(str(envelope.get("command", ""))))
            self.stdout.write(render_rows(rows, header_of(rows), self.format, headers=self.headers))
        else:
            self.stdout.write(to_json(envelope, pretty=self.pretty))
        self.stdout.flush()

    def error(self, err: LcmError, *, pretty: bool | None = None) -> None:
        """Render the failure envelope on stderr (always JSON)."""
        pretty = self.pretty if pretty is None else pretty
        self.stderr.write(to_json({"ok": False, "error": err.to_dict()}, pretty=pretty))
        self.stderr.flush()
