"""Scale benchmark for `lcm`: lcm.db files of 1M, 3M and 10M messages, with a live writer.

Builds (once per recipe, cached in ``benchmarks/data/``) an lcm.db of the requested number
of messages with a realistic mix: messages with their lossless-claw parts (42% of the
file), the full-text tables (30%), a summary DAG (leaves, condensed depth 1 and 2,
context items as compaction leaves them), archived conversations, some large tool
results, timestamps over months. The rows go in by direct SQL in big transactions, into the
schema ``Store.open`` creates, so tables, indexes, triggers and FTS tables are lcm's own.

Then, per size, a separate writer process commits one small message every 5 ms (through a
warm ``session.ingest`` context, as ``lcm serve`` does for the host) while every command of
issue 27's table runs as a whole ``lcm`` process on a copy of the file: wall time, peak
RSS, and how long the writer waited (longest, p99) and whether it failed while the command
ran. At the end every row the writer committed must still be there. A second copy with
lcm's own additions removed (the totals tables and triggers, the ``lcm_*`` indexes, lcm's
migration records: a file only lossless-claw wrote) measures the first lcm write. It is a
report, not a test: it always exits 0 once it has printed its results::

    .venv/bin/python benchmarks/bench_scale.py                      # 1m and 3m
    .venv/bin/python benchmarks/bench_scale.py --sizes 1m --commands ingest,status,grep
    .venv/bin/python benchmarks/bench_scale.py --sizes 10m --build-only
    .venv/bin/python benchmarks/bench_scale.py --json
    .venv/bin/python benchmarks/bench_scale.py --code 7bb4c00      # lcm_cli as of a commit
    .venv/bin/python benchmarks/bench_scale.py --reference-cmd "node /path/to/lossless-claw/dist/cli.js"

See benchmarks/README.md ("bench_scale.py") for what each figure means.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import hashlib
import itertools
import json
import math
import os
import random
import re
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA_DIR = HERE / "data"

# bench_read (beside this file) and tests.support (the checkout). Appended, so a PYTHONPATH
# naming another copy of the code (the "before" of a change, from `git archive`) wins for
# lcm_cli here, in the writer and in every timed command.
for _path in (str(HERE), str(REPO)):
    if _path not in sys.path:
        sys.path.append(_path)

# What a database looks like. Any change to the generator must bump GENERATOR_VERSION, so a
# cached file built from another recipe is rebuilt.
GENERATOR_VERSION = 2
SEED = 20260527
EPOCH = 1_751_328_000  # 2025-07-01 00:00:00 UTC
START_SPREAD_DAYS = 200  # conversations start over this many days
MAX_SPAN_DAYS = 240  # a long conversation's gaps shrink so it spans at most this
MESSAGES_PER_CONVERSATION = 2500  # on average: 400 conversations at 1M
BIG_SHARE = 0.025  # the biggest conversation holds 2.5% of the messages
ARCHIVED_SHARE = 0.4  # of the conversations other than the big one
DEPTH2_MIN_MESSAGES = 4000  # conversations this long also get depth-2 nodes
COMMIT_EVERY = 50_000  # messages per build transaction
FLUSH_ROWS = 2_000  # messages buffered before an executemany

SIZES = {"300k": 300_000, "1m": 1_000_000, "3m": 3_000_000, "10m": 10_000_000}
DEFAULT_SIZES = "1m,3m"

BIG_SESSION_KEY = "agent:main:main"
WRITER_SESSION_KEY = "agent:main:bench-writer"
ROTATE_SESSION_KEY = "agent:main:bench-rotate"
ROTATE_MESSAGES = 120
MIGRATE_FILES = 3
MIGRATE_MESSAGES_PER_FILE = 130  # about 380 imported messages in all
PRUNE_SHARE = 0.3  # each prune takes this share of the archived conversations

#: lcm's own additions to lossless-claw's schema, removed to make the "lossless-claw wrote
#: it" variant (lcm_cli/engine/db/schema.py m003, m005, m006; totals.py).
LCM_MIGRATION_PREFIX = "lcm_cli."


def note(text: str) -> None:
    """Progress for a person: stderr, so stdout stays the report."""
    print(text, file=sys.stderr, flush=True)


def parse_size(text: str) -> int:
    """``1m`` / ``300k`` / ``2500000`` -> a message count."""
    text = text.strip().lower()
    if text in SIZES:
        return SIZES[text]
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", text)
    if not found:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1m, 300k, 2500000)")
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[found.group(2)]
    return int(float(found.group(1)) * scale)


def size_label(messages: int) -> str:
    """1000000 -> "1m", 300000 -> "300k"."""
    if messages % 1_000_000 == 0:
        return f"{messages // 1_000_000}m"
    if messages % 1_000 == 0:
        return f"{messages // 1_000}k"
    return str(messages)


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------

_FUNCTION_WORDS = (
    "the to of and a in is it that for on with as this be are was by not or from at have".split()
)
_TECH_WORDS = (
    "file function error test config database query index table column row cursor page"
    " limit offset commit branch merge build deploy server client request response token"
    " summary message conversation context agent session model prompt tool output input"
    " python sqlite json schema migration import module package install version release"
    " timeout retry cache memory thread process signal socket stream buffer parse format"
    " string integer boolean null list dict array object class method value key path"
    " directory user assistant system run check fix update create delete read write open"
    " close start stop wait log debug info warning trace stack frame line char byte"
).split()
_SYLLABLES = "ka lo mi ne su ta ri po an el ur is ox ve da ko be zu fi ga he ju ly mo".split()
CORPUS_WORDS = 1_200_000


class TextSource:
    """Word-like ASCII text with a Zipf word distribution: slices of one generated corpus.

    Zipf frequencies give words in every share of messages, so the grep benchmark can pick
    a word that about half the messages contain (issue 27: "a word in half of them").
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        made = sorted(
            {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)}
        )
        tech = list(_TECH_WORDS)
        rng.shuffle(tech)
        # A few function words lead; the tech words that follow them are common enough that
        # some appear in about half of all messages.
        self.vocab = _FUNCTION_WORDS[:5] + tech + _FUNCTION_WORDS[5:] + made
        weights = [1.0 / (rank + 1) for rank in range(len(self.vocab))]
        words = rng.choices(self.vocab, weights=weights, k=CORPUS_WORDS)
        for i in range(0, len(words), 11):
            words[i] = words[i] + rng.choice((".", ",", ".\n", ":", "", ""))
        self.corpus = " ".join(words)
        self.size = len(self.corpus)

    def text(self, length: int) -> str:
        """``length`` characters (about) cut from the corpus at a random place."""
        length = max(1, min(length, self.size // 2))
        start = self.rng.randrange(0, self.size - length)
        return self.corpus[start : start + length].strip() or "ok"

    def long_text(self, length: int) -> str:
        """A text longer than half the corpus allows: slices joined."""
        pieces, total = [], 0
        while total < length:
            piece = self.text(min(length - total, 200_000))
            pieces.append(piece)
            total += len(piece) + 1
        return "\n".join(pieces)

    def lognormal_length(self, median: float, sigma: float, low: int, high: int) -> int:
        return int(min(high, max(low, self.rng.lognormvariate(math.log(median), sigma))))


_WORD_RE = re.compile(r"[a-z]+")


# ---------------------------------------------------------------------------------------
# The recipe
# ---------------------------------------------------------------------------------------


def recipe(messages: int) -> dict[str, Any]:
    """Everything the generator's output depends on, for the cache key (lcm's migrations too:
    a new one changes the file every lcm writer leaves)."""
    from lcm_cli.engine.db import schema

    return {
        "migrations": [m.__name__ for m in schema.SCHEMA_MIGRATIONS],
        "generator": GENERATOR_VERSION,
        "seed": SEED,
        "messages": messages,
        "conversations": conversation_count(messages),
        "bigShare": BIG_SHARE,
        "archivedShare": ARCHIVED_SHARE,
        "epoch": EPOCH,
    }


def recipe_hash(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]


def conversation_count(messages: int) -> int:
    return max(20, min(5000, messages // MESSAGES_PER_CONVERSATION))


def message_counts(rng: random.Random, total: int, conversations: int) -> tuple[list[int], int]:
    """Messages per conversation (one big one, the rest lognormal, capped), and the big one's index."""
    big = max(50, int(total * BIG_SHARE))
    floor = 12
    others = conversations - 1
    budget = total - big
    cap = max(int(big * 0.6), 3 * budget // others)  # the others must be able to hold the rest
    weights = [rng.lognormvariate(0.0, 1.3) for _ in range(others)]
    counts = [0] * others
    free = set(range(others))
    while free:  # cap the heaviest and share what they leave among the rest
        weight_sum = sum(weights[i] for i in free)
        over = [i for i in free if weights[i] / weight_sum * budget > cap]
        if not over:
            break
        for i in over:
            counts[i] = cap
            free.discard(i)
            budget -= cap
    weight_sum = sum(weights[i] for i in free) or 1.0
    for i in free:
        counts[i] = max(floor, int(weights[i] / weight_sum * budget))
    diff = (total - big) - sum(counts)
    order = sorted(range(others), key=lambda i: -counts[i])
    k = 0
    while diff:
        i = order[k % len(order)]
        step = 1 if diff > 0 else -1
        if (step > 0 and counts[i] < cap) or (step < 0 and counts[i] > floor):
            counts[i] += step
            diff -= step
        k += 1
    big_index = rng.randrange(conversations)
    counts.insert(big_index, big)
    return counts, big_index


def _sqlite_time(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


@dataclass
class Summary:
    """What a condensed parent needs of a summary below it."""

    summary_id: str
    depth: int
    tokens: int
    earliest: str
    latest: str
    created: str
    descendants: int
    descendant_tokens: int
    source_tokens: int


_INSERT_MESSAGE = (
    "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count,"
    " identity_hash, openclaw_sender_metadata, transcript_entry_id, created_at,"
    " large_content, stable_event_key) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, NULL, NULL)"
)
_INSERT_PART = (
    "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal,"
    " text_content, tool_call_id, tool_name, tool_input, tool_output, metadata)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_SUMMARY = (
    "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count,"
    " earliest_at, latest_at, descendant_count, descendant_token_count,"
    " source_message_token_count, created_at, file_ids, model)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?)"
)
_INSERT_CONTEXT = (
    "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?)"
)
_MODELS = (
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("openai", "openai-responses", "gpt-5-mini"),
    ("google", "google-generative-ai", "gemini-2.5-flash"),
)
_TOOLS = ("exec", "read", "write", "edit", "web_search", "lcm_grep", "browser")


def _tokens(text: str) -> int:
    # lossless-claw's estimate for ASCII text (the generator writes only ASCII).
    return (len(text) + 3) // 4


def _identity(role: str, content: str) -> str:
    # lcm_cli.engine.core.identity.identity_hash for content without OpenClaw's metadata blocks.
    return hashlib.sha256(f"{role}\x00{content}".encode()).hexdigest()


class Builder:
    """Writes the rows of one database, conversation by conversation, in bounded batches."""

    def __init__(self, conn: sqlite3.Connection, messages: int) -> None:
        from lcm_cli.engine.db.store.ids import PartIds

        self.conn = conn
        self.total = messages
        self.rng = random.Random(SEED)
        self.text = TextSource(self.rng)
        self.part_ids = PartIds()
        self.next_message_id = 1
        self.pending_messages: list[tuple[Any, ...]] = []
        self.pending_parts: list[tuple[Any, ...]] = []
        self.pending_fts: list[tuple[int, str]] = []
        self.since_commit = 0
        self.written = 0
        self.started = time.perf_counter()
        # Document frequency of the most common words, on a sample of messages.
        self.sampled = 0
        self.word_docs: dict[str, int] = {}
        self.candidates = {word for word in self.text.vocab[:40] if len(word) >= 4}
        self.facts: dict[str, Any] = {"archived": [], "largeToolResults": 0}

    # -- messages ---------------------------------------------------------------------

    def _message_body(self, role: str) -> str:
        rng, text = self.rng, self.text
        if role == "system":
            return text.text(rng.randint(200, 900))
        if role == "user":
            return text.text(text.lognormal_length(70, 0.9, 6, 2500))
        if role == "assistant":
            return text.text(text.lognormal_length(180, 0.9, 15, 6000))
        roll = rng.random()
        if roll < 0.001:
            self.facts["largeToolResults"] += 1
            body = text.long_text(rng.randint(40_000, 150_000))  # a whole log or file dump
        elif roll < 0.016:
            self.facts["largeToolResults"] += 1
            body = text.text(rng.randint(4_000, 20_000))
        else:
            body = text.text(text.lognormal_length(200, 1.0, 15, 8000))
        if rng.random() < 0.5:
            body = '{"status":"ok","exitCode":0,"output":' + json.dumps(body) + "}"
        return body

    def _part(
        self,
        mid: int,
        session_id: str,
        part_type: str,
        ordinal: int,
        metadata: str,
        text: str | None = None,
        call: tuple[str, str, str] | None = None,
    ) -> None:
        """Buffer one part row; ``call`` is (tool_call_id, tool_name, tool_input) of a tool call."""
        call_id, tool, tool_input = call or (None, None, None)
        self.pending_parts.append(
            (
                self.part_ids.next(),
                mid,
                session_id,
                part_type,
                ordinal,
                text,
                call_id,
                tool,
                tool_input,
                None,
                metadata,
            )
        )

    def _parts(self, role: str, content: str, model: tuple[str, str, str], session_id: str, mid: int) -> None:
        """The part rows lossless-claw writes for a message (see engine/transcript/message.py):
        the text again, and once more as the raw block in ``metadata``."""
        rng = self.rng
        raw_text = json.dumps(content)
        if role == "assistant":
            provider, api, model_id = model
            head = f'{{"originalRole":"assistant","modelProvider":"{provider}","modelApi":"{api}","modelId":"{model_id}"'
            ordinal = 0
            if rng.random() < 0.2:
                thinking = self.text.text(self.text.lognormal_length(220, 0.8, 20, 3000))
                raw = '{"type":"thinking","thinking":' + json.dumps(thinking) + "}"
                self._part(
                    mid,
                    session_id,
                    "reasoning",
                    0,
                    head + ',"rawType":"thinking","raw":' + raw + "}",
                    thinking,
                )
                ordinal = 1
            raw = '{"type":"text","text":' + raw_text + "}"
            self._part(
                mid, session_id, "text", ordinal, head + ',"rawType":"text","raw":' + raw + "}", content
            )
            if rng.random() < 0.45:
                call_id = f"toolu_{rng.getrandbits(48):012x}"
                tool = rng.choice(_TOOLS)
                args = json.dumps({"command": self.text.text(rng.randint(10, 160)), "timeout": 30})
                raw = f'{{"type":"toolCall","id":"{call_id}","name":"{tool}","arguments":{args}}}'
                metadata = head + ',"rawType":"toolCall","raw":' + raw + "}"
                self._part(mid, session_id, "tool", ordinal + 1, metadata, call=(call_id, tool, args))
        elif role == "tool":
            call_id, tool = f"toolu_{rng.getrandbits(48):012x}", rng.choice(_TOOLS)
            metadata = (
                f'{{"originalRole":"toolResult","toolCallId":"{call_id}","toolName":"{tool}","isError":false,'
                f'"rawType":"text","raw":{{"type":"text","text":{raw_text}}}}}'
            )
            self._part(mid, session_id, "text", 0, metadata, content)
        elif role == "user" and rng.random() < 0.7:
            metadata = (
                '{"originalRole":"user","rawType":"text","raw":{"type":"text","text":' + raw_text + "}}"
            )
            self._part(mid, session_id, "text", 0, metadata, content)
        else:
            self._part(mid, session_id, "text", 0, '{"originalRole":"' + role + '"}', content)

    def _sample_words(self, content: str) -> None:
        self.sampled += 1
        for word in set(_WORD_RE.findall(content)) & self.candidates:
            self.word_docs[word] = self.word_docs.get(word, 0) + 1

    def messages(
        self, cid: int, session_id: str, start: float, count: int, gap_scale: float, with_entry_ids: bool
    ) -> Iterator[tuple[int, int, str, int]]:
        """Write ``count`` messages lazily; yield (message_id, seq, created_at, tokens) of each."""
        rng = self.rng
        moment = start
        role = "user"
        model = rng.choice(_MODELS)
        entry_base = rng.getrandbits(32)
        for i in range(count):
            if i == 0 and rng.random() < 0.3:
                role = "system"
            elif i > 0:
                if role == "system":
                    role = "user"
                elif role == "user":
                    role = "assistant"
                elif role == "assistant":
                    role = "tool" if rng.random() < 0.4 else "user"
                else:  # after a tool result: more tools, or the assistant answers
                    role = "tool" if rng.random() < 0.2 else "assistant"
                roll = rng.random()
                # Ties: tool calls and results often land in the same second.
                if roll < 0.07:
                    gap = 0.0
                elif roll < 0.65:
                    gap = rng.uniform(1, 120)
                elif roll < 0.985:
                    gap = rng.uniform(120, 1800)
                else:
                    gap = rng.uniform(3600, 12 * 3600)  # the session goes quiet for a while
                moment += gap * gap_scale
            content = self._message_body(role)
            tokens = _tokens(content)
            created = _sqlite_time(moment)
            mid = self.next_message_id
            self.next_message_id += 1
            seq = i + 1
            entry = f"{(entry_base + i) & 0xFFFFFFFF:08x}" if with_entry_ids else None
            self.pending_messages.append(
                (mid, cid, seq, role, content, tokens, _identity(role, content), entry, created)
            )
            self._parts(role, content, model, session_id, mid)
            if content.strip():
                self.pending_fts.append((mid, content))
            if mid % 50 == 0:
                self._sample_words(content)
            if len(self.pending_messages) >= FLUSH_ROWS:
                self.flush()
            yield mid, seq, created, tokens

    def flush(self) -> None:
        """Write the buffered message, part and FTS rows; commit every COMMIT_EVERY messages."""
        if self.pending_messages:
            count = len(self.pending_messages)
            self.conn.executemany(_INSERT_MESSAGE, self.pending_messages)
            self.conn.executemany(_INSERT_PART, self.pending_parts)
            self.conn.executemany("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", self.pending_fts)
            self.pending_messages.clear()
            self.pending_parts.clear()
            self.pending_fts.clear()
            self.written += count
            self.since_commit += count
        if self.since_commit >= COMMIT_EVERY:
            self.conn.execute("COMMIT")
            self.conn.execute("BEGIN")
            self.since_commit = 0
            elapsed = time.perf_counter() - self.started
            rate = self.written / elapsed if elapsed else 0.0
            eta = (self.total - self.written) / rate if rate else 0.0
            note(
                f"  {self.written:,}/{self.total:,} messages, {elapsed:.0f} s, {rate:,.0f}/s, eta {eta:.0f} s"
            )

    # -- summaries --------------------------------------------------------------------

    def _summary(self, cid: int, kind: str, depth: int, content: str, created: str, **facts: Any) -> Summary:
        rng = self.rng
        sid = f"sum_{rng.getrandbits(64):016x}"
        tokens = _tokens(content)
        model = rng.choice(_MODELS)[2]
        self.conn.execute(
            _INSERT_SUMMARY,
            (
                sid,
                cid,
                kind,
                depth,
                content,
                tokens,
                facts["earliest"],
                facts["latest"],
                facts["descendants"],
                facts["descendant_tokens"],
                facts["source_tokens"],
                created,
                model,
            ),
        )
        self.conn.execute("INSERT INTO summaries_fts (summary_id, content) VALUES (?, ?)", (sid, content))
        self.conn.execute("INSERT INTO summaries_fts_cjk (summary_id, content) VALUES (?, ?)", (sid, content))
        return Summary(
            sid,
            depth,
            tokens,
            facts["earliest"],
            facts["latest"],
            created,
            facts["descendants"],
            facts["descendant_tokens"],
            facts["source_tokens"],
        )

    def leaf(self, cid: int, rows: Sequence[tuple[int, int, str, int]]) -> Summary:
        text = self.text
        latest = rows[-1][2]
        created = _sqlite_time(_epoch_of(latest) + self.rng.randint(20, 900))
        content = "Leaf summary. " + text.text(text.lognormal_length(900, 0.4, 250, 3000))
        summary = self._summary(
            cid,
            "leaf",
            0,
            content,
            created,
            earliest=rows[0][2],
            latest=latest,
            descendants=0,
            descendant_tokens=0,
            source_tokens=sum(r[3] for r in rows),
        )
        self.conn.executemany(
            "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
            ((summary.summary_id, r[0], n) for n, r in enumerate(rows)),
        )
        return summary

    def condensed(self, cid: int, sources: Sequence[Summary]) -> Summary:
        text = self.text
        depth = max(s.depth for s in sources) + 1
        created = _sqlite_time(max(_epoch_of(s.created) for s in sources) + self.rng.randint(20, 900))
        content = f"Condensed summary (depth {depth}). " + text.text(
            text.lognormal_length(1500, 0.35, 400, 4000)
        )
        summary = self._summary(
            cid,
            "condensed",
            depth,
            content,
            created,
            earliest=min(s.earliest for s in sources),
            latest=max(s.latest for s in sources),
            descendants=sum(s.descendants + 1 for s in sources),
            descendant_tokens=sum(s.tokens + s.descendant_tokens for s in sources),
            source_tokens=sum(s.source_tokens for s in sources),
        )
        self.conn.executemany(
            "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
            ((summary.summary_id, s.summary_id, n) for n, s in enumerate(sources)),
        )
        return summary

    # -- conversations ----------------------------------------------------------------

    def conversation(self, index: int, count: int, *, session_key: str, archived: bool) -> dict[str, Any]:
        """Write one conversation: messages, parts, FTS, its DAG and its final context."""
        rng = self.rng
        cid = index + 1
        session_id = f"scale-{index:05d}-{rng.getrandbits(64):016x}"
        start = EPOCH + rng.uniform(0, START_SPREAD_DAYS) * 86400
        gap_scale = min(1.0, MAX_SPAN_DAYS * 86400 / (count * 708.0))
        tail = min(count, rng.randint(48, 140))
        compactable = count - tail
        depth2 = compactable >= DEPTH2_MIN_MESSAGES
        title = None if rng.random() < 0.3 else f"Scale conversation {index}: {self.text.text(40)}"
        # The row goes in first (messages reference it); times are set once known.
        self.conn.execute(
            "INSERT INTO conversations (conversation_id, session_id, session_key, active, archived_at,"
            " archive_cause, title, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, NULL, ?, ?, ?)",
            (
                cid,
                session_id,
                session_key,
                0 if archived else 1,
                title,
                _sqlite_time(start),
                _sqlite_time(start),
            ),
        )
        stream = self.messages(cid, session_id, start, count, gap_scale, with_entry_ids=rng.random() < 0.6)
        leaves: list[Summary] = []
        condensed: list[Summary] = []
        tops: list[Summary] = []  # depth-2 nodes, never condensed further
        group, upper = rng.randint(4, 8), rng.randint(3, 5)
        done = 0
        while compactable - done >= 12:
            run = min(compactable - done, rng.randint(12, 26))
            if compactable - done - run < 12:
                run = compactable - done
            rows = list(itertools.islice(stream, run))
            done += run
            leaves.append(self.leaf(cid, rows))
            if len(leaves) == group:
                condensed.append(self.condensed(cid, leaves))
                leaves, group = [], rng.randint(4, 8)
                if depth2 and len(condensed) == upper:
                    tops.append(self.condensed(cid, condensed))
                    condensed, upper = [], rng.randint(3, 5)
        raw = list(stream)  # the rest: a short uncompacted run plus the fresh tail
        items: list[tuple[Any, ...]] = []
        for summary in tops + condensed + leaves:
            items.append((cid, len(items), "summary", None, summary.summary_id, summary.created))
        for mid, _seq, created, _tokens in raw:
            items.append((cid, len(items), "message", mid, None, created))
        self.conn.executemany(_INSERT_CONTEXT, items)
        last = raw[-1][2] if raw else _sqlite_time(start)
        created_at = _sqlite_time(start)  # the first message's time
        self.conn.execute(
            "UPDATE conversations SET created_at = ?, updated_at = ?, archived_at = ?, archive_cause = ?"
            " WHERE conversation_id = ?",
            (created_at, last, last if archived else None, "session_reset" if archived else None, cid),
        )
        last_epoch = _epoch_of(last)
        if rng.random() < 0.5:
            self.conn.execute(
                "INSERT INTO conversation_bootstrap_state (conversation_id, session_file_path, last_seen_size,"
                " last_seen_mtime_ms, last_processed_offset, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    cid,
                    f"/home/agent/.openclaw/agents/main/sessions/{session_id}.jsonl",
                    count * 900,
                    int(last_epoch * 1000),
                    count * 900,
                    last,
                ),
            )
        if rng.random() < 0.4:
            self.conn.execute(
                "INSERT INTO conversation_compaction_telemetry (conversation_id, cache_state, provider, model,"
                " updated_at) VALUES (?, ?, 'anthropic', 'claude-sonnet-4-5', ?)",
                (cid, rng.choice(("hot", "cold", "unknown")), last),
            )
        if rng.random() < 0.25:
            self.conn.execute(
                "INSERT INTO conversation_compaction_maintenance (conversation_id, pending, reason,"
                " requested_at, updated_at) VALUES (?, ?, 'threshold', ?, ?)",
                (cid, int(rng.random() < 0.3), last.replace(" ", "T") + ".000Z", last),
            )
        return {"conversationId": cid, "sessionId": session_id, "lastActivity": last, "messages": count}


def _epoch_of(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")))


def build_database(path: Path, messages: int) -> dict[str, Any]:
    """Write a database of ``messages`` messages at ``path``; return facts about it.

    The schema comes from ``Store.open`` (lcm's migrations, on an empty file). The rows go
    in through one plain connection without a journal (the file is not published until it
    is complete), then the totals are counted once and the triggers put back, ``ANALYZE``
    writes the statistics a file in use has, and a last ``Store.open``/``close`` leaves
    the file as any lcm write leaves it.
    """
    from lcm_cli.engine.db import totals
    from lcm_cli.engine.db.store import Store

    Store.open(path).close()
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA cache_size = -262144")  # 256 MiB
        for name in totals.TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        builder = Builder(conn, messages)
        rng = builder.rng
        counts, big_index = message_counts(rng, messages, conversation_count(messages))
        others = [i for i in range(len(counts)) if i != big_index]
        archived = set(rng.sample(others, int(len(others) * ARCHIVED_SHARE)))
        # Archived conversations are earlier sessions of live keys (a reset archives the old
        # conversation and opens a new one under the same key).
        live_keys = [BIG_SESSION_KEY] + [f"agent:main:scale-{i:05d}" for i in others if i not in archived]
        conversations: list[dict[str, Any]] = []
        conn.execute("BEGIN")
        for index, count in enumerate(counts):
            is_big = index == big_index
            is_archived = index in archived
            if is_big:
                key = BIG_SESSION_KEY
            elif is_archived:
                key = rng.choice(live_keys[: max(1, len(live_keys) // 4)])
            else:
                key = f"agent:main:scale-{index:05d}"
            info = builder.conversation(index, count, session_key=key, archived=is_archived)
            info.update(sessionKey=key, archived=is_archived, big=is_big)
            conversations.append(info)
            builder.flush()
        builder.flush()
        conn.execute("COMMIT")
        note("  counting totals, putting the triggers back ...")
        conn.execute("BEGIN")
        totals.install(conn)
        conn.execute("COMMIT")
        # Statistics as a file in use has them: every lcm and lossless-claw writer runs
        # PRAGMA optimize on close, which analyzes the tables its queries consulted.
        note("  ANALYZE ...")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    note("  a last lcm open and close (PRAGMA optimize, as every lcm writer leaves the file) ...")
    Store.open(path).close()
    common = min(
        builder.word_docs.items(),
        key=lambda kv: abs(kv[1] / max(1, builder.sampled) - 0.5),
        default=("the", 0),
    )
    big = conversations[big_index]
    return {
        "bigConversationId": big["conversationId"],
        "bigSessionId": big["sessionId"],
        "commonWord": common[0],
        "commonWordShare": round(common[1] / max(1, builder.sampled), 3),
        "largeToolResults": builder.facts["largeToolResults"],
        "archived": [
            {
                "conversationId": c["conversationId"],
                "lastActivity": c["lastActivity"],
                "messages": c["messages"],
            }
            for c in conversations
            if c["archived"]
        ],
    }


def database_shares(path: Path) -> dict[str, float]:
    """Share of the file's pages per kind of content (dbstat), rounded to 0.1%."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    total = sum(size for _, size in rows) or 1
    shares: dict[str, float] = {}
    for name, size in rows:
        if "fts" in name:
            kind = "fts"
        elif "message_parts" in name:
            kind = "message_parts"
        elif name == "messages":
            kind = "messages"
        elif name.startswith(("summar", "sqlite_autoindex_summar")):
            kind = "summaries"
        else:
            kind = "indexes and other"
        shares[kind] = shares.get(kind, 0.0) + size / total
    return {k: round(100 * v, 1) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}


def ensure_database(
    messages: int,
    *,
    rebuild: bool = False,
    data_dir: Path = DATA_DIR,
    measure_shares: bool = True,
    drop_other_recipes: bool = False,
) -> tuple[Path, dict[str, Any]]:
    """The cached database of ``messages`` messages (built now if missing, stale or ``rebuild``).

    ``measure_shares`` reads the whole new file once (dbstat) to report what it holds.
    ``drop_other_recipes`` deletes the files of this size built from other recipes when
    building (``rebuild`` does too).
    """
    spec = recipe(messages)
    stem = f"scale-{size_label(messages)}-{recipe_hash(spec)}"
    db_path = data_dir / f"{stem}.db"
    meta_path = data_dir / f"{stem}.json"
    if not rebuild and db_path.exists() and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            meta = None
        if meta is not None and meta.get("spec") == spec:
            meta["builtNow"] = False
            return db_path, meta
    data_dir.mkdir(parents=True, exist_ok=True)
    # Other recipes of this size stay (a "before" and an "after" with another migration
    # list each keep theirs) unless asked to rebuild.
    for other in sorted(data_dir.glob(f"scale-{size_label(messages)}-*")):
        if not other.is_file() or other.name.startswith(stem):
            continue
        if rebuild or drop_other_recipes:
            other.unlink()
        elif other.suffix == ".db":
            note(f"  (another recipe's file stays: {other.name}, {other.stat().st_size / 2**30:.1f} GiB)")
    building = data_dir / f"{stem}.building"
    for suffix in ("", "-wal", "-shm"):
        Path(str(building) + suffix).unlink(missing_ok=True)
    note(
        f"building {db_path.name}: {messages:,} messages in {conversation_count(messages):,} conversations ..."
    )
    started = time.perf_counter()
    facts = build_database(building, messages)
    seconds = time.perf_counter() - started
    for suffix in ("-wal", "-shm"):
        Path(str(building) + suffix).unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    building.rename(db_path)
    note(
        f"built in {seconds:.0f} s"
        + ("; measuring what the file holds (dbstat) ..." if measure_shares else "")
    )
    meta = {
        "spec": spec,
        "buildSeconds": round(seconds, 1),
        "sizeBytes": db_path.stat().st_size,
        "shares": database_shares(db_path) if measure_shares else None,
        **facts,
    }
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    meta["builtNow"] = True
    return db_path, meta


def database_counts(path: Path) -> dict[str, Any]:
    """Row counts of the built file, read directly (not through lcm)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "conversations": one("SELECT COUNT(*) FROM conversations"),
            "archived": one("SELECT COUNT(*) FROM conversations WHERE active = 0"),
            "messages": one("SELECT MAX(message_id) FROM messages"),
            "summariesByDepth": {
                str(d): n for d, n in conn.execute("SELECT depth, COUNT(*) FROM summaries GROUP BY depth")
            },
        }
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# Copies and the "lossless-claw wrote it" variant
# ---------------------------------------------------------------------------------------


def copy_database(src: Path, dst: Path) -> float:
    """Copy lcm.db (a checkpointed file: no -wal) to ``dst``; return the seconds it took."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    started = time.perf_counter()
    shutil.copyfile(src, dst)
    # Written back now, or the first WAL checkpoint's fsync of the file (in whichever
    # process commits then: the writer) would flush gigabytes of the copy's dirty pages.
    with open(dst, "rb+") as handle:
        os.fsync(handle.fileno())
    return time.perf_counter() - started


def strip_lcm_additions(path: Path) -> list[str]:
    """Make ``path`` a file only lossless-claw wrote: drop what lcm's migrations add to its schema.

    That is the totals tables and their triggers (m005), the ``lcm_*`` read-path and token
    indexes (m003, m006) and lcm's rows in ``lcm_migration_state``. lossless-claw 1.0's own
    tables (the durable-turn ones lcm's m004 creates) stay. The pages the dropped objects
    held stay on the freelist (a real lossless-claw file has some free pages too).
    """
    from lcm_cli.engine.db import schema, totals

    conn = sqlite3.connect(str(path), isolation_level=None)
    dropped: list[str] = []
    try:
        conn.execute("BEGIN IMMEDIATE")
        for name in totals.TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
            dropped.append(name)
        for table in (totals.CONVERSATION_TOTALS, totals.SUMMARY_TOTALS):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            dropped.append(table)
        indexes = [name for name, _ in schema.READ_PATH_INDEXES] + [schema.SUMMARY_TOKENS_INDEX[0]]
        found = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        for name in indexes + sorted(n for n in found if n.startswith("lcm_") and n not in indexes):
            if name in found:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
                dropped.append(name)
        conn.execute(
            "DELETE FROM lcm_migration_state WHERE step_name LIKE ? ESCAPE '\\'",
            (LCM_MIGRATION_PREFIX.replace("_", "\\_") + "%",),
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return dropped


# ---------------------------------------------------------------------------------------
# The concurrent writer (a separate process)
# ---------------------------------------------------------------------------------------

WRITER_INTERVAL_S = 0.005


@dataclass
class Commit:
    """One write of the concurrent writer: when it started and ended (monotonic), and how it went."""

    start: float
    end: float
    ok: bool
    message_id: int | None
    error: str | None

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000


def writer_main(config: dict[str, Any]) -> int:
    """The writer process: one small message every 5 ms until the stop file appears.

    ``mode`` "ingest": ``session.ingest`` through one warm ``Context`` (the host's path
    through ``lcm serve``). ``mode`` "store": ``Store.add_message`` on a connection opened
    without lcm's migrations, as a lossless-claw writer that knows nothing of lcm (for the
    variant lossless-claw wrote, so the writer is not itself the first lcm writer).
    Each commit's (start, end, ok, message id, error) goes to ``records`` as JSON at the end.
    """
    db = config["db"]
    mode = config["mode"]
    stop = Path(config["stop"])
    ready = Path(config["ready"])
    records: list[list[Any]] = []
    session_id = "bench-writer-session"

    if mode == "ingest":
        from lcm_cli.engine.api import invoke
        from lcm_cli.engine.context import Context

        state: dict[str, Any] = {"ctx": None}

        def write(i: int) -> int:
            if state["ctx"] is None:
                state["ctx"] = Context(db=db, openclaw_dir=config["state"])
            message = {
                "role": "user",
                "content": f"writer probe {i}: the nightly build is green again, {i % 97}",
            }
            envelope = invoke(
                "session.ingest",
                {"session_id": session_id, "session_key": WRITER_SESSION_KEY, "messages": [message]},
                context=state["ctx"],
            ).envelope
            return int(envelope["data"]["messages"][0]["messageId"])

        def reset() -> None:
            if state["ctx"] is not None:
                with contextlib.suppress(Exception):
                    state["ctx"].close()
            state["ctx"] = None

    else:
        from lcm_cli.engine.db.store import Store

        store_state: dict[str, Any] = {"store": None, "cid": None}

        def write(i: int) -> int:
            store = store_state["store"]
            if store is None:
                path = Path(db)
                store = Store(Store._connect(path), path)
                store_state["store"] = store
                if store_state["cid"] is None:
                    store_state["cid"] = store.create_conversation(session_id, session_key=WRITER_SESSION_KEY)
            content = f"writer probe {i}: the nightly build is green again, {i % 97}"
            return int(store.add_message(store_state["cid"], "user", content))

        def reset() -> None:
            store = store_state["store"]
            if store is not None:
                with contextlib.suppress(Exception):
                    store.conn.close()
            store_state["store"] = None

    i = 0
    next_at = time.monotonic()
    try:
        while not stop.exists():
            now = time.monotonic()
            if now < next_at:
                time.sleep(next_at - now)
            started = time.monotonic()
            try:
                mid: int | None = write(i)
                error = None
            except Exception as exc:  # record it and carry on, as the host would
                mid, error = None, f"{type(exc).__name__}: {exc}"[:300]
                reset()
            ended = time.monotonic()
            records.append([started, ended, error is None, mid, error])
            if i == 0 and error is None:
                ready.write_text("ready")
            i += 1
            next_at = max(started + WRITER_INTERVAL_S, ended)
    finally:
        Path(config["records"]).write_text(json.dumps(records))
        reset()
    return 0


class Writer:
    """Starts and stops the writer process and reads what it committed."""

    def __init__(self, db: Path, mode: str, state: Path, work: Path) -> None:
        self.db = db
        self.mode = mode
        self.work = work
        tag = f"writer-{os.getpid()}-{int(time.time() * 1000)}"
        self.stop_file = work / f"{tag}.stop"
        self.ready_file = work / f"{tag}.ready"
        self.records_file = work / f"{tag}.json"
        self.log_file = work / f"{tag}.log"
        self.config = {
            "db": str(db),
            "mode": mode,
            "state": str(state),
            "stop": str(self.stop_file),
            "ready": str(self.ready_file),
            "records": str(self.records_file),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.commits: list[Commit] = []

    def start(self, timeout: float = 300.0) -> None:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        with open(self.log_file, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--writer-child", json.dumps(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(REPO),
            )
        deadline = time.monotonic() + timeout
        while not self.ready_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the writer did not start: {self.log_file.read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.02)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> list[Commit]:
        if self.proc is None:
            return self.commits
        self.stop_file.write_text("stop")
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        try:
            raw = json.loads(self.records_file.read_text())
        except (OSError, ValueError):
            raw = []
        self.commits = [Commit(float(r[0]), float(r[1]), bool(r[2]), r[3], r[4]) for r in raw]
        return self.commits


def writer_window(commits: Sequence[Commit], start: float, end: float) -> dict[str, Any]:
    """The writer's commits that overlapped [start, end]: count, longest and p99 wait, failures."""
    inside = [c for c in commits if c.end >= start and c.start <= end]
    waits = sorted(c.ms for c in inside)
    failures = [c.error for c in inside if not c.ok]
    return {
        "commits": len(inside),
        "maxMs": round(waits[-1], 1) if waits else None,
        "p99Ms": round(_percentile(waits, 0.99), 1) if waits else None,
        "p50Ms": round(_percentile(waits, 0.50), 1) if waits else None,
        "failures": len(failures),
        "firstFailure": failures[0] if failures else None,
        # The five longest: [seconds after the command started, ms, ok].
        "longest": [
            [round(c.start - start, 2), round(c.ms, 1), c.ok] for c in sorted(inside, key=lambda c: -c.ms)[:5]
        ],
    }


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def committed_rows_present(db: Path, commits: Sequence[Commit]) -> tuple[int, int]:
    """(rows the writer committed, how many of them are still in ``db``)."""
    ids = [c.message_id for c in commits if c.ok and c.message_id is not None]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found = 0
        for start in range(0, len(ids), 50_000):
            chunk = json.dumps(ids[start : start + 50_000])
            found += conn.execute(
                "SELECT COUNT(*) FROM messages WHERE message_id IN (SELECT value FROM json_each(?))", (chunk,)
            ).fetchone()[0]
    finally:
        conn.close()
    return len(ids), found


# ---------------------------------------------------------------------------------------
# Running one command
# ---------------------------------------------------------------------------------------

# The command runs under a small launcher so its peak RSS is its own (see bench_read.py:
# Linux carries a forked child's pre-exec high-water mark into its ru_maxrss). The launcher
# also times it, from spawn to reaped.
_LAUNCHER = (
    "import os, sys, time\n"
    "t = time.monotonic()\n"
    "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "e = time.monotonic()\n"
    "open(sys.argv[1], 'w').write(f'{usage.ru_maxrss} {t} {e}')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


@dataclass
class Run:
    """One whole-process run of a command."""

    argv: list[str]
    start: float
    end: float
    code: int
    rss_mib: float | None
    stdout: bytes
    stderr: bytes

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def envelope(self) -> dict[str, Any] | None:
        try:
            found = json.loads(self.stdout)
        except ValueError:
            return None
        return found if isinstance(found, dict) else None

    def problem(self) -> str | None:
        """None when stdout is a successful JSON envelope (whatever the exit status), else what went wrong."""
        envelope = self.envelope()
        if envelope is not None and envelope.get("ok") is True:
            return None
        text = (self.stderr or self.stdout).decode(errors="replace").strip()
        return f"exit {self.code}: {text[:400]}"


def run_command(argv: list[str], env: dict[str, str], scratch: Path, timeout: float) -> Run:
    """Run ``argv`` once through the launcher: wall time, peak RSS, exit status and output."""
    scratch.mkdir(parents=True, exist_ok=True)
    report = scratch / "launcher.out"
    report.unlink(missing_ok=True)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(report), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            code = proc.wait()
            err.write(f"\ntimed out after {timeout:.0f} s".encode())
        ended = time.monotonic()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    rss = None
    try:
        maxrss, t0, t1 = report.read_text().split()
        started, ended = float(t0), float(t1)
        rss = int(maxrss) / (1024 * 1024 if sys.platform == "darwin" else 1024)
    except (OSError, ValueError):
        pass
    return Run(argv, started, ended, code, rss, stdout, stderr)


def clean_env(state_dir: Path) -> dict[str, str]:
    """The environment minus anything pointing lcm at another database or config (bench_read's)."""
    from bench_read import clean_env as read_clean_env

    env = read_clean_env(str(state_dir))
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the code under test (see the module doc)
    return env


def find_lcm(override: str | None) -> Path:
    if override:
        return Path(override)
    return Path(sys.executable).parent / ("lcm.exe" if os.name == "nt" else "lcm")


def _file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def depth1_summary(db: Path, conversation_id: int) -> str | None:
    """A depth-1 summary of the conversation that has a parent (so describe loads both DAG directions)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            """SELECT s.summary_id FROM summaries s
               WHERE s.conversation_id = ? AND s.depth = 1
               ORDER BY EXISTS (SELECT 1 FROM summary_parents sp WHERE sp.parent_summary_id = s.summary_id) DESC,
                        s.summary_id LIMIT 1""",
            (conversation_id,),
        ).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------
# The scenario of one size
# ---------------------------------------------------------------------------------------

#: Command keys, in the order they run (``--commands`` picks a subset). "first-write" runs
#: on the variant lossless-claw wrote; the others on a copy of lcm's file.
COMMANDS = (
    "first-write",
    "status",
    "conversations-list",
    "describe",
    "expand",
    "grep",
    "doctor",
    "ingest",
    "migrate",
    "rotate",
    "prune",
    "vacuum",
)
READ_COMMANDS = ("status", "conversations-list", "describe", "expand", "grep")
#: The reference's read commands, timed on both variants for the ratio (no writer running).
REFERENCE_READS = (
    "status",
    "conversations list",
    "conversations show",
    "messages list",
    "messages tail",
)


@dataclass
class Row:
    """One command's results at one size."""

    key: str
    label: str
    variant: str
    runs: list[Run] = field(default_factory=list)
    writer: dict[str, Any] = field(default_factory=dict)
    in_process_ms: float | None = None
    note: str = ""
    error: str | None = None
    #: lcm.db and its -wal right after the command (bytes).
    file_bytes: int | None = None
    wal_bytes: int | None = None

    @property
    def seconds(self) -> float | None:
        return statistics.median(r.seconds for r in self.runs) if self.runs else None

    @property
    def rss_mib(self) -> float | None:
        values = [r.rss_mib for r in self.runs if r.rss_mib is not None]
        return max(values) if values else None

    def as_json(self) -> dict[str, Any]:
        return {
            "command": self.key,
            "label": self.label,
            "variant": self.variant,
            "argv": self.runs[0].argv if self.runs else None,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "samplesSeconds": [round(r.seconds, 3) for r in self.runs],
            "exitCodes": [r.code for r in self.runs],
            "peakRssMiB": None if self.rss_mib is None else round(self.rss_mib, 1),
            "inProcessMs": None if self.in_process_ms is None else round(self.in_process_ms, 1),
            "writer": self.writer,
            "note": self.note,
            "error": self.error,
            "fileBytesAfter": self.file_bytes,
            "walBytesAfter": self.wal_bytes,
            "data": self.data(),
        }

    def data(self) -> Any:
        """The last run's envelope data, lists left out (a write command's report, kept in --json)."""
        if self.key in READ_COMMANDS or not self.runs:
            return None
        envelope = self.runs[-1].envelope()
        data = envelope.get("data") if envelope else None
        if not isinstance(data, dict):
            return None
        return {k: v for k, v in data.items() if not isinstance(v, list)}


def _prune_cutoffs(archived: Sequence[dict[str, Any]]) -> tuple[str | None, str | None, int, int]:
    """``--before`` values that select the oldest 30% of the archived conversations, then the next 30%."""
    ordered = sorted(a["lastActivity"] for a in archived)
    if len(ordered) < 4:
        return None, None, 0, 0
    first = max(1, round(PRUNE_SHARE * len(ordered)))
    second = min(len(ordered) - 1, max(first + 1, round(2 * PRUNE_SHARE * len(ordered))))

    def iso(text: str) -> str:
        return text.replace(" ", "T") + "Z"

    # A conversation is taken when its last activity is before the cutoff.
    return iso(ordered[first]), iso(ordered[second]), first, second - first


def _summarize_output(key: str, envelope: dict[str, Any] | None) -> str:
    """A short note of what the command did, from its envelope."""
    if envelope is None:
        return ""
    data = envelope.get("data") or {}
    if not isinstance(data, dict):
        return ""
    try:
        if key in ("ingest", "first-write"):
            return f"ingested {data.get('ingested')}"
        if key in ("prune", "vacuum"):
            text = f"{data.get('conversationCount')} conv, {data.get('messageCount'):,} msgs"
            timings = data.get("timingsMs") or {}
            if timings:
                text += f"; archive/verify/delete {timings.get('archive')}/{timings.get('verify')}/{timings.get('delete')} ms"
            vacuum = data.get("vacuum")
            if vacuum:
                text += f"; file {vacuum['fileBytesBefore'] / 2**30:.2f} -> {vacuum['fileBytesAfter'] / 2**30:.2f} GiB"
            return text
        if key == "migrate":
            return f"{data.get('importedMessages')} msgs from {data.get('importedFiles')} files; backup {'yes' if data.get('backupPath') else 'no'}"
        if key == "rotate":
            backup = data.get("backup")
            kind = backup.get("mode") if isinstance(backup, dict) else backup
            passes = len((data.get("compaction") or {}).get("passes") or [])
            return f"{passes} leaf passes; backup {kind}"
        if key == "grep":
            counts = data.get("counts") or {}
            return f"{len(data.get('hits') or [])} hits; counts {counts}"
        if key == "doctor":
            counts = {k: v for k, v in (data.get("counts") or {}).items() if v}
            return f"{data.get('status')} {counts}, {data.get('elapsedMs')} ms"
        if key == "expand":
            return f"{len(data.get('messages') or [])} messages"
    except (TypeError, KeyError, AttributeError):
        return ""
    return ""


class SizeRun:
    """Everything measured at one size."""

    def __init__(
        self, opts: argparse.Namespace, messages: int, lcm: Path, reference: list[str] | None
    ) -> None:
        self.opts = opts
        self.messages = messages
        self.label = size_label(messages)
        self.lcm = lcm
        self.reference = reference
        self.rows: list[Row] = []
        self.reference_rows: list[dict[str, Any]] = []
        self.checks: list[dict[str, Any]] = []
        self.facts: dict[str, Any] = {}
        self.selected = set(opts.commands)
        self.work = DATA_DIR / f"run-{self.label}-{os.getpid()}"

    # -- helpers ----------------------------------------------------------------------

    def _base(self, db: Path, state: Path) -> list[str]:
        return [str(self.lcm), "--db", str(db), "--openclaw-dir", str(state)]

    def _run(
        self, row: Row, argv: list[str], env: dict[str, str], writer: Writer | None, runs: int = 1
    ) -> Row:
        note(f"  [{self.label}] {row.label} ...")
        for _ in range(runs):
            run = run_command(argv, env, self.work / "scratch", self.opts.timeout)
            row.runs.append(run)
            row.error = row.error or run.problem()
            if writer is not None and not writer.alive():
                row.error = row.error or "the writer process died"
        if writer is not None:
            # Let the writer finish the commit it may be in, then take the window.
            time.sleep(0.1)
        row.note = _summarize_output(row.key, row.runs[-1].envelope())
        if row.error:
            note(f"    {row.error[:300]}")
        else:
            note(f"    {row.seconds:.2f} s, {row.rss_mib or 0:.0f} MiB {row.note}")
        self.rows.append(row)
        return row

    def _cleanup_new_files(self, directory: Path, keep: set[Path], before: set[Path]) -> None:
        """Remove what a command left beside the database (backups, archives): disk stays bounded."""
        if self.opts.keep:
            return
        for path in directory.iterdir():
            if path in keep or path in before:
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _in_process(
        self, operation: str, params: dict[str, Any], args: tuple[str, ...], db: Path, state: Path
    ) -> float | None:
        """Median ms of the same operation through lcm_cli.engine.api.call (5 runs after a warm-up)."""
        from lcm_cli.engine.api import call

        samples = []
        try:
            call(operation, params, args=args, db=str(db), openclaw_dir=str(state))
            for _ in range(5):
                started = time.perf_counter()
                call(operation, params, args=args, db=str(db), openclaw_dir=str(state))
                samples.append((time.perf_counter() - started) * 1000)
        except Exception as exc:
            note(f"    in-process {operation} failed: {exc!r}")
            return None
        return statistics.median(samples)

    def _reference_reads(self, variant: str, db: Path, state: Path, env: dict[str, str]) -> None:
        """Our read commands against the reference's, back to back, on ``db`` (no writer)."""
        from bench_read import run_process

        assert self.reference is not None
        big = str(self.facts["bigConversationId"])
        words = {
            "status": ["status"],
            "conversations list": ["conversations", "list"],
            "conversations show": ["conversations", "show", "--conversation-id", big],
            "messages list": ["messages", "list", "--conversation-id", big, "--limit", "50"],
            "messages tail": ["messages", "tail", "--conversation-id", big],
        }
        note(f"  [{self.label}] reference reads on the {variant} file ({self.opts.ref_runs} rounds) ...")
        tail = ["--db", str(db), "--openclaw-dir", str(state)]
        for name in REFERENCE_READS:
            ours_argv = [str(self.lcm), *tail, *words[name]]
            ref_argv = [*self.reference, *tail, *words[name]]
            ours: list[float] = []
            theirs: list[float] = []
            error = None
            for round_ in range(self.opts.ref_runs + 1):
                ms, code, out, err = run_process(ours_argv, env)
                if code != 0:
                    error = f"ours exit {code}: {err.decode(errors='replace')[:200]}"
                ref_ms, ref_code, _, ref_err = run_process(ref_argv, env)
                if ref_code != 0:
                    error = f"reference exit {ref_code}: {ref_err.decode(errors='replace')[:200]}"
                if round_:  # the first round warms both up
                    ours.append(ms)
                    theirs.append(ref_ms)
            ours_ms = statistics.median(ours) if ours else None
            ref_ms_median = statistics.median(theirs) if theirs else None
            self.reference_rows.append(
                {
                    "variant": variant,
                    "command": name,
                    "oursMs": None if ours_ms is None else round(ours_ms, 1),
                    "referenceMs": None if ref_ms_median is None else round(ref_ms_median, 1),
                    "ratio": round(ours_ms / ref_ms_median, 2) if ours_ms and ref_ms_median else None,
                    "error": error,
                }
            )

    # -- the variant lossless-claw wrote ------------------------------------------------

    def run_lossless_variant(self, cache: Path) -> None:
        if "first-write" not in self.selected and self.reference is None:
            return
        work = self.work / "lossless"
        state = work / "state"
        state.mkdir(parents=True, exist_ok=True)
        db = work / "lcm.db"
        note(f"  [{self.label}] copying the file for the lossless-claw variant ...")
        seconds = copy_database(cache, db)
        started = time.perf_counter()
        dropped = strip_lcm_additions(db)
        self.facts["losslessVariant"] = {
            "copySeconds": round(seconds, 1),
            "stripSeconds": round(time.perf_counter() - started, 1),
            "dropped": dropped,
        }
        env = clean_env(state)
        if self.reference is not None:
            self._reference_reads("lossless-claw", db, state, env)
        if "first-write" in self.selected:
            writer = Writer(db, "store", state, work)
            writer.start()
            try:
                time.sleep(1.0)
                argv = self._base(db, state) + [
                    "ingest",
                    "--session-id",
                    self.facts["bigSessionId"],
                    "--session-key",
                    BIG_SESSION_KEY,
                    "--message",
                    json.dumps(
                        {"role": "user", "content": "First lcm write on this file: is the nightly green?"}
                    ),
                ]
                row = self._run(
                    Row(
                        "first-write",
                        "first lcm write (ingest) on a file lossless-claw wrote",
                        "lossless-claw",
                    ),
                    argv,
                    env,
                    writer,
                )
                time.sleep(0.5)
            finally:
                commits = writer.stop()
            row.writer = writer_window(commits, row.runs[0].start, row.runs[-1].end)
            self._check_rows("lossless-claw", db, commits)
        if not self.opts.keep:
            shutil.rmtree(work, ignore_errors=True)

    def _check_rows(self, variant: str, db: Path, commits: Sequence[Commit]) -> None:
        committed, present = committed_rows_present(db, commits)
        failures = [c.error for c in commits if not c.ok]
        waits = sorted(c.ms for c in commits)
        self.checks.append(
            {
                "variant": variant,
                "commits": len(commits),
                "committedRows": committed,
                "presentRows": present,
                "allPresent": committed == present,
                "failures": len(failures),
                "firstFailure": failures[0] if failures else None,
                "maxMs": round(waits[-1], 1) if waits else None,
                "p99Ms": round(_percentile(waits, 0.99), 1) if waits else None,
            }
        )
        note(
            f"  [{self.label}] writer on the {variant} file: {committed:,} rows committed, {present:,} present, {len(failures)} failures"
        )

    # -- lcm's own file --------------------------------------------------------------

    def _setup_inputs(self, db: Path, state: Path) -> dict[str, Any]:
        """The transcripts migrate-sessions and rotate need; the rotate session bootstrapped."""
        from lcm_cli.engine.api import call
        from tests.support.transcripts import write_transcript

        made: dict[str, Any] = {}
        if "migrate" in self.selected:
            sessions = self.work / "lcm" / "migrate"
            count = 0
            for i in range(MIGRATE_FILES):
                written = write_transcript(
                    sessions / f"bench-migrate-{i}.jsonl",
                    session_id=f"bench-migrate-{i}",
                    messages=MIGRATE_MESSAGES_PER_FILE,
                    seed=100 + i,
                )
                count += written.message_count
            made["migrateDir"] = sessions
            made["migrateMessages"] = count
        if "rotate" in self.selected:
            transcript = self.work / "lcm" / "rotate" / "bench-rotate.jsonl"
            written = write_transcript(
                transcript, session_id="bench-rotate", messages=ROTATE_MESSAGES, seed=7
            )
            note(
                f"  [{self.label}] bootstrapping the {written.message_count}-message rotate session (not timed) ..."
            )
            done = call(
                "session.bootstrap",
                {
                    "session_id": "bench-rotate",
                    "session_key": ROTATE_SESSION_KEY,
                    "session_file": str(transcript),
                },
                db=str(db),
                openclaw_dir=str(state),
            )
            made["rotateMessages"] = written.message_count
            made["rotateConversationId"] = done["data"].get("conversationId")
        return made

    def run_lcm_variant(self, cache: Path) -> None:
        lcm_keys = [k for k in COMMANDS if k != "first-write" and k in self.selected]
        if not lcm_keys and self.reference is None:
            return
        work = self.work / "lcm"
        state = work / "state"
        state.mkdir(parents=True, exist_ok=True)
        db = work / "lcm.db"
        note(f"  [{self.label}] copying the file ...")
        self.facts["copySeconds"] = round(copy_database(cache, db), 1)
        env = clean_env(state)
        inputs = self._setup_inputs(db, state)
        self.facts.update({k: v for k, v in inputs.items() if not isinstance(v, Path)})
        if self.reference is not None:
            self._reference_reads("lcm", db, state, env)
        if not lcm_keys:
            return
        base = self._base(db, state)
        big = str(self.facts["bigConversationId"])
        depth1 = depth1_summary(db, int(self.facts["bigConversationId"]))
        self.facts["depth1SummaryId"] = depth1
        word = self.facts["commonWord"]
        cut1, cut2, n1, n2 = _prune_cutoffs(self.facts["archived"])
        self.facts["pruneCutoffs"] = {"prune": [cut1, n1], "vacuum": [cut2, n2]}
        commands: dict[str, tuple[str, list[str], int]] = {
            "status": ("status", ["status"], self.opts.runs),
            "conversations-list": ("conversations list", ["conversations", "list"], self.opts.runs),
            "describe": (
                f"describe (depth-1 {depth1})",
                ["describe", str(depth1), "--conversation-id", big],
                self.opts.runs,
            ),
            "expand": (
                f"expand (depth-1 {depth1})",
                ["expand", str(depth1), "--conversation-id", big],
                self.opts.runs,
            ),
            "grep": (
                f"grep '{word}' full text, --limit 20",
                ["grep", word, "--mode", "full_text", "--all-conversations", "--limit", "20"],
                self.opts.runs,
            ),
            "doctor": ("doctor", ["doctor"], 1),
            "ingest": (
                "ingest of one message",
                [
                    "ingest",
                    "--session-id",
                    self.facts["bigSessionId"],
                    "--session-key",
                    BIG_SESSION_KEY,
                    "--message",
                    json.dumps({"role": "user", "content": "Did the nightly build pass after the fix?"}),
                ],
                1,
            ),
            "migrate": (
                f"migrate-sessions --apply ({inputs.get('migrateMessages', 0)} msgs)",
                ["migrate-sessions", "--sessions-dir", str(inputs.get("migrateDir", "")), "--apply"],
                1,
            ),
            "rotate": (
                f"rotate --apply ({inputs.get('rotateMessages', 0)}-msg session)",
                ["rotate", "--session-key", ROTATE_SESSION_KEY, "--apply"],
                1,
            ),
            "prune": (
                f"prune --apply ({n1} of the archived)",
                ["prune", "--before", str(cut1), "--apply"],
                1,
            ),
            "vacuum": (
                f"prune --apply --vacuum ({n2} more)"
                if "prune" in self.selected
                else f"prune --apply --vacuum ({n1 + n2} of the archived)",
                ["prune", "--before", str(cut2), "--apply", "--vacuum"],
                1,
            ),
        }
        in_process = {
            "status": ("status", {}, ()),
            "describe": ("describe", {"conversation_id": int(big)}, (str(depth1),)),
            "expand": ("expand", {"conversation_id": int(big)}, (str(depth1),)),
            "grep": ("grep", {"mode": "full_text", "all_conversations": True, "limit": 20}, (word,)),
        }
        keep = {
            db,
            Path(str(db) + "-wal"),
            Path(str(db) + "-shm"),
            state,
            work / "migrate",
            work / "rotate",
            work / "scratch",
        }
        writer = Writer(db, self.opts.writer, state, work / "scratch")
        (work / "scratch").mkdir(parents=True, exist_ok=True)
        keep |= {writer.stop_file, writer.ready_file, writer.records_file, writer.log_file}
        note(f"  [{self.label}] starting the writer ({self.opts.writer}) ...")
        writer.start()
        idle_start = time.monotonic()
        time.sleep(1.0)
        idle_end = time.monotonic()
        rows: list[Row] = []
        try:
            for key in lcm_keys:
                if key in ("prune", "vacuum") and (cut1 is None or cut2 is None):
                    continue
                if key in ("describe", "expand") and depth1 is None:
                    continue
                label, words, runs = commands[key]
                before = set(work.iterdir())
                row = self._run(Row(key, label, "lcm"), base + words, env, writer, runs)
                rows.append(row)
                row.file_bytes, row.wal_bytes = _file_size(db), _file_size(Path(str(db) + "-wal"))
                if key == "vacuum" and row.file_bytes is not None and row.wal_bytes is not None:
                    row.note += f"; after it: lcm.db {row.file_bytes / 2**30:.2f} GiB, -wal {row.wal_bytes / 2**30:.2f} GiB"
                self._cleanup_new_files(work, keep, before)
                if key in in_process and not row.error:
                    operation, params, args = in_process[key]
                    row.in_process_ms = self._in_process(operation, params, args, db, state)
                if not writer.alive():
                    note("  the writer died; stopping this size")
                    break
            time.sleep(0.5)
        finally:
            commits = writer.stop()
        idle = Row("idle", "(writer alone, 1 s, before the first command)", "lcm")
        idle.writer = writer_window(commits, idle_start, idle_end)
        self.rows.insert(len(self.rows) - len(rows), idle)
        for row in rows:
            row.writer = writer_window(commits, row.runs[0].start, row.runs[-1].end)
        self._check_rows("lcm", db, commits)
        self.facts["fileBytesAfter"] = db.stat().st_size

    def run(self) -> None:
        started = time.perf_counter()
        cache, meta = ensure_database(self.messages, rebuild=self.opts.rebuild)
        self.facts.update(meta)
        self.facts["path"] = str(cache)
        self.facts["counts"] = database_counts(cache)
        note(
            f"[{self.label}] {cache.name}: {meta['sizeBytes'] / 2**30:.2f} GiB, built in {meta['buildSeconds']} s"
            + ("" if meta["builtNow"] else " (cached)")
            + f"; shares {meta.get('shares')}"
        )
        if self.opts.build_only:
            return
        free = shutil.disk_usage(DATA_DIR).free
        need = meta["sizeBytes"] * 2.2
        if free < need:
            self.facts["skipped"] = (
                f"not enough free disk for a working copy and a backup: {free / 2**30:.0f} GiB free, "
                f"about {need / 2**30:.0f} GiB needed"
            )
            note(f"[{self.label}] skipped: {self.facts['skipped']}")
            return
        try:
            self.run_lossless_variant(cache)
            self.run_lcm_variant(cache)
        finally:
            if not self.opts.keep:
                shutil.rmtree(self.work, ignore_errors=True)
            else:
                note(f"[{self.label}] kept {self.work}")
        self.facts["scenarioSeconds"] = round(time.perf_counter() - started, 1)

    def as_json(self) -> dict[str, Any]:
        facts = {k: v for k, v in self.facts.items() if k != "archived"}
        return {
            "size": self.label,
            "messages": self.messages,
            "database": facts,
            "rows": [r.as_json() for r in self.rows],
            "reference": self.reference_rows,
            "writerChecks": self.checks,
        }


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------


def _cell(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-markdown table (numbers right-aligned)."""
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(header))) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_size(size: SizeRun) -> str:
    facts = size.facts
    out = []
    counts = facts.get("counts", {})
    out.append(
        f"## {size.label}: {facts.get('sizeBytes', 0) / 2**30:.2f} GiB, {counts.get('messages', 0):,} messages, "
        f"{counts.get('conversations', 0):,} conversations ({counts.get('archived', 0):,} archived), summaries by depth "
        f"{counts.get('summariesByDepth')}"
    )
    out.append(
        f"built in {facts.get('buildSeconds')} s{'' if facts.get('builtNow') else ' (cached)'}; file shares {facts.get('shares')}; "
        f"grep word '{facts.get('commonWord')}' (in about {100 * (facts.get('commonWordShare') or 0):.0f}% of messages)"
    )
    if facts.get("skipped"):
        out.append(f"skipped: {facts['skipped']}")
        return "\n".join(out)
    if size.rows:
        out.append("")
        body = []
        for r in size.rows:
            w = r.writer
            body.append(
                (
                    r.label
                    + (
                        " (lossless-claw file)"
                        if r.variant == "lossless-claw" and "lossless" not in r.label
                        else ""
                    ),
                    _cell(r.seconds, ".2f"),
                    _cell(r.rss_mib, ".0f"),
                    _cell(r.in_process_ms, ".1f"),
                    str(w.get("commits", "-")),
                    _cell(w.get("maxMs"), ".1f"),
                    _cell(w.get("p99Ms"), ".1f"),
                    str(w.get("failures", "-")),
                    ("ERROR " + (r.error or "")[:120]) if r.error else r.note,
                )
            )
        out.append(
            _table(
                (
                    "command",
                    "wall s",
                    "peak RSS MiB",
                    "in-proc ms",
                    "writer commits",
                    "writer max ms",
                    "writer p99 ms",
                    "writer fails",
                    "note",
                ),
                body,
            )
        )
    for check in size.checks:
        state = (
            "all present"
            if check["allPresent"]
            else f"MISSING {check['committedRows'] - check['presentRows']:,}"
        )
        out.append(
            f"writer on the {check['variant']} file: {check['commits']:,} commits, {check['committedRows']:,} rows committed, "
            f"{check['presentRows']:,} present afterwards ({state}); {check['failures']} failures"
            + (f" (first: {check['firstFailure']})" if check["firstFailure"] else "")
            + f"; longest wait {check['maxMs']} ms, p99 {check['p99Ms']} ms over the whole run"
        )
    if facts.get("fileBytesAfter"):
        out.append(
            f"lcm.db after the run (writer stopped, WAL checkpointed): {facts['fileBytesAfter'] / 2**30:.2f} GiB"
        )
    if size.reference_rows:
        out.append("")
        out.append(
            _table(
                ("file", "command", "ours ms", "reference ms", "ratio"),
                [
                    (
                        r["variant"],
                        r["command"],
                        _cell(r["oursMs"]),
                        _cell(r["referenceMs"]),
                        ("ERROR " + r["error"][:80]) if r["error"] else _cell(r["ratio"], ".2f"),
                    )
                    for r in size.reference_rows
                ],
            )
        )
    return "\n".join(out)


CODE_ENV = "LCM_BENCH_CODE"


def code_under_test() -> str:
    """Which lcm_cli the commands run: a ``--code`` archive, or the checkout (and whether it has edits)."""
    import lcm_cli

    location = Path(lcm_cli.__file__).resolve().parent.parent
    if os.environ.get(CODE_ENV):
        return f"{os.environ[CODE_ENV]} (git archive at {location})"
    if location != REPO:
        return f"lcm_cli from {location}"
    head = _git("log", "--oneline", "-1")
    dirty = [line for line in _git("status", "--porcelain", "--", "lcm_cli").splitlines() if line.strip()]
    return f"checkout at {head}" + (f" + uncommitted changes in {len(dirty)} lcm_cli files" if dirty else "")


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def reexec_with_code(rev: str, argv: list[str]) -> int:
    """Run this benchmark again with lcm_cli from commit ``rev`` (``git archive`` into benchmarks/data)."""
    sha = _git("rev-parse", "--short", rev)
    if not sha:
        note(f"--code: git does not know {rev!r}")
        return 0
    target = DATA_DIR / f"code-{sha}"
    if not (target / "lcm_cli" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", sha], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(target)
    env[CODE_ENV] = f"{sha} {_git('log', '--format=%s', '-1', sha)[:60]}"
    note(f"running with lcm_cli from {sha} ({target})")
    return subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *argv], env=env, check=False
    ).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help=f"comma-separated: 300k, 1m, 3m, 10m or a count (default {DEFAULT_SIZES})",
    )
    parser.add_argument(
        "--commands", default=",".join(COMMANDS), help=f"comma-separated subset of: {', '.join(COMMANDS)}"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of each cheap read (status, lists, describe, expand, grep); default 3",
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="regenerate the cached databases first (other recipes' files too)",
    )
    parser.add_argument("--build-only", action="store_true", help="build (or reuse) the databases and stop")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the working copies, backups and archives (benchmarks/data/run-*)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable results on stdout")
    parser.add_argument("--json-out", metavar="PATH", help="also write the JSON results to PATH")
    parser.add_argument("--lcm", help="lcm executable to time (default: the one next to sys.executable)")
    parser.add_argument(
        "--writer",
        choices=("ingest", "store"),
        default="ingest",
        help="the live writer's path on lcm's file (default ingest)",
    )
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds before a command is killed (default 1800)"
    )
    parser.add_argument(
        "--reference-cmd",
        help="also time the reference CLI's reads, e.g. 'node /path/lossless-claw/dist/cli.js' (default: $LCM_BENCH_REFERENCE_CMD)",
    )
    parser.add_argument(
        "--ref-runs", type=int, default=5, help="rounds of the reference comparison (default 5)"
    )
    parser.add_argument(
        "--code",
        metavar="REV",
        help="time lcm_cli as of git revision REV (git archive into benchmarks/data, run through PYTHONPATH)",
    )
    opts = parser.parse_args(argv)
    if opts.code:
        args = list(sys.argv[1:] if argv is None else argv)
        at = next(i for i, a in enumerate(args) if a == "--code" or a.startswith("--code="))
        del args[at : at + (1 if "=" in args[at] else 2)]
        reexec_with_code(opts.code, args)
        return 0
    from bench_read import reference_command

    try:
        sizes = [parse_size(s) for s in opts.sizes.split(",") if s.strip()]
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    opts.commands = [c.strip() for c in opts.commands.split(",") if c.strip()]
    unknown = sorted(set(opts.commands) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown commands {unknown}; choose from {', '.join(COMMANDS)}")
    reference = reference_command(opts.reference_cmd)
    lcm = find_lcm(opts.lcm)
    if not lcm.exists():
        note(
            f"no lcm at {lcm}: run this with the venv's interpreter (.venv/bin/python benchmarks/bench_scale.py) or pass --lcm"
        )
        return 0
    results: list[SizeRun] = []
    for messages in sizes:
        size = SizeRun(opts, messages, lcm, reference)
        results.append(size)
        try:
            size.run()
        except Exception as exc:  # a report: note what broke and go on with the next size
            import traceback

            traceback.print_exc()
            size.facts["error"] = repr(exc)
    code = code_under_test()
    report = {
        "lcm": str(lcm),
        "code": code,
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "referenceCmd": reference,
        "sizes": [s.as_json() for s in results],
    }
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps(report, indent=2) + "\n")
    if opts.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"lcm: {lcm}   code: {code}   python {sys.version.split()[0]}   SQLite {sqlite3.sqlite_version}")
    if reference is not None:
        print(f"reference: {shlex.join(reference)}")
    print(
        "Each command is one whole `lcm` process on a copy of the file while a second process commits one "
        "message every 5 ms; writer figures are its commits that overlapped the command."
    )
    for size in results:
        print()
        print(render_size(size))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--writer-child":
        sys.exit(writer_main(json.loads(sys.argv[2])))
    try:
        main()
    except KeyboardInterrupt:
        raise
    except Exception:  # a report, not a test: show what broke, still exit 0
        import traceback

        traceback.print_exc()
    sys.exit(0)
