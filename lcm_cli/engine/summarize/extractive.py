"""The embedded default summarizer: extractive, deterministic, offline (model ``extractive``).

No model is called. The source is cut into units — lines, and sentences within prose
lines — and a summary is assembled from the units in their original order:

1. Anchor units are kept first, in this priority: lines carrying timestamps (the first and
   last message headers always, plus content lines with a date-time), file paths, shell
   commands, error lines. Within a class they are taken spread over the source (first,
   last, middle, quarters, ...) so a budget that cannot hold all of them still covers the
   whole time range. While prose remains to choose from they may fill at most three
   quarters of the budget, so the summary is never only anchors.
2. The remaining budget goes to the most informative prose sentences, chosen greedily by
   the weight of the terms they add that nothing picked so far covers (novelty), per
   token of length, with a small bonus for the opening sentence of a message. Term
   weights come from the source itself: terms that recur across several units but not
   everywhere weigh most.
3. Units are compressed (whitespace collapsed, filler openers dropped, long units cut at
   a word boundary) and duplicates are kept once.
4. A leaf summary carries a ``Files:`` line (``Files: none`` when no path was seen); every
   summary ends with ``Expand for details about:`` naming the most frequent terms of what
   was left out.

The output never exceeds the request's target nor the source's own size (a summary that
does not shrink its input would only trigger a retry), and the same input always yields
the same bytes.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterator

from lcm_cli.engine.core.tokens import token_quarters
from lcm_cli.engine.summarize.base import SummaryRequest
from lcm_cli.engine.summarize.sanitize import is_directive, truncate_to_quarters

EXTRACTIVE_MODEL = "extractive"
FOOTER_PREFIX = "Expand for details about: "

# Unit classes, in keeping priority.
TIMESTAMP, PATH, COMMAND, ERROR, PROSE = range(5)

_HEADER = re.compile(r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}[^\]\n]*)\]")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\b\d{2}:\d{2}:\d{2}\b")
# Every pattern that scans untrusted text starts a match only where the previous character
# cannot continue it (the look-behinds mirror the repeated classes), so a long run of
# path-like characters is scanned once rather than once per position.
_PATH = re.compile(
    r"(?<![\w/:.~])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*[\w@+-]"
    r"|(?<![\w/.@+-])(?:[\w.@+-]+/)+[\w@+-]+\.[A-Za-z]\w{0,7}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|txt|toml|yaml|yml|ini|cfg|conf"
    r"|sh|bash|rs|go|java|kt|c|h|cc|cpp|hpp|rb|php|sql|db|sqlite|html|css|scss|lock|log|csv|xml|tmpl)\b"
)
_COMMANDS = (
    "git|npm|npx|pnpm|yarn|pip|pip3|python|python3|pytest|uv|cargo|go|make|docker|kubectl|ls|cd|cat|"
    "grep|rg|sed|awk|curl|wget|ssh|scp|rm|mv|cp|mkdir|chmod|chown|apt|apt-get|brew|node|deno|bun|bash|"
    "sh|zsh|echo|export|find|tar|psql|sqlite3|lcm|systemctl|journalctl|tail|head|touch|ln|kill|ps|du|"
    "df|which|openclaw|ollama|ruff|mypy|tsc|jq|gh"
)
_COMMAND = re.compile(
    rf"^\s*(?:[$%#>]\s+\S|(?:sudo\s+)?(?:{_COMMANDS})(?:\s+-{{0,2}}[\w./:=@-]|\s*$))"
    rf"|`(?:sudo\s+)?(?:{_COMMANDS})\s[^`\n]*`"
)
_ERROR = re.compile(
    r"(?i:\b(?:errors?|exception|traceback|failed|failure|fatal|panic(?:ked)?|errno|denied|refused|"
    r"timed out|timeout|segfault|cannot|can't|couldn't|unable to|not found|crash(?:ed)?)\b)"
    r"|\b\w+(?:Error|Exception)\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`*])")
_SPACE = re.compile(r"\s+")
_FILLER = re.compile(
    r"^(?:ok(?:ay)?|sure|so|well|alright|great|right|yes|yeah|hmm|perfect|got it)[,!.:]+\s+", re.IGNORECASE
)
_TERM = re.compile(r"[a-z][a-z0-9_]{2,}")
_STOPWORDS = frozenset(
    """
    the and for are but not you all any can had her was one our out has have him his how its may new now
    old see two way who did get got let say she too use that this with from they will would there their
    what when where which while about after again also been before being between both could does doing
    down during each few further here into just more most much must only other over same should some
    such than then them these those through under until very were your yours because above below off
    once ours very yes okay sure well like just need needs want wants make made using used thing things
    lets let's it's i'm don't didn't doesn't isn't can't won't i've you're we're they're that's there's
    here's what's going know think also still even back really right good great thanks thank please
    user assistant tool system message messages see via etc per yet else ever every anything something
    nothing everything done able sure maybe might shall upon onto within without across around
    """.split()
)
_PROSE_CHARS = 280
_ANCHOR_CHARS = 200
_TERM_CHARS = 24
_MIN_BODY_QUARTERS = 32  # eight tokens


class ExtractiveSummarizer:
    """The offline default: picks and compresses the most informative source units."""

    model = EXTRACTIVE_MODEL

    def summarize(self, request: SummaryRequest) -> str:
        """A summary of at most ``request.target_tokens`` tokens.

        Blank input, or a source too small to summarize below its own size, gives ``""``.
        """
        return summarize_extractive(request.source_text, request.target_tokens, leaf=request.depth <= 0)


class _Unit:
    __slots__ = ("index", "line", "group", "text", "cls", "cost", "terms", "first", "user", "blocked")

    def __init__(self, index: int, line: int, group: int, text: str, cls: int, first: bool, user: bool):
        self.index = index
        self.line = line
        self.group = group
        self.text = text
        self.cls = cls
        self.cost = token_quarters(text) + 1  # + the separator that joins it
        self.terms: frozenset[str] = frozenset()
        self.first = first
        self.user = user
        self.blocked: bool | None = None  # directive-shaped? (checked when first picked)


def _compress(text: str, limit: int) -> str:
    text = _FILLER.sub("", _SPACE.sub(" ", text).strip())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(" ,;:") + "…"


def _classify(text: str) -> int:
    if _TIMESTAMP.search(text):
        return TIMESTAMP
    if _PATH.search(text):
        return PATH
    if _COMMAND.search(text):
        return COMMAND
    if _ERROR.search(text):
        return ERROR
    return PROSE


def _clean_path(raw: str) -> str:
    return raw.rstrip(".,;:)'\"`")


class _Parsed:
    def __init__(self) -> None:
        self.units: list[_Unit] = []
        self.headers: dict[int, _Unit] = {}  # group -> its header unit
        self.paths: dict[str, None] = {}  # ordered set
        self.child_topics: dict[str, None] = {}
        self.repeats = 0  # units left out because an identical one was kept


def _parse(source: str) -> _Parsed:
    parsed = _Parsed()
    units = parsed.units
    group = 0
    user = False
    first_in_group = True
    seen: set[str] = set()
    for line_no, raw in enumerate(source.split("\n")):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Expand for details about:"):
            for topic in line.split(":", 1)[1].split(","):
                topic = topic.strip().rstrip(".")
                if topic and len(topic) <= 60:
                    parsed.child_topics.setdefault(topic, None)
            continue
        if line.startswith("Files:"):
            for item in line.split(":", 1)[1].split(","):
                item = _clean_path(item.strip())
                if item and item.lower() != "none" and not item.startswith("(+"):
                    parsed.paths.setdefault(item, None)
            continue
        header = _HEADER.fullmatch(line)
        if header:
            group += 1
            user = "| user" in line
            first_in_group = True
            unit = _Unit(len(units), line_no, group, line, TIMESTAMP, False, user)
            units.append(unit)
            parsed.headers[group] = unit
            continue
        for match in _PATH.finditer(line):
            path = _clean_path(match.group(0))
            if len(path) > 1:
                parsed.paths.setdefault(path, None)
        # Indented, command-looking or short lines stay whole; prose is cut into sentences.
        if raw[:1] in (" ", "\t") or len(line) < 120 or _COMMAND.match(line):
            pieces = [line]
        else:
            pieces = _SENTENCE_END.split(line)
        for piece in pieces:
            cls = _classify(piece)
            text = _compress(piece, _PROSE_CHARS if cls == PROSE else _ANCHOR_CHARS)
            if not text:
                continue
            if text in seen:
                parsed.repeats += 1
                continue
            seen.add(text)
            unit = _Unit(len(units), line_no, group, text, cls, first_in_group, user)
            first_in_group = False
            unit.terms = frozenset(t for t in _TERM.findall(text.lower()) if t not in _STOPWORDS)
            units.append(unit)
    return parsed


def _spread(count: int) -> Iterator[int]:
    """0, count-1, then the midpoints of ever finer halves: coverage of the whole range."""
    if count <= 0:
        return
    yield 0
    if count == 1:
        return
    yield count - 1
    spans = [(0, count - 1)]
    while spans:
        following: list[tuple[int, int]] = []
        for low, high in spans:
            if high - low < 2:
                continue
            mid = (low + high) // 2
            yield mid
            following.append((low, mid))
            following.append((mid, high))
        spans = following


def _files_line(paths: list[str], quarters: int, leaf: bool) -> str:
    if not paths:
        return "Files: none" if leaf else ""
    shown: list[str] = []
    used = token_quarters("Files: ")
    for index, path in enumerate(paths):
        rest = len(paths) - index - 1
        more = token_quarters(f", (+{rest} more)") if rest else 0
        cost = token_quarters(path) + 2
        if used + cost + more > quarters:
            break
        shown.append(path)
        used += cost
    hidden = len(paths) - len(shown)
    if not shown:
        return f"Files: (+{hidden} more)" if hidden else "Files: none"
    return "Files: " + ", ".join(shown) + (f", (+{hidden} more)" if hidden else "")


def summarize_extractive(source_text: str, target_tokens: int, *, leaf: bool = True) -> str:
    """Extractive summary of ``source_text`` within ``target_tokens`` (see the module doc)."""
    if not source_text.strip():
        return ""
    input_quarters = token_quarters(source_text)
    # Stay strictly below the source's own estimate: a summary that does not shrink its
    # input is useless to compaction and would only trigger the aggressive retry.
    budget_tokens = max(1, min(target_tokens, (input_quarters + 3) // 4 - 1))
    budget = budget_tokens * 4
    parsed = _parse(source_text)
    # A bare file name is dropped when a longer path ending in it is listed.
    basenames = {path.rsplit("/", 1)[1] for path in parsed.paths if "/" in path}
    paths = [path for path in parsed.paths if "/" in path or path not in basenames]

    # Footer and Files line are reserved up front; the body gets the rest.
    footer_terms = 8 if budget_tokens >= 400 else 4 if budget_tokens >= 120 else 2
    footer_reserve = token_quarters(FOOTER_PREFIX) + footer_terms * (_TERM_CHARS + 2)
    files_line = _files_line(paths, budget // 5, leaf) if (leaf or paths) else ""
    files_cost = token_quarters(files_line) + 1 if files_line else 0
    body_budget = budget - footer_reserve - files_cost
    if body_budget < 0:
        footer_terms, footer_reserve = 1, token_quarters(FOOTER_PREFIX) + _TERM_CHARS + 2
        body_budget = max(0, budget - footer_reserve - files_cost)
    if body_budget < _MIN_BODY_QUARTERS:
        # Too small a source (or target) to say anything beside the footer: an empty
        # answer lets the caller fall back to the source text itself.
        return ""

    selection = _Selection(parsed, body_budget)
    prose = [u for u in parsed.units if u.cls == PROSE]
    _take_anchors(selection, prose)
    if prose and selection.remaining > 0:
        _take_prose(selection, prose)
    footer = FOOTER_PREFIX + ", ".join(_footer_topics(selection, footer_terms))
    return _assemble(selection, files_line, footer, budget)


class _Selection:
    """The units kept so far, the message headers they brought along, the terms they
    cover, and the body budget (in quarter tokens) still free."""

    def __init__(self, parsed: _Parsed, budget: int) -> None:
        self.parsed = parsed
        self.selected: set[int] = set()
        self.emitted_headers: set[int] = set()
        self.covered: set[str] = set()
        self.remaining = budget

    def header_cost(self, unit: _Unit) -> int:
        """What keeping ``unit`` costs for its message header (0 once that is kept)."""
        header = self.parsed.headers.get(unit.group)
        if header is None or unit.group in self.emitted_headers:
            return 0
        return header.cost

    def fits(self, unit: _Unit, floor: int) -> bool:
        """Whether ``unit`` and its header fit while ``floor`` stays free, and it may be copied."""
        return unit.cost + self.header_cost(unit) <= self.remaining - floor and not _blocked(unit)

    def take(self, unit: _Unit) -> None:
        """Keep ``unit``, with its message header when that is not kept yet."""
        self.remaining -= unit.cost + self.header_cost(unit)
        header = self.parsed.headers.get(unit.group)
        if header is not None:
            self.emitted_headers.add(unit.group)
            self.selected.add(header.index)
        self.selected.add(unit.index)
        self.covered.update(unit.terms)


def _blocked(unit: _Unit) -> bool:
    """Whether a unit is shaped like prompt injection (never copied into a summary: a
    later model reads summaries). Checked only for units about to be kept: scanning the
    whole source would cost a fifth of the time budget."""
    if unit.blocked is None:
        unit.blocked = is_directive(unit.text)
    return unit.blocked


def _take_anchors(selection: _Selection, prose: list[_Unit]) -> None:
    """Step 1: the anchors, within three quarters of the budget while prose remains."""
    units = selection.parsed.units
    remaining = selection.remaining
    anchor_floor = remaining - (remaining if not prose else (remaining * 3) // 4)
    # The first and last message headers pin the time range.
    header_units = list(selection.parsed.headers.values())
    edges = header_units[:1] + header_units[-1:]
    for edge in edges:
        if edge.index not in selection.selected and edge.cost <= selection.remaining - anchor_floor:
            selection.remaining -= edge.cost
            selection.selected.add(edge.index)
            selection.emitted_headers.add(edge.group)
    # The opening sentence of the first and the last message: usually the task as asked,
    # and where things stand.
    for group in sorted({u.group for u in edges}):
        opening = next((u for u in units if u.group == group and u.first), None)
        if opening is not None and selection.fits(opening, anchor_floor):
            selection.take(opening)
    header_indexes = {u.index for u in header_units}
    for cls in (TIMESTAMP, PATH, COMMAND, ERROR):
        # Other message headers come along with their content, not as anchors.
        members = [u for u in units if u.cls == cls and u.index not in header_indexes]
        for position in _spread(len(members)):
            unit = members[position]
            if selection.fits(unit, anchor_floor):
                selection.take(unit)


def _take_prose(selection: _Selection, prose: list[_Unit]) -> None:
    """Step 2: informative prose, by lazy greedy on novelty-weighted term gain per token."""
    units = selection.parsed.units
    covered = selection.covered
    document_frequency: Counter[str] = Counter()
    for unit in units:
        document_frequency.update(unit.terms)
    total = max(1, len(units))
    weight = {
        term: math.log1p(count) * math.log1p(total / count) for term, count in document_frequency.items()
    }

    def gain(unit: _Unit) -> float:
        value = sum(weight[t] for t in unit.terms if t not in covered)
        if unit.first:
            value *= 1.25
        if unit.user:
            value *= 1.1
        return value / math.sqrt(unit.cost)

    heap = [(-gain(u), u.index) for u in prose if u.terms]
    heapq.heapify(heap)
    while heap and selection.remaining > 0:
        _, index = heapq.heappop(heap)
        unit = units[index]
        if unit.cost + selection.header_cost(unit) > selection.remaining:
            continue
        fresh = gain(unit)
        if fresh <= 0:
            continue
        if heap and fresh < -heap[0][0]:
            heapq.heappush(heap, (-fresh, index))
            continue
        if not _blocked(unit):
            selection.take(unit)


def _footer_topics(selection: _Selection, footer_terms: int) -> list[str]:
    """Step 3: what was left out, most frequent first.

    Terms nothing kept mentions come first; then terms of dropped units the summary only
    touches on, so a footer still says what the left-out sentences were about; then the
    topics of the summaries being condensed.
    """
    parsed, covered = selection.parsed, selection.covered
    dropped: Counter[str] = Counter()
    for unit in parsed.units:
        if unit.index not in selection.selected and not unit.blocked:
            dropped.update(unit.terms)
    ranked = sorted(dropped.items(), key=lambda item: (item[0] in covered, -item[1], item[0]))
    topics = [term[:_TERM_CHARS] for term, _ in ranked[:footer_terms]]
    for topic in parsed.child_topics:
        if len(topics) >= footer_terms:
            break
        topic = topic[:_TERM_CHARS]
        if topic not in topics:
            topics.append(topic)
    if not topics:
        topics = ["repeated content"] if parsed.repeats else ["nothing omitted"]
    return topics


def _assemble(selection: _Selection, files_line: str, footer: str, budget: int) -> str:
    """Step 4: the kept units in source order (units of one source line stay on one
    line), then the Files line and the footer, cut to ``budget`` quarter tokens."""
    lines: list[str] = []
    last_line = -1
    for unit in selection.parsed.units:
        if unit.index not in selection.selected:
            continue
        if unit.line == last_line and lines:
            lines[-1] += " " + unit.text
        else:
            lines.append(unit.text)
        last_line = unit.line
    tail = ([files_line] if files_line else []) + [footer]
    body = "\n".join(lines)
    tail_text = "\n".join(tail)
    room = budget - token_quarters(tail_text) - (1 if body else 0)
    if token_quarters(body) > room:
        body = truncate_to_quarters(body, max(0, room)).rstrip()
    if not body:
        return truncate_to_quarters(tail_text, budget)
    return f"{body}\n{tail_text}"
