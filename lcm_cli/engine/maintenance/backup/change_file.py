"""The change backup file: the rows a command changed, as they were, in a checksummed ``.jsonl.gz``.

A change backup (:mod:`.changes` writes it, :mod:`.undo` restores it) is
one gzip stream of JSON lines, like a prune archive (:mod:`.prune`):

* line 1, the header: ``{"format": "lcm-change-backup", "version": 1, "run", "command",
  "label", "databasePath", "databaseIdentity", "startedAt", "createdAt", "lcmVersion"}``;
* before a table's first change: ``{"table": <name>, "columns": [...]}``;
* one JSON array per change, in the order the changes were made: ``[seq, op, table,
  oldRowid, newRowid, oldValues, newValues]`` with ``op`` ``insert`` (no old row),
  ``update`` (both) or ``delete`` (no new row), values in column order;
* the trailer: ``{"trailer": true, "changes": n, "tables": {<table>: {"insert": n,
  "update": n, "delete": n}}, "sha256": <hex of every line before it>}``.

Values keep their SQLite type exactly: integers, reals and text as JSON numbers and
strings (a real is always written with a fraction or exponent, so it reads back as a
float), NULL as ``null``, a BLOB as ``{"$b64": ...}``, TEXT whose bytes are not valid
UTF-8 as ``{"$text": <base64 of the bytes>}``, an infinite real as ``{"$real": <hex>}``.
A sidecar ``<file>.manifest.json``, written once the published file verified, records
its size, sha256 and counts (what `lcm backup list` shows without reading the file).

In the database a row is held as an *image*: one byte string per row that SQL builds
(:func:`sql_image`) and Python builds and parses the same way (:func:`encode_image`,
:func:`decode_image`): per value ``n`` (NULL), ``i<digits>;``, ``r<float.hex>;``,
``t<bytes>:<UTF-8 bytes>`` or ``b<bytes>:<bytes>``. Two rows are equal exactly when
their images are, type and bytes alike.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import os
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import atomic_write, atomic_writer, hash_file
from lcm_cli.engine.core.held_files import open_input, open_input_text
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.db.connection import SQLITE_HEADER
from lcm_cli.engine.maintenance.backup.manifest import manifest_path_for

FORMAT = "lcm-change-backup"
VERSION = 1
#: What a change backup's name ends with (``<db>.<label>-<stamp>-<rand>.changes.jsonl.gz``).
SUFFIX = ".changes.jsonl.gz"
#: The op of a change record, as the log table spells it and as the file spells it.
OPS = {"I": "insert", "U": "update", "D": "delete"}
_PRUNE_FORMAT = "lcm-prune-archive"
_GZIP_MAGIC = b"\x1f\x8b"


class RawText(bytes):
    """A TEXT value whose bytes are not valid UTF-8: kept as its bytes, written back as TEXT."""


# --- row images -------------------------------------------------------------------------


def _real_hex(value: float) -> str:
    return float(value).hex()


def register_functions(conn: sqlite3.Connection) -> None:
    """Give ``conn`` ``lcm_real(x)``, the exact text of a REAL (SQLite's own printf rounds)."""
    conn.create_function("lcm_real", 1, _real_hex, deterministic=True)


def quote_ident(name: str) -> str:
    """``name`` as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def sql_image(alias: str, columns: Sequence[str]) -> str:
    """The SQL expression of a row's image (``alias``.column for each column; needs ``lcm_real``)."""
    parts = []
    for column in columns:
        ref = f"{alias}.{quote_ident(column)}"
        parts.append(
            f"CASE typeof({ref}) WHEN 'null' THEN 'n' WHEN 'integer' THEN 'i' || {ref} || ';'"
            f" WHEN 'real' THEN 'r' || lcm_real({ref}) || ';'"
            f" WHEN 'text' THEN 't' || length(CAST({ref} AS BLOB)) || ':' || {ref}"
            f" ELSE 'b' || length({ref}) || ':' || {ref} END"
        )
    return "CAST(" + (" || ".join(parts) or "''") + " AS BLOB)"


def encode_image(values: Sequence[Any]) -> bytes:
    """The image of a row of Python values, byte for byte what :func:`sql_image` gives."""
    out = bytearray()
    for value in values:
        if value is None:
            out += b"n"
        elif isinstance(value, RawText):
            out += b"t%d:" % len(value) + value
        elif isinstance(value, bytes):
            out += b"b%d:" % len(value) + value
        elif isinstance(value, int):
            out += b"i%d;" % value
        elif isinstance(value, float):
            out += b"r" + value.hex().encode("ascii") + b";"
        else:
            raw = str(value).encode("utf-8", "surrogatepass")
            out += b"t%d:" % len(raw) + raw
    return bytes(out)


def decode_image(raw: bytes) -> list[Any]:
    """The Python values of an image (TEXT that is not UTF-8 as :class:`RawText`)."""
    values: list[Any] = []
    at, end = 0, len(raw)
    while at < end:
        tag = raw[at : at + 1]
        if tag == b"n":
            values.append(None)
            at += 1
        elif tag in (b"i", b"r"):
            stop = raw.index(b";", at)
            text = raw[at + 1 : stop].decode("ascii")
            values.append(int(text) if tag == b"i" else float.fromhex(text))
            at = stop + 1
        elif tag in (b"t", b"b"):
            colon = raw.index(b":", at)
            size = int(raw[at + 1 : colon])
            body = raw[colon + 1 : colon + 1 + size]
            if len(body) != size:
                raise ValueError("truncated row image")
            at = colon + 1 + size
            if tag == b"b":
                values.append(bytes(body))
                continue
            try:
                values.append(body.decode("utf-8"))
            except UnicodeDecodeError:
                values.append(RawText(body))
        else:
            raise ValueError(f"bad row image tag {tag!r}")
    return values


def _json_value(value: Any) -> Any:
    if isinstance(value, RawText):
        return {"$text": base64.b64encode(value).decode("ascii")}
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$real": value.hex()}
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if "$b64" in value:
            return base64.b64decode(value["$b64"])
        if "$text" in value:
            return RawText(base64.b64decode(value["$text"]))
        if "$real" in value:
            return float.fromhex(value["$real"])
        raise ValueError("unknown tagged value")
    return value


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_encode_text = json.encoder.encode_basestring  # the C encoder json uses for ensure_ascii=False


def line(value: Any) -> bytes:
    """One JSON line of the file."""
    return (_ENCODER.encode(value) + "\n").encode("utf-8")


def image_json(raw: bytes | None) -> str:
    """An image as the file's JSON array of values (``null`` for no row), in one pass.

    What ``json`` would write for :func:`decode_image`'s values through
    :func:`_json_value`, without building them: an export writes a line per change, so
    integers are copied as their digits and text goes through the C string encoder.
    """
    if raw is None:
        return "null"
    parts: list[str] = []
    at, end = 0, len(raw)
    while at < end:
        tag = raw[at]
        if tag == 0x6E:  # n
            parts.append("null")
            at += 1
        elif tag == 0x69:  # i
            stop = raw.index(b";", at)
            parts.append(raw[at + 1 : stop].decode("ascii"))
            at = stop + 1
        elif tag == 0x72:  # r
            stop = raw.index(b";", at)
            number = float.fromhex(raw[at + 1 : stop].decode("ascii"))
            parts.append(repr(number) if math.isfinite(number) else _ENCODER.encode(_json_value(number)))
            at = stop + 1
        else:  # t, b: <bytes>:<body>
            colon = raw.index(b":", at)
            size = int(raw[at + 1 : colon])
            body = raw[colon + 1 : colon + 1 + size]
            if len(body) != size:
                raise ValueError("truncated row image")
            at = colon + 1 + size
            if tag == 0x74:
                try:
                    parts.append(_encode_text(body.decode("utf-8")))
                    continue
                except UnicodeDecodeError:
                    value: RawText | bytes = RawText(body)
            else:
                value = bytes(body)
            parts.append(_ENCODER.encode(_json_value(value)))
    return "[" + ",".join(parts) + "]"


def change_line(
    seq: int, op: str, table: str, old_rowid: Any, new_rowid: Any, old: bytes | None, new: bytes | None
) -> bytes:
    """The line of one change, from its log record (images as the database holds them)."""
    head = _ENCODER.encode([seq, OPS[op], table, old_rowid, new_rowid])[:-1]
    return f"{head},{image_json(old)},{image_json(new)}]\n".encode()


# --- kinds of backup files ---------------------------------------------------------------


def sniff_kind(path: str) -> str:
    """``changes``, ``prune-archive``, ``full`` (an SQLite file) or ``unknown``, from the first bytes."""
    try:
        with open_input(path) as handle:
            start = handle.read(len(SQLITE_HEADER))
    except OSError:
        return "unknown"
    if start == SQLITE_HEADER:
        return "full"
    named = "changes" if path.endswith(SUFFIX) else "unknown"  # damaged: verifying it says how
    if not start.startswith(_GZIP_MAGIC):
        return named
    try:
        with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
            first = loads_bounded(handle.readline(1 << 20))
    except (OSError, EOFError, zlib.error, ValueError):
        return named
    found = first.get("format") if isinstance(first, dict) else None
    return {FORMAT: "changes", _PRUNE_FORMAT: "prune-archive"}.get(str(found), "unknown")


def wrong_kind(path: str, kind: str, expected: str) -> LcmError:
    """WRONG_BACKUP_KIND: ``path`` is a ``kind`` file where ``expected`` was wanted; nothing was written."""
    use = {
        "changes": "`lcm backup restore FILE` (dry run; --apply) or `lcm backup verify FILE`",
        "prune-archive": "`lcm prune restore ARCHIVE` (dry run verifies it; --apply)",
        "full": "`lcm backup verify FILE` and `lcm backup restore FILE`",
    }.get(kind, "nothing lcm knows: it is not a backup lcm wrote")
    names = {
        "changes": "a change backup",
        "prune-archive": "a prune archive",
        "full": "a full database backup",
    }
    return LcmError(
        "WRONG_BACKUP_KIND",
        f"{path} is {names.get(kind, 'not an lcm backup')}, not {names.get(expected, expected)}; "
        f"nothing was changed. Use {use}.",
        {"path": path, "kind": kind, "expected": expected},
    )


# --- writing ------------------------------------------------------------------------------


def write_change_file(
    path: str,
    header: dict[str, Any],
    records: Iterator[tuple[int, str, str, Any, Any, bytes | None, bytes | None]],
    columns_of: Callable[[str], list[str]],
    *,
    mode: int,
) -> None:
    """Write ``records`` (log records, in order) as a change backup at ``path``.

    Through the one file-writing routine: an exclusive private temp file, gzip, fsync,
    linked to ``path`` (never over a file: FileExistsError).
    """
    digest = hashlib.sha256()
    tables: dict[str, dict[str, int]] = {}
    changes = 0
    with atomic_writer(path, mode=mode, replace=False) as raw:
        # Level 1, as prune's archive: several times faster than the default, nearly as small.
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as out:

            def emit(chunk: bytes) -> None:
                digest.update(chunk)
                out.write(chunk)

            emit(line(header))
            for seq, op, table, old_rowid, new_rowid, old, new in records:
                if table not in tables:
                    tables[table] = {"insert": 0, "update": 0, "delete": 0}
                    emit(line({"table": table, "columns": columns_of(table)}))
                emit(change_line(seq, op, table, old_rowid, new_rowid, old, new))
                tables[table][OPS[op]] += 1
                changes += 1
            out.write(
                line({"trailer": True, "changes": changes, "tables": tables, "sha256": digest.hexdigest()})
            )


def write_manifest(verified: dict[str, Any], *, mode: int) -> dict[str, Any]:
    """Write the manifest of a change backup :func:`verify_change_file` just checked; return it."""
    path = str(verified["backupPath"])
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "kind": "changes",
        "backupPath": path,
        "sizeBytes": verified["sizeBytes"],
        "sha256": verified["sha256"],
        "contentSha256": verified["contentSha256"],
        "integrity": "ok",
        "changes": verified["changes"],
        "tables": verified["tables"],
        **{k: verified["header"].get(k) for k in _HEADER_FACTS},
    }
    atomic_write(manifest_path_for(path), (json.dumps(manifest, indent=2) + "\n").encode("utf-8"), mode=mode)
    return manifest


