"""The errors a backup raises, with what to do next.

Error codes (``LcmError.code``) and when they are raised
    ``INVALID_ARGUMENT``          bad ``pages_per_step`` / ``sleep_ms`` / ``keep``; restore of
                                  a file onto itself or onto a path that is not a file.
    ``DATABASE_NOT_FOUND``        the source database (create) does not exist or is not a file.
    ``DATABASE_OPEN_FAILED``      the source is not an SQLite database or cannot be opened.
    ``DATABASE_BUSY``             the source stayed locked past the busy timeout.
    ``DATABASE_IN_USE``           restore target is open in another process (without ``force``).
    ``BACKUP_TARGET_EXISTS``      an explicit ``out`` already exists; it is left unchanged.
    ``BACKUP_TARGET_UNWRITABLE``  the destination directory is missing, not a directory,
                                  or refuses writes (permissions, read-only filesystem).
    ``BACKUP_NO_SPACE``           free space below the source size (+WAL) + 1 MiB before
                                  copying, or the disk filled while writing (SQLITE_FULL,
                                  ENOSPC, EDQUOT, EFBIG); the partial file is removed.
    ``BACKUP_FAILED``             the copy, its integrity check, or a file operation failed
                                  (a write I/O error, e.g. a ``ulimit -f`` size limit, names
                                  the directory), or a rollback-journal source kept
                                  changing; the partial file is removed.
    ``BACKUP_NOT_FOUND``          verify/restore of a backup file that does not exist.
    ``BACKUP_VERIFY_FAILED``      restore of a backup whose integrity check or manifest
                                  checks fail (a backup without a manifest is restorable
                                  when its integrity check passes).
"""

from __future__ import annotations

import errno
import sqlite3
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.connection import translate_sqlite_error

_NO_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_WRITE_IOERRS = {
    "SQLITE_IOERR_WRITE",
    "SQLITE_IOERR_FSYNC",
    "SQLITE_IOERR_TRUNCATE",
    "SQLITE_IOERR_DIR_FSYNC",
}
_UNWRITABLE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOENT}


def no_space_error(directory: str, needed: int | None, free: int | None, cause: str) -> LcmError:
    """A BACKUP_NO_SPACE error for ``directory``."""
    return LcmError(
        "BACKUP_NO_SPACE",
        f"Not enough free space in {directory} for the backup ({cause}); nothing was kept. "
        "Free some space, or pass --out PATH on a disk with room.",
        {"directory": directory, "neededBytes": needed, "freeBytes": free},
    )


def unwritable_error(directory: str, cause: str) -> LcmError:
    """A BACKUP_TARGET_UNWRITABLE error for ``directory``."""
    return LcmError(
        "BACKUP_TARGET_UNWRITABLE",
        f"Cannot write a backup in {directory} ({cause}). Create the directory or fix its "
        "permissions, or pass --out PATH somewhere writable.",
        {"directory": directory},
    )


def backup_failed(message: str, details: dict[str, Any]) -> LcmError:
    """A BACKUP_FAILED error."""
    return LcmError("BACKUP_FAILED", message, details)


def os_error(exc: OSError, directory: str, what: str) -> LcmError:
    """The backup error for an OSError raised while ``what`` in ``directory``."""
    cause = exc.strerror or str(exc)
    if exc.errno in _NO_SPACE_ERRNOS:
        return no_space_error(directory, None, None, f"{what}: {cause}")
    if exc.errno in _UNWRITABLE_ERRNOS:
        return unwritable_error(directory, f"{what}: {cause}")
    return backup_failed(
        f"Backup failed while {what} ({cause}); no partial file was kept. Retry, or check the disk.",
        {"directory": directory},
    )


def sqlite_error(exc: sqlite3.Error, source: str, directory: str, timeout_ms: int) -> LcmError:
    """The backup error for an sqlite3 error raised while copying ``source``."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    text = str(exc)
    if name == "SQLITE_FULL" or "disk is full" in text:
        return no_space_error(directory, None, None, f"SQLite: {text}")
    if name == "SQLITE_NOTADB" or "not a database" in text:
        return LcmError(
            "DATABASE_OPEN_FAILED",
            f"{source} is not an SQLite database ({text}). Check --db / LCM_DATABASE_PATH.",
            {"databasePath": source},
        )
    if "locked" in text or "busy" in text:
        return translate_sqlite_error(exc, source, timeout_ms)
    if name in _WRITE_IOERRS or (not name and "disk I/O error" in text and _writes_limited()):
        return backup_failed(
            f"Writing the backup in {directory} failed ({text}): the disk may be full or failing, "
            "or a file-size limit (`ulimit -f`) was reached. No partial file was kept; free space "
            "or pass --out PATH on another disk.",
            {"databasePath": source, "directory": directory, "sqliteError": name},
        )
    return backup_failed(
        f"Backup of {source} failed ({text}); no partial file was kept. Retry; if it fails "
        "again run `lcm backup --quick` or check the source with `PRAGMA integrity_check`.",
        {"databasePath": source, "directory": directory},
    )


def _writes_limited() -> bool:
    """True when this process may not write files past a size (``ulimit -f``).

    Python 3.10's sqlite3 gives no error name: a "disk I/O error" is then taken for the
    write side when such a limit is what can make a write fail.
    """
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return soft != resource.RLIM_INFINITY
