"""A plain value type that costs nothing to define at start-up.

``typing.NamedTuple`` builds each class by generating and compiling code, and resolves
every field's annotation: about 0.2 ms per class, 3 ms for the classes the JSON read
commands define. A :class:`Record` subclass lists its fields in ``__slots__``, sets them
in ``__init__`` and compares, hashes and prints by value, as a NamedTuple does.
"""

from __future__ import annotations


class Record:
    """Equality, hashing and ``repr`` by the values of the fields named in ``__slots__``."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
