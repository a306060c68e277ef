"""One command over several databases (lcm_cli/engine/fleet.py), through the CLI and Python doors.

Every fleet here is real lcm.db files built through the Store (tests/support/fleet.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from tests.conftest import lcm, lcm_process
from tests.support.fleet import build_fleet
from tests.support.processes import exclusive_lock

FLEET_COMMANDS = ["status", "conversations list", "doctor", "backup list", "grep"]


@pytest.fixture(scope="module")
def fleet_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per module (the Store's durable writes cost about 0.15 s a database)."""
    folder = tmp_path_factory.mktemp("fleet-template") / "fleet"
    build_fleet(folder, 3)
    return folder


@pytest.fixture
def fleet(tmp_path: Path, fleet_template: Path) -> list[Path]:
    """Three members: agent-00, agent-01, agent-02 (00 and 02 share every moment)."""
    shutil.copytree(fleet_template, tmp_path / "fleet")
    return [tmp_path / "fleet" / f"agent-{m:02d}" / "lcm.db" for m in range(3)]


def _dbs(paths: list[Path]) -> list[str]:
    return [arg for p in paths for arg in ("--db", str(p))]


def _walk(*argv: str, limit: int, items: str = "items") -> list[dict[str, Any]]:
    """Every item of a fleet list, page by page at ``limit``, following nextCursor."""
    found: list[dict[str, Any]] = []
    cursor: list[str] = []
    for _ in range(100):
        out = lcm(*argv, "--limit", str(limit), *cursor)
        assert out.code == 0, out.stderr
        page = out.json
        assert len(page["data"][items]) <= limit
        found += page["data"][items]
        if not page["pagination"]["hasMore"]:
            assert page["pagination"]["nextCursor"] is None
            return found
        cursor = ["--cursor", page["pagination"]["nextCursor"]]
    raise AssertionError("the walk did not end")


def _order(item: dict[str, Any]) -> tuple[str, int]:
    return (item["database"], item["conversationId"])


def test_repeated_db_merges_conversations_newest_first_each_naming_its_database(fleet: list[Path]) -> None:
    out = lcm("conversations", "list", *_dbs(fleet))
    assert out.code == 0
    items = out.json["data"]["items"]
    assert len(items) == 12
    moments = [item["updatedAt"] for item in items]
    assert moments == sorted(moments, reverse=True)
    # Ties across databases (members 0 and 2 share every moment) follow the members' order.
    assert [_order(i) for i in items[:3]] == [(str(fleet[1]), 4), (str(fleet[0]), 4), (str(fleet[2]), 4)]
    members = out.json["meta"]["fleet"]["members"]
    assert [(m["database"], m["status"]) for m in members] == [(str(p), "ok") for p in fleet]
    assert out.json["meta"]["fleet"]["answered"] == 3


def test_a_glob_and_repeated_state_dirs_name_the_same_fleet(fleet: list[Path]) -> None:
    by_db = lcm("conversations", "list", *_dbs(fleet)).json["data"]["items"]
    pattern = str(fleet[0].parent.parent / "agent-*" / "lcm.db")
    by_glob = lcm("conversations", "list", "--db", pattern).json["data"]["items"]
    dirs = [arg for p in fleet for arg in ("--openclaw-dir", str(p.parent))]
    by_dir = lcm("conversations", "list", *dirs)
    assert by_dir.code == 0
    assert by_glob == by_db == by_dir.json["data"]["items"]
    assert by_dir.json["meta"]["fleet"]["members"][0]["openclawDir"] == str(fleet[0].parent)


def test_a_glob_matching_one_file_is_still_a_fleet_and_one_matching_none_is_refused(
    fleet: list[Path],
) -> None:
    one = lcm("conversations", "list", "--db", str(fleet[0].parent.parent / "agent-00*" / "lcm.db"))
    assert one.code == 0 and one.json["meta"]["fleet"]["of"] == 1
    assert {i["database"] for i in one.json["data"]["items"]} == {str(fleet[0])}
    none = lcm("conversations", "list", "--db", str(fleet[0].parent / "nothing-*.db"))
    assert none.code == 3 and none.error["code"] == "DATABASE_NOT_FOUND"


@pytest.mark.parametrize("limit", [1, 2, 5, 7])
def test_pages_of_a_fleet_concatenate_to_the_single_unpaged_answer(fleet: list[Path], limit: int) -> None:
    whole = lcm("conversations", "list", *_dbs(fleet), "--limit", "500").json["data"]["items"]
    assert _walk("conversations", "list", *_dbs(fleet), limit=limit) == whole


@pytest.mark.parametrize("sort", ["recency", "relevance"])
def test_grep_pages_of_a_fleet_concatenate_to_the_unpaged_answer(fleet: list[Path], sort: str) -> None:
    argv = ("grep", "deploy", "--all-conversations", "--mode", "full_text", "--sort", sort, *_dbs(fleet))
    whole = lcm(*argv, "--limit", "500").json["data"]["hits"]
    assert len(whole) == 12 and {h["database"] for h in whole} == {str(p) for p in fleet}
    if sort == "recency":
        moments = [h["timestamp"] for h in whole]
        assert moments == sorted(moments, reverse=True)
    else:  # scores of different databases do not compare: the members' ranks interleave
        assert [h["database"] for h in whole[:3]] == [str(p) for p in fleet]
    assert _walk(*argv, limit=3, items="hits") == whole


