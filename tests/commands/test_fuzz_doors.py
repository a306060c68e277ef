"""Fuzz every door with nested, huge, truncated, binary and out-of-range input.

Each input must get a structured answer (an envelope or one error object with a known
code, never ``INTERNAL_ERROR``), no process may die, and reads leave the database
byte-identical. The count of inputs is printed (``-s``) and kept in ``FUZZED``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.exit_codes import EXIT_STATUS
from lcm_cli.engine.core.registry import OPERATIONS
from tests.conftest import lcm

FUZZED: dict[str, int] = {"argv": 0, "hook": 0, "serve": 0}
READS = sorted(
    name for name, spec in OPERATIONS.items() if not spec.writes and name not in ("backup.verify",)
)
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)

huge_ints = st.sampled_from([2**63, 2**63 - 1, 2**64, -(2**63) - 1, 10**30, -1, 0, 1e308, float("inf")])
odd_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\ud800", "a\udcff", "\x00", "[" * 5000, "9" * 5000, "'; DROP TABLE messages; --"]),
)
deep = st.integers(150, 3000).map(lambda n: json.loads("[" * min(n, 900) + "]" * min(n, 900)))
values = st.one_of(st.none(), st.booleans(), huge_ints, odd_text, deep, st.lists(odd_text, max_size=3))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_structured(stdout: str, stderr: str, code: int) -> None:
    if code == 0:
        json.loads(stdout)
        return
    body = json.loads(stderr)
    assert body["ok"] is False
    assert body["error"]["code"] in EXIT_STATUS
    assert body["error"]["code"] != "INTERNAL_ERROR", body
    assert EXIT_STATUS[body["error"]["code"]] == code or code == 1


# --- argv -----------------------------------------------------------------------------------

COMMANDS = [
    ["messages", "list"],
    ["messages", "tail"],
    ["conversations", "show"],
    ["conversations", "list"],
    ["summaries", "list"],
    ["summaries", "show"],
    ["grep"],
    ["describe"],
    ["expand"],
    ["status"],
]
OPTIONS = ["--conversation-id", "--session-key", "--limit", "--cursor", "--max-tokens", "--depth", "--after"]


def argv_token() -> st.SearchStrategy[str]:
    surrogate = st.binary(min_size=1, max_size=8).map(lambda b: b.decode("utf-8", "surrogateescape"))
    number = huge_ints.map(str)
    return st.one_of(st.text(string.printable, max_size=20), surrogate, number, st.sampled_from(["[" * 3000]))


@given(
    command=st.sampled_from(COMMANDS),
    args=st.lists(st.tuples(st.sampled_from(OPTIONS + [""]), argv_token()), max_size=3),
)
@settings(FUZZ)
def test_fuzz_argv(db_path: Path, command: list[str], args: list[tuple[str, str]]) -> None:
    before = digest(db_path)
    argv = ["--db", str(db_path), *command]
    for option, value in args:
        argv += [option, value] if option else [value]
    out = lcm(*argv)
    assert_structured(out.stdout, out.stderr, out.code)
    assert digest(db_path) == before
    FUZZED["argv"] += 1


# --- hook stdin ---------------------------------------------------------------------------


def payloads() -> st.SearchStrategy[bytes]:
    params = st.dictionaries(st.sampled_from(["conversationId", "sessionKey", "limit", "cursor", "summaryId",
                                              "pattern", "maxTokens", "count", "x"]), values, max_size=4)  # fmt: skip
    as_json = params.map(lambda p: json.dumps(p).encode("utf-8", "surrogatepass"))
    return st.one_of(
        as_json,
        as_json.flatmap(lambda b: st.integers(0, max(0, len(b) - 1)).map(lambda n: b[:n])),  # truncated
        st.binary(max_size=200),
        st.integers(200, 400_000).map(lambda n: b"[" * n),
        st.sampled_from([b"{}", b"null", b"[]", b'"x"', b"1e999", b'{"a":' * 2000]),
    )


@given(method=st.sampled_from(READS), data=payloads())
@settings(FUZZ)
def test_fuzz_hook_stdin(db_path: Path, method: str, data: bytes) -> None:
    from lcm_cli.commands.hook import run_hook
    from lcm_cli.engine.core.exit_codes import exit_status

    before = digest(db_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run_hook(method, list_only=False, globals_={"--db": str(db_path)}, stdin=io.BytesIO(data))
        except LcmError as error:
            assert error.code != "INTERNAL_ERROR", error.to_dict()
            code = exit_status(error.code)
            assert error.code in EXIT_STATUS
    if code == 0:
        json.loads(out.getvalue())
    assert digest(db_path) == before
    FUZZED["hook"] += 1


# --- serve lines --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from lcm_cli.commands.serve import Server
    from tests.support.sample import build_sample

    root = tmp_path_factory.mktemp("fuzz-serve")
    build_sample(root / "lcm.db")
    server = Server(db=str(root / "lcm.db"))
    yield server, root / "lcm.db"
    server.close(grace_ms=2000)


def lines() -> st.SearchStrategy[bytes]:
    request = st.fixed_dictionaries(
        {"id": st.one_of(st.integers(), st.text(max_size=5)), "method": st.sampled_from(READS + ["health", "x"])},
        optional={"params": st.one_of(values, st.dictionaries(st.sampled_from(["conversationId", "sessionKey",
                                      "limit", "summaryId", "pattern"]), values, max_size=3))},
    )  # fmt: skip
    as_json = request.map(lambda r: json.dumps(r).encode("utf-8", "surrogatepass"))
    return st.one_of(
        as_json,
        as_json.flatmap(lambda b: st.integers(0, max(0, len(b) - 1)).map(lambda n: b[:n])),
        st.binary(max_size=200),
        st.integers(200, 400_000).map(lambda n: b"[" * n),
    )


@given(line=lines())
@settings(FUZZ)
def test_fuzz_serve_lines(engine: Any, line: bytes) -> None:
    server, db = engine
    before = digest(db)
    answers: list[dict[str, Any]] = []
    future = server.handle_line(line.replace(b"\n", b" "), answers.append)
    if future is not None:
        future.result(timeout=30)
    assert len(answers) == 1
    answer = answers[0]
    json.dumps(answer)
    if "error" in answer:
        assert answer["error"]["code"] != "INTERNAL_ERROR", answer
    assert digest(db) == before
    FUZZED["serve"] += 1


def test_fuzz_whole_process_survives_a_garbage_stream(state_dir: Path) -> None:
    """The same garbage as one stream into a real `lcm serve --stdio`: it answers health after it."""
    garbage = [b"[" * 300_000, b"\xff\xfe", b'{"id":1', b'{"id":2,"method":"grep","params":{"pattern":"("}}']
    stream = b"\n".join(garbage) + b'\n{"id":"h","method":"health"}\n'
    result = subprocess.run(
        [sys.executable, "-m", "lcm_cli", "--openclaw-dir", str(state_dir), "serve", "--stdio"],
        input=stream,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(garbage) + 1
    assert [a["result"]["command"] for a in answers if a["id"] == "h"] == ["health"]
    assert all(a.get("error", {}).get("code") != "INTERNAL_ERROR" for a in answers)
    FUZZED["serve"] += len(garbage)


@pytest.fixture(scope="module", autouse=True)
def _tally() -> Iterator[None]:
    """Print how many inputs the module fuzzed (``-s``): a report, not a test."""
    yield
    print(f"\nfuzzed inputs: {FUZZED} total {sum(FUZZED.values())}")
