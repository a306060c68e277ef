"""The render hints of a list operation name fields its result record has.

An operation's ``OpSpec.render`` names the columns `--format table` shows of each item
(``Rows``); the packages declare what an item holds as a ``TypedDict`` in their
``records.py`` (``engine/read/records.py``, ``doctor/records.py``, ...), and each such module says which operations' items its records type
(``ITEM_RECORDS``). A hint naming a field the record lacks is a column that never shows.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import lcm_cli
from lcm_cli.engine.core.registry import OPERATIONS, OpSpec
from lcm_cli.engine.core.render_hints import Rows

PACKAGE = Path(lcm_cli.__file__).parent

# A fleet's list merge (engine/fleet.py) puts this field first in every item it merges.
FLEET_FIELDS = frozenset({"database"})

# List operations drawn by Rows whose items have no record yet, and why.
NOT_YET = {
    "migrate.sessions": "the backfill's file reports are typed later",
}


def item_records() -> dict[str, type]:
    """Operation name → the record of its list items, from every ``records.py`` in the package."""
    found: dict[str, type] = {}
    for path in sorted(PACKAGE.rglob("records.py")):
        module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for name, record in getattr(module, "ITEM_RECORDS", {}).items():
            assert name not in found, f"{name} has two records: {found[name].__name__} and {record.__name__}"
            found[name] = record
    return found


RECORDS = item_records()


def record_fields(name: str, spec: OpSpec, record: type) -> frozenset[str]:
    """The fields an item of ``name`` may carry: its record's, and the fleet's when merged as a list."""
    fields = frozenset(record.__annotations__)  # a TypedDict's, its bases' included
    return fields | FLEET_FIELDS if spec.fleet is not None and spec.fleet.merge == "list" else fields


def headline(rows: tuple[Rows, ...], fields: frozenset[str]) -> Rows | None:
    """The Rows the table draws these items with: the first whose ``when`` is a field (render/table.py)."""
    return next((candidate for candidate in rows if candidate.when in fields), None)


def unknown_fields(
    rows: Rows, fields: frozenset[str], shadows: tuple[tuple[str, str], ...] = ()
) -> list[str]:
    """The fields ``rows`` names (columns, dropped columns, entry text) that are not in ``fields``.

    A column that ``shadows`` leaves out of a record showing another field (``preview``
    beside ``content``) may be missing when that field is there.
    """
    shadowed = {a for a, b in shadows if b in fields}
    named = (rows.when, *rows.columns, *rows.drop, *((rows.text,) if rows.text else ()))
    return [name for name in named if name not in fields and name not in shadowed]


def list_operations_with_rows() -> set[str]:
    return {name for name, spec in OPERATIONS.items() if spec.items and spec.render and spec.render.rows}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_render_hints_name_fields_of_the_record(name: str) -> None:
    spec = OPERATIONS[name]
    record = RECORDS[name]
    assert spec.items, f"{name} declares no items list, yet {record.__name__} types its items"
    assert spec.render is not None and spec.render.rows, f"{name} has no Rows to check"
    fields = record_fields(name, spec, record)
    rows = headline(spec.render.rows, fields)
    keys = [candidate.when for candidate in spec.render.rows]
    assert rows is not None, f"{name}: none of the Rows keys {keys} is a field of {record.__name__}"
    unknown = unknown_fields(rows, fields, spec.render.shadows)
    assert unknown == [], f"{name}: render hints name fields {record.__name__} lacks"


def test_every_list_drawn_by_rows_has_a_record() -> None:
    missing = list_operations_with_rows() - set(RECORDS) - set(NOT_YET)
    assert not missing, f"declare the item records of {sorted(missing)} (ITEM_RECORDS in a records.py)"
    assert not set(NOT_YET) & set(RECORDS), "an operation with a record is still listed in NOT_YET"


def test_a_hint_naming_a_missing_field_is_caught() -> None:
    from lcm_cli.engine.read.records import MessageItem

    fields = record_fields("messages.list", OPERATIONS["messages.list"], MessageItem)
    assert unknown_fields(Rows("messageId", ("messageId", "role", "sender")), fields) == ["sender"]
    assert headline((Rows("message_id", ("role",)),), fields) is None
    assert unknown_fields(Rows("messageId", ("role",), drop=("seq", "tokens"), text="body"), fields) == [
        "tokens",
        "body",
    ]
    # preview may be missing beside content (a record showing content leaves preview out), not alone.
    bare = frozenset({"messageId", "role"})
    assert (
        unknown_fields(Rows("messageId", ("preview",)), bare | {"content"}, (("preview", "content"),)) == []
    )
    assert unknown_fields(Rows("messageId", ("preview",)), bare, (("preview", "content"),)) == ["preview"]
