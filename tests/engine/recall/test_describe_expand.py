"""`lcm describe`, `lcm expand` and `--max-tokens` on the known recall corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.read.token_budget import json_tokens
from tests.conftest import lcm
from tests.support.recall_corpus import MAIN_MESSAGES, build_recall_corpus, stamp


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("recall-describe")
    files = root / "lcm-files"
    (root / "openclaw.json").write_text(
        json.dumps(
            {
                "plugins": {
                    "entries": {
                        "lossless-claw": {"config": {"largeFilesDir": str(files), "maxExpandTokens": 90}}
                    }
                }
            }
        )
    )
    ids = build_recall_corpus(root / "lcm.db", files)
    # A long leaf, to exercise cutting one message mid-text.
    with Store.open(root / "lcm.db") as store:
        long_id = store.add_message(ids["other"], "assistant", "word " * 400, created_at=stamp(-20))
        ids["long_leaf"] = store.add_leaf_summary(
            ids["other"], [long_id], "A long answer.", summary_id="sum_long"
        )
        big = files / str(ids["other"]) / "file_big0000000000001.txt"
        big.parent.mkdir(parents=True, exist_ok=True)
        big.write_text("".join(f"line {i}: ünïcode ✓ text\n" for i in range(200)), encoding="utf-8")
        store.add_large_file(ids["other"], str(big), file_id="file_big0000000000001", mime_type="text/plain")
    return root, ids


def run(root: Path, *args: str) -> Any:
    return lcm("--openclaw-dir", str(root), *args)


def ok(root: Path, *args: str) -> dict[str, Any]:
    out = run(root, *args)
    assert out.code == 0, out.stderr
    data: dict[str, Any] = out.json["data"]
    return data


def page_of(root: Path, *args: str) -> tuple[dict[str, Any], str | None]:
    """The data of a call and the cursor of its one continuation, the envelope's pagination."""
    out = run(root, *args)
    assert out.code == 0, out.stderr
    assert "nextCursor" not in out.json["data"].get("budget", {})
    if "--max-tokens" in args:  # a hard cap on the answer printed (meta never counts)
        assert json_tokens(out.json["data"]) <= int(args[args.index("--max-tokens") + 1])
    pagination = out.json["pagination"]
    assert pagination["hasMore"] is (pagination["nextCursor"] is not None)
    return out.json["data"], pagination["nextCursor"]


