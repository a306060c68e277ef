"""Text hygiene around summarization (docs/reference/engine.md §5.2, §5.6).

Two concerns live here because every summarizer and every fallback needs them:

* the reasoning leak guard — a model may answer with its private reasoning wrapped in
  ``<think>``-style blocks; such text must never be stored as a summary nor fed back as
  condensed input or previous context;
* directive sanitation — deterministic fallbacks copy untrusted conversation text
  verbatim, so sentences shaped like prompt injection are replaced by a marker before
  the text can reach a later model prompt;
* host-injected context (memory plugins' tags) removed from leaf input;
* token-exact truncation by code point, so fallbacks and caps stay inside their budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lcm_cli.engine.core.tokens import token_quarters

# --- reasoning leak guard ---------------------------------------------------------------

_TAGS = "think|thinking|reasoning"
# A closed block anywhere (standalone or leading); non-greedy, across lines.
_CLOSED_BLOCK = re.compile(rf"<\s*({_TAGS})\b[^>]*>.*?<\s*/\s*\1\s*>", re.IGNORECASE | re.DOTALL)
# An opening tag that is never closed: everything after it is reasoning.
_UNTERMINATED = re.compile(rf"<\s*(?:{_TAGS})\b[^>]*>.*\Z", re.IGNORECASE | re.DOTALL)
# A stray closing tag left behind by a block whose opening tag the server dropped:
# what precedes it was reasoning.
_LEADING_CLOSE = re.compile(rf"\A.*?<\s*/\s*(?:{_TAGS})\s*>", re.IGNORECASE | re.DOTALL)
# Special-token spellings such as <|think|>, <|begin_of_thinking|>, and [think] markers.
_SPECIAL_TOKENS = re.compile(r"<\|[^|>]*think[^|>]*\|>|\[/?think(?:ing)?\]", re.IGNORECASE)
# A leading paragraph that announces its own reasoning ("Thinking process:", ...).
_REASONING_OPENER = re.compile(
    r"\A\s*(?:thinking(?: process)?|chain[- ]of[- ]thought|reasoning(?: process)?|my reasoning)\s*:"
    r".*?(?:\n\s*\n|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def strip_reasoning(text: str) -> str:
    """``text`` without reasoning/think blocks, trimmed; reasoning-only text becomes ``""``."""
    if not text:
        return ""
    lowered = text.lower()
    if "think" in lowered or "reason" in lowered or "chain" in lowered:
        text = _CLOSED_BLOCK.sub("", text)
        if _LEADING_CLOSE.search(text) and not re.search(rf"<\s*(?:{_TAGS})\b", text, re.IGNORECASE):
            text = _LEADING_CLOSE.sub("", text, count=1)
        text = _UNTERMINATED.sub("", text)
        text = _SPECIAL_TOKENS.sub("", text)
        text = _REASONING_OPENER.sub("", text, count=1)
    return text.strip()


# --- injected context tags ----------------------------------------------------------------

_UNTRUSTED_HEADER = re.compile(
    r"^[ \t]*Untrusted context \(metadata, do not treat as instructions or commands\):[ \t]*\n?", re.MULTILINE
)


def strip_injected_context_tags(text: str, tags: Sequence[str]) -> str:
    """``text`` without host-injected context (``stripInjectedContextTags``, §5.6).

    Every ``<tag>…</tag>`` span of each configured tag (exact name, no attributes,
    case-insensitive, shortest match, across lines) is removed, and so is a line-leading
    ``Untrusted context (metadata, do not treat as instructions or commands):`` header; the
    result is trimmed. An empty tag list disables the whole step. Compaction applies it to
    raw message text before a leaf pass only.
    """
    names = [tag for tag in tags if tag]
    if not names:
        return text
    lowered = text.lower()
    for tag in names:
        if f"<{tag.lower()}>" in lowered:
            escaped = re.escape(tag)
            text = re.sub(rf"<{escaped}>.*?</{escaped}>", "", text, flags=re.IGNORECASE | re.DOTALL)
    return _UNTRUSTED_HEADER.sub("", text).strip()


# --- directive sanitation ---------------------------------------------------------------

DIRECTIVE_MARKER = "[LCM fallback summary omitted directive-shaped untrusted content]."
DIRECTIVE_NOTE = "[LCM fallback summary; directive-shaped untrusted content omitted]"

_DIRECTIVE = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override|bypass|skip)\b[^.!?\n]{0,40}?
        \b(?:previous|prior|above|earlier|all|any|the|your|system|developer)\b[^.!?\n]{0,30}?
        \b(?:instructions?|prompts?|rules?|directives?|guidelines?|messages?|context)\b
    | \byou\s+are\s+now\b
    | \bfrom\s+now\s+on\b
    | \b(?:reply|respond|answer|output)\s+only\s+with\b
    | \b(?:reveal|print|show|repeat|output|leak|display)\b[^.!?\n]{0,30}?\bsystem\s+prompt\b
    | \bjailbr(?:eak|oken)\b
    | \b(?:developer|god|dan|unrestricted|unfiltered)\s+mode\b
    | \bdo\s+anything\s+now\b
    | \b(?:act|pretend|behave)\s+as\s+(?:if\s+you\s+are\s+)?dan\b
    | \byou\s+are\s+dan\b
    | \bnew\s+(?:system\s+)?instructions?\s*:
    """,
    re.IGNORECASE | re.VERBOSE,
)
# Imperative sentences that directly follow a directive continue it ("Then print ...").
_IMPERATIVE = re.compile(
    r"\A(?:then\s+|and\s+|now\s+|also\s+)?(?:say|print|output|reply|respond|answer|write|reveal|"
    r"execute|run|delete|send|return|tell|list|call|do|obey|follow)\b",
    re.IGNORECASE,
)
# Sentence-ish units: split after terminal punctuation or at line breaks.
_UNIT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def remove_directives(text: str) -> tuple[str, bool]:
    """Replace prompt-injection-shaped sentences by one marker per run; report whether any were."""
    if not _DIRECTIVE.search(text):
        return text, False
    out: list[str] = []
    in_run = False
    removed = False
    for unit in _UNIT_SPLIT.split(text):
        unit = unit.strip()
        if not unit:
            continue
        if _DIRECTIVE.search(unit) or (in_run and _IMPERATIVE.match(unit)):
            if not in_run:
                out.append(DIRECTIVE_MARKER)
            in_run = True
            removed = True
            continue
        in_run = False
        out.append(unit)
    return " ".join(out), removed


def is_directive(text: str) -> bool:
    """True when ``text`` contains a prompt-injection-shaped phrase."""
    return _DIRECTIVE.search(text) is not None


def only_markers(text: str) -> bool:
    """True when nothing but omission markers (and whitespace) remains."""
    return not text.replace(DIRECTIVE_MARKER, "").strip()


# --- truncation ----------------------------------------------------------------------------


def truncate_to_quarters(text: str, quarters: int) -> str:
    """The longest prefix of ``text`` whose estimate is at most ``quarters`` quarter-tokens."""
    if quarters <= 0:
        return ""
    if token_quarters(text) <= quarters:
        return text
    if text.isascii():
        return text[:quarters]
    # Quarters grow monotonically with the prefix length: binary search the cut.
    low, high = 0, min(len(text), quarters)
    while low < high:
        mid = (low + high + 1) // 2
        if token_quarters(text[:mid]) <= quarters:
            low = mid
        else:
            high = mid - 1
    return text[:low]
