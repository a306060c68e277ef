"""`lcm prompts list|show|export|diff|render` through the real `lcm` executable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lcm_cli.engine.summarize.base import SummaryRequest
from lcm_cli.engine.summarize.prompts import (
    TEMPLATE_NAMES,
    builtin_text,
    render_summary_prompt,
    template_name_for_depth,
)
from tests.conftest import Outcome, lcm_process


@pytest.fixture
def prompts_dir(tmp_path: Path) -> Path:
    return tmp_path / "prompts"


def run(prompts_dir: Path, *args: str) -> Outcome:
    env = dict(os.environ, LCM_PROMPTS_DIR=str(prompts_dir))
    return lcm_process(*args, env=env)


def test_list_shows_builtins_without_touching_a_database(prompts_dir: Path, tmp_path: Path) -> None:
    missing_db = tmp_path / "nowhere" / "lcm.db"
    out = run(prompts_dir, "prompts", "list", "--db", str(missing_db))
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["overrideDir"] == str(prompts_dir)
    assert [item["name"] for item in data["items"]] == list(TEMPLATE_NAMES)
    assert {item["source"] for item in data["items"]} == {"builtin"}
    leaf = data["items"][1]
    assert {"source_text", "target_tokens", "policy", "previous_context"} <= set(leaf["variables"])
    assert not missing_db.parent.exists()


def test_export_then_override_show_and_diff(prompts_dir: Path) -> None:
    out = run(prompts_dir, "prompts", "export")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert len(data["written"]) == 5 and data["skipped"] == []
    assert (prompts_dir / "leaf.tmpl").read_text(encoding="utf-8") == builtin_text("leaf")
    assert not [p for p in prompts_dir.iterdir() if p.name.startswith(".")]  # no temp files left

    (prompts_dir / "leaf.tmpl").write_text(
        "My leaf prompt for $target_tokens tokens.\n$source_text\n", encoding="utf-8"
    )
    again = run(prompts_dir, "prompts", "export").json["data"]
    assert again["written"] == [] and len(again["skipped"]) == 5
    assert "My leaf prompt" in (prompts_dir / "leaf.tmpl").read_text(encoding="utf-8")

    shown = run(prompts_dir, "prompts", "show", "leaf").json["data"]
    assert shown["source"] == "override" and shown["path"] == str(prompts_dir / "leaf.tmpl")
    assert shown["text"].startswith("My leaf prompt")
    listed = {i["name"]: i["source"] for i in run(prompts_dir, "prompts", "list").json["data"]["items"]}
    assert listed["leaf"] == "override"

    diff = run(prompts_dir, "prompts", "diff", "leaf").json["data"]
    assert diff["identical"] is False
    assert diff["diff"].startswith("--- builtin/leaf.tmpl\n+++ ")
    assert "+My leaf prompt for $target_tokens tokens.\n" in diff["diff"]
    same = run(prompts_dir, "prompts", "diff", "condensed-d2").json["data"]
    assert same["identical"] is True and same["diff"] == ""

    forced = run(prompts_dir, "prompts", "export", "--force").json["data"]
    assert len(forced["written"]) == 5
    assert (prompts_dir / "leaf.tmpl").read_text(encoding="utf-8") == builtin_text("leaf")


def test_export_out_and_write_failure(prompts_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    out = run(prompts_dir, "prompts", "export", "--out", str(target))
    assert out.code == 0 and out.json["data"]["dir"] == str(target)
    assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.tmpl" for n in TEMPLATE_NAMES)
    assert not prompts_dir.exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    failed = run(prompts_dir, "prompts", "export", "--out", str(blocker / "sub"))
    assert failed.code == 4
    assert failed.error["code"] == "PROMPT_WRITE_FAILED"


def test_render_with_samples_vars_and_source_file(prompts_dir: Path, tmp_path: Path) -> None:
    sample = run(prompts_dir, "prompts", "render", "leaf").json["data"]
    assert "Normal summary policy:" in sample["text"] and "<conversation_segment>" in sample["text"]
    assert "$" not in sample["text"].replace("$ ", "")
    source = tmp_path / "source.txt"
    source.write_text("Unique source line 42.", encoding="utf-8")
    out = run(
        prompts_dir,
        "prompts",
        "render",
        "leaf",
        "--var",
        "target_tokens=800",
        "--var",
        "aggressive=true",
        "--source-file",
        str(source),
    )
    data = out.json["data"]
    assert "about 800 tokens" in data["text"]
    assert "Aggressive summary policy:" in data["text"]
    assert "Unique source line 42." in data["text"]
    assert data["variables"]["target_tokens"] == "800"
    d1 = run(prompts_dir, "prompts", "render", "condensed-d1", "--var", "previous_context=").json["data"]
    assert "<previous_context>" not in d1["text"] and "no earlier summary" in d1["text"]


def test_errors(prompts_dir: Path, tmp_path: Path) -> None:
    unknown = run(prompts_dir, "prompts", "show", "nope")
    assert unknown.code == 3 and unknown.error["code"] == "PROMPT_NOT_FOUND"
    bad_var = run(prompts_dir, "prompts", "render", "leaf", "--var", "colour=blue")
    assert bad_var.code == 2 and bad_var.error["code"] == "INVALID_ARGUMENT"
    no_file = run(prompts_dir, "prompts", "render", "leaf", "--source-file", str(tmp_path / "missing.txt"))
    assert no_file.code == 2 and no_file.error["code"] == "INVALID_ARGUMENT"
    prompts_dir.mkdir()
    (prompts_dir / "system.tmpl").write_bytes(b"\xff\xfe broken")
    unreadable = run(prompts_dir, "prompts", "show", "system")
    assert unreadable.code == 4 and unreadable.error["code"] == "PROMPT_UNREADABLE"


def test_depth_selects_the_template_and_renders_sections() -> None:
    assert [template_name_for_depth(d) for d in (0, 1, 2, 3, 7)] == [
        "leaf",
        "condensed-d1",
        "condensed-d2",
        "condensed-d3",
        "condensed-d3",
    ]
    request = SummaryRequest(
        "SRC", 700, depth=0, previous_context=None, custom_instructions="Keep ticket ids."
    )
    system, user = render_summary_prompt(request, {"LCM_PROMPTS_DIR": "/nonexistent"})
    assert "untrusted" in system
    assert "Operator instructions:\nKeep ticket ids." in user
    assert "<previous_context>\n(none)\n</previous_context>" in user
    assert 'write exactly "Files: none"' in user and "Expand for details about:" in user
    _, d2 = render_summary_prompt(SummaryRequest("SRC", 900, depth=2), {"LCM_PROMPTS_DIR": "/nonexistent"})
    assert "<conversation_to_condense>\nSRC\n</conversation_to_condense>" in d2
    assert "Operator instructions:\n(none)" in d2 and "previous_context" not in d2
    _, d1 = render_summary_prompt(
        SummaryRequest("SRC", 900, depth=1, previous_context="Earlier work."),
        {"LCM_PROMPTS_DIR": "/nonexistent"},
    )
    assert "<previous_context>\nEarlier work.\n</previous_context>" in d1


def test_table_format_prints_the_whole_text(prompts_dir: Path) -> None:
    out = run(prompts_dir, "prompts", "show", "leaf", "--format", "table")
    assert out.code == 0, out.stderr
    assert out.stdout.startswith("# leaf (builtin): ")
    assert builtin_text("leaf") in out.stdout
