"""Each safety check keeps a test that fails when the check is removed.

For each row of ``MUTATIONS``: a copy of ``lcm_cli`` and ``tests`` in tmp_path, the check's
exact source text replaced by a disabled form, then the named tests run against the copy
in a subprocess; they must fail. A row whose source text is gone fails too, so a moved or
reworded check is noticed here and its row updated.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # one pytest subprocess a mutation (about a minute in all)


class Mutation(NamedTuple):
    name: str
    file: str  # under lcm_cli/
    old: str  # occurs exactly once in the file
    new: str
    tests: tuple[str, ...]  # node ids under tests/; at least one must fail


_BACKUP = "tests/engine/maintenance/test_backup.py::"
_DURABLE = "tests/engine/core/test_durable.py::"
_OUTPUTS = "tests/engine/core/test_output_paths.py::"
_PRUNE = "tests/engine/maintenance/test_prune.py::"
_FSYNC = _DURABLE + "test_the_temp_file_is_fsynced_before_the_rename_and_the_directory_after"

MUTATIONS = [
    Mutation(
        "backup verify: integrity_check",
        "engine/maintenance/backup/verify.py",
        'problems = integrity_problems(conn, "integrity_check")',
        'problems = integrity_problems(conn, "integrity_check")[:0]',
        (_BACKUP + "test_only_the_integrity_check_catches_an_index_that_disagrees_with_its_table",),
    ),
    Mutation(
        "backup create: integrity check before publishing",
        "engine/maintenance/backup/create.py",
        "            problems = integrity_problems(dst, check)\n            if problems:",
        "            problems = integrity_problems(dst, check)\n            if False:",
        (_BACKUP + "test_a_copy_failing_the_integrity_check_is_never_published",),
    ),
    Mutation(
        "backup restore: the copy's sha256 against the verified file",
        "engine/maintenance/backup/restore.py",
        'if sha256 != verification["sha256"]:',
        "if False:",
        (_BACKUP + "test_restore_refuses_a_backup_that_changes_after_it_was_verified",),
    ),
    Mutation(
        "backup restore: leaving WAL mode as the last in-use check",
        "engine/maintenance/backup/restore.py",
        "                if not force:\n                    detection",
        "                if False:\n                    detection",
        (_BACKUP + "test_restore_is_refused_when_only_leaving_wal_mode_finds_the_other_process",),
    ),
    Mutation(
        "backup restore: free space",
        "engine/maintenance/backup/restore.py",
        'check_space(directory, verification["sizeBytes"] + old_bytes + SPACE_MARGIN_BYTES)',
        "pass",
        (_BACKUP + "test_restore_without_room_for_the_copy_is_refused_before_copying",),
    ),
    Mutation(
        "atomic write: fsync of the temp file (atomic_writer)",
        "engine/core/files.py",
        "        os.fchmod(handle.fileno(), mode)\n        os.fsync(handle.fileno())",
        "        os.fchmod(handle.fileno(), mode)",
        (_FSYNC,),
    ),
    Mutation(
        "atomic write: fsync of the temp file (publish)",
        "engine/core/files.py",
        "            if sync:\n                os.fsync(fd)",
        "            if sync:\n                pass",
        (_FSYNC,),
    ),
    Mutation(
        "atomic write: fsync of the directory after the rename",
        "engine/core/files.py",
        "    if sync_directory:\n        fsync_dir(",
        "    if False:\n        fsync_dir(",
        (_FSYNC,),
    ),
    Mutation(
        "output path: symlink",
        "engine/core/outputs.py",
        "    if info is not None and stat.S_ISLNK(info.st_mode):",
        "    if False:",
        (_OUTPUTS + "test_symlinks_and_other_non_regular_files_are_refused_each_for_its_reason",),
    ),
    Mutation(
        "output path: not a regular file",
        "engine/core/outputs.py",
        "    if info is not None and not stat.S_ISREG(info.st_mode):",
        "    if False:",
        (_OUTPUTS + "test_symlinks_and_other_non_regular_files_are_refused_each_for_its_reason",),
    ),
    Mutation(
        "output path: an existing file without --force",
        "engine/core/outputs.py",
        "    if not force and os.path.lexists(target.path):",
        "    if False:",
        (_OUTPUTS + "test_an_existing_file_is_refused_before_any_work_unless_force",),
    ),
    Mutation(
        "output folder: a database companion name",
        "engine/core/outputs.py",
        '        if reason not in (None, "symlink", "not-a-regular-file"):',
        "        if False:",
        (_OUTPUTS + "test_no_folder_is_made_at_a_database_companion_name",),
    ),
    Mutation(
        "prune: verify the archive before deleting",
        "engine/maintenance/prune_ops.py",
        "        verified = prune.verify_archive(path)\n        verified_at",
        '        verified = {"ok": True}\n        verified_at',
        (_PRUNE + "test_an_archive_damaged_on_disk_is_caught_before_anything_is_deleted",),
    ),
    Mutation(
        "prune archive: row counts against the trailer",
        "engine/maintenance/prune.py",
        '    if trailer.get("rows") != counts:',
        "    if False:",
        (_PRUNE + "test_an_archive_whose_rows_disagree_with_its_trailer_counts_is_refused",),
    ),
    Mutation(
        "doctor apply: the full backup comes before the repair",
        "doctor/apply.py",
        '    if (planned or targets) and mode == "full":\n'
        '        data["backup"] = {**backup_first(ctx.database_path, "doctor-repair"), "kind": "full"}\n'
        '        data["backupKind"] = "full"\n'
        '    capture = mode == "changes" and bool(planned or targets)\n'
        '    data["units"], made = _write_units(ctx, [u for u, _ in planned], source, targets, capture=capture)\n',
        '    capture = mode == "changes" and bool(planned or targets)\n'
        '    data["units"], made = _write_units(ctx, [u for u, _ in planned], source, targets, capture=capture)\n'
        '    if (planned or targets) and mode == "full":\n'
        '        data["backup"] = {**backup_first(ctx.database_path, "doctor-repair"), "kind": "full"}\n'
        '        data["backupKind"] = "full"\n',
        (
            "tests/engine/maintenance/test_change_backup_commands.py::"
            "test_doctor_full_backup_holds_the_database_as_it_was_before_the_repair",
        ),
    ),
    Mutation(
        "serve lock file: a hard link or a FIFO",
        "engine/core/files.py",
        "        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:",
        "        if False:",
        (_DURABLE + "test_serve_lock_file_refuses_a_hard_link_or_a_non_regular_file",),
    ),
]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lcm_cli, tests and pyproject.toml (pytest's settings) copied once; each case mutates
    one file and puts it back."""
    root = tmp_path_factory.mktemp("safety") / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("lcm_cli", "tests"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def _run(copy: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_named_tests_pass_on_the_unchanged_copy(copy: Path) -> None:
    """The control: a failure below is the mutation's doing, not the copy's."""
    named = tuple(dict.fromkeys(test for mutation in MUTATIONS for test in mutation.tests))
    done = _run(copy, named)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_removing_the_check_fails_its_test(copy: Path, mutation: Mutation) -> None:
    path = copy / "lcm_cli" / mutation.file
    source = path.read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1, f"{mutation.file} no longer holds the checked text"
    path.write_text(source.replace(mutation.old, mutation.new), encoding="utf-8")
    try:
        done = _run(copy, mutation.tests)
    finally:
        path.write_text(source, encoding="utf-8")
    # 1: tests ran and failed (2-5 would be an interruption, a usage error or no test found).
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
