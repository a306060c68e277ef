"""Fuzz what lcm reads from files and payloads, and every path it is asked to write.

On copies of the bundled example (``examples/openclaw``), through the in-process doors
(``lcm(...)`` runs ``main()``, as the console script does; hook input goes through the real
``lcm hook`` stdin path):

1. ``session.commit_turn`` payloads: malformed message lists, wrong types, huge numbers,
   deep nesting, bad roles, duplicate ids, NUL and lone surrogates, truncated or binary
   bytes, a ``storePath`` that is garbage;
2. host stores (``migrate-sessions --store``): columns of random types, truncated and
   mislabelled zstd frames, flipped bytes, random bytes as the file;
3. backup manifests (``backup verify|list|restore``), prune archives (``prune restore``) and
   change backups (``*.changes.jsonl.gz``): random or deep manifests, byte flips,
   truncation, garbage lines, and altered rows re-signed so that they pass the checksums
   and reach the restore itself;
4. every declared output path (``OpSpec.outputs``): the database and its companions, the
   config, a manifest, symlinks and hard links to them, existing files, missing folders,
   NUL, very long names.

Each input must get a structured answer (an envelope, or one error object whose code is
declared and not ``INTERNAL_ERROR``), no traceback, and a failed call leaves the
database's content (every table's rows, compared by value: WAL may move bytes) and the
config unchanged. ``FUZZED`` counts the inputs of each family; ``-s`` prints it.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import itertools
import json
import os
import shutil
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.commands.specs import DOOR_COMMANDS
from lcm_cli.engine.core.exit_codes import EXIT_STATUS
from lcm_cli.engine.core.registry import OPERATIONS
from tests.conftest import REPO, Outcome, lcm
from tests.support.changes import dump
from tests.support.host_store import HOST_DDL, store_from_jsonl

pytestmark = pytest.mark.slow  # generated inputs for every writer: seconds per test

FUZZED: dict[str, int] = dict.fromkeys(
    ("commit_turn", "host_store", "backup_manifest", "prune_archive", "change_backup", "output_path"), 0
)
#: What each family's inputs got: ``ok`` or the error code, counted.
OUTCOMES: dict[str, Counter[str]] = {family: Counter() for family in FUZZED}
EXAMPLE = REPO / "examples" / "openclaw"


# The same inputs on every run (CI stays reproducible); LCM_FUZZ_RANDOM=1 explores new ones and
# LCM_FUZZ_SCALE=N tries N times as many.
RANDOM = os.environ.get("LCM_FUZZ_RANDOM") == "1"
SCALE = max(1, int(os.environ.get("LCM_FUZZ_SCALE", "1") or 1))


def fuzz(examples: int) -> settings:
    """Hypothesis settings: no example database, no deadline, derandomized unless asked."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        database=None,
        derandomize=not RANDOM,
        suppress_health_check=list(HealthCheck),
    )


# --- shared: answers, content, fresh copies ---------------------------------------------------


def answer(family: str, out: Outcome) -> dict[str, Any] | None:
    """The envelope of a success, or None after checking the error is declared and structured;
    counted in ``FUZZED`` and ``OUTCOMES``."""
    FUZZED[family] += 1
    assert "Traceback" not in out.stderr, out.stderr
    if out.code == 0 and not out.stdout.startswith('{"ok":'):
        OUTCOMES[family]["ok"] += 1
        return {}  # the document itself (`export` without --out) or nothing (`browse --screenshot`)
    if out.stdout:
        envelope: dict[str, Any] = json.loads(out.stdout)
        assert envelope["ok"] is True, envelope
        OUTCOMES[family]["ok"] += 1
        return envelope
    error = out.error
    assert error["code"] in EXIT_STATUS, error
    assert error["code"] != "INTERNAL_ERROR", error
    assert EXIT_STATUS[error["code"]] == out.code, (out.code, error)
    OUTCOMES[family][error["code"]] += 1
    return None


def content(db: Path) -> str:
    """A digest of every row of every ordinary table (by value, not by file bytes)."""
    return hashlib.sha256(repr(dump(db)).encode("utf-8", "surrogatepass")).hexdigest()


