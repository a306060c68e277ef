"""Every write command takes a change backup by default, sized by what it changed, and
`lcm backup restore FILE --apply` brings every table back to exactly what it was; the
user's `--backup` choice is kept. Real SQLite files with 20,000 rows no command touches;
every command through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, lcm
from tests.support.changes import add_bulk, change_backups, dump, log_rows, totals_agree
from tests.support.doctor_seed import build_seeded, write_config
from tests.support.rotation import SESSION_KEY, seed_session
from tests.support.transcripts import append_lines, write_transcript

EXAMPLE = REPO / "examples" / "openclaw"
CONDENSED = "sum_2c3d4e5f60718293"  # the example's condensed summary (conversation 2)
LEAF_A = "sum_0a1b2c3d4e5f6071"
#: A change backup of a job this size is far below the file (a full copy's size).
SMALL = 1 / 50


def _ok(out: Any) -> dict[str, Any]:
    assert out.code == 0, out.stderr or out.stdout
    data: dict[str, Any] = out.json["data"]
    return data


def _fts_findings(*args: str) -> set[tuple[str, Any]]:
    """What `lcm doctor --check fts` finds: (check, id) pairs."""
    out = lcm(*args, "doctor", "--check", "fts", "--fail-on", "none")
    checks = _ok(out)["checks"]
    return {(c["check"], a) for c in checks for a in c.get("affected", [])}


def _undo(path: str, *args: str) -> dict[str, Any]:
    """Dry run, then apply, the restore of change backup ``path``; the applied result."""
    dry = _ok(lcm(*args, "backup", "restore", path))
    assert dry["kind"] == "changes" and dry["applied"] is False and dry["conflictCount"] == 0
    done = _ok(lcm(*args, "backup", "restore", path, "--apply"))
    assert done["applied"] is True and done["conflictCount"] == 0
    assert done["preRestoreBackup"]["backupPath"].endswith(".changes.jsonl.gz")
    return done


def _small(path: str, db: Path) -> None:
    size = Path(path).stat().st_size
    assert size < db.stat().st_size * SMALL, (size, db.stat().st_size)


# --- doctor clean, doctor apply -----------------------------------------------------------


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeded")
    (root / "t").mkdir()
    build_seeded(root / "lcm.db", root / "t")
    add_bulk(root / "lcm.db")
    return root


@pytest.fixture
def seeded(seeded_template: Path, tmp_path: Path) -> tuple[list[str], Path]:
    root = tmp_path / "seeded"
    shutil.copytree(seeded_template, root)
    db = root / "lcm.db"
    return ["--db", str(db), "--config", str(write_config(root, db, ["main", "work"]))], db


def test_doctor_clean_keeps_the_deleted_rows_and_restore_puts_every_one_back(
    seeded: tuple[list[str], Path],
) -> None:
    args, db = seeded
    before = dump(db)
    fts = _fts_findings(*args)
    data = _ok(lcm(*args, "doctor", "clean", "--apply"))
    assert data["backupKind"] == "changes" and data["deletedConversations"] == 4
    backup = data["backup"]
    assert backup["kind"] == "changes" and ".doctor-cleaners-" in backup["backupPath"]
    assert backup["tables"]["conversations"]["delete"] == 4 and backup["rows"] >= data["deletedMessages"]
    _small(backup["backupPath"], db)
    assert not list(db.parent.glob("*.bak")) and log_rows(db) == 0
    _undo(backup["backupPath"], *args)
    assert dump(db) == before and totals_agree(db)
    assert _fts_findings(*args) == fts  # what was seeded, and nothing more


def test_doctor_apply_keeps_the_changed_rows_and_restore_undoes_every_repair(
    seeded: tuple[list[str], Path],
) -> None:
    args, db = seeded
    before = dump(db)
    data = _ok(lcm(*args, "doctor", "apply", "--apply"))
    assert data["backupKind"] == "changes"
    backup = data["backup"]
    assert ".doctor-repair-" in backup["backupPath"] and backup["rows"] > 0
    assert {"context_items", "summaries", "conversation_compaction_maintenance"} <= set(backup["tables"])
    _small(backup["backupPath"], db)
    assert dump(db) != before
    _undo(backup["backupPath"], *args)
    assert dump(db) == before and totals_agree(db)
    # The full-text rows are derived: the repaired ones stay repaired, none goes stale.
    assert _fts_findings(*args) == set()


def test_doctor_full_and_none_are_kept(seeded: tuple[list[str], Path]) -> None:
    args, db = seeded
    full = _ok(lcm(*args, "doctor", "apply", "--check", "context", "--apply", "--backup", "full"))
    assert full["backupKind"] == "full" and full["backup"]["backupPath"].endswith(".bak")
    assert _ok(lcm(*args, "backup", "verify", full["backup"]["backupPath"]))["ok"] is True
    none = _ok(lcm(*args, "doctor", "clean", "--class", "cron_sessions", "--apply", "--no-backup"))
    assert none["backup"] is None and none["backupKind"] is None and none["deletedConversations"] == 2
    other = _ok(lcm(*args, "doctor", "clean", "--apply", "--backup", "none"))
    assert other["backup"] is None and other["deletedConversations"] == 2
    assert change_backups(db.parent) == []
    clash = lcm(*args, "doctor", "clean", "--apply", "--no-backup", "--backup", "full")
    assert clash.code == 2 and clash.error["code"] == "INVALID_ARGUMENT"
    latest = lcm(*args, "doctor", "clean", "--apply", "--backup", "latest")
    assert latest.code == 2 and latest.error["code"] == "INVALID_ARGUMENT"


def test_doctor_full_backup_holds_the_database_as_it_was_before_the_repair(
    seeded: tuple[list[str], Path],
) -> None:
    args, db = seeded
    before = dump(db)
    full = _ok(lcm(*args, "doctor", "apply", "--check", "context", "--apply", "--backup", "full"))
    assert dump(db) != before
    assert dump(Path(full["backup"]["backupPath"])) == before


def test_a_planned_schema_migration_takes_a_full_copy(tmp_path: Path) -> None:
    from tests.support.legacy_schema import make_legacy_db

    db = tmp_path / "old.db"
    make_legacy_db(db, "0.9")  # lcm's own migrations are pending: a schema change, not rows
    data = _ok(lcm("--db", str(db), "doctor", "apply", "--check", "storage.schema-version", "--apply"))
    assert data["backupKind"] == "full" and data["backupNote"]
    assert data["backup"]["backupPath"].endswith(".bak") and change_backups(tmp_path) == []


# --- rotate -------------------------------------------------------------------------------


def test_rotate_keeps_what_it_wrote_to_lcm_db_and_restore_undoes_it(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=60, summarize=False)
    add_bulk(session.db)
    parent = json.loads(session.transcript.read_text().splitlines()[-1])["id"]
    unseen = []
    for i in range(6):  # turns the host appended since the last bootstrap: the reconcile imports them
        unseen.append(
            {
                "type": "message",
                "id": f"late-{i}",
                "parentId": parent,
                "message": {"role": ("user", "assistant")[i % 2], "content": f"late turn {i}"},
            }
        )
        parent = unseen[-1]["id"]
    append_lines(session.transcript, unseen)
    before = dump(session.db)
    old_transcript = session.transcript.read_bytes()
    args = ["--openclaw-dir", str(session.root)]
    data = _ok(lcm(*args, "rotate", "--session-key", SESSION_KEY, "--apply"))
    backup = data["backup"]
    assert backup["mode"] == "changes" and backup["rows"] > 0 and data["reconcile"]["importedMessages"] > 0
    assert data["compaction"]["passes"]  # leaf summaries written: in the backup too
    _small(backup["path"], session.db)
    assert not list(session.root.glob("lcm.db.*.bak"))
    kept = Path(data["transcript"]["oldTranscriptPath"])
    assert kept.read_bytes() == old_transcript  # the old transcript, kept as today
    _undo(backup["path"], *args)
    assert dump(session.db) == before and totals_agree(session.db)
    assert _fts_findings(*args) == set()


def test_rotate_backup_choices(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=40)
    args = ["--openclaw-dir", str(session.root), "rotate", "--session-key", SESSION_KEY, "--apply"]
    full = _ok(lcm(*args, "--backup", "full"))["backup"]
    assert full["mode"] == "full" and full["path"].endswith(".bak")
    latest = _ok(lcm(*args, "--backup", "latest"))["backup"]
    assert latest == {"mode": "latest", "path": str(session.root / "lcm.db.rotate-latest.bak")}
    assert _ok(lcm(*args, "--backup", "none"))["backup"] == {"mode": "none", "path": None}
    assert change_backups(session.root) == []


# --- migrate-sessions ---------------------------------------------------------------------


def _sessions(root: Path, count: int, first: int = 0) -> None:
    for index in range(first, first + count):
        write_transcript(
            root / "agents" / "main" / "sessions" / f"m{index}.jsonl",
            session_id=f"m{index}",
            messages=30,
            seed=index,
        )


def test_migrate_sessions_keeps_the_added_rows_and_restore_removes_them(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    db = root / "lcm.db"
    add_bulk(db)
    _sessions(root, 3)
    before = dump(db)
    args = ["--openclaw-dir", str(root)]
    data = _ok(lcm(*args, "migrate-sessions", "--apply"))
    assert data["importedMessages"] > 0 and data["backupKind"] == "changes"
    assert ".migrate-sessions-" in data["backupPath"] and data["backupSkippedReason"] is None
    _small(data["backupPath"], db)
    _undo(data["backupPath"], *args)
    assert dump(db) == before and totals_agree(db)
    assert _fts_findings(*args) == set()
    # The files import again (nothing of them is left), and --backup full still copies.
    again = _ok(lcm(*args, "migrate-sessions", "--apply", "--backup", "full"))
    assert again["backupKind"] == "full" and again["backupPath"].endswith(".bak")
    assert again["importedMessages"] == data["importedMessages"]
    _sessions(root, 1, first=3)
    none = _ok(lcm(*args, "migrate-sessions", "--apply", "--backup", "none"))
    assert none["backupPath"] is None and none["backupSkippedReason"] == "not-requested"


# --- summary surgery ----------------------------------------------------------------------


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, root)
    add_bulk(root / "lcm.db")
    return root


@pytest.mark.parametrize(
    ("command", "label"),
    [
        (("summaries", "rewrite", "--summary-id", LEAF_A, "--cascade"), "summaries-rewrite"),
        (("summaries", "dissolve", CONDENSED, "--purge"), "summaries-dissolve"),
        (("summaries", "transplant", "--from", "2", "--to", "3"), "summaries-transplant"),
    ],
)
def test_surgery_keeps_its_rows_and_restore_undoes_it(
    example: Path, command: tuple[str, ...], label: str
) -> None:
    db = example / "lcm.db"
    args = ["--openclaw-dir", str(example)]
    before = dump(db)
    data = _ok(lcm(*args, *command, "--apply"))
    assert data["applied"] is True and data["backupKind"] == "changes"
    assert f".{label}-" in data["backupPath"] and data["backupPath"].endswith(".changes.jsonl.gz")
    _small(data["backupPath"], db)
    assert dump(db) != before
    _undo(data["backupPath"], *args)
    assert dump(db) == before and totals_agree(db)
    assert _fts_findings(*args) == set()


def test_surgery_backup_full_and_none(example: Path) -> None:
    args = ["--openclaw-dir", str(example)]
    full = _ok(lcm(*args, "summaries", "dissolve", CONDENSED, "--apply", "--backup", "full"))
    assert full["backupKind"] == "full" and full["backupPath"].endswith(".bak")
    assert _ok(lcm(*args, "backup", "verify", full["backupPath"]))["ok"] is True
    none = _ok(
        lcm(*args, "summaries", "transplant", "--from", "2", "--to", "3", "--apply", "--backup", "none")
    )
    assert none["backupPath"] is None and none["backupKind"] is None
    assert change_backups(example) == []
