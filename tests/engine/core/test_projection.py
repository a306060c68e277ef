"""`--fields`: projection of an envelope's data, its path grammar and its notes on misses."""

from __future__ import annotations

import pytest

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.projection import apply_fields, parse_fields, project


def test_paths_parse_and_bad_paths_are_invalid_argument() -> None:
    assert parse_fields("a, b.c,a") == [("a",), ("b", "c")]
    for bad in ("", "a,,b", "a..b", ".a", "a."):
        with pytest.raises(LcmError) as err:
            parse_fields(bad)
        assert err.value.code == "INVALID_ARGUMENT"


def test_list_paths_apply_to_each_item_and_keep_source_order() -> None:
    data = {"conversationId": 7, "items": [{"id": 1, "x": {"y": 2, "z": 3}, "t": "a"}, {"id": 2, "t": "b"}]}
    out, missing = project(data, [("t",), ("id",), ("x", "y")], "items")
    assert out == {"items": [{"id": 1, "x": {"y": 2}, "t": "a"}, {"id": 2, "t": "b"}]}
    assert missing == []
    # a key only the data has is kept at the top; the list itself may be named
    out, _ = project(data, [("items", "id")], "items")
    assert out == {"items": [{"id": 1}, {"id": 2}]}


def test_nested_object_paths_and_misses() -> None:
    data = {"version": "1", "status": {"messages": {"count": 3, "tokens": 9}}}
    out, missing = project(data, [("status", "messages", "count"), ("nope",)])
    assert out == {"status": {"messages": {"count": 3}}}
    assert missing == ["nope"]


def test_misses_are_named_in_meta_with_suggestions() -> None:
    envelope = {"ok": True, "command": "x", "data": {"items": [{"title": "a"}]}, "meta": {}}
    apply_fields(envelope, "titel", "items")
    assert envelope["data"] == {"items": [{}]}
    assert envelope["meta"]["fieldsNotFound"] == ["titel"]
    assert envelope["meta"]["fieldSuggestions"]["titel"][0] == "title"