#: Header fields a manifest repeats, so `lcm backup list` reads no compressed file.
_HEADER_FACTS = ("run", "command", "label", "databasePath", "databaseIdentity", "startedAt", "createdAt")


# --- reading and verifying ------------------------------------------------------------------


_CHANGE_HEAD = re.compile(rb'\[-?\d+,"(insert|update|delete)",("(?:[^"\\]|\\.)*")')


def _corrupt(path: str, why: str) -> LcmError:
    return LcmError(
        "BACKUP_VERIFY_FAILED",
        f"Change backup {path} failed verification ({why}); it cannot be trusted. Nothing was changed.",
        {"backupPath": path, "reason": why, "kind": "changes"},
    )


def verify_change_file(path: str) -> dict[str, Any]:
    """Check a change backup end to end: gzip CRC, header, every line against the trailer's
    sha256 and counts, and the manifest's size and sha256 when there is one.

    Raises BACKUP_NOT_FOUND, WRONG_BACKUP_KIND (another kind of file) or
    BACKUP_VERIFY_FAILED (``details.reason``). Returns the header, the counts and the
    checks that ran.
    """
    if not os.path.isfile(path):
        raise LcmError(
            "BACKUP_NOT_FOUND",
            f"No backup file at {path}. Run `lcm backup list` to see the backups beside the database.",
            {"backupPath": path},
        )
    kind = sniff_kind(path)
    if kind not in ("changes", "unknown"):
        raise wrong_kind(path, kind, "changes")
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    tables: dict[str, dict[str, int]] = {}
    declared: set[str] = set()
    changes = 0
    try:
        with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
            for raw in handle:
                if trailer is not None:
                    raise _corrupt(path, "data after the trailer")
                # A change line is counted from its first fields; the sha256 covers the rest.
                # loads_bounded: a line nested past the recursion limit is damage (a
                # ValueError), not a RecursionError that escapes as INTERNAL_ERROR.
                head = _CHANGE_HEAD.match(raw) if header is not None else None
                entry = [0, head[1].decode(), loads_bounded(head[2])] if head else loads_bounded(raw)
                if header is None:
                    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                        raise _corrupt(path, "not an lcm change backup")
                    if entry.get("version") != VERSION:
                        raise _corrupt(path, f"unsupported version {entry.get('version')}")
                    header = entry
                elif isinstance(entry, list):
                    _seq, op, table = entry[0], entry[1], entry[2]
                    if table not in declared or op not in ("insert", "update", "delete"):
                        raise _corrupt(path, "a change before its table, or an unknown change")
                    tables.setdefault(table, {"insert": 0, "update": 0, "delete": 0})[op] += 1
                    changes += 1
                elif entry.get("trailer"):
                    trailer = entry
                    continue
                else:
                    declared.add(str(entry["table"]))
                digest.update(raw)
    except LcmError:
        raise
    except (
        OSError,
        EOFError,
        zlib.error,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
    ) as exc:
        raise _corrupt(path, f"unreadable: {exc}") from None
    if header is None or trailer is None:
        raise _corrupt(path, "truncated (no trailer)")
    if trailer.get("sha256") != digest.hexdigest():
        raise _corrupt(path, "content checksum mismatch")
    if trailer.get("changes") != changes or trailer.get("tables") != tables:
        raise _corrupt(path, "change counts differ from the trailer")
    size, sha = hash_file(path)
    checks = [{"name": "content", "ok": True, "expected": trailer["sha256"], "actual": digest.hexdigest()}]
    manifest_path = manifest_path_for(path)
    manifest = _read_manifest(manifest_path)
    if manifest is not None:
        ok = manifest.get("sha256") == sha and manifest.get("sizeBytes") == size
        if not ok:
            raise _corrupt(path, "file checksum differs from its manifest")
        checks.append({"name": "manifest", "ok": True, "expected": manifest.get("sha256"), "actual": sha})
    return {
        "backupPath": path,
        "manifestPath": manifest_path if manifest is not None else None,
        "kind": "changes",
        "ok": True,
        "sizeBytes": size,
        "sha256": sha,
        "contentSha256": digest.hexdigest(),
        "changes": changes,
        "tables": tables,
        "header": header,
        "checks": checks,
    }


