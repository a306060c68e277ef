"""`--format table` of every operation on the bundled example, at 80, 120 and 200 columns.

Each case runs one operation on a fresh copy of ``examples/openclaw`` (JSON through the
CLI), makes the few values that change from run to run fixed (paths, "now", durations,
archive hashes), renders the envelope as a table at each width and compares the text with
``tests/render/snapshots/<case>.<width>.txt`` exactly. No line may exceed the width.

Regenerate the snapshots after a deliberate change, then read the diff:

    LCM_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/render/test_snapshots.py
"""

from __future__ import annotations

import io
import os
import re
import shutil
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.registry import OPERATIONS
from lcm_cli.render.table import render_rich
from tests.conftest import REPO, lcm

EXAMPLE = REPO / "examples" / "openclaw"
SNAPSHOTS = Path(__file__).parent / "snapshots"
WIDTHS = (80, 120, 200)
UPDATE = os.environ.get("LCM_UPDATE_SNAPSHOTS") == "1"
BACKUP = "lcm.db.backup-20260710T123456789Z-k3x9q2.bak"
ARCHIVE = "lcm.db.prune-20260710T123456789Z.jsonl.gz"
SUMMARY = "sum_1b2c3d4e5f607182"  # the example's leaf summary
MAIN = ("--session-key", "agent:main:main")
SESSION = "9b1f0c2e-0000-4000-8000-000000000002"

# case → (setup commands, the command); "{dir}" is the copy's state dir.
CASES: dict[str, tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]] = {
    "status": ((), ("status",)),
    "conversations-list": ((), ("conversations", "list")),
    "conversations-show": ((), ("conversations", "show", *MAIN)),
    "messages-list": ((), ("messages", "list", "--conversation-id", "2", "--limit", "5")),
    "messages-tail": ((), ("messages", "tail", *MAIN, "--count", "4")),
    "summaries-list": ((), ("summaries", "list", "--conversation-id", "2")),
    "summaries-show": ((), ("summaries", "show", SUMMARY)),
    "summaries-rewrite": ((), ("summaries", "rewrite", "--summary-id", "sum_0a1b2c3d4e5f6071")),
    "summaries-dissolve": ((), ("summaries", "dissolve", "sum_2c3d4e5f60718293")),
    "summaries-transplant": ((), ("summaries", "transplant", "--from", "2", "--to", "3")),
    "summaries-graph": ((), ("summaries", "graph", "--conversation-id", "2", "--to", "mermaid")),
    "tool": (
        (),
        ("tool", "--tool", "lcm_grep", "--arguments", '{"pattern": "flaky", "mode": "full_text"}', *MAIN),
    ),
    "tool-specs": ((), ("tool", "specs")),
    "config-show": ((), ("config", "show")),
    "config-get": ((), ("config", "get", "freshTailCount")),
    "config-set": ((), ("config", "set", "freshTailCount", "32")),
    "doctor": ((), ("doctor",)),
    "doctor-apply": ((), ("doctor", "apply")),
    "doctor-clean": ((), ("doctor", "clean")),
    "migrate-sessions": ((), ("migrate-sessions",)),
    "migrate-sessions-verify": ((), ("migrate-sessions", "--verify")),
    "migrate-sessions-apply": ((), ("migrate-sessions", "--apply")),
    "backup": ((), ("backup", "--out", f"{{dir}}/{BACKUP}")),
    "backup-list": ((("backup", "--out", f"{{dir}}/{BACKUP}"),), ("backup", "list")),
    "backup-verify": ((("backup", "--out", f"{{dir}}/{BACKUP}"),), ("backup", "verify", f"{{dir}}/{BACKUP}")),
    "backup-restore": (
        (("backup", "--out", f"{{dir}}/{BACKUP}"),),
        ("backup", "restore", f"{{dir}}/{BACKUP}"),
    ),
    "prune": ((), ("prune", "--conversation-id", "3", "--include-active")),
    "prune-apply": (
        (),
        ("prune", "--conversation-id", "3", "--include-active", "--out", f"{{dir}}/{ARCHIVE}", "--apply"),
    ),
    "prune-restore": (
        (("prune", "--conversation-id", "3", "--include-active", "--out", f"{{dir}}/{ARCHIVE}", "--apply"),),
        ("prune", "restore", f"{{dir}}/{ARCHIVE}"),
    ),
    "vacuum": ((), ("vacuum",)),
    "vacuum-full": ((), ("vacuum", "--full")),
    "control": ((), ("control", "--operation", "status", *MAIN)),
    "control-capabilities": ((), ("control", "capabilities")),
    "grep": ((), ("grep", "port", *MAIN)),
    "describe": ((), ("describe", SUMMARY)),
    "expand": ((), ("expand", SUMMARY, "--max-tokens", "300")),
    "expand-query": ((), ("expand-query", "Why did CI fail?", "--query", "port", *MAIN)),
    "ingest": (
        (),
        ("ingest", "--session-id", SESSION, *MAIN, "--messages", '[{"role":"user","content":"Green?"}]'),
    ),
    "session-new": ((), ("session", "new", *MAIN)),
    "session-reset": ((), ("session", "reset", *MAIN)),
    "session-end": ((), ("session", "end", *MAIN, "--reason", "deleted")),
    "compact": ((), ("compact", *MAIN, "--manual")),
    "context-show": ((), ("context", "show", "--conversation-id", "2")),
    "maintain": ((), ("maintain", *MAIN)),
    "rotate": ((), ("rotate", *MAIN)),
    "prompts-list": ((), ("prompts", "list")),
    "prompts-show": ((), ("prompts", "show", "leaf")),
}

