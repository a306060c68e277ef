"""Record: each field declared once, as an annotated attribute; an __init__ that checks its arguments."""

from __future__ import annotations

import pytest

from lcm_cli.engine.core.record import Record


class Point(Record):
    x: int
    y: int
    label: str = ""  # a default


def test_fields_in_order_positionally_or_by_name() -> None:
    assert Point._fields == ("x", "y", "label")
    assert Point(1, 2).label == "" and Point(1, 2, "a").label == "a"
    assert Point(y=2, x=1) == Point(1, 2, "")
    assert repr(Point(1, y=2)) == "Point(x=1, y=2, label='')"


def test_value_semantics() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert len({Point(1, 2), Point(1, 2), Point(1, 2, "b")}) == 2

    class Other(Record):
        x: int
        y: int
        label: str = ""

    assert Point(1, 2) != Other(1, 2)  # same values, another type


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1,), {}, "missing required arguments: y"),
        ((), {}, "missing required arguments: x, y"),
        ((1, 2, "a", 4), {}, "takes 3 positional arguments but 4 were given"),
        ((1, 2), {"z": 3}, "unexpected or repeated argument 'z'"),
        ((1, 2), {"x": 3}, "unexpected or repeated argument 'x'"),
    ],
)
def test_bad_arguments_are_refused_like_a_generated_init(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)
