"""How a person sees an operation's result: plain data each operation declares.

An operation's ``OpSpec.render`` says how `--format table` shows its data: a list's
headline columns and which to drop first when the terminal is narrow, a list whose quiet
rows fold into one tally line, a document read whole, a chat transcript, the labels of its
fields. :mod:`lcm_cli.render` draws any of them without knowing which command it draws;
everything else (nested objects, scalars, lists) it draws by the same generic rules. JSON
and TSV output never read these hints: JSON carries every field, TSV is the reference's
fixed layout.

Patterns are :meth:`str.format` templates over a record's fields. This module imports
nothing and its types are plain slotted classes (a NamedTuple costs about 0.1 ms to define),
so the registry declares hints at no start-up cost.
"""

from __future__ import annotations

# Field labels a person reads instead of the camelCase name; any other field is spelled
# out from its name ("freshTailCount" → "Fresh tail count").
LABELS: dict[str, str] = {
    "conversationId": "Conversation",
    "messageId": "Message",
    "summaryId": "Summary",
    "messageCount": "Messages",
    "summaryCount": "Summaries",
    "tokenCount": "Tokens",
    "contextTokens": "Context tokens",
    "updatedAt": "Last activity",
    "lastActivityAt": "Last activity",
    "createdAt": "Created",
    "coverageAt": "Covers to",
    "descendantCount": "Descendants",
    "seq": "Seq",
    "hasManifest": "Manifest",
    "verifiedAtCreation": "Verified",
    "sha256": "SHA-256",
    "fix": "Fix",
    "nextCursor": "Next cursor",
    "estimatedBytes": "Size",
    "databaseBytes": "Database size",
    "usedBytes": "Used space",
    "dbPath": "Database path",
}

# Shorter labels for a table's header, where a column of small numbers should stay narrow.
HEADERS: dict[str, str] = {
    "conversationId": "Conv",
    "messageId": "Msg",
}

# Fields whose values a person copies into the next command: never cut, never broken by a
# word wrap (a field matches when its name is one of these or ends with one).
COPY: tuple[str, ...] = (
    "Id",
    "id",
    "Ids",
    "Key",
    "key",
    "Path",
    "path",
    "file",
    "File",
    "sha256",
    "Hash",
    "Cursor",
    "cursor",
    "name",
    "fix",
    "epoch",
    "Epoch",
    "fingerprint",
    "Fingerprint",
)

# Fields whose value says how well something went, coloured by :data:`SEVERITY`.
STATUS_FIELDS: tuple[str, ...] = ("status", "severity", "ok", "healthy", "integrity", "verified")

# Value (lower case; booleans as "true"/"false") → rich style.
SEVERITY: dict[str, str] = {
    "fail": "bold red",
    "failed": "bold red",
    "error": "red",
    "false": "red",
    "warn": "yellow",
    "warning": "yellow",
    "incomplete": "yellow",
    "skipped": "yellow",
    "info": "cyan",
    "pass": "green",
    "ok": "green",
    "true": "green",
    "complete": "green",
    "imported": "green",
}


class Rows:
    """The headline columns of a list of records whose first record has field ``when``."""

    __slots__ = ("when", "columns", "drop", "text")

    def __init__(
        self, when: str, columns: tuple[str, ...], drop: tuple[str, ...] = (), text: str = ""
    ) -> None:
        self.when = when
        self.columns = columns  # in order; those missing from the first record are left out
        self.drop = drop  # dropped in this order (least important first) when the width is short
        # A record with this field set is an entry: its columns on one line, the text below.
        self.text = text


class Tally:
    """A list whose quiet rows fold into one count line; the others are shown in full.

    A row is quiet when its ``status`` is one of ``quiet`` (value, word) and it has none of
    the ``attention`` fields set. Quiet rows become one line, e.g. "28 checks passed";
    every other row is shown as a block: ``heading`` (a pattern over its fields), then
    ``fields`` one per line. With ``listed`` set, many rows sharing a status and reason
    become a count line and their ``listed`` field one per line instead.
    """

    __slots__ = ("field", "status", "quiet", "noun", "heading", "fields", "attention", "listed")

    def __init__(
        self,
        field: str,
        status: str,
        quiet: tuple[tuple[str, str], ...],
        noun: str,
        heading: str,
        fields: tuple[str, ...],
        attention: tuple[str, ...] = (),
        listed: str = "",
    ) -> None:
        self.field = field  # the data field holding the list (at any depth)
        self.status = status
        self.quiet = quiet  # (status value, the word after the count)
        self.noun = noun  # singular; an "s" is added for a count other than 1
        self.heading = heading
        self.fields = fields
        self.attention = attention
        self.listed = listed


class Text:
    """A document read whole: a heading line, then data field ``field`` printed in full."""

    __slots__ = ("field", "heading", "where", "empty")

    def __init__(self, field: str, heading: str, where: tuple[str, ...] = (), empty: str = "") -> None:
        self.field = field
        self.heading = heading  # pattern over the data's fields and ``{where}``
        self.where = where  # the first of these data fields that is set fills ``{where}``
        self.empty = empty  # printed when the field is empty


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

    __slots__ = (
        "rows",
        "tallies",
        "text",
        "transcript",
        "hidden",
        "labels",
        "verbatim",
        "first",
        "shadows",
        "meta",
    )

    def __init__(
        self,
        rows: tuple[Rows, ...] = (),
        tallies: tuple[Tally, ...] = (),
        text: Text | None = None,
        transcript: Transcript | None = None,
        hidden: tuple[str, ...] = ("content",),
        labels: tuple[tuple[str, str], ...] = (),
        verbatim: tuple[str, ...] = (),
        first: tuple[str, ...] = (),
        shadows: tuple[tuple[str, str], ...] = (("preview", "content"),),
        meta: tuple[str, ...] = (),
    ) -> None:
        self.rows = rows  # headline layouts, the first whose ``when`` matches wins
        self.tallies = tallies
        self.text = text
        self.transcript = transcript
        self.hidden = hidden  # left out of a list table that no headline matches
        self.labels = labels  # (field, label) pairs over :data:`LABELS`
        # Data fields whose keys and values show exactly as stored (config keys a person
        # types back, table names): no labels, no human units.
        self.verbatim = verbatim
        self.first = first  # data fields drawn before the others, in this order
        self.shadows = shadows  # (a, b): a record showing b leaves a out (a preview of b's text)
        self.meta = meta  # envelope meta fields a person needs too (a search that did not finish)
