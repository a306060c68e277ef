"""Run the real OpenClaw agent host (installed from the npm registry) against this checkout.

- ``ensure_host(version)`` installs Node 24 (the npm package ``node-linux-<arch>``) and
  ``openclaw@<version>`` with npm into a cache dir (``$LCM_OPENCLAW_CACHE`` or
  ``<repo>/.cache/openclaw-hosts/``), once: a file lock serialises concurrent callers and a
  completion marker makes repeated calls free.
- ``StubModel`` is a deterministic OpenAI chat-completions server (SSE when asked) on
  127.0.0.1 that records every request body.
- ``HostRun`` builds one state dir + config, installs the plugin into it and runs turns.

When the npm registry cannot be reached the install skips the test, unless ``CI`` is set:
then the install failure fails the test loudly.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SHIM_DIR = REPO / "integrations" / "openclaw"

# The pinned host versions (newest first) and the Node that runs them: the one place to bump.
HOST_VERSIONS = ("2026.9.6", "2026.7.1")
NODE_PACKAGE_VERSION = "24.22.3"
NPM_REGISTRY = os.environ.get("npm_config_registry") or "https://registry.npmjs.org/"

# The host's own hints for a context engine it could not use for a turn.
DEGRADED_MARKER = 'degraded to "legacy"'


def lcm_executable() -> str:
    """The `lcm` console script of the interpreter running the tests."""
    exe = Path(sys.executable).with_name("lcm")
    assert exe.exists(), f"no lcm next to {sys.executable}"
    return str(exe)


# Read at import: the suite's autouse fixture clears every LCM_* variable before a test runs.
_CACHE_OVERRIDE = os.environ.get("LCM_OPENCLAW_CACHE", "").strip()


def cache_root() -> Path:
    """Where the hosts are installed: ``$LCM_OPENCLAW_CACHE`` or ``<repo>/.cache/openclaw-hosts``."""
    return Path(_CACHE_OVERRIDE) if _CACHE_OVERRIDE else REPO / ".cache" / "openclaw-hosts"


def node_package() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        pytest.skip(f"no Node 24 npm package for machine {machine!r}")
    return f"node-linux-{arch}"


def registry_reachable(timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(NPM_REGISTRY.rstrip("/") + "/openclaw", timeout=timeout) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(prefix: Path, spec: str, path_dirs: list[Path], timeout: float) -> float:
    """`npm install` SPEC into PREFIX (fresh); returns the seconds it took."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.mkdir(parents=True)
    env = {**os.environ, "PATH": os.pathsep.join([*map(str, path_dirs), os.environ.get("PATH", "")])}
    env.setdefault("npm_config_update_notifier", "false")
    env.setdefault("npm_config_cache", str(cache_root() / "npm-cache"))  # not the per-test HOME
    started = time.monotonic()
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), spec],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"npm install {spec} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return time.monotonic() - started


def _installed(marker: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class HostInstall:
    """One installed host: the Node 24 bin dir and the `openclaw` entry point."""

    version: str
    node_bin: Path
    openclaw: Path
    install_seconds: float  # 0.0 when it came from the cache

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join([str(self.node_bin), env.get("PATH", "")])
        return env


def _ensure_node(root: Path) -> tuple[Path, float]:
    package = node_package()
    prefix = root / f"node-{NODE_PACKAGE_VERSION}"
    marker = prefix / ".lcm-complete"
    bin_dir = prefix / "node_modules" / package / "bin"
    with _locked(root / f"node-{NODE_PACKAGE_VERSION}.lock"):
        if _installed(marker) and (bin_dir / "node").exists():
            return bin_dir, 0.0
        seconds = _npm_install(prefix, f"{package}@{NODE_PACKAGE_VERSION}", [], timeout=600)
        node = bin_dir / "node"
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60)
        if version.returncode != 0 or not version.stdout.startswith("v24."):
            raise RuntimeError(f"installed node does not run: {version.stdout} {version.stderr}")
        marker.write_text(
            json.dumps({"package": package, "version": NODE_PACKAGE_VERSION, "seconds": seconds})
        )
        return bin_dir, seconds