def _read_manifest(path: str) -> dict[str, Any] | None:
    if not os.path.exists(path):
        return None
    try:
        with open_input_text(path) as handle:
            found = loads_bounded(handle.read())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def read_manifest(backup_path: str) -> dict[str, Any] | None:
    """A change backup's manifest (``{}`` when unreadable, None when absent)."""
    return _read_manifest(manifest_path_for(backup_path))


def read_changes(path: str) -> Iterator[tuple[list[str], list[Any]]]:
    """Yield ``(columns, change)`` of a verified file, in order; values decoded to Python
    (call :func:`verify_change_file` first). ``change`` is ``[seq, op, table, oldRowid,
    newRowid, oldValues | None, newValues | None]``."""
    columns: dict[str, list[str]] = {}
    with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
        next(handle)  # header
        for number, raw in enumerate(handle, start=2):
            # The checksums prove the file is whole, not that it is well formed (a sha256 is
            # no signature): a record of the wrong shape is refused here, before any write,
            # instead of failing deep in the restore as INTERNAL_ERROR.
            try:
                entry = loads_bounded(raw)
                if isinstance(entry, list):
                    yield _checked_change(entry, columns)
                    continue
                if entry.get("trailer"):
                    return
                names = entry["columns"]
                if not isinstance(entry["table"], str) or not isinstance(names, list):
                    raise ValueError("a table line without a name and columns")
                if not all(isinstance(name, str) for name in names):
                    raise ValueError("a column name that is not text")
                columns[entry["table"]] = names
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                raise _corrupt(path, f"malformed line {number}: {exc}") from None


