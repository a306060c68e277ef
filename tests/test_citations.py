"""Every fact the code cites lives in the repository: citations of docs/reference/*.md resolve."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

CITATION = re.compile(r"docs/reference/([A-Za-z0-9_-]+\.md)")
# A citation of a fact file kept outside the repository (the old `compat/<file>.md` form).
OUTSIDE = re.compile(r"(?<![\w/])compat/[a-z-]+\.md|shared/compat/")
SOURCES = ("lcm_cli", "tests", "scripts", "benchmarks", "docs", "integrations", "skills")


def _files() -> list[Path]:
    found = [REPO / "README.md"]
    for top in SOURCES:
        found += [
            p
            for p in (REPO / top).rglob("*")
            if p.suffix in (".py", ".md", ".js", ".ts") and "node_modules" not in p.parts and p.is_file()
        ]
    return found


def test_every_citation_resolves_inside_the_repository() -> None:
    missing, outside = [], []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        missing += [
            f"{path.relative_to(REPO)}: {m}"
            for m in CITATION.findall(text)
            if not (REPO / "docs" / "reference" / m).exists()
        ]
        if path.name != "test_citations.py":
            outside += [f"{path.relative_to(REPO)}: {m}" for m in OUTSIDE.findall(text)]
    assert not missing, missing
    assert not outside, outside


def test_the_reference_index_lists_every_fact_file() -> None:
    index = (REPO / "docs" / "reference" / "README.md").read_text(encoding="utf-8")
    for fact in sorted((REPO / "docs" / "reference").glob("*.md")):
        if fact.name != "README.md":
            assert f"({fact.name})" in index, fact.name
