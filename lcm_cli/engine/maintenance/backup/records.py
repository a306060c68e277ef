"""The records `lcm backup list` answers with: what each backup entry holds, by name and type.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the catalog builds plain dicts,
type checkers hold it to these records, and nothing imports this module at run time.
:data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NotRequired


class BackupEntry(TypedDict):
    """A backup beside the database: a copy of it (``.bak``) or a change backup (``.changes.jsonl.gz``).

    ``kind``: ``timestamped``, ``latest`` (a rolling copy) or ``other`` for copies,
    ``changes`` for a change backup. ``createdAt`` comes from the manifest, else the name's
    stamp, else the file's mtime. The manifest fields are None when there is no manifest.
    """

    path: str
    name: str
    label: str
    kind: str
    sizeBytes: int
    createdAt: str
    hasManifest: bool
    verifiedAtCreation: bool | None  # the manifest says the copy passed integrity_check
    sizeMatchesManifest: bool | None
    rows: NotRequired[int | None]  # a change backup's: the rows it holds
    command: NotRequired[str | None]  # a change backup's: the command that wrote it


class BackupCatalog(TypedDict):
    """`lcm backup list`: the database and its backups, newest first."""

    databasePath: str
    backups: list[BackupEntry]


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {"backup.list": BackupEntry}
