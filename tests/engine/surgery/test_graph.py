"""`lcm summaries graph`: the DAG as Mermaid, dot or SVG, read-only, with a clear error
when Graphviz is missing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.engine.surgery.conftest import CONDENSED, LEAF_A, LEAF_B, run


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_mermaid_by_default_with_depth_kind_and_tokens(example: Path) -> None:
    before = _digest(example / "lcm.db")
    done = run(example, "summaries", "graph", "--session-key", "agent:main:main")
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert data["format"] == "mermaid" and data["conversationId"] == 2
    assert [(n["summaryId"], n["contextOrdinal"]) for n in data["nodes"]] == [
        (CONDENSED, 0),
        (LEAF_A, None),
        (LEAF_B, None),
    ]
    assert [(e["from"], e["to"]) for e in data["edges"]] == [(CONDENSED, LEAF_A), (CONDENSED, LEAF_B)]
    text = data["text"]
    assert text.startswith("flowchart TD\n")
    assert f'n0["{CONDENSED}<br/>condensed d1 · 35 tokens"]' in text
    assert "n0 --> n1" in text and "n0 --> n2" in text and "class n0 context" in text
    assert _digest(example / "lcm.db") == before  # read-only


def test_dot_source(example: Path) -> None:
    text = run(example, "summaries", "graph", "--conversation-id", "2", "--to", "dot").json["data"]["text"]
    assert text.startswith('digraph "conversation 2" {')
    assert f'"{CONDENSED}" [label="{CONDENSED}\\ncondensed d1 · 35 tokens", penwidth=3];' in text
    assert f'"{CONDENSED}" -> "{LEAF_A}";' in text


def test_svg_without_graphviz_says_so(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    done = run(example, "summaries", "graph", "--conversation-id", "2", "--to", "svg")
    assert done.code == 3 and done.error["code"] == "GRAPHVIZ_NOT_FOUND"
    assert "--to dot" in done.error["message"]


def test_svg_runs_dot_from_path(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in `dot` (a real program on PATH) that proves it got the dot source on stdin.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tsvg" ] || exit 9\necho "<svg>$(grep -c -- \'->\')</svg>"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = tmp_path / "dag.svg"
    done = run(example, "summaries", "graph", "--conversation-id", "2", "--to", "svg", "--out", str(out))
    assert done.code == 0, done.stderr
    assert done.json["data"]["text"] == "<svg>2</svg>\n"
    assert out.read_text() == "<svg>2</svg>\n" and done.json["data"]["out"] == str(out)


def test_bad_format_and_missing_selector(example: Path) -> None:
    bad = run(example, "summaries", "graph", "--conversation-id", "2", "--to", "png")
    assert bad.code == 2 and bad.error["code"] == "INVALID_ARGUMENT"
    assert run(example, "summaries", "graph").error["code"] == "MISSING_SELECTOR"
