"""`lcm doctor` (the scan): each check finds exactly its seeded cases and nothing else."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.doctor.checks import CHECKS
from lcm_cli.engine.core.exit_codes import FINDINGS_EXIT_STATUS
from lcm_cli.engine.maintenance.markers import classify
from tests.conftest import REPO, lcm, lcm_process
from tests.support.doctor_seed import DIRECTIVE, TRUNCATION, build_healthy, build_seeded, write_config


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[list[str], dict[str, set[Any]], Path]:
    db = tmp_path / "lcm.db"
    transcripts = tmp_path / "sessions"
    transcripts.mkdir()
    expect = build_seeded(db, transcripts)
    config = write_config(tmp_path, db, ["main", "work"])
    return ["--db", str(db), "--config", str(config)], expect, db


def checks_of(out: Any) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in out.json["data"]["checks"]}


def test_healthy_database_passes_every_check_and_exits_0(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    build_healthy(db)
    out = lcm("--db", str(db), "doctor", "--fail-on", "info")
    assert out.code == 0, out.stdout
    data = out.json["data"]
    assert data["healthy"] is True and data["exitStatus"] == 0
    assert {c["status"] for c in data["checks"]} == {"PASS"}, [
        (c["check"], c["affected"]) for c in data["checks"] if c["status"] != "PASS"
    ]
    assert [c["check"] for c in data["checks"]] == [c.id for c in CHECKS]


def test_each_check_finds_exactly_its_cases(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, expect, _ = seeded
    out = lcm(*args, "doctor", "--limit", "500")
    assert out.code == FINDINGS_EXIT_STATUS
    found = checks_of(out)
    for check in CHECKS:
        entry = found[check.id]
        if entry["status"] == "SKIP":
            assert check.id not in expect, check.id
            continue
        assert set(entry["affected"]) == expect.get(check.id, set()), check.id
        assert entry["count"] == len(expect.get(check.id, set())), check.id
        if entry["count"]:
            assert entry["status"] == {"info": "INFO", "warn": "WARN", "error": "FAIL"}[check.severity]
            assert entry["fix"] or entry["advice"], check.id
        else:
            assert entry["status"] == "PASS" and entry["fix"] is None


def test_marker_kinds_are_reported(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, _ = seeded
    entry = checks_of(lcm(*args, "doctor", "--check", "summaries.markers"))["summaries.markers"]
    assert entry["details"]["byKind"] == {"fallback": 1, "oldMarker": 1, "truncatedMarker": 1, "emergency": 1}
    assert sorted(entry["notes"].values()) == ["emergency", "fallback", "new", "old"]


@pytest.mark.parametrize(
    ("content", "model", "kind"),
    [
        (DIRECTIVE + " x", None, "fallback"),
        (TRUNCATION + " x" * 100, None, "old"),
        ("body " + DIRECTIVE, None, "fallback"),
        ("body [Truncated from 900 tokens]", None, "new"),
        ("[Truncated from " + "x" * 60, None, None),
        ("x" * 10 + TRUNCATION, None, "fallback"),
        ("x" * 10 + TRUNCATION + "y" * 30, None, None),
        ("anything", " emergency-fallback ", "emergency"),
        ("a [Truncated for context management] b", "unknown", "emergency"),
        ("a [Truncated for context management] b", "gpt", None),
        ("healthy text", "unknown", None),
    ],
)
def test_classification_rules_in_order(content: str, model: str | None, kind: str | None) -> None:
    assert classify(content, model) == kind


def test_agent_ids_come_from_config_and_cover_every_agent(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, _, db = seeded
    with_config = checks_of(lcm(*args, "doctor", "--check", "junk"))
    assert with_config["junk.archived-subagents"]["details"]["agentIds"] == ["main", "work"]
    # Without a config: every agent id seen in the data, not just `main`.
    bare = checks_of(
        lcm("--db", str(db), "--openclaw-dir", str(db.parent / "none"), "doctor", "--check", "junk")
    )
    assert bare["junk.archived-subagents"]["details"]["agentIds"] == ["main", "other", "work"]
    assert bare["junk.archived-subagents"]["count"] == 2


def test_check_selection_families_and_unknown_ids(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, _, _ = seeded
    out = lcm(*args, "doctor", "--check", "fts", "--check", "dag.cycles")
    assert [c["check"] for c in out.json["data"]["checks"]] == [
        "dag.cycles",
        "fts.messages",
        "fts.summaries",
        "fts.summaries-cjk",
    ]
    bad = lcm(*args, "doctor", "--check", "nope")
    assert bad.code == 2 and bad.error["code"] == "INVALID_ARGUMENT"
    assert "fts.messages" in bad.error["details"]["known"]


def test_fail_on_thresholds(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, _ = seeded
    assert lcm(*args, "doctor", "--check", "junk", "--fail-on", "warn").code == 0  # info findings only
    assert lcm(*args, "doctor", "--check", "junk", "--fail-on", "info").code == FINDINGS_EXIT_STATUS
    assert lcm(*args, "doctor", "--check", "fts", "--fail-on", "error").code == 0
    assert lcm(*args, "doctor", "--check", "fts").code == FINDINGS_EXIT_STATUS
    assert lcm(*args, "doctor", "--fail-on", "none").code == 0
    bad = lcm(*args, "doctor", "--fail-on", "loud")
    assert bad.code == 2 and bad.error["code"] == "INVALID_ARGUMENT"


def test_exit_status_from_a_real_process_with_report_on_stdout(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, _, _ = seeded
    out = lcm_process(*args, "doctor", "--check", "context")
    assert out.code == FINDINGS_EXIT_STATUS
    assert json.loads(out.stdout)["data"]["counts"]["FAIL"] == 2
    assert out.stderr == ""


def test_affected_ids_are_bounded_with_a_cursor(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, expect, _ = seeded
    seen: list[Any] = []
    out = lcm(*args, "doctor", "--check", "summaries.markers", "--limit", "1")
    while True:
        entry = checks_of(out)["summaries.markers"]
        assert len(entry["affected"]) <= 1
        seen += entry["affected"]
        assert "nextCursor" not in entry  # one continuation: the envelope's pagination
        if not out.json["pagination"]["hasMore"]:
            break
        out = lcm(*args, "doctor", "--cursor", out.json["pagination"]["nextCursor"], "--limit", "1")
        assert [c["check"] for c in out.json["data"]["checks"]] == ["summaries.markers"]
    assert seen == sorted(expect["summaries.markers"])
    bad = lcm(*args, "doctor", "--cursor", "garbage")
    assert bad.error["code"] == "INVALID_CURSOR"


def test_selectors_narrow_the_scan(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, expect, db = seeded
    conn = sqlite3.connect(db)
    dupes = conn.execute(
        "SELECT conversation_id FROM conversations WHERE session_key = 'agent:main:dupes'"
    ).fetchone()[0]
    conn.close()
    out = lcm(*args, "doctor", "--session-key", "agent:main:dupes")
    data = out.json["data"]
    assert data["scope"]["conversationIds"] == [dupes]
    found = checks_of(out)
    assert set(found["context.duplicates"]["affected"]) == expect["context.duplicates"]
    assert found["context.dangling"]["count"] == 0 and found["summaries.markers"]["count"] == 0
    assert found["storage.quick-check"]["status"] == "SKIP"
    assert found["context.duplicates"]["fix"].endswith('--session-key "agent:main:dupes"')
    # --recency: everything was written within the last 2 months; 1s matches nothing
    assert lcm(*args, "doctor", "--recency", "1s").json["data"]["scope"]["conversationIds"] == []
    conflict = lcm(*args, "doctor", "--conversation-id", "1", "--session-key", "k")
    assert conflict.error["code"] == "INVALID_SELECTOR"
    missing = lcm(*args, "doctor", "--conversation-id", "9999")
    assert missing.error["code"] == "CONVERSATION_NOT_FOUND"


def test_table_format_is_a_checklist(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, _ = seeded
    out = lcm(*args, "--format", "table", "doctor", "--check", "context")
    assert out.code == FINDINGS_EXIT_STATUS
    assert "FAIL" in out.stdout and "context.dangling" in out.stdout
    assert "lcm doctor apply --check context.dangling --apply" in out.stdout


def test_scan_is_read_only(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, db = seeded
    before = db.read_bytes()
    lcm(*args, "doctor")
    assert db.read_bytes() == before


def test_newer_schema_and_pending_migrations(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    build_healthy(db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO lcm_migration_state (step_name, algorithm_version) VALUES ('lcm_cli.m999_from_the_future', 1)"
        )
    conn.close()
    entry = checks_of(lcm("--db", str(db), "doctor", "--check", "storage.schema-version"))[
        "storage.schema-version"
    ]
    assert entry["status"] == "WARN" and entry["details"]["newer"] is True
    assert entry["notes"] == {"m999_from_the_future": "unknown (written by a newer lcm)"}


def test_control_contract_doctor_is_count_only(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, _ = seeded
    out = lcm(*args, "control", "--operation", "doctor", "--session-key", "agent:main:markers")
    assert out.json["data"] == {
        "operation": "doctor",
        "ok": False,
        "warnings": [
            "4 summaries were written by a fallback path and need repair",
            "1 old-marker summaries",
            "1 truncated-marker summaries",
            "1 fallback-marker summaries",
            "1 emergency-fallback summaries",
        ],
    }
    assert out.json["meta"] == {}
    healthy = lcm(*args, "control", "--operation", "doctor", "--session-key", "agent:main:main")
    assert healthy.json["data"] == {"operation": "doctor", "ok": True, "warnings": []}
    nobody = lcm(*args, "control", "--operation", "doctor", "--session-key", "agent:none")
    assert nobody.json["data"]["warnings"] == ["current conversation unavailable"]


def test_every_check_is_documented_with_its_id_and_fix() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text(encoding="utf-8")
    for check in CHECKS:
        row = next((line for line in text.splitlines() if line.startswith(f"| `{check.id}` |")), None)
        assert row is not None, f"docs/doctor.md has no row for {check.id}"
        assert f"| {check.severity} |" in row, check.id
        if check.fix:
            assert check.fix.split(" --apply")[0] in row, check.id


@pytest.mark.parametrize("era", ["0.1", "0.5", "0.9"])
def test_older_databases_scan_without_crashing(tmp_path: Path, era: str) -> None:
    from tests.support.legacy_schema import make_legacy_db

    db = tmp_path / "old.db"
    make_legacy_db(db, era)
    before = db.read_bytes()
    out = lcm("--db", str(db), "doctor", "--fail-on", "none")
    assert out.code == 0, out.stderr
    statuses = {c["check"]: c["status"] for c in out.json["data"]["checks"]}
    assert statuses["storage.quick-check"] == "PASS"
    assert statuses["storage.schema-version"] == "WARN"  # lcm's own migrations are pending
    assert db.read_bytes() == before
    dry = lcm("--db", str(db), "doctor", "apply")
    assert dry.code == 0, dry.stderr


@pytest.mark.parametrize("fail_on", ["info", "warn", "error", "none"])
def test_healthy_is_the_exit_status_verdict(
    seeded: tuple[list[str], dict[str, set[Any]], Path], fail_on: str
) -> None:
    """Issue 28: `healthy` never contradicts the exit status, at every --fail-on."""
    args, _, _ = seeded
    out = lcm(*args, "doctor", "--fail-on", fail_on)
    data = out.json["data"]
    assert out.code == data["exitStatus"]
    assert data["healthy"] is (out.code == 0)
    assert data["status"] == "FAIL"  # the worst finding is reported whatever --fail-on says
    assert out.code == (0 if fail_on == "none" else FINDINGS_EXIT_STATUS)


def test_an_info_finding_leaves_the_example_healthy_and_names_no_deletion(tmp_path: Path) -> None:
    """The bundled example's cron session is information: healthy, exit 0, and no fix."""
    example = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", example)
    out = lcm("--openclaw-dir", str(example), "doctor")
    assert out.code == 0
    data = out.json["data"]
    assert data["healthy"] is True and data["status"] == "INFO"
    cron = checks_of(out)["junk.cron-sessions"]
    assert cron["status"] == "INFO" and cron["fix"] is None and "destructive" not in cron
    assert "Optional clean-up" in cron["advice"] and "ask the user first" in cron["advice"]