def message_rows(db: Path) -> tuple[int, str]:
    """The messages' count and a digest of their rows."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT * FROM messages ORDER BY message_id").fetchall()
    finally:
        conn.close()
    return len(rows), hashlib.sha256(repr(rows).encode("utf-8", "surrogatepass")).hexdigest()


_COPIES = itertools.count()


def fresh(template: Path, root: Path) -> Path:
    """A private copy of a state dir (a hypothesis example cannot use pytest's tmp_path)."""
    target = root / f"case{next(_COPIES)}"
    shutil.copytree(template, target, symlinks=True)
    return target


def hook(state: Path, method: str, data: bytes) -> Outcome:
    """`lcm hook METHOD` in this process with ``data`` as its stdin."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        return lcm("--openclaw-dir", str(state), "hook", method)
    finally:
        sys.stdin = saved


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Templates made once: the example, with a full backup, a prune archive, a change backup
    and a host store; each example copies the one it mutates."""
    root = tmp_path_factory.mktemp("fuzz-inputs")

    def state(name: str) -> Path:
        path = root / name
        shutil.copytree(EXAMPLE, path)
        return path

    plain = state("plain")
    full = _ok(lcm("--openclaw-dir", str(plain), "backup"))
    pruned = state("pruned")
    archive = _ok(lcm("--openclaw-dir", str(pruned), "prune", "--conversation-id", "3",
                      "--include-active", "--apply"))["archive"]  # fmt: skip
    cleaned = state("cleaned")
    change = _ok(lcm("--openclaw-dir", str(cleaned), "doctor", "clean", "--class", "cron_sessions",
                     "--apply"))["backup"]  # fmt: skip
    store = root / "store" / "openclaw-agent.sqlite"
    _loose_store(store)
    sessions = sorted((EXAMPLE / "agents" / "main" / "sessions").glob("*.jsonl"))
    store_from_jsonl(store, [(p, p.stem) for p in sessions], compress_at=200)
    cases = root / "cases"
    cases.mkdir()
    return {
        "root": cases,
        "plain": plain,
        "plain_content": content(plain / "lcm.db"),
        "full": Path(full["backupPath"]).name,
        "pruned": pruned,
        "pruned_content": content(pruned / "lcm.db"),
        "archive": Path(archive["archivePath"]).name,
        "cleaned": cleaned,
        "cleaned_content": content(cleaned / "lcm.db"),
        "change": Path(change["backupPath"]).name,
        "store": store,
    }


def _ok(out: Outcome) -> dict[str, Any]:
    assert out.code == 0, out.stderr
    data: dict[str, Any] = out.json["data"]
    return data


def _loose_store(path: Path) -> None:
    """The host's tables without STRICT or NOT NULL, so a mutation may store any value anywhere."""
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in HOST_DDL:
        conn.execute(statement.replace(") STRICT", ")").replace(" NOT NULL", ""))
    conn.close()


# --- value strategies -------------------------------------------------------------------------

HUGE = [2**63, 2**63 - 1, 2**64, -(2**63) - 1, 10**30, 10**400, -1, 0, 1e308, -0.0, 1e-320]
ODD_TEXT = ["", "\x00", "a\x00b", "\ud800", "x\udcff", "\u202e", "9" * 5000, "'; DROP TABLE messages; --",
            "user\x00", " user", "USER", "\ufeff{", "null"]  # fmt: skip
huge_numbers = st.sampled_from(HUGE)
odd_text = st.one_of(st.text(max_size=30), st.sampled_from(ODD_TEXT))


def nested(depth: int, leaf: Any = 1) -> Any:
    """``depth`` levels of arrays and objects around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


deep = st.integers(100, 400).map(nested)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), huge_numbers, st.integers(), st.floats(allow_nan=False), odd_text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)),
    max_leaves=12,
)
any_value = st.one_of(json_values, deep)


def as_bytes(value: Any) -> bytes:
    """JSON text of ``value`` (lone surrogates kept, as a broken host may send them)."""
    return json.dumps(value).encode("utf-8", "surrogatepass")


def mangled(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` truncated, with bytes flipped, or with bytes inserted."""
    size = max(1, len(data))
    cut = st.integers(0, size - 1).map(lambda n: data[:n])
    flips = st.lists(st.tuples(st.integers(0, size - 1), st.integers(1, 255)), min_size=1, max_size=8)
    flipped = flips.map(lambda fs: _flip(data, fs))
    inserted = st.tuples(st.integers(0, size), st.binary(min_size=1, max_size=40)).map(
        lambda t: data[: t[0]] + t[1] + data[t[0] :]
    )
    return st.one_of(cut, flipped, inserted)


def _flip(data: bytes, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for at, mask in flips:
        if at < len(out):
            out[at] ^= mask
    return bytes(out)


# --- 1. commit-turn payloads ------------------------------------------------------------------

ROLES = st.one_of(st.sampled_from(["user", "assistant", "toolResult", "tool", "system", "developer", ""]),
                  odd_text, st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2))  # fmt: skip
PART = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["text", "toolCall", "toolResult", "image", "thinking", "x"]), any_value)},
    optional={"text": any_value, "id": any_value, "name": any_value, "arguments": any_value,
              "data": any_value, "content": any_value, "toolCallId": any_value},
)  # fmt: skip
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES},
    optional={
        "content": st.one_of(odd_text, st.lists(st.one_of(PART, any_value), max_size=4), any_value),
        "id": st.one_of(st.sampled_from(["m1", "m1", "dup"]), any_value),
        "timestamp": st.one_of(huge_numbers, odd_text, st.sampled_from([1796172403934, "2026-07-01T00:00:00Z"]),
                               any_value),
        "toolCallId": any_value, "toolName": any_value, "usage": any_value, "stopReason": any_value,
        "api": any_value, "provider": any_value, "model": any_value, "errorMessage": any_value,
    },
)  # fmt: skip


