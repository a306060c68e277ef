"""``summaries.model`` holds what lossless-claw stores there.

lossless-claw (v0.15.3 and v1.0.0-beta.4, src/engine.ts ``resolveSummarize`` with
src/summarize.ts ``createLcmSummarizeFromLegacyParams``) passes the first resolved
candidate's ``model`` to compaction's ``insertSummary``; its ``resolveModel``
(src/plugin/index.ts) splits ``provider/model`` at the first slash and keeps the model
part alone. Without a resolvable model it stores ``emergency-fallback``;
src/store/summary-store.ts ``insertSummary`` stores ``unknown`` when none is given.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.config.resolve import resolve_effective
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import stored_model
from lcm_cli.engine.summarize.factory import build_summarizer
from lcm_cli.engine.summarize.guards import guarded
from tests.conftest import lcm
from tests.support.chat_model import ChatModel
from tests.support.compaction_sim import SMALL, new_conversation, turn_rows


def _state(tmp_path: Path, **config: Any) -> tuple[Path, int]:
    root = tmp_path / "openclaw"
    root.mkdir()
    plugin = {**SMALL, **config}
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": plugin}}}})
    )
    with Store.open(root / "lcm.db") as store:
        cid = new_conversation(store, "agent:main:main")
        store.add_messages(cid, turn_rows(0, 400))
    return root, cid


@pytest.mark.parametrize(
    ("model", "provider"),
    [("local/test-model", None), ("test-model", "local"), ("local/test-model", "local")],
)
def test_a_compaction_stores_the_model_id_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, provider: str | None
) -> None:
    endpoint = ChatModel()
    try:
        root, cid = _state(tmp_path)
        monkeypatch.setenv("LCM_SUMMARIZER", "openai")
        monkeypatch.setenv("LCM_SUMMARY_MODEL", model)
        if provider is None:
            monkeypatch.delenv("LCM_SUMMARY_PROVIDER", raising=False)
        else:
            monkeypatch.setenv("LCM_SUMMARY_PROVIDER", provider)
        monkeypatch.setenv("LCM_SUMMARY_BASE_URL", endpoint.url)
        out = lcm(
            "--openclaw-dir",
            str(root),
            "compact",
            "--conversation-id",
            str(cid),
            "--token-budget",
            "4000",
            "--manual",
            "--until-under-target",
            "--apply",
        )
        assert out.code == 0, out.stderr
        data = out.json["data"]
        # Results still name the provider; the stored column is the reference's form.
        assert data["summarizer"] == "local/test-model" and data["compacted"]
        conn = sqlite3.connect(root / "lcm.db")
        try:
            kinds = {r[0] for r in conn.execute("SELECT DISTINCT kind FROM summaries")}
            models = {r[0] for r in conn.execute("SELECT DISTINCT model FROM summaries")}
        finally:
            conn.close()
        assert "leaf" in kinds and models == {"test-model"}
    finally:
        endpoint.server.shutdown()
        endpoint.server.server_close()


def test_the_stored_value_of_each_summarizer() -> None:
    base = {"LCM_SUMMARY_BASE_URL": "http://127.0.0.1:9/v1"}
    with_model = {**base, "LCM_SUMMARIZER": "openai", "LCM_SUMMARY_MODEL": "ollama/llama3.1"}
    # The model is a config key: the environment reaches the factory through the resolver.
    summarizer = build_summarizer(resolve_effective({}, with_model, None), with_model)
    assert summarizer.model == "ollama/llama3.1" and stored_model(summarizer) == "llama3.1"
    # The spend guard's wrapper stores what it wraps.
    assert stored_model(guarded(summarizer, {}, "agent:main:main")) == "llama3.1"
    # No model configured: the reference's truncation label; the offline summarizer is ours.
    assert stored_model(build_summarizer({}, {"LCM_SUMMARIZER": "openai"})) == "emergency-fallback"
    assert stored_model(build_summarizer({}, {"LCM_SUMMARIZER": "extractive"})) == "extractive"

    class Unnamed:
        model = " "

    assert stored_model(Unnamed()) == "unknown"
