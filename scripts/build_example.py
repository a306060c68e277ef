#!/usr/bin/env python3
"""Build the bundled example OpenClaw state dir (examples/openclaw) through lcm's own Store.

Besides ``lcm.db`` and ``openclaw.json`` it writes two session transcripts from before
LCM was installed, under ``agents/main/sessions/`` with the agent's ``sessions.json``, for
``lcm migrate-sessions`` to backfill: one with an abandoned branch (a history edit), one
whose last line a crash cut short.

Deterministic: fixed ids, timestamps and text, so re-running it yields the same rows and bytes.
Usage: python scripts/build_example.py [OUTPUT_DIR]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store

START = datetime(2026, 6, 2, 8, 0, 0, tzinfo=timezone.utc)

DEBUG_TURNS = [
    ("user", "The nightly CI job `test-integration` fails about one run in five. Can you find out why?"),
    (
        "assistant",
        "I'll start with the last failing runs. Running `gh run list --workflow ci.yml --limit 20`.",
    ),
    ("tool", "12 runs listed; failures on runs 4812, 4815, 4821, all in tests/test_sync.py::test_resume."),
    ("assistant", "All three failures are in test_resume. Reading tests/test_sync.py."),
    ("tool", "def test_resume(tmp_path):\n    server = start_server(port=8765)\n    ..."),
    ("assistant", "The test binds a fixed port 8765. Two jobs on one runner would collide."),
    ("user", "We do run two shards per runner since last week."),
    (
        "assistant",
        "That matches the timing. Error in run 4815: `OSError: [Errno 98] Address already in use`.",
    ),
    ("user", "Fix it so each test picks a free port."),
    ("assistant", "Changing start_server to bind port 0 and read the chosen port back."),
    ("tool", "Edited src/sync/server.py: bind(('127.0.0.1', 0)); port = sock.getsockname()[1]"),
    ("assistant", "Running `pytest tests/test_sync.py -n 4` to check the shards no longer collide."),
    ("tool", "48 passed in 12.31s"),
    ("assistant", "All 48 pass with 4 workers. Opening a PR: 'sync: bind test servers to a free port'."),
    ("user", "Also check whether the retry decorator hides real failures."),
    (
        "assistant",
        "Reading src/sync/retry.py: it retries any Exception three times, including assertion errors.",
    ),
    (
        "assistant",
        "Narrowing retry to ConnectionError and TimeoutError; assertion errors now surface at once.",
    ),
    ("tool", "Edited src/sync/retry.py; 48 passed in 11.90s"),
    ("user", "Great. Summarize what changed for the PR description."),
    (
        "assistant",
        "PR #912: test servers bind a free port (fixes Errno 98 flakes in test_resume); retry only on "
        "ConnectionError/TimeoutError so real assertion failures are no longer retried away.",
    ),
    ("user", "Merged. What should we watch next week?"),
    (
        "assistant",
        "Watch the nightly failure rate (was 1 in 5) and the p95 duration of test-integration (was 14 min).",
    ),
]

NIGHTLY_TURNS = [
    ("system", "Nightly report job started."),
    ("assistant", "Nightly report: 1,204 messages ingested, 31 leaf summaries, 4 condensed summaries."),
    ("assistant", "No compaction failures. Largest conversation: agent:main:main (22 messages)."),
]


def stamp(minutes: float) -> str:
    """SQLite-style UTC timestamp ``minutes`` after the example's start."""
    return (START + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S")


# The live main session, whose transcript LCM has ingested (entry ids main_entry_id(i)).
MAIN_SESSION = "9b1f0c2e-0000-4000-8000-000000000002"
# Where the host recorded that transcript; lcm finds it again in a copied state dir.
MAIN_TRANSCRIPT_RECORDED = f"/home/agent/.openclaw/agents/main/sessions/{MAIN_SESSION}.jsonl"


def main_entry_id(index: int) -> str:
    """The transcript entry id of DEBUG_TURNS[index] (as _Transcript numbers entries)."""
    return f"{MAIN_SESSION[-2:]}{index + 1:06x}"


# Transcripts from before LCM was installed (the database has neither session).
CI_SHARDS_SESSION = "9b1f0c2e-0000-4000-8000-0000000000a1"
TELEGRAM_SESSION = "9b1f0c2e-0000-4000-8000-0000000000a2"
TELEGRAM_KEY = "agent:main:telegram:direct:42"

_SONNET = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
_ADA = {"senderId": "42", "senderName": "Ada", "senderUsername": "ada", "senderIsOwner": True}


class _Transcript:
    """Writes one OpenClaw transcript: a session header, then entries chained by parentId."""

    def __init__(self, session_id: str, start: datetime) -> None:
        self.start = start
        self.lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": self.iso(0)}]
        self.count = 0
        self.parent: str | None = None

    def iso(self, seconds: int) -> str:
        return (self.start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def entry(self, kind: str, seconds: int, body: dict[str, Any], *, parent: str | None = None) -> str:
        """Append an entry under ``parent`` (default: the previous entry); returns its id."""
        self.count += 1
        entry_id = f"{self.lines[0]['id'][-2:]}{self.count:06x}"
        self.lines.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": parent if parent is not None else self.parent,
                "timestamp": self.iso(seconds),
                **body,
            }
        )
        self.parent = entry_id
        return entry_id

    def message(self, seconds: int, message: dict[str, Any], *, parent: str | None = None) -> str:
        at = int((self.start + timedelta(seconds=seconds)).timestamp() * 1000)
        return self.entry("message", seconds, {"message": {**message, "timestamp": at}}, parent=parent)

    def write(self, path: Path, *, cut_last_line: bool = False) -> None:
        lines = [json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in self.lines]
        if cut_last_line:  # the host was killed halfway through writing its last entry
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
        path.write_text("".join(lines), encoding="utf-8")