def base_turn(messages: list[Any]) -> dict[str, Any]:
    """A well-formed turn of ``messages`` for session ``fz1`` (positions agree with the count)."""
    common = {"agentId": "main", "sessionId": "fz1", "sessionKey": "agent:main:explicit:fz1",
              "storePath": "/nowhere/openclaw-agent.sqlite", "generation": "g1"}  # fmt: skip
    return {
        "advancementKey": "turn-1",
        "admission": {**common, "entryId": "u1", "rawSeq": 10, "activeMessagePosition": 0,
                      "logicalTurnId": "turn-1", "role": "user"},
        "terminal": {**common, "entryId": "a1", "activeMessagePosition": max(0, len(messages) - 1)},
        "messages": messages,
        "sessionId": "fz1",
        "sessionKey": "agent:main:explicit:fz1",
        "isHeartbeat": False,
    }  # fmt: skip


TURN_FIELDS = ["advancementKey", "admission", "terminal", "messages", "sessionId", "sessionKey", "isHeartbeat",
               "tokenBudget", "currentTokenCount", "model", "file", "x"]  # fmt: skip
ANCHOR_FIELDS = ["agentId", "sessionId", "sessionKey", "storePath", "generation", "entryId", "rawSeq",
                 "activeMessagePosition", "logicalTurnId", "role", "idempotencyKey"]  # fmt: skip


@st.composite
def turns(draw: st.DrawFn) -> bytes:
    """A commit-turn payload: a real turn with a few parts broken, or bytes that are barely JSON."""
    messages = draw(st.lists(st.one_of(MESSAGE, any_value), max_size=5))
    if draw(st.booleans()) and messages:  # the same message twice (duplicate ids and content)
        messages.append(messages[draw(st.integers(0, len(messages) - 1))])
    turn = base_turn(messages)
    if draw(st.booleans()):
        turn.pop("terminal")  # no positions to agree with: more payloads reach the write
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "admission", "terminal"]))
        if where == "top":
            field = draw(st.sampled_from(TURN_FIELDS))
            turn[field] = draw(st.one_of(any_value, st.sampled_from(_GARBAGE_PATHS)))
        elif isinstance(turn.get(where), dict):
            turn[where][draw(st.sampled_from(ANCHOR_FIELDS))] = draw(
                st.one_of(any_value, st.sampled_from(_GARBAGE_PATHS))
            )
    data = as_bytes(turn)
    return draw(st.one_of(st.just(data), st.just(data), mangled(data), st.binary(max_size=64)))


