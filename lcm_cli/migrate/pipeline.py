"""Forked helper processes for `lcm migrate-sessions`: readers that feed one writer.

Reading a transcript (scan, JS-compatible JSON parse, row building, hashing) is pure
Python work that needs no database lock, so it runs in forked children while the parent
keeps doing what only it may do: talk to SQLite. A child sends pickled objects over a
pipe, each framed by an 8-byte length; the pipe's small kernel buffer is the back-pressure
that keeps memory flat (a child blocks once it is an object or so ahead). For work a
child leaves elsewhere (the importer's staging files), credits bound how far ahead it
may go: the child takes them before the work and the parent gives them back after.

A child that dies (killed, crashed, out of memory) shows up as end-of-file in the middle
of what it was sending: :class:`Reader.receive` raises :class:`ReaderDied` instead of
waiting forever, and the caller fails only the unit it was reading. When the parent dies
instead, the child's next write fails (broken pipe) and it exits.

Forking is only safe in a single-threaded process (a lock held by another thread would
stay held in the child forever), so :func:`can_fork` says no inside a threaded server
and the callers fall back to reading in-process.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import selectors
import struct
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_FRAME = struct.Struct("<Q")
_READ_CHUNK = 1 << 16
# The parent's ends of every live reader's pipes: a reader forked later closes them, so
# that only the parent holds them (EOF and EPIPE then mean what they should).
_PARENT_FDS: set[int] = set()
# Set to "0" to read in-process (useful when profiling); any other value caps the workers.
WORKERS_ENV = "LCM_MIGRATE_WORKERS"


class ReaderDied(Exception):
    """The reader process ended before sending what it was sending."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def worker_count(wanted: int) -> int:
    """How many child processes to fork for ``wanted`` of them (0: read in-process)."""
    if not can_fork():
        return 0
    cap = os.environ.get(WORKERS_ENV)
    if cap is not None:
        try:
            wanted = min(wanted, max(0, int(cap)))
        except ValueError:
            pass
    return max(0, wanted)


def can_fork() -> bool:
    """True where forking readers is safe: POSIX fork and a single-threaded process."""
    return hasattr(os, "fork") and sys.platform != "win32" and threading.active_count() == 1


def _send_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _child(
    produce: Callable[[Callable[[Any], None], Callable[..., None]], None],
    write_fd: int,
    credit_fd: int | None,
    close_fds: Iterable[int],
) -> None:
    """Run ``produce`` in the forked child and leave with ``os._exit`` (never return)."""
    code = 0
    try:
        for fd in close_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        # A reader allocates many short-lived, acyclic objects (parsed JSON): collect
        # cycles less often, and never walk what was inherited from the parent (which
        # would also copy its pages).
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)

        def send(obj: Any) -> None:
            data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            _send_all(write_fd, _FRAME.pack(len(data)) + data)

        def acquire(count: int = 1) -> None:
            while credit_fd is not None and count > 0:
                got = os.read(credit_fd, count)
                if not got:
                    raise BrokenPipeError  # the parent is gone
                count -= len(got)

        produce(send, acquire)
    except BrokenPipeError:
        code = 3  # the parent is gone: nothing left to do
    except BaseException:  # noqa: BLE001 - a child must never unwind into the parent's code
        code = 1
        try:
            import traceback

            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


class Reader:
    """The parent's end of one forked reader: ordered objects out of one pipe."""

    def __init__(
        self, produce: Callable[[Callable[[Any], None], Callable[..., None]], None], credits: int = 0
    ) -> None:
        """Fork a child running ``produce(send, acquire)``.

        ``send(obj)`` hands an object to :meth:`receive`. With ``credits``, the child
        starts with that many and ``acquire(n)`` takes ``n`` of them, blocking until the
        parent gives enough back with :meth:`release`: what the pipe's buffer does for
        objects, for work the child keeps elsewhere (files). Without, it returns at once.
        """
        read_fd, write_fd = os.pipe()
        credit_read = credit_write = None
        if credits:
            credit_read, credit_write = os.pipe()
            os.write(credit_write, b"." * credits)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            others = [read_fd, *_PARENT_FDS] + ([credit_write] if credit_write is not None else [])
            _child(produce, write_fd, credit_read, others)
        os.close(write_fd)
        if credit_read is not None:
            os.close(credit_read)
        self.pid = pid
        self._file = os.fdopen(read_fd, "rb", buffering=_READ_CHUNK)
        self._credit_fd = credit_write
        _PARENT_FDS.add(read_fd)
        if credit_write is not None:
            _PARENT_FDS.add(credit_write)
        self._status: int | None = None

    def release(self, count: int = 1) -> None:
        """Give the child ``count`` credits back (a no-op once it is gone)."""
        if self._credit_fd is not None and count > 0:
            try:
                os.write(self._credit_fd, b"." * count)
            except OSError:
                pass  # the child has exited; receive() says how

    def receive(self) -> Any:
        """The next object the child sent; :class:`ReaderDied` if it ended without one."""
        head = self._file.read(_FRAME.size)
        if len(head) < _FRAME.size:
            raise ReaderDied(self._why(eof_clean=not head))
        (size,) = _FRAME.unpack(head)
        data = self._file.read(size)
        if len(data) < size:
            raise ReaderDied(self._why(eof_clean=False))
        return pickle.loads(data)

    def _why(self, *, eof_clean: bool) -> str:
        status = self.wait()
        if os.WIFSIGNALED(status):
            return f"the reader process was killed by signal {os.WTERMSIG(status)}"
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        if eof_clean and code == 0:
            return "the reader process stopped early"
        return f"the reader process exited with status {code}"

    def wait(self) -> int:
        """Reap the child (once) and return its wait status."""
        if self._status is None:
            _, self._status = os.waitpid(self.pid, 0)
        return self._status

    def close(self) -> None:
        """Stop reading: close the pipe (a child still writing gets EPIPE), kill and reap it."""
        try:
            if not self._file.closed:
                _PARENT_FDS.discard(self._file.fileno())
                self._file.close()
            if self._credit_fd is not None:
                _PARENT_FDS.discard(self._credit_fd)
                os.close(self._credit_fd)
                self._credit_fd = None
        finally:
            if self._status is None:
                try:
                    os.kill(self.pid, 9)
                except ProcessLookupError:
                    pass
                self.wait()


