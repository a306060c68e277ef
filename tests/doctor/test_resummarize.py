"""`lcm doctor apply --check summaries.markers`: broken summaries rebuilt from their sources
with the configured summarizer, bottom-up, never inheriting a neighbour's marker."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.maintenance.markers import ALL_MARKERS, contains_marker
from tests.conftest import lcm
from tests.support.chat_model import ChatModel, configured
from tests.support.doctor_seed import TRUNCATION, build_seeded, conversation


class Model(ChatModel):
    """Answers by ``mode``: ``ok`` a summary, ``marker`` one ending in a truncation marker,
    ``fail`` HTTP 500."""

    def __init__(self) -> None:
        self.mode = "ok"
        super().__init__()

    def reply(self, prompt: str) -> str | None:
        if self.mode == "fail":
            return None
        return "Rebuilt summary." if self.mode == "ok" else "Rebuilt. " + TRUNCATION


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Model]:
    with configured(Model(), monkeypatch) as server:
        yield server


def marked_neighbours(db: Path) -> dict[str, str]:
    """A conversation whose leaves are all marked and whose condensed node is marked too."""
    with Store.open(db) as store:
        c = conversation(store, "chain", key="agent:main:chain", messages=8, dag=False)
        ids = c["messages"]
        leaves = [
            store.add_leaf_summary(
                c["cid"], ids[i : i + 2], f"{TRUNCATION} leaf {i}", created_at=f"2026-07-01 09:0{i}:00"
            )
            for i in range(0, 8, 2)
        ]
        for leaf in leaves:
            store.replace_context_with_summary(c["cid"], leaf)
        top = store.add_condensed_summary(c["cid"], leaves, f"{TRUNCATION} condensed")
        store.replace_context_with_summary(c["cid"], top)
    return {"top": top, **{f"leaf{i}": leaf for i, leaf in enumerate(leaves)}}


def content(db: Path, summary_id: str) -> tuple[str, str, int]:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(
            "SELECT content, model, token_count FROM summaries WHERE summary_id = ?", (summary_id,)
        ).fetchone()
        return row[0], row[1], row[2]
    finally:
        conn.close()


def test_bottom_up_repair_with_a_real_endpoint_never_sends_a_marker(model: Model, tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    ids = marked_neighbours(db)
    dry = lcm("--db", str(db), "doctor", "apply", "--check", "summaries.markers")
    assert [u["unit"] for u in dry.json["data"]["units"]][-1] == f"summary:{ids['top']}"  # condensed last
    assert dry.json["data"]["summarizer"] == "local/test-model" and model.prompts == []
    out = lcm("--db", str(db), "doctor", "apply", "--check", "summaries.markers", "--apply")
    assert out.code == 0, out.stderr
    units = out.json["data"]["units"]
    assert [u["status"] for u in units] == ["applied"] * 5, units
    assert out.json["data"]["backup"]["backupPath"]
    assert len(model.prompts) == 5
    for prompt in model.prompts:
        assert not any(marker in prompt for marker in ALL_MARKERS), prompt
    for summary_id in ids.values():
        text, label, tokens = content(db, summary_id)
        assert text == "Rebuilt summary." and label == "test-model" and tokens == 4
    scan = {c["check"]: c for c in lcm("--db", str(db), "doctor").json["data"]["checks"]}
    assert scan["summaries.markers"]["count"] == 0 and scan["fts.summaries"]["count"] == 0
    assert scan["fts.summaries-cjk"]["count"] == 0


def test_an_answer_with_a_marker_is_refused(model: Model, tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    ids = marked_neighbours(db)
    model.mode = "marker"
    out = lcm("--db", str(db), "doctor", "apply", "--check", "summaries.markers", "--apply", "--no-backup")
    assert {u["status"] for u in out.json["data"]["units"]} == {"skipped"}
    assert {u["reason"] for u in out.json["data"]["units"]} == {"output-contains-marker"}
    assert content(db, ids["top"])[0] == f"{TRUNCATION} condensed"


def test_a_failing_summarizer_leaves_that_unit_and_the_others_stand(
    model: Model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "lcm.db"
    transcripts = tmp_path / "sessions"
    transcripts.mkdir()
    expect = build_seeded(db, transcripts)
    import lcm_cli.engine.surgery.sources as sources

    original = sources.source_text
    calls = {"n": 0}

    def flaky(*args: Any) -> str:
        calls["n"] += 1
        model.mode = "fail" if calls["n"] == 2 else "ok"
        return original(*args)

    monkeypatch.setattr(sources, "source_text", flaky)
    out = lcm("--db", str(db), "doctor", "apply", "--check", "summaries.markers", "--apply", "--no-backup")
    units = out.json["data"]["units"]
    assert [u["status"] for u in units].count("applied") == len(expect["summaries.markers"]) - 1
    failed = [u for u in units if u["status"] != "applied"]
    assert len(failed) == 1 and failed[0]["reason"] == "summarizer-gave-no-usable-text"
    remaining = {c["check"]: c for c in lcm("--db", str(db), "doctor").json["data"]["checks"]}
    assert remaining["summaries.markers"]["affected"] == [failed[0]["summaryId"]]


def test_extractive_default_repairs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LCM_SUMMARIZER", "extractive")
    db = tmp_path / "lcm.db"
    transcripts = tmp_path / "sessions"
    transcripts.mkdir()
    expect = build_seeded(db, transcripts)
    # Sources long enough that a summary is shorter than its input (else escalation falls back).
    prose = " ".join(
        f"Step {i}: the deploy of service {i % 7} failed on host {i % 5}, then passed." for i in range(60)
    )
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET content = ?", (prose,))
    conn.close()
    out = lcm("--db", str(db), "doctor", "apply", "--check", "summaries.markers", "--apply", "--no-backup")
    assert {u["status"] for u in out.json["data"]["units"]} == {"applied"}, out.json["data"]["units"]
    for summary_id in expect["summaries.markers"]:
        text, label, _ = content(db, summary_id)
        assert text.strip() and not contains_marker(text) and label == "extractive"
