"""Exploration summaries: a short, deterministic description of an externalized payload.

What the model sees in place of a large file (compat/engine.md §2.5): enough to decide
whether to open it with ``lcm_describe``. Every summary here is computed from the bytes
alone, offline; the reference's optional model-written summary for "other text" is not
used (its deterministic fallback is).
"""

from __future__ import annotations

import json
import re
from typing import Any

_CODE_EXTENSIONS = frozenset(
    "py js ts tsx jsx mjs cjs go rs java kt c h cc cpp hpp cs rb php swift scala sh bash zsh lua pl r sql".split()
)
_IMPORT_LINE = re.compile(
    r"^\s*(?:import\s|from\s+\S+\s+import\s|#include\s|use\s|require\(|const\s+\w+\s*=\s*require\()"
)
_DEFINITION = re.compile(
    r"^(?:export\s+)?(?:async\s+)?(?:def|class|function|fn|func|interface|type|struct|enum|impl|pub\s+fn)\s+([A-Za-z_][\w]*)"
)
_MARKDOWN_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_XML_TAG = re.compile(r"<([A-Za-z_][\w:.-]*)[\s/>]")


def _extension(file_name: str | None) -> str:
    if not file_name or "." not in file_name:
        return ""
    return file_name.rsplit(".", 1)[1].lower()


def content_class(file_name: str | None, mime: str | None) -> str:
    """``image``, ``json``, ``csv``, ``xml``, ``yaml``, ``code`` or ``text``."""
    ext = _extension(file_name)
    mime = (mime or "").lower()
    if mime.startswith("image/"):
        return "image"
    if ext == "json" or mime.endswith("json"):
        return "json"
    if ext in ("csv", "tsv") or mime in ("text/csv", "text/tab-separated-values"):
        return "csv"
    if ext in ("xml", "html", "svg") or mime.endswith("xml"):
        return "xml"
    if ext in ("yaml", "yml") or "yaml" in mime:
        return "yaml"
    if ext in _CODE_EXTENSIONS:
        return "code"
    return "text"


def summarize_image(byte_size: int, mime: str, file_name: str | None = None) -> str:
    """One line: image type, size and (when known) name."""
    kind = mime.split("/", 1)[-1].upper() if mime else "unknown"
    name = f" named {file_name}" if file_name else ""
    return f"{kind} image{name}, {byte_size:,} bytes."


def _shape(value: Any, depth: int) -> str:
    if isinstance(value, list):
        inner = f" of {_shape(value[0], depth + 1)}" if value and depth < 2 else ""
        return f"array[{len(value)}]{inner}"
    if isinstance(value, dict):
        keys = list(value)[:10]
        if depth >= 2:
            return f"object({len(value)} keys)"
        fields = ", ".join(f"{k}: {_shape(value[k], depth + 1)}" for k in keys)
        more = ", ..." if len(value) > len(keys) else ""
        return f"object({len(value)} keys){{{fields}{more}}}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def summarize_json(text: str) -> str:
    """Top-level type and a shape sketch (array lengths, up to 10 keys, depth 2)."""
    try:
        value = json.loads(text)
    except ValueError:
        return summarize_text(text)
    top = "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "value"
    return f"JSON {top}. Shape: {_shape(value, 0)}."


def summarize_csv(text: str, delimiter: str = ",") -> str:
    """Row count, column headers and the first data row (at most 180 characters)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "Empty table."
    if delimiter == "," and lines[0].count("\t") > lines[0].count(","):
        delimiter = "\t"
    headers = [h.strip() for h in lines[0].split(delimiter)]
    first = lines[1][:180] if len(lines) > 1 else "(none)"
    return f"Table with {len(lines) - 1:,} data rows and {len(headers)} columns: {', '.join(headers)}. First row: {first}"


def summarize_xml(text: str) -> str:
    """The root element and the child tags (at most 30)."""
    tags = _XML_TAG.findall(text)
    if not tags:
        return summarize_text(text)
    root = tags[0]
    children = list(dict.fromkeys(t for t in tags[1:] if t != root))[:30]
    return f"XML document, root <{root}>. Child tags: {', '.join(children) or '(none)'}."


def summarize_yaml(text: str) -> str:
    """The top-level keys (at most 30)."""
    keys = [m.group(1) for m in re.finditer(r"^([A-Za-z_][\w.-]*)\s*:", text, re.M)]
    keys = list(dict.fromkeys(keys))[:30]
    return f"YAML document. Top-level keys: {', '.join(keys) or '(none)'}."


def summarize_code(text: str, file_name: str | None = None) -> str:
    """Line count, up to 12 import lines, up to 24 top-level definitions."""
    lines = text.splitlines()
    imports = list(dict.fromkeys(line.strip() for line in lines if _IMPORT_LINE.match(line)))[:12]
    found = (m.group(1) for m in (_DEFINITION.match(line) for line in lines) if m)
    definitions = list(dict.fromkeys(found))[:24]
    parts = [f"Source file{' ' + file_name if file_name else ''}: {len(lines):,} lines."]
    if imports:
        parts.append("Imports: " + "; ".join(imports) + ".")
    if definitions:
        parts.append("Definitions: " + ", ".join(definitions) + ".")
    return " ".join(parts)


def summarize_text(text: str) -> str:
    """Characters, words, lines, up to 18 headers, and the first and last 500 characters."""
    lines = text.splitlines()
    headers = [line.strip() for line in lines if _MARKDOWN_HEADER.match(line)][:18]
    parts = [f"Text: {len(text):,} chars, {len(text.split()):,} words, {len(lines):,} lines."]
    if headers:
        parts.append("Headers: " + " | ".join(headers) + ".")
    head = text[:500].strip()
    parts.append(f"Starts: {head}")
    if len(text) > 1000:
        parts.append(f"Ends: {text[-500:].strip()}")
    return "\n".join(parts)


def exploration_summary(text: str, file_name: str | None, mime: str | None) -> str:
    """The deterministic summary of a text payload, chosen by its content class."""
    kind = content_class(file_name, mime)
    if kind == "json":
        return summarize_json(text)
    if kind == "csv":
        return summarize_csv(text, "\t" if _extension(file_name) == "tsv" else ",")
    if kind == "xml":
        return summarize_xml(text)
    if kind == "yaml":
        return summarize_yaml(text)
    if kind == "code":
        return summarize_code(text, file_name)
    return summarize_text(text)
