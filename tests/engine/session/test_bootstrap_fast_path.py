"""The append-only bootstrap fast path gives exactly the rows of a full read (§3.1 step 6).

Each case writes a generated transcript, cuts it after one of its message lines,
bootstraps the prefix into two databases, restores the whole file (an append), and
bootstraps again: once with the fast path, once forced to read the whole file. Every
row of messages, parts, context items and the checkpoint must be equal.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.bootstrap import bootstrap_session
from lcm_cli.engine.session.ingest import IngestSettings
from tests.support.transcripts import append_garbage, append_lines, write_transcript

BIG = 10_000_000


def _settings(tmp: Path) -> IngestSettings:
    return IngestSettings(str(tmp / "files"))


def _boot(db: Path, path: Path, *, fast: bool) -> dict[str, Any]:
    store = Store.open(db)
    try:
        return bootstrap_session(
            store,
            _settings(db.parent),
            "s1",
            str(path),
            session_key="agent:main:s1",
            max_tokens=BIG,
            append_only=fast,
        )
    finally:
        store.close()


_FILE_ID = re.compile(r"file_[0-9a-f]{16}")


def _norm(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Externalized file ids are random (as the reference's): compare them as one token."""
    return [tuple(_FILE_ID.sub("file_X", v) if isinstance(v, str) else v for v in row) for row in rows]


def _rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        raw = {
            "messages": conn.execute(
                "SELECT message_id, conversation_id, seq, role, content, token_count, identity_hash,"
                " created_at, transcript_entry_id, stable_event_key FROM messages ORDER BY message_id"
            ).fetchall(),
            "parts": conn.execute("SELECT * FROM message_parts ORDER BY message_id, ordinal").fetchall(),
            "items": conn.execute(
                "SELECT conversation_id, ordinal, item_type, message_id, summary_id FROM context_items"
                " ORDER BY conversation_id, ordinal"
            ).fetchall(),
            "checkpoint": conn.execute(
                "SELECT conversation_id, last_seen_size, last_processed_offset,"
                " last_processed_entry_hash, session_header_id, last_processed_entry_id, fork_bounded,"
                " fork_source_message_count FROM conversation_bootstrap_state"
            ).fetchall(),
        }
        # A part's id is a random UUID, and a row naming a random file id hashes it: drop both.
        raw["messages"] = [
            (*row[:6], "X" if _FILE_ID.search(row[4]) else row[6], *row[7:]) for row in raw["messages"]
        ]
        raw["parts"] = [row[1:] for row in raw["parts"]]
        return {name: _norm(rows) for name, rows in raw.items()}
    finally:
        conn.close()


def _message_line_ends(path: Path) -> list[int]:
    """Byte offsets just after each persistable message envelope line."""
    ends, position = [], 0
    for raw in path.read_bytes().split(b"\n")[:-1]:
        position += len(raw) + 1
        entry = json.loads(raw)
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") in (
            "user",
            "assistant",
            "system",
            "tool",
            "toolResult",
        ):
            ends.append(position)
    return ends


def _both_ways(
    tmp: Path, full: Path, cut: int, *, extra: Any = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    data = full.read_bytes()
    results = []
    for name, fast in (("fast", True), ("full", False)):
        folder = tmp / name
        folder.mkdir()
        path = folder / "s1.jsonl"
        path.write_bytes(data[:cut])
        first = _boot(folder / "lcm.db", path, fast=fast)
        assert first["bootstrapped"] is True
        path.write_bytes(data)
        if extra is not None:
            extra(path)
        results.append(_boot(folder / "lcm.db", path, fast=fast))
    assert _rows(tmp / "fast" / "lcm.db") == _rows(tmp / "full" / "lcm.db")
    return results[0], results[1]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_fast_path_rows_equal_full_read(tmp_path: Path, seed: int) -> None:
    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=90, seed=seed)
    ends = _message_line_ends(full)
    cut = ends[len(ends) * 2 // 3]
    fast, slow = _both_ways(tmp_path, full, cut)
    assert fast["fastPath"] == "taken" and fast["anchor"] == "append-only"
    assert slow.get("fastPath") is None and slow["anchor"] == "entry-id"
    assert fast["importedMessages"] == slow["importedMessages"] > 0
    assert fast["reason"] == slow["reason"] == "reconciled missing session messages"


def test_fast_path_then_unchanged_then_second_append(tmp_path: Path) -> None:
    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=60, seed=9, entry_every=0)
    ends = _message_line_ends(full)
    data = full.read_bytes()
    db, path = tmp_path / "lcm.db", tmp_path / "s1.jsonl"
    path.write_bytes(data[: ends[20]])
    _boot(db, path, fast=True)
    path.write_bytes(data[: ends[35]])
    assert _boot(db, path, fast=True)["fastPath"] == "taken"
    assert _boot(db, path, fast=True)["reason"] == "already bootstrapped"
    path.write_bytes(data)
    again = _boot(db, path, fast=True)
    assert again["fastPath"] == "taken" and again["importedMessages"] == len(ends) - 36
    slow_path = tmp_path / "slow"
    slow_path.mkdir()
    (slow_path / "s1.jsonl").write_bytes(data)
    _boot(slow_path / "lcm.db", slow_path / "s1.jsonl", fast=False)
    fast, slow = _rows(db), _rows(slow_path / "lcm.db")
    assert fast["messages"] == slow["messages"] and fast["parts"] == slow["parts"]


