"""The generic table renderer draws whatever a hint declares, for a command it has never seen."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from lcm_cli.engine.core.registry import OPERATIONS, OpSpec
from lcm_cli.engine.core.render_hints import Fold, Render, Rows, Tally, Text, Transcript
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
    """The header row of the first list table (the line above its ──── rule)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("──"))
    return lines[rule - 1].split()


WIDGETS = [
    {"sprocket": "s-1", "colour": "red", "teeth": 12, "blurb": "x", "content": "long body"},
    {"sprocket": "s-2", "colour": "blue", "teeth": 9, "blurb": "y", "content": "long body"},
]


def test_headline_columns_come_from_the_hint_in_its_order() -> None:
    hint = Render(rows=(Rows("gear", ("gear",)), Rows("sprocket", ("teeth", "missing", "sprocket"))))
    out = draw({"widgets": WIDGETS}, hint)
    assert header_cells(out) == ["Teeth", "Sprocket"]
    assert "Widgets (2)" in out and "s-2" in out and "red" not in out


def test_without_a_matching_layout_every_field_but_the_hidden_ones_shows() -> None:
    out = draw({"widgets": WIDGETS}, Render(rows=(Rows("gear", ("gear",)),), hidden=("blurb",)))
    assert header_cells(out) == ["Sprocket", "Colour", "Teeth", "Content"]
    assert header_cells(draw({"widgets": WIDGETS})) == ["Sprocket", "Colour", "Teeth", "Blurb"]


def test_headers_are_words_never_camel_case() -> None:
    rows = [{"conversationId": 1, "lastSeenOffset": 2, "databaseSizeBytes": 3000}]
    out = draw({"rows": rows}, Render(labels=(("conversationId", "Conversation"),)))
    assert header_cells(out) == ["Conversation", "Last", "seen", "offset", "Database", "size"]
    assert "3.0 KB" in out


def test_columns_are_dropped_least_important_first_then_records_stacked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = "/very/long/path/" + "p" * 40 + ".jsonl"
    rows = [{"file": path, "status": "ok", "note": "n" * 20, "extra": "e" * 30}]
    hint = Render(rows=(Rows("file", ("file", "status", "note", "extra"), drop=("extra", "note")),))
    monkeypatch.setenv("COLUMNS", "80")
    assert header_cells(draw({"rows": rows}, hint)) == ["File", "Status"]
    monkeypatch.setenv("COLUMNS", "40")  # the path alone is wider: one block per record
    out = draw({"rows": rows}, hint)
    assert "──" not in out and "".join(out.split()).count(path) == 1
    assert all(len(line) <= 40 for line in out.splitlines())


def test_copied_values_are_never_cut_or_word_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    cursor = "c" * 90
    out = draw({"backupPath": "/b/" + "x" * 70, "note": "word " * 30, "sha256": "f" * 64}, pagination=None)
    out += draw({"items": []}, pagination={"limit": 1, "returned": 1, "hasMore": True, "nextCursor": cursor})
    squeezed = "".join(out.split())
    assert "/b/" + "x" * 70 in squeezed and "f" * 64 in squeezed and cursor in squeezed
    assert "…" not in out and all(len(line) <= 60 for line in out.splitlines())
    assert "Backup path\n  /b/" in out  # on its own line, not beside its label


def test_nested_objects_are_sections_never_json() -> None:
    out = draw(
        {"status": {"messages": {"count": 27, "latestAt": "2026-06-02T08:30:00.123Z"}}, "tags": ["a", "b"]}
    )
    assert "{" not in out and '"' not in out
    assert "Status\n  Messages\n    Count      27\n    Latest at  " in out
    assert "Tags  a, b" in out


def test_sizes_durations_and_times_are_human(monkeypatch: pytest.MonkeyPatch) -> None:
    out = draw(
        {"sizeBytes": 124_000_000, "elapsedMs": 90_000, "createdAt": "2026-06-02 08:30:00", "flag": True}
    )
    assert "124 MB" in out and "1.5 min" in out and "yes" in out
    assert "2026-06-02" in out and ".000" not in out


def test_verbatim_fields_keep_their_keys_and_values() -> None:
    out = draw({"raw": {"freshTailCount": 8, "sizeBytes": 2048}}, Render(verbatim=("raw",)))
    assert "freshTailCount  8" in out and "sizeBytes       2048" in out and out.startswith("Raw")


def test_a_tally_shows_the_loud_rows_first_and_counts_the_quiet() -> None:
    checks = [{"check": f"c{i}", "status": "PASS", "fix": None} for i in range(23)]
    checks.append({"check": "bad", "status": "WARN", "title": "Something off", "fix": "lcm fix it"})
    tally = Tally("checks", "status", (("PASS", "passed"),), "check", "{status} {check}: {title}", ("fix",))
    out = draw({"checks": checks, "healthy": False}, Render(tallies=(tally,), first=("checks",)))
    lines = out.splitlines()
    assert lines[:4] == ["Checks", "  WARN bad: Something off", "    Fix  lcm fix it", ""]
    assert "  23 checks passed" in lines and "c1" not in out and "null" not in out


