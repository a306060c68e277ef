"""What a doc example may change, fingerprinted: every file under some folders, an SQLite
database by its logical content (not its bytes) with the row counts of lcm's main tables.

tests/test_examples_run.py takes one before and one after each example whose comment claims
an outcome (``# dry run``, ``# backs up lcm.db, then imports``) and compares them. From the
example's bash script, ``python -S -m tests.support.doc_state LABEL DIR...`` appends
``{"label": LABEL, "files": ..., "counts": ...}`` as one JSON line to the file named by
``$LCM_EXAMPLE_STATE``. It runs twice per such line, so it imports little (no pathlib, no
typing at run time): about 35 ms a call, most of it the interpreter and json.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    class State(TypedDict):
        """Every file's digest by path, and lcm's row counts by database path."""

        files: dict[str, str]
        counts: dict[str, dict[str, int]]


SQLITE_HEADER = b"SQLite format 3\x00"
# SQLite's side files come and go with connections; the database's content is what counts.
SIDE_FILES = ("-wal", "-shm", "-journal")
COUNTS = {
    "conversations": "SELECT count(*) FROM conversations",
    "archived": "SELECT count(*) FROM conversations WHERE archived_at IS NOT NULL",
    "messages": "SELECT count(*) FROM messages",
    "summaries": "SELECT count(*) FROM summaries",
    "debt": "SELECT count(*) FROM conversation_compaction_maintenance WHERE pending != 0",
}


def _database(path: str) -> tuple[str, dict[str, int]]:
    """The digest of the database's SQL dump, and the counts of the lcm tables it has."""
    uri = "file:" + os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    connection = sqlite3.connect(uri + "?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        for statement in connection.iterdump():
            digest.update(statement.encode())
        counts = {}
        for name, sql in COUNTS.items():
            try:
                counts[name] = int(connection.execute(sql).fetchone()[0])
            except sqlite3.OperationalError:  # not an lcm database (no such table)
                pass
        return f"sqlite:{digest.hexdigest()}", counts
    finally:
        connection.close()


def fingerprint(folders: list[str]) -> State:
    """The state of every file under ``folders`` (SQLite side files left out)."""
    state: State = {"files": {}, "counts": {}}
    for folder in folders:
        for parent, _, names in os.walk(folder):
            for name in sorted(names):
                path = os.path.join(parent, name)
                if name.endswith(SIDE_FILES) or not os.path.isfile(path):
                    continue
                with open(path, "rb") as handle:
                    content = handle.read()
                if content.startswith(SQLITE_HEADER):
                    try:
                        digest, state["counts"][path] = _database(path)
                    except sqlite3.Error as exc:  # unreadable now: compare its bytes instead
                        digest = f"unreadable ({exc}):{hashlib.sha256(content).hexdigest()}"
                else:
                    digest = hashlib.sha256(content).hexdigest()
                state["files"][path] = digest
    return state


def main(argv: list[str]) -> int:
    """Append the labelled fingerprint of the folders in ``argv[1:]`` to $LCM_EXAMPLE_STATE."""
    label, *folders = argv
    line = json.dumps({"label": label, **fingerprint(folders)})
    with open(os.environ["LCM_EXAMPLE_STATE"], "a", encoding="utf-8") as out:
        out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
