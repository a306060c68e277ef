"""Every `--max-tokens` is a hard cap on the answer printed (``data``), and says what it left out.

A conversation whose summaries and messages are each far larger than the cap: whatever
the command, the printed ``data`` stays within the cap, the budget report names what
was cut, and the cursor it gives continues where the output stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store import Store
from tests.conftest import lcm

WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
BIG = WORDS * 300  # about 6,000 tokens


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cap") / "lcm.db"
    with Store.open(path) as store:
        cid = store.create_conversation("s-big", session_key="agent:main:big")
        ids = store.add_messages(
            cid,
            [
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} {BIG}", "token_count": 6000}
                for i in range(6)
            ],
        )
        a = store.add_leaf_summary(cid, ids[:3], "A " + BIG, summary_id="sum_aaaaaaaaaaaaaaaa")
        b = store.add_leaf_summary(cid, ids[3:], "B " + BIG, summary_id="sum_bbbbbbbbbbbbbbbb")
        store.add_condensed_summary(cid, [a, b], "C " + BIG, summary_id="sum_cccccccccccccccc")
    return path


def data_of(db: Path, *args: str) -> dict[str, Any]:
    done = lcm("--db", str(db), *args)
    assert done.code == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)["data"]
    return data


def printed_tokens(value: Any) -> int:
    return estimate_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


@pytest.mark.parametrize("cap", [500, 1500])
@pytest.mark.parametrize(
    "args",
    [
        ("summaries", "show", "sum_cccccccccccccccc"),
        ("summaries", "show", "sum_aaaaaaaaaaaaaaaa"),
        ("describe", "sum_cccccccccccccccc"),
        ("expand", "sum_aaaaaaaaaaaaaaaa"),
        ("messages", "list", "--conversation-id", "1", "--include-content"),
    ],
    ids=["show-condensed", "show-leaf", "describe", "expand", "messages-list"],
)
def test_max_tokens_is_a_hard_cap_on_the_printed_data(big_db: Path, args: tuple[str, ...], cap: int) -> None:
    done = lcm("--db", str(big_db), *args, "--max-tokens", str(cap))
    assert done.code == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert printed_tokens(data) <= cap, printed_tokens(data)  # the answer; meta's paths never count
    assert json.dumps(data).count("lorem") > 0  # something real was shown, not nothing


def test_summaries_show_says_what_it_cut_and_where_the_text_continues(big_db: Path) -> None:
    data = data_of(big_db, "summaries", "show", "sum_cccccccccccccccc", "--max-tokens", "400")
    budget = data["budget"]
    assert budget["truncated"] and budget["omitted"]["contentChars"] > 0
    assert "continueWith" not in budget and "contentContinueWith" not in budget
    shown = data["summary"]["content"]
    # the whole text is `lcm describe`'s, page by page through its pagination
    text, cursor = "", None
    while True:
        extra = ("--cursor", cursor) if cursor else ()
        done = lcm("--db", str(big_db), "describe", "sum_cccccccccccccccc", "--max-tokens", "1500", *extra)
        page = json.loads(done.stdout)
        text += page["data"]["summary"]["content"]
        cursor = page["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert text == "C " + BIG and text.startswith(shown)


def test_one_message_over_the_cap_is_cut_and_marked(big_db: Path) -> None:
    data = data_of(
        big_db, "messages", "list", "--conversation-id", "1", "--include-content", "--max-tokens", "300"
    )
    first = data["items"][0]
    assert (
        first["contentTruncated"]["chars"] == len(first["content"]) < first["contentTruncated"]["totalChars"]
    )
    assert data["budget"]["omitted"]["contentChars"] > 0
