"""`lcm serve`: one warm process answering newline-delimited JSON requests.

Each request is one line ``{"id", "method", "params"}``; each answer is one line
``{"id", "result"}`` (``result`` is exactly the envelope the in-process call returns, with
``"exitStatus": N`` beside it when the call would exit N from `lcm hook`) or
``{"id", "error": {code, message, details}}``. Answers may come back out of order: match
them by ``id``. Besides every registry operation there are three methods of the server
itself: ``health``, ``reload`` (re-read config and reopen the database on next use) and
``shutdown``.

Concurrency: requests run on a small thread pool, each worker with its own warm
:class:`~lcm_cli.engine.context.Context` (config resolved once, read connection kept
open). Reads run concurrently; operations that write wait in a per-session queue (session
key, else session id, else conversation id), so one session's writes apply in arrival
order while other sessions carry on. A write's follow-up (the debt drain that calls the
summarizer model) runs in the session's own follow-up lane, so a turn never waits behind a
model. Every write is its own transaction, so stopping
(EOF, ``shutdown``, SIGTERM/SIGINT) waits for the writes in flight (up to
``LCM_SERVE_GRACE_MS``) and never leaves one half-done; reads still running after 1 s are
answered ``SERVER_STOPPING`` and cut (SQLite interrupted, regex helper killed).

Isolation: a line is bounded in size (``REQUEST_TOO_LARGE``) and JSON depth
(``INVALID_REQUEST``); an exception in an operation is an ``INTERNAL_ERROR`` answer for its
id; server methods are answered on the reading thread, never behind the workers; a
transport that dies makes the process exit 1, never 0.

Transports: ``--stdio`` (the host owns the pipe) or ``--socket PATH`` (a Unix socket
created with mode 0600, one request stream per connection; a second server on the same
path is refused).
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from lcm_cli import __version__
from lcm_cli.engine.core.errors import LcmError

DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
WORKERS = 4
SERVER_METHODS = ("health", "reload", "shutdown")

Respond = Callable[[dict[str, Any]], None]


def _error(request_id: Any, err: LcmError) -> dict[str, Any]:
    return {"id": request_id, "error": err.to_dict()}


class Server:
    """The warm engine behind every stream: contexts, per-session queues, the worker pool."""

    def __init__(
        self,
        *,
        db: str | None = None,
        config: str | None = None,
        openclaw_dir: str | None = None,
        env: dict[str, str] | None = None,
        agent: str | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        workers: int = WORKERS,
    ) -> None:
        self._flags = (db, config, openclaw_dir)
        self._agent = agent
        self._env = env
        self.max_request_bytes = max_request_bytes
        self._local = threading.local()
        self._generation = 0
        self._template: Any = None  # the resolved context of the current generation
        self._template_generation = -1
        self._template_lock = threading.Lock()
        # Writes waiting per session, in arrival order; a session is drained by one
        # worker at a time, so its writes never overlap or overtake each other.
        self._queues: dict[str, collections.deque[Callable[[], None]]] = {}
        self._queues_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="lcm-serve")
        self._in_flight = 0
        self._count_lock = threading.Lock()
        self.stopping = threading.Event()
        self.abandoning = threading.Event()  # stopping, and reads are no longer waited for
        self.failed = threading.Event()  # a transport died: the process exits non-zero
        self._calls: set[_Call] = set()
        self._draining = 0  # session queues being worked through (writes and follow-ups)
        self.started = time.monotonic()
        self.served = 0

    # -- warm state ------------------------------------------------------------

    def context(self) -> Any:
        """This worker thread's warm context (made again after a ``reload``).

        Paths and config are resolved once per generation and shared by every worker, so
        all requests see the same config until ``reload``.
        """
        local = self._local
        ctx = getattr(local, "ctx", None)
        if ctx is None or local.generation != self._generation:
            if ctx is not None:
                ctx.close()  # connections belong to the thread that opened them
            generation = self._generation
            ctx = self._resolved(generation)
            local.ctx, local.generation = ctx, generation
        return ctx

    def _resolved(self, generation: int) -> Any:
        from lcm_cli.engine.context import Context

        db, config, openclaw_dir = self._flags
        with self._template_lock:
            if self._template is None or self._template_generation != generation:
                template = Context(
                    db=db, config=config, openclaw_dir=openclaw_dir, env=self._env, agent=self._agent
                )
                try:
                    template.resolve_paths()
                    template.effective  # noqa: B018 - computed once, shared by the copies
                except LcmError:
                    # Unreadable config: each request resolves (and reports) it itself.
                    return Context(
                        db=db, config=config, openclaw_dir=openclaw_dir, env=self._env, agent=self._agent
                    )
                self._template, self._template_generation = template, generation
            return self._template.warm_copy()

    def reload(self) -> None:
        """Re-read config and reopen databases on each worker's next request."""
        self._generation += 1

    def _enqueue_write(self, key: str, job: Callable[[], None]) -> None:
        """Run ``job`` after every earlier write of the same session."""
        with self._queues_lock:
            queue = self._queues.get(key)
            if queue is not None:  # a worker is draining this session: it will get here
                queue.append(job)
                return
            self._queues[key] = collections.deque([job])
        self._executor.submit(self._drain, key)

    def _schedule_follow_up(self, key: str, follow_up: Any) -> None:
        """Run an operation's follow-up (the debt drain after a deferred turn) in the background.

        It goes into the session's own follow-up lane, not its write queue: the drain waits
        for the summarizer model, and a turn must never wait behind it (the engine takes the
        session's write lock only around each write, so the two interleave safely). One
        follow-up per session at a time; one that finds another already waiting is skipped
        (that one drains the same debt). A stopping server skips it too: the state that asked
        for it stays recorded (debt waits for the next maintain).
        """

        def run_follow_up() -> None:
            if self.stopping.is_set():
                return
            from lcm_cli.engine.api import call

            try:
                call(follow_up.name, follow_up.params, context=self.context())
            except Exception:  # a background job has no caller to answer; the row keeps the failure
                if os.environ.get("LCM_DEBUG") == "1":
                    import traceback

                    traceback.print_exc()

        lane = key + "\x00follow-up"
        with self._queues_lock:
            queue = self._queues.get(lane)
            if queue:
                return
            if queue is not None:  # a follow-up of this session runs: this one comes next
                queue.append(run_follow_up)
                return
            self._queues[lane] = collections.deque([run_follow_up])
        self._executor.submit(self._drain, lane)

    def _drain(self, key: str) -> None:
        with self._count_lock:
            self._draining += 1
        try:
            while True:
                with self._queues_lock:
                    queue = self._queues[key]
                    if not queue:
                        del self._queues[key]
                        return
                    job = queue.popleft()
                job()
        finally:
            with self._count_lock:
                self._draining -= 1

    # -- requests --------------------------------------------------------------

    def handle_line(self, line: bytes, respond: Respond) -> Future[Any] | None:
        """Parse one request line and answer it (operations run on the pool).

        Nothing a line holds can raise out of here: the worst is an ``INTERNAL_ERROR``
        answer for that line, and the stream goes on.
        """
        try:
            return self._handle_line(line, respond)
        except Exception as exc:  # one bad line must not take the stream down
            respond(_error(None, _internal(exc)))
            return None

    def _handle_line(self, line: bytes, respond: Respond) -> Future[Any] | None:
        from lcm_cli.engine.core.limits import JsonTooDeep, loads_bounded

        try:
            request = loads_bounded(line)
        except JsonTooDeep as exc:
            respond(
                _error(
                    None,
                    LcmError(
                        "INVALID_REQUEST",
                        f"Request nests deeper than {exc.max_depth} levels; send flatter JSON.",
                        {"maxDepth": exc.max_depth, "reason": "too-deep"},
                    ),
                )
            )
            return None
        except ValueError as exc:
            respond(_error(None, LcmError("INVALID_REQUEST", f"Request is not valid JSON ({exc}).")))
            return None
        if not isinstance(request, dict):
            respond(
                _error(
                    None, LcmError("INVALID_REQUEST", "A request is one JSON object {id, method, params}.")
                )
            )
            return None
        request_id = request.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int, float)):
            respond(
                _error(None, LcmError("INVALID_REQUEST", 'A request needs an "id" (a string or a number).'))
            )
            return None
        method = request.get("method")
        if not isinstance(method, str) or not method:
            respond(_error(request_id, LcmError("INVALID_REQUEST", 'A request needs a "method" (a string).')))
            return None
        params = request.get("params", {})
        if method in SERVER_METHODS:
            respond({"id": request_id, "result": self._server_method(method)})
            return None
        if self.stopping.is_set():
            respond(_error(request_id, _stopping()))
            return None
        key = self._write_key(method, params)
        call = _Call(request_id, method, key is not None, respond)
        with self._count_lock:
            self._in_flight += 1
            self._calls.add(call)
        if key is None:
            return self._executor.submit(self._run, call, params)
        done: Future[None] = Future()

        def job() -> None:
            try:
                outcome = self._run(call, params)
                for follow_up in outcome.follow_ups if outcome is not None else ():
                    self._schedule_follow_up(key, follow_up)
            finally:
                done.set_result(None)

        self._enqueue_write(key, job)
        return done

    @staticmethod
    def _write_key(method: str, params: Any) -> str | None:
        """The session queue of a write request; None for reads (and requests that fail to parse)."""
        from lcm_cli.commands.dispatch import serialization_key, split_params
        from lcm_cli.engine.core.registry import OPERATIONS

        spec = OPERATIONS.get(method)
        if spec is None or not spec.writes:
            return None
        try:
            fields, _ = split_params(method, params)
        except LcmError:
            return None  # _run reports it
        return serialization_key(method, fields)

    def _server_method(self, method: str) -> dict[str, Any]:
        if method == "reload":
            self.reload()
            data: dict[str, Any] = {"reloaded": True}
        elif method == "shutdown":
            self.stopping.set()
            data = {"stopping": True}
        else:
            data = {
                "version": __version__,
                "pid": os.getpid(),
                "uptimeMs": int((time.monotonic() - self.started) * 1000),
                "served": self.served,
                "inFlight": self._in_flight,
            }
        return {"ok": True, "command": method, "data": data, "meta": {}}

    def _run(self, call: _Call, params: Any) -> Any:
        """Answer one operation request; returns the successful outcome (None on error)."""
        from lcm_cli.commands.dispatch import operation_spec, split_params
        from lcm_cli.commands.door import serve_answer
        from lcm_cli.engine.api import invoke

        method = call.method
        call.thread = threading.get_ident()
        try:
            if self.abandoning.is_set() and not call.writes:
                raise _stopping()
            operation_spec(method)
            fields, args = split_params(method, params)
            ctx = call.ctx = self.context()
            ctx.drop_replaced()
            outcome = invoke(method, fields, args=args, context=ctx)
            if method == "config.set":
                self.reload()  # the config changed under every warm context
            call.answer(serve_answer(call.request_id, outcome))
            return outcome
        except LcmError as err:
            call.answer(_error(call.request_id, err))
        except Exception as exc:  # one bad request must not take the server down
            if os.environ.get("LCM_DEBUG") == "1":
                import traceback

                traceback.print_exc()
            call.answer(_error(call.request_id, _internal(exc)))
        finally:
            call.ctx = None
            with self._count_lock:
                self._in_flight -= 1
                self.served += 1
                self._calls.discard(call)
        return None

    def _unfinished(self, *, writes: bool) -> list[_Call]:
        with self._count_lock:
            return [c for c in self._calls if c.writes == writes]

    def _writing(self) -> bool:
        with self._count_lock:
            return self._draining > 0 or any(c.writes for c in self._calls)

    def close(self, grace_ms: int | None = None) -> bool:
        """Stop: finish writes in flight, abandon slow reads; True when every write finished.

        Reads get at most one second (then they are answered ``SERVER_STOPPING``, their
        SQLite statements interrupted and their regex helpers killed); writes get the
        grace period (``LCM_SERVE_GRACE_MS``). A write still running after it is left to
        roll back when the process exits (every write is one transaction).
        """
        from lcm_cli.engine.core.limits import limit
        from lcm_cli.engine.recall import regex_worker

        grace = (limit("serve_grace_ms") if grace_ms is None else grace_ms) / 1000
        started = time.monotonic()
        read_grace = min(grace, 1.0)
        while self._unfinished(writes=False) and time.monotonic() - started < read_grace:
            time.sleep(0.02)
        self.abandoning.set()
        for call in self._unfinished(writes=False):
            call.answer(_error(call.request_id, _stopping()))
            ctx = call.ctx
            conn = getattr(ctx, "_conn", None) if ctx is not None else None
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.interrupt()  # safe from any thread: the statement fails "interrupted"
        regex_worker.stop_all()
        while self._writing() and time.monotonic() - started < grace:
            time.sleep(0.02)
        left = self._unfinished(writes=True)
        for call in left:
            call.answer(
                _error(call.request_id, _stopping("The write did not finish in time and was rolled back."))
            )
        self._executor.shutdown(wait=False, cancel_futures=False)
        return not left