def test_describe_summary(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    data = ok(root, "describe", c["condensed"])
    assert data["type"] == "summary"
    assert data["summary"]["content"] == "Condensed: billing outage and database timeout."
    assert data["timeRange"] == {
        "earliestAt": "2026-07-01T09:00:00.000Z",
        "latestAt": "2026-07-01T09:03:00.000Z",
    }
    assert data["descendantCount"] == 2 and data["parents"] == []
    assert [x["summaryId"] for x in data["children"]] == [c["leaf_a"], c["leaf_b"]]
    assert data["sourceMessageIds"] == [1, 2, 3, 4]
    assert data["subtree"]["summaries"] == 3 and data["subtree"]["sourceMessages"] == 4
    leaf = ok(root, "describe", c["leaf_b"])
    assert [x["summaryId"] for x in leaf["parents"]] == [c["condensed"]] and leaf["children"] == []
    assert leaf["fileIds"] == ["file_text000000000001"] and leaf["sourceMessageIds"] == [3, 4]


def test_describe_file_and_reference_forms(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    data = ok(root, "describe", "file_text000000000001", "--max-bytes", "20")
    assert data["content"] == "line one\nthe billing" and data["contentCut"] is True
    assert (
        data["file"]["explorationSummary"] == "A three-line billing report."
        and data["contentSource"] == "file"
    )
    copied = ok(root, "describe", "[LCM File: file_text000000000001 | report.txt | text/plain | 71 bytes]")
    assert copied["file"]["fileId"] == "file_text000000000001" and copied["contentCut"] is False
    binary = ok(root, "describe", "file_png0000000000001")
    assert binary["content"] is None and "Binary" in binary["note"]
    outside = ok(root, "describe", "file_outside00000001")
    assert outside["content"] is None and "outside largeFilesDir" in outside["note"]


def test_describe_errors(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    for args, code, status in (
        (("describe", "sum_missing"), "SUMMARY_NOT_FOUND", 3),
        (("describe", "file_missing"), "FILE_NOT_FOUND", 3),
        (("describe", "sum_a sum_b"), "INVALID_ARGUMENT", 2),
        (("describe", c["condensed"], "--conversation-id", str(c["other"])), "NOT_IN_SCOPE", 3),
        (("describe", "file_text000000000001", "--session-key", "agent:other:x"), "NOT_IN_SCOPE", 3),
        (("describe", c["condensed"], "--max-bytes", "0"), "INVALID_ARGUMENT", 2),
    ):
        out = run(root, *args)
        assert (out.code, out.error["code"]) == (status, code), args
    assert ok(root, "describe", c["condensed"], "--session-key", "agent:main:main")["type"] == "summary"


def test_describe_max_tokens_pages_through_content(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus
    small, more = page_of(root, "describe", "file_text000000000001", "--max-tokens", "1000")
    assert small["budget"]["truncated"] is False and more is None
    cap = 400
    text, cursor, pages = "", None, 0
    while True:
        extra = ("--cursor", cursor) if cursor else ()
        page, cursor = page_of(root, "describe", "file_big0000000000001", "--max-tokens", str(cap), *extra)
        assert json_tokens(page) <= cap and page["budget"]["usedTokens"] <= cap
        text += page["content"]
        pages += 1
        if cursor is None:
            break
    full = ok(root, "describe", "file_big0000000000001")["content"]
    assert text == full and pages >= 3
    # A cap that leaves no room after the metadata: the smallest useful page, said so.
    tiny = ok(root, "describe", "file_big0000000000001", "--max-tokens", "50")
    assert tiny["content"] == full[: len(tiny["content"])] and len(tiny["content"]) >= 40
    assert tiny["budget"]["overBudget"] is True


def test_expand_walks_the_dag_in_order_within_the_cap(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    data, more = page_of(root, "expand", c["condensed"], "--max-tokens", "1000")
    assert [m["messageId"] for m in data["messages"]] == [1, 2, 3, 4]
    assert [m["content"] for m in data["messages"]] == [text for _, text in MAIN_MESSAGES[:4]]
    assert [m["leafSummaryId"] for m in data["messages"]] == [c["leaf_a"]] * 2 + [c["leaf_b"]] * 2
    assert data["budget"]["truncated"] is False and more is None
    assert data["total"]["messages"] == 4


def test_expand_default_cap_omissions_and_cursor(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    first, cursor = page_of(root, "expand", c["condensed"])  # maxExpandTokens = 90 in this config
    assert first["budget"]["maxTokens"] == 90
    assert first["budget"]["usedTokens"] <= 90
    shown = [m["messageId"] for m in first["messages"]]
    assert 0 < len(shown) < 4
    omitted = first["budget"]["omitted"]
    assert omitted["messages"] == 4 - len(shown)
    seen = list(shown)
    while cursor:
        page, cursor = page_of(root, "expand", c["condensed"], "--cursor", cursor)
        seen += [m["messageId"] for m in page["messages"]]
    assert seen == [1, 2, 3, 4]


def test_expand_cuts_a_message_larger_than_the_cap_and_continues_inside_it(
    corpus: tuple[Path, dict[str, Any]],
) -> None:
    root, c = corpus
    text, cursor = "", None
    for _ in range(20):
        extra = ("--cursor", cursor) if cursor else ()
        page, cursor = page_of(root, "expand", c["long_leaf"], "--max-tokens", "300", *extra)
        assert len(page["messages"]) == 1
        text += page["messages"][0]["content"]
        if cursor is None:
            break
    assert text == "word " * 400


def test_expand_errors(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    out = run(root, "expand", "sum_missing")
    assert (out.code, out.error["code"]) == (3, "SUMMARY_NOT_FOUND")
    out = run(root, "expand", c["leaf_a"], "--conversation-id", str(c["other"]))
    assert (out.code, out.error["code"]) == (3, "NOT_IN_SCOPE")
    out = run(root, "expand", c["leaf_a"], "--cursor", "bogus")
    assert (out.code, out.error["code"]) == (2, "INVALID_CURSOR")
    _, other_cursor = page_of(root, "expand", c["condensed"], "--max-tokens", "250")
    assert other_cursor is not None
    out = run(root, "expand", c["leaf_a"], "--cursor", other_cursor)
    assert out.error["code"] == "INVALID_CURSOR"


def test_messages_list_max_tokens(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    args = ("messages", "list", "--conversation-id", str(c["main"]), "--include-content")
    full = run(root, *args).json
    cut = run(root, *args, "--max-tokens", "400")
    assert cut.code == 0, cut.stderr
    cut = cut.json
    assert json_tokens(cut["data"]) <= 400
    assert "nextCursor" not in cut["data"]["budget"]
    items = cut["data"]["items"]
    assert 0 < len(items) < len(full["data"]["items"])
    assert cut["data"]["budget"]["omitted"]["items"] == len(full["data"]["items"]) - len(items)
    assert cut["data"]["budget"]["usedTokens"] <= 400
    assert cut["pagination"]["hasMore"] is True
    seen = [i["messageId"] for i in items]
    cursor = cut["pagination"]["nextCursor"]
    while cursor:
        page = run(root, *args, "--max-tokens", "400", "--cursor", cursor).json
        seen += [i["messageId"] for i in page["data"]["items"]]
        cursor = page["pagination"]["nextCursor"]
    assert seen == [i["messageId"] for i in full["data"]["items"]]


def test_summaries_show_max_tokens(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus
    data, cursor = page_of(root, "summaries", "show", c["long_leaf"], "--max-tokens", "400")
    assert data["sourceMessages"] == [] and data["budget"]["omitted"]["sourceMessages"] == 1
    assert "continueWith" not in data["budget"]
    # the source messages left out continue with `lcm expand ID --cursor`
    rest, _ = page_of(root, "expand", c["long_leaf"], "--cursor", str(cursor), "--max-tokens", "400")
    assert rest["messages"][0]["messageId"]
    whole, more = page_of(root, "summaries", "show", c["leaf_a"], "--max-tokens", "4000")
    assert len(whole["sourceMessages"]) == 2 and whole["budget"]["truncated"] is False and more is None
    assert "pagination" not in run(root, "summaries", "show", c["leaf_a"]).json  # cli-contract.md §7.1


def test_describe_max_tokens_cuts_a_long_source_id_list(
    corpus: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db = tmp_path / "deep.db"
    with Store.open(db) as store:
        cid = store.create_conversation("s-deep")
        ids = store.add_messages(cid, [{"role": "user", "content": f"m{i}"} for i in range(600)])
        leaves = [store.add_leaf_summary(cid, ids[i : i + 100], f"leaf {i}") for i in range(0, 600, 100)]
        top = store.add_condensed_summary(cid, leaves, "the whole story " * 50, summary_id="sum_top")
    out = lcm("--db", str(db), "describe", top, "--max-tokens", "1000")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert json_tokens(data) <= 1000
    assert (
        0 < len(data["sourceMessageIds"]) < 600
        and data["sourceMessageIds"] == ids[: len(data["sourceMessageIds"])]
    )
    assert data["budget"]["omitted"]["sourceMessageIds"] == 600 - len(data["sourceMessageIds"])
    assert data["summary"]["content"] and data["budget"]["usedTokens"] <= 1000


def _dag_db(path: Path, other_leaves: int, analyze: bool) -> str:
    """One conversation with a depth-1 summary (and a depth-2 one above it), plus
    ``other_leaves`` leaf summaries in another conversation; analyzed when ``analyze`` (as
    `PRAGMA optimize` leaves a used file). Returns the depth-1 summary's id."""
    import sqlite3

    with Store.open(path) as store:
        cid = store.create_conversation("s-dag")
        ids = store.add_messages(cid, [{"role": "user", "content": f"m{i}"} for i in range(24)])
        leaves = [store.add_leaf_summary(cid, ids[i : i + 4], f"leaf {i}") for i in range(0, 24, 4)]
        mid = store.add_condensed_summary(cid, leaves[:3], "depth one", summary_id="sum_mid")
        other = store.add_condensed_summary(cid, leaves[3:], "depth one too")
        store.add_condensed_summary(cid, [mid, other], "depth two")
        bulk = store.create_conversation("s-bulk")
        rows = store.add_messages(bulk, [{"role": "user", "content": f"b{i}"} for i in range(other_leaves)])
        with store.transaction():
            for i, message_id in enumerate(rows):
                store.add_leaf_summary(bulk, [message_id], f"bulk {i}")
    conn = sqlite3.connect(path)
    conn.execute("ANALYZE" if analyze else "DROP TABLE IF EXISTS sqlite_stat1")
    conn.commit()
    conn.close()
    return mid


@pytest.mark.parametrize("analyze", [True, False], ids=["statistics", "none"])
@pytest.mark.parametrize("name", ["describe", "expand"])
def test_describe_and_expand_cost_does_not_grow_with_the_table(
    tmp_path: Path, name: str, analyze: bool
) -> None:
    """SQLite's work (VM steps) for one depth-1 summary is the same beside 20 or 2,000 other
    summaries, with or without statistics: no query scans summaries, links or messages (a
    recursive walk joined to them made SQLite build a Bloom filter over the whole table at
    every step)."""
    from lcm_cli.engine import api
    from lcm_cli.engine.context import Context

    def steps(other_leaves: int) -> tuple[int, list[Any]]:
        db = tmp_path / f"dag-{other_leaves}.db"
        summary_id = _dag_db(db, other_leaves, analyze)
        ctx = Context(db=str(db), openclaw_dir=str(tmp_path))
        ctx.resolve_paths()
        counted = [0]

        def tick() -> int:
            counted[0] += 1
            return 0

        ctx.db.set_progress_handler(tick, 100)
        try:
            envelope = api.invoke(name, {}, args=(summary_id,), context=ctx).envelope
        finally:
            ctx.close()
        data = envelope["data"]
        if name == "describe":
            return counted[0], [data["subtree"], data["sourceMessageIds"], len(data["parents"])]
        return counted[0], [m["messageId"] for m in data["messages"]]

    small, small_data = steps(20)
    big, big_data = steps(2_000)
    assert big_data == small_data
    assert big <= small * 1.2 + 20, (small, big)
