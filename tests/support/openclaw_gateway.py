"""The long-running OpenClaw Gateway of a ``HostRun`` state dir, on loopback.

``Gateway(run)`` writes the ``gateway`` section (token auth, loopback, the OpenAI-compatible
HTTP endpoint) into the run's config, starts ``openclaw gateway run``, waits for its
``[gateway] ready`` line, sends turns, restarts it in place and stops it. Measured facts
behind it (OpenClaw 2026.9.6 and 2026.7.1):

- The process started is the daemon itself (it retitles itself ``openclaw-gateway``);
  whoever listens on the port is signalled. SIGUSR2 restarts it in place (same pid with
  ``OPENCLAW_NO_RESPAWN=1``): ``gateway_stop`` fires, plugins register again, and the
  shim's next call starts a fresh ``lcm serve``. SIGTERM stops it and its children.
- A turn over ``POST /v1/chat/completions`` (header ``x-openclaw-session-key``) takes
  about 0.3 s warm, against about 1.5-2 s for ``openclaw agent`` through the Gateway and
  15-25 s for a one-shot ``openclaw agent --local``. A session key the host has not seen
  gets a random session id there, so the first turn of a session goes through
  ``openclaw agent --session-id`` (:meth:`Gateway.turn` does that by itself).
- Slash commands (``/new``, ``/reset``) run only through ``openclaw agent`` (no ``--local``):
  over HTTP they reach the model as plain text.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.openclaw_host import HostRun, TurnResult, descendants

READY_LINE = "[gateway] ready"
TOKEN = "lcm-test-gateway-token"


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listener_pids(port: int) -> list[int]:
    """Pids holding a listening socket on PORT (from /proc/net/tcp* and /proc/*/fd)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(parts[9])
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        pids.append(int(entry.name))
                        break
    return pids


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return not any(line.startswith("State:") and "Z" in line for line in status.splitlines())


@dataclass
class Turn:
    """One turn through the Gateway: its reply text and wall time."""

    ok: bool
    text: str
    elapsed: float
    detail: str = ""


@dataclass
class Gateway:
    """A loopback Gateway for one ``HostRun``."""

    run: HostRun
    ready_timeout: float = 180.0
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.run.root / "gateway.log"
        config = json.loads(self.run.config.read_text())
        config["gateway"] = {
            "mode": "local",
            "port": self.port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": TOKEN},
            "http": {"endpoints": {"chatCompletions": {"enabled": True}}},
        }
        self.run.config.write_text(json.dumps(config, indent=1))

    def env(self) -> dict[str, str]:
        env = self.run.env()
        env["OPENCLAW_GATEWAY_TOKEN"] = TOKEN
        env["OPENCLAW_NO_RESPAWN"] = "1"  # SIGUSR2 restarts in place, same pid
        return env

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> float:
        """Start the Gateway and wait until it is ready; the seconds it took."""
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.run.install.openclaw),
                    "gateway",
                    "run",
                    "--port",
                    str(self.port),
                    "--bind",
                    "loopback",
                ],
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_ready(offset, started)
        return time.monotonic() - started

    def _wait_ready(self, offset: int, started: float) -> None:
        deadline = started + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None and not self.pids():
                raise RuntimeError(f"gateway exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            if READY_LINE in self.log(offset) and self.pids():
                return
            time.sleep(0.2)
        raise TimeoutError(f"gateway not ready after {self.ready_timeout} s:\n{self.log()[-3000:]}")

    def pids(self) -> list[int]:
        """The daemon: whoever listens on the port."""
        return listener_pids(self.port)

    def restart(self) -> float:
        """Restart in place (SIGUSR2); the seconds until it is ready again."""
        offset = self.log_path.stat().st_size
        started = time.monotonic()
        for pid in self.pids():
            os.kill(pid, signal.SIGUSR2)
        self._wait_ready(offset, started)
        return time.monotonic() - started

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the daemon; SIGKILL whatever of its tree is left after TIMEOUT."""
        roots = set(self.pids())
        if self.process is not None and self.process.poll() is None:
            roots.add(self.process.pid)
        tree = {pid for root in roots for pid in descendants(root)} | roots
        for pid in roots:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(pid) for pid in tree):
            if self.process is not None:
                self.process.poll()
            time.sleep(0.1)
        for pid in tree:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self, offset: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(offset)
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    # --- turns ---------------------------------------------------------------------------

    def host_session_id(self, session_key: str, agent: str = "main") -> str | None:
        """The host's current session id for SESSION_KEY (2026.8+ store), if any."""
        store = self.run.state / "agents" / agent / "agent" / "openclaw-agent.sqlite"
        if not store.exists():
            return None
        with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
            row = conn.execute(
                "SELECT current_session_id FROM session_nodes WHERE session_key = ?", (session_key,)
            ).fetchone()
        return str(row[0]) if row else None

    def turn(self, session_id: str, message: str, timeout: float = 120.0) -> Turn:
        """One turn of session ``agent:main:explicit:SESSION_ID``: over HTTP once the host
        knows the session, else through ``openclaw agent`` (which pins its id)."""
        key = f"agent:main:explicit:{session_id}"
        if self.host_session_id(key) is None:
            return self.agent(session_id, message, timeout=timeout)
        return self.http_turn(key, message, timeout=timeout)

    def http_turn(self, session_key: str, message: str, timeout: float = 120.0) -> Turn:
        """``POST /v1/chat/completions`` for SESSION_KEY (the host keeps the history)."""
        body = json.dumps({"model": "openclaw/default", "messages": [{"role": "user", "content": message}]})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/chat/completions",
            data=body.encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Content-Type": "application/json",
                "x-openclaw-session-key": session_key,
            },
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        elapsed = time.monotonic() - started
        try:
            text = str(json.loads(raw)["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            text = ""
        return Turn(status == 200, text, elapsed, raw.decode(errors="replace")[-2000:])

    def agent(self, session_id: str, message: str, timeout: float = 120.0) -> Turn:
        """``openclaw agent --session-id ID --message TEXT --json`` through the Gateway
        (slash commands such as ``/new`` run only this way)."""
        args = ["agent", "--agent", "main", "--session-id", session_id, "--message", message, "--json"]
        started = time.monotonic()
        process = subprocess.Popen(
            [str(self.run.install.openclaw), *args],
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in [*descendants(process.pid), process.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        result = TurnResult(process.returncode, stdout, stderr, time.monotonic() - started, True)
        try:
            answer: Any = json.loads(stdout[stdout.find("{") :])
            payloads = (answer.get("result") or answer).get("payloads") or []
            text = "\n".join(str(p.get("text", "")) for p in payloads)
        except (ValueError, AttributeError):
            text = ""
        return Turn(process.returncode == 0, text, result.elapsed, result.output[-2000:])
