"""The generic table renderer draws whatever a hint declares, for a command it has never seen."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from lcm_cli.engine.core.registry import OPERATIONS, OpSpec
from lcm_cli.engine.core.render_hints import (
    Branch,
    Fold,
    Render,
    Rows,
    Sections,
    Text,
    Transcript,
    Tree,
)
from lcm_cli.engine.core.tokens import serialized_tokens
from lcm_cli.render.output import Output
from lcm_cli.render.table import render_rich

COMMAND = "zz.widgets"  # no such operation: the renderer must not care


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")


def draw(data: Any, hint: Render | None = None, **envelope: Any) -> str:
    stream = io.StringIO()
    render_rich({"ok": True, "command": COMMAND, "data": data, **envelope}, stream, hint)
    return stream.getvalue()


def header_cells(text: str) -> list[str]:
    """The header row of the first list table (the line after the top border ┏…┓)."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    return [cell.strip() for cell in lines[top + 1].strip("┃").split("┃")]


WIDGETS = [
    {"sprocket": "s-1", "colour": "red", "teeth": 12, "blurb": "x", "content": "long body"},
    {"sprocket": "s-2", "colour": "blue", "teeth": 9, "blurb": "y", "content": "long body"},
]


def test_headline_columns_come_from_the_hint_in_its_order() -> None:
    hint = Render(rows=(Rows("gear", ("gear",)), Rows("sprocket", ("teeth", "missing", "sprocket"))))
    out = draw({"widgets": WIDGETS}, hint)
    assert header_cells(out) == ["teeth", "sprocket"]
    assert f"{COMMAND} widgets" in out and "s-2" in out and "red" not in out


def test_without_a_matching_layout_every_field_but_the_hidden_ones_shows() -> None:
    out = draw({"widgets": WIDGETS}, Render(rows=(Rows("gear", ("gear",)),), hidden=("blurb",)))
    assert header_cells(out) == ["sprocket", "colour", "teeth", "content"]
    assert header_cells(draw({"widgets": WIDGETS})) == ["sprocket", "colour", "teeth", "blurb"]


def test_cells_follow_the_hint_widths_file_names_and_tally() -> None:
    long = "w" * 80
    rows = [{"where": "/deep/dir/thing.jsonl", "note": long, "tally": {"n": 3, "other": 1}, "label": long}]
    hint = Render(wide=("note",), file_names=("where",), tally="n")
    out = draw({"rows": rows}, hint)
    assert "thing.jsonl" in out and "/deep/dir" not in out
    assert long in out.replace("\n", "").replace("│", "").replace(" ", "")  # a wide cell keeps 80 chars
    assert "w" * 39 + "…" in out.replace("\n", "").replace("│", "").replace(" ", "")  # the other is cut at 40
    assert '"other"' not in out  # the tally object shows its count only


def test_scalars_lists_of_values_empty_lists_and_pagination() -> None:
    out = draw({"name": "gizmo", "tags": ["a", "b"], "none": []}, pagination={"hasMore": False})
    assert "gizmo" in out and 'tags: ["a","b"]' in out and "none: (no rows)" in out
    assert "hasMore" in out and "false" in out


def test_a_tree_is_drawn_from_the_declared_fields() -> None:
    hint = Render(
        tree=Tree(
            root="gizmo",
            key="gid",
            label="mark {mark}",
            text="about",
            branches=(
                Branch("cogs", "cogs below", "{cid}/{size}", "about"),
                Branch("none", "nothing here", "{cid}", "about"),
            ),
        )
    )
    data = {
        "gizmo": {"gid": "g-1", "mark": 7, "about": "the top"},
        "cogs": [{"cid": "c-1", "size": 3, "about": "first cog"}, {"cid": "c-2", "about": "second"}],
        "none": [],
    }
    out = draw(data, hint)
    assert out.splitlines()[0] == "g-1 mark 7"
    assert "cogs below [2]" in out and "c-1/3: first cog" in out and "c-2/None: second" in out
    assert "nothing here [0]" in out and "the top" in out


