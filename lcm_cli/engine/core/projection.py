"""`--fields`: keep only the parts of an envelope's ``data`` a caller asked for.

Agents pay for every token they read; a projection lets them ask for three fields of a
fifty-row page instead of every field. It is applied once, to the envelope every door
delivers (:func:`lcm_cli.engine.api.invoke`), so the CLI, typer, `lcm hook`, `lcm serve`
and Python callers project alike. The envelope's own keys (``ok``, ``command``,
``pagination``, ``meta``) are never projected.

A path is dot-separated (``summary.content``) and names a key of the data; for an
operation that returns a list (its ``OpSpec.items``), a path whose first key the data
lacks names a field of each item (``--fields conversationId,title`` on a list); a list
met on the way applies the rest of the path to each element (``checks.status``). A path that matches nothing is absent from the output, not an error (a
field may be missing from one row, or a page may be empty, so an error would depend on
the data rather than on the request); the envelope's ``meta.fieldsNotFound`` names such
paths, with the closest known field in ``meta.fieldSuggestions``.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.suggest import suggest

Path = tuple[str, ...]
_MAX_PATHS = 64


def parse_fields(text: str) -> list[Path]:
    """``"a,b.c"`` -> ``[("a",), ("b", "c")]``; INVALID_ARGUMENT for an empty path or segment."""
    paths: list[Path] = []
    for raw in text.split(","):
        name = raw.strip()
        segments = tuple(s.strip() for s in name.split("."))
        if not name or not all(segments):
            raise invalid_argument(
                f"Invalid --fields value {text!r}: give comma-separated dot paths such as "
                "conversationId,title or summary.content.",
                {"value": text},
            )
        if segments not in paths:
            paths.append(segments)
    if len(paths) > _MAX_PATHS:
        raise invalid_argument(f"--fields names {len(paths)} paths; at most {_MAX_PATHS}.", {"value": text})
    return paths


def _pick(value: Any, path: Path, out: Any) -> tuple[Any, bool]:
    """Copy ``path`` of ``value`` into ``out`` (a dict being built); whether anything matched."""
    if isinstance(value, list):
        built = out if isinstance(out, list) and len(out) == len(value) else [None] * len(value)
        found = False
        for index, element in enumerate(value):
            built[index], hit = _pick(element, path, built[index])
            found = found or hit
        return built, found
    if not isinstance(value, dict):
        return out, False
    head, rest = path[0], path[1:]
    if head not in value:
        return out, False
    target = out if isinstance(out, dict) else {}
    if not rest:
        target[head] = value[head]
        return target, True
    child, hit = _pick(value[head], rest, target.get(head))
    if hit:
        target[head] = child
    return target, hit


def project(data: Any, paths: list[Path], items: str = "") -> tuple[Any, list[str]]:
    """``data`` reduced to ``paths`` and the paths that matched nothing.

    ``items`` names the list a list operation returns (``OpSpec.items``): a path whose
    first key ``data`` lacks goes to each of its items.
    """
    rows = data.get(items) if items and isinstance(data, dict) else None
    out: Any = {} if isinstance(data, dict) else None
    missing: list[str] = []
    for path in paths:
        per_item = isinstance(rows, list) and path[0] not in data
        if per_item:
            assert isinstance(rows, list)
            # Every item stays (as {} when it lacks the field), so positions still line up.
            shown = out.setdefault(items, [{} if isinstance(row, dict) else row for row in rows])
            built, hit = _pick(rows, path, shown)
            out[items] = built
        else:
            out, hit = _pick(data, path, out)
        if not hit:
            missing.append(".".join(path))
    return _in_source_order(out, data), missing


def _in_source_order(out: Any, source: Any) -> Any:
    """``out`` with its keys in ``source``'s order (paths may be asked in any order)."""
    if isinstance(out, dict) and isinstance(source, dict):
        return {k: _in_source_order(out[k], source[k]) for k in source if k in out}
    if isinstance(out, list) and isinstance(source, list):
        return [_in_source_order(o, s) for o, s in zip(out, source, strict=False)]
    return out


def known_fields(data: Any, items: str = "") -> list[str]:
    """Every dot path of ``data`` (and of its items), for did-you-mean suggestions."""
    found: set[str] = set()

    def walk(value: Any, prefix: str, depth: int) -> None:
        if depth > 4:
            return
        if isinstance(value, list):
            for element in value[:20]:
                walk(element, prefix, depth + 1)
        elif isinstance(value, dict):
            for key, child in value.items():
                name = f"{prefix}{key}"
                found.add(name)
                walk(child, name + ".", depth + 1)

    walk(data, "", 0)
    if items and isinstance(data, dict) and isinstance(data.get(items), list):
        walk(data[items], "", 0)
    return sorted(found)


def apply_fields(envelope: dict[str, Any], text: str, items: str = "") -> None:
    """Project ``envelope['data']`` in place to the ``--fields`` in ``text``; note misses in meta."""
    data, missing = project(envelope.get("data"), parse_fields(text), items)
    if missing:
        known = known_fields(envelope.get("data"), items)
        meta = envelope.setdefault("meta", {})
        meta["fieldsNotFound"] = missing
        hints = {m: s for m in missing if (s := suggest(m, known))}
        if hints:
            meta["fieldSuggestions"] = hints
    envelope["data"] = data
