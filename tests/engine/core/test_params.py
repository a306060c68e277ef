"""Request fields are declared once (engine/core/params.py) and read back typed."""

from __future__ import annotations

import pytest

from lcm_cli.commands.specs import DOOR_COMMANDS
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import (
    APPLY,
    CONVERSATION_CLASS,
    KEEP,
    LIMIT,
    MAX_FILES,
    PARAMS,
    SINCE,
    option_name,
    validate_request,
)
from lcm_cli.engine.core.registry import ARGUMENTS, OPERATIONS


def test_every_declared_field_and_argument_is_known() -> None:
    for name, spec in {**OPERATIONS, **DOOR_COMMANDS}.items():
        assert set(spec.options) <= set(PARAMS), name
        assert set(spec.args) <= set(ARGUMENTS), name
        for field in {**(spec.param_help or {}), **(spec.metavars or {})}:
            assert field in spec.options or field in spec.args, (name, field)


def test_every_field_has_help_and_every_value_option_a_metavar() -> None:
    for param in PARAMS.values():
        assert param.help.strip(), param.name
        assert param.flag or param.metavar, param.name


def test_option_spellings_come_from_the_declaration() -> None:
    assert option_name("max_files") == MAX_FILES.option == "--limit"
    assert option_name("conversation_class") == "--class"
    assert option_name("include_content") == "--include-content"


def test_typed_reads_give_defaults_for_absent_fields() -> None:
    req = validate_request("migrate.sessions", OPERATIONS["migrate.sessions"].options, {"keep": "3"})
    assert req[KEEP] == 3
    assert req[APPLY] is False
    assert req[SINCE] is None
    req = validate_request("prune", OPERATIONS["prune"].options, {"conversation_class": "orphaned"})
    assert req[CONVERSATION_CLASS] == ["orphaned"]


def test_ordered_fields_are_attributes_not_items() -> None:
    req = validate_request("conversations.list", ("limit", "cursor"), {"limit": "7"})
    assert req.limit == 7
    with pytest.raises(KeyError):
        req[LIMIT]


def test_a_field_is_checked_by_its_declared_schema() -> None:
    with pytest.raises(LcmError) as caught:
        validate_request("migrate.sessions", OPERATIONS["migrate.sessions"].options, {"max_files": "-1"})
    assert caught.value.code == "INVALID_ARGUMENT"
    assert "--limit" in caught.value.message


# A JSON door can send any type; every declared field answers a wrong one with a clean
# INVALID_ARGUMENT at its place in the order, never a crash (found by the hook fuzz test).
_WRONG_TYPES = [True, 5, 1.5, [1], {"a": 1}, [], {}]


def _wrong_for(field: str) -> list[object]:
    kind = PARAMS[field].schema.get("type")
    if "oneOf" in PARAMS[field].schema:
        return []  # structured input: the operation checks its shape
    if kind == "boolean":
        return [5, "yes", [True], {}]
    if kind == "integer":
        return [True, 1.5, "x", [1], {}]
    if kind == "array":
        return [5, [5], {"a": 1}, [None]]
    return [value for value in _WRONG_TYPES if value not in ([], {})] + [[], {}]


@pytest.mark.parametrize(
    "name", [name for name in OPERATIONS if OPERATIONS[name].options], ids=lambda name: name
)
def test_a_wrong_json_type_in_any_field_is_invalid_argument(name: str) -> None:
    spec = OPERATIONS[name]
    base: dict[str, object] = {"conversation_id": 1} if "conversation_id" in spec.options else {}
    for field in spec.options:
        for value in _wrong_for(field):
            raw = dict(base) if field != "session_key" else {}
            raw[field] = value
            with pytest.raises(LcmError) as caught:
                validate_request(name, spec.options, raw, args=("x",) * len(spec.args))
            assert caught.value.code in ("INVALID_ARGUMENT", "INVALID_SELECTOR"), (name, field, value)
