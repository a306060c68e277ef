"""`lcm summaries graph`: a conversation's summary DAG as Mermaid, Graphviz dot or SVG (read-only).

Each node shows its id, kind, depth and tokens; summaries in the context are drawn bold.
Edges point from a condensed summary to each source it consumes, in source order. SVG is
drawn by Graphviz's ``dot`` when it is on PATH; without it the call fails with
GRAPHVIZ_NOT_FOUND and names the two text forms instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import FORCE, GRAPH_FORMATS, MAX_TOKENS, MIN_DEPTH, OUT, TO, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read.conversation_rows import find_conversation
from lcm_cli.engine.recall.scope import choice
from lcm_cli.engine.surgery.common import rows

DOT_TIMEOUT_S = 120


def _label(node: dict[str, Any]) -> tuple[str, str]:
    return node["summaryId"], f"{node['kind']} d{node['depth']} · {node['tokenCount']} tokens"


def mermaid(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> str:
    """Mermaid flowchart source; node keys are positional (summary ids are opaque text)."""
    key = {n["summaryId"]: f"n{i}" for i, n in enumerate(nodes)}
    lines = ["flowchart TD"]
    for n in nodes:
        head, tail = (part.replace('"', "#quot;") for part in _label(n))
        lines.append(f'  {key[n["summaryId"]]}["{head}<br/>{tail}"]')
    lines += [f"  {key[e['from']]} --> {key[e['to']]}" for e in edges]
    in_context = [key[n["summaryId"]] for n in nodes if n["contextOrdinal"] is not None]
    if in_context:
        lines.append("  classDef context stroke-width:3px")
        lines.append(f"  class {','.join(in_context)} context")
    return "\n".join(lines) + "\n"


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quoted(text: str) -> str:
    return '"' + _escaped(text) + '"'


def dot(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], conversation_id: int) -> str:
    """Graphviz dot source."""
    lines = [
        f"digraph {_quoted(f'conversation {conversation_id}')} {{",
        "  rankdir=TB;",
        "  node [shape=box];",
    ]
    for n in nodes:
        head, tail = _label(n)
        bold = ", penwidth=3" if n["contextOrdinal"] is not None else ""
        label = f'"{_escaped(head)}\\n{_escaped(tail)}"'  # dot's own line break
        lines.append(f"  {_quoted(n['summaryId'])} [label={label}{bold}];")
    lines += [f"  {_quoted(e['from'])} -> {_quoted(e['to'])};" for e in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def svg(source: str) -> str:
    """``source`` drawn by Graphviz's ``dot`` as SVG, or GRAPHVIZ_NOT_FOUND."""
    program = shutil.which("dot")
    if program is None:
        raise LcmError(
            "GRAPHVIZ_NOT_FOUND",
            "--to svg needs Graphviz's `dot` on PATH, and there is none. Install Graphviz, or use "
            "--to dot or --to mermaid and draw the source elsewhere.",
            {"program": "dot"},
        )
    try:
        done = subprocess.run(
            [program, "-Tsvg"],
            input=source,
            capture_output=True,
            text=True,
            timeout=DOT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LcmError(
            "GRAPHVIZ_NOT_FOUND", f"Graphviz's `dot` could not run ({exc}).", {"program": program}
        ) from None
    if done.returncode != 0:
        raise LcmError(
            "GRAPHVIZ_NOT_FOUND",
            f"Graphviz's `dot` failed (exit {done.returncode}): {done.stderr.strip()[:500]}",
            {"program": program},
        )
    return done.stdout


def _source(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], cid: int, fmt: str) -> str:
    return mermaid(nodes, edges) if fmt == "mermaid" else dot(nodes, edges, cid)


