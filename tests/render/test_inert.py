"""Terminal output is inert: stored escape sequences are shown, never sent to the terminal.

A copy of the example holds every C0 and C1 control and the common escape families
(tests/support/hostile_text.py) in messages, summaries, session keys, titles and file
paths. The table view of every read operation of the registry, and TSV on a terminal,
must print none of them raw (TAB and LF are the layout's own); JSON, and TSV into a
pipe, keep the text exact.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tty
from pathlib import Path

import pytest

from lcm_cli.engine.core.registry import OPERATIONS
from lcm_cli.render.visible import visible
from tests.conftest import REPO, lcm
from tests.support.hostile_text import FILE_ID, NASTY, RAW_CONTROL, SUMMARY, poison

CONV = ("--conversation-id", "2")
SOURCE = "source.txt"
BACKUP = "{dir}/lcm.db.backup-20260710T123456789Z-k3x9q2.bak"
# Every read operation (writes=False) → the invocations that show stored text.
READS: dict[str, tuple[tuple[str, ...], ...]] = {
    "status": (("status",),),
    "conversations.list": (("conversations", "list"),),
    "conversations.show": (("conversations", "show", *CONV),),
    "messages.list": (("messages", "list", *CONV), ("messages", "list", *CONV, "--include-content")),
    "messages.tail": (("messages", "tail", *CONV),),
    "summaries.list": (("summaries", "list", *CONV, "--include-content"),),
    "summaries.show": (("summaries", "show", SUMMARY),),
    "summaries.graph": (("summaries", "graph", *CONV), ("summaries", "graph", *CONV, "--to", "mermaid")),
    "config.show": (("config", "show"),),
    "config.get": (("config", "get", "freshTailCount"),),
    "doctor.scan": (("doctor",), ("doctor", "--thorough", *CONV)),
    "backup.create": (("backup", "--out", BACKUP),),
    "backup.list": (("backup", "--out", BACKUP), ("backup", "list")),
    "backup.verify": (("backup", "--out", BACKUP), ("backup", "verify", BACKUP)),
    "control.capabilities": (("control", "capabilities"),),
    "grep": (("grep", "evil", *CONV), ("grep", "evil", "--all-conversations", "--scope", "both")),
    "describe": (("describe", SUMMARY), ("describe", FILE_ID, *CONV)),
    "expand": (("expand", SUMMARY),),
    # Without --out the document streams to stdout, escaped on a terminal (see below).
    "export": (("export", *CONV, "--to", "jsonl", "--out", "{dir}/export.jsonl"),),
    "expand.query": (("expand-query", "What is evil?", "--query", "evil", *CONV),),
    "recall.tool": (
        ("tool", "--tool", "lcm_grep", "--arguments", '{"pattern": "evil"}', "--session-id", "x"),
    ),
    "recall.tool_specs": (("tool", "specs"),),
    "context.assemble": (("context", "show", *CONV),),
    "prompts.list": (("prompts", "list"),),
    "prompts.show": (("prompts", "show", "leaf"),),
    "prompts.export": (("prompts", "export", "--out", "{dir}/prompts"),),
    "prompts.diff": (("prompts", "diff", "leaf"),),
    "prompts.render": (("prompts", "render", "leaf", "--source-file", "{dir}/" + SOURCE),),
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    """A copy of the example with :data:`NASTY` in every kind of stored text."""
    target = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", target)
    poison(target)
    (target / SOURCE).write_text(NASTY, encoding="utf-8")
    return target


def _run(state: Path, argv: tuple[str, ...], *options: str, terminal: bool = False) -> tuple[int, str]:
    """`lcm` in this process; ``terminal``: its stdout says it is a terminal."""
    from lcm_cli.cli import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return terminal

    args = [a.replace("{dir}", str(state)) for a in argv]
    out, err = Terminal(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--openclaw-dir", str(state), *args, *options])
    assert code in (0, 6), (args, err.getvalue())  # 6: doctor's findings
    return code, out.getvalue()


def test_every_read_operation_is_covered() -> None:
    reads = {name for name, spec in OPERATIONS.items() if not spec.writes and not spec.interactive}
    assert reads == set(READS), "add the new read operation to READS"


def test_visible_escapes_every_control_but_tab_and_newline() -> None:
    shown = visible(NASTY + "\tkept\nkept")
    assert not RAW_CONTROL.search(shown)
    assert "\\x1b[2J" in shown and "\\x1b]52;c;" in shown and "\\u009b31m" in shown
    assert "\\x0d" in shown and "\\x00" in shown and "\\x7f" in shown and "\\u0085" in shown
    assert shown.endswith("end\tkept\nkept")
    assert visible(shown) == shown  # escaping twice changes nothing
    plain = "héllo → 世界 \u2028"
    assert visible(plain) is plain


@pytest.mark.parametrize("name", sorted(READS))
def test_table_of_every_read_operation_is_inert(name: str, hostile_dir: Path) -> None:
    for argv in READS[name]:
        _, text = _run(hostile_dir, argv, "--format", "table")
        assert text.strip(), argv
        raw = RAW_CONTROL.search(text)
        assert raw is None, f"{argv}: raw {raw[0]!r} in {text[max(raw.start() - 60, 0) : raw.end() + 20]!r}"


def test_stored_text_reaches_the_table_escaped(hostile_dir: Path) -> None:
    _, text = _run(hostile_dir, ("messages", "list", *CONV, "--include-content"), "--format", "table")
    assert "evil \\x1b[2J\\x1b[H\\x1b]52;c;aGVsbG8=\\x07" in text
    _, text = _run(hostile_dir, ("describe", FILE_ID, *CONV), "--format", "table")
    assert "\\x1b]8;;https://e" in text


@pytest.mark.parametrize("name", sorted(READS))
def test_tsv_on_a_terminal_is_inert(name: str, hostile_dir: Path) -> None:
    for argv in READS[name]:
        _, text = _run(hostile_dir, argv, "--format", "tsv", terminal=True)
        raw = RAW_CONTROL.search(text)
        assert raw is None, f"{argv}: raw {raw[0]!r} in {text[max(raw.start() - 60, 0) : raw.end() + 20]!r}"


def test_json_and_piped_tsv_stay_exact(hostile_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(hostile_dir), "messages", "list", *CONV, "--include-content")
    assert any(item["content"].startswith(NASTY + "\n") for item in out.json["data"]["items"])
    out = lcm("--openclaw-dir", str(hostile_dir), "conversations", "show", *CONV)
    assert out.json["data"]["conversation"]["title"] == NASTY
    _, text = _run(hostile_dir, ("messages", "list", *CONV, "--include-content"), "--format", "tsv")
    assert re.sub("[\t\r\n]+", " ", NASTY) in text
    _, text = _run(hostile_dir, ("export", *CONV, "--to", "markdown"))
    assert NASTY in text  # a document into a pipe is the document


def test_a_document_streamed_to_a_terminal_is_inert(hostile_dir: Path) -> None:
    _, text = _run(hostile_dir, ("export", *CONV, "--to", "markdown"), terminal=True)
    assert "evil \\x1b[2J" in text and RAW_CONTROL.search(text) is None


def test_tsv_in_a_real_terminal(hostile_dir: Path) -> None:
    """The installed `lcm` with a pseudo-terminal as stdout (raw mode: the tty adds no CR)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    exe = Path(sys.executable).with_name("lcm")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "lcm_cli"]
    args = [
        "--openclaw-dir",
        str(hostile_dir),
        "messages",
        "list",
        *CONV,
        "--include-content",
        "--format",
        "tsv",
    ]
    with subprocess.Popen(command + args, stdout=slave, stderr=subprocess.PIPE) as child:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert child.wait(timeout=60) == 0, child.stderr.read() if child.stderr else ""
    os.close(master)
    text = b"".join(chunks).decode("utf-8")
    assert "evil \\x1b[2J\\x1b[H\\x1b]52;c;aGVsbG8=\\x07" in text and "\\u009b31m" in text
    assert RAW_CONTROL.search(text) is None