def _install(version: str) -> HostInstall:
    root = cache_root()
    node_bin, node_seconds = _ensure_node(root)
    prefix = root / f"openclaw-{version}"
    marker = prefix / ".lcm-complete"
    openclaw = prefix / "node_modules" / ".bin" / "openclaw"
    with _locked(root / f"openclaw-{version}.lock"):
        if _installed(marker) and openclaw.exists():
            return HostInstall(version, node_bin, openclaw, node_seconds)
        seconds = _npm_install(prefix, f"openclaw@{version}", [node_bin], timeout=1200)
        marker.write_text(json.dumps({"version": version, "seconds": seconds}))
        return HostInstall(version, node_bin, openclaw, node_seconds + seconds)


def ensure_host(version: str) -> HostInstall:
    """The installed host VERSION (installing it on first use); skips only off-line outside CI."""
    if version not in HOST_VERSIONS:
        raise ValueError(f"{version} is not a pinned host version {HOST_VERSIONS}")
    in_ci = bool(os.environ.get("CI", "").strip())
    try:
        return _install(version)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        if not in_ci and not registry_reachable():
            pytest.skip(f"npm registry {NPM_REGISTRY} unreachable; cannot install openclaw@{version}: {err}")
        raise


# --- the stub model -------------------------------------------------------------------


def text_of(content: Any) -> str:
    """A chat message's content as plain text (string, or the text blocks joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


@dataclass(frozen=True)
class ToolCall:
    """A reply that calls a tool (streamed as OpenAI chat-completions ``tool_calls`` deltas)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = "call1"  # the host strips `_` and `-` from the ids it sends back


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, tool_search: bool = True) -> ToolCall:
    """A stub reply that calls the plugin tool NAME.

    OpenClaw 2026.9.x hides plugin tools behind Tool Search: the model calls
    ``tool_call {"id": NAME, "args": ARGUMENTS}`` (a direct call of NAME is "not found").
    ``tool_search=False``: a direct call (2026.7.1).
    """
    arguments = dict(arguments or {})
    if tool_search:
        return ToolCall("tool_call", {"id": name, "args": arguments})
    return ToolCall(name, arguments)


class StubModel:
    """A deterministic chat-completions server on 127.0.0.1 that records each request body.

    The reply to a request is the next entry of ``script`` (text or a :class:`ToolCall`),
    else ``reply_for(n)`` (n counts requests from 1), by default ``"stub reply N"``.
    ``delay`` (seconds) holds the reply back; ``on_request`` runs in the handler thread
    before the delay (a test can start killing things there).
    """

    def __init__(self, delay: float = 0.0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.delay = delay
        self.on_request: Callable[[int, dict[str, Any]], None] | None = None
        self.reply_for: Callable[[int], str] = lambda n: f"stub reply {n}"
        self.script: list[str | ToolCall] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> StubModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if isinstance(r.get("messages"), list)]

    def _record(self, body: dict[str, Any]) -> tuple[int, str | ToolCall]:
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
            if self.script:
                return n, self.script.pop(0)
        return n, self.reply_for(n)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "stub-1", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                n, reply = stub._record(body)
                if stub.on_request is not None:
                    stub.on_request(n, body)
                if stub.delay:
                    time.sleep(stub.delay)
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                base = {"id": f"stub-{n}", "created": 1_700_000_000, "model": body.get("model", "stub-1")}
                chunk = {**base, "object": "chat.completion.chunk"}
                if isinstance(reply, ToolCall):
                    call = {"index": 0, "id": reply.call_id, "type": "function"}
                    arguments = json.dumps(reply.arguments)
                    chunks = [
                        {
                            **chunk,
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {
                                        "role": "assistant",
                                        "content": None,
                                        "tool_calls": [
                                            {**call, "function": {"name": reply.name, "arguments": ""}}
                                        ],
                                    },
                                }
                            ],
                        },
                        {
                            **chunk,
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {
                                        "tool_calls": [{"index": 0, "function": {"arguments": arguments}}]
                                    },
                                }
                            ],
                        },
                        {
                            **chunk,
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                            "usage": usage,
                        },
                    ]
                else:
                    chunks = [
                        {
                            **chunk,
                            "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply}}],
                        },
                        {
                            **chunk,
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                            "usage": usage,
                        },
                    ]
                try:
                    if body.get("stream"):
                        self.send_response(200)
                        self.send_header("content-type", "text/event-stream")
                        self.send_header("cache-control", "no-cache")
                        self.end_headers()
                        for data in chunks:
                            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                            self.wfile.flush()
                        self.wfile.write(b"data: [DONE]\n\n")
                        self.wfile.flush()
                    else:
                        message = {"role": "assistant", "content": str(reply)}
                        self._json(
                            200,
                            {
                                **base,
                                "object": "chat.completion",
                                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                "usage": usage,
                            },
                        )
                except (BrokenPipeError, ConnectionResetError):
                    return

        return Handler