def _tool_call(call_id: str, command: str, thinking: str, text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": thinking, "thinkingSignature": "EqQBCkYIBxgCKkB" + call_id[-8:]},
            {"type": "text", "text": text},
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}},
        ],
        **_SONNET,
        "stopReason": "toolUse",
    }


def _tool_result(call_id: str, output: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": [{"type": "text", "text": output}],
        "isError": False,
    }


def _reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], **_SONNET, "stopReason": "stop"}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "__openclaw": dict(_ADA)}


def write_transcripts(out_dir: Path) -> Path:
    """Write the pre-LCM transcripts and the agent's sessions.json; returns the sessions dir."""
    sessions = out_dir / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)

    shards = _Transcript(CI_SHARDS_SESSION, datetime(2026, 5, 19, 9, 0, 0, tzinfo=timezone.utc))
    shards.entry("model_change", 1, {"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    shards.message(5, _user("test-integration takes 28 minutes. Can we split it into two shards per runner?"))
    shards.message(
        20,
        _tool_call(
            "toolu_01a2b3c4",
            "grep -n 'runs-on\\|timeout-minutes\\|pytest' .github/workflows/ci.yml",
            "Check how the job is defined first.",
            "Looking at the workflow.",
        ),
    )
    shards.message(
        22,
        _tool_result(
            "toolu_01a2b3c4",
            "12:    runs-on: [self-hosted, linux, 8-core]\n14:    timeout-minutes: 40\n31:      - run: pytest tests/",
        ),
    )
    fork = shards.message(
        40,
        _reply("One self-hosted 8-core runner runs everything serially. Two shards with 4 workers each fit."),
    )
    # Ada's first answer and its reply; she then edited her message, which OpenClaw keeps
    # as a new branch from the same parent: only the active branch is imported.
    shards.message(90, _user("Just split the test files alphabetically."))
    shards.message(100, _reply("Splitting tests/ into a-m and n-z."))
    shards.message(150, _user("Use pytest-split so the shards stay balanced by duration."), parent=fork)
    shards.message(
        170,
        _tool_call(
            "toolu_05d6e7f8",
            "sed -i 's|pytest tests/|pytest tests/ -n 4 --splits 2 --group ${{ matrix.shard }}|' "
            ".github/workflows/ci.yml",
            "pytest-split needs --splits and --group plus a matrix.",
            "Adding a shard matrix and pytest-split.",
        ),
    )
    shards.message(
        172, _tool_result("toolu_05d6e7f8", "Edited .github/workflows/ci.yml: matrix.shard [1, 2]")
    )
    shards.message(
        900,
        _reply(
            "Both shards now finish in about 14 minutes on the same runner. Opened PR #897 'ci: two shards'."
        ),
    )
    shards.message(960, _user("Merged. Thanks!"))
    shards.write(sessions / f"{CI_SHARDS_SESSION}.jsonl")

    chat = _Transcript(TELEGRAM_SESSION, datetime(2026, 5, 27, 18, 30, 0, tzinfo=timezone.utc))
    chat.message(0, _user("Which port does the sync test server use again?"))
    chat.message(8, _reply("tests/test_sync.py starts it on the fixed port 8765."))
    chat.message(30, _user("Remind me tomorrow to look at the nightly failures."))
    chat.message(
        35, _reply("Reminder set for 2026-05-28 09:00 UTC: look at the nightly test-integration failures.")
    )
    chat.write(sessions / f"{TELEGRAM_SESSION}.jsonl", cut_last_line=True)

    # The live session LCM holds (conversation 2): its transcript, as the host wrote it.
    main = _Transcript(MAIN_SESSION, START)
    for i, (role, text) in enumerate(DEBUG_TURNS):
        if role == "tool":
            body = {"role": "toolResult", "toolCallId": f"call_{i:02d}", "toolName": "exec"}
            main.message(120 * i, {**body, "content": [{"type": "text", "text": text}], "isError": False})
        else:
            main.message(120 * i, _user(text) if role == "user" else _reply(text))
    main.write(sessions / f"{MAIN_SESSION}.jsonl")

    index = {
        "agent:main:main": {"sessionId": MAIN_SESSION, "updatedAt": 1780390800000},
        TELEGRAM_KEY: {"sessionId": TELEGRAM_SESSION, "updatedAt": 1779906935000, "chatType": "direct"},
    }
    (sessions / "sessions.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return sessions


def build(out_dir: Path) -> Path:
    """Write openclaw.json and lcm.db into ``out_dir``; returns the database path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = out_dir / "lcm.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    config = {
        "agents": {"list": [{"id": "main", "enabled": True}]},
        "plugins": {
            "slots": {"contextEngine": "lossless-claw"},
            "entries": {
                "lossless-claw": {
                    "enabled": True,
                    "config": {"freshTailCount": 6, "freshTailMaxTokens": 400, "leafChunkTokens": 20000},
                }
            },
        },
    }
    (out_dir / "openclaw.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    sessions = write_transcripts(out_dir)
    main_size = (sessions / f"{MAIN_SESSION}.jsonl").stat().st_size

    with Store.open(db_path) as store:
        old = store.create_conversation(
            "9b1f0c2e-0000-4000-8000-000000000001",
            session_key="agent:main:main",
            title="Earlier main session",
            active=False,
            archived_at=stamp(-1440),
            archive_cause="manual-reset",
            created_at=stamp(-2880),
            updated_at=stamp(-1440),
        )
        store.add_messages(
            old,
            [
                {
                    "role": "user",
                    "content": "Set up the sync service repository.",
                    "created_at": stamp(-2880),
                },
                {
                    "role": "assistant",
                    "content": "Repository created with src/sync and tests/.",
                    "created_at": stamp(-2878),
                },
            ],
        )

        main = store.create_conversation(
            "9b1f0c2e-0000-4000-8000-000000000002",
            session_key="agent:main:main",
            title="Flaky CI investigation",
            created_at=stamp(0),
            updated_at=stamp(60),
            bootstrapped_at=stamp(0),
        )
        ids = store.add_messages(
            main,
            [
                {
                    "role": role,
                    "content": text,
                    "created_at": stamp(2 * i),
                    "transcript_entry_id": main_entry_id(i),
                }
                for i, (role, text) in enumerate(DEBUG_TURNS)
            ],
        )
        leaf1 = store.add_leaf_summary(
            main,
            ids[0:8],
            "2026-06-02 08:00-08:14 UTC: nightly `test-integration` failed 1 run in 5; failures in "
            "tests/test_sync.py::test_resume (runs 4812, 4815, 4821). Cause: fixed port 8765 collides "
            "when two shards share a runner (`OSError: [Errno 98] Address already in use`).\n"
            "Expand for details about: the failing runs and the error text.",
            summary_id="sum_0a1b2c3d4e5f6071",
            created_at=stamp(17),
            model="extractive",
        )
        leaf2 = store.add_leaf_summary(
            main,
            ids[8:16],
            "2026-06-02 08:16-08:30 UTC: start_server now binds port 0 (src/sync/server.py); "
            "`pytest tests/test_sync.py -n 4` gives 48 passed. retry.py retried every Exception; "
            "narrowed to ConnectionError/TimeoutError.\n"
            "Expand for details about: the edits and test runs.",
            summary_id="sum_1b2c3d4e5f607182",
            created_at=stamp(33),
            model="extractive",
        )
        store.replace_context_with_summary(main, leaf1)
        store.replace_context_with_summary(main, leaf2)
        condensed = store.add_condensed_summary(
            main,
            [leaf1, leaf2],
            "Flaky CI fixed: free-port binding for test servers and narrower retries (PR #912).\n"
            "Expand for details about: root cause, fix, verification.",
            summary_id="sum_2c3d4e5f60718293",
            created_at=stamp(45),
            model="extractive",
        )
        store.replace_context_with_summary(main, condensed)
        store.set_maintenance(
            main,
            pending=0,
            running=0,
            reason="threshold",
            requested_at="2026-06-02T08:44:00.000Z",
            last_finished_at="2026-06-02T08:45:10.000Z",
            updated_at=stamp(45),
        )
        store.upsert_bootstrap_state(
            main,
            session_file_path=MAIN_TRANSCRIPT_RECORDED,
            last_seen_size=main_size,
            last_seen_mtime_ms=1780387200000,
            last_processed_offset=main_size,
            last_processed_entry_id=main_entry_id(len(DEBUG_TURNS) - 1),
            session_header_id=MAIN_SESSION,
            updated_at=stamp(44),
        )

        nightly = store.create_conversation(
            "9b1f0c2e-0000-4000-8000-000000000003",
            session_key="agent:main:cron:nightly",
            title="Nightly report",
            created_at=stamp(120),
            updated_at=stamp(125),
        )
        store.add_messages(
            nightly,
            [
                {"role": role, "content": text, "created_at": stamp(120 + i)}
                for i, (role, text) in enumerate(NIGHTLY_TURNS)
            ],
        )
    # A self-contained file (no -wal/-shm siblings) so reading it leaves the checkout clean.
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("VACUUM")
    conn.close()
    return db_path


if __name__ == "__main__":
    target = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parent.parent / "examples" / "openclaw"
    )
    print(build(target))
