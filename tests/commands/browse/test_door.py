"""`lcm browse` at the CLI door: the optional extra, the terminal check, --screenshot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import lcm, lcm_process


def test_without_textual_names_the_install_command(
    example_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "textual", None)  # what find_spec reports for a missing package
    out = lcm("--openclaw-dir", str(example_dir), "browse")
    assert out.code == 3
    error = out.error
    assert error["code"] == "EXTRA_NOT_INSTALLED"
    assert "pip install 'lcm-cli[browse]'" in error["message"]
    assert error["details"] == {"extra": "browse", "install": "pip install 'lcm-cli[browse]'"}


def test_without_a_terminal_is_refused(example_dir: Path) -> None:
    out = lcm_process("--openclaw-dir", str(example_dir), "browse")
    assert out.code == 2
    assert out.error["code"] == "NOT_A_TERMINAL" and "--screenshot" in out.error["message"]


def test_options_are_validated_first(example_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(example_dir), "browse", "--conversation-id", "x")
    assert out.code == 2 and out.error["code"] == "INVALID_ARGUMENT"
    both = lcm("browse", "--conversation-id", "1", "--session-key", "agent:main:main")
    assert both.code == 2 and both.error["code"] == "INVALID_SELECTOR"
    unknown = lcm("browse", "--limit", "3")
    assert unknown.code == 2 and unknown.error["details"] == {"option": "limit", "command": "browse"}


def test_screenshot_draws_the_opening_screen(example_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "browse.svg"
    out = lcm_process(
        "--openclaw-dir",
        str(example_dir),
        "browse",
        "--session-key",
        "agent:main:main",
        "--screenshot",
        str(target),
    )
    assert out.code == 0, out.stderr
    assert out.stdout == ""
    svg = target.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "Flaky" in svg


def test_commands_inventory_marks_it_interactive() -> None:
    out = lcm("commands")
    entry = next(e for e in out.json["data"]["commands"] if e["command"] == "browse")
    assert entry["interactive"] is True and entry["operation"] is None
    assert [o["name"] for o in entry["options"]] == [
        "--conversation-id",
        "--session-key",
        "--screenshot",
        "--force",
    ]


def test_help_goes_through_typer() -> None:
    out = lcm("browse", "--help")
    assert out.code == 0 and "Example: lcm browse" in out.stdout and "--screenshot PATH" in out.stdout


def test_runs_in_a_real_terminal_and_quits_on_q(example_dir: Path) -> None:
    """The installed `lcm browse` in a pseudo-terminal: it draws the conversations, `q` quits with 0."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import termios
    import time

    exe = Path(sys.executable).with_name("lcm")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    process = subprocess.Popen(
        [str(exe), "--openclaw-dir", str(example_dir), "browse"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"Nightly report" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 65536)
        assert b"Nightly report" in seen, seen[-2000:]
        os.write(master, b"q")
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
