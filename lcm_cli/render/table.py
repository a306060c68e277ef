"""Human renderings of an envelope: rich tables and trees, and the reference's TSV layout.

Imported only when ``--format table`` or ``tsv`` is asked for, so JSON runs never load rich.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, TextIO

_BREAKS = re.compile(r"[\t\r\n]+")
_SUMMARY_PARTS = re.compile(r'<summary id="([^"]*)"[^>]* depth="(\d+)".*?<content>(.*)</content>', re.DOTALL)


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        text = str(value)
    return _BREAKS.sub(" ", text)


def render_tsv(envelope: dict[str, Any]) -> str:
    """The reference `lcm --format table` layout: TAB-separated lines, one fact per line."""
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
            lines.extend("\t".join(_cell(item.get(k)) for k in header) for item in items)
        else:
            lines.append("(no rows)")
        lines.extend(f"data.{k}\t{_cell(v)}" for k, v in data.items() if k != "items")
    elif isinstance(data, dict):
        lines.extend(f"data.{k}\t{_cell(v)}" for k, v in data.items())
    else:
        lines.append(f"data\t{_cell(data)}")
    for key, value in (envelope.get("pagination") or {}).items():
        lines.append(f"pagination.{key}\t{_cell(value)}")
    for key, value in (envelope.get("meta") or {}).items():
        lines.append(f"meta.{key}\t{_cell(value)}")
    return "\n".join(lines) + "\n"


# The columns a person scans first; JSON output always carries every field.
_HEADLINES = (
    ("check", ("status", "check", "count", "fix")),
    ("unit", ("unit", "check", "conversationId", "status")),
    ("summaryId", ("summaryId", "kind", "depth", "tokenCount", "coverageAt", "descendantCount", "preview")),
    ("messageId", ("messageId", "seq", "role", "tokenCount", "createdAt", "preview")),
    # migrate-sessions: one row per transcript (its items also carry a sessionId).
    (
        "file",
        (
            "file",
            "status",
            "reason",
            "conversation",
            "conversationId",
            "sessionKey",
            "candidateMessages",
            "wouldImportMessages",
            "importedMessages",
            "missingEntries",
            "skippedLines",
        ),
    ),
    ("hasManifest", ("name", "label", "sizeBytes", "createdAt", "hasManifest", "verifiedAtCreation")),
    (
        "sessionId",
        (
            "conversationId",
            "sessionKey",
            "active",
            "title",
            "messageCount",
            "summaryCount",
            "contextTokens",
            "updatedAt",
        ),
    ),
)


def _columns(items: list[dict[str, Any]]) -> list[str]:
    first = items[0]
    for marker, headline in _HEADLINES:
        if marker in first:
            return [c for c in headline if c in first]
    columns: list[str] = []
    for item in items:
        columns.extend(k for k in item if k not in columns and k != "content")
    return columns


def _list_cell(column: str, value: Any) -> Any:
    """What a list row shows: a transcript by its file name, a tally by its count."""
    if column == "file" and isinstance(value, str):
        return os.path.basename(value)
    if isinstance(value, dict) and "count" in value:
        return value["count"]
    return value


def _short(value: Any, width: int = 60) -> str:
    text = _cell(value)
    return text if len(text) <= width else text[: width - 1] + "…"


# Commands whose `--format table` output is one field printed in full.
_FULL_TEXT = {"prompts.show": "text", "prompts.render": "text", "prompts.diff": "diff"}


def render_rich(envelope: dict[str, Any], stream: TextIO) -> None:
    """Tables for lists, a key/value table for objects, a tree for a summary's neighbours."""
    from rich.console import Console
    from rich.table import Table
    from rich.tree import Tree

    console = Console(file=stream, soft_wrap=False)
    command = envelope["command"]
    data = envelope.get("data")

    def kv_table(title: str, mapping: dict[str, Any]) -> Table:
        table = Table(title=title, show_header=False)
        table.add_column("key", style="bold")
        table.add_column("value")
        for key, value in mapping.items():
            table.add_row(key, _short(value, 100))
        return table

    def list_table(title: str, items: list[dict[str, Any]]) -> Table:
        columns = _columns(items)
        table = Table(title=title, caption="--format json shows every field")
        for column in columns:
            table.add_column(column, overflow="fold")
        for item in items:
            table.add_row(
                *(
                    _short(_list_cell(c, item.get(c)), 100 if c in ("fix", "file", "name") else 40)
                    for c in columns
                )
            )
        return table

    if command == "summaries.show" and isinstance(data, dict):
        summary = data["summary"]
        tree = Tree(f"[bold]{summary['summaryId']}[/] {summary['kind']} depth {summary['depth']}")
        tree.add(_short(summary.get("preview"), 100))
        consumers = tree.add(f"parents (consume this) [{len(data['parents'])}]")
        for node in data["parents"]:
            consumers.add(f"{node['summaryId']} {node['kind']} d{node['depth']}: {_short(node['preview'])}")
        sources = tree.add(f"children (its sources) [{len(data['children'])}]")
        for node in data["children"]:
            sources.add(f"{node['summaryId']} {node['kind']} d{node['depth']}: {_short(node['preview'])}")
        messages = tree.add(f"source messages [{len(data['sourceMessages'])}]")
        for msg in data["sourceMessages"]:
            messages.add(f"#{msg['messageId']} seq {msg['seq']} {msg['role']}: {_short(msg['content'])}")
        console.print(tree)
    elif command == "rotate" and isinstance(data, dict):
        # One table per part of the report (transcript, compaction, backup, checkpoint).
        console.print(kv_table(command, {k: v for k, v in data.items() if not isinstance(v, dict)}))
        for key, part in data.items():
            if isinstance(part, dict):
                console.print(kv_table(f"rotate {key}", {k: v for k, v in part.items() if k != "passes"}))
                if part.get("passes"):
                    console.print(list_table("rotate leaf passes", part["passes"]))
    elif command == "context.assemble" and isinstance(data, dict):
        _render_context(console, data, kv_table)
    elif command in _FULL_TEXT and isinstance(data, dict):
        # A prompt is read as a whole: a person wants the text itself, not a cell preview.
        where = data.get("path") or data.get("overridePath") or data.get("builtinPath")
        stream.write(f"# {data.get('name')} ({data.get('source')}): {where}\n")
        stream.write(data.get(_FULL_TEXT[command]) or "(no differences)\n")
    elif isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if not isinstance(v, list)}
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if scalars:
            console.print(kv_table(command, scalars))
        for key, items in lists.items():
            if items and all(isinstance(i, dict) for i in items):
                console.print(list_table(f"{command} {key}", items))
            else:
                console.print(f"{key}: {_short(items, 200)}" if items else f"{key}: (no rows)")
    else:
        console.print(_cell(data))
    if envelope.get("pagination"):
        console.print(kv_table("pagination", envelope["pagination"]))


