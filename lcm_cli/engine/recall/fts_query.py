"""Turning a user's full-text pattern into back-end queries (docs/reference/engine.md §7.2-§7.3).

Full-text mode is literal: every token is quoted for FTS5 (so ``OR``, ``NEAR``, ``*``
are words, and tokens are AND'd); regex syntax outside quotes is refused rather than
silently searched as text. CJK text has no word breaks FTS5's unicode61 tokenizer can
use, so it goes to the trigram table (summaries) or substring LIKE scans.
"""

from __future__ import annotations

import re

from lcm_cli.engine.core.errors import LcmError

# CJK ideographs, kana, Hangul and fullwidth forms: the runs tokenizers cannot split.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002ebef"
CJK_RUN = re.compile(f"[{_CJK}]+")
_QUOTED = re.compile(r'"([^"]*)"')
_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$", re.UNICODE)

# Regex syntax that full-text mode refuses (outside quotes), with a name for the error.
_REGEX_SYNTAX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\|"), "alternation '|'"),
    (re.compile(r"\.[*+?]"), "a wildcard '.*', '.+' or '.?'"),
    (re.compile(r"\[[^\]]+\]"), "a character class '[...]'"),
    (re.compile(r"(?:^|\s)\^"), "an anchor '^'"),
    (re.compile(r"\$(?:$|\s)"), "an anchor '$'"),
    (re.compile(r"\\[bBdDsSwW]"), "an escape such as '\\d' or '\\b'"),
)


def has_cjk(text: str) -> bool:
    """True when ``text`` holds any CJK code point."""
    return CJK_RUN.search(text) is not None


def _outside_quotes(text: str) -> str:
    return _QUOTED.sub(" ", text)


def check_full_text_pattern(pattern: str) -> None:
    """INVALID_PATTERN when ``pattern`` uses regex syntax outside quotes."""
    bare = _outside_quotes(pattern)
    for syntax, label in _REGEX_SYNTAX:
        if syntax.search(bare):
            raise LcmError(
                "INVALID_PATTERN",
                f"--mode full_text searches words literally, and {pattern!r} uses regex syntax "
                f"({label}). Run it with --mode regex, or put the text in double quotes to "
                "search it literally.",
                {"pattern": pattern, "mode": "full_text", "acceptedBy": "regex", "reason": label},
            )


def _quote_tokens(pattern: str) -> list[str]:
    """Quoted phrases (inner text) and bare whitespace tokens, in order."""
    tokens: list[str] = []
    position = 0
    for match in _QUOTED.finditer(pattern):
        tokens.extend(pattern[position : match.start()].split())
        tokens.append(match.group(1))
        position = match.end()
    tokens.extend(pattern[position:].replace('"', " ").split())
    return tokens


def fts_can_tokenize(pattern: str) -> bool:
    """False when some token has no letter or digit (e.g. an emoji): FTS5's unicode61
    tokenizer would drop it and match nothing, so such queries go to LIKE."""
    return all(re.search(r"\w", token) for token in _quote_tokens(pattern) if token.strip())


def fts5_query(pattern: str) -> str:
    """The FTS5 MATCH text: each phrase or token double-quoted, joined by spaces (AND)."""
    parts = []
    for token in _quote_tokens(pattern):
        text = token.replace('"', "").strip()
        if text:
            parts.append('"' + text + '"')
    return " ".join(parts) if parts else '""'


def like_terms(pattern: str) -> list[str]:
    """Lowercased, de-duplicated terms that must all occur (LIKE fallback)."""
    seen: list[str] = []
    for token in _quote_tokens(pattern):
        text = token.strip()
        if " " not in text:
            # Strip edge punctuation, unless that leaves nothing (an emoji, "C++").
            text = _EDGE_PUNCT.sub("", text) or text
        text = text.lower()
        if text and text not in seen:
            seen.append(text)
    return seen


def like_escape(term: str) -> str:
    """``%term%`` with LIKE wildcards escaped by ``\\``."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def cjk_runs(pattern: str) -> list[str]:
    """The CJK runs of ``pattern``, in order."""
    return CJK_RUN.findall(pattern)


def latin_terms(pattern: str) -> list[str]:
    """``like_terms`` of what is left once CJK runs are removed."""
    return like_terms(CJK_RUN.sub(" ", pattern))


def trigram_query(runs: list[str]) -> str | None:
    """FTS5 trigram MATCH for CJK runs, or None when a run is too short for trigrams.

    Runs of up to 4 characters are one phrase; longer runs become overlapping 4-character
    phrases OR'd together; runs are AND'd.
    """
    if not runs or any(len(run) < 3 for run in runs):
        return None
    groups = []
    for run in runs:
        if len(run) <= 4:
            groups.append('"' + run + '"')
        else:
            pieces = ['"' + run[i : i + 4] + '"' for i in range(len(run) - 3)]
            groups.append("(" + " OR ".join(pieces) + ")")
    return " AND ".join(groups)


def cjk_like_groups(runs: list[str]) -> list[list[str]]:
    """Per run, the substrings of which at least one must occur (CJK LIKE fallback).

    Runs of 1-2 characters as they are; longer runs as overlapping 2-character pieces.
    """
    groups = []
    for run in runs:
        if len(run) <= 2:
            groups.append([run])
        else:
            groups.append(sorted({run[i : i + 2] for i in range(len(run) - 1)}))
    return groups


def like_snippet(content: str, terms: list[str]) -> str:
    """24 characters before the earliest term through 40 after it, ``...`` on cut sides."""
    lowered = content.lower()
    hits = [(lowered.find(t), t) for t in terms if t and lowered.find(t) >= 0]
    if not hits:
        flat = " ".join(content.split())
        return flat if len(flat) <= 80 else flat[:77] + "..."
    start, term = min(hits)
    begin = max(0, start - 24)
    end = min(len(content), start + len(term) + 40)
    text = " ".join(content[begin:end].split())
    return ("..." if begin > 0 else "") + text + ("..." if end < len(content) else "")
