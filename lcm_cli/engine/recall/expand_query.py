"""`lcm expand-query PROMPT`: find the relevant summaries, expand them, answer from the evidence.

Candidates are the explicit ``--summary-id`` values and/or a full-text summary search for
``--query`` in scope (relevance order); when no summary matches, matching raw messages
lead to the leaf summaries that cover them. Candidates are expanded in rank order
(summary text plus source messages) until ``--token-cap`` (default ``maxExpandTokens``)
is spent. With a configured model the prompt is answered from that evidence within
``--timeout-ms`` (default ``delegationTimeoutMs``); without one, the ranked evidence is
returned and ``answerStatus`` says no answer was generated -- nothing is invented.
No database transaction is open while the model is called (reads are autocommit).
"""

from __future__ import annotations

import re
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.core.params import MAX_TOKENS, QUERY, SUMMARY_ID, TIMEOUT_MS, TOKEN_CAP, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read import token_budget as tb
from lcm_cli.engine.recall import grep as grep_mod
from lcm_cli.engine.recall import grep_sql
from lcm_cli.engine.recall.dag import message_contents, source_messages
from lcm_cli.engine.recall.deadline import Deadline
from lcm_cli.engine.recall.expand import default_cap, find_summary
from lcm_cli.engine.recall.grep_sources import search_source
from lcm_cli.engine.recall.scope import Scope, resolve_scope
from lcm_cli.engine.summarize.base import ChatModel

DEFAULT_ANSWER_TOKENS = 2000
DEFAULT_TIMEOUT_MS = 120_000
CANDIDATE_LIMIT = 50
MESSAGES_PER_SUMMARY = 500  # more than any token cap can hold
NO_CANDIDATES = "No matching summaries found for this scope."
SYSTEM_PROMPT = (
    "You answer questions about an agent's past conversation using only the evidence given: "
    "summaries (ids sum_…) and the raw messages they stand for (ids msg#N). If the evidence "
    "does not answer the question, say so. Reply with JSON only: "
    '{"answer": "<your answer>", "citedIds": ["<ids of the summaries or msg#N you used>"]}'
)
_JSON_BLOCK = re.compile(r"\{.*\}", re.DOTALL)


def chat_model(ctx: Context) -> ChatModel | None:
    """The configured expansion model (``expansionModel``, else the summary model), or None."""
    from lcm_cli.engine.summarize.factory import build_chat_model  # only when a prompt is asked

    return build_chat_model(ctx.effective, ctx.env, purpose="expansion")


@operation("expand.query")
def expand_query(ctx: Context, req: Request) -> Result:
    """Rank, expand within the token cap, and answer with the configured model if any."""
    prompt = req.args[0].strip()
    query = (req[QUERY] or "").strip()
    explicit = [s.strip() for s in req[SUMMARY_ID] or [] if s.strip()]
    if not prompt:
        raise invalid_argument("The prompt is empty: say what you want answered.", {"value": req.args[0]})
    if not query and not explicit:
        raise invalid_argument(
            "`lcm expand-query` needs --query TEXT (search summaries in scope) or --summary-id ID "
            "(repeatable).",
            {"option": "query"},
        )
    scope = resolve_scope(ctx, req, required=not explicit)
    timeout_ms = req[TIMEOUT_MS] or _positive_int(
        ctx.engine_settings.delegation_timeout_ms, DEFAULT_TIMEOUT_MS
    )
    deadline = Deadline(timeout_ms)
    token_cap = req[TOKEN_CAP] or default_cap(ctx)
    answer_tokens = req[MAX_TOKENS] or DEFAULT_ANSWER_TOKENS

    candidates, via = _candidates(ctx, req, scope, explicit, query, deadline)
    if not candidates:
        data = _reply(NO_CANDIDATES, "no_candidates", [], [], 0, 0, False, [], None)
        return Result(data, meta={"candidateSource": via})

    evidence: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for summary_id in candidates:
        row = find_summary(ctx, summary_id, Scope("unscoped", None))
        header = {
            "summaryId": summary_id,
            "conversationId": row["conversation_id"],
            "kind": row["kind"],
            "depth": row["depth"],
            "content": _summary_text(ctx, summary_id),
        }
        cost = tb.json_tokens(header)
        if used + cost > token_cap:
            truncated = True
            break
        used += cost
        sources = source_messages(ctx, summary_id, row["conversation_id"])
        contents = message_contents(ctx, [m["messageId"] for m in sources[:MESSAGES_PER_SUMMARY]])
        items = [
            {
                "messageId": m["messageId"],
                "seq": m["seq"],
                "role": m["role"],
                "createdAt": m["createdAt"],
                "content": contents.get(m["messageId"], ""),
            }
            for m in sources[:MESSAGES_PER_SUMMARY]
        ]
        kept, spent = tb.fit_items(items, token_cap - used)  # whole messages only
        header["messages"] = items[:kept]
        header["omittedMessages"] = len(sources) - kept
        used += spent
        truncated = truncated or kept < len(sources)
        evidence.append(header)
    conversations = sorted({e["conversationId"] for e in evidence})

    model = chat_model(ctx)
    if model is None:
        data = _reply(None, "no_model", [], conversations, len(evidence), used, truncated, evidence, None)
        data["note"] = (
            "No model is configured for expansion (set LCM_SUMMARY_BASE_URL and LCM_EXPANSION_MODEL "
            "or LCM_SUMMARY_MODEL), so no answer was generated; the ranked, expanded evidence is "
            "returned instead."
        )
        return Result(data, meta={"candidateSource": via})

    user_prompt = _user_prompt(prompt, evidence)
    remaining_ms = max(1, int(deadline.remaining() * 1000))
    try:
        raw = model.complete(SYSTEM_PROMPT, user_prompt, max_tokens=answer_tokens, timeout_ms=remaining_ms)
    except Exception as exc:  # any summarizer failure is reported, never turned into an answer
        timed_out = deadline.expired() or "timed out" in str(exc).lower()
        data = _reply(None, "failed", [], conversations, len(evidence), used, True, evidence, model)
        data["error"] = {
            "code": "EXPANSION_TIMEOUT" if timed_out else "EXPANSION_MODEL_FAILED",
            "message": f"{type(exc).__name__}: {exc}",
        }
        return Result(data, meta={"candidateSource": via})
    answer, cited = _parse_reply(raw, evidence)
    if req[MAX_TOKENS] and answer:
        # A model may overrun the limit it was given; what is printed never does.
        from lcm_cli.engine.read.token_budget import cut_text

        answer = answer[: cut_text(answer, answer_tokens)]
    data = _reply(answer, "answered", cited, conversations, len(evidence), used, truncated, evidence, model)
    return Result(data, meta={"candidateSource": via})