def test_all_streams_every_item_of_the_fleet(fleet: list[Path]) -> None:
    whole = lcm("conversations", "list", *_dbs(fleet), "--limit", "500").json["data"]["items"]
    out = lcm("conversations", "list", *_dbs(fleet), "--limit", "2", "--all")
    assert out.code == 0
    assert [json.loads(line) for line in out.stdout.splitlines()] == whole


def test_a_cursor_of_another_fleet_is_refused(fleet: list[Path]) -> None:
    page = lcm("conversations", "list", *_dbs(fleet), "--limit", "2").json
    out = lcm("conversations", "list", *_dbs(fleet[:2]), "--cursor", page["pagination"]["nextCursor"])
    assert out.code == 2 and out.error["code"] == "INVALID_CURSOR"


def test_a_missing_member_is_reported_and_the_rest_answers(fleet: list[Path], tmp_path: Path) -> None:
    gone = tmp_path / "gone" / "lcm.db"
    out = lcm("conversations", "list", *_dbs([fleet[0], gone, fleet[1]]))
    assert out.code == 0
    assert {i["database"] for i in out.json["data"]["items"]} == {str(fleet[0]), str(fleet[1])}
    members = out.json["meta"]["fleet"]["members"]
    assert members[1]["database"] == str(gone)
    assert members[1]["status"] == "missing" and members[1]["error"]["code"] == "DATABASE_NOT_FOUND"
    assert out.json["meta"]["fleet"]["answered"] == 2


def test_a_walk_with_a_missing_member_ends_and_every_page_reports_it(
    fleet: list[Path], tmp_path: Path
) -> None:
    gone = tmp_path / "gone" / "lcm.db"
    argv = ("conversations", "list", *_dbs([fleet[0], gone]))
    assert _walk(*argv, limit=3) == lcm(*argv, "--limit", "500").json["data"]["items"]
    first = lcm(*argv, "--limit", "3").json
    second = lcm(*argv, "--limit", "3", "--cursor", first["pagination"]["nextCursor"]).json
    for page in (first, second):
        members = {m["database"]: m for m in page["meta"]["fleet"]["members"]}
        assert members[str(gone)]["status"] == "missing"
        assert members[str(gone)]["error"]["code"] == "DATABASE_NOT_FOUND"
        assert [m["database"] for m in page["meta"]["fleet"]["members"]] == [str(fleet[0]), str(gone)]
        assert page["meta"]["fleet"]["of"] == 2
    assert second["pagination"] == {"limit": 3, "returned": 1, "hasMore": False, "nextCursor": None}