def test_a_document_is_printed_whole_under_its_heading() -> None:
    hint = Render(text=Text("body", "== {title} at {where}", ("a", "b"), "(empty)\n"))
    body = "line one\n" + "x" * 300 + "\n"
    assert draw({"title": "T", "a": "", "b": "/b", "body": body}, hint) == "== T at /b\n" + body
    assert draw({"title": "T", "body": ""}, hint) == "== T at None\n(empty)\n"


def test_a_report_of_parts_gets_one_table_per_part_and_its_rows() -> None:
    hint = Render(rows=(Rows("step", ("step", "ok")),), sections=Sections("steps", "the steps"))
    data = {
        "done": True,
        "first": {"size": 1, "steps": [{"step": 1, "ok": True, "noise": "n"}]},
        "second": {"size": 2},
    }
    out = draw(data, hint)
    words = " ".join(out.split())  # a title wraps to its table's width
    for title in (COMMAND, f"{COMMAND} first", f"{COMMAND} second", f"{COMMAND} the steps"):
        assert title in words
    assert header_cells(out) == ["step", "ok"]  # the only table with a header row


def test_a_transcript_shows_each_message_its_tokens_and_the_totals() -> None:
    wrapped = '<box name="b-9" level="2">\n  <inner>\n  folded text\n  </inner>\n</box>'
    messages = [
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "hmm"}],
        },
        {"role": "user", "content": wrapped},
    ]
    hint = Render(
        transcript=Transcript(
            field="msgs",
            title="{command}: the talk",
            totals=(("count", "#msgs"), ("depth", "info.depth"), ("gone", "info.nope.deeper")),
            spread="extra",
            fold=Fold(
                "user",
                "<box ",
                r'name="(?P<n>[^"]*)" level="(?P<l>\d+)".*<inner>(?P<t>.*)</inner>',
                "box {l}",
                "{n}: {t}",
            ),
        )
    )
    out = draw({"msgs": messages, "info": {"depth": 4}, "extra": {"spent": 11}}, hint)
    assert f"{COMMAND}: the talk" in out
    assert "hi (reasoning)" in out and "box 2" in out and "b-9: folded text" in out
    for message in messages:
        assert f" {serialized_tokens(message)} " in out
    totals = out.split("totals")[1]
    for key, value in (("count", "3"), ("depth", "4"), ("gone", "null"), ("spent", "11")):
        assert f"{key} " in totals and f" {value} " in totals


def test_output_looks_the_hint_up_by_the_envelope_command(monkeypatch: pytest.MonkeyPatch) -> None:
    hint = Render(rows=(Rows("sprocket", ("colour",)),))
    monkeypatch.setitem(OPERATIONS, COMMAND, OpSpec("nowhere", render=hint))
    stream = io.StringIO()
    Output("table", stdout=stream).emit({"ok": True, "command": COMMAND, "data": {"widgets": WIDGETS}})
    assert header_cells(stream.getvalue()) == ["colour"]
    stream = io.StringIO()  # a name that is no operation draws with the defaults
    Output("table", stdout=stream).emit({"ok": True, "command": "zz.unknown", "data": {"widgets": WIDGETS}})
    assert header_cells(stream.getvalue()) == ["sprocket", "colour", "teeth", "blurb"]


@pytest.mark.parametrize("fmt,loads_rich", [("json", False), ("tsv", False), ("table", True)])
def test_rich_loads_only_for_tables(fmt: str, loads_rich: bool) -> None:
    probe = (
        "import io, sys\n"
        "from lcm_cli.render.output import Output\n"
        f"Output({fmt!r}, stdout=io.StringIO()).emit("
        "{'ok': True, 'command': 'status', 'data': {'items': [{'a': 1}]}, 'meta': {}})\n"
        "print('rich' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(loads_rich)
