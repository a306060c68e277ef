"""A session ready to rotate: a generated transcript, bootstrapped into a real lcm.db
through the project's own write path, with everything outside the fresh tail already
folded into leaf summaries (through ``Store.add_leaf_summary`` and
``replace_context_with_summary``, as compaction writes them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.transcripts import GeneratedTranscript, write_transcript

SESSION_KEY = "agent:main:main"


@dataclass
class Session:
    """The state dir, database and transcript of one seeded session."""

    root: Path
    db: Path
    transcript: Path
    generated: GeneratedTranscript
    conversation_id: int
    config: dict[str, Any]


def write_config(root: Path, config: dict[str, Any]) -> None:
    """openclaw.json with the Lossless plugin config ``config``."""
    body = {"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": config}}}}
    (root / "openclaw.json").write_text(json.dumps(body))


def seed_session(
    root: Path,
    *,
    messages: int = 60,
    fresh_tail: int = 8,
    session_id: str = "sess-rotate",
    session_key: str = SESSION_KEY,
    summarize: bool = True,
    chunk: int = 20,
    extra_config: dict[str, Any] | None = None,
    **transcript_options: Any,
) -> Session:
    """Write the transcript, bootstrap it (every message), and summarize outside the tail."""
    from lcm_cli.engine.api import call
    from lcm_cli.engine.db.store import Store

    root.mkdir(parents=True, exist_ok=True)
    config = {"freshTailCount": fresh_tail, "bootstrapMaxTokens": 100_000_000, **(extra_config or {})}
    write_config(root, config)
    transcript = root / "agents" / "main" / "sessions" / f"{session_id}.jsonl"
    generated = write_transcript(transcript, session_id=session_id, messages=messages, **transcript_options)
    done = call(
        "session.bootstrap",
        {"session_id": session_id, "session_key": session_key, "session_file": str(transcript)},
        openclaw_dir=str(root),
    )
    cid = int(done["data"]["conversationId"])
    db = root / "lcm.db"
    if summarize:
        with Store.open(db) as store:
            summarize_outside_tail(store, cid, config, chunk=chunk)
    return Session(root, db, transcript, generated, cid, config)


def summarize_outside_tail(store: Any, cid: int, config: dict[str, Any], *, chunk: int = 20) -> int:
    """Fold the raw messages outside the fresh tail into leaf summaries; return how many.

    ``config`` is the plugin config; the tail is drawn with its effective values.
    """
    from lcm_cli.engine.compaction import context_items as ci
    from lcm_cli.engine.compaction.compactor import Settings
    from lcm_cli.engine.config.resolve import resolve_effective

    settings = Settings.from_effective(resolve_effective(config, {}, None))
    items = [i for i in ci.load_items(store.conn, cid) if i.is_message]
    edge = ci.tail_boundary(items, settings.fresh_tail_count, settings.fresh_tail_max_tokens)
    ids = [i.message_id for i in items if i.ordinal < edge and i.message_id is not None]
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        summary = store.add_leaf_summary(cid, part, f"Summary of {len(part)} messages from #{part[0]}.")
        store.replace_context_with_summary(cid, summary)
    return len(ids)