# Files a payload may name (storePath, file): the fuzz's own garbage, a folder, nothing.
_GARBAGE_PATHS = ["/dev/null", "/", "/nonexistent/x.sqlite", "", "relative.sqlite", "\x00"]


@given(payload=turns())
@fuzz(300)
def test_fuzz_commit_turn_payloads(world: dict[str, Any], payload: bytes) -> None:
    state = fresh_db(world["plain"], world["root"])
    db = state / "lcm.db"
    before = content(db), message_rows(db)
    envelope = answer("commit_turn", hook(state, "session.commit_turn", payload))
    if envelope is None:
        assert (content(db), message_rows(db)) == before, "a refused turn wrote something"
    else:
        assert envelope["data"]["status"] in ("committed", "duplicate"), envelope


def fresh_db(template: Path, root: Path) -> Path:
    """A state dir with a copy of the template's database and config only (fast)."""
    target = root / f"case{next(_COPIES)}"
    target.mkdir()
    for name in ("lcm.db", "openclaw.json"):
        shutil.copy2(template / name, target / name)
    return target


# --- 2. host stores ---------------------------------------------------------------------------

STORE_COLUMNS = {
    "transcript_events": ["session_id", "seq", "event_json", "created_at", "event_zstd", "event_utf8_bytes",
                          "navigation_json"],
    "session_windows": ["session_id", "session_key", "previous_session_id", "created_at", "updated_at",
                        "status"],
    "session_nodes": ["session_key", "current_session_id", "entry_json", "updated_at"],
}  # fmt: skip
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
sql_values = st.one_of(
    st.none(),
    st.sampled_from([2**63 - 1, -(2**63), 0, -1, 1e308, float("inf"), 2.5]),
    st.integers(-(2**63), 2**63 - 1),
    odd_text,
    st.binary(max_size=64),
    st.sampled_from([ZSTD_MAGIC, ZSTD_MAGIC + b"\x00" * 8, b"\x00" + ZSTD_MAGIC, "{" * 300, "[" * 5000,
                     '{"type":"message","message":' + "[" * 300 + "]" * 300 + "}",
                     '{"type":"message","id":"m","message":{"role":7,"content":{"a":1}}}',
                     '{"type":"session","id":' + "9" * 400 + "}"]),
)  # fmt: skip


@st.composite
def store_changes(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Changes to a copy of the host store, applied in order."""
    changes: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "set", "set", "zstd-cut", "zstd-magic", "drop", "bytes"]))
        if kind == "set":
            table = draw(st.sampled_from(sorted(STORE_COLUMNS)))
            column = draw(st.sampled_from(STORE_COLUMNS[table]))
            changes.append(("set", (table, column, draw(st.integers(0, 40)), draw(sql_values))))
        elif kind in ("zstd-cut", "zstd-magic"):
            changes.append((kind, (draw(st.integers(0, 40)), draw(st.integers(0, 64)))))
        elif kind == "drop":
            changes.append(("drop", draw(st.sampled_from([*STORE_COLUMNS, "session_transcript_archives"]))))
        else:
            changes.append(("bytes", draw(st.sampled_from(["flip", "cut", "random"]))))
    return changes


def mutate_store(path: Path, changes: list[tuple[str, Any]], rand: st.DataObject) -> None:
    """Apply ``changes`` to the store at ``path`` (SQL first, then file bytes)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for kind, what in changes:
            with contextlib.suppress(sqlite3.Error, UnicodeEncodeError):  # a dropped table, a duplicate key
                change_rows(conn, kind, what)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    for kind, what in changes:
        if kind != "bytes":
            continue
        data = path.read_bytes()
        if what == "random":
            data = rand.draw(st.binary(max_size=8192))
        else:
            data = rand.draw(mangled(data))
        path.write_bytes(data)
    for companion in ("-wal", "-shm"):
        Path(str(path) + companion).unlink(missing_ok=True)


def change_rows(conn: sqlite3.Connection, kind: str, what: Any) -> None:
    """One SQL change of :func:`mutate_store`."""
    frame = "SELECT rowid FROM transcript_events WHERE event_zstd IS NOT NULL LIMIT 1 OFFSET ?"
    if kind == "set":
        table, column, pick, value = what
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid IN "
                     f"(SELECT rowid FROM {table} LIMIT 1 OFFSET ?)", (value, pick))  # fmt: skip
    elif kind == "zstd-cut":
        pick, keep = what
        conn.execute(f"UPDATE transcript_events SET event_zstd = substr(event_zstd, 1, ?) WHERE rowid IN ({frame})",
                     (keep, pick % 8))  # fmt: skip
    elif kind == "zstd-magic":
        pick, byte = what
        conn.execute(f"UPDATE transcript_events SET event_zstd = ? || substr(event_zstd, 2) WHERE rowid IN ({frame})",
                     (bytes([byte]), pick % 8))  # fmt: skip
    elif kind == "drop":
        conn.execute(f"DROP TABLE {what}")


