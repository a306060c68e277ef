"""`--format table`: an operation's result laid out for a person, within the terminal width.

Knows no command: the shape comes from the :class:`Render` hint the operation declares
(headline columns and which to drop first, lists whose quiet rows fold into a tally, a
document read whole, a transcript, labels), and everything else from generic rules:

- nested objects are sections with a heading, their fields one per line, indented;
- a list of records is a table of its headline columns; when it does not fit, the least
  important columns go first, then each record is stacked as its own block of lines;
- values a person copies (ids, paths, hashes, cursors, fixes) are never cut or
  word-wrapped: they move to their own line, folded only past the terminal's width;
- sizes and durations are in human units, timestamps in local time without milliseconds;
- status-like values are coloured by severity (plain when not a terminal or NO_COLOR);
- control characters in stored text are shown escaped (:func:`~lcm_cli.render.visible.visible`).

Imported only for table output, so JSON runs never load rich.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

import lcm_cli.render.humane as humane
from lcm_cli.engine.core.render_hints import Render, Rows, Tally, Text, Transcript
from lcm_cli.engine.core.tokens import serialized_tokens
from lcm_cli.render.visible import visible

_INDENT = 2
_GROUP = 5  # more rows than this with one status and reason are listed, one line each
_LISTED = 20  # and at most this many of them are named
_GAP = 3  # the space rich puts between two columns of a SIMPLE_HEAD table
_MIN_TEXT = 12  # a wrapped column is never narrower than this


class _Fields(dict[str, Any]):
    """A record for :meth:`str.format_map`: a missing field reads as None, as ``.get`` would."""

    def __missing__(self, key: str) -> Any:
        return None


def _fill(pattern: str, record: Mapping[str, Any], **extra: Any) -> str:
    return pattern.format_map(_Fields(record, **extra))


def _fold(text: str, width: int) -> list[str]:
    """Cut each line of ``text`` into pieces of at most ``width`` characters (a copied value
    is never wrapped at spaces)."""
    width = max(width, 1)
    return [line[i : i + width] for line in text.split("\n") for i in range(0, len(line), width) or [0]]


def _wrap(text: str, width: int) -> list[str]:
    """Word-wrap each paragraph of ``text``; long words are folded."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(textwrap.wrap(paragraph, max(width, 1), break_on_hyphens=False) or [""])
    return lines


