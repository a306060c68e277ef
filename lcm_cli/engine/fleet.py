"""One command over a fleet of databases: the members, their answers, one merged answer.

Several databases are named by repeating ``--db`` (or giving it a glob) or by repeating
``--openclaw-dir``. :func:`members_of` reads those options; :func:`run_fleet` runs the
operation once per member (each with its own ``Context``, through the caller's ``call``)
and merges the answers as the operation's :class:`~lcm_cli.engine.core.registry.Fleet`
declaration says: a list in the command's own order, each item naming its ``database``,
with a keyset cursor holding every member's own cursor; or, for ``status`` and ``doctor``,
each member's data and a total. A member that is missing, locked or unreadable is
reported in ``meta.fleet.members`` and the others still answer; only when none answers
does the call fail (with the first member's error).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.exit_codes import exit_status
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.registry import OPERATIONS, Fleet, OpSpec, command_words

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_GLOB_CHARACTERS = frozenset("*?[")
# A member error of these codes says the member is absent or busy, not that it is broken.
_MISSING = frozenset({"DATABASE_NOT_FOUND", "CONFIG_NOT_FOUND"})
_LOCKED = frozenset({"DATABASE_BUSY", "DATABASE_IN_USE"})
# Doctor's statuses, best first: a fleet's status is its worst member's.
_SEVERITIES = ("PASS", "SKIP", "INFO", "WARN", "FAIL")
# Totals that are the worst of the members, not their sum.
_WORST = frozenset({"exitStatus"})


class Member(Record):
    """One database of a fleet: the ``--db`` path, or the ``--openclaw-dir`` that resolves it.

    ``key`` names it in the fleet's cursor (the absolute path given), so a cursor is bound
    to the set of databases it was made for.
    """

    key: str
    db: str | None
    openclaw_dir: str | None


def fleet_commands() -> list[str]:
    """The commands that accept several databases, as a person types them."""
    return [" ".join(command_words(name, spec)) for name, spec in OPERATIONS.items() if spec.fleet]


def unsupported(name: str, why: str) -> LcmError:
    """FLEET_UNSUPPORTED for operation ``name``, naming the commands that do accept a fleet."""
    commands = fleet_commands()
    return LcmError(
        "FLEET_UNSUPPORTED",
        f"{why} Only {', '.join(f'`lcm {c}`' for c in commands)} read several databases at once; "
        "give one --db or --openclaw-dir.",
        {"command": name, "fleetCommands": commands},
    )


def _is_glob(path: str) -> bool:
    return bool(_GLOB_CHARACTERS.intersection(path)) and not os.path.exists(path)


def _paths(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def members_of(
    db: str | Sequence[str] | None, openclaw_dir: str | Sequence[str] | None, name: str
) -> list[Member] | None:
    """The fleet the path options name, or None for one database (the options as before).

    A fleet is ``--db`` given more than once or as a glob (``*``, ``?``, ``[``; a file of
    that very name is a path, not a glob), or ``--openclaw-dir`` given more than once.
    """
    dbs, dirs = _paths(db), _paths(openclaw_dir)
    if len(dirs) > 1 and dbs:
        raise unsupported(name, "--db and a repeated --openclaw-dir cannot be combined.")
    if len(dirs) > 1:
        return [Member(os.path.abspath(d), None, d) for d in dirs]
    if len(dbs) < 2 and not any(_is_glob(p) for p in dbs):
        return None
    import glob  # here: a one-database call never globs

    paths: list[str] = []
    for given in dbs:
        found = sorted(glob.glob(os.path.expanduser(given))) if _is_glob(given) else [given]
        if not found:
            raise LcmError(
                "DATABASE_NOT_FOUND",
                f"--db {given} matches no file; check the pattern (quote it so the shell leaves it alone).",
                {"databasePath": given},
            )
        paths.extend(p for p in found if os.path.abspath(p) not in {os.path.abspath(q) for q in paths})
    directory = dirs[0] if dirs else None
    return [Member(os.path.abspath(p), p, directory) for p in paths]


def normalize_path_option(value: str | Sequence[str] | None) -> str | list[str] | None:
    """A path option as a door read it: one value stays a string, several are a list."""
    if value is None or isinstance(value, str):
        return value
    values = list(value)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


if TYPE_CHECKING:
    #: Runs the operation on one member with these raw parameters: (envelope, exit status).
    MemberCall = Callable[[Member, dict[str, Any]], tuple[dict[str, Any], int]]


class _Answer(Record):
    """One member's outcome: its envelope and exit status, or the error it answered with."""

    member: Member
    envelope: dict[str, Any] | None
    status: int = 0
    error: LcmError | None = None


def run_fleet(
    name: str,
    spec: OpSpec,
    fleet: Fleet,
    params: Mapping[str, Any],
    limit: int,
    members: list[Member],
    call: MemberCall,
) -> tuple[dict[str, Any], int]:
    """Run ``name`` (``spec``, whose ``fleet`` declaration this is) on every member and merge
    the answers: (envelope, exit status)."""
    if fleet.merge == "summary":
        if params.get("cursor") is not None:
            raise unsupported(
                name, "A fleet's `status` and `doctor` answer per database: --cursor pages one database."
            )
        answers = [_ask(call, m, dict(params)) for m in members]
        return _summary(name, fleet, answers)
    return _merged_list(name, spec, fleet, params, limit, members, call)


def _ask(call: MemberCall, member: Member, params: dict[str, Any]) -> _Answer:
    """One member's answer, or its error when the member (not the request) is at fault."""
    try:
        envelope, status = call(member, params)
    except LcmError as exc:
        if exit_status(exc.code) == 2:
            raise  # the request itself is wrong: every member would say so
        return _Answer(member, None, error=exc)
    return _Answer(member, envelope, status)


def _database(answer: _Answer) -> str:
    """The database a member answered from (its resolved path), or its given path."""
    if answer.envelope is not None:
        path = answer.envelope.get("meta", {}).get("databasePath")
        if isinstance(path, str) and path:
            return path
    if answer.error is not None and isinstance(answer.error.details, dict):
        path = answer.error.details.get("databasePath")
        if isinstance(path, str) and path:
            return path
    return answer.member.db or answer.member.key


def _report(
    answers: list[_Answer], finished: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """``meta.fleet``: every member's database and status (and error), and how many answered.

    ``finished`` holds the positions of the members a walk no longer asks: their lists
    ended (``ended: true``) or they failed on an earlier page (the status they had then).
    """
    entries: dict[str, dict[str, Any]] = {}
    asked = {a.member.key for a in answers}
    for key, position in (finished or {}).items():
        if key in asked:
            continue
        entry: dict[str, Any] = {"database": position.get("d") or key}
        failed = position.get("failed")
        if isinstance(failed, dict):
            entry["status"] = failed.get("status", "error")
            entry["error"] = {
                "code": failed.get("code"),
                "message": "Failed on an earlier page of this walk and not asked again; "
                "start over without --cursor to ask it.",
            }
        else:
            entry.update(status="ok", ended=True)
        entries[key] = entry
    for answer in answers:
        entry = {"database": _database(answer)}
        if answer.member.openclaw_dir is not None and answer.member.db is None:
            entry["openclawDir"] = answer.member.openclaw_dir
        if answer.error is None:
            entry["status"] = "ok"
            meta = {k: v for k, v in (answer.envelope or {}).get("meta", {}).items() if k != "databasePath"}
            if meta:
                entry["meta"] = meta
        else:
            code = answer.error.code
            entry["status"] = "missing" if code in _MISSING else "locked" if code in _LOCKED else "error"
            entry["error"] = {"code": code, "message": answer.error.message}
        entries[answer.member.key] = entry
    order = list(finished) if finished else list(entries)  # the members' own order
    members = [entries[key] for key in order if key in entries]
    answered = sum(1 for m in members if m["status"] == "ok")
    return {"fleet": {"members": members, "answered": answered, "of": len(members)}}


def _none_answered(answers: list[_Answer]) -> LcmError:
    first = next(a.error for a in answers if a.error is not None)
    return LcmError(
        first.code,
        f"No database of the fleet answered; the first said: {first.message}",
        {"members": _report(answers)["fleet"]["members"]},
    )


# --- status and doctor: each member, and a total ------------------------------------------


def _summary(name: str, fleet: Fleet, answers: list[_Answer]) -> tuple[dict[str, Any], int]:
    ok = [a for a in answers if a.envelope is not None]
    if not ok:
        raise _none_answered(answers)
    datas = [a.envelope["data"] for a in ok if a.envelope is not None]
    total = {key: _total(key, [d[key] for d in datas if key in d]) for key in fleet.totals}
    data = {
        "total": {k: v for k, v in total.items() if v is not None},
        "members": [{"database": _database(a), **(a.envelope or {})["data"]} for a in ok],
    }
    envelope = {"ok": True, "command": name, "data": data, "meta": _report(answers)}
    return envelope, max(a.status for a in ok)


def _total(key: str, values: list[Any]) -> Any:
    """The fleet's value of one field: numbers add up (``exitStatus`` takes the worst), flags
    all hold, severities take the worst, earliest/latest times the extreme; None otherwise."""
    if not values:
        return None
    if all(isinstance(v, bool) for v in values):
        return all(values)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return max(values) if key in _WORST else sum(values)
    if all(isinstance(v, dict) for v in values):
        keys = list(dict.fromkeys(k for v in values for k in v))
        fields = {k: _total(k, [v[k] for v in values if k in v]) for k in keys}
        return {k: v for k, v in fields.items() if v is not None}
    strings = [v for v in values if isinstance(v, str)]
    if len(strings) == len(values):
        if all(v in _SEVERITIES for v in strings):
            return max(strings, key=_SEVERITIES.index)
        if key.startswith("earliest"):
            return min(strings, key=_moment)
        if key.startswith("latest"):
            return max(strings, key=_moment)
        if len(set(strings)) == 1:
            return strings[0]
    return None


# --- lists: merged in the command's order, one cursor over the set --------------------------


def _moment(value: Any) -> str:
    """A stored timestamp as text that sorts by time: SQLite's ``2026-06-02 08:00:00`` and
    JavaScript's ``2026-06-02T08:00:00.000Z`` alike (both UTC, as lossless-claw writes them)."""
    if not isinstance(value, str):
        return ""
    text = value.replace("T", " ").removesuffix("Z")
    return text if "." in text else text + ".000"


def _invalid_cursor() -> LcmError:
    return LcmError(
        "INVALID_CURSOR",
        "Invalid --cursor for this fleet: pass the nextCursor printed by the same command with the "
        "same --db/--openclaw-dir options unchanged, or omit --cursor to start from the first page.",
    )


def _positions(text: str | None, name: str, members: list[Member]) -> dict[str, dict[str, Any]]:
    """Where each member's list continues: ``{key: {c: its cursor, n: items shown, done}}``."""
    if text is None:
        return {m.key: {"c": None, "n": 0, "done": False} for m in members}
    from lcm_cli.engine.core.cursor import open_cursor  # only a fleet's later pages read one

    payload = open_cursor(text, "fleet", _invalid_cursor())
    positions = payload.get("members")
    if payload.get("command") != name or not isinstance(positions, dict):
        raise _invalid_cursor()
    if set(positions) != {m.key for m in members}:
        raise _invalid_cursor()
    for position in positions.values():
        if (
            not isinstance(position, dict)
            or not isinstance(position.get("c"), (str, type(None)))
            or not isinstance(position.get("n"), int)
            or not isinstance(position.get("done"), bool)
            or not isinstance(position.get("d", ""), str)
            or not isinstance(position.get("failed", {}), dict)
        ):
            raise _invalid_cursor()
    return positions


def _merged_list(
    name: str,
    spec: OpSpec,
    fleet: Fleet,
    params: Mapping[str, Any],
    limit: int,
    members: list[Member],
    call: MemberCall,
) -> tuple[dict[str, Any], int]:
    import heapq

    paged = "cursor" in spec.options
    positions = _positions(params.get("cursor"), name, members) if paged else {}
    answers: list[_Answer] = []
    streams: list[list[tuple[Any, int, dict[str, Any]]]] = []
    ranked = bool(fleet.ranked_by) and params.get(fleet.ranked_by, "recency") != "recency"
    for member in members:
        position = positions.get(member.key, {"c": None, "n": 0, "done": False})
        ask = dict(params)
        if paged:
            if position["done"]:
                continue
            ask.update(limit=limit, cursor=position["c"])
            ask = {k: v for k, v in ask.items() if v is not None}
        answer = _ask(call, member, ask)
        answers.append(answer)
        items = (answer.envelope or {}).get("data", {}).get(spec.items, []) if answer.envelope else []
        database = _database(answer)
        stream = []
        for offset, item in enumerate(items):
            tagged = {"database": database, **item}
            key = position["n"] + offset if ranked else _moment(item.get(fleet.order))
            stream.append((key, len(streams), tagged))
        streams.append(stream)
    ok = [a for a in answers if a.envelope is not None]
    if answers and not ok and not any(p["done"] for p in positions.values()):
        raise _none_answered(answers)
    merged = list(heapq.merge(*streams, key=lambda entry: entry[0], reverse=not ranked))
    shown = merged[:limit] if paged else merged
    data: dict[str, Any] = _common_fields([a.envelope["data"] for a in ok if a.envelope], spec.items)
    data[spec.items] = [entry[2] for entry in shown]
    envelope: dict[str, Any] = {"ok": True, "command": name, "data": data}
    if paged:
        envelope["pagination"] = _next_page(name, params, limit, positions, answers, streams, shown, call)
    envelope["meta"] = _report(answers, positions)
    return envelope, max((a.status for a in ok), default=0)


def _common_fields(datas: list[dict[str, Any]], items: str) -> dict[str, Any]:
    """The plain fields every member's data holds alike (grep's pattern). Per-member ones are
    left out, and so are figures of a member's own page (grep's counts), which the merged page
    does not show whole."""
    if not datas:
        return {}
    return {
        k: v
        for k, v in datas[0].items()
        if k != items and not isinstance(v, (dict, list)) and all(d.get(k, object()) == v for d in datas[1:])
    }


def _next_page(
    name: str,
    params: Mapping[str, Any],
    limit: int,
    positions: dict[str, dict[str, Any]],
    answers: list[_Answer],
    streams: list[list[tuple[Any, int, dict[str, Any]]]],
    shown: list[tuple[Any, int, dict[str, Any]]],
    call: MemberCall,
) -> dict[str, Any]:
    """The pagination of a merged page; its cursor holds each member's own cursor after the
    last of its items shown (a member shown in part is asked once more, for exactly those)."""
    taken = [0] * len(streams)
    for _, index, _item in shown:
        taken[index] += 1
    after = {key: dict(position) for key, position in positions.items()}
    for index, answer in enumerate(answers):
        position = after[answer.member.key]
        if answer.envelope is None:
            # Missing or locked: reported on this page and not asked again in this walk, so
            # the walk ends; a new walk (no --cursor) asks it again.
            status = _report([answer])["fleet"]["members"][0]["status"]
            error = answer.error
            position.update(
                done=True, d=_database(answer), failed={"status": status, "code": error and error.code}
            )
            continue
        count = taken[index]
        pagination = answer.envelope.get("pagination") or {}
        if count == len(streams[index]):
            position["c"] = pagination.get("nextCursor")
            position["done"] = not pagination.get("hasMore") or not position["c"]
            if position["done"]:
                position["d"] = _database(answer)
        elif count:
            ask = {k: v for k, v in dict(params, limit=count, cursor=position["c"]).items() if v is not None}
            envelope, _ = call(answer.member, ask)
            position["c"] = (envelope.get("pagination") or {}).get("nextCursor")
        position["n"] += count
    more = any(not p["done"] for p in after.values())
    from lcm_cli.engine.core.cursor import seal  # kept off the start-up path of single-database calls

    return {
        "limit": limit,
        "returned": len(shown),
        "hasMore": more,
        "nextCursor": seal("fleet", command=name, members=after) if more else None,
    }