class _Call:
    """One request in flight: answered exactly once, by its worker or by shutdown."""

    def __init__(self, request_id: Any, method: str, writes: bool, respond: Respond) -> None:
        self.request_id = request_id
        self.method = method
        self.writes = writes
        self._respond = respond
        self._answered = False
        self._lock = threading.Lock()
        self.ctx: Any = None
        self.thread: int | None = None

    def answer(self, message: dict[str, Any]) -> None:
        with self._lock:
            if self._answered:
                return
            self._answered = True
        self._respond(message)


def _internal(exc: BaseException) -> LcmError:
    return LcmError("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")


def _stopping(detail: str = "") -> LcmError:
    message = "The server is stopping and abandoned this request; send it again to the next server."
    return LcmError("SERVER_STOPPING", f"{message} {detail}".strip())


def serve_stream(
    server: Server, rfile: IO[bytes] | io.BufferedIOBase, wfile: IO[bytes] | io.BufferedIOBase
) -> None:
    """Answer the requests of one stream until EOF or ``shutdown``; wait for its answers."""
    write_lock = threading.Lock()
    pending: list[Future[Any]] = []
    broken = threading.Event()

    def respond(message: dict[str, Any]) -> None:
        from lcm_cli.render.output import to_json

        try:
            data = to_json(message).encode("utf-8")
        except Exception as exc:  # an answer that cannot be written is still an answer
            data = to_json(_error(message.get("id"), _internal(exc))).encode("utf-8")
        with write_lock:
            if broken.is_set():
                return
            try:
                wfile.write(data)
                wfile.flush()
            except (OSError, ValueError):
                broken.set()  # the client went away; the work itself is already committed

    limit = server.max_request_bytes
    while not server.stopping.is_set() and not broken.is_set():
        line = rfile.readline(limit + 1)
        if not line:
            break
        if len(line) > limit:
            while line and not line.endswith(b"\n"):  # skip the rest in bounded reads
                line = rfile.readline(1 << 20)
            respond(
                _error(
                    None,
                    LcmError(
                        "REQUEST_TOO_LARGE",
                        f"Request line is larger than {limit} bytes; split large batches into several "
                        "requests or raise --max-request-bytes (LCM_SERVE_MAX_REQUEST_BYTES).",
                        {"limitBytes": limit, "setting": "LCM_SERVE_MAX_REQUEST_BYTES"},
                    ),
                )
            )
            continue
        if not line.strip():
            continue
        future = server.handle_line(line, respond)
        if future is not None:
            pending.append(future)
            pending = [f for f in pending if not f.done()]
    for future in pending:
        future.result()