def test_a_row_with_an_attention_field_is_loud_whatever_its_status() -> None:
    files = [{"file": "a", "status": "done"}, {"file": "b", "status": "done", "reason": "why"}]
    tally = Tally("files", "status", (("done", "done"),), "file", "{status}", ("file", "reason"), ("reason",))
    out = draw({"files": files}, Render(tallies=(tally,)))
    assert "Reason  why" in out and "1 file done" in out and "File    a" not in out


def test_a_backfill_of_hundreds_of_files_is_a_few_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    files = [{"file": f"/s/{i}.jsonl", "status": "would-import", "reason": None} for i in range(200)]
    files += [
        {"file": "/s/bad.jsonl", "status": "failed", "error": "INVALID_INPUT: line 3"},
        {"file": "/s/old.jsonl", "status": "skipped", "reason": "no-session-id"},
    ]
    quiet = (("would-import", "would be imported"),)
    tally = Tally(
        "files", "status", quiet, "file", "{status}", ("file", "reason", "error"), ("reason", "error")
    )
    out = draw({"scannedFiles": 202, "files": files}, Render(tallies=(tally,)))
    assert len(out.splitlines()) < 15
    assert "200 files would be imported" in out and "/s/7.jsonl" not in out
    assert "INVALID_INPUT: line 3" in out and "no-session-id" in out


def test_many_rows_with_one_reason_are_listed_one_line_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    folder = "/home/someone/.openclaw/agents/main/sessions"
    files = [
        {"file": f"{folder}/{i:036d}.jsonl", "status": "incomplete", "reason": "gone"} for i in range(30)
    ]
    tally = Tally("files", "status", (), "file", "{status}", ("file", "reason"), ("reason",), listed="file")
    out = draw({"files": files}, Render(tallies=(tally,)))
    lines = out.splitlines()
    assert lines[1:3] == ["  30 files incomplete: gone", f"  in {folder}/"]
    assert f"    {0:036d}.jsonl" in lines and f"{19:036d}" in out and f"{20:036d}" not in out
    assert "and 10 more (--format json lists every one)" in out and len(lines) == 24


def test_entries_show_their_text_whole() -> None:
    body = "first line of a long message " * 12
    hint = Render(rows=(Rows("mid", ("mid", "role", "preview", "content"), text="content"),))
    out = draw({"msgs": [{"mid": 7, "role": "user", "preview": "first…", "content": body}]}, hint)
    assert "Mid 7 · Role user" in out and "…" not in out
    assert " ".join(out.split()).count(body.strip()) == 1


def test_a_document_is_printed_whole_under_its_heading() -> None:
    hint = Render(text=Text("body", "== {title} at {where}", ("a", "b"), "(empty)\n"))
    body = "line one\n" + "x" * 150 + "\n"
    assert draw({"title": "T", "a": "", "b": "/b", "body": body}, hint) == "== T at /b\n" + body
    assert draw({"title": "T", "body": ""}, hint) == "== T at None\n(empty)\n"


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
    assert "hi (reasoning)" in out and "#2 box 2" in out and "b-9: folded text" in out
    for index, message in enumerate(messages):
        assert f"#{index} " in out and f" {serialized_tokens(message)} tokens" in out
    totals = out.split("Totals")[1]
    for key, value in (("Count", "3"), ("Depth", "4"), ("Gone", "—")):
        assert f"{key} " in totals and f" {value}\n" in totals


def test_only_the_declared_meta_fields_show() -> None:
    meta = {"databasePath": "/x/lcm.db", "complete": False, "elapsedMs": 3}
    out = draw({"hits": []}, Render(meta=("complete",)), meta=meta)
    assert "Complete  no" in out and "/x/lcm.db" not in out and "Elapsed" not in out


def test_output_looks_the_hint_up_by_the_envelope_command(monkeypatch: pytest.MonkeyPatch) -> None:
    hint = Render(rows=(Rows("sprocket", ("colour",)),))
    monkeypatch.setitem(OPERATIONS, COMMAND, OpSpec("nowhere", render=hint))
    stream = io.StringIO()
    Output("table", stdout=stream).emit({"ok": True, "command": COMMAND, "data": {"widgets": WIDGETS}})
    assert header_cells(stream.getvalue()) == ["Colour"]
    stream = io.StringIO()  # a name that is no operation draws with the defaults
    Output("table", stdout=stream).emit({"ok": True, "command": "zz.unknown", "data": {"widgets": WIDGETS}})
    assert header_cells(stream.getvalue()) == ["Sprocket", "Colour", "Teeth", "Blurb"]


def test_severity_is_coloured_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"checks": [{"check": "x", "status": "FAIL", "title": "t", "fix": "f"}]}
    tally = Tally("checks", "status", (("PASS", "passed"),), "check", "{status} {check}: {title}", ("fix",))
    assert "\x1b[" not in draw(data, Render(tallies=(tally,)))  # NO_COLOR, and no terminal
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")  # what rich reads as "a colour terminal"
    coloured = draw(data, Render(tallies=(tally,)))
    assert "\x1b[1;31m  FAIL x: t" in coloured  # bold red


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
