"""Regex matching that a deadline can stop from any thread.

Python's ``re`` holds the GIL while it backtracks and only a signal handler on the main
thread can cut it. So on the main thread (the CLI) a scan runs in-process under an
interval timer, and on any other thread (`lcm serve`'s workers) it runs in a small
helper process: the helper cuts itself at the deadline with its own timer, and the
caller kills it if it does not answer within a short grace after that. A killed helper
is replaced on the next scan; :func:`stop_all` kills every helper (server shutdown), so
a runaway scan never outlives the request or the server.

This file is also the helper's program: it imports only the standard library and is run
by path with ``python -I`` so it starts in about 15 ms.
"""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

_HEADER = struct.Struct("!I")
# A helper that has not answered this long after its own timer fired is killed.
KILL_GRACE_S = 0.25


class ScanTimedOut(Exception):
    """The deadline cut the scan; ``results`` holds what finished, ``stuck`` the text it was on."""

    def __init__(self, results: list[list[tuple[int, int]]], stuck: int) -> None:
        super().__init__("regex scan cut by the deadline")
        self.results = results
        self.stuck = stuck


class ScanAbandoned(Exception):
    """The helper was killed (server shutdown) before it answered."""


def scan(
    pattern: re.Pattern[str], texts: Sequence[str], *, per_text: int, max_hits: int, seconds: float
) -> list[list[tuple[int, int]]]:
    """Match spans per text, at most ``per_text`` each, stopping after ``max_hits`` texts matched.

    The list is as long as the texts scanned (shorter when ``max_hits`` stopped it). Raises
    :class:`ScanTimedOut` when ``seconds`` run out, from whichever thread it is called.
    """
    if seconds <= 0:
        raise ScanTimedOut([], 0)
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _scan_here(pattern, texts, per_text, max_hits, seconds)
    return _helper().scan(pattern, texts, per_text, max_hits, seconds)


class _Alarm(Exception):
    pass


def _fire(signum: int, frame: Any) -> None:
    raise _Alarm()


def _scan_here(
    pattern: re.Pattern[str], texts: Sequence[str], per_text: int, max_hits: int, seconds: float
) -> list[list[tuple[int, int]]]:
    """Scan on the main thread, cut by SIGALRM (``re`` checks for signals while it backtracks)."""
    results: list[list[tuple[int, int]]] = []
    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        matched = 0
        for text in texts:
            spans = _spans(pattern, text, per_text)
            results.append(spans)
            if spans:
                matched += 1
                if matched >= max_hits:
                    break
    except _Alarm:
        raise ScanTimedOut(results, len(results)) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return results


def _spans(pattern: re.Pattern[str], text: str, per_text: int) -> list[tuple[int, int]]:
    if per_text == 1:
        found = pattern.search(text)
        return [] if found is None else [found.span()]
    out = []
    for match in pattern.finditer(text):
        out.append(match.span())
        if len(out) >= per_text:
            break
    return out


# --------------------------------------------------------------------------------------
# The helper process, one per calling thread
# --------------------------------------------------------------------------------------

_local = threading.local()
_helpers: set[_Helper] = set()
_helpers_lock = threading.Lock()


class _Helper:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self.killed = False
        self.owner = threading.current_thread()

    def alive(self) -> bool:
        return not self.killed and self.proc.poll() is None

    def kill(self) -> None:
        self.killed = True
        try:
            self.proc.kill()
        except OSError:
            pass

    def close(self) -> None:
        self.kill()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def scan(
        self, pattern: re.Pattern[str], texts: Sequence[str], per_text: int, max_hits: int, seconds: float
    ) -> list[list[tuple[int, int]]]:
        ends = time.monotonic() + seconds
        payload = pickle.dumps(
            (pattern.pattern, pattern.flags, list(texts), per_text, max_hits, seconds),
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            self.proc.stdin.flush()
            reply = _read_message(self.proc.stdout.fileno(), ends + KILL_GRACE_S)
        except (OSError, EOFError, ValueError):
            reply = None
        if reply is None:
            abandoned = self.killed
            _retire(self)
            if abandoned:
                raise ScanAbandoned()
            raise ScanTimedOut([], 0)  # the helper did not answer in time: nothing is known
        results, timed_out = pickle.loads(reply)
        if timed_out:
            raise ScanTimedOut(results, len(results))
        return list(results)


def _read_message(fd: int, ends: float) -> bytes | None:
    """One length-prefixed message from ``fd``, or None when ``ends`` passes first."""
    buffer = bytearray()
    need = _HEADER.size
    header_done = False
    while True:
        while len(buffer) < need:
            left = ends - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, max(65536, need - len(buffer)))
            if not chunk:
                raise EOFError()
            buffer += chunk
        if header_done:
            return bytes(buffer[_HEADER.size : need])
        need = _HEADER.size + _HEADER.unpack_from(buffer)[0]
        header_done = True


def _helper() -> _Helper:
    helper: _Helper | None = getattr(_local, "helper", None)
    if helper is None or not helper.alive():
        if helper is not None:
            _retire(helper)
        helper = _Helper()
        _local.helper = helper
        with _helpers_lock:
            orphans = [h for h in _helpers if not h.owner.is_alive()]
            _helpers.add(helper)
        for orphan in orphans:  # their threads ended: nobody will scan with them again
            _retire(orphan)
    return helper


def _retire(helper: _Helper) -> None:
    helper.close()
    with _helpers_lock:
        _helpers.discard(helper)
    if getattr(_local, "helper", None) is helper:
        _local.helper = None


def stop_all() -> None:
    """Kill every helper: scans waiting on one fail with :class:`ScanAbandoned`."""
    with _helpers_lock:
        helpers = list(_helpers)
    for helper in helpers:
        helper.kill()


# --------------------------------------------------------------------------------------
# The helper's own loop
# --------------------------------------------------------------------------------------


def _serve() -> None:
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    compiled: dict[tuple[str, int], re.Pattern[str]] = {}
    while True:
        header = stdin.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        payload = stdin.read(_HEADER.unpack(header)[0])
        source, flags, texts, per_text, max_hits, seconds = pickle.loads(payload)
        pattern = compiled.get((source, flags))
        if pattern is None:
            if len(compiled) > 64:
                compiled.clear()
            pattern = compiled[(source, flags)] = re.compile(source, flags)
        try:
            answer: tuple[Any, bool] = (_scan_here(pattern, texts, per_text, max_hits, seconds), False)
        except ScanTimedOut as cut:
            answer = (cut.results, True)
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a scan stops
    _serve()