class Feed:
    """Items from several readers, taken in any order the caller needs them.

    Reader ``r`` produces the items ``plan[r]`` in that order and sends ``(index, obj)``
    for each. :meth:`take` reads the owning reader's pipe until the item asked for comes,
    keeping what comes before it: a reader may build ahead of the order the items are
    taken in (the importer's first reader starts with the largest file).
    """

    def __init__(self, readers: list[Reader], plan: list[list[int]]) -> None:
        self._readers: list[Reader | None] = list(readers)
        self._plan = plan
        self._owner = {index: r for r, items in enumerate(plan) for index in items}
        self._sent = [0] * len(plan)  # how many of its items each reader has sent
        self._held: dict[int, Any] = {}
        self._lost: dict[int, ReaderDied] = {}  # an item whose reader died building it

    def take(self, index: int) -> Any:
        """Item ``index``'s object; None when its reader is gone (read it yourself).

        Raises :class:`ReaderDied` when the reader ended while building this very item
        (the caller fails it, rather than risk the same end in its own process).
        """
        if index in self._held:
            return self._held.pop(index)
        if index in self._lost:
            raise self._lost.pop(index)
        r = self._owner.get(index)
        reader = self._readers[r] if r is not None else None
        if r is None or reader is None:
            return None
        while True:
            try:
                got, obj = reader.receive()
            except ReaderDied as died:
                reader.close()
                self._readers[r] = None
                victim = self._plan[r][self._sent[r]]  # the item it was on
                if victim == index:
                    raise
                self._lost[victim] = died
                return None
            self._sent[r] += 1
            if got == index:
                return obj
            self._held[got] = obj

    def release(self, index: int, count: int) -> None:
        """Give ``count`` credits back to the reader of item ``index`` (if it is still there)."""
        r = self._owner.get(index)
        reader = self._readers[r] if r is not None else None
        if reader is not None:
            reader.release(count)

    def close(self) -> None:
        """Stop and reap every reader."""
        for reader in self._readers:
            if reader is not None:
                reader.close()
        self._readers = [None] * len(self._readers)


def _balanced(sizes: list[int], workers: int) -> list[list[int]]:
    """Item indexes per worker, largest first onto the least-loaded worker (LPT)."""
    loads = [0] * workers
    plan: list[list[int]] = [[] for _ in range(workers)]
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        target = loads.index(min(loads))
        plan[target].append(index)
        loads[target] += sizes[index] + 1
    return plan


def map_in_children(
    task: Callable[[int], Any],
    count: int,
    sizes: list[int],
    workers: int,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Run ``task(i)`` for every ``i < count`` in ``workers`` forked children.

    Items are spread by ``sizes`` (bytes to read) so the children finish together. Yields
    ``(i, result)`` as results come, in no particular order; an item whose child died
    yields ``(i, ReaderDied)`` so the caller can redo or fail it. ``progress`` is called
    with the number of items done so far.
    """
    plan = _balanced(sizes, workers)
    readers: list[tuple[Reader, list[int]]] = []
    try:
        for items in plan:
            if not items:
                continue

            def produce(send: Callable[[Any], None], acquire: Any, items: list[int] = items) -> None:
                for i in items:
                    send((i, task(i)))

            readers.append((Reader(produce), items))
        selector = selectors.DefaultSelector()
        pending: dict[int, tuple[Reader, set[int]]] = {}
        for reader, items in readers:
            fd = reader._file.fileno()
            os.set_blocking(fd, False)
            pending[fd] = (reader, set(items))
            selector.register(fd, selectors.EVENT_READ)
        buffers: dict[int, bytearray] = {fd: bytearray() for fd in pending}
        done = 0
        while pending:
            for key, _ in selector.select():
                fd = int(key.fd)
                reader, left = pending[fd]
                try:
                    chunk = os.read(fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                buf = buffers[fd]
                if chunk:
                    buf += chunk
                    while len(buf) >= _FRAME.size:
                        (size,) = _FRAME.unpack_from(buf)
                        if len(buf) < _FRAME.size + size:
                            break
                        i, result = pickle.loads(bytes(buf[_FRAME.size : _FRAME.size + size]))
                        del buf[: _FRAME.size + size]
                        left.discard(i)
                        done += 1
                        if progress is not None:
                            progress(done)
                        yield i, result
                    continue
                selector.unregister(fd)
                del pending[fd]
                if left:
                    died = ReaderDied(reader._why(eof_clean=False))
                    for i in sorted(left):
                        yield i, died
        selector.close()
    finally:
        for reader, _ in readers:
            reader.close()
