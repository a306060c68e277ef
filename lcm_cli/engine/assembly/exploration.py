"""Exploration summaries: a short, deterministic description of an externalized payload.

What the model sees in place of a large file (docs/reference/engine.md §2.5): enough to decide
whether to open it with ``lcm_describe``. The summary is data the model reads, so its text
is the reference's, character for character: the same content classes (structured, code,
text), the same counts, excerpts and limits, with lengths and slices counted in UTF-16 code
units and numbers grouped as ``toLocaleString("en-US")`` groups them. Every summary is
computed from the bytes alone, offline; the reference's optional model-written summary for
plain text (its ``largeFileSummaryModel``) is not used, its deterministic fallback is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from lcm_cli.engine.core.jscompat import JS_SPACE_CLASS, js_parse, trim, utf8_safe

# JavaScript's \s, \S and \w (ASCII word characters), spelled out: Python's differ.
_S = f"[{JS_SPACE_CLASS}]"
_NS = f"[^{JS_SPACE_CLASS}]"
_W = "[A-Za-z0-9_]"
_SPACES = re.compile(f"{_S}+")
_LINE_BREAK = re.compile(r"\r?\n")

_CODE_EXTENSIONS = frozenset(
    "c cc cpp cs go h hpp java js jsx kt m php py rb rs scala sh sql swift ts tsx".split()
)
_STRUCTURED_EXTENSIONS = frozenset("csv json tsv xml yaml yml".split())
_MIME_EXTENSIONS = {
    "application/json": "json",
    "application/xml": "xml",
    "application/yaml": "yaml",
    "application/x-yaml": "yaml",
    "application/x-ndjson": "json",
    "application/csv": "csv",
    "application/javascript": "js",
    "application/typescript": "ts",
    "application/x-python-code": "py",
    "application/x-rust": "rs",
    "application/x-sh": "sh",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/tab-separated-values": "tsv",
    "text/x-c": "c",
    "text/x-c++": "cpp",
    "text/x-go": "go",
    "text/x-java": "java",
    "text/x-python": "py",
    "text/x-rust": "rs",
    "text/x-script.python": "py",
    "text/x-shellscript": "sh",
    "text/x-typescript": "ts",
    "text/xml": "xml",
}
_STRUCTURED_MIMES = (
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/x-ndjson",
    "text/csv",
    "text/tab-separated-values",
    "text/xml",
)
_CODE_MIMES = (
    "application/javascript",
    "application/typescript",
    "application/x-python-code",
    "application/x-rust",
    "text/javascript",
    "text/x-c",
    "text/x-c++",
    "text/x-go",
    "text/x-java",
    "text/x-python",
    "text/x-rust",
    "text/x-script.python",
    "text/x-shellscript",
    "text/x-typescript",
)

_EXCERPT_UNITS = 500
_HEADER_LIMIT = 18
_IMPORT_LINE = re.compile(
    f"^{_S}*(?:import{_S}+|from{_S}+{_NS}+{_S}+import{_S}+|const{_S}+{_W}+{_S}*={_S}*require\\()"
)
_DEFINITION = re.compile(
    f"^(?:export{_S}+)?(?:async{_S}+)?(?:function|class|interface|type|const{_S}+{_W}+{_S}*={_S}*\\("
    f"|def{_S}+{_W}+\\(|struct{_S}+{_W}+)"
)
_MARKDOWN_HEADER = re.compile(f"^#{{1,6}}{_S}+")
_CAPS_HEADER = re.compile(f"^[A-Z0-9][A-Z0-9{JS_SPACE_CLASS}:_-]{{6,}}\\Z")
_YAML_KEY = re.compile(r"^([A-Za-z0-9_.-]+):" + f"{_S}*" + r"(?:#[^\n\r\u2028\u2029]*)?\Z")
_XML_TAG = re.compile(f"<([A-Za-z0-9_:-]+)(?:{_S}|>)")


def _units(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _slice_units(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` in JavaScript (negative ``start`` counts from the end)."""
    if text.isascii():
        return text[start:end]
    raw = text.encode("utf-16-le", "surrogatepass")
    cut = raw[start * 2 : None if end is None else end * 2]
    # A cut through a surrogate pair leaves half a character, which SQLite stores as U+FFFD.
    return utf8_safe(cut.decode("utf-16-le", "surrogatepass"))