@given(changes=store_changes(), apply=st.booleans(), rand=st.data())
@fuzz(120)
def test_fuzz_host_stores(
    world: dict[str, Any], changes: list[tuple[str, Any]], apply: bool, rand: st.DataObject
) -> None:
    state = fresh_db(world["plain"], world["root"])
    store = state / "openclaw-agent.sqlite"
    shutil.copy2(world["store"], store)
    mutate_store(store, changes, rand)
    db = state / "lcm.db"
    before = content(db)
    args = ["--openclaw-dir", str(state), "migrate-sessions", "--store", str(store)]
    envelope = answer("host_store", lcm(*args, *(["--apply"] if apply else [])))
    if envelope is None or not apply:
        assert content(db) == before
    if envelope is not None:
        for row in envelope["data"].get("files", []) or []:
            assert isinstance(row, dict)


# --- 3. backups, prune archives, change backups ----------------------------------------------


def manifest_of(path: Path) -> Path:
    return Path(str(path) + ".manifest.json")


@st.composite
def manifests(draw: st.DrawFn, real: bytes) -> bytes | None:
    """A manifest's new bytes (None: delete it): random JSON, one field changed, or broken text."""
    value = json.loads(real)
    kind = draw(st.sampled_from(["field", "field", "random", "deep", "mangled", "missing"]))
    if kind == "field":
        for _ in range(draw(st.integers(1, 3))):
            key = draw(st.sampled_from([*sorted(value), "x"]))
            value[key] = draw(st.one_of(any_value, huge_numbers, st.sampled_from([None, [], {}, "", True])))
        return as_bytes(value)
    if kind == "random":
        return as_bytes(draw(any_value))
    if kind == "deep":
        return draw(st.sampled_from([b"[" * 100_000, b'{"a":' * 3000, b"[" * 5000 + b"]" * 5000]))
    if kind == "mangled":
        return draw(st.one_of(mangled(real), st.sampled_from([b"", b"\xff\xfe", b"1e99999", b"NaN"])))
    return None


def write_or_delete(path: Path, data: bytes | None) -> None:
    if data is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(data)


BACKUP_RUNS = [
    ("backup", "verify"),
    ("backup", "list"),
    ("backup", "restore"),
    ("backup", "restore", "--apply"),
]


@given(run=st.sampled_from(BACKUP_RUNS), rand=st.data(), flip_backup=st.booleans())
@fuzz(120)
def test_fuzz_backup_manifests(
    world: dict[str, Any], run: tuple[str, ...], rand: st.DataObject, flip_backup: bool
) -> None:
    state = fresh(world["plain"], world["root"])
    backup = state / world["full"]
    manifest = manifest_of(backup)
    write_or_delete(manifest, rand.draw(manifests(manifest.read_bytes())))
    if flip_backup:
        backup.write_bytes(rand.draw(mangled(backup.read_bytes())))
    args = ["--openclaw-dir", str(state), *run[:2]]
    if run[1] != "list":
        args += [str(backup), *run[2:]]
    envelope = answer("backup_manifest", lcm(*args))
    if envelope is None or not flip_backup:
        assert content(state / "lcm.db") == world["plain_content"]


