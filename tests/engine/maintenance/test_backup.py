"""lcm_cli.engine.maintenance.backup_* on real SQLite files: create, list, verify, restore, prune, and
the hard cases (full disk, read-only directory, a writer in another process, SIGKILL)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.maintenance.backup.catalog import list_backups, prune_backups
from lcm_cli.engine.maintenance.backup.create import MAX_RESTARTS, create_backup
from lcm_cli.engine.maintenance.backup.manifest import counted_tables
from lcm_cli.engine.maintenance.backup.names import normalize_label
from lcm_cli.engine.maintenance.backup.restore import restore_backup
from lcm_cli.engine.maintenance.backup.verify import verify_backup
from tests.conftest import REPO
from tests.support.sample import build_sample

DEFAULT_NAME = re.compile(r"^lcm\.db\.backup-\d{8}T\d{9}Z-[0-9a-z]{6}\.bak$")
FILLER_MESSAGES = 2500


# --- helpers ----------------------------------------------------------------------------


def rows(path: Path | str, table: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
    finally:
        conn.close()


def tables_of(path: Path | str) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return counted_tables(conn)
    finally:
        conn.close()


def visible_files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if not p.name.startswith(".")}


def all_files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def raises(code: str, func: Any, *args: Any, **kwargs: Any) -> LcmError:
    with pytest.raises(LcmError) as info:
        func(*args, **kwargs)
    assert info.value.code == code, info.value.to_dict()
    return info.value


def filler(store: Store, count: int = FILLER_MESSAGES) -> int:
    """A conversation of ``count`` ~2 KB messages, so a copy takes many page steps."""
    cid = store.create_conversation("filler")
    rng = random.Random(5)
    words = [f"w{rng.randrange(10_000)}" for _ in range(4000)]
    store.add_messages(
        cid, [{"role": "user", "content": " ".join(rng.sample(words, 330))} for _ in range(count)]
    )
    return cid


@pytest.fixture(scope="module")
def big_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A multi-MiB lcm.db (sample + filler) built once; tests copy it."""
    path = tmp_path_factory.mktemp("template") / "lcm.db"
    build_sample(path)
    with Store.open(path) as store:
        filler(store)
    return path


@pytest.fixture
def big_db(tmp_path: Path, big_template: Path) -> Path:
    target = tmp_path / "big" / "lcm.db"
    target.parent.mkdir()
    shutil.copyfile(big_template, target)
    return target


def run_python(code: str, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=REPO, text=True, stdout=subprocess.PIPE, **kwargs
    )


# --- create -----------------------------------------------------------------------------