def test_only_structural_entries_appended(tmp_path: Path) -> None:
    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=30, seed=4, entry_every=0)
    conn_rows: list[Any] = []

    def structural(path: Path) -> None:
        last = json.loads(path.read_bytes().split(b"\n")[-2])
        append_lines(path, [{"type": "model_change", "id": "mc01", "parentId": last["id"], "modelId": "m"}])

    fast, slow = _both_ways(tmp_path, full, full.stat().st_size, extra=structural)
    assert fast["fastPath"] == "taken" and fast["importedMessages"] == slow["importedMessages"] == 0
    assert fast["reason"] == slow["reason"] == "already bootstrapped"
    assert conn_rows == []


def _chained(parent: str, n: int, prefix: str = "app") -> list[dict[str, Any]]:
    lines = []
    for i in range(n):
        entry_id = f"{prefix}{i:04d}"
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = f"appended {i}" if role == "user" else [{"type": "text", "text": f"reply {i}"}]
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-06-10T01:{i // 60:02d}:{i % 60:02d}.000Z",
                "message": {"role": role, "content": content},
            }
        )
        parent = entry_id
    return lines


def _last_id(path: Path) -> str:
    return str(json.loads(path.read_bytes().split(b"\n")[-2])["id"])


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("branch", "does not continue the active path"),
        ("garbage", "is not a JSON object"),
        ("bare", "does not continue the active path"),
        ("unknown", "not a message envelope or a known entry"),
        ("reset", "does not continue the active path"),
        ("truncated", "complete line"),
    ],
)
def test_ineligible_slices_fall_back_to_the_full_read(tmp_path: Path, case: str, why: str) -> None:
    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=40, seed=6, entry_every=0)
    ends = _message_line_ends(full)

    def damage(path: Path) -> None:
        last = _last_id(path)
        if case == "branch":  # a history edit: the new leaf hangs from an earlier entry
            earlier = json.loads(path.read_bytes().split(b"\n")[-6])["id"]
            append_lines(path, _chained(earlier, 3, "br"))
        elif case == "garbage":
            append_lines(path, _chained(last, 2))
            append_garbage(path, ["invalid_json"])
        elif case == "bare":
            append_lines(path, [{"role": "user", "content": "bare line", "timestamp": 1780000000000}])
        elif case == "unknown":
            append_lines(path, [{"type": "telemetry_blip", "id": "tb01", "parentId": last}])
        elif case == "reset":
            append_lines(path, _chained("", 2))
        else:
            with open(path, "ab") as handle:
                handle.write(json.dumps(_chained(last, 1)[0]).encode())

    fast, slow = _both_ways(tmp_path, full, ends[-1], extra=damage)
    assert why in fast["fastPath"]
    assert fast["importedMessages"] == slow["importedMessages"]


def test_fast_path_over_the_import_cap_falls_back_and_chunks(tmp_path: Path) -> None:
    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=20, seed=2, entry_every=0)

    def many(path: Path) -> None:
        append_lines(path, _chained(_last_id(path), 80))

    fast, slow = _both_ways(tmp_path, full, full.stat().st_size, extra=many)
    assert fast["fastPath"] == "appended slice exceeds the import cap"
    assert fast["importedMessages"] == slow["importedMessages"] == 50 and fast.get("capped")


def test_slice_already_stored_by_runtime_ingest_is_adopted_not_duplicated(tmp_path: Path) -> None:
    from lcm_cli.engine.session.ingest import ingest_messages

    full = tmp_path / "whole.jsonl"
    write_transcript(full, session_id="s1", messages=20, seed=8, entry_every=0)

    def live_then_append(path: Path) -> None:
        lines = _chained(_last_id(path), 4)
        store = Store.open(path.parent / "lcm.db")
        try:
            ingest_messages(
                store,
                _settings(path.parent),
                "s1",
                # Timestamped as a host sends them: a row without one is stamped with the
                # wall clock, and the two databases are written a moment apart.
                [{**ln["message"], "timestamp": ln["timestamp"]} for ln in lines[:2]],
                session_key="agent:main:s1",
            )
        finally:
            store.close()
        append_lines(path, lines)

    fast, slow = _both_ways(tmp_path, full, full.stat().st_size, extra=live_then_append)
    # The newest stored row is now a runtime row, not the checkpoint's message.
    assert fast["fastPath"] == "newest stored row is not the checkpoint's message"
    assert fast["importedMessages"] == slow["importedMessages"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    messages=st.integers(8, 45),
    cut=st.floats(0.1, 0.95),
    branches=st.booleans(),
    entry_every=st.sampled_from([0, 3, 7]),
)
def test_any_cut_of_any_transcript_gives_the_full_read_rows(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    messages: int,
    cut: float,
    branches: bool,
    entry_every: int,
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    full = tmp / "whole.jsonl"
    write_transcript(
        full, session_id="s1", messages=messages, seed=seed, branches=branches, entry_every=entry_every
    )
    ends = _message_line_ends(full)
    fast, slow = _both_ways(tmp, full, ends[min(len(ends) - 1, int(len(ends) * cut))])
    assert fast["importedMessages"] == slow["importedMessages"]
    assert fast["reason"] == slow["reason"]