def _wait_for_stop(server: Server) -> None:
    """Block the main thread until EOF, ``shutdown``, SIGTERM or SIGINT.

    The signal handlers only set an event: raising from a handler could land inside
    any lock the main thread holds, so the transports run on their own threads.
    """

    def stop(signum: int, frame: Any) -> None:
        server.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not server.stopping.wait(0.5):
        pass


def _transport(server: Server, target: Callable[[], None]) -> Callable[[], None]:
    """``target`` run so that its death stops the server with a failure (exit 1), never silently."""

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # the transport itself died: say so and exit non-zero
            server.failed.set()
            import sys

            sys.stderr.write(f"lcm serve: {type(exc).__name__}: {exc}\n")
        finally:
            server.stopping.set()

    return run


def _exit_status(server: Server, writes_done: bool) -> int:
    return 1 if server.failed.is_set() or not writes_done else 0


def run_stdio(server: Server) -> int:
    """Serve stdin/stdout until EOF, ``shutdown`` or SIGTERM; 0 for a clean stop, else 1."""
    import sys

    reader = threading.Thread(
        target=_transport(server, lambda: serve_stream(server, sys.stdin.buffer, sys.stdout.buffer)),
        name="lcm-serve-stdin",
        daemon=True,
    )
    reader.start()
    _wait_for_stop(server)
    writes_done = server.close()  # writes in flight finish; slow reads are abandoned
    reader.join(timeout=0.5)
    status = _exit_status(server, writes_done)
    if reader.is_alive() or threading.active_count() > 1:
        # The reader still blocks on stdin, or an abandoned read still runs: the
        # interpreter cannot finalize under them, and every answer is already written.
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(status)
    return status


