"""JSON output prints numbers as JavaScript would, whichever path ``to_json`` takes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcm_cli.engine.core.jscompat import stringify, stringify_indented
from lcm_cli.render.output import js_numbers, to_json


def full_rewrite(value: Any, pretty: bool) -> str:
    """The always-correct slow path: rewrite every number, then serialize."""
    if pretty:
        return stringify_indented(js_numbers(value), 2) + "\n"
    return stringify(js_numbers(value)) + "\n"


@pytest.mark.parametrize(
    "value,compact",
    [
        (3.0, "3"),
        (-0.0, "0"),
        (float("nan"), "null"),
        (float("-inf"), "null"),
        ([1.0, {"a": 2.5}], '[1,{"a":2.5}]'),
        ({"text": "version 3.0, NaN and Infinity"}, '{"text":"version 3.0, NaN and Infinity"}'),
        # JavaScript writes exponents only below 1e-6 and from 1e21, with no leading zero.
        ({"big": 1e16}, '{"big":10000000000000000}'),
        ({"huge": 1e22, "tiny": 1e-07, "small": 2e-05}, '{"huge":1e+22,"tiny":1e-7,"small":0.00002}'),
        ({"text": "re-run 1e-07"}, '{"text":"re-run 1e-07"}'),
    ],
)
def test_known_values(value: Any, compact: str) -> None:
    assert to_json(value) == compact + "\n"
    assert to_json(value, pretty=True) == full_rewrite(value, True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values, st.booleans())
def test_fast_path_equals_the_full_rewrite(value: Any, pretty: bool) -> None:
    assert to_json(value, pretty=pretty) == full_rewrite(value, pretty)