_ENVELOPES: dict[str, dict[str, Any]] = {}
_STAMP = re.compile(r"\d{8}T\d{6,9}Z")
# A change backup's name ends in 6 random characters: fixed like the stamp before them.
_CHANGES = re.compile(r"-[0-9a-z]{6}(?=\.changes\.jsonl\.gz)")
_TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?Z?")
_FIXED_NOW = "2026-07-10T12:34:56.789Z"


def _recent(text: str) -> bool:
    """A timestamp written by this run (the example's own are months older)."""
    moment = datetime.fromisoformat(text.replace(" ", "T").replace("Z", "")).replace(tzinfo=timezone.utc)
    return abs(datetime.now(timezone.utc) - moment) < timedelta(days=2)


def _steady(value: Any, key: str, paths: list[tuple[str, str]]) -> Any:
    """The envelope with the values that change per run made fixed."""
    if isinstance(value, dict) and key == "timingsMs":
        return {k: 7 for k in value}  # elapsed times
    if isinstance(value, dict):
        return {k: _steady(v, k, paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_steady(v, key, paths) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)) and key in ("elapsedMs", "durationMs"):
        return 7  # an elapsed time
    if isinstance(value, str):
        for real, shown in paths:
            value = value.replace(real, shown)
        value = _STAMP.sub("20260710T123456789Z", value)
        value = _CHANGES.sub("-k3x9q2", value)
        if _TIME.fullmatch(value) and _recent(value):
            return _FIXED_NOW
    return value


def _envelope(case: str, root: Path) -> dict[str, Any]:
    """The JSON envelope of ``case`` on a fresh copy of the example (cached per test run)."""
    if case not in _ENVELOPES:
        state = root / case
        shutil.copytree(EXAMPLE, state)
        setup, command = CASES[case]
        for step in setup:
            done = lcm("--openclaw-dir", str(state), *(a.replace("{dir}", str(state)) for a in step))
            assert done.code == 0, done.stderr
        done = lcm(
            "--openclaw-dir",
            str(state),
            *(a.replace("{dir}", str(state)) for a in command),
            "--format",
            "json",
        )
        assert done.code in (0, 6), done.stderr
        paths = [(str(state), "~/.openclaw"), (str(REPO), "<repo>"), (os.environ["HOME"], "~")]
        envelope = _steady(done.json, "", paths)
        if "archive" in (envelope.get("data") or {}):  # an archive's hash and size cover its creation time
            envelope["data"]["archive"]["sha256"] = "5f3e" * 16
            envelope["data"]["archive"]["bytes"] = 2400
        _ENVELOPES[case] = envelope
    return _ENVELOPES[case]


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC, so the snapshots read the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def draw(envelope: dict[str, Any], width: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """The table text of ``envelope`` at ``width`` columns, as `--format table` prints it."""
    monkeypatch.setenv("COLUMNS", str(width))
    spec = OPERATIONS.get(envelope["command"])
    stream = io.StringIO()
    render_rich(envelope, stream, spec.render if spec is not None else None)
    return stream.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_table_snapshot(
    case: str,
    width: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    utc: None,
) -> None:
    envelope = _envelope(case, tmp_path_factory.getbasetemp() / "snapshots")
    text = draw(envelope, width, monkeypatch)
    spec = OPERATIONS.get(envelope["command"])
    document = spec is not None and spec.render is not None and spec.render.text is not None
    # A document (a prompt) is printed exactly as it is, so only the rest must fit.
    too_wide = [] if document else [line for line in text.splitlines() if len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines wider than {width}: {too_wide[:3]}"
    squeezed = "".join(text.split())
    for value in _copied(envelope.get("data")):
        assert "".join(value.split()) in squeezed, f"{value!r} is not shown whole"
    path = SNAPSHOTS / f"{case}.{width}.txt"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no snapshot {path.name}: run with LCM_UPDATE_SNAPSHOTS=1 and read it")
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.name} differs (LCM_UPDATE_SNAPSHOTS=1 regenerates)"
    )


def test_every_operation_with_table_output_has_a_case() -> None:
    """A new operation gets a snapshot (the host-only ones run through the host's turn)."""
    covered = {_operation(case) for case in CASES}
    exempt = {
        "export",  # writes a document, not an envelope, on stdout
        "prompts.export",  # writes files into a folder: only paths come back
        "prompts.diff",  # a document read whole, like prompts.show
        "prompts.render",  # a document read whole, like prompts.show
        "session.bootstrap",  # needs the host's transcript of a new session
        "session.after_turn",  # the host's turn; its result is the ingest's shape
        "session.commit_turn",  # the host's turn; its result is the ingest's shape
    }
    missing = sorted(set(OPERATIONS) - exempt - covered)
    assert not missing, f"operations without a table snapshot: {missing}; add a case to CASES"


def _copied(value: Any, key: str = "") -> Iterator[str]:
    """The values a person copies into the next command: paths, hashes, cursors, fixes."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _copied(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _copied(v, key)
    elif isinstance(value, str) and (key.endswith(("Path", "sha256", "Cursor")) or key == "fix"):
        yield value


def _operation(case: str) -> str:
    words = CASES[case][1]
    for name in OPERATIONS:
        from lcm_cli.engine.core.registry import command_words

        spoken = command_words(name, OPERATIONS[name])
        if tuple(words[: len(spoken)]) == spoken and not any(
            len(command_words(n, s)) > len(spoken)
            and tuple(words[: len(command_words(n, s))]) == command_words(n, s)
            for n, s in OPERATIONS.items()
        ):
            return name
    return ""