def gz_lines(path: Path) -> list[bytes]:
    return gzip.decompress(path.read_bytes()).split(b"\n")


def resign(lines: list[bytes], kind: str) -> list[bytes]:
    """The lines with a trailer whose sha256 and counts match them, as the writer would make it
    (rows that do not parse are still hashed; counting follows the readers' rules)."""
    body = [line for line in lines if line and b'"trailer"' not in line[:20]]
    digest = hashlib.sha256()
    rows: dict[str, int] = {}
    tables: dict[str, dict[str, int]] = {}
    table = ""
    for line in body:
        digest.update(line + b"\n")
        with contextlib.suppress(ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
            entry = json.loads(line)
            if isinstance(entry, list) and kind == "changes":
                tables.setdefault(entry[2], {"insert": 0, "update": 0, "delete": 0})[entry[1]] += 1
            elif isinstance(entry, list):
                rows[table] = rows.get(table, 0) + 1
            elif "table" in entry:
                table = entry["table"]
    if kind == "changes":
        trailer = {
            "trailer": True,
            "changes": sum(sum(t.values()) for t in tables.values()),
            "tables": tables,
        }
    else:
        trailer = {"trailer": True, "rows": rows}
    trailer["sha256"] = digest.hexdigest()
    return [*body, json.dumps(trailer).encode(), b""]


@st.composite
def archive_edits(draw: st.DrawFn, lines: list[bytes], kind: str) -> tuple[bytes, bool]:
    """New compressed bytes for an archive or change backup, and whether they were re-signed."""
    lines = list(lines)
    edit = draw(st.sampled_from(["value", "value", "line", "drop", "dup", "compressed", "gzip-header"]))
    if edit in ("value", "line", "drop", "dup"):
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, max(0, len(lines) - 2)))
            if edit == "value":
                with contextlib.suppress(ValueError):
                    entry = json.loads(lines[at])
                    if isinstance(entry, list) and entry:
                        entry[draw(st.integers(0, len(entry) - 1))] = draw(any_value)
                    elif isinstance(entry, dict) and entry:
                        entry[draw(st.sampled_from(sorted(entry)))] = draw(any_value)
                    lines[at] = as_bytes(entry)
            elif edit == "line":
                garbage = draw(st.one_of(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
                                         any_value.map(as_bytes), st.sampled_from([b"{" * 5000, b"[" * 5000])))  # fmt: skip
                lines.insert(at, garbage)
            elif edit == "drop":
                del lines[at]
            else:
                lines.insert(at, lines[at])
        signed = draw(st.booleans())
        if signed:
            lines = resign(lines, kind)
        return gzip.compress(b"\n".join(lines)), signed
    data = gzip.compress(b"\n".join(lines))
    if edit == "gzip-header":
        return draw(st.binary(min_size=1, max_size=10)) + data[10:], False
    return draw(mangled(data)), False


