"""The operation specs of compaction: compact and maintain.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.spec_parts import HOST_LIFECYCLE, RECORDS, SELECTOR

SPECS: dict[str, OpSpec] = {
    "session.compact": OpSpec(
        "lcm_cli.engine.compaction.ops",
        SELECTOR
        + (
            "session_id",
            "apply",
            "token_budget",
            "compaction_target",
            "force",
            "manual",
            "until_under_target",
            "current_token_count",
            "model",
        ),
        words=("compact",),
        writes=True,
        summary="Compact a conversation: leaf passes, then condensation (dry run unless --apply).",
        help=(
            "Compact a conversation: leaf passes over old raw messages, then condensation.\n\n"
            "Runs what the host's compact runs: nothing at or below the threshold unless --manual or "
            "--force. Without --apply this is a dry run on an in-memory copy of the conversation, "
            "with placeholder summaries: it lists the passes that would run and the tokens they would "
            "roughly save."
        ),
        example="lcm compact --session-key agent:main:main --manual --apply",
        param_help={
            "apply": "Really compact (dry run on an in-memory copy otherwise).",
        },
        render=RECORDS,
        applies="compact",
        unscoped=HOST_LIFECYCLE,
    ),
    "session.maintain": OpSpec(
        "lcm_cli.engine.compaction.ops",
        SELECTOR + ("session_id", "token_budget", "force"),
        words=("maintain",),
        writes=True,
        summary="Drain a conversation's deferred compaction debt (the host's maintain step).",
        help="Drain a conversation's deferred compaction debt now (the host's maintain step).",
        example="lcm maintain --session-key agent:main:main",
        render=RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
}