class _Page:
    """One rendering: the console, its width, the hint, and the lines drawn so far."""

    def __init__(self, console: Any, hint: Render) -> None:
        self.console = console
        self.width: int = console.width
        self.hint = hint
        self.labels = dict(hint.labels)
        self.shadows = dict(hint.shadows)
        self.verbatim = False  # inside one of the hint's verbatim fields
        self.unit = ""  # inside an object of durations or sizes ("timingsMs"): its field name
        self.last = "blank"  # what was drawn last: "blank", "heading" or "line"

    # -- primitives ---------------------------------------------------------------------

    def line(self, text: str = "", style: str | None = None) -> None:
        from rich.text import Text as RichText

        # Callers escape before measuring; this is the backstop (escaping twice changes nothing).
        self.console.print(RichText(visible(text), style=style or ""), overflow="fold", crop=False)
        self.last = "blank" if not text else "line"

    def gap(self) -> None:
        """A blank line, unless one (or a heading) was just drawn."""
        if self.last in ("line", "heading-end"):
            self.line()

    def heading(self, text: str, indent: int) -> None:
        for piece in _wrap(visible(text), self.width - indent):
            self.line(" " * indent + piece, "bold")
        self.last = "heading"

    def label(self, key: str, header: bool = False) -> str:
        return visible(humane.label(key, self.labels, self.verbatim, header))

    def value(self, key: str, value: Any) -> str:
        return visible(humane.scalar(key, value, self.verbatim, self.unit))

    def field(self, key: str, value: Any, indent: int, width: int) -> None:
        """One ``Label  value`` line; a long value wraps under itself, a copied one moves down."""
        name = self.label(key)
        text = self.value(key, value)
        style = humane.severity(key, value)
        pad = " " * indent + name.ljust(width) + "  "
        room = self.width - len(pad)
        if len(text) <= room and "\n" not in text:
            self._styled(pad, text, style)
        elif humane.is_copy(key) or room < 24:
            self.line(" " * indent + name)
            inner = indent + _INDENT
            for piece in (
                _fold(text, self.width - inner) if humane.is_copy(key) else _wrap(text, self.width - inner)
            ):
                self._styled(" " * inner, piece, style)
        else:
            for number, piece in enumerate(_wrap(text, room)):
                self._styled(pad if number == 0 else " " * len(pad), piece, style)

    def _styled(self, prefix: str, text: str, style: str | None) -> None:
        from rich.text import Text as RichText

        line = RichText(visible(prefix))
        line.append(visible(text), style=style or "")
        self.console.print(line, overflow="fold", crop=False)
        self.last = "line"

    # -- documents ----------------------------------------------------------------------

    def section(self, data: Mapping[str, Any], indent: int) -> None:
        """A record's fields in order; nested objects and lists each under their heading."""
        keys = [k for k in self.hint.first if k in data] + [k for k in data if k not in self.hint.first]
        keys = [k for k in keys if not (k in self.shadows and data.get(self.shadows[k]))]
        width = self._label_width([k for k in keys if not self._nested(data[k])], indent)
        for key in keys:
            if self._nested(data[key]):
                self._part(key, data[key], indent, width)
            else:
                if self.last == "heading-end":
                    self.line()
                self.field(key, data[key], indent, width)

    def _label_width(self, keys: list[str], indent: int) -> int:
        """The label column of a block: its longest label, up to half the width."""
        return min(max((len(self.label(k)) for k in keys), default=0), 40, self.width // 2 - indent)

    @staticmethod
    def _nested(value: Any) -> bool:
        if isinstance(value, dict):
            return bool(value)
        return isinstance(value, list) and any(isinstance(v, dict) for v in value)

    def _part(self, key: str, value: Any, indent: int, width: int) -> None:
        """A field, or a nested object or list of records under its own heading."""
        if not self._nested(value):
            self.field(key, value, indent, width)
            return
        self.gap()
        title = self.label(key)
        records = [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
        tally = next((t for t in self.hint.tallies if t.field == key), None)
        outer, outer_unit = self.verbatim, self.unit
        self.verbatim = outer or key in self.hint.verbatim  # its own label is still a field name
        if isinstance(value, dict) and (humane.is_duration(key) or key.endswith("Bytes")):
            self.unit = key
        try:
            if isinstance(value, dict):
                self.heading(title, indent)
                self.section(value, indent + _INDENT)
            elif tally is not None:
                self.heading(title, indent)
                self.tally(tally, records, indent + _INDENT)
            else:
                self.heading(f"{title} ({len(records)})", indent)
                self.records(records, indent)
        finally:
            self.verbatim, self.unit = outer, outer_unit
            self.last = "heading-end"  # a plain field after a part starts after a blank line

    # -- lists of records ---------------------------------------------------------------

    def _layout(self, records: list[dict[str, Any]]) -> tuple[list[str], Rows | None]:
        """The first matching headline layout's columns, else every plain field but the hidden ones."""
        first = records[0]
        for rows in self.hint.rows:
            if rows.when in first:
                return [c for c in rows.columns if any(c in r for r in records)], rows
        columns: list[str] = []
        for record in records:
            for key in record:
                if key in columns or key in self.hint.hidden:
                    continue
                if key in self.shadows and record.get(self.shadows[key]):
                    continue
                columns.append(key)
        return columns, None

    def records(self, records: list[dict[str, Any]], indent: int) -> None:
        """A table when the columns fit (after dropping the least important), else stacked blocks."""
        columns, rows = self._layout(records)
        if rows is not None and rows.text and any(r.get(rows.text) for r in records):
            self.entries(records, columns, rows.text, indent + _INDENT)
            return
        droppable = [c for c in (rows.drop if rows else ()) if c in columns]
        if rows is None and any(
            self._nested(r.get(c)) and isinstance(r.get(c), list) for r in records for c in columns
        ):
            self.stacked(records, indent + _INDENT)  # a cell would hide a list of records: stack them
            return
        while True:
            table = self._table(records, columns, indent)
            if table is not None or not droppable:
                break
            dropped = droppable.pop(0)
            columns = [c for c in columns if c != dropped]
        if table is None:
            self.stacked(records, indent + _INDENT)
        else:
            from rich.padding import Padding

            self.console.print(Padding(table, (0, 0, 0, indent)) if indent else table)
            self.last = "line"

    def _table(self, records: list[dict[str, Any]], columns: list[str], indent: int) -> Any:
        """A rich table of ``columns``, or None when it cannot fit the width.

        Copied values, numbers and short cells keep their whole width; only text columns
        wrap, never below their longest header word or :data:`_MIN_TEXT`.
        """
        from rich import box
        from rich.table import Table
        from rich.text import Text as RichText

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        cells = [[self._cell(c, r.get(c)) for c in columns] for r in records]
        least = _GAP * (len(columns) - 1)
        for index, column in enumerate(columns):
            name = self.label(column, header=True)
            texts = [row[index][0] for row in cells]
            natural = max(len(name), *(len(t) for t in texts))
            numeric = all(isinstance(r.get(column), (int, float)) or r.get(column) is None for r in records)
            longest_word = max((len(w) for w in name.split()), default=1)
            keep = humane.is_copy(column) or numeric or natural <= 20
            # Wider than its longest word (up to 30), so a squeeze never breaks a word.
            longest_word = max([longest_word, *(min(len(w), 30) for t in texts for w in t.split())])
            narrowest = natural if keep else max(longest_word, min(_MIN_TEXT, natural))
            least += narrowest
            table.add_column(
                name,
                justify="right" if numeric and not humane.is_copy(column) else "left",
                no_wrap=keep,
                overflow="fold",
                min_width=narrowest,
            )
        if least > self.width - indent:
            return None
        for row in cells:  # each cell's text is a value(), already made visible
            table.add_row(*(RichText(text, style=style or "") for text, style in row))
        return table

    def _cell(self, column: str, value: Any) -> tuple[str, str | None]:
        if isinstance(value, dict) and "count" in value:
            value = value["count"]  # a tally object ({count, byReason, ...}) by its count
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return f"{len(value)} item{'' if len(value) == 1 else 's'}", None
        return self.value(column, value), humane.severity(column, value)

    def stacked(self, records: list[dict[str, Any]], indent: int) -> None:
        """Each record as its own block of ``Label  value`` lines, separated by a blank line."""
        for number, record in enumerate(records):
            if number:
                self.line()
            self.section(record, indent)

    def entries(self, records: list[dict[str, Any]], columns: list[str], text: str, indent: int) -> None:
        """Each record as one line of its columns, then its text in full, wrapped."""
        for number, record in enumerate(records):
            if number:
                self.line()
            shown = [
                c for c in columns if c != text and not (c in self.shadows and record.get(self.shadows[c]))
            ]
            facts = [f"{self.label(c, header=True)} {self.value(c, record.get(c))}" for c in shown]
            for piece in _wrap(" · ".join(facts), self.width - indent):
                self.line(" " * indent + piece, "bold")
            for piece in _wrap(visible(str(record.get(text) or humane.NONE)), self.width - indent - _INDENT):
                self.line(" " * (indent + _INDENT) + piece)

    def tally(self, tally: Tally, records: list[dict[str, Any]], indent: int) -> None:
        """Rows that need attention in full (heading, then fields); the quiet ones as counts."""
        quiet = dict(tally.quiet)
        counts: dict[str, int] = {}
        loud: list[dict[str, Any]] = []
        for record in records:
            status = str(record.get(tally.status))
            if status in quiet and not any(record.get(a) for a in tally.attention):
                counts[status] = counts.get(status, 0) + 1
            else:
                loud.append(record)
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for record in loud:
            reason = next((str(record[a]) for a in tally.attention if record.get(a)), "")
            groups.setdefault((str(record.get(tally.status)), reason), []).append(record)
        for (status, reason), group in groups.items():
            if tally.listed and len(group) > _GROUP:
                self._listed(tally, status, reason, group, indent)
                continue
            for record in group:
                self._loud(tally, record, indent)
        parts = []
        for status, word in tally.quiet:
            count = counts.get(status, 0)
            if count:
                noun = tally.noun if count == 1 else tally.noun + "s"
                parts.append(f"{count} {noun} {word}")
        if parts or not loud:
            self.gap()
        if parts:
            self.line(" " * indent + ", ".join(parts), humane.severity(tally.status, tally.quiet[0][0]))
        elif not loud:
            self.line(" " * indent + f"no {tally.noun}s")

    def _loud(self, tally: Tally, record: dict[str, Any], indent: int) -> None:
        """One row that needs attention: its heading, then its fields one per line."""
        self.gap()
        style = humane.severity(tally.status, record.get(tally.status))
        for piece in _wrap(visible(_fill(tally.heading, record)), self.width - indent):
            self.line(" " * indent + piece, style)
        shown = [f for f in tally.fields if record.get(f) not in (None, [], {}, "")]
        width = self._label_width(shown, indent + _INDENT)
        for key in shown:
            value = record[key]
            if isinstance(value, dict) and "count" in value:
                value = value.get("byReason") or value["count"]
            self.field(key, value, indent + _INDENT, width)

    def _listed(
        self, tally: Tally, status: str, reason: str, group: list[dict[str, Any]], indent: int
    ) -> None:
        """Many rows with one status and reason: a count line, then one value per row."""
        self.gap()
        noun = tally.noun if len(group) == 1 else tally.noun + "s"
        style = humane.severity(tally.status, status)
        for piece in _wrap(
            visible(f"{len(group)} {noun} {status}" + (f": {reason}" if reason else "")), self.width - indent
        ):
            self.line(" " * indent + piece, style)
        inner = indent + _INDENT
        values = [visible(str(record.get(tally.listed))) for record in group[:_LISTED]]
        folders = {os.path.dirname(v) for v in values}
        if len(folders) == 1 and "" not in folders:  # one folder: named once, then file names
            for piece in _fold(f"in {folders.pop()}{os.sep}", self.width - indent):
                self.line(" " * indent + piece, style)
            values = [os.path.basename(v) for v in values]
        for value in values:
            for piece in _fold(value, self.width - inner):
                self.line(" " * inner + piece)
        if len(group) > _LISTED:
            self.line(" " * inner + f"and {len(group) - _LISTED} more (--format json lists every one)", "dim")

    # -- the envelope's other parts -----------------------------------------------------

    def pagination(self, pagination: Mapping[str, Any]) -> None:
        """One line: how many rows came, and the cursor of the next page when there is one."""
        returned = pagination.get("returned")
        limit = pagination.get("limit")
        # A page cut by a token budget has no row limit (``limit: null``).
        cap = f" (limit {limit})" if limit is not None else ""
        shown = f"{returned} shown{cap}" if returned is not None else ""
        self.gap()
        if pagination.get("hasMore") and pagination.get("nextCursor"):
            self.line(f"{shown}; more with --cursor:".lstrip("; "), "bold")
            for piece in _fold(visible(str(pagination["nextCursor"])), self.width):
                self.line(piece)
        else:
            self.line(f"{shown}; no more pages".lstrip("; "), "dim")


def render_rich(envelope: dict[str, Any], stream: TextIO, hint: Render | None = None) -> None:
    """Draw ``envelope`` for a person; ``hint`` is the operation's (None: the defaults)."""
    from rich.console import Console

    hint = hint or Render()
    data = envelope.get("data")
    if isinstance(data, dict) and hint.text is not None:
        _text(stream, hint.text, data)
        return
    console = Console(file=stream, soft_wrap=False)
    with console.capture() as captured:
        _draw(_Page(console, hint), envelope)
    # Rich pads every line to the width; a person (and a diff) wants no trailing blanks.
    text = "\n".join(line.rstrip() for line in captured.get().split("\n"))
    from lcm_cli.render.pager import show

    show(text.strip("\n") + "\n", stream)


def _draw(page: _Page, envelope: dict[str, Any]) -> None:
    hint = page.hint
    data = envelope.get("data")
    if isinstance(data, dict) and hint.transcript is not None:
        _transcript(page, hint.transcript, envelope["command"], data)
    elif isinstance(data, dict):
        page.section(data, 0)
    elif isinstance(data, list) and all(isinstance(v, dict) for v in data):
        page.records(data, 0)
    else:
        page.line(humane.scalar("", data))
    meta = envelope.get("meta") or {}
    shown = {k: meta[k] for k in page.hint.meta if k in meta}
    if shown:
        page.gap()
        page.section(shown, 0)
    if envelope.get("pagination"):
        page.pagination(envelope["pagination"])


def _text(stream: TextIO, text: Text, data: dict[str, Any]) -> None:
    """A heading line, then the document itself as it is (a person copies it whole), but
    for its control characters, shown escaped; ``--format json`` has it exact."""
    where = None
    for key in text.where:  # the first set field, as an `or` chain picks it
        where = data.get(key)
        if where:
            break
    from lcm_cli.render.pager import show

    show(
        visible(_fill(text.heading, data, where=where)) + "\n" + visible(data.get(text.field) or text.empty),
        stream,
    )


def _path(data: Mapping[str, Any], path: str) -> Any:
    """``a.b`` walks nested objects (None when a step is missing); ``#a`` counts list ``a``."""
    if path.startswith("#"):
        return len(data.get(path[1:]) or [])
    value: Any = data
    for step in path.split("."):
        value = value.get(step) if isinstance(value, Mapping) else None
    return value


def _message_text(message: Mapping[str, Any]) -> str:
    """A chat message's text: its text blocks, with other blocks named in brackets."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind in ("thinking", "reasoning", "redacted_thinking"):
            texts.append("(reasoning)")
        else:
            name = block.get("name") or message.get("toolName") or ""
            texts.append(f"[{kind} {name}]".replace(" ]", "]"))
    return " ".join(texts)


def _folded(transcript: Transcript, messages: list[Any]) -> Iterator[tuple[str, str, Any]]:
    """Each message's role and text, a wrapped record shown by its own fields."""
    fold = transcript.fold
    pattern = re.compile(fold.pattern, re.DOTALL) if fold is not None else None
    for message in messages:
        text = _message_text(message)
        role = str(message.get("role", ""))
        if fold is not None and pattern is not None and role == fold.role and text.startswith(fold.prefix):
            found = pattern.search(text)
            if found:
                groups = {k: (v or "").strip() for k, v in found.groupdict().items()}
                role = _fill(fold.shown_role, groups)
                text = _fill(fold.shown_text, groups)
        yield role, text, message


def _transcript(page: _Page, transcript: Transcript, command: str, data: dict[str, Any]) -> None:
    """Each message (index, role, token estimate) with its text in full, then the totals."""
    page.heading(_fill(transcript.title, {}, command=command), 0)
    for index, (role, text, message) in enumerate(_folded(transcript, data.get(transcript.field) or [])):
        page.line()
        page.line(f"#{index} {role} · {serialized_tokens(message)} tokens", "bold")
        for piece in _wrap(visible(text), page.width - _INDENT):
            page.line(" " * _INDENT + piece)
    totals = {label: _path(data, path) for label, path in transcript.totals}
    page.line()
    page.heading("Totals", 0)
    page.section(totals, _INDENT)