def _grouped(number: int) -> str:
    return f"{number:,}"


def _one_line(text: str, max_units: int) -> str:
    """Whitespace runs collapsed to one space, trimmed, cut at ``max_units`` with ``...``."""
    compact = trim(_SPACES.sub(" ", text))
    if _units(compact) <= max_units:
        return compact
    return _slice_units(compact, 0, max_units) + "..."


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def _name_extension(file_name: str | None) -> str | None:
    if not file_name:
        return None
    base = re.split(r"[\\/]", trim(file_name))[-1]
    dot = base.rfind(".")
    if dot <= 0 or dot == len(base) - 1:
        return None
    ext = base[dot + 1 :].lower()
    return ext if re.fullmatch(r"[a-z0-9]{1,10}", ext) else None


def _mime_extension(mime: str | None) -> str | None:
    return _MIME_EXTENSIONS.get(trim(mime).lower()) if mime else None


def content_class(file_name: str | None, mime: str | None) -> str:
    """``structured``, ``code`` or ``text``: which exploration a payload gets."""
    ext = _name_extension(file_name) or _mime_extension(mime) or "txt"
    lowered = trim(mime).lower() if mime else ""
    if (lowered and lowered.startswith(_STRUCTURED_MIMES)) or ext in _STRUCTURED_EXTENSIONS:
        return "structured"
    if (lowered and lowered.startswith(_CODE_MIMES)) or ext in _CODE_EXTENSIONS:
        return "code"
    return "text"


def summarize_image(byte_size: int, extension: str, file_name: str | None = None) -> str:
    """One line: the image's extension, its size and (when known) its name."""
    name = f" — {file_name}" if file_name else ""
    return f"Image file ({extension.upper()}, {_grouped(byte_size)} bytes){name}"