_VALUES = {"insert": (False, True), "update": (True, True), "delete": (True, False)}  # (old, new) row present


def _checked_change(entry: list[Any], columns: dict[str, list[str]]) -> tuple[list[str], list[Any]]:
    """``(columns, change)`` of one change line, its values decoded; ValueError when it does not
    have the shape the writer gives (:func:`change_line`)."""
    if len(entry) != 7:
        raise ValueError("a change is not 7 fields")
    seq, op, table = entry[0], entry[1], entry[2]
    if not _is_int(seq) or op not in _VALUES or not isinstance(table, str) or table not in columns:
        raise ValueError("a change without its seq, op or declared table")
    names = columns[table]
    for present, at in zip(_VALUES[op], (3, 4)):  # (rowid, values) at (3, 5) and (4, 6)
        rowid, values = entry[at], entry[at + 2]
        if not present:
            if values is not None:
                raise ValueError(f"an {op} with a row it cannot have")
            continue
        if not _is_int(rowid) or not isinstance(values, list) or len(values) != len(names):
            raise ValueError(f"an {op} without its rowid or one value per column")
        entry[at + 2] = decoded = [_from_json(v) for v in values]
        if not all(map(sqlite_value, decoded)):
            raise ValueError("a value SQLite cannot hold")
    return names, entry


def _is_int(value: Any) -> bool:
    """A 64-bit integer, as SQLite stores one (a bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def sqlite_value(value: Any) -> bool:
    """Whether a value read back from a backup or archive is one SQLite can store as is."""
    return value is None or isinstance(value, (str, bytes, float)) or _is_int(value)
