"""Assembly: summary XML, messages rebuilt from parts, budget fill, tool pairing, clamp."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.assembly import tool_pairing as tp
from lcm_cli.engine.assembly.assembler import assemble, clamp, message_tokens
from lcm_cli.engine.core.tokens import estimate_tokens, serialized_tokens
from lcm_cli.engine.db.store import Store
from tests.support.compaction_sim import effective, new_conversation, stamp


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(tmp_path / "lcm.db") as opened:
        yield opened


def test_summaries_are_untrusted_xml_with_local_times_and_parents(store: Store) -> None:
    cid = new_conversation(store)
    ids = store.add_messages(
        cid,
        [
            {"role": "user", "content": "a", "created_at": "2026-01-15 14:00:00"},
            {"role": "assistant", "content": "b", "created_at": "2026-01-15 15:30:00"},
            {"role": "user", "content": "c", "created_at": "2026-01-15 16:00:00"},
        ],
    )
    leaf1 = store.add_leaf_summary(cid, ids[:1], 'x < y & "z"', summary_id="sum_1111111111111111")
    leaf2 = store.add_leaf_summary(cid, ids[1:2], "second", summary_id="sum_2222222222222222")
    top = store.add_condensed_summary(cid, [leaf1, leaf2], "both", summary_id="sum_3333333333333333")
    store.replace_context_with_summary(cid, leaf1)
    store.replace_context_with_summary(cid, leaf2)
    store.replace_context_with_summary(cid, top)
    result = assemble(
        store.conn, cid, effective(timezone="America/New_York", freshTailCount=1), token_budget=10000
    )
    first = result["messages"][0]
    assert first["role"] == "user"
    assert first["content"] == (
        '<summary id="sum_3333333333333333" kind="condensed" depth="1" descendant_count="2" trust="untrusted"'
        ' earliest_at="2026-01-15T09:00:00" latest_at="2026-01-15T10:30:00">\n'
        "  <parents>\n"
        '    <summary_ref id="sum_1111111111111111" />\n'
        '    <summary_ref id="sum_2222222222222222" />\n'
        "  </parents>\n"
        "  <content>\nboth\n  </content>\n</summary>"
    )
    assert result["messages"][1] == {"role": "user", "content": "c"}
    assert result["systemPromptAddition"] is None
    assert result["estimatedTokens"] == sum(serialized_tokens(m) for m in result["messages"])
    # A leaf in context: no <parents>; content is XML-escaped.
    cid2 = new_conversation(store, "agent:main:two")
    (mid,) = store.add_messages(cid2, [{"role": "user", "content": "q", "created_at": "2026-01-15 14:00:00"}])
    store.add_messages(cid2, [{"role": "user", "content": "tail"}])
    leaf = store.add_leaf_summary(cid2, [mid], 'x < y & "z"', summary_id="sum_4444444444444444")
    store.replace_context_with_summary(cid2, leaf)
    xml = assemble(store.conn, cid2, effective(freshTailCount=1))["messages"][0]["content"]
    assert xml == (
        '<summary id="sum_4444444444444444" kind="leaf" depth="0" descendant_count="0" trust="untrusted"'
        ' earliest_at="2026-01-15T14:00:00" latest_at="2026-01-15T14:00:00">\n'
        '  <content>\nx &lt; y &amp; "z"\n  </content>\n</summary>'
    )


def _tool_turn(store: Store, cid: int, call: str, when: int, *, with_result: bool = True) -> None:
    store.add_messages(
        cid,
        [
            {
                "role": "assistant",
                "content": "",
                "created_at": stamp(when),
                "parts": [
                    {
                        "part_type": "tool",
                        "tool_call_id": call,
                        "tool_name": "read",
                        "tool_input": {"path": "notes.md"},
                        "metadata": {
                            "originalRole": "assistant",
                            "rawType": "toolCall",
                            "raw": {
                                "type": "toolCall",
                                "id": call,
                                "name": "read",
                                "arguments": {"path": "notes.md"},
                            },
                        },
                    }
                ],
            }
        ],
    )
    if with_result:
        store.add_messages(
            cid,
            [
                {
                    "role": "tool",
                    "content": f"body of {call}",
                    "created_at": stamp(when + 1),
                    "parts": [
                        {
                            "part_type": "text",
                            "text_content": f"body of {call}",
                            "tool_call_id": call,
                            "tool_name": "read",
                            "metadata": {
                                "originalRole": "toolResult",
                                "toolCallId": call,
                                "toolName": "read",
                                "isError": False,
                                "rawType": "text",
                                "raw": {"type": "text", "text": f"body of {call}"},
                            },
                        }
                    ],
                }
            ],
        )


def test_raw_messages_are_rebuilt_from_parts(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(
        cid, [{"role": "user", "content": "read it", "sender_metadata": {"senderName": "Ada"}}]
    )
    _tool_turn(store, cid, "call_abc", 10)
    messages = assemble(store.conn, cid, effective())["messages"]
    # Stored sender metadata stays in the row; lossless-claw 1.0 no longer sends it to the model.
    assert messages[0] == {"role": "user", "content": "read it"}
    call = messages[1]
    assert call["role"] == "assistant"
    assert call["content"] == [
        {"type": "toolCall", "id": "call_abc", "name": "read", "arguments": {"path": "notes.md"}}
    ]
    assert (
        call["usage"]["output"]
        == call["usage"]["totalTokens"]
        == estimate_tokens(json.dumps(call["content"], separators=(",", ":")))
    )
    assert messages[2] == {
        "role": "toolResult",
        "content": [{"type": "text", "text": "body of call_abc"}],
        "toolCallId": "call_abc",
        "toolName": "read",
        "isError": False,
    }


def test_budget_fill_drops_the_oldest_evictable_items_first(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, [{"role": "user", "content": f"old {i} " + "pad " * 200} for i in range(20)])
    store.add_messages(cid, [{"role": "user", "content": f"tail {i}"} for i in range(4)])
    result = assemble(store.conn, cid, effective(freshTailCount=4), token_budget=1000)
    contents = [m["content"] for m in result["messages"]]
    assert contents[-4:] == [f"tail {i}" for i in range(4)]
    kept_old = [c for c in contents if c.startswith("old")]
    assert kept_old and len(kept_old) < 20
    first_kept = int(kept_old[0].split()[1])
    assert [int(c.split()[1]) for c in kept_old] == list(range(first_kept, 20))  # a newest contiguous run
    assert result["estimatedTokens"] <= 1000
    assert result["details"]["droppedItems"] == 20 - len(kept_old)


def test_prompt_aware_eviction_keeps_relevant_old_items(store: Store) -> None:
    cid = new_conversation(store)
    rows = [{"role": "user", "content": f"chatter {i} " + "filler " * 230} for i in range(10)]
    rows[1]["content"] = "the kubernetes ingress broke " + "filler " * 225
    store.add_messages(cid, rows)
    store.add_messages(cid, [{"role": "user", "content": "now"}])
    config = effective(freshTailCount=1, promptAwareEviction=True)
    result = assemble(store.conn, cid, config, token_budget=1000, prompt="Why did kubernetes ingress fail?")
    contents = [m["content"] for m in result["messages"]]
    assert any(c.startswith("the kubernetes") for c in contents)
    assert result["details"]["promptAware"] is True
    plain = assemble(store.conn, cid, effective(freshTailCount=1), token_budget=1000, prompt="kubernetes")
    assert not any(m["content"].startswith("the kubernetes") for m in plain["messages"])


def test_unpaired_calls_and_missing_results(store: Store) -> None:
    cid = new_conversation(store)
    store.add_messages(cid, [{"role": "user", "content": "start"}])
    _tool_turn(store, cid, "call_old", 10, with_result=False)  # before the tail, result never stored
    store.add_messages(cid, [{"role": "user", "content": "go on"}])
    _tool_turn(store, cid, "call_new", 20, with_result=False)  # in the tail, host result pending
    messages = assemble(store.conn, cid, effective(freshTailCount=2))["messages"]
    roles = [m["role"] for m in messages]
    # The old call went with its message; the tail call got a synthetic error result.
    assert roles == ["user", "user", "assistant", "toolResult"]
    synthetic = messages[-1]
    assert synthetic["toolCallId"] == "call_new" and synthetic["isError"] is True
    assert synthetic["content"] == [{"type": "text", "text": tp.MISSING_RESULT_TEXT}]


def test_pairing_moves_results_after_calls_and_drops_orphans() -> None:
    call = {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "c1", "name": "x"},
            {"type": "toolCall", "id": "c2", "name": "y"},
        ],
    }
    r1 = {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "1"}]}
    r2 = {"role": "toolResult", "toolCallId": "c2", "content": [{"type": "text", "text": "2"}]}
    orphan = {"role": "toolResult", "toolCallId": "zz", "content": [{"type": "text", "text": "?"}]}
    user = {"role": "user", "content": "hi"}
    out = tp.sanitize_pairing([orphan, call, user, r2, r1])
    assert out == [call, r1, r2, user]
    duplicate = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "x"}]}
    assert tp.sanitize_pairing([call, r1, r2, duplicate]) == [call, r1, r2]
    aborted = {**call, "stopReason": "aborted", "content": [*call["content"], {"type": "text", "text": "t"}]}
    assert tp.sanitize_pairing([aborted, r1]) == [{**aborted, "content": [{"type": "text", "text": "t"}]}]
    assert (
        tp.normalize(
            [
                {"role": "assistant", "content": " "},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
            ]
        )
        == []
    )


def test_clamp_keeps_the_newest_suffix_within_ninety_percent() -> None:
    big = "word " * 200
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "question " + big},
        {"role": "assistant", "content": [{"type": "text", "text": big}]},
        {"role": "toolResult", "toolCallId": "c", "content": [{"type": "text", "text": big}]},
        {"role": "assistant", "content": [{"type": "text", "text": "short"}]},
    ]
    budget = serialized_tokens(messages[2]) + serialized_tokens(messages[3]) + 60
    kept = clamp(messages, budget)
    # The toolResult led the suffix and went; the latest evicted user came back; the
    # trailing assistant is kept because it is the last message standing after the user.
    assert kept[0]["role"] == "user"
    assert all(m["role"] != "toolResult" for m in kept)
    assert clamp(messages[:1], 10**6) == messages[:1]


def test_clamp_starts_at_ninety_percent_of_the_budget_as_lossless_claw_1_0() -> None:
    """A list between 90% and 100% of the budget is clamped (0.15.3 left it whole).

    lossless-claw 1.0 (src/assemble-fallback.ts, ``clampMessagesToSerializedBudget``)
    triggers at its target, 90% of the budget, so the host keeps headroom for its framing.
    """
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "first " * 40},
        {"role": "assistant", "content": [{"type": "text", "text": "reply " * 40}]},
        {"role": "user", "content": "latest question"},
    ]
    total = sum(serialized_tokens(m) for m in messages)
    budget = total * 100 // 95  # the list is about 95% of it
    kept = clamp(messages, budget)
    assert kept == messages[1:]
    assert sum(serialized_tokens(m) for m in kept) <= budget * 9 // 10
    # At or under 90% nothing is cut.
    assert clamp(messages, -(-total * 10 // 9)) == messages


def test_a_tool_result_weighs_its_model_boundary_estimate() -> None:
    """lossless-claw 1.0 (src/estimate-tokens.ts): a tool result costs at least its
    text at two characters a token plus framing, with 20% margin."""
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x" * 400}],
    }
    # text 400/2 = 200, block 6, message 12, the name as JSON ('"read"') ceil(2 * 4/3) = 3:
    # 221 tokens, times 1.2 rounded up.
    assert message_tokens(result) == 266 > serialized_tokens(result)
    prose = {"role": "user", "content": "x" * 400}
    assert message_tokens(prose) == serialized_tokens(prose)
    # A string content counts as one text at two characters a token, without a block.
    assert message_tokens({**result, "content": "x" * 400}) == -(-(200 + 12 + 3) * 12 // 10)


def test_tail_calls_are_dropped_only_when_their_result_exists_elsewhere() -> None:
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c9", "name": "x"}]}
    early = {"role": "toolResult", "toolCallId": "c9", "content": [{"type": "text", "text": "r"}]}
    # In the tail, no result anywhere: kept (the host may still deliver it).
    assert tp.drop_unpaired_calls([call], [True], set()) == [call]
    # In the tail, a result exists in the context but not after the call: dropped.
    assert tp.drop_unpaired_calls([early, call], [False, True], {"c9"}) == [early]
    # Before the tail, with its result after it: kept.
    assert tp.drop_unpaired_calls([call, early], [False, False], {"c9"}) == [call, early]
    # Before the tail, no result after it: dropped.
    assert tp.drop_unpaired_calls([call], [False], set()) == []


def test_memoized_rebuilds_follow_rewritten_rows(store: Store) -> None:
    """A warm process reuses rebuilt messages, but a row rewritten under the same id shows anew."""
    cid = new_conversation(store)
    ids = store.add_messages(
        cid,
        [
            {"role": "user", "content": "old question", "created_at": "2026-01-15 14:00:00"},
            {"role": "assistant", "content": "answer", "created_at": "2026-01-15 14:01:00"},
            {"role": "user", "content": "tail", "created_at": "2026-01-15 14:02:00"},
        ],
    )
    leaf = store.add_leaf_summary(cid, ids[:2], "first wording", summary_id="sum_5555555555555555")
    store.replace_context_with_summary(cid, leaf)
    settings = effective(freshTailCount=1)
    first = assemble(store.conn, cid, settings)
    assert assemble(store.conn, cid, settings) == first  # the memoized path gives the same result
    assert "first wording" in first["messages"][0]["content"]
    # doctor apply re-summarizes in place: same id, new content.
    store.conn.execute("UPDATE summaries SET content = 'second wording' WHERE summary_id = ?", (leaf,))
    store.conn.execute("UPDATE messages SET content = 'tail, edited' WHERE message_id = ?", (ids[2],))
    again = assemble(store.conn, cid, settings)
    assert "second wording" in again["messages"][0]["content"]
    assert again["messages"][1]["content"] == "tail, edited"
    assert "first wording" in first["messages"][0]["content"]  # earlier results were not mutated


def test_prompt_aware_eviction_scores_rebuilt_content_and_summary_text(store: Store) -> None:
    """Prompt-aware eviction scores what the reference scores, so the same items are kept.

    The rule (the reference's src/assembler.ts: the resolved item's ``text`` set when a
    message or summary item is resolved, and scoreRelevance over it): a message is
    scored on its content as rebuilt from its parts (the string, or the JSON.stringify
    text of its block array: an assistant reply is ``[{"type":"text","text":…}]``, so
    ``type`` and ``text`` count as its terms), a summary on its own text, not on the
    ``<summary …>`` wrapper the model sees. Terms are the lowercase ``[a-z0-9]`` runs of
    two or more characters; the score sums, over the prompt's distinct terms, the term's
    count divided by the item's term count; items go by score, ties to the newer one,
    and each is kept if it still fits.

    For the prompt "summary of the deploy text": the assistant reply scores 4/8 (the,
    deploy, text twice, among 8 terms), the question 1/5 (summary), the summary's text
    "Budget review." and the lunch chatter 0. With room for the reply, the question and
    the summary's wrapper, the chatter (the newer of the two zeros) comes third and the
    summary no longer fits. Scoring the stored text and the wrapper instead ranked the
    summary third (its wrapper says "summary" twice) and kept it in place of the chatter.
    """
    from lcm_cli.engine.assembly.assembler import prompt_terms, resolve_items, select_evictable
    from lcm_cli.engine.compaction.leaf_source import zone_of
    from lcm_cli.engine.session.ingest import stored_form

    cid = new_conversation(store)
    (source,) = store.add_messages(
        cid, [{"role": "user", "content": "Budget numbers.", "created_at": stamp(1)}]
    )
    leaf = store.add_leaf_summary(cid, [source], "Budget review.", summary_id="sum_00000000000000aa")
    store.replace_context_with_summary(cid, leaf)
    live = [
        {"role": "user", "content": "Which summary should we keep?"},
        {"role": "assistant", "content": [{"type": "text", "text": "The deploy script is ready."}]},
        {"role": "user", "content": "lunch plans for friday and more chatter"},
        {"role": "user", "content": "now"},
    ]
    store.add_messages(
        cid, [{**stored_form(m).as_row(), "created_at": stamp(10 + i)} for i, m in enumerate(live)]
    )
    items = resolve_items(store.conn, cid, zone_of("UTC"))
    summary, question, reply, chatter, _tail = items
    assert summary.text == "Budget review."
    assert summary.message["content"].startswith('<summary id="sum_00000000000000aa" kind="leaf"')
    assert reply.text == '[{"type":"text","text":"The deploy script is ready."}]'
    assert question.text == "Which summary should we keep?"
    room = reply.tokens + question.tokens + summary.tokens
    assert chatter.tokens < summary.tokens
    kept = select_evictable(items[:4], room, prompt_terms("summary of the deploy text"))
    assert [i.ordinal for i in kept] == [question.ordinal, reply.ordinal, chatter.ordinal]