def _typeof(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None or isinstance(value, (dict, list)):
        return "object"
    return "number"


def _shape(value: Any, depth: int = 0) -> str:
    if depth >= 2:
        return "..."
    if isinstance(value, list):
        sample = [_shape(item, depth + 1) for item in value[:3]]
        return f"array(len={len(value)}" + (f", sample=[{', '.join(sample)}]" if sample else "") + ")"
    if not isinstance(value, dict):
        return _typeof(value)
    preview = ", ".join(list(value)[:10])
    return f"object(keys={len(value)}" + (f": {preview}" if preview else "") + ")"


def summarize_json(text: str) -> str:
    """The top-level type and a shape sketch (array lengths and samples, up to 10 keys)."""
    try:
        value = js_parse(text)
    except (ValueError, RecursionError):
        return "Structured summary (JSON): failed to parse as valid JSON."
    top = "array" if isinstance(value, list) else _typeof(value)
    return f"Structured summary (JSON):\nTop-level type: {top}.\nShape: {_shape(value)}."


def summarize_delimited(text: str, delimiter: str, kind: str) -> str:
    """Row count, column headers and the first data row (CSV or TSV)."""
    rows = [line for line in (trim(line) for line in _lines(text)) if line]
    if not rows:
        return f"Structured summary ({kind}): no rows found."
    headers = [cell for cell in (trim(cell) for cell in rows[0].split(delimiter)) if cell]
    first = _one_line(rows[1], 180) if len(rows) > 1 else "(no data rows)"
    return "\n".join(
        (
            f"Structured summary ({kind}):",
            f"Rows: {_grouped(len(rows) - 1)}.",
            f"Columns ({len(headers)}): {', '.join(headers) or '(none detected)'}.",
            f"First row sample: {first}.",
        )
    )


def summarize_yaml(text: str) -> str:
    """The top-level keys (at most 30 shown)."""
    keys = _unique(m.group(1) for m in map(_YAML_KEY.match, _lines(text)) if m)
    return f"Structured summary (YAML):\nTop-level keys ({len(keys)}): {', '.join(keys[:30]) or '(none detected)'}."


def summarize_xml(text: str) -> str:
    """The root element and the other tags seen (at most 30)."""
    tags = [m.group(1) for m in _XML_TAG.finditer(text)]
    root = tags[0] if tags else "unknown"
    children = _unique([tag for tag in tags if tag != root][:30])
    return (
        f"Structured summary (XML):\nRoot element: {root}.\n"
        f"Child elements seen: {', '.join(children) or '(none detected)'}."
    )


def summarize_structured(text: str, file_name: str | None, mime: str | None) -> str:
    """JSON, CSV, TSV, XML or YAML by name or MIME type; else characters and lines."""
    ext = _name_extension(file_name) or _mime_extension(mime)
    lowered = trim(mime).lower() if mime else ""
    if ext == "json" or lowered.startswith("application/json"):
        return summarize_json(text)
    if ext == "csv" or lowered.startswith("text/csv"):
        return summarize_delimited(text, ",", "CSV")
    if ext == "tsv" or lowered.startswith("text/tab-separated-values"):
        return summarize_delimited(text, "\t", "TSV")
    if ext == "xml" or lowered.startswith(("text/xml", "application/xml")):
        return summarize_xml(text)
    if ext in ("yaml", "yml") or "yaml" in lowered:
        return summarize_yaml(text)
    return f"Structured summary:\nCharacters: {_grouped(_units(text))}.\nLines: {_grouped(text.count(chr(10)) + 1)}."


def summarize_code(text: str, file_name: str | None = None) -> str:
    """Line count, up to 12 import lines, up to 24 top-level definitions."""
    lines = _lines(text)
    imports = _unique([_one_line(line, 180) for line in lines if _IMPORT_LINE.match(line)][:12])
    trimmed = (trim(line) for line in lines)
    definitions = _unique([_one_line(line, 200) for line in trimmed if _DEFINITION.match(line)][:24])
    return "\n".join(
        (
            f"Code exploration summary{f' ({file_name})' if file_name else ''}:",
            f"Lines: {_grouped(len(lines))}.",
            f"Imports/dependencies ({len(imports)}): {' | '.join(imports) or 'none detected'}.",
            f"Top-level definitions ({len(definitions)}): {' | '.join(definitions) or 'none detected'}.",
        )
    )


def _text_headers(text: str) -> list[str]:
    found = (
        _one_line(line, 160)
        for line in (trim(line) for line in _lines(text))
        if _units(line) > 1 and (_MARKDOWN_HEADER.match(line) or _CAPS_HEADER.match(line))
    )
    return _unique(list(found)[:_HEADER_LIMIT])


def summarize_text(text: str, file_name: str | None = None) -> str:
    """Characters, words, lines, up to 18 headers, and the opening and closing 500 characters."""
    normalized = trim(_SPACES.sub(" ", text))
    words = len(_SPACES.split(normalized)) if normalized else 0
    first = _one_line(_slice_units(text, 0, _EXCERPT_UNITS), _EXCERPT_UNITS)
    last = _one_line(_slice_units(text, -_EXCERPT_UNITS), _EXCERPT_UNITS)
    return "\n".join(
        (
            f"Text exploration summary{f' ({file_name})' if file_name else ''}:",
            f"Characters: {_grouped(_units(text))}.",
            f"Words: {_grouped(words)}.",
            f"Lines: {_grouped(text.count(chr(10)) + 1)}.",
            f"Detected section headers: {' | '.join(_text_headers(text)) or 'none detected'}.",
            f"Opening excerpt: {first or '(empty)'}.",
            f"Closing excerpt: {last or '(empty)'}.",
        )
    )


def exploration_summary(text: str, file_name: str | None, mime: str | None) -> str:
    """The deterministic summary of a text payload, chosen by its content class."""
    kind = content_class(file_name, mime)
    if kind == "structured":
        return summarize_structured(text, file_name, mime)
    if kind == "code":
        return summarize_code(text, file_name)
    return summarize_text(text, file_name)
