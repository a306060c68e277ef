"""Files the user names for lcm to write (``--out``, ``--screenshot``): the one check and write.

Every writer of such a file goes through :func:`output_target` (operations declare the
option in ``OpSpec.outputs``, and a test runs each of them against every target below):

- the database, its ``-wal``/``-shm``/``-journal``, the config file and a backup's or
  archive's ``.manifest.json`` are never written, not even with ``--force``
  (``OUTPUT_REFUSED``). Files are compared by device and inode, so ``./lcm.db``, a path
  through ``..`` or a symlinked folder, and a hard link are all caught; a name that does
  not exist yet is compared as (its folder's inode, its name), which catches the
  database's ``-wal`` before SQLite creates it;
- a symlink or anything but a regular file at the target is refused too: the write never
  goes through a link;
- an existing file is refused unless ``--force`` (with the command's own error code where
  it had one: ``EXPORT_TARGET_EXISTS``, ``BACKUP_TARGET_EXISTS``);
- the bytes go to an exclusive ``O_NOFOLLOW`` temp sibling that is fsynced and renamed
  into place (:func:`lcm_cli.engine.core.files.atomic_writer`); the check runs again just
  before the rename.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator, Sequence

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import PRIVATE_MODE, atomic_writer
from lcm_cli.engine.core.held_files import COMPANIONS

if TYPE_CHECKING:
    from typing import IO

#: The sidecar every backup and prune archive has: ``<file>.manifest.json``.
MANIFEST_SUFFIX = ".manifest.json"

#: (path, reason) pairs no output may name; see :func:`protected_files`.
Protected = Sequence[tuple[str, str]]

_WHAT = {
    "database": "the database",
    "database-companion": "a file SQLite keeps beside the database (-wal, -shm, -journal)",
    "config": "the config file",
    "backup-manifest": "a backup manifest (*.manifest.json)",
    "symlink": "a symlink (lcm never writes through one)",
    "not-a-regular-file": "something that is not a regular file",
}


def protected_files(database: str, config: str) -> list[tuple[str, str]]:
    """The database with its companions, and the config, under their names and the names
    symlinks resolve them to (SQLite names the ``-wal`` after the resolved file)."""
    protected: list[tuple[str, str]] = []
    for path in _spellings(database):
        protected.append((path, "database"))
        protected += [(path + suffix, "database-companion") for suffix in COMPANIONS]
    protected += [(path, "config") for path in _spellings(config)]
    return protected


def _spellings(path: str) -> list[str]:
    """``path`` and the path its symlinks resolve to (a path with a NUL names no file: none)."""
    if not path or "\x00" in path:
        return []
    return list(dict.fromkeys((path, os.path.realpath(path))))


def _entry(path: str) -> tuple[int, int, str] | None:
    """(device, inode) of the folder holding ``path``, and its name: a file that may not exist yet."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        info = os.stat(folder)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, name)


def refusal(path: str, protected: Protected) -> str | None:
    """Why lcm must never write ``path`` (a key of the reasons above), or None."""
    if os.path.basename(path).endswith(MANIFEST_SUFFIX):
        return "backup-manifest"
    try:
        info: os.stat_result | None = os.lstat(path)
    except (OSError, ValueError):
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        return "symlink"
    if info is not None and not stat.S_ISREG(info.st_mode):
        return "not-a-regular-file"
    where = _entry(path)
    for other, reason in protected:
        if where is not None and _entry(other) == where:
            return reason
        if info is None:
            continue
        try:
            found = os.stat(other)
        except (OSError, ValueError):
            continue
        if (found.st_dev, found.st_ino) == (info.st_dev, info.st_ino):  # another name, a hard link
            return reason
    return None


def _refused(path: str, option: str, reason: str) -> LcmError:
    return LcmError(
        "OUTPUT_REFUSED",
        f"{option} {path} names {_WHAT[reason]}; lcm never writes it, not even with --force. "
        "Choose another path.",
        {"path": path, "option": option, "reason": reason},
    )


class OutputTarget:
    """A checked output path (:attr:`path`, absolute); write it with :meth:`writer` or :meth:`write`."""

    __slots__ = ("path", "option", "force", "_protected", "_exists")

    def __init__(
        self, path: str, option: str, force: bool, protected: Protected, exists: Callable[[str], LcmError]
    ) -> None:
        self.path = path
        self.option = option
        self.force = force
        self._protected = protected
        self._exists = exists

    def check(self) -> None:
        """Raise ``OUTPUT_REFUSED`` when the path names a file lcm must never write (now)."""
        reason = refusal(self.path, self._protected)
        if reason is not None:
            raise _refused(self.path, self.option, reason)

    @contextlib.contextmanager
    def writer(self, *, mode: int = PRIVATE_MODE) -> Iterator[IO[bytes]]:
        """A binary handle whose bytes become :attr:`path` atomically when the block ends."""
        try:
            with atomic_writer(self.path, mode=mode, replace=self.force, check=self.check) as handle:
                yield handle
        except FileExistsError:  # appeared meanwhile: without --force nothing is replaced
            raise self._exists(self.path) from None

    def write(self, data: bytes, *, mode: int = PRIVATE_MODE) -> None:
        """Write ``data`` as :attr:`path` through :meth:`writer`."""
        with self.writer(mode=mode) as handle:
            handle.write(data)


def _output_exists(option: str) -> Callable[[str], LcmError]:
    def error(path: str) -> LcmError:
        return LcmError(
            "OUTPUT_EXISTS",
            f"{path} already exists; pass --force to replace it, or choose another {option} path.",
            {"path": path, "option": option},
        )

    return error


def _refuse_nul(path: str, option: str = "--out") -> None:
    """``INVALID_ARGUMENT`` for a path with a NUL character (no file name holds one; the OS
    calls raise a bare ``ValueError`` for it, which would surface as ``INTERNAL_ERROR``)."""
    if "\x00" in path:
        raise invalid_argument(f"{option} holds a NUL character, which no file name can.", {"option": option})


def check_output_folder(path: str, protected: Protected, option: str = "--out") -> None:
    """Refuse a folder lcm would fill, or create with its missing parents (``OUTPUT_REFUSED``),
    when it or one of those parents takes the name of a file above: a folder made at the
    database's ``-wal`` or ``-journal`` name keeps SQLite from opening the database at all.
    An existing folder, or a symlink to one, is fine; each file written in it is checked by
    :func:`output_target`.
    """
    _refuse_nul(path, option)
    current = os.path.abspath(os.path.expanduser(path))
    while True:
        reason = refusal(current, protected)
        if reason not in (None, "symlink", "not-a-regular-file"):
            raise _refused(current, option, reason)
        parent = os.path.dirname(current)
        if os.path.lexists(current) or parent == current:
            return
        current = parent


def output_target(
    path: str,
    *,
    protected: Protected,
    force: bool = False,
    option: str = "--out",
    exists: Callable[[str], LcmError] | None = None,
) -> OutputTarget:
    """Check the user-named output ``path`` (``~`` expanded, made absolute) for writing.

    ``protected``: :func:`protected_files` of the call (``Context.protected_files``).
    Raises ``OUTPUT_REFUSED`` for a file lcm never writes, and ``exists(path)`` (default
    ``OUTPUT_EXISTS``) for an existing file unless ``force``.
    """
    _refuse_nul(path, option)
    target = OutputTarget(
        os.path.abspath(os.path.expanduser(path)),
        option,
        force,
        protected,
        exists or _output_exists(option),
    )
    target.check()
    if not force and os.path.lexists(target.path):
        raise target._exists(target.path)
    return target
