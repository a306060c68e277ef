"""Every file lcm writes: private mode, exclusive temp names that never follow a planted
symlink, no overwrite through a link at the final name, lock files, and no orphans after a
kill (engine/durable.py and each writer routed through it)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core import files as durable
from lcm_cli.engine.core.errors import LcmError
from tests.conftest import lcm, lcm_process
from tests.support.sample import build_sample

CONFIG = {"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": {"freshTailCount": 8}}}}}


def _state(tmp_path: Path, db_mode: int = 0o600, config_mode: int = 0o600) -> Path:
    root = tmp_path / "oc"
    root.mkdir()
    build_sample(root / "lcm.db")
    (root / "openclaw.json").write_text(json.dumps({**CONFIG, "apiKey": "sk-secret"}))
    os.chmod(root / "lcm.db", db_mode)
    os.chmod(root / "openclaw.json", config_mode)
    (root / "out").mkdir()
    return root


def _ok(out: Any) -> dict[str, Any]:
    assert out.code == 0, out.stderr
    return dict(out.json["data"])


# --- the writers -------------------------------------------------------------------------------
# Each takes the state dir and returns the files it wrote that derive from lcm.db or the config.


def _backup(root: Path) -> list[str]:
    data = _ok(lcm("--openclaw-dir", str(root), "backup"))
    return [data["backupPath"], data["manifestPath"]]


def _backup_out(root: Path) -> list[str]:
    data = _ok(lcm("--openclaw-dir", str(root), "backup", "--out", str(root / "out" / "copy.bak")))
    return [data["backupPath"], data["manifestPath"]]


def _rolling_backup(root: Path) -> list[str]:
    from lcm_cli.engine.maintenance.backup.create import create_rolling_backup

    data = create_rolling_backup(str(root / "lcm.db"), label="rotate")
    return [data["backupPath"], data["manifestPath"]]


def _prune_archive(root: Path) -> list[str]:
    archive = root / "out" / "pruned.jsonl.gz"
    data = _ok(
        lcm("--openclaw-dir", str(root), "prune", "--conversation-id", "2", "--out", str(archive), "--apply")
    )
    return [data["archive"]["archivePath"], data["archive"]["manifestPath"]]


def _config_set(root: Path) -> list[str]:
    data = _ok(lcm("--openclaw-dir", str(root), "config", "set", "freshTailCount", "32"))
    return [data["backupPath"]]


def _export(root: Path) -> list[str]:
    target = root / "out" / "conv.jsonl"
    _ok(
        lcm(
            "--openclaw-dir",
            str(root),
            "export",
            "--conversation-id",
            "1",
            "--to",
            "jsonl",
            "--out",
            str(target),
        )
    )
    return [str(target)]


def _restore_pre_backup(root: Path) -> list[str]:
    made = _ok(lcm("--openclaw-dir", str(root), "backup", "--out", str(root / "out" / "r.bak")))
    data = _ok(lcm("--openclaw-dir", str(root), "backup", "restore", made["backupPath"], "--apply"))
    pre = data["preRestoreBackup"]
    return [pre["path"], pre["manifestPath"]]


def _large_file(root: Path) -> list[str]:
    from lcm_cli.engine.assembly.large_files import write_large_file
    from lcm_cli.engine.db.store import Store

    with Store.open(root / "lcm.db") as store, store.transaction() as conn:
        path = write_large_file(
            conn, str(root / "files"), 1, "file_aa", b"big text\n", "a.txt", "text/plain", "s", text=True
        )
    return [path]


def _prompts(root: Path) -> list[str]:
    data = _ok(lcm("--openclaw-dir", str(root), "prompts", "export", "--out", str(root / "out" / "prompts")))
    return list(data["written"])


WRITERS: dict[str, Callable[[Path], list[str]]] = {
    "backup": _backup,
    "backup --out": _backup_out,
    "rotate-latest backup": _rolling_backup,
    "prune archive": _prune_archive,
    "config set backup": _config_set,
    "export --out": _export,
    "restore pre-restore backup": _restore_pre_backup,
    "large file": _large_file,
    "prompts export": _prompts,
}
# Derived from lcm.db: they follow the database's mode when it is stricter than 0600.
FROM_DATABASE = {"backup", "backup --out", "rotate-latest backup", "prune archive", "export --out"}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_written_file_is_private(tmp_path: Path, writer: str) -> None:
    root = _state(tmp_path, db_mode=0o644, config_mode=0o644)  # even from world-readable sources
    written = WRITERS[writer](root)
    assert written
    for path in written:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600, path


@pytest.mark.parametrize("writer", sorted(FROM_DATABASE))
def test_a_stricter_source_mode_is_kept(tmp_path: Path, writer: str) -> None:
    root = _state(tmp_path, db_mode=0o400)
    for path in WRITERS[writer](root):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o400, path


def test_config_backup_of_a_0600_file_holding_keys_stays_0600(tmp_path: Path) -> None:
    root = _state(tmp_path, config_mode=0o600)
    (backup,) = _config_set(root)
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert "sk-secret" in Path(backup).read_text()
    # The config itself keeps its own mode.
    assert stat.S_IMODE(os.stat(root / "openclaw.json").st_mode) == 0o600


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_symlink_planted_at_the_temp_name_is_never_followed(
    tmp_path: Path, writer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _state(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.chmod(victim, 0o644)
    real = durable.temp_name
    planted: list[str] = []

    def predicted(final: str) -> str:
        # An attacker who guesses every other temp name plants a link there first.
        name = real(final)
        if len(planted) % 2 == 0 or len(planted) < 1:
            os.symlink(victim, name)
            planted.append(name)
            return name
        planted.append("")
        return name

    monkeypatch.setattr(durable, "temp_name", predicted)
    written = WRITERS[writer](root)
    assert [p for p in planted if p], "the writer did not go through durable.create_temp"
    assert victim.read_text() == "precious" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    for link in filter(None, planted):
        assert os.path.islink(link)  # left alone: neither followed nor replaced
    for path in written:
        assert not os.path.islink(path) and stat.S_IMODE(os.lstat(path).st_mode) & 0o077 == 0


# A symlink at the final name is refused before anything is written (engine/core/outputs.py).
FINAL_NAME_WRITERS = {
    "backup --out": (
        lambda root, p: lcm("--openclaw-dir", str(root), "backup", "--out", str(p)),
        "OUTPUT_REFUSED",
    ),
    "prune archive": (
        lambda root, p: lcm(
            "--openclaw-dir", str(root), "prune", "--conversation-id", "2", "--out", str(p), "--apply"
        ),
        "OUTPUT_REFUSED",
    ),
    "export --out": (
        lambda root, p: lcm(
            "--openclaw-dir", str(root), "export", "--conversation-id", "1", "--to", "jsonl", "--out", str(p)
        ),
        "OUTPUT_REFUSED",
    ),
}


@pytest.mark.parametrize("writer", sorted(FINAL_NAME_WRITERS))
def test_a_symlink_at_the_final_name_is_refused(tmp_path: Path, writer: str) -> None:
    root = _state(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = root / "out" / "target"
    os.symlink(victim, link)
    run, code = FINAL_NAME_WRITERS[writer]
    out = run(root, link)
    assert out.code != 0 and out.error["code"] == code
    assert victim.read_text() == "precious" and os.path.islink(link)


def test_config_backup_name_taken_by_a_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lcm_cli.engine.config import file as config_file

    root = _state(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    monkeypatch.setattr(config_file, "backup_stamp", lambda now=None: "20260101T000000000Z")
    os.symlink(victim, str(root / "openclaw.json") + ".lcm-backup-20260101T000000000Z")
    before = (root / "openclaw.json").read_bytes()
    out = lcm("--openclaw-dir", str(root), "config", "set", "freshTailCount", "32")
    assert out.error["code"] == "CONFIG_BACKUP_FAILED"
    assert victim.read_text() == "precious" and (root / "openclaw.json").read_bytes() == before


def test_serve_lock_file_refuses_a_planted_symlink(tmp_path: Path) -> None:
    from lcm_cli.commands.serve import _claim_socket

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    socket_path = tmp_path / "lcm.sock"
    os.symlink(victim, str(socket_path) + ".lock")
    with pytest.raises(LcmError) as caught:
        _claim_socket(str(socket_path))
    assert caught.value.code == "SERVE_SOCKET_FAILED"
    assert victim.read_text() == "precious"
    os.unlink(str(socket_path) + ".lock")
    lock = _claim_socket(str(socket_path))
    try:
        info = os.lstat(str(socket_path) + ".lock")
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    finally:
        lock.close()


@pytest.mark.parametrize("planted", ["hard link", "fifo"])
def test_serve_lock_file_refuses_a_hard_link_or_a_non_regular_file(tmp_path: Path, planted: str) -> None:
    """A hard link at the lock name would make lcm lock (and chmod) someone's file; a FIFO is
    no lock file either."""
    from lcm_cli.commands.serve import _claim_socket

    socket_path = tmp_path / "lcm.sock"
    lock_path = Path(str(socket_path) + ".lock")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.chmod(victim, 0o644)
    if planted == "hard link":
        os.link(victim, lock_path)
    else:
        os.mkfifo(lock_path)
    with pytest.raises(LcmError) as caught:
        _claim_socket(str(socket_path))
    assert caught.value.code == "SERVE_SOCKET_FAILED"
    assert victim.read_text() == "precious" and stat.S_IMODE(victim.stat().st_mode) == 0o644


# --- the routine itself ------------------------------------------------------------------------


def test_create_temp_is_exclusive_private_and_recognizable(tmp_path: Path) -> None:
    final = str(tmp_path / "x.bin")
    fd, temp = durable.create_temp(final)
    os.close(fd)
    assert re.match(durable.TEMP_NAME, os.path.basename(temp))
    assert f".lcm-{os.getpid()}-" in temp and stat.S_IMODE(os.stat(temp).st_mode) == 0o600
    os.unlink(temp)
    durable.atomic_write(final, b"one", mode=0o640)
    assert Path(final).read_bytes() == b"one" and stat.S_IMODE(os.stat(final).st_mode) == 0o640
    with pytest.raises(FileExistsError):
        durable.atomic_write(final, b"two", replace=False)
    assert Path(final).read_bytes() == b"one"
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def _record_syncs_and_renames(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Spy on os.fsync (by the path its descriptor names), os.replace and os.link, in order."""
    events: list[tuple[str, ...]] = []
    real_fsync, real_replace, real_link = os.fsync, os.replace, os.link

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        events.append(("rename", os.fspath(src), os.fspath(dst)))
        real_replace(src, dst, **kwargs)

    def link(src: Any, dst: Any, **kwargs: Any) -> None:
        events.append(("rename", os.fspath(src), os.fspath(dst)))
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "link", link)
    return events


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names a descriptor's file through /proc")
@pytest.mark.parametrize("how", ["atomic_write", "atomic_write no replace", "create_temp + publish"])
def test_the_temp_file_is_fsynced_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A crash at any instant leaves the old file or the whole new one: the data reaches the
    disk before the name points at it, and the rename itself is made durable."""
    final = str(tmp_path / "x.bin")
    events = _record_syncs_and_renames(monkeypatch)
    if how == "create_temp + publish":
        fd, made = durable.create_temp(final)
        os.write(fd, b"data")
        os.close(fd)
        durable.publish(made, final, mode=0o600)
    else:
        durable.atomic_write(final, b"data", replace=how == "atomic_write")
    assert Path(final).read_bytes() == b"data"
    temp = events[1][1]
    assert re.match(durable.TEMP_NAME, os.path.basename(temp))
    assert events == [("fsync", temp), ("rename", temp, final), ("fsync", str(tmp_path))]


def test_private_mode_is_the_stricter_of_0600_and_the_source() -> None:
    assert durable.private_mode() == 0o600
    assert durable.private_mode(0o100644) == 0o600
    assert durable.private_mode(0o100444) == 0o400
    assert durable.private_mode(0o100000) == 0o000


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_remove_orphans_takes_only_dead_owners_files(tmp_path: Path) -> None:
    dead = _dead_pid()
    names = {
        "dead": f".lcm.db.lcm-{dead}-0123456789abcdef.tmp",
        "dead journal": f".lcm.db.lcm-{dead}-0123456789abcdef.tmp-journal",
        "mine": f".lcm.db.lcm-{os.getpid()}-0123456789abcdef.tmp",
        "alive": ".lcm.db.lcm-1-0123456789abcdef.tmp",
        "foreign": f".lcm.db.{dead}.tmp",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    removed = {os.path.basename(p) for p in durable.remove_orphans(str(tmp_path))}
    assert removed == {names["dead"], names["dead journal"]}
    assert sorted(os.listdir(tmp_path)) == sorted(n for k, n in names.items() if not k.startswith("dead"))


# --- no orphans after a kill --------------------------------------------------------------------

ORPHAN = re.compile(r"^\..*\.lcm-\d+-[0-9a-f]{16}\.tmp")


def _big_database(path: Path, megabytes: int) -> None:
    build_sample(path)
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, blob BLOB)")
        conn.executemany(
            "INSERT INTO filler (blob) VALUES (?)", ((os.urandom(64 * 1024),) for _ in range(megabytes * 16))
        )
        conn.commit()
    finally:
        conn.close()


def test_backup_killed_mid_copy_leaves_an_orphan_the_next_backup_removes(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    _big_database(db, 24)
    exe = Path(sys.executable).with_name("lcm")
    rng = random.Random(12)
    killed_mid_copy = 0
    attempts = 0
    last_left_one = False
    # Each backup also removes the orphans earlier kills left, so keep killing until the
    # most recent kill left its copy behind (and at least half of the kills did).
    while attempts < 30 and not (last_left_one and attempts >= 10):
        attempts += 1
        proc = subprocess.Popen(
            [str(exe), "--db", str(db), "backup"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            if any(ORPHAN.match(n) and f".lcm-{proc.pid}-" in n for n in os.listdir(tmp_path)):
                break  # its copy has started
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.12))  # somewhere in the copy, the check or the publish
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        last_left_one = any(ORPHAN.match(n) and f".lcm-{proc.pid}-" in n for n in os.listdir(tmp_path))
        killed_mid_copy += last_left_one  # this kill left its own hidden copy behind
    print(f"backup kills: {attempts}, left an orphan: {killed_mid_copy}")
    assert killed_mid_copy >= attempts // 2, killed_mid_copy
    leftovers = sorted(n for n in os.listdir(tmp_path) if ORPHAN.match(n))
    print(f"orphans before the next backup: {len(leftovers)}")
    assert leftovers
    # The next backup removes every orphan of a dead owner, whatever the kill left.
    done = lcm_process("--db", str(db), "backup", "--keep", "1")
    assert done.code == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert {os.path.basename(p) for p in data["orphansRemoved"]} == set(leftovers)
    assert not [n for n in os.listdir(tmp_path) if ORPHAN.match(n)]
    # list shows only complete backups; each verifies; --keep 1 left one "backup" label.
    listed = json.loads(lcm_process("--db", str(db), "backup", "list").stdout)["data"]["backups"]
    assert [b["path"] for b in listed if b["label"] == "backup"] == [data["backupPath"]]
    for item in listed:
        assert item["hasManifest"] and item["sizeMatchesManifest"], item
        verified = lcm_process("--db", str(db), "backup", "verify", item["path"])
        assert verified.code == 0, verified.stderr
    sizes = sum(os.path.getsize(tmp_path / n) for n in os.listdir(tmp_path))
    assert sizes < 4 * os.path.getsize(db)  # no hidden full-size copies left behind


CREATE = """
import sys
from lcm_cli.engine.db.store import Store
Store.open(sys.argv[1]).close()
"""


def test_database_creation_killed_at_random_moments_leaves_none_or_a_complete_file(tmp_path: Path) -> None:
    rng = random.Random(5)
    outcomes = {"absent": 0, "complete": 0}
    for attempt in range(12):
        folder = tmp_path / f"d{attempt}"
        folder.mkdir()
        db = folder / "lcm.db"
        proc = subprocess.Popen([sys.executable, "-c", CREATE, str(db)])
        time.sleep(rng.uniform(0.02, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not db.exists():
            outcomes["absent"] += 1
        else:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                conn.close()
            assert {"conversations", "messages", "summaries"} <= tables
            outcomes["complete"] += 1
        # The next creator succeeds and clears what a killed one left aside.
        done = subprocess.run([sys.executable, "-c", CREATE, str(db)], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert not [n for n in os.listdir(folder) if n.startswith(".lcm.db.creating-")]
    print(f"creation kills: {outcomes}")
    assert outcomes["absent"] and outcomes["complete"], outcomes


def test_a_creator_killed_after_publishing_leaves_a_link_the_next_open_removes(tmp_path: Path) -> None:
    """The kill window between linking the built file into place and removing its sibling
    name: the database is complete, and its second name goes at the next open (a live
    creator's sibling stays)."""
    from lcm_cli.engine.db.store import Store

    db = tmp_path / "lcm.db"
    Store.open(db).close()
    dead = tmp_path / f".lcm.db.creating-{_dead_pid()}-1"
    alive = tmp_path / f".lcm.db.creating-{os.getpid()}-2"
    for sibling in (dead, alive):
        os.link(db, sibling)
    Store.open(db).close()
    assert not dead.exists() and alive.exists()
    os.unlink(alive)
    Store.open(db).close()
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith("lcm.db-")) == ["lcm.db"]


