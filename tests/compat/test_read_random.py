"""Read commands with random options on random imported databases: fields, cursors, errors.

For each seed a state dir is imported, then list commands run with random option values,
empty and huge ones included. Invariants: a page has the contract's fields; walking the
cursors returns every row once, in the contract's order; a bad value is an
INVALID_ARGUMENT (exit 2, compact JSON even with --pretty), never a crash.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.compat.gen import build_state_dir
from tests.conftest import lcm

SEEDS = range(1, 9)
LIMITS = ["1", "2", "3", "7", "050", "500"]
BAD_LIMITS = ["0", "501", "-1", "1e1", "abc", "", " 5", "9007199254740993", "9" * 40]
CONVERSATION_KEYS = [
    "conversationId",
    "sessionId",
    "sessionKey",
    "title",
    "active",
]
MESSAGE_KEYS = ["messageId", "conversationId", "seq", "role", "tokenCount", "createdAt", "preview"]


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for seed in SEEDS:
        root = tmp_path_factory.mktemp(f"read{seed}")
        build_state_dir(seed, root)
        lcm("migrate-sessions", "--state-dir", str(root), "--apply")
        out[seed] = root / "lcm.db"
    return out


def ok(*args: str) -> dict[str, Any]:
    out = lcm(*args)
    assert out.code == 0 and not out.stderr, out.stderr
    return json.loads(out.stdout)


def walk(db: Path, command: list[str], limit: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        page = ok("--db", str(db), *command, "--limit", limit, *(["--cursor", cursor] if cursor else []))
        got = page["data"]["items"]
        pagination = page["pagination"]
        assert pagination["returned"] == len(got) <= int(limit) == pagination["limit"]
        assert pagination["hasMore"] == (pagination["nextCursor"] is not None)
        items += got
        cursor = pagination["nextCursor"]
        if cursor is None:
            return items
    raise AssertionError("the cursor walk did not end")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_read_options(databases: dict[int, Path], seed: int) -> None:
    db = databases[seed]
    if not db.exists():
        pytest.skip("nothing imported for this seed")
    rng = random.Random(seed)
    every = ok("--db", str(db), "conversations", "list", "--limit", "500")["data"]["items"]
    if not every:
        pytest.skip("only files with nothing to import for this seed: no conversation (compat.md)")
    assert all(set(CONVERSATION_KEYS) <= set(item) for item in every)
    ids = [c["conversationId"] for c in every]
    assert len(set(ids)) == len(ids)
    assert [c["conversationId"] for c in walk(db, ["conversations", "list"], rng.choice(LIMITS))] == ids

    for conversation in rng.sample(every, min(3, len(every))):
        selector = ["--conversation-id", str(conversation["conversationId"])]
        all_messages = ok("--db", str(db), "messages", "list", *selector, "--limit", "500")["data"]["items"]
        assert all(set(MESSAGE_KEYS) <= set(m) for m in all_messages)
        walked = walk(db, ["messages", "list", *selector], rng.choice(LIMITS))
        assert [m["messageId"] for m in walked] == [m["messageId"] for m in all_messages]
        keys = [(m["createdAt"], m["messageId"]) for m in walked]
        assert keys == sorted(keys, reverse=True)
        # Empty values: --kind "" is no filter; --session-key "" and --conversation-id "" are absent.
        assert (
            ok("--db", str(db), "summaries", "list", *selector, "--kind", "")["data"]
            == ok("--db", str(db), "summaries", "list", *selector)["data"]
        )
        missing = lcm(
            "--db", str(db), "--pretty", "messages", "list", "--session-key", "", "--conversation-id", ""
        )
        assert missing.code == 2 and json.loads(missing.stderr)["error"]["code"] == "MISSING_SELECTOR"
        assert "\n" not in missing.stderr.strip()  # compact despite --pretty (cli-contract §5)

    for bad in rng.sample(BAD_LIMITS, 4):
        out = lcm("--db", str(db), "--pretty", "conversations", "list", f"--limit={bad}")
        assert out.code == 2 and not out.stdout
        error = json.loads(out.stderr)["error"]
        assert error["code"] == "INVALID_ARGUMENT" and error["details"] == {"value": bad}
        assert "\n" not in out.stderr.strip()
    huge = str(rng.choice([2**53 + 1, 10**30]))
    out = lcm("--db", str(db), "messages", "tail", "--count", huge, "--conversation-id", str(ids[0]))
    assert out.code == 2 and json.loads(out.stderr)["error"]["code"] == "INVALID_ARGUMENT"