def test_fixes_that_delete_or_rewrite_history_are_marked_and_never_an_info_fix() -> None:
    deleting = ("lcm prune", "lcm doctor clean")
    rewriting = {"summaries.markers", "storage.undecodable-text"}
    for check in CHECKS:
        if check.fix is None:
            assert not check.destructive, check.id
            continue
        assert check.destructive == (check.fix.startswith(deleting) or check.id in rewriting), check.id
        if check.severity == "info":
            assert not check.destructive, f"{check.id}: an info finding's fix deletes"


def test_a_destructive_fix_says_so_in_the_report(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, _ = seeded
    found = checks_of(lcm(*args, "doctor", "--limit", "500"))
    markers = found["summaries.markers"]
    assert markers["fix"] and markers["destructive"] is True
    fts = found["fts.messages"]
    assert fts["fix"] and fts["destructive"] is False


def test_findings_only_lists_what_was_found_and_counts_everything(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, _, _ = seeded
    full = lcm(*args, "doctor", "--limit", "500").json["data"]
    only = lcm(*args, "doctor", "--limit", "500", "--findings-only").json["data"]
    assert only["counts"] == full["counts"] and only["healthy"] == full["healthy"]
    assert [c["check"] for c in only["checks"]] == [
        c["check"] for c in full["checks"] if c["status"] in ("INFO", "WARN", "FAIL")
    ]