def _message_text(message: dict[str, Any]) -> str:
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


def _render_context(console: Any, data: dict[str, Any], kv_table: Any) -> None:
    """The assembled context as a person reads it: one row per message, then the totals."""
    from rich.table import Table

    from lcm_cli.engine.core.tokens import serialized_tokens

    table = Table(title="context.assemble: what the model sees", caption="--format json shows every field")
    table.add_column("#", justify="right")
    table.add_column("role")
    table.add_column("tokens", justify="right")
    table.add_column("content", overflow="fold")
    for index, message in enumerate(data.get("messages") or []):
        text = _message_text(message)
        role = message.get("role", "")
        if role == "user" and text.startswith("<summary "):
            found = _SUMMARY_PARTS.search(text)
            if found:
                role = f"summary d{found.group(2)}"
                text = f"{found.group(1)}: {found.group(3).strip()}"
        table.add_row(str(index), role, str(serialized_tokens(message)), _short(text, 120))
    console.print(table)
    details = dict(data.get("details") or {})
    totals = {"messages": len(data.get("messages") or []), "estimatedTokens": data.get("estimatedTokens")}
    projection = data.get("contextProjection") or {}
    assembly = {
        "reason": data.get("reason"),
        "promptAuthority": data.get("promptAuthority"),
        "projectionEpoch": projection.get("epoch"),
        "promptRecallFingerprint": projection.get("fingerprint"),
    }
    console.print(kv_table("totals", {**totals, **assembly, **details}))
