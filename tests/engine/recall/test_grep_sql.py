"""Grep's shared pieces: the regex hit's snippet with context."""

from __future__ import annotations

from lcm_cli.engine.recall.grep_sql import CONTEXT_BEFORE, SNIPPET_CHARS, context_snippet


def test_a_short_text_is_the_whole_line() -> None:
    text = "The billing deploy\nfailed:   timeout"
    assert context_snippet(text, 4, 11) == "The billing deploy failed: timeout"


def test_a_long_text_keeps_context_before_from_a_word_start_and_is_cut_after() -> None:
    words = " ".join(f"w{i:03d}" for i in range(200))
    start = words.index("w100")
    snippet = context_snippet(words, start, start + 4)
    assert snippet.startswith("...w") and snippet.endswith("...")
    assert len(snippet) == SNIPPET_CHARS and "w100" in snippet
    before = snippet[3 : snippet.index("w100")]
    assert 0 < len(before) <= CONTEXT_BEFORE and before.split()[0].startswith("w")


def test_a_match_longer_than_the_snippet_is_cut() -> None:
    text = "x" * 1000
    snippet = context_snippet(text, 0, 1000)
    assert len(snippet) == SNIPPET_CHARS and snippet.endswith("...") and not snippet.startswith("...")