def test_a_locked_member_is_reported_and_the_rest_answers(
    fleet: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LCM_BUSY_TIMEOUT_MS", "200")
    with exclusive_lock(fleet[2]):
        out = lcm("status", *_dbs(fleet))
    assert out.code == 0
    members = out.json["meta"]["fleet"]["members"]
    assert [m["status"] for m in members] == ["ok", "ok", "locked"]
    assert members[2]["error"]["code"] == "DATABASE_BUSY"
    assert [m["database"] for m in out.json["data"]["members"]] == [str(fleet[0]), str(fleet[1])]


def test_when_no_member_answers_the_call_fails_with_every_member_said(tmp_path: Path) -> None:
    out = lcm("status", "--db", str(tmp_path / "a.db"), "--db", str(tmp_path / "b.db"))
    assert out.code == 3
    error = out.error
    assert error["code"] == "DATABASE_NOT_FOUND" and "No database of the fleet answered" in error["message"]
    assert [m["status"] for m in error["details"]["members"]] == ["missing", "missing"]


def test_status_gives_each_member_and_the_total(fleet: list[Path]) -> None:
    out = lcm("status", *_dbs(fleet))
    assert out.code == 0
    data = out.json["data"]
    singles = [lcm("status", "--db", str(p)).json["data"] for p in fleet]
    assert [{k: v for k, v in m.items() if k != "database"} for m in data["members"]] == singles
    total = data["total"]
    assert total["status"]["conversations"]["total"] == 12
    assert total["status"]["messages"]["count"] == sum(s["status"]["messages"]["count"] for s in singles)
    assert total["databaseSizeBytes"] == sum(s["databaseSizeBytes"] for s in singles)
    assert total["status"]["messages"]["latestAt"] == max(
        s["status"]["messages"]["latestAt"] for s in singles
    )


def test_doctor_gives_each_member_and_the_total_and_exits_as_the_worst(fleet: list[Path]) -> None:
    out = lcm("doctor", *_dbs(fleet))
    singles = [lcm("doctor", "--db", str(p)) for p in fleet]
    assert out.code == max(s.code for s in singles)
    data = out.json["data"]
    assert [m["database"] for m in data["members"]] == [str(p) for p in fleet]
    for name in ("PASS", "INFO", "WARN", "FAIL", "SKIP"):
        assert data["total"]["counts"][name] == sum(s.json["data"]["counts"][name] for s in singles)
    assert data["total"]["healthy"] == all(s.json["data"]["healthy"] for s in singles)
    paged = lcm("doctor", *_dbs(fleet), "--cursor", "x")
    assert paged.code == 2 and paged.error["code"] == "FLEET_UNSUPPORTED"


def test_backup_list_lists_the_backups_of_each_member_newest_first(fleet: list[Path]) -> None:
    for path in (fleet[0], fleet[2]):
        assert lcm("backup", "--db", str(path)).code == 0
    out = lcm("backup", "list", *_dbs(fleet))
    assert out.code == 0
    backups = out.json["data"]["backups"]
    assert sorted(b["database"] for b in backups) == sorted([str(fleet[0]), str(fleet[2])])
    moments = [b["createdAt"] for b in backups]
    assert moments == sorted(moments, reverse=True)
    assert "pagination" not in out.json


@pytest.mark.parametrize(
    "argv",
    [
        ["messages", "list", "--conversation-id", "1"],
        ["summaries", "list", "--conversation-id", "1"],
        ["backup"],
        ["serve", "--stdio"],
    ],
    ids=" ".join,
)
def test_other_commands_refuse_a_fleet_naming_those_that_accept_one(
    fleet: list[Path], argv: list[str]
) -> None:
    out = lcm(*argv, *_dbs(fleet[:2]))
    assert out.code == 2
    error = out.error
    assert error["code"] == "FLEET_UNSUPPORTED"
    assert error["details"]["fleetCommands"] == FLEET_COMMANDS
    assert all(f"`lcm {c}`" in error["message"] for c in FLEET_COMMANDS)


def test_repeated_db_and_repeated_state_dir_are_refused_together(fleet: list[Path]) -> None:
    dirs = ["--openclaw-dir", str(fleet[0].parent), "--openclaw-dir", str(fleet[1].parent)]
    out = lcm("status", "--db", str(fleet[2]), *dirs)
    assert out.code == 2 and out.error["code"] == "FLEET_UNSUPPORTED"


def test_one_db_keeps_the_one_database_answer(fleet: list[Path]) -> None:
    out = lcm("conversations", "list", "--db", str(fleet[0]))
    assert "fleet" not in out.json["meta"] and out.json["meta"]["databasePath"] == str(fleet[0])
    assert all("database" not in item for item in out.json["data"]["items"])


def test_the_python_typer_and_hook_doors_read_a_fleet_alike(fleet: list[Path]) -> None:
    from tests.commands.test_parity import lcm_typer

    cli = lcm("conversations", "list", *_dbs(fleet), "--limit", "4").json
    python = call("conversations.list", {"limit": 4}, db=[str(p) for p in fleet])
    typer = lcm_typer(*_dbs(fleet), "conversations", "list", "--limit", "4")  # click: globals first
    hook = lcm_process("hook", "conversations.list", *_dbs(fleet), input='{"limit": 4}')
    assert hook.code == 0, hook.stderr
    assert typer.code == 0, typer.stderr
    for envelope in (python, typer.json, hook.json):
        assert envelope["data"] == cli["data"]
        assert envelope["pagination"] == cli["pagination"]


def test_fields_and_table_format_keep_the_source_database(fleet: list[Path]) -> None:
    out = lcm("conversations", "list", *_dbs(fleet), "--fields", "database,conversationId", "--limit", "2")
    assert out.json["data"]["items"] == [
        {"database": str(fleet[1]), "conversationId": 4},
        {"database": str(fleet[0]), "conversationId": 4},
    ]
    table = lcm("grep", "deploy", "--all-conversations", *_dbs(fleet), "--format", "table")
    assert table.code == 0 and str(fleet[2]) in table.stdout


@pytest.mark.parametrize(
    "cursor", ["x", "eyJ2IjoxfQ", "eyJ2IjoxLCJyZXNvdXJjZSI6ImZsZWV0IiwibWVtYmVycyI6W119"]
)
def test_a_crafted_fleet_cursor_is_refused(fleet: list[Path], cursor: str) -> None:
    out = lcm("grep", "deploy", "--all-conversations", *_dbs(fleet), "--cursor", cursor)
    assert out.code == 2 and out.error["code"] == "INVALID_CURSOR"


@pytest.mark.parametrize("output", ["csv", "tsv-plain", "ndjson", "tsv"])
def test_row_formats_lead_with_the_source_database(fleet: list[Path], output: str) -> None:
    out = lcm("conversations", "list", *_dbs(fleet), "--format", output, "--limit", "2")
    assert out.code == 0
    if output == "ndjson":
        assert json.loads(out.stdout.splitlines()[0])["database"] == str(fleet[1])
    else:
        lines = out.stdout.splitlines()
        header = next(line for line in lines if line.startswith("database"))
        assert str(fleet[1]) in lines[lines.index(header) + 1]
