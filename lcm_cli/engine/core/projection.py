"""`--fields`: keep only the parts of an envelope a caller asked for, in the order asked.

Agents pay for every token they read; a projection lets them ask for three fields of a
fifty-row page instead of every field. It is applied once, to the envelope every door
delivers (:func:`lcm_cli.engine.api.invoke`), so the CLI, typer, `lcm hook`, `lcm serve`
and Python callers project alike. ``ok``, ``command`` and ``pagination`` are never cut.

A path is dot-separated (``summary.content``). On an operation that returns a list (its
``OpSpec.items``), a path whose first key is a field of the items names that field of each
item, even when ``data`` has a key of the same name (``summaries list --fields
conversationId`` is each summary's); ``data.KEY`` names ``data``'s own key explicitly, and
the list's own name reaches into it (``checks.status``). A list met on the way applies the
rest of the path to each element. ``meta.KEY`` keeps that key of ``meta`` and drops the rest
(``meta`` alone keeps all of it); without a ``meta`` path, ``meta`` is whole. Whatever is
cut, the signals that an answer is partial or degraded stay (:data:`PARTIAL_SIGNALS`).

The output keeps the order of the paths, in JSON and so in every format. A path that
matches nothing in data that could hold it is ``INVALID_ARGUMENT`` naming the valid fields;
on an empty page nothing can be checked, and ``meta.fieldsNotFound`` names the path instead.
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


#: Keys of ``data`` or ``meta`` that say an answer is partial or degraded, and when they do:
#: a projection keeps them whatever it cuts.
PARTIAL_SIGNALS: dict[str, Any] = {
    "complete": lambda v: v is False,
    "truncated": lambda v: v is True,
    "truncatedBy": bool,
    "warnings": bool,
    "configProblems": bool,
    "budget": lambda v: isinstance(v, dict) and bool(v.get("overBudget")),
}


def _keep_signals(out: Any, source: Any) -> Any:
    """``out`` with every partial-answer signal of ``source`` it lacks added back."""
    if not isinstance(source, dict) or not isinstance(out, dict):
        return out
    for key, signals in PARTIAL_SIGNALS.items():
        if key in source and key not in out and signals(source[key]):
            out[key] = source[key]
    return out


def _item_field(rows: list[Any], head: str) -> bool:
    return any(isinstance(row, dict) and head in row for row in rows)


def project(data: Any, paths: list[Path], items: str = "") -> tuple[Any, list[str], bool]:
    """``data`` reduced to ``paths`` (in their order), the paths that matched nothing, and
    whether a miss is certain (there was data that could have held it).

    ``items`` names the list a list operation returns (``OpSpec.items``).
    """
    rows = data.get(items) if items and isinstance(data, dict) else None
    out: Any = {} if isinstance(data, dict) else None
    missing: list[str] = []
    certain = True
    for path in paths:
        if path[0] == "data" and len(path) > 1 and isinstance(data, dict) and "data" not in data:
            path = path[1:]  # data's own key, named explicitly
            per_item = False
        else:
            per_item = isinstance(rows, list) and (
                _item_field(rows, path[0]) or (path[0] not in data and path[0] != items)
            )
        if per_item:
            assert isinstance(rows, list)
            # Every item stays (as {} when it lacks the field), so positions still line up.
            shown = out.setdefault(items, [{} if isinstance(row, dict) else row for row in rows])
            built, hit = _pick(rows, path, shown)
            out[items] = built
            certain = certain and bool(rows)
        else:
            out, hit = _pick(data, path, out)
        if not hit:
            missing.append(".".join(path))
    return _keep_signals(out, data), missing, certain


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
    """Project ``envelope`` in place to the ``--fields`` in ``text``.

    INVALID_ARGUMENT (naming the valid fields) when a path matches nothing in data that
    could hold it; on an empty page the miss is noted in ``meta.fieldsNotFound`` instead.
    """
    paths = parse_fields(text)
    meta_paths = [p[1:] for p in paths if p[0] == "meta"]
    data_paths = [p for p in paths if p[0] != "meta"]
    source = envelope.get("data")
    missing: list[str] = []
    hints: dict[str, Any] = {}
    if data_paths:
        data, missing, certain = project(source, data_paths, items)
        if missing:
            known = known_fields(source, items)
            # A bare name that exists one level down (contextTokens -> conversation.contextTokens) first.
            hints = {
                m: s
                for m in missing
                if (s := [k for k in known if k.endswith("." + m)][:3] or suggest(m, known))
            }
            if certain:
                raise invalid_argument(
                    f"--fields {', '.join(missing)} matches nothing in this answer. Valid fields: "
                    f"{', '.join(known[:40])}{' …' if len(known) > 40 else ''}.",
                    {"fieldsNotFound": missing, "validFields": known, "suggestions": hints},
                )
        envelope["data"] = data
    if meta_paths and () not in meta_paths:
        envelope["meta"] = project(envelope.get("meta") or {}, meta_paths)[0]
    if missing:
        meta = envelope.setdefault("meta", {})
        meta["fieldsNotFound"] = missing
        if hints:
            meta["fieldSuggestions"] = hints
