"""The files this process holds SQLite connections on, and the one way lcm reads a file.

SQLite's locks are POSIX advisory locks, which belong to a process and an inode, not to a
descriptor: closing *any* descriptor on a database file drops every lock the process
holds on it, whoever opened that descriptor. SQLite keeps its own descriptors open while
it holds locks, but it cannot know about a descriptor lcm opens itself (a header probe,
a lock probe, a checksum, a transcript path that happens to name lcm.db). Once such a
descriptor is closed, the next process that opens the file believes it is the last user,
checkpoints and deletes the ``-wal``, and every later commit of this process lands in an
unlinked file.

So, within one process:

- every SQLite connection lcm opens is registered here for its lifetime
  (:func:`hold`, called by ``engine/db/connection.py``, the one connection path);
- every other read of an existing file goes through :func:`open_input`. Its descriptor
  is closed normally, unless the file (or the database whose ``-wal``/``-shm``/
  ``-journal`` it is) is held at that moment: then the descriptor is kept open ("parked")
  until the last connection on the file is gone. A held file is read through one parked
  descriptor per inode (positioned reads), so repeated reads never pile descriptors up.

:func:`is_held` lets a probe skip reading a file it already has a connection on.
"""

from __future__ import annotations

import errno
import io
import os
import stat

# threading.Lock is _thread's lock; importing threading itself costs every command ~1 ms.
from _thread import allocate_lock

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: The files SQLite keeps beside a database, named after it.
COMPANIONS = ("-wal", "-shm", "-journal")

_lock = allocate_lock()
#: Held database files: absolute path -> number of open connections on it.
_held: dict[str, int] = {}
#: Descriptors kept open on held inodes, by (st_dev, st_ino).
_parked: dict[tuple[int, int], list[int]] = {}
#: Claims a finalizer dropped while the lock was taken, released by whoever holds it.
_deferred: list[Hold] = []


class _Locked:
    """``with _locked:`` takes the lock, and before giving it back releases the claims that
    finalizers dropped meanwhile (see :meth:`Hold.release_from_finalizer`)."""

    def __enter__(self) -> None:
        _lock.acquire()

    def __exit__(self, *_exc: object) -> None:
        try:
            while _deferred:
                _deferred.pop()._release_locked()
        finally:
            _lock.release()


_locked = _Locked()


class Hold:
    """One connection's claim on a database file; :meth:`release` when it closes."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def release(self) -> None:
        """Drop this claim; the last one on a file closes the descriptors parked on it."""
        with _locked:
            self._release_locked()

    def release_from_finalizer(self) -> None:
        """:meth:`release` for a ``__del__``: the garbage collector may run one while this very
        thread holds the lock (inside any function here), so never wait for it; when it is
        taken, the holder releases the claim before it lets go."""
        if _lock.acquire(blocking=False):
            _lock.release()
            self.release()
        else:
            _deferred.append(self)

    def _release_locked(self) -> None:
        if self.path not in _held:
            return
        _held[self.path] -= 1
        if _held[self.path] <= 0:
            del _held[self.path]
            keep = _held_inodes()
            for key in [k for k in _parked if k not in keep]:
                for fd in _parked.pop(key, ()):
                    os.close(fd)
        self.path = ""


def hold(path: str) -> Hold:
    """Register a connection on the database file ``path`` (release it when it closes)."""
    absolute = os.path.abspath(path)
    with _locked:
        _held[absolute] = _held.get(absolute, 0) + 1
    return Hold(absolute)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def _held_inodes() -> set[tuple[int, int]]:
    """The inodes of every held database and of its companions that exist now (lock held)."""
    found: set[tuple[int, int]] = set()
    for path in _held:
        for name in (path, *(path + suffix for suffix in COMPANIONS)):
            try:
                found.add(_identity(os.stat(name)))
            except OSError:
                continue
    return found


def is_held(path: str) -> bool:
    """True when this process holds an SQLite connection on ``path`` (or on the database
    whose companion file it is): such a file must not be opened and closed by hand."""
    if not _held:
        return False
    try:
        key = _identity(os.stat(path))
    except OSError:
        return False
    with _locked:
        return key in _held_inodes()


def _release_descriptor(fd: int) -> None:
    """Close ``fd``, or park it when the file it is on is held (closing would drop locks)."""
    if _held:
        key = _identity(os.fstat(fd))
        with _locked:
            if key in _held_inodes():
                _parked.setdefault(key, []).append(fd)
                return
    os.close(fd)


class _InputFile(io.RawIOBase):
    """A read-only raw file whose close never drops this process's SQLite locks.

    ``shared``: a parked descriptor, read with positioned reads at this file's own
    position and never closed here. Otherwise the descriptor is this file's own, read
    and sought as usual (so a pipe works too).
    """

    def __init__(self, fd: int, name: str, *, shared: bool) -> None:
        super().__init__()
        self._fd = fd
        self._shared = shared
        self._position = 0
        self.name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._shared:
            data = os.pread(self._fd, len(buffer), self._position)
        else:
            data = os.read(self._fd, len(buffer))
        count = len(data)
        buffer[:count] = data
        self._position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not self._shared:
            self._position = os.lseek(self._fd, offset, whence)
            return self._position
        if whence == io.SEEK_SET:
            self._position = offset
        elif whence == io.SEEK_CUR:
            self._position += offset
        else:
            self._position = os.fstat(self._fd).st_size + offset
        if self._position < 0:
            self._position = 0
            raise OSError(22, "negative seek position")
        return self._position

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        if not self.closed:
            try:
                if not self._shared:
                    _release_descriptor(self._fd)
            finally:
                super().close()


def open_input(path: str, *, buffer_size: int = io.DEFAULT_BUFFER_SIZE) -> io.BufferedReader:
    """Open an existing file for buffered binary reading (``with open_input(p) as f:``).

    Raises OSError as ``open`` does. Closing it never drops an SQLite lock this process
    holds on the file (see the module docstring).
    """
    if _held:
        try:
            key = _identity(os.stat(path))
        except OSError:
            key = None
        with _locked:
            parked = _parked.get(key) if key is not None else None
            if parked and key in _held_inodes():
                return io.BufferedReader(_InputFile(parked[0], path, shared=True), buffer_size)
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        raw = _InputFile(fd, path, shared=False)
    except BaseException:
        _release_descriptor(fd)
        raise
    return io.BufferedReader(raw, buffer_size)


def open_input_text(path: str, *, encoding: str = "utf-8") -> io.TextIOWrapper:
    """:func:`open_input` decoded as text (universal newlines, as ``open(path, encoding=...)``)."""
    return io.TextIOWrapper(open_input(path), encoding=encoding)