def test_create_copies_every_row_and_writes_a_true_manifest(db_path: Path) -> None:
    done = create_backup(str(db_path))
    path = Path(done["backupPath"])
    assert path.parent == db_path.parent and DEFAULT_NAME.match(path.name)
    assert done["manifestPath"] == str(path) + ".manifest.json"
    manifest = json.loads(Path(done["manifestPath"]).read_text())
    assert {k: v for k, v in done.items() if k != "manifestPath"} == manifest
    data = path.read_bytes()
    assert manifest["version"] == 1
    assert manifest["sourcePath"] == str(db_path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", manifest["createdAt"])
    assert manifest["sizeBytes"] == len(data)
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["pageSize"] * manifest["pageCount"] == len(data)
    assert (manifest["integrity"], manifest["check"]) == ("ok", "integrity_check")
    assert manifest["sqliteVersion"] == sqlite3.sqlite_version
    assert isinstance(manifest["durationMs"], int) and manifest["durationMs"] >= 0
    assert manifest["tables"]["messages"] == 27 and manifest["tables"]["summaries"] == 3
    assert "messages_fts" not in manifest["tables"] and "messages_fts_data" not in manifest["tables"]
    assert set(manifest["tables"]) == set(tables_of(db_path))
    for table in tables_of(db_path):
        assert rows(path, table) == rows(db_path, table), table
    # A self-contained rollback-journal file: no -wal needed to read it.
    assert data[18:20] == b"\x01\x01"
    assert visible_files(db_path.parent) - {"lcm.db-wal", "lcm.db-shm"} == {
        "lcm.db",
        "openclaw.json",
        path.name,
        path.name + ".manifest.json",
    }
    assert not [n for n in all_files(db_path.parent) if n.startswith(".")]


def test_quick_check_and_progress_are_reported(db_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    done = create_backup(
        str(db_path), quick=True, pages_per_step=8, progress=lambda d, t: seen.append((d, t))
    )
    assert done["check"] == "quick_check"
    total = done["pageCount"]
    assert len(seen) == -(-total // 8) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.parametrize(
    ("label", "normalized"),
    [
        ("backup", "backup"),
        ("  Pre Restore!! ", "pre-restore"),
        ("", "backup"),
        ("--x__Y--", "x-y"),
        ("é", "backup"),
    ],
)
def test_labels_are_normalized_as_the_plugin_does(label: str, normalized: str) -> None:
    assert normalize_label(label) == normalized


def test_default_name_carries_the_label_and_out_may_be_a_directory(db_path: Path, tmp_path: Path) -> None:
    labelled = Path(create_backup(str(db_path), label="Before Import")["backupPath"])
    assert re.fullmatch(r"lcm\.db\.before-import-\d{8}T\d{9}Z-[0-9a-z]{6}\.bak", labelled.name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inside = Path(create_backup(str(db_path), out=str(elsewhere))["backupPath"])
    assert inside.parent == elsewhere and DEFAULT_NAME.match(inside.name)
    named = create_backup(str(db_path), out=str(elsewhere / "mine.sqlite"))
    assert named["backupPath"] == str(elsewhere / "mine.sqlite")
    assert Path(named["manifestPath"]).name == "mine.sqlite.manifest.json"


def test_existing_target_is_refused_and_left_unchanged(db_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "taken.bak"
    target.write_bytes(b"precious")
    before = all_files(tmp_path)
    error = raises("BACKUP_TARGET_EXISTS", create_backup, str(db_path), out=str(target))
    assert "--out" in error.message
    assert target.read_bytes() == b"precious"
    assert all_files(tmp_path) == before


def test_bad_arguments_are_invalid(db_path: Path) -> None:
    raises("INVALID_ARGUMENT", create_backup, str(db_path), pages_per_step=0)
    raises("INVALID_ARGUMENT", create_backup, str(db_path), pages_per_step=-5)
    raises("INVALID_ARGUMENT", create_backup, str(db_path), sleep_ms=-1)
    raises("INVALID_ARGUMENT", prune_backups, str(db_path), -1)


def test_missing_and_non_sqlite_sources_are_refused(tmp_path: Path) -> None:
    raises("DATABASE_NOT_FOUND", create_backup, str(tmp_path / "nope.db"))
    raises("DATABASE_NOT_FOUND", create_backup, str(tmp_path))
    text = tmp_path / "notes.db"
    text.write_text("this is not a database\n" * 100)
    raises("DATABASE_OPEN_FAILED", create_backup, str(text))
    fake = tmp_path / "fake.db"
    fake.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    raises("DATABASE_OPEN_FAILED", create_backup, str(fake))
    assert all_files(tmp_path) == {"notes.db", "fake.db"}


def test_a_copy_failing_the_integrity_check_is_never_published(db_path: Path) -> None:
    """A source whose only damage is an index disagreeing with its table copies without an
    error; create's integrity check is what refuses to publish the copy."""
    swap_two_indexes(db_path)
    before = all_files(db_path.parent)
    error = raises("BACKUP_FAILED", create_backup, str(db_path))
    assert error.details["check"] == "integrity_check" and error.details["problems"]
    # No backup, manifest or temporary file: only the source's own WAL files may appear.
    assert all_files(db_path.parent) - before <= {"lcm.db-wal", "lcm.db-shm"}


def test_rollback_journal_source_is_backed_up_too(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB)")
    conn.executemany("INSERT INTO t (b) VALUES (randomblob(500))", [()] * 500)
    conn.commit()
    conn.close()
    done = create_backup(str(db), pages_per_step=4)
    assert done["tables"] == {"t": 500}
    assert rows(done["backupPath"], "t") == rows(db, "t")


# --- where writing fails ------------------------------------------------------------------


def _writable(directory: Path) -> bool:
    probe = directory / ".probe"
    try:
        probe.write_bytes(b"x")
    except OSError:
        return False
    probe.unlink()
    return True


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory that really refuses new files, even to root."""
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o500)
    chattr = shutil.which("chattr")
    immutable = False
    # Root ignores permission bits; the immutable attribute stops root too.
    if _writable(directory) and chattr:
        immutable = subprocess.run([chattr, "+i", str(directory)], capture_output=True).returncode == 0
    try:
        if _writable(directory):
            pytest.skip("cannot make a directory read-only here (root without chattr +i)")
        yield directory
    finally:
        if immutable and chattr:
            subprocess.run([chattr, "-i", str(directory)], check=True)
        directory.chmod(0o700)


def test_read_only_directory_is_refused(db_path: Path, read_only_dir: Path) -> None:
    raises("BACKUP_TARGET_UNWRITABLE", create_backup, str(db_path), out=str(read_only_dir / "x.bak"))
    raises("BACKUP_TARGET_UNWRITABLE", create_backup, str(db_path), out=str(read_only_dir))
    assert all_files(read_only_dir) == set()


def test_directory_that_is_a_file_or_missing_is_refused(db_path: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    error = raises("BACKUP_TARGET_UNWRITABLE", create_backup, str(db_path), out=str(plain / "x.bak"))
    assert "not a directory" in error.message
    raises("BACKUP_TARGET_UNWRITABLE", create_backup, str(db_path), out=str(tmp_path / "no" / "x.bak"))
    assert plain.read_text() == "x"


DiskUsage = namedtuple("DiskUsage", "total used free")


def test_too_little_free_space_is_refused_before_copying(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = all_files(db_path.parent)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: DiskUsage(10**9, 10**9 - 4096, 4096))
    error = raises("BACKUP_NO_SPACE", create_backup, str(db_path))
    assert error.details["freeBytes"] == 4096
    assert error.details["neededBytes"] > db_path.stat().st_size
    assert all_files(db_path.parent) == before


@pytest.fixture
def tiny_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (needs root and CAP_SYS_ADMIN)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_disk_filling_up_mid_copy_leaves_nothing(
    big_db: Path, tiny_filesystem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The free-space check passes (as if another process filled the disk after it).
    monkeypatch.setattr(shutil, "disk_usage", lambda path: DiskUsage(10**12, 0, 10**12))
    raises("BACKUP_NO_SPACE", create_backup, str(big_db), out=str(tiny_filesystem / "x.bak"))
    assert all_files(tiny_filesystem) == set()


FSIZE_LIMITED = """
import json, resource, signal, sys
from lcm_cli.engine.maintenance.backup.create import create_backup
from lcm_cli.engine.core.errors import LcmError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    create_backup(sys.argv[1], out=sys.argv[2])
    print(json.dumps({"code": None}))
except LcmError as exc:
    print(json.dumps(exc.to_dict()))
"""


def test_file_size_limit_hit_mid_copy_leaves_nothing(big_db: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    limit = 1 << 20
    assert big_db.stat().st_size > 2 * limit
    proc = run_python(FSIZE_LIMITED, str(big_db), str(out_dir / "x.bak"), str(limit))
    stdout, _ = proc.communicate(timeout=60)
    error = json.loads(stdout)
    assert error["code"] in {"BACKUP_NO_SPACE", "BACKUP_FAILED"}, error
    assert str(out_dir) in error["message"] and "ulimit" in error["message"]
    assert all_files(out_dir) == set()


# --- list and verify ----------------------------------------------------------------------


def test_list_shows_every_naming_scheme_newest_first(db_path: Path) -> None:
    first = create_backup(str(db_path))["backupPath"]
    time.sleep(0.01)
    second = create_backup(str(db_path), label="pre-restore")["backupPath"]
    directory = db_path.parent
    shutil.copyfile(first, directory / "lcm.db.rotate-latest.bak")
    shutil.copyfile(first, directory / "lcm.db.migrate-sessions-20200101T000000000Z.bak")
    shutil.copyfile(first, directory / "other.db.backup-20200101T000000000Z-abcdef.bak")
    (directory / "lcm.db.notes.txt").write_text("x")
    listed = list_backups(str(db_path))
    names = [item["name"] for item in listed]
    assert set(names) == {
        Path(first).name,
        Path(second).name,
        "lcm.db.rotate-latest.bak",
        "lcm.db.migrate-sessions-20200101T000000000Z.bak",
    }
    by_name = {item["name"]: item for item in listed}
    assert names.index(Path(second).name) < names.index(Path(first).name)
    assert names[-1] == "lcm.db.migrate-sessions-20200101T000000000Z.bak"
    migrate = by_name["lcm.db.migrate-sessions-20200101T000000000Z.bak"]
    assert (migrate["label"], migrate["kind"], migrate["createdAt"]) == (
        "migrate-sessions",
        "timestamped",
        "2020-01-01T00:00:00.000Z",
    )
    assert migrate["hasManifest"] is False and migrate["verifiedAtCreation"] is None
    assert (by_name["lcm.db.rotate-latest.bak"]["label"], by_name["lcm.db.rotate-latest.bak"]["kind"]) == (
        "rotate",
        "latest",
    )
    mine = by_name[Path(second).name]
    assert mine["label"] == "pre-restore" and mine["hasManifest"] and mine["verifiedAtCreation"]
    assert mine["sizeMatchesManifest"] is True and mine["path"] == second
    assert list_backups(str(db_path.parent / "missing-dir" / "lcm.db")) == []


def test_verify_passes_then_reports_one_flipped_byte(db_path: Path) -> None:
    path = Path(create_backup(str(db_path))["backupPath"])
    good = verify_backup(str(path))
    assert good["ok"] is True
    assert [c["name"] for c in good["checks"]] == [
        "manifest",
        "size",
        "sha256",
        "integrity",
        "pageCount",
        "rowCounts",
    ]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    bad = verify_backup(str(path))
    assert bad["ok"] is False
    failed = {c["name"]: c for c in bad["checks"] if not c["ok"]}
    assert "sha256" in failed and "size" not in failed
    assert failed["sha256"]["expected"] != failed["sha256"]["actual"]


def test_verify_reports_count_mismatch_and_missing_manifest(db_path: Path, tmp_path: Path) -> None:
    path = Path(create_backup(str(db_path))["backupPath"])
    manifest_path = Path(str(path) + ".manifest.json")
    manifest = json.loads(manifest_path.read_text())
    manifest["tables"]["messages"] += 1
    manifest_path.write_text(json.dumps(manifest))
    result = verify_backup(str(path))
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["rowCounts"]
    manifest_path.unlink()
    result = verify_backup(str(path))
    assert result["ok"] is False
    assert result["checks"][0] == {
        "name": "manifest",
        "ok": False,
        "expected": "present",
        "actual": "missing",
    }
    assert [c["name"] for c in result["checks"]] == ["manifest", "integrity"] and result["checks"][1]["ok"]
    garbage = tmp_path / "garbage.bak"
    garbage.write_bytes(b"not sqlite" * 500)
    result = verify_backup(str(garbage))
    assert result["ok"] is False and result["checks"][-1]["name"] == "integrity"
    assert not result["checks"][-1]["ok"]
    raises("BACKUP_NOT_FOUND", verify_backup, str(tmp_path / "absent.bak"))


def swap_two_indexes(path: Path) -> None:
    """Make two indexes of ``messages`` hold each other's entries (their root pages swapped).

    Every page and row is still there and readable; only ``integrity_check`` sees that an
    index disagrees with its table.
    """
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        (a, root_a), (b, root_b) = conn.execute(
            "SELECT name, rootpage FROM sqlite_master"
            " WHERE name IN ('messages_conv_seq_idx', 'messages_conv_identity_hash_idx') ORDER BY name"
        ).fetchall()
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = ?", (root_b, a))
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = ?", (root_a, b))
        conn.commit()
    finally:
        conn.close()


def test_only_the_integrity_check_catches_an_index_that_disagrees_with_its_table(db_path: Path) -> None:
    """The manifest's size and sha256 are rewritten to the damaged file's and its pages and
    rows are unchanged, so verify and restore have only the integrity check to refuse it."""
    path = Path(create_backup(str(db_path))["backupPath"])
    swap_two_indexes(path)
    manifest_path = Path(str(path) + ".manifest.json")
    manifest = json.loads(manifest_path.read_text())
    manifest["sizeBytes"] = path.stat().st_size
    manifest["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest))
    result = verify_backup(str(path))
    assert result["ok"] is False
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["integrity"]
    before = snapshot(db_path.parent)
    error = raises("BACKUP_VERIFY_FAILED", restore_backup, str(path), str(db_path), apply=True)
    assert error.details["failedChecks"] == ["integrity"]
    assert snapshot(db_path.parent) == before
    # With no manifest (a plugin-style backup) the integrity check is all there is.
    manifest_path.unlink()
    result = verify_backup(str(path))
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["manifest", "integrity"]
    before = snapshot(db_path.parent)
    error = raises("BACKUP_VERIFY_FAILED", restore_backup, str(path), str(db_path), apply=True)
    assert error.details["failedChecks"] == ["integrity"]
    assert snapshot(db_path.parent) == before


# --- restore ------------------------------------------------------------------------------


def add_messages(db: Path, count: int) -> None:
    with Store.open(db) as store:
        cid = store.create_conversation("after-backup")
        store.add_messages(cid, [{"role": "user", "content": f"later {i}"} for i in range(count)])


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def test_restore_dry_run_reports_and_changes_nothing(db_path: Path) -> None:
    path = create_backup(str(db_path))["backupPath"]
    before = snapshot(db_path.parent)
    plan = restore_backup(path, str(db_path))
    assert plan["applied"] is False and plan["restorable"] is True
    assert plan["verification"]["ok"] is True
    target = plan["target"]
    assert target["exists"] and target["isSqlite"] and target["inUse"] is False
    assert target["sizeBytes"] == db_path.stat().st_size
    assert plan["plan"]
    assert snapshot(db_path.parent) == before


def test_restore_apply_replaces_the_database_and_keeps_the_old_one(db_path: Path) -> None:
    path = create_backup(str(db_path))["backupPath"]
    add_messages(db_path, 5)
    old_messages = rows(db_path, "messages")
    done = restore_backup(path, str(db_path), apply=True)
    assert done["applied"] is True and done["forced"] is False
    assert Path(db_path).read_bytes() == Path(path).read_bytes()
    assert not Path(str(db_path) + "-wal").exists() and not Path(str(db_path) + "-shm").exists()
    assert len(rows(db_path, "messages")) == 27
    kept = done["preRestoreBackup"]
    assert kept["method"] == "online" and Path(kept["path"]).name.startswith("lcm.db.pre-restore-")
    assert verify_backup(kept["path"])["ok"] is True
    assert rows(kept["path"], "messages") == old_messages
    # The restored file is an ordinary lcm.db again: the write path opens and extends it.
    add_messages(db_path, 1)
    assert len(rows(db_path, "messages")) == 28
    assert not [n for n in all_files(db_path.parent) if n.startswith(".")]


def test_restore_to_a_new_path_and_from_a_manifestless_plugin_backup(db_path: Path, tmp_path: Path) -> None:
    plugin_style = db_path.parent / "lcm.db.backup-20200101T000000000Z-abcdef.bak"
    conn = sqlite3.connect(db_path)
    conn.execute("VACUUM INTO ?", (str(plugin_style),))
    conn.close()
    fresh = tmp_path / "fresh" / "lcm.db"
    fresh.parent.mkdir()
    done = restore_backup(str(plugin_style), str(fresh), apply=True)
    assert done["applied"] and done["preRestoreBackup"] is None
    assert done["verification"]["ok"] is False  # no manifest, reported...
    assert done["restorable"] is True  # ...but its integrity check passed
    assert rows(fresh, "messages") == rows(db_path, "messages")


def test_restore_refuses_a_tampered_backup(db_path: Path) -> None:
    path = Path(create_backup(str(db_path))["backupPath"])
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01
    path.write_bytes(bytes(data))
    before = snapshot(db_path.parent)
    error = raises("BACKUP_VERIFY_FAILED", restore_backup, str(path), str(db_path), apply=True)
    assert "sha256" in error.details["failedChecks"]
    assert snapshot(db_path.parent) == before
    raises("BACKUP_NOT_FOUND", restore_backup, str(path) + ".nope", str(db_path))
    raises("INVALID_ARGUMENT", restore_backup, str(db_path), str(db_path))
    raises("INVALID_ARGUMENT", restore_backup, str(path), str(db_path.parent))


def test_restore_over_a_non_sqlite_file_keeps_its_bytes(db_path: Path, tmp_path: Path) -> None:
    path = create_backup(str(db_path))["backupPath"]
    target = tmp_path / "broken" / "lcm.db"
    target.parent.mkdir()
    target.write_bytes(b"garbage, not a database")
    done = restore_backup(path, str(target), apply=True)
    assert done["preRestoreBackup"]["method"] == "copy"
    assert Path(done["preRestoreBackup"]["path"]).read_bytes() == b"garbage, not a database"
    assert len(rows(target, "messages")) == 27


HOLDER = """
import sys, time
from lcm_cli.engine.db.store import Store
store = Store.open(sys.argv[1])
if sys.argv[2] == "transaction":
    store.conn.execute("BEGIN IMMEDIATE")
    store.conn.execute("INSERT INTO conversations (session_id) VALUES ('uncommitted')")
print("holding", flush=True)
time.sleep(60)
"""


def test_restore_refuses_a_backup_that_changes_after_it_was_verified(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's sha256 is held to the verified file's: a backup changed between the
    verification and the copy is not swapped in."""
    from lcm_cli.engine.maintenance.backup import restore as restore_module

    path = create_backup(str(db_path))["backupPath"]
    real_copy = restore_module.copy_to_temp

    def copy_after_a_change(source: str, final: str) -> tuple[str, str]:
        data = bytearray(Path(source).read_bytes())
        data[len(data) // 2] ^= 0xFF
        Path(source).write_bytes(bytes(data))
        return real_copy(source, final)

    monkeypatch.setattr(restore_module, "copy_to_temp", copy_after_a_change)
    before = db_path.read_bytes()
    error = raises("BACKUP_FAILED", restore_backup, path, str(db_path), apply=True)
    assert "did not match the verified file" in error.message
    assert db_path.read_bytes() == before
    assert not [n for n in all_files(db_path.parent) if n.startswith(".")]


def test_restore_without_room_for_the_copy_is_refused_before_copying(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """To a new path, so no pre-restore backup (whose own space check would answer first)."""
    path = create_backup(str(db_path))["backupPath"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.setattr(shutil, "disk_usage", lambda path: DiskUsage(10**9, 10**9 - 4096, 4096))
    error = raises("BACKUP_NO_SPACE", restore_backup, path, str(fresh / "lcm.db"), apply=True)
    assert error.details["neededBytes"] > Path(path).stat().st_size
    assert all_files(fresh) == set()


def test_restore_is_refused_when_only_leaving_wal_mode_finds_the_other_process(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock probe can miss a holder (it reads fcntl locks only); leaving WAL mode, which
    SQLite refuses while another connection is open, is the last in-use check."""
    from lcm_cli.engine.maintenance.backup import restore as restore_module

    path = create_backup(str(db_path))["backupPath"]
    missed = {"inUse": False, "holderPid": None, "detection": "fcntl: no foreign lock"}
    monkeypatch.setattr(restore_module, "in_use", lambda _path: missed)
    proc = run_python(HOLDER, str(db_path), "idle")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        before = db_path.read_bytes()
        error = raises("DATABASE_IN_USE", restore_backup, path, str(db_path), apply=True)
        assert "leaving WAL mode was refused" in error.details["detection"]
        assert db_path.read_bytes() == before
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("how", ["transaction", "idle"])
def test_restore_is_refused_while_another_process_has_the_database_open(db_path: Path, how: str) -> None:
    path = create_backup(str(db_path))["backupPath"]
    proc = run_python(HOLDER, str(db_path), how)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        plan = restore_backup(path, str(db_path))
        assert plan["target"]["inUse"] is True and plan["target"]["holderPid"] == proc.pid
        before = db_path.read_bytes()
        error = raises("DATABASE_IN_USE", restore_backup, path, str(db_path), apply=True)
        assert error.details["holderPid"] == proc.pid and "--force" in error.message
        assert db_path.read_bytes() == before
        assert [i["label"] for i in list_backups(str(db_path))] == ["backup"]
        done = restore_backup(path, str(db_path), apply=True, force=True)
        assert done["applied"] is True and done["forced"] is True
        assert verify_backup(done["preRestoreBackup"]["path"])["ok"] is True
    finally:
        proc.kill()
        proc.wait()
    assert db_path.read_bytes() == Path(path).read_bytes()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert (
        conn.execute("SELECT COUNT(*) FROM conversations WHERE session_id = 'uncommitted'").fetchone()[0] == 0
    )
    conn.close()


# --- prune --------------------------------------------------------------------------------


def test_prune_keeps_the_newest_of_a_label(db_path: Path) -> None:
    made = []
    for _ in range(4):
        made.append(create_backup(str(db_path))["backupPath"])
        time.sleep(0.005)
    other = create_backup(str(db_path), label="pre-restore")["backupPath"]
    latest = db_path.parent / "lcm.db.rotate-latest.bak"
    shutil.copyfile(made[0], latest)
    deleted = prune_backups(str(db_path), 2, label="backup")
    assert sorted(deleted) == sorted(made[:2])
    for path in made[:2]:
        assert not Path(path).exists() and not Path(path + ".manifest.json").exists()
    for path in made[2:] + [other]:
        assert Path(path).exists() and Path(path + ".manifest.json").exists()
    assert prune_backups(str(db_path), 2, label="backup") == []
    assert prune_backups(str(db_path), 0) == [other, made[3], made[2]]
    assert [i["name"] for i in list_backups(str(db_path))] == ["lcm.db.rotate-latest.bak"]


# --- a writer in another process ---------------------------------------------------------

WRITER = """
import sys
from lcm_cli.engine.db.store import Store
store = Store.open(sys.argv[1])
cid = store.create_conversation("numbered")
print(cid, flush=True)
i = 0
while True:
    i += 1
    store.add_message(cid, "user", f"msg {i:07d}", parts=[{"text_content": f"part {i}"}])
"""


def count_numbered(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM messages m JOIN conversations c USING (conversation_id)"
                " WHERE c.session_id = 'numbered'"
            ).fetchone()[0]
        )
    finally:
        conn.close()


def test_backup_while_another_process_writes_is_a_consistent_prefix(big_db: Path, tmp_path: Path) -> None:
    proc = run_python(WRITER, str(big_db))
    try:
        assert proc.stdout is not None
        cid = int(proc.stdout.readline())
        deadline = time.monotonic() + 20
        while count_numbered(big_db) < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = count_numbered(big_db)
        done = create_backup(str(big_db), pages_per_step=16, sleep_ms=1)
        after = count_numbered(big_db)
    finally:
        proc.kill()
        proc.wait()
    assert after > before + 5, "the writer was blocked during the backup"
    restored = tmp_path / "restored" / "lcm.db"
    restored.parent.mkdir()
    restore_backup(done["backupPath"], str(restored), apply=True)

    conn = sqlite3.connect(restored)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')") is not None
        messages = conn.execute(
            "SELECT message_id, seq, content FROM messages WHERE conversation_id = ? ORDER BY seq", (cid,)
        ).fetchall()
        k = len(messages)
        assert before <= k <= after
        assert [(seq, content) for _, seq, content in messages] == [
            (i, f"msg {i:07d}") for i in range(1, k + 1)
        ]
        ids = [mid for mid, _, _ in messages]
        context = conn.execute(
            "SELECT message_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal", (cid,)
        ).fetchall()
        assert [m for (m,) in context] == ids
        parts = conn.execute(
            "SELECT p.text_content FROM message_parts p JOIN messages m USING (message_id)"
            " WHERE m.conversation_id = ? ORDER BY m.seq",
            (cid,),
        ).fetchall()
        assert [t for (t,) in parts] == [f"part {i}" for i in range(1, k + 1)]
        fts = conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE rowid IN (SELECT message_id FROM messages WHERE conversation_id = ?)",
            (cid,),
        ).fetchone()[0]
        assert fts == k
    finally:
        conn.close()
    # Every table of the backup is a prefix of the source's (the writer only appends).
    for table in tables_of(restored):
        # The totals are updated in place (they are checked against a recount below).
        if table in ("lcm_migration_state", "lcm_conversation_totals", "lcm_summary_totals"):
            continue
        snap, source = rows(restored, table), rows(big_db, table)
        assert snap == source[: len(snap)], table
    assert done["tables"]["messages"] == len(rows(restored, "messages"))
    check = sqlite3.connect(restored)
    try:
        assert (
            check.execute(
                "SELECT message_count, message_tokens FROM lcm_conversation_totals WHERE conversation_id = ?",
                (cid,),
            ).fetchone()
            == check.execute(
                "SELECT COUNT(*), SUM(token_count) FROM messages WHERE conversation_id = ?", (cid,)
            ).fetchone()
        )
    finally:
        check.close()


def test_frames_written_during_the_copy_are_checkpointed_after_it(big_db: Path, tmp_path: Path) -> None:
    # The copy's snapshot keeps a writer's new frames out of the database file; the backup
    # checkpoints them once it lets go, so the writer's next commit need not wait on that.
    writer = sqlite3.connect(big_db, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # here only the backup checkpoints
        writer.execute("CREATE TABLE side (n INTEGER)")
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        written: list[int] = []

        def write(done: int, total: int) -> None:
            writer.execute("INSERT INTO side VALUES (?)", (len(written),))
            written.append(done)

        create_backup(str(big_db), pages_per_step=64, progress=write)
        assert len(written) > 10
        # The database file alone, without its WAL, holds every row written meanwhile.
        alone = tmp_path / "alone.db"
        shutil.copyfile(big_db, alone)
        assert rows(alone, "side") == [(n,) for n in range(len(written))]
    finally:
        writer.close()


ROLLBACK_WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
print("ready", flush=True)
while True:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t (b) VALUES (randomblob(100))")
    conn.execute("COMMIT")
    time.sleep(0.001)
"""


def test_rollback_journal_source_that_keeps_changing_gives_up_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB)")
    conn.executemany("INSERT INTO t (b) VALUES (randomblob(2000))", [()] * 400)
    conn.commit()
    conn.close()
    proc = run_python(ROLLBACK_WRITER, str(db))
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        error = raises("BACKUP_FAILED", create_backup, str(db), pages_per_step=1, sleep_ms=2)
    finally:
        proc.kill()
        proc.wait()
    assert error.details["restarts"] > MAX_RESTARTS
    assert all_files(tmp_path) <= {"plain.db", "plain.db-journal"}


# --- SIGKILL --------------------------------------------------------------------------------

KILLED = """
import sys, time
from lcm_cli.engine.maintenance.backup.create import create_backup
print("start", flush=True)
started = time.monotonic()
create_backup(sys.argv[1], pages_per_step=32, sleep_ms=0.5)
print("done", time.monotonic() - started, flush=True)
"""


def test_sigkill_at_random_moments_leaves_no_file_or_a_verified_backup(big_db: Path) -> None:
    directory = big_db.parent

    def launch() -> subprocess.Popen[str]:
        proc = run_python(KILLED, str(big_db))
        assert proc.stdout is not None and proc.stdout.readline().strip() == "start"
        return proc

    proc = launch()
    out, _ = proc.communicate(timeout=60)
    duration = float(out.split()[1])
    rng = random.Random(11)
    outcomes = []
    for attempt in range(13):
        before = {p for p in visible_files(directory) if p.endswith(".bak")}
        proc = launch()
        if attempt < 12:  # kills spread over the whole run and past its end
            time.sleep(duration * (attempt / 8) * rng.uniform(0.8, 1.2))
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        new = {p for p in visible_files(directory) if p.endswith(".bak")} - before
        outcomes.append(len(new))
        for name in new:
            assert verify_backup(str(directory / name))["ok"] is True, name
    assert 0 in outcomes
    assert outcomes[-1] == 1, "a run after the kills did not complete"
    for name in visible_files(directory):
        assert name.startswith("lcm.db"), name
        if name.endswith(".bak"):
            assert verify_backup(str(directory / name))["ok"] is True
        elif name.endswith(".manifest.json"):
            assert json.loads((directory / name).read_text())["integrity"] == "ok"


_CRASHING_WRITER = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode = %s")
conn.execute("PRAGMA cache_size = 2")  # spill to the file mid-transaction: the journal turns hot
conn.execute("CREATE TABLE t (x TEXT)")
conn.executemany("INSERT INTO t VALUES (?)", [("kept",)] * 10)
conn.execute("BEGIN")
conn.executemany("INSERT INTO t VALUES (?)", [("lost" * 500,)] * 400)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("journal", ["DELETE", "WAL"])
def test_a_source_left_by_a_killed_writer_is_recovered_then_backed_up(tmp_path: Path, journal: str) -> None:
    """A writer SIGKILLed mid-transaction leaves recovery to do; backup does it, then copies."""
    source = tmp_path / "crashed.db"
    writer = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_WRITER % journal, str(source)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    result = create_backup(str(source), out=str(tmp_path / "copy.bak"))
    with sqlite3.connect(result["backupPath"]) as conn:
        assert conn.execute("SELECT x, COUNT(*) FROM t GROUP BY x").fetchall() == [("kept", 10)]