def _claim_socket(path: str) -> Any:
    """Lock ``PATH.lock`` and clear a stale socket file; refuse a path another server owns."""
    import fcntl
    import stat

    from lcm_cli.engine.core.files import open_lock_file

    try:
        # 0600, never through a planted symlink, never someone else's file.
        lock = open_lock_file(path + ".lock")  # held for the server's lifetime
    except OSError as exc:
        raise LcmError(
            "SERVE_SOCKET_FAILED",
            f"Cannot use the lock file {path}.lock ({exc.strerror or exc}); remove it if it is a link "
            "or not yours, or choose another --socket path.",
            {"socket": path, "lockFile": path + ".lock"},
        ) from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise LcmError(
            "SERVE_SOCKET_IN_USE",
            f"Another `lcm serve` owns {path}. Stop it first or choose another --socket path.",
            {"socket": path},
        ) from None
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return lock
    if not stat.S_ISSOCK(mode):
        lock.close()
        raise LcmError(
            "SERVE_SOCKET_IN_USE",
            f"{path} exists and is not a socket; refusing to replace it. Choose another --socket path.",
            {"socket": path},
        )
    os.unlink(path)  # a socket left by a server that died: we hold the lock, so it is stale
    return lock


def run_socket(server: Server, path: str) -> int:
    """Serve a Unix socket (mode 0600) until SIGTERM or ``shutdown``."""
    import socketserver

    path = os.path.abspath(path)
    lock = _claim_socket(path)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            serve_stream(server, self.rfile, self.wfile)

    class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True
        block_on_close = False  # in-flight work is tracked by the pool, not by connection threads

    old_umask = os.umask(0o177)  # the socket is born 0600: no window where others can connect
    try:
        try:
            unix = UnixServer(path, Handler)
        except OSError as exc:
            lock.close()
            raise LcmError(
                "SERVE_SOCKET_FAILED", f"Cannot listen on {path} ({exc}).", {"socket": path}
            ) from None
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    threading.Thread(
        target=_transport(server, lambda: unix.serve_forever(poll_interval=0.2)),
        name="lcm-serve-socket",
        daemon=True,
    ).start()
    writes_done = False
    try:
        _wait_for_stop(server)
    finally:
        unix.shutdown()
        unix.server_close()
        writes_done = server.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        lock.close()
    status = _exit_status(server, writes_done)
    if threading.active_count() > 1:
        os._exit(status)  # an abandoned read or a connection thread still runs
    return status


def main_door(request: Any, args: tuple[str, ...], globals_: dict[str, Any]) -> int:
    """`lcm serve --stdio | --socket PATH`, its options already read (and checked) from their
    declarations."""
    from lcm_cli.engine.core.limits import limit
    from lcm_cli.engine.core.params import MAX_REQUEST_BYTES, SOCKET, STDIO

    socket_path = request[SOCKET]
    max_bytes = request[MAX_REQUEST_BYTES] or limit("serve_request_bytes")
    if request[STDIO] == (socket_path is not None):
        raise LcmError("INVALID_ARGUMENT", "`lcm serve` needs exactly one of --stdio or --socket PATH.")
    server = Server(
        db=globals_.get("--db"),
        config=globals_.get("--config"),
        openclaw_dir=globals_.get("--openclaw-dir"),
        agent=globals_.get("--agent"),
        max_request_bytes=max_bytes,
    )
    if socket_path is not None:
        return run_socket(server, socket_path)
    return run_stdio(server)
