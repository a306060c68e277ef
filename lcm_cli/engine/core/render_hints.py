"""How a person sees an operation's result: plain data each operation declares.

An operation's ``OpSpec.render`` says which shape its data has for a person (a list's
headline columns, a tree, a document read whole, a report of parts, a chat transcript);
:mod:`lcm_cli.render` draws any of them without knowing which command it draws. JSON
and TSV output never read these hints: JSON carries every field, TSV is the reference's
fixed layout.

Patterns are :meth:`str.format` templates over a record's fields. This module imports
nothing and its types are plain slotted classes (a NamedTuple costs about 0.1 ms to define),
so the registry declares hints at no start-up cost.
"""

from __future__ import annotations


class Rows:
    """The headline columns of a list of records whose first record has field ``when``."""

    __slots__ = ("when", "columns")

    def __init__(self, when: str, columns: tuple[str, ...]) -> None:
        self.when = when
        self.columns = columns  # in order; those missing from the first record are left out


class Branch:
    """One branch of a :class:`Tree`: the records of list field ``field``, one line each."""

    __slots__ = ("field", "label", "line", "text")

    def __init__(self, field: str, label: str, line: str, text: str) -> None:
        self.field = field
        self.label = label  # the branch's own line; the record count is appended as ``[N]``
        self.line = line  # pattern over a record's fields
        self.text = text  # the record field shown, shortened, after the line


class Tree:
    """A record drawn as a tree of the records related to it."""

    __slots__ = ("root", "key", "label", "text", "branches")

    def __init__(self, root: str, key: str, label: str, text: str, branches: tuple[Branch, ...]) -> None:
        self.root = root  # the data field holding the record
        self.key = key  # the record field shown in bold first
        self.label = label  # pattern over the record's fields, after the key
        self.text = text  # the record field shown, shortened, under the label
        self.branches = branches


class Text:
    """A document read whole: a heading line, then data field ``field`` printed in full."""

    __slots__ = ("field", "heading", "where", "empty")

    def __init__(self, field: str, heading: str, where: tuple[str, ...] = (), empty: str = "") -> None:
        self.field = field
        self.heading = heading  # pattern over the data's fields and ``{where}``
        self.where = where  # the first of these data fields that is set fills ``{where}``
        self.empty = empty  # printed when the field is empty


class Sections:
    """A report of parts: its plain fields, then one table per nested object."""

    __slots__ = ("rows", "rows_title")

    def __init__(self, rows: str, rows_title: str) -> None:
        self.rows = rows  # a nested object's list field drawn as a list table
        self.rows_title = rows_title  # that table's title, after the command


class Fold:
    """A message whose whole text wraps a record, shown by the record's own fields."""

    __slots__ = ("role", "prefix", "pattern", "shown_role", "shown_text")

    def __init__(self, role: str, prefix: str, pattern: str, shown_role: str, shown_text: str) -> None:
        self.role = role  # only messages with this role
        self.prefix = prefix  # whose text starts with this
        self.pattern = pattern  # a regular expression with named groups, searched in the text
        self.shown_role = shown_role  # pattern over the groups (each stripped)
        self.shown_text = shown_text  # pattern over the groups (each stripped)


class Transcript:
    """Chat messages as a person reads them (index, role, token estimate, text), then totals."""

    __slots__ = ("field", "title", "totals", "spread", "fold")

    def __init__(
        self,
        field: str,
        title: str,
        totals: tuple[tuple[str, str], ...],
        spread: str = "",
        fold: Fold | None = None,
    ) -> None:
        self.field = field  # the data field holding the messages
        self.title = title  # pattern over ``{command}``
        self.totals = totals  # (label, path): ``a.b`` walks objects, ``#a`` counts a list
        self.spread = spread  # a data object whose entries join the totals
        self.fold = fold


class Render:
    """An operation's rendering hints; the defaults draw any data reasonably."""

    __slots__ = ("rows", "tree", "text", "sections", "transcript", "hidden", "wide", "file_names", "tally")

    def __init__(
        self,
        rows: tuple[Rows, ...] = (),
        tree: Tree | None = None,
        text: Text | None = None,
        sections: Sections | None = None,
        transcript: Transcript | None = None,
        hidden: tuple[str, ...] = ("content",),
        wide: tuple[str, ...] = ("fix", "file", "name"),
        file_names: tuple[str, ...] = ("file",),
        tally: str = "count",
    ) -> None:
        self.rows = rows  # headline layouts, the first whose ``when`` matches wins
        self.tree = tree
        self.text = text
        self.sections = sections
        self.transcript = transcript
        self.hidden = hidden  # left out of a list that no headline matches
        self.wide = wide  # list cells shown up to 100 characters, not 40
        self.file_names = file_names  # path cells shown by their file name
        self.tally = tally  # an object cell holding this field shows just that field
