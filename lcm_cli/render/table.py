"""`--format table`: rich tables and trees drawn from an operation's rendering hints.

Knows no command: the shape comes from the :class:`Render` hint the operation declares
(headline columns, a tree, a document, a report of parts, a transcript), or from the
defaults when it declares none. Imported only for table output, so JSON runs never load
rich.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, TextIO

from lcm_cli.engine.core.render_hints import Render, Sections, Text, Transcript, Tree
from lcm_cli.engine.core.tokens import serialized_tokens
from lcm_cli.render.tsv import cell


class _Fields(dict[str, Any]):
    """A record for :meth:`str.format_map`: a missing field reads as None, as ``.get`` would."""

    def __missing__(self, key: str) -> Any:
        return None


def _fill(pattern: str, record: Mapping[str, Any], **extra: Any) -> str:
    return pattern.format_map(_Fields(record, **extra))


def _short(value: Any, width: int = 60) -> str:
    text = cell(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _columns(hint: Render, items: list[dict[str, Any]]) -> list[str]:
    """The first matching headline layout's columns, else every field but the hidden ones."""
    first = items[0]
    for rows in hint.rows:
        if rows.when in first:
            return [c for c in rows.columns if c in first]
    columns: list[str] = []
    for item in items:
        columns.extend(k for k in item if k not in columns and k not in hint.hidden)
    return columns


def _list_cell(hint: Render, column: str, value: Any) -> Any:
    """What a list row shows: a path by its file name, a tally by its count."""
    if column in hint.file_names and isinstance(value, str):
        return os.path.basename(value)
    if isinstance(value, dict) and hint.tally in value:
        return value[hint.tally]
    return value


def render_rich(envelope: dict[str, Any], stream: TextIO, hint: Render | None = None) -> None:
    """Draw ``envelope`` for a person; ``hint`` is the operation's (None: the defaults)."""
    from rich.console import Console

    hint = hint or Render()
    console = Console(file=stream, soft_wrap=False)
    command = envelope["command"]
    data = envelope.get("data")
    if isinstance(data, dict) and hint.tree is not None:
        console.print(_tree(hint.tree, data))
    elif isinstance(data, dict) and hint.sections is not None:
        _sections(console, hint, hint.sections, command, data)
    elif isinstance(data, dict) and hint.transcript is not None:
        _transcript(console, hint.transcript, command, data)
    elif isinstance(data, dict) and hint.text is not None:
        _text(stream, hint.text, data)
    elif isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if not isinstance(v, list)}
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if scalars:
            console.print(_kv_table(command, scalars))
        for key, items in lists.items():
            if items and all(isinstance(i, dict) for i in items):
                console.print(_list_table(hint, f"{command} {key}", items))
            else:
                console.print(f"{key}: {_short(items, 200)}" if items else f"{key}: (no rows)")
    else:
        console.print(cell(data))
    if envelope.get("pagination"):
        console.print(_kv_table("pagination", envelope["pagination"]))


def _kv_table(title: str, mapping: Mapping[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for key, value in mapping.items():
        table.add_row(key, _short(value, 100))
    return table


def _list_table(hint: Render, title: str, items: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    columns = _columns(hint, items)
    table = Table(title=title, caption="--format json shows every field")
    for column in columns:
        table.add_column(column, overflow="fold")
    for item in items:
        table.add_row(
            *(_short(_list_cell(hint, c, item.get(c)), 100 if c in hint.wide else 40) for c in columns)
        )
    return table


def _tree(tree: Tree, data: dict[str, Any]) -> Any:
    """A record, its text, then one branch per related list (each line shortened)."""
    from rich.tree import Tree as RichTree

    root = data[tree.root]
    drawn = RichTree(f"[bold]{root[tree.key]}[/] {_fill(tree.label, root)}")
    drawn.add(_short(root.get(tree.text), 100))
    for branch in tree.branches:
        records = data[branch.field]
        node = drawn.add(f"{branch.label} [{len(records)}]")
        for record in records:
            node.add(f"{_fill(branch.line, record)}: {_short(record[branch.text])}")
    return drawn


def _sections(console: Any, hint: Render, sections: Sections, command: str, data: dict[str, Any]) -> None:
    """The plain fields in one table, then one table per nested object and its rows."""
    console.print(_kv_table(command, {k: v for k, v in data.items() if not isinstance(v, dict)}))
    for key, part in data.items():
        if isinstance(part, dict):
            console.print(
                _kv_table(f"{command} {key}", {k: v for k, v in part.items() if k != sections.rows})
            )
            if part.get(sections.rows):
                console.print(_list_table(hint, f"{command} {sections.rows_title}", part[sections.rows]))


def _text(stream: TextIO, text: Text, data: dict[str, Any]) -> None:
    """A heading line, then the document itself, uncut."""
    where = None
    for key in text.where:  # the first set field, as an `or` chain picks it
        where = data.get(key)
        if where:
            break
    stream.write(_fill(text.heading, data, where=where) + "\n")
    stream.write(data.get(text.field) or text.empty)


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


def _transcript(console: Any, transcript: Transcript, command: str, data: dict[str, Any]) -> None:
    """One row per message (index, role, token estimate, text), then the totals."""
    from rich.table import Table

    table = Table(
        title=_fill(transcript.title, {}, command=command), caption="--format json shows every field"
    )
    table.add_column("#", justify="right")
    table.add_column("role")
    table.add_column("tokens", justify="right")
    table.add_column("content", overflow="fold")
    fold = transcript.fold
    pattern = re.compile(fold.pattern, re.DOTALL) if fold is not None else None
    for index, message in enumerate(data.get(transcript.field) or []):
        text = _message_text(message)
        role = message.get("role", "")
        if fold is not None and pattern is not None and role == fold.role and text.startswith(fold.prefix):
            found = pattern.search(text)
            if found:
                groups = {k: (v or "").strip() for k, v in found.groupdict().items()}
                role = _fill(fold.shown_role, groups)
                text = _fill(fold.shown_text, groups)
        table.add_row(str(index), role, str(serialized_tokens(message)), _short(text, 120))
    console.print(table)
    totals = {label: _path(data, path) for label, path in transcript.totals}
    if transcript.spread:
        totals.update(data.get(transcript.spread) or {})
    console.print(_kv_table("totals", totals))
