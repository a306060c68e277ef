"""The agent scope of reads (docs/agents.md): every operation of the registry, under each policy.

Two files: ``shared`` holds the sample's conversations of agent ``main`` and, after them,
conversations of agents ``other`` and ``mainframe`` (a prefix trap) with a secret word, a
summary and a large file of their own; ``alone`` is the sample without them (nor the
keyless conversation, which belongs to no agent). Read as agent ``main`` under ``agent``
or ``session-family``, every scoped operation must answer on ``shared`` exactly what it
answers on ``alone`` read by anyone: the same data, counts and totals, and for a foreign
id the very error a missing id gets. An operation the scope leaves alone must say why on
its ``OpSpec`` (``unscoped``), so a new operation is covered or declared.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import invoke
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.registry import OPERATIONS
from lcm_cli.engine.core.session_keys import agent_id_of
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.visibility import Boundary
from tests.support.sample import build_sample, stamp

KEY = "agent:main:main"
SECRET = "zebraquartz"
FOREIGN_SUMMARY = "sum_ffffffffffffffff"
FOREIGN_FILE = "file_ffffffffffffffff"
FOREIGN_KEYS = ("agent:other:main", "agent:mainframe:main")
CONDENSED = "sum_cccccccccccccccc"
MISSING_ID = 4  # the first foreign conversation's id: missing in `alone`

# Each scoped operation: requests that read the caller's history and requests that name
# another agent's (fields, positional arguments).
READS: dict[str, list[tuple[dict[str, Any], tuple[str, ...]]]] = {
    "status": [({}, ())],
    "conversations.list": [({"limit": 50}, ()), ({"limit": 1}, ())],
    "conversations.show": [
        ({"session_key": KEY}, ()),
        ({"conversation_id": MISSING_ID}, ()),
        ({"session_key": FOREIGN_KEYS[0]}, ()),
    ],
    "messages.list": [({"conversation_id": 1, "limit": 5}, ()), ({"conversation_id": MISSING_ID}, ())],
    "messages.tail": [
        ({"session_key": KEY, "count": 3}, ()),
        ({"session_key": FOREIGN_KEYS[1], "count": 3}, ()),
    ],
    "summaries.list": [({"conversation_id": 1}, ()), ({"conversation_id": MISSING_ID}, ())],
    "summaries.show": [({}, (CONDENSED,)), ({}, (FOREIGN_SUMMARY,))],
    "summaries.graph": [
        ({"conversation_id": 1, "to": "dot"}, ()),
        ({"conversation_id": MISSING_ID, "to": "dot"}, ()),
    ],
    "grep": [
        ({"all_conversations": True}, ("nightly|message|" + SECRET,)),
        ({"all_conversations": True, "mode": "full_text"}, (SECRET,)),
        ({"conversation_id": MISSING_ID}, ("nightly",)),
        ({"all_conversations": True, "scope": "files"}, ("text",)),
    ],
    "describe": [({}, (CONDENSED,)), ({}, (FOREIGN_SUMMARY,)), ({}, (FOREIGN_FILE,))],
    "expand": [({}, (CONDENSED,)), ({}, (FOREIGN_SUMMARY,))],
    "context.assemble": [
        ({"conversation_id": 1, "token_budget": 4000}, ()),
        ({"conversation_id": MISSING_ID, "token_budget": 4000}, ()),
        ({"session_key": FOREIGN_KEYS[0], "token_budget": 4000}, ()),
    ],
    "export": [
        ({"session_key": KEY, "to": "markdown"}, ()),
        ({"conversation_id": MISSING_ID, "to": "markdown"}, ()),
    ],
    "expand.query": [
        ({"summary_id": [FOREIGN_SUMMARY]}, ("what happened",)),
        ({"query": SECRET, "all_conversations": True}, ("what",)),
    ],
    "recall.tool": [
        (
            {
                "tool": "lcm_grep",
                "arguments": {"pattern": SECRET, "allConversations": True},
                "session_key": KEY,
            },
            (),
        ),
        (
            {
                "tool": "lcm_grep",
                "arguments": {"pattern": "message", "conversationId": MISSING_ID},
                "session_key": KEY,
            },
            (),
        ),
        ({"tool": "lcm_describe", "arguments": {"id": FOREIGN_SUMMARY}, "session_key": KEY}, ()),
        ({"tool": "lcm_expand", "arguments": {"summaryIds": [FOREIGN_SUMMARY]}, "session_key": KEY}, ()),
    ],
}


def _foreign(store: Store) -> None:
    """Conversations of two other agents, written after the sample's."""
    other = store.create_conversation(
        "sess-other", session_key=FOREIGN_KEYS[0], created_at=stamp(2), updated_at=stamp(200)
    )
    ids = store.add_messages(
        other,
        [
            {"role": "user", "content": f"nightly {SECRET} message {i}", "created_at": stamp(50 + i)}
            for i in range(4)
        ],
    )
    store.add_leaf_summary(
        other, ids, f"The {SECRET} plan.", summary_id=FOREIGN_SUMMARY, created_at=stamp(60)
    )
    store.add_large_file(
        other,
        storage_uri="/tmp/z.txt",
        file_name="z.txt",
        mime_type="text/plain",
        byte_size=9,
        file_id=FOREIGN_FILE,
    )
    trap = store.create_conversation(
        "sess-trap", session_key=FOREIGN_KEYS[1], created_at=stamp(3), updated_at=stamp(201)
    )
    store.add_messages(trap, [{"role": "user", "content": f"message {SECRET} trap", "created_at": stamp(70)}])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scope")
    shared, alone = root / "shared.db", root / "alone.db"
    build_sample(shared)
    with Store.open(shared) as store:
        _foreign(store)
    build_sample(alone)
    conn = sqlite3.connect(alone)
    conn.execute("DELETE FROM conversations WHERE session_key IS NULL")  # empty: belongs to no agent
    conn.commit()
    conn.close()
    config = root / "openclaw.json"
    config.write_text("{}")
    return {"shared": shared, "alone": alone, "config": config}


