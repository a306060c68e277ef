"""Change backups end to end: values come back byte for byte, only the command's own
connection is captured, neighbours' rows survive a restore and a row they changed is never
overwritten, a kill -9 loses no record (mid-command) and leaves a restore a rerun finishes,
the live writer never waits long, and hostile files are refused with stable codes.
Real SQLite files, real processes; nothing is mocked."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from tests.conftest import REPO, lcm
from tests.engine.db.writer_probe import WriterProbe
from tests.support.changes import add_bulk, change_backups, dump, log_rows, totals_agree

CRONS, CRON_MESSAGES = 5, 2000  # a 10,000-message clean: a change backup of about 10k rows


def _ok(out: Any) -> dict[str, Any]:
    assert out.code == 0, out.stderr or out.stdout
    data: dict[str, Any] = out.json["data"]
    return data


def _build(path: Path) -> dict[str, Any]:
    """A live conversation, 20,000 bulk messages, and CRONS cron sessions for doctor clean."""
    bulk = add_bulk(path)
    crons = []
    with Store.open(path) as store:
        main = store.create_conversation("main", session_key="agent:main:main")
        store.add_messages(main, [{"role": "user", "content": f"live {i}"} for i in range(50)])
        for index in range(CRONS):
            cid = store.create_conversation(f"cron-{index}", session_key=f"agent:main:cron:job-{index}")
            ids = store.add_messages(
                cid,
                [
                    {"role": ("user", "assistant")[i % 2], "content": f"cron {index} run {i} ok"}
                    for i in range(CRON_MESSAGES)
                ],
            )
            for start in range(0, 200, 20):
                store.add_leaf_summary(cid, ids[start : start + 20], f"cron {index} summary {start}")
            crons.append(int(cid))
    return {"bulk": bulk, "main": int(main), "crons": crons}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("changes") / "lcm.db"
    return path, _build(path)


@pytest.fixture
def db(template: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    shutil.copyfile(template[0], path)
    return path


def _clean(db: Path) -> dict[str, Any]:
    data = _ok(lcm("--db", str(db), "doctor", "clean", "--class", "cron_sessions", "--apply"))
    assert data["deletedConversations"] == CRONS and data["backupKind"] == "changes"
    return data


def _neighbour(db: Path, sql: str, *params: Any) -> None:
    """Another process (plain sqlite3) writes lcm.db, as the agent host does."""
    script = (
        "import json, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], timeout=30)\n"
        "with conn:\n    conn.execute(sys.argv[2], json.loads(sys.argv[3]))\n"
        "conn.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db), sql, json.dumps(list(params))], check=True)


# --- values and capture ---------------------------------------------------------------------


VALUES = [
    None,
    0,
    -1,
    2**63 - 1,
    -(2**63),
    0.1,
    1 / 3,
    1e300,
    5e-324,
    -0.0,
    1.0,
    math.inf,
    -math.inf,
    "",
    "héllo wörld ✓ 🎉",
    "a\x00b",
    b"",
    b"\x00\xff\x10",
]


def test_values_come_back_with_their_exact_type_and_bytes(tmp_path: Path) -> None:
    from lcm_cli.engine.maintenance.backup.changes import capture_changes

    path = tmp_path / "lcm.db"
    with Store.open(path) as store:
        conn = store.conn
        conn.execute("CREATE TABLE typed (id INTEGER PRIMARY KEY, v, w TEXT, x REAL)")
        conn.executemany("INSERT INTO typed (v) VALUES (?)", [(v,) for v in VALUES])
        conn.execute("INSERT INTO typed (v, w, x) VALUES (CAST(X'ff00fe' AS TEXT), 'not utf-8 above', 2.5)")

    def rows() -> list[tuple[Any, ...]]:
        check = sqlite3.connect(path)
        check.text_factory = bytes
        try:
            return check.execute("SELECT id, typeof(v), hex(v), v, w, x FROM typed ORDER BY id").fetchall()
        finally:
            check.close()

    before = rows()
    with Store.open(path) as store:
        conn = store.conn
        with capture_changes(conn, str(path), label="test", command="test") as capture:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE typed SET v = 'replaced', x = 1 WHERE id % 2 = 0")
            conn.execute("DELETE FROM typed WHERE id % 3 = 0")
            conn.execute("UPDATE typed SET id = id + 1000 WHERE id = 1")  # the rowid moves
            conn.execute("INSERT INTO typed (v) VALUES (X'01')")
            conn.execute("COMMIT")
    assert capture.result is not None and capture.result["tables"] == {
        "typed": {"insert": 1, "update": 10, "delete": 6}
    }
    assert rows() != before
    done = _ok(lcm("--db", str(path), "backup", "restore", capture.result["backupPath"], "--apply"))
    assert done["conflictCount"] == 0
    after = rows()
    assert after == before
    # -0.0 keeps its sign and the infinities their value: read as Python floats, exactly.
    check = sqlite3.connect(path)
    reals = [r[0] for r in check.execute("SELECT v FROM typed WHERE typeof(v) = 'real' ORDER BY id")]
    check.close()
    expected = [v for v in VALUES if isinstance(v, float)]
    assert [(v, math.copysign(1, v)) for v in reals] == [(v, math.copysign(1, v)) for v in expected]


def test_only_the_commands_own_connection_is_captured(tmp_path: Path) -> None:
    from lcm_cli.engine.maintenance.backup.changes import capture_changes

    path = tmp_path / "lcm.db"
    with Store.open(path) as store:
        cid = store.create_conversation("s", session_key="agent:main:s")
        store.add_messages(cid, [{"role": "user", "content": f"m{i}"} for i in range(5)], in_context=False)
    with Store.open(path) as store:
        with capture_changes(store.conn, str(path), label="test", command="test") as capture:
            _neighbour(path, "UPDATE messages SET content = 'neighbour' WHERE message_id = 1")
            other = sqlite3.connect(path)  # another connection of this process: not captured either
            with other:
                other.execute("UPDATE messages SET content = 'other' WHERE message_id = 2")
            other.close()
            with store.transaction() as conn:
                conn.execute("UPDATE messages SET content = 'mine' WHERE message_id = 3")
    assert capture.result is not None and capture.result["rows"] == 1
    with gzip.open(capture.result["backupPath"], "rt") as handle:
        changes = [json.loads(line) for line in handle if line.startswith("[")]
    assert [(c[1], c[2], c[3]) for c in changes] == [("update", "messages", 3)]


# --- neighbours ----------------------------------------------------------------------------------


@pytest.mark.slow  # a neighbour process writing through the restore
def test_a_neighbours_rows_survive_the_restore(db: Path, template: tuple[Path, dict[str, Any]]) -> None:
    before = dump(db)
    data = _clean(db)
    bulk = template[1]["bulk"]
    _neighbour(
        db,
        "INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (?, 900000, 'user', 'late', 1)",
        bulk,
    )
    _neighbour(db, "INSERT INTO conversations (session_id, session_key) VALUES ('new', 'agent:main:new')")
    done = _ok(lcm("--db", str(db), "backup", "restore", data["backup"]["backupPath"], "--apply"))
    assert done["conflictCount"] == 0 and done["totals"]["putBack"] == data["backup"]["rows"]
    conn = sqlite3.connect(db)
    with conn:
        assert conn.execute("DELETE FROM messages WHERE seq = 900000").rowcount == 1
        assert conn.execute("DELETE FROM conversations WHERE session_id = 'new'").rowcount == 1
    conn.close()
    assert dump(db) == before and totals_agree(db)


EXAMPLE = REPO / "examples" / "openclaw"
LEAF_A = "sum_0a1b2c3d4e5f6071"
CONDENSED = "sum_2c3d4e5f60718293"


def test_a_row_changed_since_is_a_conflict_and_never_overwritten(tmp_path: Path) -> None:
    root = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, root)
    db = root / "lcm.db"
    args = ["--openclaw-dir", str(root)]
    original = dump(db)
    data = _ok(lcm(*args, "summaries", "rewrite", "--summary-id", LEAF_A, "--cascade", "--apply"))
    path = data["backupPath"]
    _neighbour(db, "UPDATE summaries SET content = 'the host rewrote it' WHERE summary_id = ?", LEAF_A)
    written = dump(db)
    dry = _ok(lcm(*args, "backup", "restore", path))
    assert dry["conflictCount"] == 1 and dry["restorable"] is False
    assert dry["conflicts"] == [
        {"table": "summaries", "rowid": dry["conflicts"][0]["rowid"], "reason": "changed"}
    ]
    refused = lcm(*args, "backup", "restore", path, "--apply")
    assert refused.code == 4 and refused.error["code"] == "RESTORE_CONFLICT"
    assert refused.error["details"]["conflictCount"] == 1
    assert dump(db) == written and not list(root.glob("*.pre-restore-*"))  # nothing written
    forced = _ok(lcm(*args, "backup", "restore", path, "--apply", "--force"))
    assert forced["forced"] is True and forced["conflictCount"] == 1
    conn = sqlite3.connect(db)
    contents = dict(conn.execute("SELECT summary_id, content FROM summaries"))
    conn.close()
    assert contents[LEAF_A] == "the host rewrote it"  # the neighbour's text stays
    restored = dump(db)
    # Every other row is back as it was; the conflicting one is the neighbour's.
    assert {t: r for t, r in restored.items() if t != "summaries"} == {
        t: r for t, r in original.items() if t != "summaries"
    }
    assert len(set(restored["summaries"]) - set(original["summaries"])) == 1


def test_a_row_referenced_since_is_a_conflict(tmp_path: Path) -> None:
    from tests.support.transcripts import write_transcript

    root = tmp_path / "state"
    root.mkdir()
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    db = root / "lcm.db"
    add_bulk(db, 100)
    write_transcript(root / "agents" / "main" / "sessions" / "s1.jsonl", session_id="s1", messages=10)
    args = ["--openclaw-dir", str(root)]
    before = dump(db)
    data = _ok(lcm(*args, "migrate-sessions", "--apply"))
    conn = sqlite3.connect(db)
    (cid,) = conn.execute("SELECT conversation_id FROM conversations WHERE session_id = 's1'").fetchone()
    conn.close()
    # The host goes on writing the imported conversation: its new message names it.
    _neighbour(
        db,
        "INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (?, 99, 'user', 'host', 1)",
        cid,
    )
    dry = _ok(lcm(*args, "backup", "restore", data["backupPath"]))
    assert {"table": "conversations", "rowid": cid, "reason": "referenced"} in dry["conflicts"]
    refused = lcm(*args, "backup", "restore", data["backupPath"], "--apply")
    assert refused.code == 4 and refused.error["code"] == "RESTORE_CONFLICT"
    forced = _ok(lcm(*args, "backup", "restore", data["backupPath"], "--apply", "--force"))
    assert forced["conflictCount"] == dry["conflictCount"]
    conn = sqlite3.connect(db)
    assert (
        conn.execute("SELECT COUNT(*) FROM conversations WHERE conversation_id = ?", (cid,)).fetchone()[0]
        == 1
    )
    assert conn.execute("SELECT content FROM messages WHERE conversation_id = ?", (cid,)).fetchall() == [
        ("host",)
    ]
    conn.close()
    after = dump(db)
    assert after["messages"] != before["messages"]  # only the host's message and its conversation remain
    assert len(set(after["messages"]) - set(before["messages"])) == 1


# --- kill -9 ------------------------------------------------------------------------------------

KILL_AFTER_BATCHES = r"""
import os, signal, sys
from lcm_cli.engine.db import steps
import lcm_cli.engine.maintenance.prune as prune
import lcm_cli.engine.maintenance.backup.undo as undo
prune.FIRST_BATCH_ROWS = 20
undo.FIRST_BATCH_STEPS = 20
taken = []
def counted(held):
    taken.append(held)
    if len(taken) == int(os.environ["KILL_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)
steps.yield_to_writers = counted
from lcm_cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _killed(after: int, *args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_BATCHES, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KILL_AFTER": str(after)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _rowids(db: Path) -> dict[str, set[int]]:
    """The rowids of every table a change backup covers."""
    return {table: {int(r[0]) for r in rows} for table, rows in dump(db).items()}


@pytest.mark.parametrize("exported_by", ["doctor-fix", "next-command"])
def test_a_kill_mid_command_leaves_every_committed_change_recorded(db: Path, exported_by: str) -> None:
    original = dump(db)
    rowids = _rowids(db)
    _killed(12, "--db", str(db), "doctor", "clean", "--class", "cron_sessions", "--apply")
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # Every row the killed run deleted has its record, and no record names a row still there.
    recorded: dict[str, set[int]] = {}
    for table, rowid in conn.execute("SELECT tbl, old_rowid FROM lcm_change_log WHERE op = 'D'"):
        recorded.setdefault(table, set()).add(int(rowid))
    conn.close()
    left = _rowids(db)
    gone = {t: rowids[t] - left[t] for t in rowids if rowids[t] - left[t]}
    assert gone and recorded == gone
    assert not change_backups(db.parent)
    scan = _ok(lcm("--db", str(db), "doctor", "--check", "storage.change-log", "--fail-on", "none"))
    (check,) = scan["checks"]
    assert check["status"] == "INFO" and check["count"] == 1
    assert check["fix"] == "lcm doctor apply --check storage.change-log --apply"
    files: list[str] = []
    if exported_by == "doctor-fix":
        fixed = _ok(lcm("--db", str(db), "doctor", "apply", "--check", "storage.change-log", "--apply"))
        (unit,) = fixed["units"]
        assert unit["status"] == "applied" and unit["changes"][0]["written"] is True
        files.append(unit["changes"][0]["backupPath"])
    else:  # the next command that takes a change backup writes them out first
        rerun = _clean_rest(db)
        files.append(rerun["backup"]["exportedLeftovers"][0])
        files.insert(0, rerun["backup"]["backupPath"])  # newest first
    assert log_rows(db) == 0
    assert (
        _ok(lcm("--db", str(db), "doctor", "--check", "storage.change-log"))["checks"][0]["status"] == "PASS"
    )
    for path in files:  # newest first: each undoes one command
        _ok(lcm("--db", str(db), "backup", "restore", path, "--apply"))
    # (lcm's totals are left out: a clean killed mid-way has already dropped the totals rows
    # of the conversations it was deleting, as prune does, and they are not change-backed.)
    assert dump(db) == original


def _clean_rest(db: Path) -> dict[str, Any]:
    data = _ok(lcm("--db", str(db), "doctor", "clean", "--class", "cron_sessions", "--apply"))
    assert data["backupKind"] == "changes" and data["backup"]["exportedLeftovers"]
    return data


@pytest.mark.parametrize("after", [3, 9])
def test_a_kill_mid_restore_then_the_same_restore_finishes_it(db: Path, after: int) -> None:
    original = dump(db)
    path = _clean(db)["backup"]["backupPath"]
    cleaned = dump(db)
    _killed(after, "--db", str(db), "backup", "restore", path, "--apply")
    partial = dump(db)
    assert partial not in (original, cleaned)  # some batches committed
    done = _ok(lcm("--db", str(db), "backup", "restore", path, "--apply"))
    assert done["resumed"] is True and done["conflictCount"] == 0
    assert dump(db) == original and totals_agree(db)
    scan = _ok(lcm("--db", str(db), "doctor", "--check", "fts", "--check", "storage.change-log"))
    assert {c["status"] for c in scan["checks"]} == {"PASS"}
    # The killed run's own change backup was written by the rerun: with the rerun's, it undoes the restore.
    pre = sorted(p.name for p in db.parent.glob("*.pre-restore-*.changes.jsonl.gz"))
    assert len(pre) == 2 and done["preRestoreBackup"]["exportedLeftovers"]
    again = _ok(lcm("--db", str(db), "backup", "restore", path, "--apply"))
    assert again["alreadyRestored"] is True and dump(db) == original


# --- the live writer -------------------------------------------------------------------------------


@pytest.mark.slow  # a live writer beside a big clean
def test_the_live_writer_never_waits_long_for_a_big_clean_and_its_restore(
    db: Path, template: tuple[Path, dict[str, Any]]
) -> None:
    original = dump(db)
    main, bulk = template[1]["main"], template[1]["bulk"]
    with WriterProbe(db, mode="messages", conversation=main) as probe:
        data = _clean(db)
    assert probe.never_waited_long(), probe.summary()
    assert data["backup"]["rows"] > CRONS * CRON_MESSAGES
    with WriterProbe(db, mode="messages", conversation=bulk) as restoring:
        done = _ok(lcm("--db", str(db), "backup", "restore", data["backup"]["backupPath"], "--apply"))
    assert restoring.never_waited_long(), restoring.summary()
    # It yields between batches; how long one takes is the benchmark's to measure, not a test's.
    assert done["batches"] > 10
    conn = sqlite3.connect(db)
    kept = {r[0] for r in conn.execute("SELECT message_id FROM messages")}
    assert set(probe.ids + restoring.ids) <= kept  # every write of the live writer is still there
    conn.execute(
        f"DELETE FROM messages WHERE message_id IN ({','.join(map(str, probe.ids + restoring.ids))})"
    )
    conn.commit()
    conn.close()
    assert dump(db) == original


# --- hostile files -------------------------------------------------------------------------------


def _unchanged(db: Path, before: dict[str, Any], names: set[str]) -> None:
    assert dump(db) == before and {p.name for p in db.parent.iterdir()} <= names | {
        db.name + "-wal",
        db.name + "-shm",
    }


def test_damaged_foreign_and_wrong_kind_files_are_refused_and_nothing_is_written(
    db: Path, tmp_path: Path
) -> None:
    path = Path(_clean(db)["backup"]["backupPath"])
    tmp_path = tmp_path / "files"  # beside the database only what lcm wrote there
    tmp_path.mkdir()
    args = ["--db", str(db)]
    before = dump(db)
    names = {p.name for p in db.parent.iterdir()}
    raw = gzip.decompress(path.read_bytes())

    truncated = tmp_path / "truncated.changes.jsonl.gz"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    lines = raw.split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(b"["))
    lines[first] = lines[first][:-1] + b",null]"  # one change altered: the trailer's sha256 differs
    altered = tmp_path / "altered.changes.jsonl.gz"
    altered.write_bytes(gzip.compress(b"\n".join(lines)))
    garbage = tmp_path / "garbage.changes.jsonl.gz"
    garbage.write_bytes(b"not a backup at all\n" * 10)
    for bad, reason in (
        (truncated, "unreadable"),
        (altered, "content checksum mismatch"),
        (garbage, "unreadable"),
    ):
        for command in (("backup", "restore", str(bad), "--apply"), ("backup", "verify", str(bad))):
            out = lcm(*args, *command)
            assert out.code == 4 and out.error["code"] == "BACKUP_VERIFY_FAILED", (bad, out.stderr)
            assert out.error["details"]["reason"].startswith(reason)
    _unchanged(db, before, names)

    # A change backup of another database.
    other = tmp_path / "other" / "lcm.db"
    other.parent.mkdir()
    add_bulk(other, 10)
    for command in (("backup", "restore", str(path), "--apply"), ("backup", "verify", str(path))):
        out = lcm("--db", str(other), *command)
        assert out.code == 4 and out.error["code"] == "BACKUP_WRONG_DATABASE", out.stderr
    assert {p.name for p in other.parent.iterdir()} <= {"lcm.db", "lcm.db-wal", "lcm.db-shm"}

    # The wrong kind of file, either way.
    archive = tmp_path / "a.prune.jsonl.gz"
    _ok(lcm(*args, "prune", "--conversation-id", "1", "--include-active", "--out", str(archive), "--apply"))
    before, names = dump(db), {p.name for p in db.parent.iterdir()}
    copy = tmp_path / "copy.bak"
    _ok(lcm(*args, "backup", "--out", str(copy)))
    for command, kind in (
        (("backup", "restore", str(archive), "--apply"), "prune-archive"),
        (("backup", "verify", str(archive)), "prune-archive"),
        (("prune", "restore", str(path), "--apply"), "changes"),
        (("prune", "restore", str(path)), "changes"),
        (("prune", "restore", str(copy), "--apply"), "full"),
    ):
        out = lcm(*args, *command)
        assert out.code == 2 and out.error["code"] == "WRONG_BACKUP_KIND", (command, out.stderr)
        assert out.error["details"]["kind"] == kind
    _unchanged(db, before, names)


def test_list_and_verify_name_change_backups(db: Path) -> None:
    data = _clean(db)
    path = data["backup"]["backupPath"]
    listed = {b["path"]: b for b in _ok(lcm("--db", str(db), "backup", "list"))["backups"]}
    entry = listed[path]
    assert entry["kind"] == "changes" and entry["label"] == "doctor-cleaners"
    assert entry["rows"] == data["backup"]["rows"] and entry["sizeBytes"] == Path(path).stat().st_size
    assert entry["hasManifest"] is True and entry["verifiedAtCreation"] is True
    verified = _ok(lcm("--db", str(db), "backup", "verify", path))
    assert verified["kind"] == "changes" and verified["ok"] is True
    assert {c["name"] for c in verified["checks"]} == {"content", "manifest", "database"}
    assert oct(Path(path).stat().st_mode & 0o777) == oct(0o600)
