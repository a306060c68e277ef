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


def test_list_paths_apply_to_each_item_in_the_order_asked() -> None:
    data = {"conversationId": 7, "items": [{"id": 1, "x": {"y": 2, "z": 3}, "t": "a"}, {"id": 2, "t": "b"}]}
    out, missing, _ = project(data, [("t",), ("id",), ("x", "y")], "items")
    assert out == {"items": [{"t": "a", "id": 1, "x": {"y": 2}}, {"t": "b", "id": 2}]}
    assert [list(item) for item in out["items"]] == [["t", "id", "x"], ["t", "id"]]
    assert missing == []
    # the list itself may be named
    out, _, _ = project(data, [("items", "id")], "items")
    assert out == {"items": [{"id": 1}, {"id": 2}]}


def test_an_item_field_wins_over_a_top_level_key_and_data_prefix_names_the_top() -> None:
    # `summaries list --fields summaryId,conversationId`: each summary's conversation id,
    # not data.conversationId (null when no selector was given).
    data = {"conversationId": None, "items": [{"summaryId": "a", "conversationId": 2}]}
    out, _, _ = project(data, [("summaryId",), ("conversationId",)], "items")
    assert out == {"items": [{"summaryId": "a", "conversationId": 2}]}
    out, _, _ = project(data, [("data", "conversationId")], "items")
    assert out == {"conversationId": None}


def test_nested_object_paths_and_a_miss_is_invalid_argument_naming_the_valid_fields() -> None:
    data = {"version": "1", "status": {"messages": {"count": 3, "tokens": 9}}}
    out, missing, certain = project(data, [("status", "messages", "count"), ("nope",)])
    assert out == {"status": {"messages": {"count": 3}}}
    assert missing == ["nope"] and certain
    envelope = {"ok": True, "command": "x", "data": {"items": [{"title": "a"}]}, "meta": {}}
    with pytest.raises(LcmError) as err:
        apply_fields(envelope, "titel", "items")
    assert err.value.code == "INVALID_ARGUMENT"
    assert "title" in err.value.details["validFields"]
    assert err.value.details["suggestions"]["titel"][0] == "title"


def test_on_an_empty_page_a_miss_is_only_noted() -> None:
    envelope = {"ok": True, "command": "x", "data": {"items": []}, "meta": {}}
    apply_fields(envelope, "title", "items")
    assert envelope["data"] == {"items": []}
    assert envelope["meta"]["fieldsNotFound"] == ["title"]


def test_meta_is_projected_only_when_asked_and_partial_signals_always_stay() -> None:
    envelope = {
        "ok": True,
        "command": "grep",
        "data": {"complete": False, "truncated": True, "count": 1, "items": [{"id": 1, "snippet": "x"}]},
        "meta": {
            "databasePath": "/x",
            "complete": False,
            "truncatedBy": {"messages": "rows"},
            "mode": "regex",
        },
    }
    whole = {**envelope, "meta": dict(envelope["meta"])}
    apply_fields(whole, "id", "items")
    assert whole["meta"] == envelope["meta"]  # no meta path: meta is whole
    assert whole["data"] == {"items": [{"id": 1}], "complete": False, "truncated": True}
    apply_fields(envelope, "id,meta.mode", "items")
    assert envelope["meta"] == {"mode": "regex", "complete": False, "truncatedBy": {"messages": "rows"}}
