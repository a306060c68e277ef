"""A fleet of small lcm.db files built through the Store, for the fleet tests and benchmark.

Member ``m`` of a fleet holds ``conversations`` conversations; conversation ``c`` was last
active ``7 * c + m`` minutes after the base time, and the members share some moments (every
member's conversation at ``c = 0`` is no older than the others' by more than a few minutes),
so a merged list interleaves the members and meets ties. Each conversation holds two
messages, one of them about a "deploy".
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from lcm_cli.engine.db.store import Store

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)


def _stamp(minutes: int) -> str:
    return (BASE + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S")


def build_member(path: Path, member: int, conversations: int = 4) -> None:
    """One member database at ``path`` (its parent directories made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with Store.open(path) as store:
        for c in range(conversations):
            # Members 0 and 2 share every moment: ties across databases.
            at = 7 * c + (member % 2)
            cid = store.create_conversation(
                f"sess-{member}-{c}",
                session_key=f"agent:m{member}:c{c}",
                title=f"Member {member} conversation {c}",
                created_at=_stamp(at),
                updated_at=_stamp(at),
            )
            store.add_messages(
                cid,
                [
                    {
                        "role": "user",
                        "content": f"please deploy build {member}.{c}",
                        "created_at": _stamp(at),
                    },
                    {"role": "assistant", "content": f"done with {member}.{c}", "created_at": _stamp(at)},
                ],
            )


def build_state_dir(root: Path, member: int, conversations: int = 4) -> Path:
    """An OpenClaw state dir holding ``openclaw.json`` and its member ``lcm.db``."""
    root.mkdir(parents=True, exist_ok=True)
    build_member(root / "lcm.db", member, conversations)
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": {}}}}})
    )
    return root


def build_fleet(folder: Path, members: int, conversations: int = 4) -> list[Path]:
    """``members`` state dirs ``folder/agent-NN``, each with its lcm.db; their databases."""
    return [build_state_dir(folder / f"agent-{m:02d}", m, conversations) / "lcm.db" for m in range(members)]