def update_manifest(manifest: Path, path: Path, size_key: str) -> None:
    """Make the manifest agree with ``path`` again (a re-signed file must reach the restore)."""
    value = json.loads(manifest.read_text())
    value["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    value[size_key] = path.stat().st_size
    manifest.write_text(json.dumps(value))


@given(rand=st.data(), apply=st.booleans(), mutate_manifest=st.booleans())
@fuzz(200)
def test_fuzz_prune_archives(
    world: dict[str, Any], rand: st.DataObject, apply: bool, mutate_manifest: bool
) -> None:
    state = fresh(world["pruned"], world["root"])
    archive = state / world["archive"]
    manifest = manifest_of(archive)
    data, signed = rand.draw(archive_edits(gz_lines(archive), "archive"))
    archive.write_bytes(data)
    if signed:
        update_manifest(manifest, archive, "bytes")
    if mutate_manifest:
        write_or_delete(manifest, rand.draw(manifests(manifest.read_bytes())))
    db = state / "lcm.db"
    envelope = answer("prune_archive", lcm("--openclaw-dir", str(state), "prune", "restore", str(archive),
                          *(["--apply"] if apply else [])))  # fmt: skip
    if envelope is None or not apply:
        assert content(db) == world["pruned_content"], "a refused restore changed the database"


CHANGE_RUNS = [("backup", "verify"), ("backup", "restore"), ("backup", "restore", "--apply"),
               ("backup", "restore", "--apply", "--force"), ("prune", "restore", "--apply")]  # fmt: skip


@given(rand=st.data(), run=st.sampled_from(CHANGE_RUNS), mutate_manifest=st.booleans())
@fuzz(200)
def test_fuzz_change_backups(
    world: dict[str, Any], rand: st.DataObject, run: tuple[str, ...], mutate_manifest: bool
) -> None:
    state = fresh(world["cleaned"], world["root"])
    path = state / world["change"]
    manifest = manifest_of(path)
    data, signed = rand.draw(archive_edits(gz_lines(path), "changes"))
    path.write_bytes(data)
    if signed:
        update_manifest(manifest, path, "sizeBytes")
    if mutate_manifest:
        write_or_delete(manifest, rand.draw(manifests(manifest.read_bytes())))
    db = state / "lcm.db"
    envelope = answer("change_backup", lcm("--openclaw-dir", str(state), *run[:2], str(path), *run[2:]))
    if envelope is None or "--apply" not in run:
        assert content(db) == world["cleaned_content"], "a refused restore changed the database"


# --- 4. every output path ---------------------------------------------------------------------

ALL_OPS = {**OPERATIONS, **DOOR_COMMANDS}
WRITERS = {
    "summaries.graph": ["summaries", "graph", "--conversation-id", "2", "--out"],
    "export": ["export", "--conversation-id", "2", "--to", "markdown", "--out"],
    "backup.create": ["backup", "--out"],
    "prune": ["prune", "--conversation-id", "3", "--include-active", "--apply", "--out"],
    "prompts.export": ["prompts", "export", "--out"],
    "browse": ["browse", "--screenshot"],
}
TARGETS = ["db", "db-dotdot", "db-wal", "db-shm", "db-journal", "config", "manifest", "new-manifest",
           "link-db", "link-config", "link-wal", "link-manifest", "link-victim", "link-dangling", "link-loop",
           "link-folder-db", "hard-db", "hard-config", "hard-manifest", "victim", "folder", "missing-folder",
           "file-as-folder", "nul", "long-name", "long-path", "empty", "trailing-slash", "fifo", "new",
           "relative", "relative-db", "under-wal", "under-journal"]  # fmt: skip


def test_every_declared_writer_is_fuzzed() -> None:
    assert {name for name, spec in ALL_OPS.items() if spec.outputs} == set(WRITERS)


def make_target(kind: str, state: Path, work: Path) -> str:
    """The path of one target kind, made on disk as needed."""
    db, config = state / "lcm.db", state / "openclaw.json"
    manifest = next(state.glob("*.manifest.json"))

    def link(name: str, to: Path | str) -> str:
        (work / name).symlink_to(to)
        return str(work / name)

    def hard(name: str, to: Path) -> str:
        os.link(to, work / name)
        return str(work / name)

    simple = {
        "db": str(db), "db-dotdot": str(state / ".." / state.name / "lcm.db"), "db-wal": f"{db}-wal",
        "db-shm": f"{db}-shm", "db-journal": f"{db}-journal", "config": str(config), "manifest": str(manifest),
        "new-manifest": str(work / "new.bak.manifest.json"), "victim": str(work / "victim.txt"),
        "folder": str(work), "missing-folder": str(work / "no" / "such" / "out.txt"),
        "file-as-folder": str(work / "victim.txt" / "out.txt"), "nul": str(work / "a\x00b"),
        "long-name": str(work / ("n" * 300)), "long-path": str(work / "/".join(["d" * 200] * 25)),
        "empty": "", "trailing-slash": str(work / "out.txt") + "/", "new": str(work / "out.txt"),
        "relative": "out.txt", "relative-db": os.path.relpath(db, work),
        "under-wal": f"{db}-wal/sub/out", "under-journal": f"{db}-journal/out",
    }  # fmt: skip
    if kind in simple:
        return simple[kind]
    if kind.startswith("link-"):
        to = {"link-db": db, "link-config": config, "link-wal": Path(f"{db}-wal"), "link-manifest": manifest,
              "link-victim": work / "victim.txt", "link-dangling": work / "nowhere", "link-loop": work / "loop",
              "link-folder-db": None}[kind]  # fmt: skip
        if kind == "link-loop":
            return link("loop", work / "loop")
        if kind == "link-folder-db":
            (work / "alias").symlink_to(state)
            return str(work / "alias" / "lcm.db")
        return link(kind, to)  # type: ignore[arg-type]
    if kind.startswith("hard-"):
        return hard(kind, {"hard-db": db, "hard-config": config, "hard-manifest": manifest}[kind])
    assert kind == "fifo"
    os.mkfifo(work / "fifo")
    return str(work / "fifo")


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """Run with ``folder`` as the working directory (``contextlib.chdir`` is Python 3.11+)."""
    saved = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(saved)


def watched(state: Path, work: Path) -> dict[str, Any]:
    """What no output may change: the config, every manifest and file beside the database, the victim."""
    files = {p.name: p.read_bytes() for p in sorted(state.iterdir()) if p.is_file() and p.name != "lcm.db"
             and not p.name.startswith("lcm.db-")}  # fmt: skip
    return {"files": files, "victim": (work / "victim.txt").read_bytes()}


@given(name=st.sampled_from(sorted(WRITERS)), kind=st.sampled_from(TARGETS), force=st.booleans(),
       planted=st.booleans())  # fmt: skip
@fuzz(300)
def test_fuzz_output_paths(world: dict[str, Any], name: str, kind: str, force: bool, planted: bool) -> None:
    state = fresh(world["plain"], world["root"])
    work = state.parent / (state.name + "-work")
    work.mkdir()
    (work / "victim.txt").write_bytes(b"not lcm's")
    spec = ALL_OPS[name]
    target = make_target(kind, state, work)
    directory = dict(spec.outputs or {}).popitem()[1] == "directory"
    if directory and planted and kind not in ("nul", "empty", "long-path"):
        # A folder of fixed names: the target is planted under one of them.
        from lcm_cli.engine.summarize.prompts import SUFFIX, TEMPLATE_NAMES

        folder = work / "prompts"
        folder.mkdir()
        with contextlib.suppress(OSError):
            (folder / f"{TEMPLATE_NAMES[0]}{SUFFIX}").symlink_to(target)
        target = str(folder)
    before = watched(state, work)
    args = ["--openclaw-dir", str(state), *WRITERS[name], target]
    if force and "force" in spec.options:
        args.append("--force")
    with inside(work):  # a relative or empty path lands here, never in the checkout
        envelope = answer("output_path", lcm(*args))
    after = watched(state, work)
    if envelope is not None and kind == "victim" and "--force" in args:
        before["victim"] = after["victim"]  # an ordinary file the user named, replaced on purpose
    if envelope is not None and name in ("backup.create", "prune"):
        # Their own new files beside the database (the default names), never a replaced one.
        new = {k: v for k, v in after["files"].items() if k not in before["files"]}
        before["files"] = {**new, **before["files"]}
    assert after == before, f"{name} {kind}: a file lcm must not write changed"
    expected = world["pruned_content"] if envelope is not None and name == "prune" else world["plain_content"]
    assert content(state / "lcm.db") == expected
    assert not Path(f"{state}/lcm.db-journal").exists()
    wal = Path(f"{state}/lcm.db-wal")  # SQLite's own (a reader opens one), never an output
    assert not wal.exists() or wal.read_bytes()[:4] in (b"", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


# --- the tally --------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _tally() -> Iterator[None]:
    """Print how many inputs the module fuzzed and what they answered (``-s``): a report, not a test."""
    yield
    print(f"\nfuzzed inputs: {FUZZED} total {sum(FUZZED.values())}")
    for family, outcomes in OUTCOMES.items():
        print(f"  {family}: {dict(outcomes.most_common())}")
