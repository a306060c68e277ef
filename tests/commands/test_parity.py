"""Every operation through every door gives the same answer.

Each operation of ``OPERATIONS`` is called with at least one succeeding and one failing
request through the five doors: the CLI fast path, the typer app, `lcm hook`, `lcm serve
--stdio` and the Python door (:func:`lcm_cli.engine.api.invoke`). For each call the
envelope (paths of the door's own copy and volatile values such as elapsed times and
fresh timestamps normalized), the error code and the exit status must be identical.

Each door works on its own copy of the bundled example (``examples/openclaw``), prepared
alike (a backup and a prune archive to verify and restore), and makes the same calls in
the same order, so the writes of one call are seen alike by the next ones.

Speed (the file stays well under 40 s on two busy cores): the CLI fast path and the typer
app run in-process as ``tests/conftest.py``'s ``lcm`` helper does; all serve calls go to
one real `lcm serve --stdio` child; `lcm hook` runs as a real subprocess for a
representative subset (:data:`HOOK_PROCESS`: a read, the exit-status reports, a write and
an ingest) and in-process for the rest (``lcm_cli.cli.main`` with the hook's JSON on a
replaced stdin, the same code after the process starts).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from lcm_cli.commands.dispatch import camel_case
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.exit_codes import exit_status
from lcm_cli.engine.core.params import option_name
from lcm_cli.engine.core.registry import OPERATIONS, command_words
from tests.commands.test_doors import LCM, Client
from tests.conftest import REPO, Outcome, lcm

EXAMPLE = REPO / "examples" / "openclaw"
KEY = "agent:main:main"
ROOT = "{root}"  # stands for the door's own copy in a case's values
DOORS = ("python", "cli", "typer", "hook", "serve")
# `lcm hook` as a real process for these; in-process (`main` with a replaced stdin) otherwise.
HOOK_PROCESS = frozenset({"status", "doctor.scan", "migrate.sessions", "config.set", "session.ingest"})


class Case(NamedTuple):
    """One request: its fields (request field names) and positional arguments by name."""

    fields: dict[str, Any]
    args: dict[str, str] = {}
    fails: bool = False  # an error, or a report with a non-zero exit status


def ok(fields: dict[str, Any] | None = None, **args: str) -> Case:
    return Case(fields or {}, args)


def bad(fields: dict[str, Any] | None = None, **args: str) -> Case:
    return Case(fields or {}, args, fails=True)


BOGUS = bad({"bogus": True})  # a parameter the operation does not take
TURN = [{"role": "user", "content": "Is the parity suite green?"}, {"role": "assistant", "content": "It is."}]
SUMMARY = "sum_0a1b2c3d4e5f6071"
CONDENSED = "sum_2c3d4e5f60718293"

# Every operation: at least one request that succeeds and one that fails, in call order.
CASES: dict[str, list[Case]] = {
    "status": [ok(), BOGUS],
    "conversations.list": [ok({"limit": 2}), bad({"cursor": "nope"})],
    "conversations.show": [ok({"session_key": KEY}), bad({"conversation_id": 999})],
    "messages.list": [
        ok({"conversation_id": 2, "limit": 3, "role": ["user"]}),
        bad({"session_key": "nobody"}),
    ],
    "messages.tail": [ok({"session_key": KEY, "count": 2}), bad({"conversation_id": 2, "count": 0})],
    "summaries.list": [ok({"conversation_id": 2, "kind": "leaf"}), bad({"kind": "bogus"})],
    "summaries.show": [ok(summary_id=SUMMARY), bad(summary_id="sum_nope")],
    "summaries.rewrite": [ok({"summary_id": [SUMMARY], "cascade": True}), bad({"depth": 0, "all": True})],
    "summaries.dissolve": [ok(summary_id=CONDENSED), bad(summary_id=SUMMARY)],
    "summaries.transplant": [ok({"from": 2, "to": 3}), bad({"from": 2, "to": 2})],
    "summaries.graph": [ok({"conversation_id": 2, "to": "dot"}), bad({"conversation_id": 2, "to": "jsonl"})],
    "config.show": [ok(), BOGUS],
    "config.get": [ok(path="freshTailCount"), bad(path="noSuchKey")],
    "config.set": [ok(path="freshTailCount", json_value="6"), bad(path="freshTailCount", json_value="0")],
    "doctor.scan": [ok(), bad({"fail_on": "info"}), bad({"check": ["no.such.check"]})],
    "doctor.apply": [ok(), bad({"check": ["no.such.check"]})],
    "doctor.clean": [ok(), bad({"conversation_class": "bogus"})],
    "migrate.sessions": [ok(), bad({"file": [f"{ROOT}/missing.jsonl"]}), bad({"since": "garbage"})],
    "backup.create": [ok({"out": f"{ROOT}/parity-backup.db"}), bad({"keep": -1})],
    "backup.list": [ok(), BOGUS],
    "backup.verify": [ok(path=f"{ROOT}/prepared-backup.db"), bad(path=f"{ROOT}/missing.db")],
    "backup.restore": [ok(path=f"{ROOT}/prepared-backup.db"), bad(path=f"{ROOT}/missing.db")],
    "prune": [ok({"conversation_id": 3, "include_active": True}), bad({"prune_before": "garbage"})],
    "prune.restore": [ok(archive=f"{ROOT}/prepared-prune.jsonl.gz"), bad(archive=f"{ROOT}/missing.gz")],
    "vacuum": [ok(), ok({"full": True}), BOGUS],
    "control": [ok({"operation": "status", "session_key": KEY}), bad({"operation": "bogus"})],
    "control.capabilities": [ok(), BOGUS],
    "grep": [ok({"all_conversations": True}, pattern="nightly"), bad({"mode": "regex"}, pattern="(")],
    "describe": [ok(item_id=SUMMARY), bad(item_id="sum_nope")],
    "expand": [ok(summary_id=CONDENSED), bad(summary_id="sum_nope")],
    "export": [
        ok({"session_key": KEY, "to": "markdown", "out": f"{ROOT}/export.md"}),
        bad({"session_key": "nobody"}),
    ],
    "expand.query": [ok({"summary_id": CONDENSED}, prompt="what happened"), bad(prompt="")],
    "recall.tool": [
        ok({"tool": "lcm_grep", "arguments": {"pattern": "nightly"}, "session_key": KEY}),
        ok({"tool": "lcm_describe", "arguments": {"id": "sum_nope"}, "session_key": KEY}),  # isError
        bad({"tool": "lcm_nope", "arguments": {}}),
    ],
    "recall.tool_specs": [ok(), BOGUS],
    "session.ingest": [
        ok({"session_id": "s-parity", "session_key": "agent:main:parity", "messages": TURN}),
        bad({"messages": TURN}),
    ],
    "session.bootstrap": [
        ok(
            {
                "session_id": "9b1f0c2e-0000-4000-8000-0000000000a2",
                "session_file": f"{ROOT}/agents/main/sessions/9b1f0c2e-0000-4000-8000-0000000000a2.jsonl",
            }
        ),
        bad({"session_id": "s-no-file"}),
    ],
    "session.new": [ok({"session_key": "agent:main:parity"}), bad()],
    "session.reset": [ok({"session_key": "agent:main:parity"}), bad()],
    "session.end": [ok({"session_key": "agent:main:parity", "reason": "deleted"}), bad()],
    "session.after_turn": [
        ok({"session_id": "s-turn", "session_key": "agent:main:turn", "messages": TURN}),
        bad({"session_id": "s-turn", "messages": TURN, "pre_prompt_message_count": 5}),
    ],
    "session.commit_turn": [
        ok({"advancement_key": "adv-parity-1", "session_id": "s-commit", "messages": TURN}),
        bad({"session_id": "s-commit", "messages": TURN}),
    ],
    "session.compact": [ok({"session_key": KEY}), bad({"conversation_id": 999})],
    "context.assemble": [ok({"session_key": KEY}), bad({"conversation_id": 999})],
    "session.maintain": [ok({"session_key": KEY}), bad({"conversation_id": 999})],
    "rotate": [ok({"session_key": KEY}), bad({"session_key": "nobody"})],
    "prompts.list": [ok(), BOGUS],
    "prompts.show": [ok(name="leaf"), bad(name="nope")],
    "prompts.export": [ok({"out": f"{ROOT}/prompts"}), bad({"out": f"{ROOT}/lcm.db"})],
    "prompts.diff": [ok(name="leaf"), bad(name="nope")],
    "prompts.render": [ok(name="leaf"), bad(name="nope")],
}


class Answer(NamedTuple):
    """What a door answered: the normalized envelope (or None), the error code (or None), the exit status."""

    envelope: Any
    code: str | None
    status: int


def _fill(value: Any, root: Path) -> Any:
    """A case value with ``{root}`` replaced by the door's copy."""
    if isinstance(value, str):
        return value.replace(ROOT, str(root))
    if isinstance(value, list):
        return [_fill(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, root) for k, v in value.items()}
    return value


