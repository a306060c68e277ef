"""A plain value type that costs nothing to define at start-up.

``typing.NamedTuple`` and ``dataclasses`` build each class by generating and compiling
code, and NamedTuple resolves every field's annotation: about 0.2 ms per class, 3 ms for
the classes the JSON read commands define. A :class:`Record` subclass declares each field
once, as an annotated class attribute (with its default, if any); one shared ``__init__``
sets them, and instances compare, hash and print by value, as a NamedTuple's do.
"""

from __future__ import annotations

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import ClassVar, dataclass_transform
else:

    def dataclass_transform():
        """At run time a no-op: it only tells type checkers how a Record's ``__init__`` looks."""
        return lambda cls: cls


@dataclass_transform()
class Record:
    """Fields are the subclass's annotated attributes, in order; a field with a value has a default.

    Equality, hashing and ``repr`` go by the fields' values.
    """

    _fields: ClassVar[tuple[str, ...]] = ()
    _required: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        # The raw annotation strings (``from __future__ import annotations``): nothing is evaluated.
        own = tuple(vars(cls).get("__annotations__", {}))
        cls._fields = cls._fields + own
        cls._required = frozenset(name for name in cls._fields if not hasattr(cls, name))

    def __init__(self, *args: object, **kwargs: object) -> None:
        name = type(self).__name__
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{name}() takes {len(fields)} positional arguments but {len(args)} were given")
        values = dict(zip(fields, args))
        for field, value in kwargs.items():
            if field not in fields or field in values:
                raise TypeError(f"{name}() got an unexpected or repeated argument {field!r}")
            values[field] = value
        missing = self._required.difference(values)
        if missing:
            raise TypeError(f"{name}() missing required arguments: {', '.join(sorted(missing))}")
        self.__dict__.update(values)

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"
