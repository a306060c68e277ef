"""The operation specs of a session's lifecycle: ingest, bootstrap, /new, /reset, end, after-turn, commit-turn.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.spec_parts import HOST_LIFECYCLE, RECORDS

SPECS: dict[str, OpSpec] = {
    "session.ingest": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "file", "message", "messages", "is_heartbeat"),
        words=("ingest",),
        writes=True,
        stdin=True,
        summary="Store messages for a session (JSON on stdin, --file, or --messages).",
        help=(
            "Store messages for a session: one JSON object, a JSON array, or JSON lines on stdin.\n\n"
            "Each message is reported as ingested (with its message id and seq) or skipped with the "
            "reason. Bad JSON or invalid UTF-8 is an INVALID_INPUT error naming the line, and nothing "
            "is written. Ingest never compacts."
        ),
        example=(
            'echo \'{"role": "user", "content": "Is the nightly green now?"}\' | lcm ingest '
            "--session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main"
        ),
        param_help={
            "file": "Read the messages from PATH instead of stdin ('-' is stdin).",
            "is_heartbeat": "A heartbeat turn: nothing is stored (reported as skipped).",
        },
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.bootstrap": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "session_file", "host_store"),
        writes=True,
        summary="Import a session's transcript JSONL, or reconcile what is missing.",
        help=(
            "Import a session's transcript, or only what the database is missing.\n\n"
            "The first import keeps the newest messages within bootstrapMaxTokens; later runs find "
            "the anchor and import what follows it (at most max(20% of stored, 50) a run). A current "
            "host (2026.7.2+) keeps no JSONL: without a --session-file that exists, the session is "
            "read from the host's SQLite store (--host-store, else the agent's openclaw-agent.sqlite "
            "under the state dir), once, when lcm has no conversation for it."
        ),
        example=(
            "lcm session bootstrap --session-id 9b1f0c2e-0000-4000-8000-0000000000a1 --session-file "
            "~/.openclaw/agents/main/sessions/9b1f0c2e-0000-4000-8000-0000000000a1.jsonl"
        ),
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.new": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key"),
        writes=True,
        summary="/new: prune the context to summaries of depth >= newSessionRetainDepth.",
        help=(
            "/new: drop messages and shallow summaries from the context (newSessionRetainDepth).\n\n"
            "Messages and summaries stay in the database; only context items are removed."
        ),
        example="lcm session new --session-key agent:main:main",
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.reset": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key"),
        writes=True,
        summary="/reset: archive the active conversation and start a fresh one.",
        help="/reset: archive the active conversation (manual-reset) and start a fresh one.",
        example="lcm session reset --session-key agent:main:main",
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.end": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "reason", "next_session_id", "next_session_key"),
        writes=True,
        summary="Session end: archive per the reason (deleted, reset, idle, ...).",
        help="Session end: archive the conversation as the host's reason says.",
        example="lcm session end --session-key agent:main:main --reason deleted",
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.after_turn": OpSpec(
        "lcm_cli.engine.session.after_turn",
        (
            "session_id",
            "session_key",
            "session_file",
            "file",
            "messages",
            "pre_prompt_message_count",
            "auto_compaction_summary",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("after-turn",),
        writes=True,
        stdin=True,
        summary=(
            "After a turn: store its new messages, then record debt (deferred) or compact locally "
            "(inline) when over the threshold; never waits for a model."
        ),
        help=(
            "After a turn: store its new messages, then apply the threshold policy.\n\n"
            "The new messages are messages[N:] (N = --pre-prompt-message-count). With --session-file "
            "the transcript is reconciled first; when it cannot be lined up with the database nothing "
            "is stored this turn. Over the threshold, one threshold debt row is recorded for `lcm "
            "maintain` (deferred, the default), or (proactiveThresholdCompactionMode inline) the "
            "context is compacted now with the local extractive summarizer, the model's work left "
            "as debt: no turn waits for a summarizer model."
        ),
        example=(
            'echo \'[{"role": "user", "content": "Is the nightly green?"}]\' | lcm after-turn '
            "--session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main "
            "--pre-prompt-message-count 0"
        ),
        param_help={
            "session_file": "The session's transcript JSONL (reconciled first).",
            "file": "Read the live messages from PATH instead of stdin.",
            "messages": "The live messages as a JSON array.",
        },
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.commit_turn": OpSpec(
        "lcm_cli.engine.session.turns",
        (
            "advancement_key",
            "session_id",
            "session_key",
            "messages",
            "file",
            "admission",
            "terminal",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("commit-turn",),
        writes=True,
        stdin=True,
        summary=(
            "Store one host-accepted turn atomically and idempotently by its advancement key "
            "(OpenClaw 2026.8+)."
        ),
        help=(
            "Commit one accepted turn, atomically and idempotently by its advancement key.\n\n"
            "What OpenClaw 2026.8+ calls as commitTurn: the turn's messages and its turn_advancements "
            "ledger row are stored in one transaction. A retry with the same key answers status "
            '"duplicate" and stores nothing; the same key with another turn is refused '
            "(TURN_ADVANCEMENT_CONFLICT). Then, over the threshold, one debt row is recorded for "
            "`lcm maintain` (always deferred, as lossless-claw 1.0 does); no summarizer model is called."
        ),
        example=(
            "lcm commit-turn --advancement-key turn-1 --session-id s1 --session-key agent:main:main "
            '--messages \'[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]\''
        ),
        param_help={
            "file": "Read the turn's messages from PATH instead of stdin.",
            "messages": "The turn's messages as a JSON array.",
            "is_heartbeat": "A heartbeat turn: acknowledged, nothing stored.",
        },
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
}
