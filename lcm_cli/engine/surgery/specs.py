"""The operation specs of summary surgery: rewrite, dissolve, transplant, and the DAG graph.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec
from lcm_cli.engine.core.render_hints import Render, Rows, Text
from lcm_cli.engine.core.spec_parts import SELECTOR, WHOLE_FILE

# Summary surgery: one row per rewritten summary, restored context item, copied summary.
_REWRITES = Rows("diff", ("summaryId", "depth", "status", "oldTokenCount", "newTokenCount"))
_CONTEXT_ITEMS = Rows("ordinal", ("ordinal", "itemType", "summaryId", "kind", "depth", "tokenCount"))
_COPIES = Rows("newSummaryId", ("summaryId", "newSummaryId", "kind", "depth", "tokenCount", "inContext"))

SPECS: dict[str, OpSpec] = {
    "summaries.rewrite": OpSpec(
        "lcm_cli.engine.surgery.rewrite",
        SELECTOR + ("summary_id", "depth", "all", "cascade", "apply", "backup"),
        long_running=True,
        writes=True,
        summary="Re-summarize summaries with the configured summarizer and depth-aware prompts (dry run: a diff).",
        help=(
            "Re-summarize one summary (--summary-id), one depth (--depth) or all (--all) from their "
            "sources, with the configured summarizer and the depth-aware templates (`lcm prompts`).\n\n"
            "A dry run by default: every summary's unified diff and old/new tokens. --apply takes a change "
            "backup of the rows it writes (--backup full: a copy of the whole database), then writes one "
            "transaction per summary, bottom-up; ids and links are kept. "
            "--cascade also re-summarizes every summary that consumes a rewritten one, from the new "
            "text. When the summarizer fails or answers with a fallback, that summary is left as it "
            "was and reported (exit 1). --depth and --all cover every conversation unless "
            "--conversation-id or --session-key narrows them."
        ),
        example="lcm summaries rewrite --summary-id sum_0a1b2c3d4e5f6071",
        param_help={
            "summary_id": "Rewrite this summary; repeatable.",
            "depth": "Rewrite every summary of this depth (0 = leaves).",
            "apply": "Write, under a change backup (dry run with diffs otherwise).",
        },
        render=Render(rows=(_REWRITES,)),
        items="summaries",
        applies="back up and write these",
        unscoped=WHOLE_FILE,
    ),
    "summaries.dissolve": OpSpec(
        "lcm_cli.engine.surgery.dissolve",
        ("purge", "apply", "backup"),
        args=("summary_id",),
        writes=True,
        summary="Undo one condensation: the summaries it consumed return to the context in its place.",
        help=(
            "Undo one condensation: the condensed summary's sources return to the context in its "
            "place, in order, and the ordinals after it are renumbered.\n\n"
            "The dissolved summary is kept as orphaned history (it still reads with `lcm summaries "
            "show`), or deleted with --purge. A dry run by default; --apply writes one transaction, "
            "under a change backup of the rows it changes (--backup full: a copy of the whole database)."
        ),
        example="lcm summaries dissolve sum_2c3d4e5f60718293",
        param_help={"apply": "Write, under a change backup (dry run otherwise)."},
        render=Render(rows=(_CONTEXT_ITEMS,)),
        items="context",
        applies="back up and dissolve",
        unscoped=WHOLE_FILE,
    ),
    "summaries.transplant": OpSpec(
        "lcm_cli.engine.surgery.transplant",
        ("from", "summary_id", "to", "apply", "backup"),
        writes=True,
        summary="Deep-copy a summary DAG (a conversation's, or one subtree) into another conversation.",
        help=(
            "Deep-copy a summary DAG into another conversation: --from ID copies the summaries in "
            "that conversation's context with everything beneath them, --summary-id copies one "
            "summary with its subtree.\n\n"
            "Summaries get new ids; their source messages (with their parts and identity hashes) are "
            "copied too, so no link crosses conversations, and the copied roots go first in the "
            "target's context. A content-hash guard refuses a copy the target already holds "
            "(TRANSPLANT_DUPLICATE). A dry run by default; --apply writes one transaction, under a "
            "change backup of the rows it adds (--backup full: a copy of the whole database)."
        ),
        example="lcm summaries transplant --from 2 --to 3",
        param_help={
            "summary_id": "Copy this summary with its subtree; repeatable.",
            "to": "The target conversation id.",
            "apply": "Write, under a change backup (dry run otherwise).",
        },
        metavars={"to": "ID"},
        render=Render(rows=(_COPIES,)),
        items="summaries",
        applies="back up and copy",
        unscoped=WHOLE_FILE,
    ),
    "summaries.graph": OpSpec(
        "lcm_cli.engine.surgery.graph",
        SELECTOR + ("to", "out", "force", "min_depth", "max_tokens"),
        needs_selector=True,
        summary="A conversation's summary DAG as Mermaid, Graphviz dot or SVG (read-only).",
        help=(
            "A conversation's summary DAG as a picture source: Mermaid (default) or Graphviz dot, "
            "each node with its depth, kind and tokens; summaries in the context are marked.\n\n"
            "--to svg runs Graphviz's `dot` and fails with GRAPHVIZ_NOT_FOUND when it is not on "
            "PATH. --min-depth N keeps the top of the DAG; --max-tokens N keeps the deepest levels "
            "that fit (data.truncated says which depth it stopped at). Read-only."
        ),
        example="lcm summaries graph --conversation-id 2 --to mermaid --max-tokens 2000",
        param_help={
            "to": "mermaid (default), dot, or svg (needs Graphviz's `dot` on PATH).",
            "out": "Write the picture here instead of into the result (a new file unless --force).",
            "force": "Replace the file at --out if there is one (atomically).",
        },
        outputs={"out": "file"},
        render=Render(text=Text("text", "# summary DAG of conversation {conversationId} ({format})")),
        items="nodes",
    ),
}
