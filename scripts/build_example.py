#!/usr/bin/env python3
"""Build the bundled example OpenClaw state dir (examples/openclaw) through lcm's own Store.

Deterministic: fixed ids, timestamps and text, so re-running it yields the same rows.
Usage: python scripts/build_example.py [OUTPUT_DIR]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from lcm_cli.engine.store import Store

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
                {"role": role, "content": text, "created_at": stamp(2 * i)}
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
            session_file_path="/home/agent/.openclaw/agents/main/sessions/9b1f0c2e-0000-4000-8000-000000000002.jsonl",
            last_seen_size=18342,
            last_seen_mtime_ms=1780387200000,
            last_processed_offset=18342,
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
