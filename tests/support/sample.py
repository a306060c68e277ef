"""A small, fully known lcm.db built through the project's own Store, for tests.

Conversation 1 (key agent:main:main, active): 24 messages at one-minute steps, the first
16 folded into two leaf summaries and one condensed summary that replace them in context,
plus telemetry, maintenance, bootstrap, a focus brief and a large file.
Conversation 2 (same key, archived): 3 messages. Conversation 3 (no key): empty.
"""

from __future__ import annotations

import atexit
import copy
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)
ROLES = ("user", "assistant", "tool", "assistant")


def stamp(minutes: int) -> str:
    """SQLite-style timestamp ``minutes`` after the base time."""
    return (BASE + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S")


# One template per test process: copying the file costs about 1 ms, building it 150 ms.
_template: tuple[Path, dict[str, Any]] | None = None


def build_sample(path: Path) -> dict[str, Any]:
    """Create the sample database at ``path`` (a copy of the template); returns the ids tests refer to."""
    global _template
    if _template is None:
        folder = tempfile.mkdtemp(prefix="lcm-sample-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        template = Path(folder) / "lcm.db"
        _template = (template, _build(template))
    if path.exists():
        raise FileExistsError(path)
    shutil.copyfile(_template[0], path)
    return copy.deepcopy(_template[1])


def _build(path: Path) -> dict[str, Any]:
    """Build the sample database at ``path`` through the Store."""
    with Store.open(path) as store:
        c1 = store.create_conversation(
            "sess-main",
            session_key="agent:main:main",
            title="Main session",
            created_at=stamp(0),
            updated_at=stamp(100),
        )
        rows = [
            {
                "role": ROLES[i % 4],
                "content": f"message {i} about topic {i % 3}\n  with   extra   spaces",
                "created_at": stamp(i),
                "token_count": 10 + i,
            }
            for i in range(24)
        ]
        ids = store.add_messages(c1, rows)
        leaf_a = store.add_leaf_summary(
            c1,
            ids[0:8],
            "Leaf A covers messages 0-7.",
            summary_id="sum_aaaaaaaaaaaaaaaa",
            created_at=stamp(30),
        )
        leaf_b = store.add_leaf_summary(
            c1,
            ids[8:16],
            "Leaf B covers messages 8-15.",
            summary_id="sum_bbbbbbbbbbbbbbbb",
            created_at=stamp(31),
            file_ids=["file_0011223344556677"],
        )
        store.replace_context_with_summary(c1, leaf_a)
        store.replace_context_with_summary(c1, leaf_b)
        condensed = store.add_condensed_summary(
            c1,
            [leaf_a, leaf_b],
            "Condensed over A and B.",
            summary_id="sum_cccccccccccccccc",
            created_at=stamp(32),
            model="test-model",
        )
        store.replace_context_with_summary(c1, condensed)
        store.set_telemetry(
            c1,
            cache_state="hot",
            provider="anthropic",
            model="claude",
            updated_at=stamp(40),
        )
        store.set_maintenance(
            c1,
            pending=1,
            reason="threshold",
            requested_at="2026-07-01T10:00:00.000Z",
            context_threshold=0.75,
            updated_at=stamp(41),
        )
        store.upsert_bootstrap_state(
            c1,
            session_file_path="/tmp/sess-main.jsonl",
            last_seen_size=100,
            last_seen_mtime_ms=1,
            last_processed_offset=100,
        )
        store.add_large_file(
            c1,
            storage_uri="/tmp/file.txt",
            file_name="file.txt",
            mime_type="text/plain",
            byte_size=2048,
            file_id="file_0011223344556677",
        )

        c2 = store.create_conversation(
            "sess-old",
            session_key="agent:main:main",
            active=False,
            archived_at=stamp(5),
            created_at=stamp(-60),
            updated_at=stamp(5),
        )
        store.add_messages(
            c2,
            [{"role": "user", "content": f"old {i}", "created_at": stamp(-50 + i)} for i in range(3)],
        )
        c3 = store.create_conversation("sess-empty", created_at=stamp(1), updated_at=stamp(1))
    return {
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "messages": ids,
        "leaves": [leaf_a, leaf_b],
        "condensed": condensed,
    }