def _top(
    nodes: list[dict[str, Any]], edges: list[dict[str, Any]], min_depth: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    kept = [n for n in nodes if n["depth"] >= min_depth]
    ids = {n["summaryId"] for n in kept}
    return kept, [e for e in edges if e["from"] in ids and e["to"] in ids]


def _bounded(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    cid: int,
    fmt: str,
    min_depth: int,
    max_tokens: int | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]:
    """The DAG from ``min_depth`` up and, under ``max_tokens``, from the lowest depth whose
    nodes, edges and picture source fit (the top level always stays, whatever it costs)."""
    from lcm_cli.engine.core.tokens import estimate_tokens

    if min_depth:
        nodes, edges = _top(nodes, edges, min_depth)
    if not max_tokens or not nodes:
        return nodes, edges, {"minDepth": min_depth} if min_depth else None
    depths = sorted({n["depth"] for n in nodes})
    for depth in depths:
        kept, links = _top(nodes, edges, depth)
        shown = {"nodes": kept, "edges": links, "text": _source(kept, links, cid, fmt)}
        if depth == depths[-1] or estimate_tokens(json.dumps(shown, separators=(",", ":"))) <= max_tokens:
            break
    if depth == depths[0]:
        return kept, links, {"minDepth": min_depth} if min_depth else None
    hint = f"depths below {depth} left out; raise --max-tokens, or write it all with --to svg --out FILE"
    return kept, links, {"minDepth": depth, "maxTokens": max_tokens, "hint": hint}


@operation("summaries.graph")
def graph(ctx: Context, req: Request) -> Result:
    """The DAG's nodes and edges, and its picture source in the asked form."""
    assert req.selector is not None
    fmt = choice(req, TO, GRAPH_FORMATS) or "mermaid"
    cid = find_conversation(ctx, req.selector)["conversation_id"]
    conn = ctx.db
    ordinals = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT summary_id, MIN(ordinal) FROM context_items WHERE conversation_id = ? AND summary_id IS NOT NULL"
            " GROUP BY summary_id",
            (cid,),
        )
    }
    nodes = [
        {
            "summaryId": r["summary_id"],
            "kind": r["kind"],
            "depth": r["depth"],
            "tokenCount": r["token_count"],
            "earliestAt": r["earliest_at"],
            "latestAt": r["latest_at"],
            "contextOrdinal": ordinals.get(r["summary_id"]),
        }
        for r in rows(
            conn,
            """SELECT summary_id, kind, depth, token_count, earliest_at, latest_at FROM summaries
               WHERE conversation_id = ? ORDER BY depth DESC, created_at, summary_id""",
            (cid,),
        )
    ]
    edges = [
        {"from": r["summary_id"], "to": r["parent_summary_id"], "ordinal": r["ordinal"]}
        for r in rows(
            conn,
            """SELECT sp.summary_id, sp.parent_summary_id, sp.ordinal FROM summary_parents sp
               JOIN summaries hi ON hi.summary_id = sp.summary_id
               JOIN summaries lo ON lo.summary_id = sp.parent_summary_id
               WHERE hi.conversation_id = ? AND lo.conversation_id = ?
               ORDER BY hi.depth DESC, sp.summary_id, sp.ordinal""",
            (cid, cid),
        )
    ]
    total = len(nodes)
    nodes, edges, truncated = _bounded(nodes, edges, cid, fmt, req[MIN_DEPTH] or 0, req[MAX_TOKENS])
    text = _source(nodes, edges, cid, fmt)
    if fmt == "svg":
        text = svg(text)
    data: dict[str, Any] = {"conversationId": cid, "format": fmt, "nodes": nodes, "edges": edges, "out": None}
    if truncated is not None:
        data["truncated"] = {**truncated, "nodes": len(nodes), "of": total}
    out = req[OUT]
    if out:
        from lcm_cli.engine.core.outputs import output_target

        target = output_target(out, protected=ctx.protected_files(), force=req[FORCE])
        try:
            target.write(text.encode("utf-8"), mode=0o644)
        except OSError as exc:
            raise LcmError(
                "EXPORT_WRITE_FAILED",
                f"Could not write {target.path}: {exc.strerror or exc}. Check the directory exists and is writable.",
                {"path": target.path},
            ) from None
        data["out"] = target.path
    data["text"] = text
    return Result(data)
