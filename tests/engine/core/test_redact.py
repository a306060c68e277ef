"""Secrets never appear in output: one helper (lcm_cli.engine.core.redact), every place routed through it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lcm_cli.engine.config.resolve import resolve_effective
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.redact import MASK, is_secret_key, redact, redact_value
from lcm_cli.engine.summarize.base import SummarizerError
from lcm_cli.engine.summarize.factory import describe_choice
from tests.conftest import lcm

SECRETS = ("sekrit", "abc123", "tok-999", "sk-live-1")

CASES = [
    ("https://user:sekrit@host/v1", "https://***@host/v1"),
    ("http://sekrit@10.0.0.1:8080/x", "http://***@10.0.0.1:8080/x"),
    ("https://host/v1?key=abc123&model=m", "https://host/v1?key=***&model=m"),
    ("https://host/v1?model=m&api_key=abc123", "https://host/v1?model=m&api_key=***"),
    ("https://host/v1?token=tok-999#frag", "https://host/v1?token=***#frag"),
    ("https://host/v1?access_token=tok-999", "https://host/v1?access_token=***"),
    ("Authorization: Bearer sk-live-1 sent", "Authorization: Bearer *** sent"),
    ("authorization=Basic dXNlcjpzZWtyaXQ=", "authorization=Basic ***"),
    ("the server said: bearer sk-live-1 today", "the server said: bearer *** today"),
    ("a@b plain text, x=1 and no secrets", "a@b plain text, x=1 and no secrets"),
    ("https://host/v1?page=2", "https://host/v1?page=2"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_redact_text(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_value_masks_secret_keys_and_walks_strings() -> None:
    value = {
        "apiKey": "sk-live-1",
        "nested": {
            "token": "tok-999",
            "password": "p",
            "api_key": "abc123",
            "baseUrl": "https://u:sekrit@h/",
        },
        "list": ["https://h/?key=abc123"],
        "freshTailCount": 8,
        "key": "freshTailCount",  # an error detail naming a config key is not a secret
        "maxExpandTokens": 4000,
        "emptyToken": "",
    }
    out = redact_value(value)
    text = json.dumps(out)
    assert not any(s in text for s in SECRETS)
    assert out["apiKey"] == MASK and out["nested"]["password"] == MASK
    assert out["freshTailCount"] == 8 and out["key"] == "freshTailCount" and out["maxExpandTokens"] == 4000
    assert out["emptyToken"] == ""
    assert (
        is_secret_key("X-Api-Key") and is_secret_key("clientSecret") and not is_secret_key("leafChunkTokens")
    )


def test_error_envelope_is_redacted() -> None:
    err = LcmError(
        "SUMMARIZER_FAILED", "gpt at https://u:sekrit@h/v1 failed", {"url": "https://h/?api_key=abc123"}
    )
    assert not any(s in json.dumps(err.to_dict()) for s in SECRETS)
    assert err.message.count("sekrit") == 1  # the exception itself keeps it for LCM_DEBUG


def test_summarizer_error_and_its_log_line_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    exc = SummarizerError("gpt at https://u:sekrit@h/v1?key=abc123 answered HTTP 500: Bearer sk-live-1")
    assert not any(s in str(exc) for s in SECRETS)
    with caplog.at_level(logging.WARNING, logger="lcm.summarize"):
        logging.getLogger("lcm.summarize").warning("summarizer failed: %s", exc)
    assert not any(s in caplog.text for s in SECRETS)


def test_describe_choice_redacts_the_base_url() -> None:
    env = {
        "LCM_SUMMARY_BASE_URL": "https://u:sekrit@h/v1",
        "LCM_SUMMARY_MODEL": "m",
        "OPENAI_API_KEY": "sk-live-1",
    }
    text = json.dumps(describe_choice(resolve_effective({}, env, None), env))
    assert "h/v1" in text and not any(s in text for s in SECRETS)


def test_compaction_failure_does_not_print_the_url_credentials(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    config = {
        "plugins": {"entries": {"lossless-claw": {"config": {"freshTailCount": 1, "leafMinFanout": 2}}}}
    }
    (state_dir / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.setenv("LCM_SUMMARY_BASE_URL", "http://user:sekrit@127.0.0.1:9/v1?api_key=abc123")
    monkeypatch.setenv("LCM_SUMMARY_MODEL", "gpt-x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-1")
    monkeypatch.setenv("LCM_SUMMARY_TIMEOUT_MS", "2000")
    caplog.set_level(logging.WARNING, logger="lcm.summarize")
    out = lcm(
        "--openclaw-dir",
        str(state_dir),
        "compact",
        "--conversation-id",
        "1",
        "--manual",
        "--apply",
        "--force",
    )
    everything = out.stdout + out.stderr + caplog.text  # the log line is stderr in a real run
    assert "127.0.0.1" in everything  # the failure is reported ...
    assert not any(s in everything for s in SECRETS)  # ... without the secrets


def test_config_show_and_get_mask_secret_keys(state_dir: Path) -> None:
    config = {
        "gateway": {"token": "tok-999"},
        "plugins": {
            "entries": {
                "lossless-claw": {
                    "config": {
                        "freshTailCount": 8,
                        "apiKey": "sk-live-1",
                        "customInstructions": "see https://u:sekrit@h/",
                    }
                }
            }
        },
    }
    (state_dir / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    shown = lcm("--openclaw-dir", str(state_dir), "config", "show")
    assert shown.code == 0, shown.stderr
    assert not any(s in shown.stdout for s in SECRETS)
    assert shown.json["data"]["raw"]["apiKey"] == MASK and shown.json["data"]["raw"]["freshTailCount"] == 8
    got = lcm("--openclaw-dir", str(state_dir), "config", "get", "apiKey")
    assert got.code == 0 and got.json["data"]["rawValue"] == MASK
    instructions = lcm("--openclaw-dir", str(state_dir), "config", "get", "customInstructions")
    assert "sekrit" not in instructions.stdout and "https://***@h/" in instructions.stdout