# --- read-only places ---------------------------------------------------------------------------


def _without_root_override(*command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` unable to bypass file permissions: as root, drop CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH from the bounding set (setpriv), so a 0444 file or a 0555 directory
    really refuses writes; as another user, permissions already apply."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        import shutil

        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv cannot be made to honour file permissions")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=60)


def _wal_database(path: Path) -> None:
    build_sample(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()  # the last connection: checkpointed, -wal and -shm removed
    assert not Path(str(path) + "-wal").exists()


def test_backup_of_a_write_protected_database(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    _wal_database(db)
    os.chmod(db, 0o444)
    exe = str(Path(sys.executable).with_name("lcm"))
    done = _without_root_override(exe, "--db", str(db), "backup")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["sourceReadOnly"] is True and "read-only" in data["note"]
    assert stat.S_IMODE(os.stat(data["backupPath"]).st_mode) == 0o400  # stricter than 0600
    assert (
        _without_root_override(exe, "--db", str(db), "backup", "verify", data["backupPath"]).returncode == 0
    )


def test_a_cleanly_closed_wal_database_in_an_unwritable_directory_is_readable(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "lcm.db"
    _wal_database(db)
    before = db.read_bytes()
    os.chmod(folder, 0o555)
    exe = str(Path(sys.executable).with_name("lcm"))
    try:
        for command in (("status",), ("conversations", "list"), ("backup", "--out", str(tmp_path / "c.bak"))):
            done = _without_root_override(exe, "--db", str(db), *command)
            assert done.returncode == 0, (command, done.stderr)
            envelope = json.loads(done.stdout)
            if command[0] != "backup":
                assert envelope["meta"]["databaseAccess"]["mode"] == "immutable"
            else:
                assert "immutable" in envelope["data"]["note"]
    finally:
        os.chmod(folder, 0o755)
    assert db.read_bytes() == before and sorted(os.listdir(folder)) == ["lcm.db"]


def test_immutable_is_chosen_only_for_a_cleanly_closed_wal_file(tmp_path: Path) -> None:
    # The decision, as root: a directory named lcm.db-shm makes the WAL index impossible
    # to create, exactly as an unwritable directory does for a user.
    from lcm_cli.engine.db.connection import immutable_reason

    db = tmp_path / "lcm.db"
    _wal_database(db)
    assert immutable_reason(str(db)) is None  # a writable directory: plain mode=ro works
    shm = Path(str(db) + "-shm")
    shm.mkdir()
    assert "not a file" in (immutable_reason(str(db)) or "")
    out = lcm("--db", str(db), "conversations", "list")
    assert out.code == 0, out.stderr
    assert out.json["meta"]["databaseAccess"]["mode"] == "immutable"
    # Committed frames in the WAL: immutable would not see them, so it is never used.
    Path(str(db) + "-wal").write_bytes(b"\0" * 32)
    assert immutable_reason(str(db)) is None
    Path(str(db) + "-wal").unlink()
    shm.rmdir()
    rollback = tmp_path / "rollback.db"
    sqlite3.connect(rollback).execute("CREATE TABLE t (x)").connection.close()
    (tmp_path / "rollback.db-shm").mkdir()
    assert immutable_reason(str(rollback)) is None  # not WAL: no index needed
    # A normal read names no special access.
    assert "databaseAccess" not in lcm("--db", str(db), "conversations", "list").json["meta"]
