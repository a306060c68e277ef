"""Every file lcm writes goes through here: private, exclusive, atomic, durable, no orphans.

A file whose path the user names (``--out``, ``--screenshot``) is first checked by
:mod:`lcm_cli.engine.core.outputs`, then written here.

One routine owns the temp-then-rename write (:func:`atomic_writer`, :func:`atomic_write`,
and :func:`create_temp` + :func:`publish` for a file SQLite fills by path):

- the temp file is a sibling of the final name (same filesystem: the rename is atomic),
  named ``.<final name>.lcm-<pid>-<16 hex>.tmp``: unpredictable, and recognizable with
  its owner's pid;
- it is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600, so a file or a
  symlink planted at that name is never opened, followed or overwritten;
- before it is published it gets its final mode (:func:`private_mode`: 0600, or the
  source's mode when that is stricter, for anything derived from the database or the
  config) and is fsynced; it is then renamed over the final name (``replace``), or
  hard-linked to it, which fails rather than replace an existing file or link; the
  directory is fsynced so the rename survives a crash;
- a kill at any instant leaves at most the temp file; :func:`remove_orphans` (called by
  the next run of each writer) deletes those whose owner pid is no longer alive.

Lock files are reused across runs, so they cannot be created exclusively:
:func:`open_lock_file` opens one without following a symlink and refuses anything that
is not a regular file owned by this user. Backups and prune archives are recorded with
their size and SHA-256 (:func:`hash_file`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import IO, Any

_HASH_CHUNK = 1 << 20
#: Mode of every file derived from the database or the config (before the source's own).
PRIVATE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
#: ``.<name>.lcm-<pid>-<hex>.tmp`` and the SQLite sidecars of such a file.
TEMP_NAME = r"^\.(?P<name>.+)\.lcm-(?P<pid>\d+)-[0-9a-f]{16}\.tmp(?:-journal|-wal|-shm)?$"


def fsync_dir(directory: str) -> None:
    """Make the entries of ``directory`` (a rename into it, say) durable."""
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_file(path: str, *, fsync: bool = False) -> tuple[int, str]:
    """(size, hex SHA-256) of ``path``; with ``fsync``, its data is flushed to disk first."""
    import hashlib  # not on the start-up path of the commands that only fsync

    digest = hashlib.sha256()
    size = 0
    from lcm_cli.engine.core.held_files import open_input

    with open_input(path) as handle:
        if fsync:
            os.fsync(handle.fileno())
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def private_mode(source_mode: int | None = None) -> int:
    """0600, or ``source_mode``'s permission bits where they are stricter (0444 → 0400)."""
    if source_mode is None:
        return PRIVATE_MODE
    return stat.S_IMODE(source_mode) & PRIVATE_MODE


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (one we may not signal counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temp_name(final: str) -> str:
    """An unpredictable sibling of ``final`` that names this process: ``.<name>.lcm-<pid>-<hex>.tmp``."""
    import secrets

    directory, name = os.path.split(os.path.abspath(final))
    return os.path.join(directory, f".{name}.lcm-{os.getpid()}-{secrets.token_hex(8)}.tmp")


def create_temp(final: str) -> tuple[int, str]:
    """Exclusively create a new 0600 temp sibling of ``final``; return ``(fd, path)``.

    Never opens an existing file and never follows a symlink (``O_EXCL | O_NOFOLLOW``); a
    name that is taken (planted) is skipped for another random one.
    """
    for _attempt in range(16):
        path = temp_name(final)
        try:
            fd = os.open(path, _CREATE_FLAGS, PRIVATE_MODE)
        except FileExistsError:
            continue
        try:
            os.fchmod(fd, PRIVATE_MODE)  # whatever the umask did
        except BaseException:
            os.close(fd)
            remove_quietly(path)
            raise
        return fd, path
    raise FileExistsError(f"no free temporary name beside {final}")


def remove_quietly(*paths: str) -> None:
    """Unlink each path that exists (never following a link); ignore failures."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def publish(
    temp: str,
    final: str,
    *,
    mode: int | None = None,
    replace: bool = False,
    sync: bool = True,
    sync_directory: bool = True,
) -> None:
    """Give the finished ``temp`` its ``mode`` and the name ``final``, durably.

    ``sync`` fsyncs the file first; ``sync_directory`` fsyncs the directory after (a caller
    that must record the rename before that can pass False and call :func:`fsync_dir`).

    ``replace``: rename over ``final`` (a symlink there is replaced, never followed).
    Otherwise hard-link, which raises FileExistsError when ``final`` exists in any form;
    where the filesystem has no hard links, check then rename (a tiny race remains).
    """
    import errno

    if mode is not None or sync:
        fd = os.open(temp, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, f"{temp} is not a regular file")
            if mode is not None:
                os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    if replace:
        os.replace(temp, final)
    else:
        try:
            os.link(temp, final, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(final):
                raise FileExistsError(errno.EEXIST, "File exists", final) from None
            os.rename(temp, final)
        else:
            os.unlink(temp)
    if sync_directory:
        fsync_dir(os.path.dirname(os.path.abspath(final)))


@contextlib.contextmanager
def atomic_writer(
    final: str, *, mode: int = PRIVATE_MODE, replace: bool = True, check: Callable[[], None] | None = None
) -> Iterator[IO[bytes]]:
    """A binary handle on a fresh private temp file that becomes ``final`` when the block ends.

    On success: flushed, fsynced, given ``mode``, ``check`` called (it raises to stop the
    rename), published (:func:`publish`). On any exception the temp file is removed and
    ``final`` is untouched.
    """
    fd, temp = create_temp(final)
    handle = os.fdopen(fd, "wb")
    try:
        yield handle
        handle.flush()
        os.fchmod(handle.fileno(), mode)
        os.fsync(handle.fileno())
        handle.close()
        if check is not None:
            check()
        publish(temp, final, replace=replace, sync=False)
    except BaseException:
        handle.close()
        remove_quietly(temp)
        raise


def atomic_write(final: str, data: bytes, *, mode: int = PRIVATE_MODE, replace: bool = True) -> None:
    """Write ``data`` as ``final`` through :func:`atomic_writer`."""
    with atomic_writer(final, mode=mode, replace=replace) as handle:
        handle.write(data)


def remove_orphans(directory: str, name_prefix: str = "") -> list[str]:
    """Delete temp files (:data:`TEMP_NAME`) in ``directory`` whose owner pid is dead.

    ``name_prefix`` limits it to temp siblings of finals starting with that name. Only
    regular files are removed (a planted link is unlinked, never followed); files of
    live processes, this one included, are kept. Returns the removed paths.
    """
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    removed: list[str] = []
    for name in names:
        match = re.match(TEMP_NAME, name)
        if match is None or not match["name"].startswith(name_prefix):
            continue
        pid = int(match["pid"])
        if pid == os.getpid() or pid_alive(pid):
            continue
        path = os.path.join(directory, name)
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def open_lock_file(path: str) -> IO[bytes]:
    """Open (creating it 0600) the lock file ``path`` for ``flock``; never through a symlink.

    A lock file outlives its process and is reopened by the next one, so it cannot be
    created exclusively; instead a symlink is refused (``O_NOFOLLOW``) and so is anything
    but a regular file owned by this user.
    """
    import errno

    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, PRIVATE_MODE)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
            raise OSError(errno.EPERM, "not a private regular lock file", path)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, PRIVATE_MODE)
        handle: Any = os.fdopen(fd, "r+b")
    except BaseException:
        os.close(fd)
        raise
    return handle  # type: ignore[no-any-return]
