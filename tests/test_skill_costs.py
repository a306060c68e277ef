"""SKILL.md's table of cheapest calls: each row runs on the bundled example and costs what it says.

A row's figure is the output's tokens (4 characters a token, as lcm estimates them; the
state dir's path in ``meta`` counted as ``~/.openclaw``); the
call must not cost more, and not less than 60% of it (a figure far above the cost is
stale too). A call may exit 6 (a check that found problems): it still answered.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from lcm_cli.engine.core.tokens import estimate_tokens
from tests.conftest import REPO, lcm

SKILL = REPO / "skills" / "lcm" / "SKILL.md"
MARK = "<!-- cheapest calls: tests/test_skill_costs.py runs each row -->"
ROW = re.compile(r"^\| (?P<question>[^|]+) \| `(?P<call>lcm [^`]+)` \| (?P<tokens>\d+) \|$")


def rows() -> list[tuple[str, str, int]]:
    text = SKILL.read_text(encoding="utf-8")
    table = text[text.index(MARK) :].split("\n\n", 1)[0]
    found = [m for line in table.splitlines() if (m := ROW.match(line))]
    return [(m["question"].strip(), m["call"], int(m["tokens"])) for m in found]


def test_the_table_answers_the_questions_agents_ask() -> None:
    questions = " ".join(q for q, _, _ in rows()).lower()
    for asked in ("discussed", "decide", "summary tree", "context", "healthy", "backfill miss", "database"):
        assert asked in questions, asked


@pytest.mark.parametrize(("question", "call", "figure"), rows(), ids=[q for q, _, _ in rows()])
def test_each_cheapest_call_costs_its_figure(tmp_path: Path, question: str, call: str, figure: int) -> None:
    home = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", home)
    out = lcm("--openclaw-dir", str(home), *shlex.split(call)[1:])
    assert out.code in (0, 6), out.stderr
    cost = estimate_tokens(out.stdout.replace(str(home), "~/.openclaw"))  # paths as a user's are
    assert 0.6 * figure <= cost <= figure, f"{question}: {cost} tokens, the table says {figure}"
