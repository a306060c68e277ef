"""Directed-graph facts the summary DAG's readers share (doctor's checks, surgery's guard)."""

from __future__ import annotations


def nodes_on_cycles(edges: dict[str, list[str]]) -> set[str]:
    """Nodes that lie on a directed cycle (iterative Tarjan; no recursion limit to hit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: set[str] = set()
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child_at = work.pop()
            if child_at == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, [])
            if child_at < len(children):
                work.append((node, child_at + 1))
                child = children[child_at]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1 or node in edges.get(node, []):
                    found.update(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found
