"""Every writer of a user-named file goes through one check (engine/core/outputs.py).

The operations that name an output are found from their declarations (``OpSpec.outputs``),
so a new writer is tried here as soon as it is declared, and a path option that is not
declared fails the first test.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.commands.specs import DOOR_COMMANDS
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.outputs import check_output_folder, output_target, protected_files, refusal
from lcm_cli.engine.core.params import PARAMS
from lcm_cli.engine.core.registry import OPERATIONS, OpSpec
from lcm_cli.engine.summarize.prompts import SUFFIX, TEMPLATE_NAMES
from tests.conftest import lcm

ALL: dict[str, OpSpec] = {**OPERATIONS, **DOOR_COMMANDS}

# Path options that lcm only reads (or, for serve, a socket with its own rules).
INPUTS = {"file", "sessions_dir", "store", "source_file", "session_file", "host_store", "state_dir", "socket"}

# How to run each declared writer with its output option last; "{force}" is dropped when
# the case runs without --force.
RUNS: dict[str, list[str]] = {
    "summaries.graph": ["summaries", "graph", "--conversation-id", "2", "--out"],
    "export": ["export", "--conversation-id", "2", "--to", "markdown", "--out"],
    "backup.create": ["backup", "--out"],
    "prune": ["prune", "--conversation-id", "3", "--include-active", "--apply", "--out"],
    "prompts.export": ["prompts", "export", "--out"],
    "browse": ["browse", "--screenshot"],
}


def _path_options(spec: OpSpec) -> set[str]:
    metavars = dict(spec.metavars or {})
    return {
        field
        for field in spec.options
        if metavars.get(field, PARAMS[field].metavar) in ("PATH", "DIR", "FILE")
    }


def test_every_path_option_is_an_input_or_a_declared_output() -> None:
    for name, spec in ALL.items():
        undeclared = _path_options(spec) - INPUTS - set(spec.outputs or {})
        assert not undeclared, f"{name}: declare {undeclared} in OpSpec.outputs (or as an input here)"


def test_every_declared_writer_is_tried_here() -> None:
    assert {name for name, spec in ALL.items() if spec.outputs} == set(RUNS)


def test_commands_inventory_marks_outputs() -> None:
    commands = {e["command"]: e for e in lcm("commands").json["data"]["commands"]}
    graph = {o["name"]: o for o in commands["summaries graph"]["options"]}
    assert graph["--out"]["output"] == "file" and "output" not in graph["--to"]
    prompts = {o["name"]: o for o in commands["prompts export"]["options"]}
    assert prompts["--out"]["output"] == "directory"


def _digest(*paths: Path) -> list[Any]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None for p in paths]


TARGETS = [
    "db-by-another-spelling",
    "hard-link-to-db",
    "db-wal",
    "db-journal",
    "config",
    "backup-manifest",
    "new-manifest",
    "symlink",
    "symlink-to-db",
]


def _targets(state: Path, tmp: Path) -> dict[str, Path]:
    """Each forbidden target, made on disk as needed (a fresh set per case)."""
    hard = tmp / "hard.db"
    os.link(state / "lcm.db", hard)
    link = tmp / "link.out"
    link.symlink_to(tmp / "elsewhere.out")
    link_db = tmp / "link-db.out"
    link_db.symlink_to(state / "lcm.db")
    manifest = tmp / "old.bak.manifest.json"
    manifest.write_text("{}")
    return {
        "db-by-another-spelling": state / ".." / state.name / "lcm.db",
        "hard-link-to-db": hard,
        "db-wal": state / "lcm.db-wal",
        "db-journal": state / "lcm.db-journal",
        "config": state / "openclaw.json",
        "backup-manifest": manifest,
        "new-manifest": tmp / "new.bak.manifest.json",
        "symlink": link,
        "symlink-to-db": link_db,
    }


def _cases() -> list[tuple[str, str, bool]]:
    """Each writer against each target, plain and (when it has one) with --force; a folder
    writer's files have fixed template names, never a manifest's."""
    cases = []
    for name in sorted(RUNS):
        spec = ALL[name]
        folder = dict(spec.outputs or {}).popitem()[1] == "directory"
        for target in TARGETS:
            if folder and target.endswith("manifest"):
                continue
            for force in (False, True) if "force" in spec.options else (False,):
                cases.append((name, target, force))
    return cases


@pytest.mark.parametrize(
    ("name", "target", "force"),
    _cases(),
    ids=lambda v: ("force" if v else "plain") if isinstance(v, bool) else str(v),
)
def test_no_writer_touches_a_forbidden_target(
    name: str, target: str, force: bool, state_dir: Path, tmp_path: Path
) -> None:
    spec = ALL[name]
    work = tmp_path / "work"
    work.mkdir()
    targets = _targets(state_dir, work)
    watched = [state_dir / "lcm.db", state_dir / "openclaw.json", work / "elsewhere.out"]
    before = _digest(*watched)
    path = targets[target]
    kind = dict(spec.outputs or {}).popitem()[1]
    if kind == "directory":
        # Its files have fixed names: the forbidden file is planted under one of them (a
        # hard link to the database, or a symlink to the target).
        folder = tmp_path / "prompts"
        folder.mkdir()
        planted = folder / f"{TEMPLATE_NAMES[0]}{SUFFIX}"
        if target == "hard-link-to-db":
            os.link(state_dir / "lcm.db", planted)
        else:
            planted.symlink_to(path)
        path = folder
    args = ["--openclaw-dir", str(state_dir), *RUNS[name], str(path)]
    if force:
        args.append("--force")
    out = lcm(*args)
    assert out.code == 2, out.stdout or out.stderr
    assert out.error["code"] == "OUTPUT_REFUSED"
    if kind == "directory":
        assert list(folder.iterdir()) == [planted]  # no template written either
    assert _digest(*watched) == before
    assert not (state_dir / "lcm.db-journal").exists()
    wal = state_dir / "lcm.db-wal"  # SQLite's own (a reader opens one), never lcm's output
    assert not wal.exists() or wal.read_bytes()[:4] in (b"", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def test_graph_refuses_an_existing_file_unless_force(state_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "dag.mmd"
    target.write_text("old")
    run = [
        "--openclaw-dir",
        str(state_dir),
        "summaries",
        "graph",
        "--conversation-id",
        "2",
        "--out",
        str(target),
    ]
    refused = lcm(*run)
    assert refused.code == 4 and refused.error["code"] == "OUTPUT_EXISTS"
    assert target.read_text() == "old"
    done = lcm(*run, "--force")
    assert done.code == 0 and done.json["data"]["out"] == str(target)
    assert target.read_text().startswith(("graph", "flowchart"))


def test_export_and_backup_keep_their_own_exists_codes(state_dir: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep")
    base = ["--openclaw-dir", str(state_dir)]
    export = lcm(*base, "export", "--conversation-id", "2", "--to", "markdown", "--out", str(taken))
    assert export.error["code"] == "EXPORT_TARGET_EXISTS"
    backup = lcm(*base, "backup", "--out", str(taken))
    assert backup.error["code"] == "BACKUP_TARGET_EXISTS"
    assert taken.read_text() == "keep"


def test_a_missing_wal_is_known_through_a_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "lcm.db").write_bytes(b"")
    (tmp_path / "alias").symlink_to(real)
    protected = protected_files(str(real / "lcm.db"), str(tmp_path / "openclaw.json"))
    assert refusal(str(tmp_path / "alias" / "lcm.db-wal"), protected) == "database-companion"
    assert refusal(str(tmp_path / "alias" / "other.txt"), protected) is None
    assert refusal(str(tmp_path / "openclaw.json"), protected) == "config"  # before it exists


def test_the_check_runs_again_before_the_rename(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    db.write_bytes(b"db")
    protected = protected_files(str(db), "")
    target = output_target(str(tmp_path / "out.txt"), protected=protected)
    with pytest.raises(Exception) as raised, target.writer() as handle:
        handle.write(b"new")
        os.link(db, target.path)  # the path became the database meanwhile
    assert getattr(raised.value, "code", None) == "OUTPUT_REFUSED"
    assert db.read_bytes() == b"db"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_symlinks_and_other_non_regular_files_are_refused_each_for_its_reason(tmp_path: Path) -> None:
    """Two checks (either alone refuses a symlink): a link names "symlink", a FIFO or a
    folder "not-a-regular-file", and --force replaces neither."""
    db = tmp_path / "lcm.db"
    db.write_bytes(b"db")
    protected = protected_files(str(db), str(tmp_path / "openclaw.json"))
    (tmp_path / "elsewhere.txt").write_text("x")
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "elsewhere.txt")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    assert refusal(str(link), protected) == "symlink"
    assert refusal(str(fifo), protected) == refusal(str(folder), protected) == "not-a-regular-file"
    with pytest.raises(LcmError) as raised:
        output_target(str(fifo), protected=protected, force=True)
    assert raised.value.details["reason"] == "not-a-regular-file"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_existing_file_is_refused_before_any_work_unless_force(tmp_path: Path) -> None:
    """output_target refuses at once (the no-replace rename would only refuse after the work)."""
    taken = tmp_path / "taken.txt"
    taken.write_text("keep")
    with pytest.raises(LcmError) as raised:
        output_target(str(taken), protected=[])
    assert raised.value.code == "OUTPUT_EXISTS"
    assert output_target(str(taken), protected=[], force=True).path == str(taken)


def test_no_folder_is_made_at_a_database_companion_name(tmp_path: Path) -> None:
    """A folder at the -wal or -journal name (or a parent made there) keeps SQLite from
    opening the database at all."""
    db = tmp_path / "lcm.db"
    db.write_bytes(b"")
    protected = protected_files(str(db), str(tmp_path / "openclaw.json"))
    for path in (tmp_path / "lcm.db-wal", tmp_path / "lcm.db-journal" / "prompts"):
        with pytest.raises(LcmError) as raised:
            check_output_folder(str(path), protected)
        assert raised.value.code == "OUTPUT_REFUSED"
        assert raised.value.details["reason"] == "database-companion"
    check_output_folder(str(tmp_path / "prompts" / "deeper"), protected)