def _answer(
    name: str, fields: dict[str, Any], args: tuple[str, ...], db: Path, config: Path, **env: str
) -> Any:
    """The envelope (paths left out) or the error of one call through the Python door."""
    environ = {"LCM_SUMMARY_PROVIDER": "", **env}
    try:
        envelope = invoke(name, dict(fields), args=args, db=str(db), config=str(config), env=environ).envelope
    except LcmError as exc:
        return {"error": exc.code, "message": exc.message, "details": exc.details}
    meta = envelope.get("meta") or {}
    meta.pop("databasePath", None)
    meta.pop("configPath", None)
    _drop_elapsed(envelope)
    data = envelope.get("data")
    if isinstance(data, dict):
        # The size of the one shared file is all a scoped read can learn of the others
        # (docs/agents.md); per-agent files are the boundary for that.
        data.pop("databaseSizeBytes", None)
    return envelope


def _drop_elapsed(value: Any) -> None:
    """Timings differ from run to run."""
    if isinstance(value, dict):
        value.pop("elapsedMs", None)
        for item in value.values():
            _drop_elapsed(item)
    elif isinstance(value, list):
        for item in value:
            _drop_elapsed(item)


def _text(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def test_every_operation_is_scoped_or_says_why() -> None:
    for name, spec in OPERATIONS.items():
        if spec.unscoped:
            assert name not in READS, f"{name} is declared unscoped but tested as a scoped read"
        else:
            assert name in READS, f"{name} reads under the agent scope: add its requests to READS"


CALLS = [(name, i) for name in READS for i in range(len(READS[name]))]


@pytest.mark.parametrize("policy", ["agent", "session-family"])
@pytest.mark.parametrize(("name", "index"), CALLS, ids=[f"{n}-{i}" for n, i in CALLS])
def test_a_scoped_read_sees_only_its_agent(
    files: dict[str, Path], policy: str, name: str, index: int
) -> None:
    fields, args = READS[name][index]
    scoped = _answer(
        name, fields, args, files["shared"], files["config"], LCM_AGENT_SCOPE=policy, LCM_AGENT_ID="main"
    )
    expected = _answer(name, fields, args, files["alone"], files["config"])
    assert _text(scoped) == _text(expected)
    text, asked = _text(scoped), _text([fields, args])
    for marker in (SECRET, FOREIGN_SUMMARY, FOREIGN_FILE, *FOREIGN_KEYS):
        assert marker in asked or marker not in text  # an error may repeat what was asked


@pytest.mark.parametrize(("name", "index"), CALLS, ids=[f"{n}-{i}" for n, i in CALLS])
def test_unrestricted_ignores_the_agent(files: dict[str, Path], name: str, index: int) -> None:
    fields, args = READS[name][index]
    with_agent = _answer(name, fields, args, files["shared"], files["config"], LCM_AGENT_ID="main")
    without = _answer(name, fields, args, files["shared"], files["config"])
    assert _text(with_agent) == _text(without)


def test_recall_tool_identity_comes_from_the_session_key(files: dict[str, Path]) -> None:
    """No `--agent`: the host's session key is the caller; the model's allConversations cannot widen it."""
    fields = {"tool": "lcm_grep", "arguments": {"pattern": "nightly", "allConversations": True}}
    theirs = _answer(
        "recall.tool",
        {**fields, "session_key": "agent:other:main"},
        (),
        files["shared"],
        files["config"],
        LCM_AGENT_SCOPE="agent",
    )
    ours = _answer(
        "recall.tool",
        {**fields, "session_key": KEY},
        (),
        files["shared"],
        files["config"],
        LCM_AGENT_SCOPE="agent",
    )
    nobody = _answer("recall.tool", fields, (), files["shared"], files["config"], LCM_AGENT_SCOPE="agent")
    assert "conv=4 " in _text(theirs) and "conv=5 " not in _text(theirs)
    assert "conv=4 " not in _text(ours) and "conv=5 " not in _text(ours)
    assert "conv=" not in _text(nobody)


def test_a_cli_without_agent_reads_everything(files: dict[str, Path]) -> None:
    answer = _answer(
        "conversations.list", {"limit": 50}, (), files["shared"], files["config"], LCM_AGENT_SCOPE="agent"
    )
    assert all(key in _text(answer) for key in FOREIGN_KEYS)


def test_unscoped_operations_run_on_the_whole_file(files: dict[str, Path]) -> None:
    answer = _answer(
        "doctor.scan", {}, (), files["shared"], files["config"], LCM_AGENT_SCOPE="agent", LCM_AGENT_ID="main"
    )
    assert "error" not in answer


def test_a_bad_policy_is_refused_not_read_as_unrestricted(files: dict[str, Path]) -> None:
    answer = _answer(
        "status", {}, (), files["shared"], files["config"], LCM_AGENT_SCOPE="agents", LCM_AGENT_ID="main"
    )
    assert answer["error"] == "CONFIG_VALIDATION_FAILED"
    assert "agentScope" in answer["message"]


def test_session_family_is_the_key_and_the_keys_below_it() -> None:
    family = Boundary("family", KEY)
    assert family.admits(KEY) and family.admits(KEY + ":thread:7")
    assert not family.admits("agent:main:mainline") and not family.admits("agent:main:subagent:1")
    assert not family.admits(None)
    agent = Boundary("agent", "main")
    assert agent.admits("agent:main:subagent:1") and not agent.admits("agent:mainframe:main")
    assert not agent.admits(None) and not Boundary("nothing").admits(KEY)
    assert agent_id_of("agent:main") is None and agent_id_of("agent::x") is None


def test_the_agent_option_beats_the_environment(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import lcm

    monkeypatch.setenv("LCM_AGENT_SCOPE", "agent")
    monkeypatch.setenv("LCM_AGENT_ID", "other")
    where = ("--db", str(files["shared"]), "--config", str(files["config"]))
    theirs = lcm(*where, "conversations", "show", "--conversation-id", "4")
    assert theirs.code == 0 and FOREIGN_KEYS[0] in theirs.stdout
    ours = lcm(*where, "--agent", "main", "conversations", "show", "--conversation-id", "4")
    missing = lcm(*where, "--agent", "main", "conversations", "show", "--conversation-id", "99")
    assert ours.code == missing.code == 3
    assert ours.stderr.replace('"value":4', "") == missing.stderr.replace('"value":99', "").replace(
        " 99.", " 4."
    )


def test_a_warm_context_scopes_each_call_anew(files: dict[str, Path]) -> None:
    """`lcm serve` keeps one context per worker: a tool call's scope must not outlive it."""
    from lcm_cli.engine.context import Context

    ctx = Context(db=str(files["shared"]), config=str(files["config"]), env={"LCM_AGENT_SCOPE": "agent"})
    try:
        ctx.resolve_paths()
        tool = {"tool": "lcm_grep", "arguments": {"pattern": "nightly", "allConversations": True}}
        ours = invoke("recall.tool", {**tool, "session_key": KEY}, context=ctx).envelope
        listed = invoke("conversations.list", {"limit": 50}, context=ctx).envelope
        theirs = invoke("recall.tool", {**tool, "session_key": FOREIGN_KEYS[0]}, context=ctx).envelope
    finally:
        ctx.close()
    assert "conv=4 " not in _text(ours)
    assert all(key in _text(listed) for key in FOREIGN_KEYS)  # no caller named: the operator's view
    assert "conv=4 " in _text(theirs)
