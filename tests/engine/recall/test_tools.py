"""The OpenClaw model's recall tools (`recall.tool`): lossless-claw's names, parameters and
text layout, answered by lcm's recall operations, over a known corpus."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.recall import tools as tools_mod
from lcm_cli.engine.recall.tools import MAX_RESULT_CHARS, TOOL_SPECS, TRUNCATED_NOTE
from tests.commands.test_doors import Client
from tests.support.recall_corpus import build_recall_corpus

KEY = "agent:main:main"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("recall-tools")
    files = root / "lcm-files"
    config = {"largeFilesDir": str(files), "timezone": "UTC"}
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": config}}}})
    )
    return root, build_recall_corpus(root / "lcm.db", files)


def run(root: Path, tool: str, arguments: Any, **session: str) -> dict[str, Any]:
    """One tool call through the Python door: its data ``{tool, text, details, isError}``."""
    params: dict[str, Any] = {"tool": tool, "arguments": arguments, "session_key": KEY, **session}
    params = {k: v for k, v in params.items() if v != ""}
    data: dict[str, Any] = call("recall.tool", params, openclaw_dir=str(root))["data"]
    assert data["tool"] == tool and isinstance(data["text"], str)
    return data


def ok(root: Path, tool: str, arguments: Any, **session: str) -> str:
    data = run(root, tool, arguments, **session)
    assert data["isError"] is False, data["text"]
    text: str = data["text"]
    return text


def failed(root: Path, tool: str, arguments: Any, **session: str) -> dict[str, Any]:
    """A tool error: ``isError`` and ``{error, hint?}`` as indented JSON text."""
    data = run(root, tool, arguments, **session)
    assert data["isError"] is True, data["text"]
    payload: dict[str, Any] = json.loads(data["text"])
    assert payload == data["details"] and payload["error"]
    assert data["text"] == json.dumps(payload, indent=2, ensure_ascii=False)
    return payload


def spec(name: str) -> dict[str, Any]:
    return next(s for s in TOOL_SPECS if s["name"] == name)


def conforms(name: str, arguments: dict[str, Any]) -> bool:
    """A small hand check of a tool's JSON Schema: required names, types, enums, bounds."""
    schema = spec(name)["parameters"]
    if any(
        key not in arguments and "default" not in schema["properties"][key]
        for key in schema.get("required", ())
    ):
        return False
    types = {"string": str, "number": (int, float), "boolean": bool, "array": list}
    for key, value in arguments.items():
        prop = schema["properties"].get(key)
        if prop is None or not isinstance(value, types[prop["type"]]):
            return False
        if "enum" in prop and value not in prop["enum"]:
            return False
        if prop["type"] == "number" and not (
            prop.get("minimum", -1e18) <= value <= prop.get("maximum", 1e18)
        ):
            return False
    return True


# --------------------------------------------------------------------------------------
# The specs
# --------------------------------------------------------------------------------------


def test_specs_are_lossless_claws_tools_with_their_parameters() -> None:
    assert [(s["name"], s["label"]) for s in TOOL_SPECS] == [
        ("lcm_grep", "LCM Grep"),
        ("lcm_describe", "LCM Describe"),
        ("lcm_expand", "LCM Expand"),
        ("lcm_expand_query", "LCM Expand Query"),
    ]
    shapes = {
        s["name"]: {
            k: (p["type"], p.get("enum"), p.get("minimum"), p.get("maximum"))
            for k, p in s["parameters"]["properties"].items()
        }
        for s in TOOL_SPECS
    }
    assert shapes["lcm_grep"] == {
        "pattern": ("string", None, None, None),
        "mode": ("string", ["regex", "full_text"], None, None),
        "scope": ("string", ["messages", "summaries", "both", "files"], None, None),
        "fileIds": ("array", None, None, None),
        "conversationId": ("number", None, None, None),
        "allConversations": ("boolean", None, None, None),
        "since": ("string", None, None, None),
        "before": ("string", None, None, None),
        "limit": ("number", None, 1, 200),
        "sort": ("string", ["recency", "relevance", "hybrid"], None, None),
    }
    assert shapes["lcm_describe"] == {
        "id": ("string", None, None, None),
        "conversationId": ("number", None, None, None),
        "allConversations": ("boolean", None, None, None),
        "tokenCap": ("number", None, 1, None),
        "expandFile": ("boolean", None, None, None),
        "expandFileMaxBytes": ("number", None, 1024, 512000),
        "startLine": ("number", None, 1, None),
        "endLine": ("number", None, 1, None),
    }
    assert shapes["lcm_expand"] == {
        "summaryIds": ("array", None, None, None),
        "query": ("string", None, None, None),
        "maxDepth": ("number", None, 1, None),
        "tokenCap": ("number", None, 1, None),
        "includeMessages": ("boolean", None, None, None),
        "conversationId": ("number", None, None, None),
        "allConversations": ("boolean", None, None, None),
    }
    assert shapes["lcm_expand_query"] == {
        "summaryIds": ("array", None, None, None),
        "query": ("string", None, None, None),
        "prompt": ("string", None, None, None),
        "conversationId": ("number", None, None, None),
        "allConversations": ("boolean", None, None, None),
        "maxTokens": ("number", None, 1, None),
        "tokenCap": ("number", None, 1, None),
        "timeoutMs": ("number", None, 1, None),
    }
    required = {s["name"]: s["parameters"].get("required") for s in TOOL_SPECS}
    assert required == {
        "lcm_grep": ["pattern"],
        "lcm_describe": ["id"],
        "lcm_expand": None,
        "lcm_expand_query": ["prompt", "timeoutMs"],
    }
    assert spec("lcm_expand_query")["parameters"]["properties"]["timeoutMs"]["default"] == 150_000
    for s in TOOL_SPECS:
        assert s["parameters"]["type"] == "object" and s["description"]
        assert all(p["description"] for p in s["parameters"]["properties"].values())
        for prop in s["parameters"]["properties"].values():
            if prop["type"] == "array":
                assert prop["items"] == {"type": "string"}


