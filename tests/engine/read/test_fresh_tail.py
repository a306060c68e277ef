"""The CLI fresh-tail rule (cli-contract.md §12, §11.6, §11.3): `messages tail` and the
freshTailMessages / freshTailTokens figures of `conversations list`.

Rule: the conversation's context items of type 'message' newest ordinal first (summary
items skipped), at most ``count`` of them, accumulating token_count and stopping before
the first older row that would push the total above ``maxTokens`` (the newest row is
always kept); output oldest first.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm

ITEM_KEYS = [
    "messageId",
    "conversationId",
    "seq",
    "role",
    "tokenCount",
    "createdAt",
    "largeContent",
    "preview",
    "content",
]


# --------------------------------------------------------------------------------------
# building conversations whose context is exactly a given sequence


@dataclass(frozen=True)
class M:
    """A message context item."""

    tokens: int
    role: str = "assistant"
    content: str | None = None


@dataclass(frozen=True)
class S:
    """A summary context item (its source message is outside the context)."""

    tokens: int = 7


@dataclass
class Built:
    conversation_id: int
    # message context items in ordinal order: (message_id, seq, tokens, role)
    context_messages: list[tuple[int, int, int, str]]
    total_messages: int
    total_tokens: int


def add_conversation(
    store: Store, items: Sequence[M | S], *, session_key: str | None = None, outside: Sequence[int] = ()
) -> Built:
    """One conversation whose context is ``items`` in order (ordinals 0..n-1), plus
    messages outside the context with the ``outside`` token counts."""
    cid = store.create_conversation(f"sess-{session_key or id(items)}-{len(items)}", session_key=session_key)
    context: list[tuple[int, int, int, str]] = []
    total_messages = total_tokens = 0
    for n, tokens in enumerate(outside):
        store.add_message(
            cid,
            "user",
            f"outside {n}",
            token_count=tokens,
            in_context=False,
            created_at=f"2026-07-01 08:{n % 60:02d}:00",
        )
        total_messages += 1
        total_tokens += tokens
    for n, item in enumerate(items):
        stamp = f"2026-07-01 {9 + n // 60:02d}:{n % 60:02d}:00"
        if isinstance(item, M):
            content = item.content if item.content is not None else f"message {n} with {item.tokens} tokens"
            mid = store.add_message(cid, item.role, content, token_count=item.tokens, created_at=stamp)
            seq = store.conn.execute("SELECT seq FROM messages WHERE message_id = ?", (mid,)).fetchone()[0]
            context.append((mid, seq, item.tokens, item.role))
            total_messages += 1
            total_tokens += item.tokens
        else:
            source = store.add_message(
                cid, "user", f"summarized {n}", token_count=11, created_at=stamp, in_context=False
            )
            total_messages += 1
            total_tokens += 11
            sid = store.add_leaf_summary(cid, [source], f"summary {n}", token_count=item.tokens)
            store.append_context_item(cid, summary_id=sid)
    return Built(cid, context, total_messages, total_tokens)


def write_config(state: Path, **config: Any) -> None:
    state.mkdir(parents=True, exist_ok=True)
    root = {"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": config}}}}
    (state / "openclaw.json").write_text(json.dumps(root))


def model(
    context_messages: Sequence[tuple[int, int, int, str]], count: int, cap: int | None
) -> list[tuple[int, int, int, str]]:
    """The §12 rule written out plainly."""
    picked: list[tuple[int, int, int, str]] = []
    total = 0
    for row in list(reversed(context_messages))[:count]:
        if picked and cap is not None and total + row[2] > cap:
            break
        picked.append(row)
        total += row[2]
    return list(reversed(picked))


def tail(state: Path, cid: int, *extra: str) -> dict[str, Any]:
    out = lcm("--openclaw-dir", str(state), "messages", "tail", "--conversation-id", str(cid), *extra)
    assert out.code == 0, out.stderr
    envelope = out.json
    assert list(envelope) == ["ok", "command", "data", "meta"]
    assert envelope["command"] == "messages.tail"
    data = envelope["data"]
    assert list(data) == ["conversationIdentity", "limits", "selected", "conversation", "messages"]
    assert list(data["limits"]) == ["count", "maxTokens"]
    assert list(data["selected"]) == ["messages", "tokens", "firstSeq", "lastSeq"]
    assert list(data["conversation"]) == ["messages", "tokens"]
    for item in data["messages"]:
        assert list(item) == ITEM_KEYS
    # internal consistency of the figures
    messages = data["messages"]
    assert data["selected"]["messages"] == len(messages)
    assert data["selected"]["tokens"] == sum(m["tokenCount"] for m in messages)
    assert data["selected"]["firstSeq"] == (messages[0]["seq"] if messages else None)
    assert data["selected"]["lastSeq"] == (messages[-1]["seq"] if messages else None)
    return data


def conversation_rows(state: Path) -> dict[int, dict[str, Any]]:
    out = lcm("--openclaw-dir", str(state), "conversations", "list", "--limit", "500")
    assert out.code == 0, out.stderr
    return {row["conversationId"]: row for row in out.json["data"]["items"]}


def selected_ids(data: dict[str, Any]) -> list[int]:
    return [m["messageId"] for m in data["messages"]]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    root = tmp_path / "openclaw"
    root.mkdir()
    return root


def build(state: Path, *conversations: Sequence[M | S], **kw: Any) -> list[Built]:
    with Store.open(state / "lcm.db") as store:
        return [add_conversation(store, items, **kw) for items in conversations]


# --------------------------------------------------------------------------------------
# the reference's pinned case


def test_pinned_case_count_3_cap_70(state: Path) -> None:
    """Tokens [100 user, 60, 30, 50] in ordinal order, count 3, cap 70.

    Candidates newest first (count 3): 50, 30, 60. 50 is kept (always); 50 + 30 = 80 > 70
    stops the walk. So only the newest row is selected: no extension back to the user
    message (that is the runtime's rule, not the CLI's), and 60 is never reached.
    """
    (conv,) = build(state, [M(100, "user"), M(60), M(30), M(50)])
    write_config(state, freshTailMaxTokens=70)
    data = tail(state, conv.conversation_id, "--count", "3")
    newest = conv.context_messages[-1]
    assert data["limits"] == {"count": 3, "maxTokens": 70}
    assert data["selected"] == {"messages": 1, "tokens": 50, "firstSeq": newest[1], "lastSeq": newest[1]}
    assert selected_ids(data) == [newest[0]]
    assert data["messages"][0]["role"] == "assistant"
    assert data["conversation"] == {"messages": 4, "tokens": 240}
    # The same through freshTailCount, and in the conversation row.
    write_config(state, freshTailCount=3, freshTailMaxTokens=70)
    assert tail(state, conv.conversation_id)["selected"]["messages"] == 1
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (1, 50)


# --------------------------------------------------------------------------------------
# count cap and token cap


def test_default_limits_without_config(state: Path) -> None:
    (conv,) = build(state, [M(1)] * 70)
    data = tail(state, conv.conversation_id)
    assert data["limits"] == {"count": 64, "maxTokens": None}
    assert data["selected"]["messages"] == 64
    assert data["selected"]["firstSeq"] == 7 and data["selected"]["lastSeq"] == 70
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (64, 64)


@pytest.mark.parametrize("count", [1, 2, 4, 9, 10, 11, 500])
def test_count_cap(state: Path, count: int) -> None:
    (conv,) = build(state, [M(i + 1) for i in range(10)])
    data = tail(state, conv.conversation_id, "--count", str(count))
    expected = model(conv.context_messages, count, None)
    assert data["limits"] == {"count": count, "maxTokens": None}
    assert selected_ids(data) == [r[0] for r in expected]
    assert [m["seq"] for m in data["messages"]] == sorted(m["seq"] for m in data["messages"])  # ascending


@pytest.mark.parametrize(
    ("cap", "expected_tokens"),
    [
        (1000, [10, 20, 30, 40]),
        (100, [10, 20, 30, 40]),  # exactly at the cap is kept
        (99, [20, 30, 40]),
        (90, [20, 30, 40]),
        (75, [30, 40]),
        (70, [30, 40]),
        (69, [40]),
        (40, [40]),
        (39, [40]),  # newest always kept
        (0, [40]),
    ],
)
def test_token_cap(state: Path, cap: int, expected_tokens: list[int]) -> None:
    (conv,) = build(state, [M(10), M(20), M(30), M(40)])
    write_config(state, freshTailMaxTokens=cap)
    data = tail(state, conv.conversation_id)
    assert data["limits"] == {"count": 64, "maxTokens": cap}
    assert [m["tokenCount"] for m in data["messages"]] == expected_tokens
    assert data["selected"]["tokens"] == sum(expected_tokens)
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (len(expected_tokens), sum(expected_tokens))


def test_newest_row_kept_even_when_it_alone_exceeds_the_cap(state: Path) -> None:
    (conv,) = build(state, [M(5), M(5), M(500)])
    write_config(state, freshTailMaxTokens=10)
    data = tail(state, conv.conversation_id)
    assert [m["tokenCount"] for m in data["messages"]] == [500]
    assert data["selected"] == {"messages": 1, "tokens": 500, "firstSeq": 3, "lastSeq": 3}
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (1, 500)


def test_walk_stops_at_first_overflow_and_does_not_skip_ahead(state: Path) -> None:
    """[1, 1, 50, 30] cap 60: 30 kept, 30 + 50 > 60 stops; the 1s would fit but are older."""
    (conv,) = build(state, [M(1), M(1), M(50), M(30)])
    write_config(state, freshTailMaxTokens=60)
    assert [m["tokenCount"] for m in tail(state, conv.conversation_id)["messages"]] == [30]


def test_zero_cap_with_zero_token_rows(state: Path) -> None:
    """cap 0: total + 0 > 0 is false, so zero-token rows keep joining a zero-token newest row."""
    (conv,) = build(state, [M(0), M(5), M(0), M(0)])
    write_config(state, freshTailMaxTokens=0)
    data = tail(state, conv.conversation_id)
    assert [m["tokenCount"] for m in data["messages"]] == [0, 0]
    assert data["selected"]["firstSeq"] == 3 and data["selected"]["lastSeq"] == 4
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (2, 0)


def test_count_then_cap_interplay(state: Path) -> None:
    (conv,) = build(state, [M(1)] * 5 + [M(10)] * 5)
    write_config(state, freshTailCount=8, freshTailMaxTokens=45)
    data = tail(state, conv.conversation_id)
    # newest first: 10,10,10,10 (=40), next 10 -> 50 > 45 stops before the 1s
    assert [m["tokenCount"] for m in data["messages"]] == [10, 10, 10, 10]
    write_config(state, freshTailCount=3, freshTailMaxTokens=1000)
    assert tail(state, conv.conversation_id)["selected"]["messages"] == 3


def test_count_option_does_not_disable_the_token_cap(state: Path) -> None:
    (conv,) = build(state, [M(20)] * 10)
    write_config(state, freshTailCount=2, freshTailMaxTokens=50)
    plain = tail(state, conv.conversation_id)
    assert plain["limits"] == {"count": 2, "maxTokens": 50}
    assert plain["selected"]["messages"] == 2
    widened = tail(state, conv.conversation_id, "--count", "10")
    assert widened["limits"] == {"count": 10, "maxTokens": 50}
    assert widened["selected"] == {"messages": 2, "tokens": 40, "firstSeq": 9, "lastSeq": 10}
    narrowed = tail(state, conv.conversation_id, "--count", "1")
    assert narrowed["limits"] == {"count": 1, "maxTokens": 50}
    assert narrowed["selected"]["messages"] == 1


@pytest.mark.parametrize(("raw", "expected"), [(0, 0), (123, 123)])
def test_max_tokens_normalization(state: Path, raw: Any, expected: int | None) -> None:
    """maxTokens is the effective value when it is an integer >= 0 (what `config set` accepts)."""
    (conv,) = build(state, [M(40), M(40), M(40)])
    write_config(state, freshTailMaxTokens=raw)
    data = tail(state, conv.conversation_id)
    assert data["limits"]["maxTokens"] == expected
    assert data["selected"]["messages"] == len(model(conv.context_messages, 64, expected))


def test_token_cap_from_environment_beats_plugin_config(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (conv,) = build(state, [M(10)] * 6)
    write_config(state, freshTailMaxTokens=45)
    monkeypatch.setenv("LCM_FRESH_TAIL_MAX_TOKENS", "25")
    data = tail(state, conv.conversation_id)
    assert data["limits"]["maxTokens"] == 25
    assert data["selected"]["messages"] == 2
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (2, 20)


# --------------------------------------------------------------------------------------
# summary items, ordinal order, totals


def test_summary_items_are_skipped_not_boundaries(state: Path) -> None:
    (conv,) = build(state, [M(10), M(20), S(), M(30), S(), M(40)])
    mids = [r[0] for r in conv.context_messages]
    write_config(state, freshTailCount=3)
    assert selected_ids(tail(state, conv.conversation_id)) == mids[1:]
    assert selected_ids(tail(state, conv.conversation_id, "--count", "4")) == mids
    write_config(state, freshTailMaxTokens=75)
    assert selected_ids(tail(state, conv.conversation_id)) == mids[2:]  # 40 + 30; +20 > 75
    write_config(state, freshTailMaxTokens=90)
    assert selected_ids(tail(state, conv.conversation_id)) == mids[1:]  # summary tokens never count
    row = conversation_rows(state)[conv.conversation_id]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (3, 90)


def test_summary_at_the_newest_ordinal(state: Path) -> None:
    (conv,) = build(state, [M(10), M(20), S(), S()])
    data = tail(state, conv.conversation_id, "--count", "1")
    assert selected_ids(data) == [conv.context_messages[-1][0]]
    assert data["selected"]["tokens"] == 20


def test_sample_conversation_tail(db_path: Path, state_dir: Path) -> None:
    """Sample conversation 1: condensed summary then messages 17..24; freshTailCount 8."""
    data = tail(state_dir, 1)
    assert data["limits"] == {"count": 8, "maxTokens": None}
    assert data["selected"] == {"messages": 8, "tokens": 236, "firstSeq": 17, "lastSeq": 24}
    assert data["conversation"] == {"messages": 24, "tokens": 516}
    data = tail(state_dir, 1, "--count", "9")  # the summary item is skipped, nothing older
    assert data["selected"]["messages"] == 8


def test_context_ordinal_order_not_seq_or_time(state: Path) -> None:
    """Candidates follow context ordinals; seq and created_at play no part."""
    with Store.open(state / "lcm.db") as store:
        cid = store.create_conversation("shuffled")
        ids = store.add_messages(
            cid,
            [
                {
                    "role": "user",
                    "content": f"m{i}",
                    "token_count": 10 + i,
                    "created_at": f"2026-07-01 09:0{i}:00",
                }
                for i in range(5)
            ],
            in_context=False,
        )
        order = [ids[3], ids[0], ids[4], ids[1], ids[2]]  # context ordinals 0..4
        for mid in order:
            store.append_context_item(cid, message_id=mid)
    data = tail(state, cid, "--count", "3")
    assert selected_ids(data) == order[2:]
    assert data["selected"]["firstSeq"] == 5 and data["selected"]["lastSeq"] == 3  # seqs of ids[4], ids[2]
    write_config(state, freshTailCount=3)
    assert selected_ids(tail(state, cid)) == order[2:]
    row = conversation_rows(state)[cid]
    assert (row["freshTailMessages"], row["freshTailTokens"]) == (3, 14 + 11 + 12)


def test_totals_cover_all_messages_not_just_context(state: Path) -> None:
    (conv,) = build(state, [M(10), S(), M(20)], outside=[100, 200])
    data = tail(state, conv.conversation_id, "--count", "1")
    # context messages 10 + 20, summarized source 11, outside 100 + 200
    assert data["conversation"] == {"messages": conv.total_messages, "tokens": conv.total_tokens}
    assert data["conversation"] == {"messages": 5, "tokens": 341}
    assert data["selected"]["tokens"] == 20


def test_nothing_selected_gives_null_seqs(state: Path) -> None:
    empty, only_summaries, some = build(state, [], [S(), S()], [M(5), M(6)])
    for conv in (empty, only_summaries):
        data = tail(state, conv.conversation_id)
        assert data["selected"] == {"messages": 0, "tokens": 0, "firstSeq": None, "lastSeq": None}
        assert data["messages"] == []
    assert tail(state, empty.conversation_id)["conversation"] == {"messages": 0, "tokens": 0}
    assert tail(state, only_summaries.conversation_id)["conversation"] == {"messages": 2, "tokens": 22}
    # freshTailCount 0 (which `config set` refuses) is used as the runtime uses it, and said.
    write_config(state, freshTailCount=0)
    for argv in (
        ("messages", "tail", "--conversation-id", str(some.conversation_id)),
        ("conversations", "list"),
    ):
        out = lcm("--openclaw-dir", str(state), *argv)
        assert out.code == 0, out.stderr
        problem = json.loads(out.stdout)["meta"]["configProblems"][0]
        assert problem["key"] == "freshTailCount" and problem["allowed"] == "an integer >= 1"


def test_tail_items_carry_full_content_and_preview(state: Path) -> None:
    long_text = "word " * 600  # 3000 characters
    (conv,) = build(state, [M(3, "user", content=long_text), M(4, "tool", content="  short\n\ttext  ")])
    data = tail(state, conv.conversation_id)
    first, second = data["messages"]
    assert first["content"] == long_text
    assert len(first["preview"]) == 240 and first["preview"].endswith("…")
    assert second["content"] == "  short\n\ttext  " and second["preview"] == "short text"
    assert (first["role"], second["role"]) == ("user", "tool")
    assert first["conversationId"] == conv.conversation_id and first["largeContent"] is None


def test_tail_by_session_key(state: Path) -> None:
    (conv,) = build(state, [M(1), M(2), M(3)], session_key="agent:tail:key")
    out = lcm(
        "--openclaw-dir", str(state), "messages", "tail", "--session-key", "agent:tail:key", "--count", "2"
    )
    assert out.code == 0
    assert out.json["data"]["conversationIdentity"]["conversationId"] == conv.conversation_id
    assert [m["tokenCount"] for m in out.json["data"]["messages"]] == [2, 3]


@pytest.mark.parametrize("value", ["0", "501", "-1", "abc", "1.5", ""])
def test_count_bounds(state: Path, value: str) -> None:
    build(state, [M(1)])
    out = lcm("--openclaw-dir", str(state), "messages", "tail", "--conversation-id", "1", f"--count={value}")
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"
    assert out.error["details"] == {"value": value}


def test_count_leading_zeros(state: Path) -> None:
    build(state, [M(1)] * 3)
    assert tail(state, 1, "--count", "002")["limits"]["count"] == 2
    assert tail(state, 1, "--count", "500")["limits"]["count"] == 500


# --------------------------------------------------------------------------------------
# conversations list agrees with messages tail


MIXED_CONVERSATIONS: list[list[M | S]] = [
    [],
    [M(100, "user"), M(60), M(30), M(50)],
    [M(10), M(20), S(), M(30), S(), M(40)],
    [S(), S()],
    [M(0), M(0), M(5), M(0)],
    [M(500)],
    [M(i % 7 * 10) for i in range(40)],
    [M(3), S(), S(), M(4), M(1000), M(2)],
]
CONFIGS: list[dict[str, Any]] = [
    {},
    {"freshTailCount": 3},
    {"freshTailCount": 3, "freshTailMaxTokens": 70},
    {"freshTailMaxTokens": 0},
    {"freshTailCount": 1},
    {"freshTailMaxTokens": 1000},
    {"freshTailCount": 12, "freshTailMaxTokens": 95},
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: json.dumps(c, separators=(",", ":")))
def test_conversation_rows_equal_messages_tail(state: Path, config: dict[str, Any]) -> None:
    built = build(state, *MIXED_CONVERSATIONS, outside=[9])
    write_config(state, **config)
    rows = conversation_rows(state)
    assert set(rows) == {b.conversation_id for b in built}
    count = config.get("freshTailCount", 64)
    cap = config.get("freshTailMaxTokens")
    for conv in built:
        data = tail(state, conv.conversation_id)
        expected = model(conv.context_messages, count, cap)
        assert selected_ids(data) == [r[0] for r in expected], conv
        row = rows[conv.conversation_id]
        assert row["freshTailMessages"] == data["selected"]["messages"]
        assert row["freshTailTokens"] == data["selected"]["tokens"]
        assert row["messageCount"] == data["conversation"]["messages"]
        assert row["messageTokens"] == data["conversation"]["tokens"]


def test_conversation_rows_agree_across_pages(state: Path) -> None:
    """Tail figures do not depend on which page a conversation row lands on."""
    built = build(state, *MIXED_CONVERSATIONS)
    write_config(state, freshTailCount=3, freshTailMaxTokens=70)
    seen: dict[int, dict[str, Any]] = {}
    cursor = None
    while True:
        args = ["--openclaw-dir", str(state), "conversations", "list", "--limit", "3"]
        out = lcm(*args, *(["--cursor", cursor] if cursor else []))
        seen.update({r["conversationId"]: r for r in out.json["data"]["items"]})
        cursor = out.json["pagination"]["nextCursor"]
        if cursor is None:
            break
    for conv in built:
        data = tail(state, conv.conversation_id)
        assert (
            seen[conv.conversation_id]["freshTailMessages"],
            seen[conv.conversation_id]["freshTailTokens"],
        ) == (data["selected"]["messages"], data["selected"]["tokens"])


ITEMS = st.lists(
    st.one_of(st.builds(M, st.integers(min_value=0, max_value=120)), st.builds(S, st.integers(0, 50))),
    max_size=14,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=ITEMS,
    count=st.integers(min_value=1, max_value=10),
    cap=st.one_of(st.none(), st.integers(min_value=0, max_value=200)),
    override=st.one_of(st.none(), st.integers(min_value=1, max_value=12)),
)
def test_property_tail_matches_the_rule(
    items: list[M | S], count: int, cap: int | None, override: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (conv,) = build(root, items)
        config: dict[str, Any] = {"freshTailCount": count}
        if cap is not None:
            config["freshTailMaxTokens"] = cap
        write_config(root, **config)
        extra = ["--count", str(override)] if override is not None else []
        data = tail(root, conv.conversation_id, *extra)
        effective_count = override if override is not None else count
        expected = model(conv.context_messages, effective_count, cap)
        assert data["limits"] == {"count": effective_count, "maxTokens": cap}
        assert selected_ids(data) == [r[0] for r in expected]
        assert data["conversation"] == {"messages": conv.total_messages, "tokens": conv.total_tokens}
        row = conversation_rows(root)[conv.conversation_id]
        list_expected = model(conv.context_messages, count, cap)  # the list has no --count
        assert (row["freshTailMessages"], row["freshTailTokens"]) == (
            len(list_expected),
            sum(r[2] for r in list_expected),
        )