def _positive_int(value: float, default: int) -> int:
    return int(value) if isinstance(value, (int, float)) and value >= 1 else default


def _summary_text(ctx: Context, summary_id: str) -> str:
    row = ctx.query_one("SELECT content FROM summaries WHERE summary_id = ?", (summary_id,))
    return row[0] if row is not None else ""


def _candidates(
    ctx: Context, req: Request, scope: Scope, explicit: list[str], query: str, deadline: Deadline
) -> tuple[list[str], str]:
    """Candidate summary ids in rank order, and how they were found."""
    ordered: list[str] = []
    for summary_id in explicit:
        find_summary(ctx, summary_id, scope)  # SUMMARY_NOT_FOUND / NOT_IN_SCOPE
        if summary_id not in ordered:
            ordered.append(summary_id)
    if not query:
        return ordered, "explicit"
    grep_mod.check_full_text(query)
    q = grep_sql.Query(
        ctx,
        query,
        "full_text",
        "relevance",
        None,
        scope,
        req.time.after,
        req.time.before,
        CANDIDATE_LIMIT,
        deadline,
        grep_sql.julian_now(),
        [],
    )
    page = search_source(q, grep_sql.SUMMARIES, {})
    found = [str(h["id"]) for h in page.hits]  # a summary hit's id is its summary id
    via = "summaries"
    if not found:
        messages = search_source(q, grep_sql.MESSAGES, {})
        ids = [h["id"] for h in messages.hits]
        if ids:
            marks = ",".join("?" for _ in ids)
            rows = ctx.query(
                f"""SELECT sm.summary_id, MIN(sm.message_id) FROM summary_messages sm
                    WHERE sm.message_id IN ({marks}) GROUP BY sm.summary_id""",
                ids,
            )
            rank = {mid: i for i, mid in enumerate(ids)}
            found = [r[0] for r in sorted(rows, key=lambda r: rank.get(r[1], 0))]
            via = "messages"
    for summary_id in found:
        if summary_id not in ordered:
            ordered.append(summary_id)
    return ordered, via if not explicit else "explicit+" + via


def _user_prompt(prompt: str, evidence: list[dict[str, Any]]) -> str:
    lines = ["Question:", prompt, "", "Evidence:"]
    for item in evidence:
        lines.append(f"[{item['summaryId']}] ({item['kind']}, depth {item['depth']}) {item['content']}")
        for m in item["messages"]:
            lines.append(f"  [msg#{m['messageId']}] {m['role']} {m['createdAt']}: {m['content']}")
    return "\n".join(lines)


def _parse_reply(raw: str, evidence: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """(answer, cited ids) from the model's reply: JSON when it sent JSON, else the text."""
    known = {e["summaryId"] for e in evidence}
    known |= {f"msg#{m['messageId']}" for e in evidence for m in e["messages"]}
    answer, cited = raw.strip(), []
    match = _JSON_BLOCK.search(raw)
    if match:
        try:
            parsed = loads_bounded(match.group(0))
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("answer"), str) and parsed["answer"].strip():
            answer = parsed["answer"].strip()
            cited = [c for c in parsed.get("citedIds") or [] if isinstance(c, str)]
    if not cited:
        cited = re.findall(r"sum_[A-Za-z0-9_-]+|msg#\d+", answer)
    unique: list[str] = []
    for item in cited:
        if item in known and item not in unique:
            unique.append(item)
    return answer, unique


def _reply(
    answer: str | None,
    status: str,
    cited: list[str],
    conversations: list[int],
    expanded: int,
    tokens: int,
    truncated: bool,
    evidence: list[dict[str, Any]],
    model: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "answer": answer,
        "answerStatus": status,
        "citedIds": cited,
        "sourceConversationIds": conversations,
        "expandedSummaryCount": expanded,
        "totalSourceTokens": tokens,
        "truncated": truncated,
        "model": getattr(model, "model", None),
        "evidence": evidence,
    }
    if len(conversations) == 1:
        data["sourceConversationId"] = conversations[0]
    return data