def test_tool_specs_operation_opens_nothing(tmp_path: Path) -> None:
    envelope = call("recall.tool_specs", {}, db=str(tmp_path / "missing.db"))
    assert envelope["data"] == {"tools": TOOL_SPECS} and envelope["meta"] == {}
    json.dumps(envelope)  # plain data: the plugin writes its tool list from it


def test_the_sample_arguments_conform_to_the_schemas() -> None:
    for name, arguments in SAMPLES:
        assert conforms(name, arguments), (name, arguments)
    for name, arguments in BAD_SCHEMA:
        assert not conforms(name, arguments), (name, arguments)


SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("lcm_grep", {"pattern": "billing", "mode": "full_text"}),
    ("lcm_grep", {"pattern": "billing", "mode": "full_text", "scope": "messages", "conversationId": 1}),
    ("lcm_grep", {"pattern": "billing", "scope": "files", "fileIds": ["file_text000000000001"], "limit": 10}),
    ("lcm_grep", {"pattern": "billing", "since": "2026-07-01T09:00:30Z", "before": "2026-07-01T09:05:00Z"}),
    ("lcm_describe", {"id": "sum_cond00000000000", "tokenCap": 100}),
    ("lcm_describe", {"id": "file_text000000000001", "expandFile": True, "startLine": 2, "endLine": 2}),
    ("lcm_expand", {"summaryIds": ["sum_cond00000000000"], "includeMessages": True, "tokenCap": 40}),
    ("lcm_expand", {"query": "billing", "maxDepth": 1}),
    ("lcm_expand_query", {"prompt": "Why did the deploy fail?", "query": "billing", "maxTokens": 5}),
]
# Arguments the host's schema check would refuse (and so does ours: see below).
BAD_SCHEMA: list[tuple[str, dict[str, Any]]] = [
    ("lcm_grep", {}),
    ("lcm_grep", {"pattern": "x", "mode": "fuzzy"}),
    ("lcm_grep", {"pattern": "x", "limit": 500}),
    ("lcm_grep", {"pattern": 3}),
    ("lcm_describe", {"id": "sum_x", "expandFileMaxBytes": 10}),
    ("lcm_expand", {"maxDepth": 0}),
    ("lcm_expand_query", {"query": "x"}),
]


# --------------------------------------------------------------------------------------
# Every tool through `lcm serve` and the Python door
# --------------------------------------------------------------------------------------


