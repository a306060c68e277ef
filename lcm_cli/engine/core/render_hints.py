"""How a person sees an operation's result: plain data each operation declares.

An operation's ``OpSpec.render`` says how `--format table` shows its data: a list's
headline columns and which to drop first when the terminal is narrow, a list whose quiet
rows fold into one tally line, a document read whole, a chat transcript, the labels of its
fields. :mod:`lcm_cli.render` draws any of them without knowing which command it draws;
everything else (nested objects, scalars, lists) it draws by the same generic rules. JSON
and TSV output never read these hints: JSON carries every field, TSV is the reference's
fixed layout.

Patterns are :meth:`str.format` templates over a record's fields. Its types are
``Record`` subclasses, so the registry declares hints at no start-up cost.
"""

from __future__ import annotations

from lcm_cli.engine.core.record import Record

# Field labels a person reads instead of the camelCase name; any other field is spelled
# out from its name ("freshTailCount" → "Fresh tail count").
LABELS: dict[str, str] = {
    "conversationId": "Conversation",
    "messageId": "Message",
    "summaryId": "Summary",
    "messageCount": "Messages",
    "summaryCount": "Summaries",
    "tokenCount": "Tokens",
    # The stored items' own tokens; the context's size as the model reads it is
    # `context show`'s estimatedTokens (framing and summary wrappers included).
    "contextTokens": "Context tokens (stored)",
    "estimatedTokens": "Context size (tokens)",
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
    "contextTokens": "Context tokens",
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


class Rows(Record):
    """The headline columns of a list of records whose first record has field ``when``."""

    when: str
    columns: tuple[str, ...]  # in order; those missing from the first record are left out
    drop: tuple[str, ...] = ()  # dropped in this order (least important first) when the width is short
    # A record with this field set is an entry: its columns on one line, the text below.
    text: str = ""


class Tally(Record):
    """A list whose quiet rows fold into one count line; the others are shown in full.

    A row is quiet when its ``status`` is one of ``quiet`` (value, word) and it has none of
    the ``attention`` fields set. Quiet rows become one line, e.g. "28 checks passed";
    every other row is shown as a block: ``heading`` (a pattern over its fields), then
    ``fields`` one per line. With ``listed`` set, many rows sharing a status and reason
    become a count line and their ``listed`` field one per line instead.
    """

    field: str  # the data field holding the list (at any depth)
    status: str
    quiet: tuple[tuple[str, str], ...]  # (status value, the word after the count)
    noun: str  # singular; an "s" is added for a count other than 1
    heading: str
    fields: tuple[str, ...]
    attention: tuple[str, ...] = ()
    listed: str = ""


class Text(Record):
    """A document read whole: a heading line, then data field ``field`` printed in full."""

    field: str
    heading: str  # pattern over the data's fields and ``{where}``
    where: tuple[str, ...] = ()  # the first of these data fields that is set fills ``{where}``
    empty: str = ""  # printed when the field is empty


class Fold(Record):
    """A message whose whole text wraps a record, shown by the record's own fields."""

    role: str  # only messages with this role
    prefix: str  # whose text starts with this
    pattern: str  # a regular expression with named groups, searched in the text
    shown_role: str  # pattern over the groups (each stripped)
    shown_text: str  # pattern over the groups (each stripped)


class Transcript(Record):
    """Chat messages as a person reads them (index, role, token estimate, text), then totals."""

    field: str  # the data field holding the messages
    title: str  # pattern over ``{command}``
    totals: tuple[tuple[str, str], ...]  # (label, path): ``a.b`` walks objects, ``#a`` counts a list
    fold: Fold | None = None


class Render(Record):
    """An operation's rendering hints; the defaults draw any data reasonably."""

    rows: tuple[Rows, ...] = ()  # headline layouts, the first whose ``when`` matches wins
    tallies: tuple[Tally, ...] = ()
    text: Text | None = None
    transcript: Transcript | None = None
    hidden: tuple[str, ...] = ("content",)  # left out of a list table that no headline matches
    labels: tuple[tuple[str, str], ...] = ()  # (field, label) pairs over :data:`LABELS`
    # Data fields whose keys and values show exactly as stored (config keys a person
    # types back, table names): no labels, no human units.
    verbatim: tuple[str, ...] = ()
    first: tuple[str, ...] = ()  # data fields drawn before the others, in this order
    shadows: tuple[tuple[str, str], ...] = (
        ("preview", "content"),
    )  # (a, b): a record showing b leaves a out
    meta: tuple[str, ...] = ()  # envelope meta fields a person needs too (a search that did not finish)
