"""Nothing prints without bound: `--max-tokens` on the operations whose output grows with the data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lcm_cli.engine.api import answer_tokens
from tests.conftest import REPO, lcm


@pytest.fixture
def home(tmp_path: Path) -> Path:
    target = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", target)
    return target


def test_graph_keeps_the_top_of_the_dag_that_fits(home: Path) -> None:
    base = ("--openclaw-dir", str(home), "summaries", "graph", "--conversation-id", "2")
    whole = lcm(*base).json["data"]
    assert {n["depth"] for n in whole["nodes"]} == {0, 1} and "truncated" not in whole
    cut = lcm(*base, "--max-tokens", "80")
    data = cut.json["data"]
    assert [n["depth"] for n in data["nodes"]] == [1] and data["edges"] == []
    assert data["truncated"]["minDepth"] == 1 and data["truncated"]["of"] == len(whole["nodes"])
    assert "d0" not in data["text"] and "d1" in data["text"]  # the picture shows what the data holds
    assert lcm(*base, "--max-tokens", "100000").json["data"] == whole
    top = lcm(*base, "--min-depth", "1").json["data"]
    assert [n["depth"] for n in top["nodes"]] == [1] and top["truncated"] == {
        "minDepth": 1,
        "nodes": 1,
        "of": 3,
    }


def test_doctor_cuts_its_checks_and_says_how_to_read_the_rest(home: Path) -> None:
    out = lcm("--openclaw-dir", str(home), "doctor", "--max-tokens", "300")
    assert out.code in (0, 6), out.stderr
    envelope = out.json
    cut = envelope["data"]["truncated"]
    assert answer_tokens(envelope) <= 300
    assert cut["list"] == "checks" and 0 < cut["kept"] == len(envelope["data"]["checks"]) < cut["of"]
    # The page was cut short: no cursor may skip what was left out.
    assert envelope["pagination"]["nextCursor"] is None and envelope["pagination"]["hasMore"] is True
    assert f"--limit {cut['kept']}" in cut["hint"]
    whole = lcm("--openclaw-dir", str(home), "doctor").json["data"]["checks"]
    assert [c["check"] for c in envelope["data"]["checks"]] == [c["check"] for c in whole[: cut["kept"]]]


def test_context_show_keeps_the_newest_messages_and_the_whole_size(home: Path) -> None:
    base = ("--openclaw-dir", str(home), "context", "show", "--conversation-id", "2")
    whole = lcm(*base).json["data"]
    cut = lcm(*base, "--max-tokens", "350").json
    data = cut["data"]
    assert answer_tokens(cut) <= 350
    assert data["messages"] == whole["messages"][-len(data["messages"]) :]
    assert data["estimatedTokens"] == whole["estimatedTokens"]
    assert data["truncated"]["of"] == len(whole["messages"]) > data["truncated"]["kept"]