# --- one host state dir ----------------------------------------------------------------


@dataclass
class TurnResult:
    code: int | None
    stdout: str
    stderr: str
    elapsed: float
    exited_by_itself: bool

    @property
    def json(self) -> Any:
        """The `--json` answer (the last top-level JSON object on stdout)."""
        text = self.stdout
        start = text.find("{\n")
        if start < 0:
            start = text.find("{")
        return json.loads(text[start:])

    @property
    def reply_texts(self) -> list[str]:
        return [str(p.get("text", "")) for p in self.json.get("payloads", [])]

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def descendants(root: int) -> list[int]:
    """Every live descendant of ROOT (children before their children)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: list[int] = []
    frontier = [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def lcm_serve_pids(marker: str) -> list[int]:
    """Live (not zombie) `lcm ... serve` processes whose command line mentions MARKER (a db path)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if any(line.startswith("State:") and "Z" in line for line in status.splitlines()):
            continue
        words = [a.decode(errors="replace") for a in argv if a]
        if "serve" in words and any(Path(w).name == "lcm" for w in words) and marker in " ".join(words):
            pids.append(int(entry.name))
    return pids


def wait_for_no_serve(marker: str, within: float) -> list[int]:
    """Poll until no `lcm serve` for MARKER is left (returns those still running after WITHIN s)."""
    deadline = time.monotonic() + within
    while True:
        left = lcm_serve_pids(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


@dataclass
class HostRun:
    """One host state dir (HOME, state, config) wired to a stub model, with or without the plugin."""

    install: HostInstall
    root: Path
    model: StubModel
    plugin: bool = True
    lcm_command: list[str] | None = None  # None: this venv's `lcm serve --stdio --db <db>`
    extra_env: dict[str, str] = field(default_factory=dict)
    turn_timeout: float = 120.0

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.state = self.root / "state"
        self.config = self.root / "openclaw.json"
        self.db = self.state / "lcm.db"
        self.trace = self.root / "shim-trace.jsonl"
        self.home.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)
        self.config.write_text(json.dumps(self.base_config(), indent=1))
        if self.plugin:
            self.install_plugin()

    def base_config(self) -> dict[str, Any]:
        model = {"id": "stub-1", "name": "stub-1", "contextWindow": 32000, "maxTokens": 1000}
        provider = {
            "baseUrl": self.model.base_url,
            "api": "openai-completions",
            "apiKey": "x",
            "models": [model],
        }
        return {
            "models": {"providers": {"stub": provider}},
            "agents": {"defaults": {"model": {"primary": "stub/stub-1"}, "skipBootstrap": True}},
        }

    @property
    def command(self) -> list[str]:
        if self.lcm_command is not None:
            return self.lcm_command
        return [lcm_executable(), "serve", "--stdio", "--db", str(self.db)]

    def env(self) -> dict[str, str]:
        env = self.install.env()
        for name in list(env):
            if name.startswith(("LCM_", "OPENCLAW_")):
                del env[name]
        env.update(
            {
                "HOME": str(self.home),
                "OPENCLAW_STATE_DIR": str(self.state),
                "OPENCLAW_CONFIG_PATH": str(self.config),
                "LCM_DATABASE_PATH": str(self.db),
                "LCM_SHIM_TRACE": str(self.trace),
                "NO_COLOR": "1",
                "FORCE_COLOR": "0",
            }
        )
        if self.plugin:
            env["LCM_COMMAND"] = " ".join(self.command)
        env.update(self.extra_env)
        return env

    def openclaw(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.install.openclaw), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def install_plugin(self) -> None:
        args = ["plugins", "install", "-l", str(SHIM_DIR)]
        if not self.install.version.startswith("2026.7."):
            args += ["--force", "--accept-capabilities"]
        done = self.openclaw(*args, timeout=180)
        assert done.returncode == 0, f"plugins install failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        config = json.loads(self.config.read_text())
        assert config.get("plugins", {}).get("slots", {}).get("contextEngine") == "lcm", config.get("plugins")

    def turn(self, session_id: str, message: str, timeout: float | None = None) -> TurnResult:
        """One `openclaw agent --local` turn; kills the process group if it outlives TIMEOUT."""
        limit = self.turn_timeout if timeout is None else timeout
        args = [
            "agent",
            "--local",
            "--agent",
            "main",
            "--session-id",
            session_id,
            "--message",
            message,
            "--json",
        ]
        started = time.monotonic()
        process = subprocess.Popen(
            [str(self.install.openclaw), *args],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        exited = True
        try:
            stdout, stderr = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            exited = False
            # The launcher runs the agent in a session of its own: kill the whole tree.
            for pid in [*descendants(process.pid), process.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        return TurnResult(process.returncode, stdout, stderr, time.monotonic() - started, exited)

    def trace_lines(self) -> list[dict[str, Any]]:
        if not self.trace.exists():
            return []
        return [json.loads(line) for line in self.trace.read_text().splitlines() if line.strip()]


# --- what each side stored ---------------------------------------------------------------


def stored_messages(db: Path, session_key: str) -> list[tuple[str, str]]:
    """(role, text) of every message lcm.db holds for SESSION_KEY, in order, all conversations."""
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT m.role, m.content FROM messages m JOIN conversations c USING (conversation_id)"
            " WHERE c.session_key = ? ORDER BY c.conversation_id, m.seq",
            (session_key,),
        ).fetchall()
    return [(str(role), str(content)) for role, content in rows]


def context_show(db: Path, session_key: str, token_budget: int = 32000) -> list[tuple[str, str]]:
    """(role, text) of what `lcm context show` assembles for SESSION_KEY."""
    done = subprocess.run(
        [lcm_executable(), "--db", str(db), "context", "show", "--session-key", session_key]
        + ["--token-budget", str(token_budget)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    messages = json.loads(done.stdout)["data"]["messages"]
    return [(str(m["role"]), text_of(m.get("content"))) for m in messages]


def host_transcript(state: Path, session_id: str) -> list[tuple[str, str]]:
    """(role, text) of the messages a 2026.8+ host stored for SESSION_ID (table transcript_events)."""
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    out = []
    for (event_json,) in rows:
        assert event_json is not None, (
            "a compressed (zstd) transcript event: not expected for these short turns"
        )
        event = json.loads(event_json)
        message = event.get("message") if event.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") in ("user", "assistant", "toolResult", "tool"):
            out.append((str(message["role"]), text_of(message.get("content"))))
    return out


_STAMP = re.compile(r"^\[[A-Z][a-z]{2} \d{4}-\d\d-\d\d \d\d:\d\d[^\]]*\] ")
_RUNTIME = re.compile(r"\n\nRuntime: [^\n]*$")


def sent_text(message: dict[str, Any]) -> str:
    """A request message's text without the host's own decorations of user messages.

    The host prefixes the pending prompt with a ``[Wed 2026-12-02 00:46 UTC] `` time stamp,
    and 2026.9.x appends a ``\\n\\nRuntime: agent=main | ...`` line to the first user
    message it sends; neither is part of the stored conversation.
    """
    text = text_of(message.get("content"))
    if message.get("role") == "user":
        text = _RUNTIME.sub("", _STAMP.sub("", text))
    return text
