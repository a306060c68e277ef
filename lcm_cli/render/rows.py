"""Plain rows for `cut`, `sort` and spreadsheets: `--format csv` and `--format tsv-plain`.

One header line (unless `--no-headers`), then one line per record: the items of a list
command, else the data itself as one record. Nested objects become dot-path columns (the
`--fields` spelling); a list is one cell of compact JSON. Unlike `--format tsv` (the reference's report layout), nothing
else is printed: paging and meta stay in the JSON formats (`--all` follows the pages).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from lcm_cli.render.tsv import cell


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects become dot-path columns (``status.messages.count``); lists stay one cell."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def records(envelope: dict[str, Any], items_key: str) -> list[dict[str, Any]]:
    """The records of an envelope: the items of a list command, else the data as one record."""
    data = envelope.get("data")
    if items_key and isinstance(data, dict) and isinstance(data.get(items_key), list):
        rows = data[items_key]
    else:
        rows = [data]
    return [flatten(row) if isinstance(row, dict) else {"value": row} for row in rows]


def header_of(rows: list[dict[str, Any]]) -> list[str]:
    """Every key, in the order the records first name it (the `--fields` order when given)."""
    header: list[str] = []
    for row in rows:
        header += [key for key in row if key not in header]
    return header


def _text(value: Any, *, exact: bool) -> str:
    """A cell: empty for null; CSV keeps a text's line breaks (it quotes them), TSV cannot."""
    if value is None:
        return ""
    if exact and isinstance(value, str):
        return value
    return cell(value)


def render_rows(rows: list[dict[str, Any]], header: list[str], fmt: str, *, headers: bool) -> str:
    """``rows`` under ``header`` as CSV (RFC 4180 quoting) or plain TSV (no TAB or line break in a cell)."""
    out = io.StringIO()
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        if headers:
            writer.writerow(header)
        writer.writerows([[_text(row.get(key), exact=True) for key in header] for row in rows])
        return out.getvalue()
    lines = ["\t".join(header)] if headers else []
    lines += ["\t".join(_text(row.get(key), exact=False) for key in header) for row in rows]
    return "".join(line + "\n" for line in lines)