def test_each_tool_through_serve_answers_as_the_python_door(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    client = Client(root)
    try:
        for index, (name, arguments) in enumerate(SAMPLES + BAD_SCHEMA):
            params = {"tool": name, "arguments": arguments, "sessionKey": KEY, "sessionId": "sess-main"}
            answer = client.ask(index, "recall.tool", params)
            assert "result" in answer, answer
            expected = call(
                "recall.tool",
                {"tool": name, "arguments": arguments, "session_key": KEY, "session_id": "sess-main"},
                openclaw_dir=str(root),
            )
            assert answer["result"]["data"] == expected["data"], name
            assert answer["result"]["data"]["isError"] is ((name, arguments) in BAD_SCHEMA)
        specs = client.ask("specs", "recall.tool_specs")
        assert specs["result"]["data"]["tools"] == TOOL_SPECS
        bad = client.ask("bad", "recall.tool", {"tool": "lcm_nope", "arguments": {}})
        assert bad["error"]["code"] == "INVALID_ARGUMENT"
    finally:
        assert client.close() == 0


def test_arguments_may_come_as_json_text(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    as_text = run(root, "lcm_grep", json.dumps({"pattern": "billing", "mode": "full_text"}))
    assert as_text == run(root, "lcm_grep", {"pattern": "billing", "mode": "full_text"})


# --------------------------------------------------------------------------------------
# Scope
# --------------------------------------------------------------------------------------


def test_grep_scopes_family_conversation_and_all(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    family = ok(root, "lcm_grep", {"pattern": "billing", "mode": "full_text", "scope": "messages"})
    assert f"**Conversation scope:** session family rooted at {c['main']} (2 segments)" in family
    assert re.findall(r"msg#(\d+)\]", family) == ["2", "1", str(c["old"][0])]
    one = ok(
        root,
        "lcm_grep",
        {"pattern": "billing", "mode": "full_text", "scope": "messages", "conversationId": c["main"]},
    )
    assert f"**Conversation scope:** {c['main']}\n" in one and re.findall(r"msg#(\d+)\]", one) == ["2", "1"]
    every = ok(
        root,
        "lcm_grep",
        {"pattern": "billing", "mode": "full_text", "scope": "messages", "allConversations": True},
    )
    assert "**Conversation scope:** all conversations" in every
    assert sorted(map(int, re.findall(r"msg#(\d+)\]", every))) == [1, 2, c["old"][0], c["elsewhere"][0]]
    # conversationId wins over allConversations, as in lossless-claw
    both = ok(
        root,
        "lcm_grep",
        {
            "pattern": "billing",
            "mode": "full_text",
            "scope": "messages",
            "conversationId": c["other"],
            "allConversations": True,
        },
    )
    assert re.findall(r"msg#(\d+)\]", both) == [str(c["elsewhere"][0])]


def test_the_runtime_session_id_wins_over_a_stale_key(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    text = ok(
        root,
        "lcm_grep",
        {"pattern": "billing", "mode": "full_text"},
        session_key="agent:other:x",
        session_id="sess-main",
    )
    assert f"rooted at {c['main']} (2 segments)" in text
    by_id_only = ok(
        root, "lcm_grep", {"pattern": "billing", "mode": "full_text"}, session_key="", session_id="sess-main"
    )
    assert f"rooted at {c['main']}" in by_id_only
    other = ok(root, "lcm_grep", {"pattern": "billing", "mode": "full_text"}, session_key="agent:other:x")
    assert f"**Conversation scope:** {c['other']}\n" in other


def test_no_conversation_for_the_session_says_what_to_pass(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    for session in ({"session_key": "agent:nobody:x"}, {"session_key": ""}):
        for name, arguments in SAMPLES:
            if "conversationId" in arguments:
                continue
            payload = failed(root, name, arguments, **session)
            assert payload["error"].startswith("No LCM conversation found for this session.")
            assert "conversationId" in payload["error"] and "allConversations=true" in payload["error"]
    missing = failed(root, "lcm_grep", {"pattern": "x", "conversationId": 999})
    assert missing["error"] == "No conversation has id 999." and "allConversations" in missing["hint"]


def test_cron_runs_are_their_own_scope_and_an_archived_key_still_answers(tmp_path: Path) -> None:
    from lcm_cli.engine.db.store import Store

    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        old_run = store.create_conversation("s-cron-1", session_key="agent:main:cron:nightly", active=False)
        new_run = store.create_conversation("s-cron-2", session_key="agent:main:cron:nightly")
        gone = store.create_conversation("s-gone", session_key="agent:gone:x", active=False)
        for cid in (old_run, new_run, gone):
            store.add_message(cid, "user", f"report of conversation {cid}")
    (tmp_path / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    cron = ok(tmp_path, "lcm_grep", {"pattern": "report"}, session_key="agent:main:cron:nightly")
    assert f"**Conversation scope:** {new_run}\n" in cron and re.findall(r"conv=(\d+)", cron) == [
        str(new_run)
    ]
    archived = ok(tmp_path, "lcm_grep", {"pattern": "report"}, session_key="agent:gone:x")
    assert re.findall(r"conv=(\d+)", archived) == [str(gone)]


# --------------------------------------------------------------------------------------
# lcm_grep
# --------------------------------------------------------------------------------------


def test_grep_text_layout(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    data = run(root, "lcm_grep", {"pattern": "billing", "mode": "full_text"})
    lines = data["text"].split("\n")
    assert lines[:6] == [
        "## LCM Grep Results",
        "**Pattern:** `billing`",
        "**Mode:** full_text | **Scope:** both | **Sort:** recency",
        f"**Conversation scope:** session family rooted at {c['main']} (2 segments)",
        "**Total matches:** 5",
        "",
    ]
    assert lines[6:8] == ["### Messages", ""]
    assert lines[8] == (
        f"- [conv={c['main']} msg#2] (assistant, 2026-07-01 09:01 UTC): "
        "The billing deploy failed: timeout connecting to postgres"
    )
    assert "### Summaries" in lines and f"- [conv={c['main']} {c['condensed']}] (condensed, " in data["text"]
    assert data["details"] == {
        "messageCount": 3,
        "summaryCount": 2,
        "fileCount": 0,
        "totalMatches": 5,
        "complete": True,
    }
    regex = ok(root, "lcm_grep", {"pattern": "bill(ing)? (deploy|service)", "sort": "relevance"})
    assert "**Mode:** regex | **Scope:** both | **Sort:** recency" in regex  # sort is full_text only
    none = ok(root, "lcm_grep", {"pattern": "zebra-unicorn", "allConversations": True})
    assert none.endswith("**Total matches:** 0\n\nNo matches found.")


def test_grep_time_filter_and_files(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    window = ok(
        root,
        "lcm_grep",
        {
            "pattern": "billing",
            "mode": "full_text",
            "scope": "messages",
            "since": "2026-07-01T09:00:30Z",
            "before": "2026-07-01T09:05:00Z",
        },
    )
    assert "**Time filter:** since 2026-07-01 09:00 UTC | before 2026-07-01 09:05 UTC" in window
    assert re.findall(r"msg#(\d+)\]", window) == ["2"]
    open_ended = ok(
        root, "lcm_grep", {"pattern": "billing", "mode": "full_text", "before": "2026-07-01T09:05:00Z"}
    )
    assert "**Time filter:** since -∞ | before 2026-07-01 09:05 UTC" in open_ended
    files = run(
        root, "lcm_grep", {"pattern": "billing", "scope": "files", "fileIds": ["file_text000000000001"]}
    )
    text = files["text"]
    assert "**File scan:** first 512,000 bytes per file; matches beyond that prefix are not searched." in text
    assert "### Files" in text
    assert f"- [conv={c['main']} file_text000000000001 (report.txt)] line 2, offset 13: `billing` " in text
    assert files["details"]["fileScanByteLimit"] == 512_000 and files["details"]["fileCount"] == 3
    # fileIds restrict only the "files" scope (docs/reference/engine.md §7.2)
    ignored = ok(root, "lcm_grep", {"pattern": "billing", "fileIds": ["file_nope"]})
    assert "### Messages" in ignored


def test_grep_text_stops_at_the_40000_character_budget(tmp_path: Path) -> None:
    from lcm_cli.engine.db.store import Store

    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("s-big", session_key="agent:big:main")
        rows = [{"role": "user", "content": f"needle {i} " + "abcdefghij " * 60} for i in range(200)]
        store.add_messages(cid, rows)
        leaf = store.add_leaf_summary(cid, [1], "needle summary " + "x" * 300)
    (tmp_path / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    data = run(
        tmp_path,
        "lcm_grep",
        {"pattern": "needle", "mode": "full_text", "limit": 200},
        session_key="agent:big:main",
    )
    text = data["text"]
    messages, summaries = text.split("### Summaries")
    assert messages.rstrip().endswith(TRUNCATED_NOTE)  # the messages section is cut...
    assert f"{leaf}]" not in summaries and summaries.strip().endswith(
        TRUNCATED_NOTE
    )  # ...and the next one starts
    hit_lines = [line for line in text.split("\n") if line.startswith("- [")]
    header = text.split("### Messages")[0]
    assert len(header) + sum(len(line) for line in hit_lines) <= MAX_RESULT_CHARS
    assert 150 < len(hit_lines) < 200 and all(len(line.split("): ", 1)[1]) <= 200 for line in hit_lines)
    assert data["details"]["messageCount"] == 200  # every hit is counted, not every one is shown


def test_grep_bad_arguments(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    regex_in_text = failed(root, "lcm_grep", {"pattern": "billing|deploy", "mode": "full_text"})
    assert "regex syntax" in regex_in_text["error"] and 'mode "regex"' in regex_in_text["hint"]
    broken = failed(root, "lcm_grep", {"pattern": "(unclosed"})
    assert "not a valid regular expression" in broken["error"] and "full_text" in broken["hint"]
    empty = failed(root, "lcm_grep", {"pattern": "   "})
    assert "nothing to search" in empty["error"]
    assert (
        "not a valid ISO timestamp"
        in failed(root, "lcm_grep", {"pattern": "x", "since": "yesterday-ish"})["error"]
    )
    window = failed(
        root, "lcm_grep", {"pattern": "x", "since": "2026-07-02T00:00:00Z", "before": "2026-07-01T00:00:00Z"}
    )
    assert window["error"].startswith("since must be earlier than before")
    unknown_file = failed(
        root, "lcm_grep", {"pattern": "x", "scope": "files", "fileIds": ["file_nope0000000001"]}
    )
    assert unknown_file["error"] == "Not found: file_nope0000000001"
    outside = failed(
        root, "lcm_grep", {"pattern": "x", "scope": "files", "fileIds": ["file_otherconv000001"]}
    )
    assert outside["error"] == "Not found in this session scope: file_otherconv000001"


# --------------------------------------------------------------------------------------
# lcm_describe
# --------------------------------------------------------------------------------------


def test_describe_summary_layout_and_token_cap(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    data = run(root, "lcm_describe", {"id": c["condensed"], "tokenCap": 30})
    lines = data["text"].split("\n")
    assert lines[0] == f"LCM_SUMMARY {c['condensed']}"
    assert re.fullmatch(
        rf"meta conv={c['main']} kind=condensed depth=1 tok=\d+ descTok=\d+ srcTok=\d+ desc=2 "
        r"range=2026-07-01 09:00 UTC\.\.2026-07-01 09:03 UTC budgetCap=30",
        lines[1],
    ), lines[1]
    assert lines[2] == f"children {c['leaf_a']} {c['leaf_b']}"  # its sources
    assert lines[3] == "manifest"
    assert lines[4].startswith(f"d0 {c['condensed']} k=condensed ") and lines[4].endswith(
        "budget[s=over,m=over]"
    )
    assert lines[5].startswith(f"d1 {c['leaf_a']} k=leaf ") and "child=0" in lines[5]
    assert lines[6].startswith(f"d1 {c['leaf_b']} k=leaf ")
    assert lines[7:] == ["content", "Condensed: billing outage and database timeout."]
    nodes = data["details"]["manifest"]["nodes"]
    assert (
        data["details"]["manifest"]["tokenCap"] == 30
        and data["details"]["manifest"]["budgetSource"] == "request"
    )
    for node, line in zip(nodes, lines[4:7]):
        cost = node["costs"]["summariesOnly"]
        assert f"cost[s={cost},m={node['costs']['withMessages']}]" in line
        assert node["budgetFit"]["summariesOnly"] == (cost <= 30)
        assert ("budget[s=in," in line) == (cost <= 30)
    wide = run(root, "lcm_describe", {"id": c["condensed"], "tokenCap": 100_000})
    assert "budgetCap=100000" in wide["text"] and "over" not in wide["text"]
    leaf = ok(root, "lcm_describe", {"id": c["leaf_a"]})
    assert f"parents {c['condensed']}" in leaf.split("\n")[2]  # the summary that consumed it
    assert "budgetCap=4000" in leaf  # maxExpandTokens' default


def test_describe_token_cap_defaults_to_max_expand_tokens(
    corpus: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, c = corpus
    shutil.copy(root / "lcm.db", tmp_path / "lcm.db")
    (tmp_path / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {"maxExpandTokens": 123}}}}})
    )
    data = run(tmp_path, "lcm_describe", {"id": c["condensed"]})
    assert "budgetCap=123" in data["text"] and data["details"]["manifest"]["budgetSource"] == "config_default"


def test_describe_file(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    plain = ok(root, "lcm_describe", {"id": "file_text000000000001"})
    assert plain.split("\n") == [
        "## LCM File: file_text000000000001",
        "",
        f"**Conversation:** {c['main']}",
        "**Name:** report.txt",
        "**Type:** text/plain",
        "**Size:** 71 bytes",
        "**Lines:** 3",
        "**Created:** 2026-07-01 09:30 UTC",
        "",
        "## Exploration Summary",
        "",
        "A three-line billing report.",
    ]
    whole = ok(
        root,
        "lcm_describe",
        {"id": "[LCM File: file_text000000000001 | report.txt | text/plain]", "expandFile": True},
    )
    assert whole.endswith(
        "## Content\n\n```\nline one\nthe billing report\nline three mentions billing twice: billing\n\n```"
    )
    line = ok(
        root,
        "lcm_describe",
        {"id": "file_text000000000001", "expandFile": True, "startLine": 2, "endLine": 2},
    )
    assert line.endswith("## Content\n\n```\nthe billing report\n```")
    past = ok(
        root,
        "lcm_describe",
        {"id": "file_text000000000001", "expandFile": True, "startLine": 3, "endLine": 9},
    )
    assert "*Content cut at " in past and "fileIds=['file_text000000000001']" in past
    binary = ok(root, "lcm_describe", {"id": "file_png0000000000001", "expandFile": True})
    assert binary.endswith("*Content unavailable: Binary payload (image/png); content is not printed.*")
    outside = ok(root, "lcm_describe", {"id": "file_outside00000001", "expandFile": True})
    assert "*No exploration summary available.*" in outside and "*Content unavailable: " in outside


def test_describe_caps_the_file_content_at_expand_file_max_bytes(tmp_path: Path) -> None:
    from lcm_cli.engine.db.store import Store

    files = tmp_path / "lcm-files"
    files.mkdir()
    big = files / "big.txt"
    big.write_text("".join(f"line {i:05d} é\n" for i in range(5000)), encoding="utf-8")
    with Store.open(tmp_path / "lcm.db") as store:
        cid = store.create_conversation("s-file", session_key="agent:file:x")
        store.add_large_file(
            cid,
            str(big),
            file_id="file_big0000000000001",
            mime_type="text/plain",
            byte_size=big.stat().st_size,
        )
    config = {"largeFilesDir": str(files)}
    (tmp_path / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": config}}}})
    )
    data = run(
        tmp_path,
        "lcm_describe",
        {"id": "file_big0000000000001", "expandFile": True, "expandFileMaxBytes": 2000},
        session_key="agent:file:x",
    )
    fenced = re.search(r"\n```\n(.*)\n```\n", data["text"], re.S)
    assert fenced is not None
    content = fenced.group(1)
    assert len(content.encode("utf-8")) <= 2000 and content.startswith("line 00000 é")
    assert data["details"]["contentTruncated"] is True
    assert (
        f"*Content cut at {len(content.encode('utf-8')):,} of {big.stat().st_size:,} bytes." in data["text"]
    )
    default = run(
        tmp_path,
        "lcm_describe",
        {"id": "file_big0000000000001", "expandFile": True},
        session_key="agent:file:x",
    )
    assert len(default["text"].encode("utf-8")) < 32_768 + 1_000


def test_describe_bad_arguments(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    assert failed(root, "lcm_describe", {"id": "sum_nope"}) == {
        "error": "Not found: sum_nope",
        "hint": "Check the id: summaries are sum_xxx, files file_xxx (as lcm_grep prints them).",
    }
    assert failed(root, "lcm_describe", {"id": "file_nope"})["error"] == "Not found: file_nope"
    assert failed(root, "lcm_describe", {"id": "sum_a sum_b"})["error"].startswith("Not one LCM id")
    assert failed(root, "lcm_describe", {"id": "file_otherconv000001"}) == {
        "error": "Not found in this session scope: file_otherconv000001",
        "hint": "Set allConversations=true to look across every conversation.",
    }
    other = failed(root, "lcm_describe", {"id": c["leaf_a"], "conversationId": c["other"]})
    assert other["error"] == f"Not found in conversation {c['other']}: {c['leaf_a']}"
    assert "allConversations=true" in other["hint"]
    assert "file_otherconv000001" in ok(
        root, "lcm_describe", {"id": "file_otherconv000001", "allConversations": True}
    )
    lines = failed(
        root,
        "lcm_describe",
        {"id": "file_text000000000001", "expandFile": True, "startLine": 3, "endLine": 2},
    )
    assert "endLine" in lines["error"] and "startLine" in lines["error"]


# --------------------------------------------------------------------------------------
# lcm_expand
# --------------------------------------------------------------------------------------


def test_expand_walks_sources_and_messages_within_the_token_cap(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    whole = run(root, "lcm_expand", {"summaryIds": [c["condensed"]], "includeMessages": True})
    text = whole["text"]
    assert text.startswith("## Expansion Results (1 summaries, ")
    assert f"### {c['condensed']} (condensed, " in text
    assert f"Children: {c['leaf_a']}, {c['leaf_b']}" in text
    assert "Messages: msg#1 (user, " in text and "msg#4 (assistant, " in text
    assert "[Snippet: Billing deploy to staging failed with a postgres timeout.]" in text
    # the text itself, in walk order: a leaf, then its messages
    order = re.findall(r"^#### (\S+)", text, re.M)
    assert order == [c["leaf_a"], "msg#1", "msg#2", c["leaf_b"], "msg#3", "msg#4"]
    assert "The billing deploy failed: timeout connecting to postgres" in text
    assert text.endswith(
        f"Cited IDs for follow-up: {c['condensed']}, {c['leaf_a']}, {c['leaf_b']}\n[Truncated: no]"
    )
    details = whole["details"]
    assert details["truncated"] is False and details["expansionCount"] == 1 and details["tokenCap"] == 4000
    total = details["totalTokens"]
    # a cap below the total: the first item that does not fit stops the walk
    cut = run(
        root, "lcm_expand", {"summaryIds": [c["condensed"]], "includeMessages": True, "tokenCap": total - 1}
    )
    assert cut["details"]["truncated"] is True and cut["details"]["totalTokens"] <= total - 1
    assert "[Truncated: yes]" in cut["text"] and "raise tokenCap" in cut["text"]
    assert "#### msg#4" not in cut["text"]
    tiny = run(root, "lcm_expand", {"summaryIds": [c["condensed"]], "tokenCap": 1})
    assert tiny["details"]["totalTokens"] == 0 and "[Truncated: yes]" in tiny["text"]
    # maxDepth 1: the leaves are listed, but their messages lie deeper
    shallow = ok(root, "lcm_expand", {"summaryIds": [c["condensed"]], "includeMessages": True, "maxDepth": 1})
    assert f"Children: {c['leaf_a']}, {c['leaf_b']}" in shallow and "Messages:" not in shallow
    without = ok(root, "lcm_expand", {"summaryIds": [c["condensed"]]})
    assert "Messages:" not in without and "#### msg#" not in without
    leaf = ok(root, "lcm_expand", {"summaryIds": [c["leaf_a"]], "includeMessages": True})
    assert f"### {c['leaf_a']} (leaf, " in leaf and re.findall(r"^#### (\S+)", leaf, re.M) == [
        "msg#1",
        "msg#2",
    ]


def test_expand_by_query(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    found = run(root, "lcm_expand", {"query": "billing", "summaryIds": ["sum_ignored"]})
    assert found["details"]["expansionCount"] == 2  # the condensed summary and leaf_a, newest first
    assert re.findall(r"^### (\S+)", found["text"], re.M) == [c["condensed"], c["leaf_a"]]
    nothing = ok(root, "lcm_expand", {"query": "zebra"})
    assert nothing == "## Expansion Results (0 summaries, 0 total tokens)\n\n[Truncated: no]"


def test_expand_bad_arguments(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    assert "summaryIds or a query" in failed(root, "lcm_expand", {})["error"]
    assert failed(root, "lcm_expand", {"summaryIds": ["sum_nope", c["leaf_a"], "sum_gone"]})["error"] == (
        "Not found: sum_nope, sum_gone"
    )
    outside = failed(root, "lcm_expand", {"summaryIds": [c["leaf_a"]], "conversationId": c["other"]})
    assert outside["error"] == f"Outside this session scope: {c['leaf_a']}"
    assert "regex syntax" in failed(root, "lcm_expand", {"query": "a|b"})["error"]


# --------------------------------------------------------------------------------------
# lcm_expand_query
# --------------------------------------------------------------------------------------


class FakeModel:
    """The configured expansion model, answering as told."""

    model = "fake-expander"

    def __init__(self, reply: str = "", error: Exception | None = None) -> None:
        self.reply = reply
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def complete(self, system: str, user: str, *, max_tokens: int, timeout_ms: int) -> str:
        self.calls.append({"user": user, "max_tokens": max_tokens, "timeout_ms": timeout_ms})
        if self.error is not None:
            raise self.error
        return self.reply


def with_model(monkeypatch: pytest.MonkeyPatch, fake: FakeModel) -> FakeModel:
    from lcm_cli.engine.recall import expand_query

    monkeypatch.setattr(expand_query, "chat_model", lambda ctx: fake)
    return fake


def test_expand_query_answers_within_max_tokens(
    corpus: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, c = corpus
    fake = with_model(
        monkeypatch, FakeModel(json.dumps({"answer": "postgres timed out " * 200, "citedIds": [c["leaf_a"]]}))
    )
    data = run(
        root, "lcm_expand_query", {"prompt": "Why did the deploy fail?", "query": "billing", "maxTokens": 5}
    )
    reply = json.loads(data["text"])
    assert data["isError"] is False and reply == data["details"]
    assert list(reply) == [
        "answer",
        "citedIds",
        "sourceConversationIds",
        "sourceConversationId",
        "expandedSummaryCount",
        "totalSourceTokens",
        "truncated",
    ]
    assert reply["answer"].startswith("postgres") and len(reply["answer"]) <= 5 * 4
    assert reply["citedIds"] == [c["leaf_a"]] and reply["sourceConversationIds"] == [c["main"]]
    assert fake.calls[0]["max_tokens"] == 5
    # the default answer target, and the time the answer may take within timeoutMs
    run(root, "lcm_expand_query", {"prompt": "Why?", "query": "billing", "timeoutMs": 8000})
    assert fake.calls[1]["max_tokens"] == 2000 and 5000 < fake.calls[1]["timeout_ms"] <= 6000
    run(root, "lcm_expand_query", {"prompt": "Why?", "query": "billing"})
    assert 110_000 < fake.calls[2]["timeout_ms"] <= 120_000  # 150000 less 30 s of headroom


def test_expand_query_without_a_model_returns_the_evidence(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    reply = json.loads(
        ok(root, "lcm_expand_query", {"prompt": "Why?", "summaryIds": [c["leaf_a"]], "tokenCap": 1000})
    )
    assert reply["answer"] is None and "No model is configured" in reply["note"]
    assert [e["summaryId"] for e in reply["evidence"]] == [c["leaf_a"]]
    assert reply["totalSourceTokens"] <= 1000
    small = json.loads(ok(root, "lcm_expand_query", {"prompt": "Why?", "query": "billing", "tokenCap": 40}))
    assert small["totalSourceTokens"] <= 40 and small["truncated"] is True


def test_expand_query_no_match_and_failures(
    corpus: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, c = corpus
    none = json.loads(ok(root, "lcm_expand_query", {"prompt": "Why?", "query": "zebra"}))
    assert none["answer"] == "No matching summaries found for this scope."
    assert none["sourceConversationIds"] == [c["main"]] and none["expandedSummaryCount"] == 0
    assert failed(root, "lcm_expand_query", {"prompt": "Why?", "query": "zebra", "allConversations": True})[
        "error"
    ] == ("No summary matched.")
    assert "prompt is empty" in failed(root, "lcm_expand_query", {"prompt": "  ", "query": "x"})["error"]
    assert "summaryIds or a query" in failed(root, "lcm_expand_query", {"prompt": "Why?"})["error"]
    assert (
        failed(root, "lcm_expand_query", {"prompt": "Why?", "summaryIds": ["sum_nope"]})["error"]
        == "Not found: sum_nope"
    )
    with_model(monkeypatch, FakeModel(error=TimeoutError("timed out")))
    timeout = failed(root, "lcm_expand_query", {"prompt": "Why?", "query": "billing"})
    assert timeout["errorCode"] == "EXPANSION_TIMEOUT" and timeout["truncated"] is True
    assert timeout["evidence"] and "answer" not in timeout


# --------------------------------------------------------------------------------------
# Mistakes: the model's are answers, the plugin's are errors; nothing is written
# --------------------------------------------------------------------------------------

MODEL_MISTAKES: list[tuple[str, Any, str]] = [
    ("lcm_grep", {}, "lcm_grep needs pattern."),
    ("lcm_grep", {"pattern": 3}, "pattern must be a string, not 3."),
    (
        "lcm_grep",
        {"pattern": "x", "mode": "fuzzy"},
        "mode must be one of 'regex', 'full_text', not \"fuzzy\".",
    ),
    ("lcm_grep", {"pattern": "x", "scope": "everything"}, "scope must be one of"),
    ("lcm_grep", {"pattern": "x", "sort": "best"}, "sort must be one of"),
    ("lcm_grep", {"pattern": "x", "limit": 0}, "limit must be at least 1, not 0."),
    ("lcm_grep", {"pattern": "x", "limit": 500}, "limit must be at most 200, not 500."),
    ("lcm_grep", {"pattern": "x", "limit": "ten"}, "limit must be a number"),
    ("lcm_grep", {"pattern": "x", "allConversations": "yes"}, "allConversations must be true or false"),
    ("lcm_grep", {"pattern": "x", "fileIds": "file_a"}, "fileIds must be a list of strings"),
    ("lcm_grep", {"pattern": "x", "conversationId": 0}, "conversationId must be a conversation's id"),
    ("lcm_describe", {}, "lcm_describe needs id."),
    ("lcm_describe", {"id": "sum_x", "tokenCap": 0}, "tokenCap must be at least 1"),
    (
        "lcm_describe",
        {"id": "sum_x", "expandFileMaxBytes": 600000},
        "expandFileMaxBytes must be at most 512000",
    ),
    ("lcm_describe", {"id": "sum_x", "startLine": 0}, "startLine must be at least 1"),
    ("lcm_expand", {"maxDepth": 0, "query": "x"}, "maxDepth must be at least 1"),
    ("lcm_expand", {"summaryIds": [1]}, "summaryIds must be a list of strings"),
    ("lcm_expand_query", {"query": "x"}, "lcm_expand_query needs prompt."),
    ("lcm_expand_query", {"prompt": "p", "query": "x", "timeoutMs": 0}, "timeoutMs must be at least 1"),
    ("lcm_expand_query", {"prompt": "p", "query": "x", "maxTokens": -5}, "maxTokens must be at least 1"),
]


def _db_digest(root: Path) -> list[str]:
    return [
        hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.glob("lcm.db*"))
        if not path.name.endswith("-shm")
    ]


@pytest.mark.parametrize(
    "tool,arguments,error", MODEL_MISTAKES, ids=[f"{t} {a}" for t, a, _ in MODEL_MISTAKES]
)
def test_a_model_mistake_is_an_answer_that_says_what_to_fix(
    corpus: tuple[Path, dict[str, Any]], tool: str, arguments: Any, error: str
) -> None:
    root, _ = corpus
    before = _db_digest(root)
    payload = failed(root, tool, arguments)
    assert payload["error"].startswith(error), payload
    assert _db_digest(root) == before


def test_every_tool_error_writes_nothing(
    corpus: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, c = corpus
    before = _db_digest(root)
    for name, arguments in [
        ("lcm_grep", {"pattern": "(x"}),
        ("lcm_describe", {"id": "sum_nope"}),
        ("lcm_describe", {"id": "file_otherconv000001"}),
        ("lcm_expand", {"summaryIds": ["sum_nope"]}),
        ("lcm_expand_query", {"prompt": "p", "summaryIds": ["sum_nope"]}),
    ]:
        failed(root, name, arguments)
    for name, arguments in SAMPLES:
        run(root, name, arguments)
    assert _db_digest(root) == before


def test_a_plugin_mistake_is_invalid_argument(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    for params, message in [
        ({"tool": "lcm_gerp", "arguments": {}}, "Unknown tool 'lcm_gerp'"),
        ({"arguments": {}}, "Unknown tool ''"),
        ({"tool": "lcm_grep", "arguments": ["pattern"]}, "--arguments must be a JSON object"),
        ({"tool": "lcm_grep", "arguments": "{not json"}, "--arguments is not JSON"),
        ({"tool": "lcm_grep", "arguments": "42"}, "--arguments must be a JSON object"),
    ]:
        with pytest.raises(LcmError) as caught:
            call("recall.tool", {**params, "session_key": KEY}, openclaw_dir=str(root))
        assert caught.value.code == "INVALID_ARGUMENT" and caught.value.message.startswith(message)
    with pytest.raises(LcmError) as unknown:
        call("recall.tool", {"tool": "lcm_gerp"}, openclaw_dir=str(root))
    assert unknown.value.details["suggestions"][0] == "lcm_grep"


def test_absent_arguments_are_none_and_nulls_are_absent(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    assert failed(root, "lcm_grep", None)["error"] == "lcm_grep needs pattern."
    assert "lcm_grep takes: pattern (required), mode," in failed(root, "lcm_grep", None)["hint"]
    text = ok(root, "lcm_grep", {"pattern": "billing", "mode": None, "limit": 2.9, "extra": 1})
    assert "**Mode:** regex" in text and len(re.findall(r"^- \[", text, re.M)) <= 4  # limit 2 per source


def test_work_ms_keeps_headroom_for_the_host() -> None:
    class Ctx:
        engine_settings = EngineSettings({})

    work = tools_mod._work_ms
    assert work(Ctx(), 150_000, 120_000) == 120_000  # type: ignore[arg-type]
    assert work(Ctx(), 60_000, 120_000) == 45_000  # type: ignore[arg-type]
    assert work(Ctx(), 8_000, 120_000) == 6_000  # type: ignore[arg-type]
    assert work(Ctx(), 1, 120_000) == 1  # type: ignore[arg-type]
    Ctx.engine_settings = EngineSettings({"delegationTimeoutMs": 20_000})
    assert work(Ctx(), 150_000, 120_000) == 20_000  # type: ignore[arg-type]


def test_a_state_dir_without_lcm_db_has_no_conversation(tmp_path: Path) -> None:
    (tmp_path / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {}}}}})
    )
    assert failed(tmp_path, "lcm_grep", {"pattern": "x"})["error"].startswith("No LCM conversation found")
    assert failed(tmp_path, "lcm_grep", {"pattern": "x", "allConversations": True})["error"] == (
        "LCM has stored no conversation yet: there is nothing to search."
    )
    assert not (tmp_path / "lcm.db").exists()


def test_tool_calls_stay_light(corpus: tuple[Path, dict[str, Any]]) -> None:
    from tests.test_startup import loaded_modules

    root, _ = corpus
    assert loaded_modules("tool", "specs", typing=True) == []
    for name, arguments in SAMPLES:
        words = ["--tool", name, "--arguments", json.dumps(arguments), "--session-key", KEY]
        assert loaded_modules("--openclaw-dir", str(root), "tool", *words) == [], name


def test_grep_says_when_a_source_has_more_than_the_limit(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    data = run(root, "lcm_grep", {"pattern": "billing", "mode": "full_text", "limit": 1})
    assert (
        "**Total matches:** 2\n**Not complete:** messages: more matches than the limit (1); " in data["text"]
    )
    assert data["details"]["complete"] is False
