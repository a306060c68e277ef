"""How a person sees an operation's result: plain data each operation declares.

An operation's ``OpSpec.render`` says which shape its data has for a person (a list's
headline columns, a tree, a document read whole, a report of parts, a chat transcript);
:mod:`lcm_cli.render` draws any of them without knowing which command it draws. JSON
and TSV output never read these hints: JSON carries every field, TSV is the reference's
fixed layout.

Patterns are :meth:`str.format` templates over a record's fields. This module imports
nothing, so the registry can declare hints at no cost.
"""

from __future__ import annotations

from typing import NamedTuple


class Rows(NamedTuple):
    """The headline columns of a list of records whose first record has field ``when``."""

    when: str
    columns: tuple[str, ...]  # in order; those missing from the first record are left out


class Branch(NamedTuple):
    """One branch of a :class:`Tree`: the records of list field ``field``, one line each."""

    field: str
    label: str  # the branch's own line; the record count is appended as ``[N]``
    line: str  # pattern over a record's fields
    text: str  # the record field shown, shortened, after the line


class Tree(NamedTuple):
    """A record drawn as a tree of the records related to it."""

    root: str  # the data field holding the record
    key: str  # the record field shown in bold first
    label: str  # pattern over the record's fields, after the key
    text: str  # the record field shown, shortened, under the label
    branches: tuple[Branch, ...]


class Text(NamedTuple):
    """A document read whole: a heading line, then data field ``field`` printed in full."""

    field: str
    heading: str  # pattern over the data's fields and ``{where}``
    where: tuple[str, ...] = ()  # the first of these data fields that is set fills ``{where}``
    empty: str = ""  # printed when the field is empty


class Sections(NamedTuple):
    """A report of parts: its plain fields, then one table per nested object."""

    rows: str  # a nested object's list field drawn as a list table
    rows_title: str  # that table's title, after the command


class Fold(NamedTuple):
    """A message whose whole text is a wrapped record, shown by the record's own fields."""

    role: str  # only messages with this role
    prefix: str  # whose text starts with this
    pattern: str  # a regular expression with named groups, searched in the text
    shown_role: str  # pattern over the groups
    shown_text: str  # pattern over the groups (each stripped)


class Transcript(NamedTuple):
    """Chat messages as a person reads them (index, role, token estimate, text), then totals."""

    field: str  # the data field holding the messages
    title: str  # pattern over ``{command}``
    totals: tuple[tuple[str, str], ...]  # (label, path): ``a.b`` walks objects, ``#a`` counts a list
    spread: str = ""  # a data object whose entries join the totals
    fold: Fold | None = None


class Render(NamedTuple):
    """An operation's rendering hints; the defaults draw any data reasonably."""

    rows: tuple[Rows, ...] = ()  # headline layouts, the first whose ``when`` matches wins
    tree: Tree | None = None
    text: Text | None = None
    sections: Sections | None = None
    transcript: Transcript | None = None
    hidden: tuple[str, ...] = ("content",)  # left out of a list that no headline matches
    wide: tuple[str, ...] = ("fix", "file", "name")  # list cells shown up to 100 characters, not 40
    file_names: tuple[str, ...] = ("file",)  # path cells shown by their file name
    tally: str = "count"  # an object cell holding this field shows just that field
