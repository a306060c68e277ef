"""js_values: a Python-built JSON value read as JSON.parse would read it, so stringify spells it as JavaScript."""

from __future__ import annotations

import json

from lcm_cli.engine.core.jscompat import js_parse, js_values, stringify


def test_python_numbers_are_spelled_as_javascript_spells_them() -> None:
    """The same text as the transcript importer's decoder gives, and as Node's JSON.stringify(JSON.parse(text)) printed."""
    text = '{"b":1.0,"2":[1e-7,3.0,-0.0,2.5e-5,0.5,1e21,1e16],"1":true,"n":null,"big":12345678901234567890}'
    expected = '{"1":true,"2":[1e-7,3,0,0.000025,0.5,1e+21,10000000000000000],"b":1,"n":null,"big":12345678901234567000}'
    assert stringify(js_values(json.loads(text))) == expected
    assert stringify(js_parse(text)) == expected


def test_a_value_with_nothing_to_change_is_returned_as_is() -> None:
    value = {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
        "timestamp": 1760000000000,
        "ok": False,
    }
    assert js_values(value) is value
    changed = {"role": "user", "content": [{"type": "text", "text": "hi"}, {"score": 1.0}]}
    out = js_values(changed)
    assert out is not changed and out["content"][0] is changed["content"][0]
    assert changed["content"][1] == {"score": 1.0}  # the input is never modified
    assert js_values((1.0, "a")) == [1, "a"]