_NOW = re.compile(r"\d{4}-?\d{2}-?\d{2}[T ]\d{2}:?\d{2}:?\d{2}(\.?\d+)?(Z|[+-]\d{2}:?\d{2})?")
_VOLATILE_KEYS = {"elapsedMs", "durationMs", "uptimeMs", "freeDiskBytes"}


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def _normalize(envelope: Any, root: Path, today: str) -> Any:
    """The envelope with the door's copy as ``<root>`` and fresh timestamps and durations masked."""
    text = json.dumps(envelope).replace(str(root), "<root>")

    def mask(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "<volatile>" if k in _VOLATILE_KEYS else mask(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if isinstance(value, str) and (today in value or today.replace("-", "") in value):
            return _NOW.sub("<now>", value)
        return value

    return mask(json.loads(text))


def _argv(name: str, case: Case, root: Path) -> list[str]:
    """The CLI spelling of a case (the same argv for the fast path and the typer app)."""
    spec = OPERATIONS[name]
    argv = ["--openclaw-dir", str(root), *command_words(name, spec)]
    argv += [_fill(case.args[arg], root) for arg in spec.args if arg in case.args]
    for field, value in _fill(case.fields, root).items():
        option = option_name(field)
        if value is True:
            argv.append(option)
        elif value is False:
            continue
        elif isinstance(value, list) and not (value and isinstance(value[0], dict)):
            for item in value:
                argv += [option, str(item)]
        elif isinstance(value, (list, dict)):
            argv += [option, json.dumps(value)]
        else:
            argv += [option, str(value)]
    return argv


def _hook_params(case: Case, root: Path) -> dict[str, Any]:
    params = {camel_case(k): v for k, v in _fill(case.fields, root).items()}
    params.update({camel_case(k): v for k, v in _fill(case.args, root).items()})
    return params


def _from_process(code: int, stdout: str, stderr: str) -> tuple[Any, str | None, int]:
    if code != 0 and not stdout:
        error = json.loads(stderr)
        assert error["ok"] is False and stdout == "", stderr
        return None, error["error"]["code"], code
    assert stdout, f"exit {code} with nothing on stdout; stderr: {stderr}"
    return json.loads(stdout), None, code


def lcm_typer(*argv: str) -> Outcome:
    """`lcm` through its typer app, in-process, with ``lcm_cli.cli.main``'s error handling."""
    from lcm_cli.cli import _typer
    from lcm_cli.render.output import Output

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = _typer(list(argv))
        except LcmError as err:
            Output().error(err)
            code = exit_status(err.code)
    return Outcome(code, stdout.getvalue(), stderr.getvalue())


@contextlib.contextmanager
def _stdin(data: bytes) -> Iterator[None]:
    """The process's stdin replaced by ``data`` (what a pipe into `lcm` gives)."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved


class Doors:
    """The five doors, each bound to its own copy of the example."""

    def __init__(self, roots: dict[str, Path], client: Client) -> None:
        self.roots = roots
        self.client = client
        self.next_id = 0

    def python(self, name: str, case: Case) -> tuple[Any, str | None, int]:
        from lcm_cli.engine.api import invoke

        root = self.roots["python"]
        spec = OPERATIONS[name]
        args = tuple(_fill(case.args[a], root) for a in spec.args if a in case.args)
        try:
            outcome = invoke(name, _fill(case.fields, root), args=args, openclaw_dir=str(root))
        except LcmError as err:
            return None, err.code, exit_status(err.code)
        return outcome.envelope, None, outcome.exit_status

    def cli(self, name: str, case: Case) -> tuple[Any, str | None, int]:
        out = lcm(*_argv(name, case, self.roots["cli"]))
        return _from_process(out.code, out.stdout, out.stderr)

    def typer(self, name: str, case: Case) -> tuple[Any, str | None, int]:
        out = lcm_typer(*_argv(name, case, self.roots["typer"]))
        return _from_process(out.code, out.stdout, out.stderr)

    def hook(self, name: str, case: Case) -> tuple[Any, str | None, int]:
        root = self.roots["hook"]
        payload = json.dumps(_hook_params(case, root)).encode()
        argv = ["--openclaw-dir", str(root), "hook", name]
        if name in HOOK_PROCESS:
            done = subprocess.run([*LCM, *argv], input=payload, capture_output=True, timeout=60)
            return _from_process(done.returncode, done.stdout.decode(), done.stderr.decode())
        with _stdin(payload):
            out = lcm(*argv)
        return _from_process(out.code, out.stdout, out.stderr)

    def serve(self, name: str, case: Case) -> tuple[Any, str | None, int]:
        self.next_id += 1
        answer = self.client.ask(self.next_id, name, _hook_params(case, self.roots["serve"]))
        if "error" in answer:
            return None, answer["error"]["code"], exit_status(answer["error"]["code"])
        assert answer.get("exitStatus", 1) != 0, "exitStatus is only sent when it is not 0"
        return answer["result"], None, answer.get("exitStatus", 0)


def _prepare(root: Path) -> None:
    """What some cases need, made alike in every copy: a backup and a prune archive."""
    from lcm_cli.engine.api import call

    call("backup.create", {"out": str(root / "prepared-backup.db")}, openclaw_dir=str(root))
    call(
        "prune",
        {"conversation_id": 1, "apply": True, "out": str(root / "prepared-prune.jsonl.gz")},
        openclaw_dir=str(root),
    )


@contextlib.contextmanager
def _isolated(home: Path) -> Iterator[None]:
    """conftest's ``isolated_env`` for a module-scoped fixture."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(("LCM_", "OPENCLAW_", "_LCM")) or name == "TZ":
                patch.delenv(name, raising=False)
        patch.setenv("HOME", str(home))
        patch.setenv("NO_COLOR", "1")
        patch.setenv("COLUMNS", "200")
        yield


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[tuple[str, int], Answer]]:
    """Every case through every door: door -> (operation, case index) -> answer."""
    base = tmp_path_factory.mktemp("parity")
    home = base / "home"
    home.mkdir()
    with _isolated(home):
        roots: dict[str, Path] = {}
        for door in DOORS:
            roots[door] = base / door
            shutil.copytree(EXAMPLE, roots[door])
            _prepare(roots[door])
        client = Client(roots["serve"])
        doors = Doors(roots, client)
        today = _today()
        out: dict[str, dict[tuple[str, int], Answer]] = {door: {} for door in DOORS}
        try:
            for door in DOORS:
                run = getattr(doors, door)
                for name, cases in CASES.items():
                    for index, case in enumerate(cases):
                        envelope, code, status = run(name, case)
                        normalized = None if envelope is None else _normalize(envelope, roots[door], today)
                        out[door][(name, index)] = Answer(normalized, code, status)
            assert client.close() == 0
        finally:
            if client.proc.poll() is None:
                client.proc.kill()
                client.proc.wait()
    return out


def _differences(got: Any, expected: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (``path: got != expected``), for a readable failure."""
    if isinstance(got, dict) and isinstance(expected, dict):
        out: list[str] = []
        for key in sorted(set(got) | set(expected), key=str):
            out += _differences(got.get(key, "<absent>"), expected.get(key, "<absent>"), f"{where}.{key}")
        return out
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return [d for i, (g, e) in enumerate(zip(got, expected)) for d in _differences(g, e, f"{where}[{i}]")]
    return [] if got == expected else [f"{where}: {got!r:.200} != {expected!r:.200}"]


def test_every_operation_has_a_success_and_a_failure() -> None:
    missing, stale = sorted(set(OPERATIONS) - set(CASES)), sorted(set(CASES) - set(OPERATIONS))
    assert not missing, f"operations without parity cases: {missing}; add them to CASES"
    assert not stale, f"CASES names operations that no longer exist: {stale}"
    one_sided = [
        name
        for name, cases in CASES.items()
        if all(c.fails for c in cases) or not any(c.fails for c in cases)
    ]
    assert not one_sided, f"each needs a succeeding and a failing case: {one_sided}"


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_every_door_answers_alike(answers: dict[str, dict[tuple[str, int], Answer]], name: str) -> None:
    for index, case in enumerate(CASES[name]):
        expected = answers["python"][(name, index)]
        assert (expected.status != 0) == case.fails, (name, index, expected)
        for door in DOORS[1:]:
            got = answers[door][(name, index)]
            assert got == expected, f"{name} case {index}: {door} differs from the Python door: " + "; ".join(
                _differences(got._asdict(), expected._asdict())
            )


def test_doctor_findings_exit_alike_from_every_door(
    answers: dict[str, dict[tuple[str, int], Answer]],
) -> None:
    for door in DOORS:
        found = answers[door][("doctor.scan", 1)]
        assert found.status == 6 and found.envelope["data"]["exitStatus"] == 6, door


def _ask_within(client: Client, request_id: int, method: str, params: Any, seconds: float) -> Any:
    """``client.ask`` that gives up after ``seconds`` (None) instead of blocking the suite."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(client.ask(request_id, method, params)), daemon=True)
    thread.start()
    thread.join(seconds)
    return box[0] if box else None


@pytest.mark.parametrize("method", ["session.ingest", "session.after_turn", "session.commit_turn"])
def test_serve_never_reads_its_request_stream_for_messages(state_dir: Path, method: str) -> None:
    client = Client(state_dir)
    try:
        params: dict[str, Any] = {"sessionId": "s1", "sessionKey": KEY, "advancementKey": "k1"}
        if method == "session.ingest":
            params.pop("advancementKey")
        elif method == "session.after_turn":
            params.pop("advancementKey")
        answer = _ask_within(client, 1, method, params, 10)
        assert answer is not None, f"{method} without messages blocked the server"
        assert answer["error"]["code"] == "INVALID_ARGUMENT"
        assert answer["error"]["details"] == {"parameter": "messages"}
        dashed = _ask_within(client, 2, "session.ingest", {"sessionId": "s1", "file": ["-"]}, 10)
        assert dashed is not None and dashed["error"]["code"] == "INVALID_ARGUMENT"
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_hook_without_messages_is_an_error_not_a_read(state_dir: Path) -> None:
    done = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "hook", "session.ingest"],
        input=json.dumps({"sessionId": "s1"}).encode(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert json.loads(done.stderr)["error"]["details"] == {"parameter": "messages"}


@pytest.mark.parametrize(
    "words",
    [
        ["ingest", "--session-id", "s-stdin", "--session-key", "agent:main:stdin"],
        ["after-turn", "--session-id", "s-stdin", "--session-key", "agent:main:stdin"],
        ["commit-turn", "--session-id", "s-stdin", "--advancement-key", "adv-stdin"],
        ["ingest", "--session-id", "s-stdin", "--file", "-"],
    ],
    ids=["ingest", "after-turn", "commit-turn", "file-dash"],
)
def test_the_cli_doors_read_stdin_alike(tmp_path: Path, words: list[str]) -> None:
    """Both CLI doors read piped messages (JSON lines here) and hand them to the operation."""
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in TURN)
    outcomes = []
    for door, run in (("cli", lcm), ("typer", lcm_typer)):
        root = tmp_path / door
        shutil.copytree(EXAMPLE, root)
        with _stdin(lines):
            out = run("--openclaw-dir", str(root), *words)
        assert out.code == 0, out.stderr
        outcomes.append(_normalize(out.json, root, _today()))
    assert outcomes[0] == outcomes[1]
    data = outcomes[0]["data"]
    assert (data.get("ingest") or data)["ingested"] == 2


def test_the_typer_app_takes_a_negative_config_value(tmp_path: Path) -> None:
    answers = []
    for run in (lcm, lcm_typer):
        root = tmp_path / run.__name__
        shutil.copytree(EXAMPLE, root)
        out = run("--openclaw-dir", str(root), "config", "set", "freshTailCount", "-1")
        answers.append((out.code, json.loads(out.stderr)["error"]["code"]))
    assert answers[0] == answers[1]
