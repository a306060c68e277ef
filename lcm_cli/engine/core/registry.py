"""The operation registry: every capability, written once, reachable from every door.

:data:`OPERATIONS` declares each operation's interface (which module implements it,
which request fields and positional arguments it takes, its summary, help and example)
without importing anything, so a door can parse, validate and document a call before
paying for the implementation. With :data:`ARGUMENTS`, :data:`DOOR_COMMANDS`,
:data:`GROUPS` and :data:`COMMAND_SECTIONS` it is the whole manifest the doors are generated
from. Modules bind their functions with :func:`operation`; :func:`get_operation` imports
only the module that owns the requested name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.render_hints import Fold, Render, Rows, Tally, Text, Transcript

if TYPE_CHECKING:
    from typing import Any


class Fleet(Record):
    """How an operation answers for several databases at once (``--db`` repeated or a glob,
    ``--openclaw-dir`` repeated; run by :mod:`lcm_cli.engine.fleet`).

    ``merge="list"``: the list ``OpSpec.items`` of every member, each item naming its
    ``database``, merged newest first by the timestamp field ``order``; with ``ranked_by``
    naming a request field whose value is not ``"recency"`` (grep's ``--sort relevance``),
    the members' own ranks are interleaved instead, since scores of different databases do
    not compare. ``merge="summary"``: each member's data, and a total of the fields
    ``totals`` (numbers add up, flags all hold, severities take the worst).
    """

    merge: str
    order: str = ""
    ranked_by: str = ""
    totals: tuple[str, ...] = ()


class OpSpec(Record):
    """An operation's interface: everything a door needs to know before calling it.

    ``options`` name request fields declared in :mod:`lcm_cli.engine.core.params` (type,
    bounds, option spelling, help); ``args`` name positional arguments (see
    :data:`ARGUMENTS`). ``help`` is the `--help` text (its first line is the command's
    one-line help), ``example`` one runnable `lcm ...` line, ``param_help`` and
    ``metavars`` the few fields and arguments documented differently for this operation.
    ``items`` names the list a list operation's data holds (``--fields`` and NDJSON work
    on its items); ``caps_output`` says ``--max-tokens`` caps the whole printed envelope.
    ``cuts`` names the list in data that ``--max-tokens`` shortens at the door for an
    operation that does not fit its answer itself (``data.truncated`` says what was left).
    ``unscoped`` says why the agent scope does not apply (empty: it does; see
    docs/agents.md). ``outputs`` names each option that names a file (``"file"``) or a folder of files
    (``"directory"``) lcm writes: every such write goes through
    :func:`lcm_cli.engine.core.outputs.output_target`, and a test tries each against the
    database, its companions, the config, a manifest and a symlink.
    """

    module: str
    options: tuple[str, ...] = ()  # request fields (see params.PARAMS)
    args: tuple[str, ...] = ()  # positional arguments, in order
    needs_selector: bool = False
    opens_db: bool = True
    resolves_paths: bool = True
    words: tuple[str, ...] = ()  # CLI words when not the dotted name (`lcm backup` = backup.create)
    long_running: bool = False  # shows a progress bar on a terminal
    writes: bool = False  # changes the database or config: `lcm serve` serializes it per session
    meta_paths: bool = True  # the envelope's meta names the database and config paths
    stdin: bool = False  # on the CLI door, its messages may come as JSON text on stdin
    interactive: bool = False  # a full-screen terminal app: only the CLI door runs it
    summary: str = ""  # one line for `lcm hook --list`
    help: str = ""
    example: str = ""
    param_help: Mapping[str, str] | None = None
    metavars: Mapping[str, str] | None = None
    render: Render | None = None  # how `--format table` draws the result (None: the defaults)
    items: str = ""  # the list in data (if any): `--fields` keeps fields of each, ndjson prints one a line
    caps_output: bool = False  # --max-tokens caps everything printed (the door enforces it)
    outputs: Mapping[str, str] | None = None  # option -> "file" | "directory" it writes (see above)
    applies: str = ""  # what --apply does ("archive and delete these"): a dry run's answer says it
    cuts: str = ""  # the list in data that --max-tokens cuts at the door, from its end (see api)
    cuts_oldest: bool = False  # cut from the start instead: the newest items are the ones to keep
    fleet: Fleet | None = None  # answers for several databases at once, and how (see Fleet)
    # Why the agent scope (agentScope, docs/agents.md) does not apply; "" means it does:
    # the operation reads history and sees only the caller's conversations.
    unscoped: str = ""


class Argument(Record):
    """A positional argument's spelling in help: its metavar and help text.

    ``json`` marks a JSON value, which may be a negative number (``-1``) that the CLI
    must not take for an option. ``blank`` says the operation itself judges an empty value
    (a pattern, a prompt, a JSON value); any other empty argument (an id, a path, a name)
    is a missing one, ``INVALID_COMMAND``, as the reference's `summaries show ""` is.
    """

    metavar: str
    help: str
    json: bool = False
    blank: bool = False


def command_words(name: str, spec: OpSpec) -> tuple[str, ...]:
    """The CLI words that run an operation."""
    return spec.words or tuple(name.split("."))


# Positional arguments by name; an operation may word one differently (OpSpec.param_help).
ARGUMENTS: dict[str, Argument] = {
    "summary_id": Argument("SUMMARY_ID", "A summary id such as sum_1b2c3d4e5f607182."),
    "path": Argument("PATH", "Dot path, e.g. freshTailCount."),
    "pattern": Argument("PATTERN", "A regex (default) or full-text words.", blank=True),
    "item_id": Argument("ID", "A summary id (sum_…) or file id (file_…)."),
    "prompt": Argument("PROMPT", "What to answer from the history.", blank=True),
    "operation": Argument("OPERATION", "Operation name, e.g. messages.tail."),
    "archive": Argument("ARCHIVE", "A .jsonl.gz written by `lcm prune`."),
    "json_value": Argument(
        "JSON_VALUE", "The new value as JSON: 32, true, '\"text\"'.", json=True, blank=True
    ),
    "name": Argument("NAME", "Template name: system, leaf, condensed-d1, condensed-d2, condensed-d3."),
}

# The columns a person scans first in a list of records, and those dropped first (least
# important first) when the terminal is narrow; JSON output carries every field.
_FINDINGS = Rows("check", ("status", "check", "count", "fix"))
_UNITS = Rows("unit", ("unit", "check", "conversationId", "status"))
_SUMMARIES = Rows(
    "summaryId",
    ("summaryId", "kind", "depth", "tokenCount", "coverageAt", "descendantCount", "preview"),
    drop=("descendantCount", "coverageAt", "depth"),
)
_MESSAGES = Rows(
    "messageId",
    ("messageId", "seq", "role", "tokenCount", "createdAt", "preview", "content"),
    drop=("createdAt", "seq", "tokenCount"),
    text="content",
)
# One row per transcript (its rows also carry a sessionId).
_TRANSCRIPTS = Rows(
    "file",
    (
        "file",
        "status",
        "reason",
        "conversationId",
        "candidateMessages",
        "wouldImportMessages",
        "importedMessages",
    ),
    drop=("importedMessages", "candidateMessages", "conversationId"),
)
# Summary surgery: one row per rewritten summary, restored context item, copied summary.
_REWRITES = Rows("diff", ("summaryId", "depth", "status", "oldTokenCount", "newTokenCount"))
_CONTEXT_ITEMS = Rows("ordinal", ("ordinal", "itemType", "summaryId", "kind", "depth", "tokenCount"))
_COPIES = Rows("newSummaryId", ("summaryId", "newSummaryId", "kind", "depth", "tokenCount", "inContext"))
_BACKUPS = Rows(
    "hasManifest",
    ("database", "name", "label", "sizeBytes", "createdAt", "hasManifest", "verifiedAtCreation"),
    drop=("label", "verifiedAtCreation", "hasManifest", "sizeBytes"),
)
_CONVERSATIONS = Rows(
    "sessionId",
    (
        "database",  # a fleet's items only (see Fleet)
        "conversationId",
        "sessionKey",
        "active",
        "title",
        "messageCount",
        "summaryCount",
        "contextTokens",
        "updatedAt",
    ),
    drop=("contextTokens", "summaryCount", "active", "updatedAt", "title"),
)
# Search hits: messages and summaries in one list.
_HITS = Rows(
    "snippet",
    ("database", "type", "id", "conversationId", "sessionKey", "role", "kind", "timestamp", "snippet"),
    drop=("kind", "role", "timestamp"),
    text="snippet",  # one line per hit (where it is), its snippet below at full width
)
# Lists that may hold any stored record: summaries, messages, conversations, search hits.
_RECORDS = Render(rows=(_SUMMARIES, _MESSAGES, _CONVERSATIONS, _HITS))
# Doctor's findings first, each with its title and fix; the passes fold into one line.
_CHECKS = Tally(
    "checks",
    "status",
    (("PASS", "passed"), ("SKIP", "skipped")),
    "check",
    "{status} {check}: {title}",
    ("fix", "destructive", "advice", "count", "affected", "nextCursor"),
)
_DOCTOR = Render(
    rows=(_FINDINGS, _UNITS, _SUMMARIES, _MESSAGES, _CONVERSATIONS), tallies=(_CHECKS,), first=("checks",)
)
# A backfill over hundreds of files: totals, then only the files that need attention.
_MIGRATE = Render(
    rows=(_TRANSCRIPTS, _CONVERSATIONS),
    tallies=(
        Tally(
            "files",
            "status",
            (
                ("up-to-date", "up to date"),
                ("would-import", "would be imported"),
                ("imported", "imported"),
                ("complete", "complete"),
            ),
            "file",
            "{status}",
            (
                "file",
                "reason",
                "hint",
                "error",
                "sessionKey",
                "conversationId",
                "missingEntries",
                "skippedLines",
                "warnings",
            ),
            attention=("reason", "error", "warnings"),
            listed="file",
        ),
    ),
)
# Backup checks: the failed ones in full, the passed ones counted.
_BACKUP_CHECKS = Tally(
    "checks", "ok", (("True", "passed"),), "check", "{name}: expected {expected}, found {actual}", ()
)
# Row counts by table name: the names as SQLite spells them.
_TABLE_NAMES = ("tables", "rows", "deleted", "expected", "actual")
_BACKUP = Render(rows=(_BACKUPS,), tallies=(_BACKUP_CHECKS,), verbatim=_TABLE_NAMES)
_CONTEXT = Render(
    transcript=Transcript(
        field="messages",
        title="{command}: what the model sees",
        # What a person checks; the engine's internal counts stay in `--format json` (details).
        totals=(
            ("messages", "#messages"),
            ("estimatedTokens", "estimatedTokens"),
            ("tokenBudget", "details.tokenBudget"),
            ("summaryItems", "details.summaryItems"),
            ("freshTailItems", "details.freshTailItems"),
            ("droppedItems", "details.droppedItems"),
            ("reason", "reason"),
        ),
        # An assembled summary is a user message wrapping `<summary …><content>…</content>`.
        fold=Fold(
            role="user",
            prefix="<summary ",
            pattern=r'<summary id="(?P<id>[^"]*)"[^>]* depth="(?P<depth>\d+)".*?<content>(?P<content>.*)</content>',
            shown_role="summary d{depth}",
            shown_text="{id}: {content}",
        ),
    )
)


def _prompt_text(field: str) -> Render:
    """A prompt is read as a whole: a person wants the text itself, not a cell preview."""
    where = ("path", "overridePath", "builtinPath")
    return Render(text=Text(field, "# {name} ({source}): {where}", where, "(no differences)\n"))


_TIME = ("after", "before", "between", "recency")
# How lcm's own commands word the time options: one grammar (timefilter.parse_when).
_WHEN = {
    "after": "Inclusive lower bound: a timestamp, a date (2026-07-01) or a duration back (7d).",
    "before": "Exclusive upper bound: a timestamp, a date or a duration back (36h).",
    "between": "Both bounds at once: START..END, each a timestamp, a date or a duration.",
    "recency": "Only since WHEN: a duration (12h, 7d, 2w), a date or a timestamp.",
}
_WHEN_METAVARS = {"after": "WHEN", "before": "WHEN", "recency": "WHEN"}
_SELECTOR = ("conversation_id", "session_key")
_PROMPTS = "lcm_cli.engine.summarize.ops"

# Why the agent scope (docs/agents.md) leaves an operation alone, said once per kind.
NO_HISTORY = "reads no conversation history"
WHOLE_FILE = (
    "whole-file maintenance run by an operator or the host, never by a model: it sees the whole file "
    "(per-agent database files are its boundary)"
)
HOST_LIFECYCLE = "the host's lifecycle call for the session it names: it reads and writes that session only"

OPERATIONS: dict[str, OpSpec] = {
    "status": OpSpec(
        "lcm_cli.engine.read.status",
        summary="Database-wide counts, token totals, coverage and maintenance state.",
        help="Database-wide counts, token totals, time coverage and maintenance state.",
        example="lcm status --pretty",
        fleet=Fleet("summary", totals=("databaseSizeBytes", "status")),
    ),
    "conversations.list": OpSpec(
        "lcm_cli.engine.read.conversations",
        ("limit", "cursor"),
        summary="List conversations, most recently updated first, with aggregate figures.",
        help="Conversations, most recently updated first, with message, summary and tail figures.",
        example="lcm conversations list --limit 20",
        render=Render(rows=(_CONVERSATIONS,), labels=(("items", "Conversations"),)),
        items="items",
        fleet=Fleet("list", order="updatedAt"),
    ),
    "conversations.show": OpSpec(
        "lcm_cli.engine.read.conversations",
        _SELECTOR,
        needs_selector=True,
        summary="One conversation's figures, summary depths, context, maintenance and bootstrap state.",
        help="One conversation: figures, summary depths, context, telemetry, maintenance, bootstrap.",
        example="lcm conversations show --session-key agent:main:main",
        render=_RECORDS,
    ),
    "messages.list": OpSpec(
        "lcm_cli.engine.read.messages",
        _SELECTOR + _TIME + ("limit", "cursor", "role", "include_content", "max_tokens"),
        needs_selector=True,
        summary="Page through a conversation's messages, newest first, with role and time filters.",
        help="A conversation's messages, newest first, with previews (or full content).",
        example="lcm messages list --conversation-id 1 --role user --recency 2d",
        render=Render(rows=(_MESSAGES,), labels=(("items", "Messages"),)),
        items="items",
        caps_output=True,
    ),
    "messages.tail": OpSpec(
        "lcm_cli.engine.read.messages",
        _SELECTOR + ("count",),
        needs_selector=True,
        summary="The protected fresh tail: the newest raw messages in the conversation's context.",
        help="The fresh tail: newest raw messages in context, oldest first, with full content.",
        example="lcm messages tail --session-key agent:main:main --count 10",
        render=Render(rows=(_MESSAGES,)),
        items="messages",
    ),
    "summaries.list": OpSpec(
        "lcm_cli.engine.read.summaries",
        _SELECTOR + _TIME + ("limit", "cursor", "include_content", "depth", "kind"),
        summary="Page through summaries (one conversation or all), newest coverage first.",
        help="Summaries (one conversation, or all), newest coverage first.",
        example="lcm summaries list --conversation-id 1 --kind condensed",
        render=Render(rows=(_SUMMARIES,), labels=(("items", "Summaries"),)),
        items="items",
    ),
    "summaries.show": OpSpec(
        "lcm_cli.engine.read.summaries",
        ("max_tokens",),
        args=("summary_id",),
        summary=(
            "One summary with full content, the summaries that consume it, its sources and source messages."
        ),
        help=(
            "One summary with full content, its parents (summaries that consume it), its children "
            "(its source summaries) and its source messages."
        ),
        example="lcm summaries show sum_1b2c3d4e5f607182 --format table",
        render=_RECORDS,
        caps_output=True,
    ),
    "summaries.rewrite": OpSpec(
        "lcm_cli.engine.surgery.rewrite",
        _SELECTOR + ("summary_id", "depth", "all", "cascade", "apply", "backup"),
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
        _SELECTOR + ("to", "out", "force", "min_depth", "max_tokens"),
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
    "config.show": OpSpec(
        "lcm_cli.engine.config.ops",
        opens_db=False,
        summary="The Lossless plugin config: as stored, effective, and its sources.",
        help="The stored and effective Lossless config, pattern sources and LCM_* overrides.",
        example="lcm config show --pretty",
        render=Render(verbatim=("raw", "effective", "diagnostics")),
        unscoped=NO_HISTORY,
    ),
    "config.get": OpSpec(
        "lcm_cli.engine.config.ops",
        args=("path",),
        opens_db=False,
        summary="One config key: whether it is set, its stored and effective values.",
        help="One key: whether it is set, its stored value and its effective value.",
        example="lcm config get autoRotateSessionFiles.sizeBytes",
        unscoped=NO_HISTORY,
    ),
    "config.set": OpSpec(
        "lcm_cli.engine.config.ops",
        args=("path", "json_value"),
        opens_db=False,
        writes=True,
        summary="Set one Lossless config key in openclaw.json (validated, backed up, atomic).",
        help="Set one key after validating it; backs the file up and replaces it atomically.",
        example="lcm config set freshTailCount 32",
        unscoped=NO_HISTORY,
    ),
    "doctor.scan": OpSpec(
        "lcm_cli.doctor.scan",
        _SELECTOR
        + ("recency", "check", "fail_on", "thorough", "findings_only", "limit", "cursor", "max_tokens"),
        words=("doctor",),
        long_running=True,
        summary="Check lcm.db for every known problem; each finding names its fix (read-only).",
        help=(
            "Check lcm.db for every known problem (read-only); each finding names the command that "
            "fixes it.\n\n"
            "Subcommands repair (apply) and remove junk conversations (clean). Exit status 0 when "
            "nothing is at or above --fail-on, 6 otherwise. Checks are listed in docs/doctor.md."
        ),
        example="lcm doctor --format table",
        param_help={"recency": _WHEN["recency"]},
        metavars={"recency": "WHEN"},
        render=_DOCTOR,
        items="checks",
        cuts="checks",
        fleet=Fleet("summary", totals=("healthy", "status", "exitStatus", "counts")),
        unscoped=WHOLE_FILE,
    ),
    "doctor.apply": OpSpec(
        "lcm_cli.doctor.apply",
        _SELECTOR + ("check", "apply", "backup", "no_backup"),
        long_running=True,
        writes=True,
        summary="Repair what `lcm doctor` found (dry run unless --apply; under a change backup).",
        help=(
            "Repair what the scan found: FTS, context ordinals, dangling items, stale debt, counts.\n\n"
            "Dry run by default (lists every change it would make); --apply writes one transaction per "
            "repaired unit, under a change backup of the rows it changes (--backup full: a copy of the "
            "whole database first), and lists every change made."
        ),
        example="lcm doctor apply --check fts --apply",
        render=_DOCTOR,
        applies="make these changes",
        unscoped=WHOLE_FILE,
    ),
    "doctor.clean": OpSpec(
        "lcm_cli.doctor.clean",
        ("conversation_class", "apply", "vacuum", "backup", "no_backup"),
        long_running=True,
        writes=True,
        summary="Remove junk conversations by class (dry run unless --apply; under a change backup).",
        help=(
            "Remove junk conversations by class (archived subagents, cron sessions, keyless subagent "
            "contexts).\n\n"
            "Dry run by default; --apply deletes in batches of ~25 ms of write lock (the agent keeps "
            "writing), under a change backup of the deleted rows (--backup full: a copy of the whole "
            "database first)."
        ),
        example="lcm doctor clean --class cron_sessions --apply --vacuum",
        param_help={
            "conversation_class": (
                "archived_subagents, cron_sessions or null_subagent_context; repeatable (default: all)."
            ),
        },
        render=_DOCTOR,
        applies="back up and delete these",
        unscoped=WHOLE_FILE,
    ),
    "migrate.sessions": OpSpec(
        "lcm_cli.migrate.importer",
        (
            "file",
            "sessions_dir",
            "store",
            "since",
            "max_files",
            "apply",
            "verify",
            "backup",
            "keep",
            "json",
            "verbose",
            "state_dir",
        ),
        words=("migrate-sessions",),
        long_running=True,
        writes=True,
        summary="Backfill OpenClaw session transcripts into lcm.db (dry run by default).",
        help=(
            "Backfill OpenClaw session transcripts into lcm.db; a dry run unless --apply.\n\n"
            "Without --file, --sessions-dir or --store it reads <state dir>/agents/*/sessions/*.jsonl "
            "and every <state dir>/agents/*/agent/openclaw-agent.sqlite. Safe to re-run: entries "
            "already imported are skipped. Exits 1 when a file failed (its report says why)."
        ),
        example="lcm migrate-sessions --openclaw-dir ~/.openclaw --apply",
        param_help={
            "file": "Import this transcript; repeatable.",
            "apply": (
                "Write: import (one transaction per file) under a change backup of the rows added, "
                "when anything would be imported."
            ),
            "keep": "With --apply, afterwards keep only the newest N `migrate-sessions` backups.",
        },
        render=_MIGRATE,
        items="files",
        applies="back up and import these",
        unscoped=WHOLE_FILE,
    ),
    "backup.create": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        ("out", "quick", "keep"),
        words=("backup",),
        long_running=True,
        summary="Back up lcm.db online (small page steps), check the copy, write a manifest.",
        help=(
            "Back up lcm.db online (the live agent keeps writing), check the copy, write a manifest.\n\n"
            "Subcommands list, verify and restore backups."
        ),
        example="lcm backup --keep 5",
        param_help={
            "out": "Where to write the copy (default: beside the database, timestamped).",
            "keep": "Afterwards keep only the newest N `backup` backups.",
        },
        outputs={"out": "file"},
        render=_BACKUP,
        unscoped=WHOLE_FILE,
    ),
    "backup.list": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        summary="Backups beside the database (copies and change backups), newest first.",
        help=(
            "Backups beside the database, newest first, with their manifest status: copies of the "
            "database (*.bak) and change backups (*.changes.jsonl.gz, kind changes, with their rows)."
        ),
        example="lcm backup list --format table",
        render=_BACKUP,
        items="backups",
        fleet=Fleet("list", order="createdAt"),
        unscoped=WHOLE_FILE,
    ),
    "backup.verify": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        args=("path",),
        summary="Re-check a backup against its manifest (size, sha256, integrity, row counts).",
        help=(
            "Re-check a backup against its manifest: size, sha256, integrity and row counts.\n\n"
            "A change backup (*.changes.jsonl.gz) is read end to end: gzip, header, the content sha256 "
            "and counts of its trailer, its manifest, and that it was taken of this database."
        ),
        example="lcm backup verify ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak",
        param_help={
            "path": "The backup file.",
        },
        render=_BACKUP,
        unscoped=WHOLE_FILE,
    ),
    "backup.restore": OpSpec(
        "lcm_cli.engine.maintenance.backup.ops",
        ("apply", "force"),
        args=("path",),
        writes=True,
        summary="Restore lcm.db from a verified backup, or undo a change backup (dry run unless --apply).",
        help=(
            "Replace lcm.db with a verified backup; the replaced file is kept as a backup.\n\n"
            "Given a change backup (*.changes.jsonl.gz), undo the command it was taken for instead: "
            "the rows it inserted are deleted, those it updated or deleted put back, each only while "
            "it still holds what the command left (anything else is a conflict, never overwritten: "
            "RESTORE_CONFLICT). The host may keep running; the undo is itself under a change backup."
        ),
        example="lcm backup restore ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak --apply",
        param_help={
            "path": "The backup file: a copy (*.bak) or a change backup (*.changes.jsonl.gz).",
            "apply": "Really restore (dry run otherwise).",
            "force": (
                "A copy: restore even while another process has the database open (never while "
                "Litestream replicates it: REPLICATION_ACTIVE). A change backup: "
                "restore every row without a conflict, and list the ones skipped."
            ),
        },
        render=_BACKUP,
        applies="put this backup in place",
        unscoped=WHOLE_FILE,
    ),
    "prune": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops",
        (
            "conversation_id",
            "prune_before",
            "archived_only",
            "include_active",
            "max_db_size",
            "conversation_class",
            "out",
            "apply",
            "vacuum",
        ),
        long_running=True,
        writes=True,
        summary="Archive old conversations to a checksummed .jsonl.gz, then delete them (dry run).",
        help=(
            "Archive old conversations to a checksummed .jsonl.gz, verify it, then delete them.\n\n"
            "Dry run by default: says which conversations and how many bytes. At least one of "
            "--before, --max-db-size, --conversation-id, --class is required. --apply deletes in "
            "batches of ~25 ms of write lock (the agent keeps writing; a rerun finishes an interrupted "
            "prune). Subcommand restore puts an archive back."
        ),
        example="lcm prune --before 90d --apply --vacuum",
        param_help={
            "out": "Archive file (default: beside the database, timestamped).",
        },
        outputs={"out": "file"},
        render=Render(rows=(_CONVERSATIONS,), verbatim=_TABLE_NAMES),
        applies="archive and delete these",
        unscoped=WHOLE_FILE,
    ),
    "vacuum": OpSpec(
        "lcm_cli.engine.maintenance.vacuum",
        ("full", "apply"),
        long_running=True,
        writes=True,
        summary="Give the space of deleted rows back to the disk (online in steps; --full once, offline).",
        help=(
            "Give the space of deleted rows back to the disk. Dry run by default: free space, "
            "auto-vacuum mode and the plan.\n\n"
            "--apply on a file with incremental auto-vacuum works online, in steps of ~25 ms of write "
            "lock: the agent keeps writing. A file lossless-claw made has auto_vacuum = NONE; switching "
            "it takes ONE offline step, --full --apply: a full VACUUM that locks every writer out for "
            "about 20 s per GB (the dry run estimates it), needs free disk of about twice the data, and "
            "is refused with DATABASE_IN_USE while another process (the agent host, `lcm serve`) has "
            "the file open. Stop the host first."
        ),
        example="lcm vacuum --apply",
        param_help={"apply": "Do the plan (dry run otherwise)."},
        applies="do the plan",
        unscoped=WHOLE_FILE,
    ),
    "prune.restore": OpSpec(
        "lcm_cli.engine.maintenance.prune_ops",
        ("apply",),
        args=("archive",),
        long_running=True,
        writes=True,
        summary="Put a prune archive back (verified first; idempotent; dry run).",
        help="Put the conversations of a prune archive back (verified first; safe to run twice).",
        example="lcm prune restore ~/.openclaw/lcm.db.prune-20260710T123456789Z.jsonl.gz --apply",
        render=Render(rows=(_CONVERSATIONS,), verbatim=_TABLE_NAMES),
        applies="bring these conversations back",
        unscoped=WHOLE_FILE,
    ),
    # The control contract's results are sanitized: no paths, not even in meta.
    # `rotate` writes, so the whole contract waits in the session's write queue under serve.
    "control": OpSpec(
        "lcm_cli.engine.maintenance.control",
        ("operation", "session_key", "session_id"),
        meta_paths=False,
        writes=True,
        summary="Run a sanitized control operation for the host: status, doctor or rotate",
        help=(
            "Run a control operation; the result holds counts and flags only (no paths or text).\n\n"
            "An operation this lcm cannot run answers CONTROL_UNAVAILABLE with a reasonCode."
        ),
        example="lcm control --operation status --session-key agent:main:main",
        param_help={
            "session_key": "The caller's session key.",
            "session_id": "The caller's runtime session id.",
        },
        unscoped=WHOLE_FILE,
    ),
    "control.capabilities": OpSpec(
        "lcm_cli.engine.maintenance.control",
        opens_db=False,
        resolves_paths=False,
        summary="Which control operations (status, doctor, rotate) this lcm can run",
        help="Which control operations this lcm can run: {status, doctor, rotate}.",
        example="lcm control capabilities",
        unscoped=NO_HISTORY,
    ),
    "grep": OpSpec(
        "lcm_cli.engine.recall.grep",
        _SELECTOR
        + _TIME
        + (
            "mode",
            "scope",
            "file_id",
            "all_conversations",
            "sort",
            "limit",
            "cursor",
            "deadline_ms",
            "scan_limit",
        ),
        args=("pattern",),
        summary="Search messages, summaries or large files by regex or full text; meta says what ran.",
        help=(
            "Search messages, summaries or large files; meta says what ran and if it is complete.\n\n"
            "--session-key searches the whole session family (active and archived conversations)."
        ),
        example='lcm grep "deploy failed" --mode full_text --session-key agent:main:main',
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
            **_WHEN,
        },
        render=Render(rows=_RECORDS.rows, meta=("complete", "truncatedBy")),
        metavars=_WHEN_METAVARS,
        items="hits",
        fleet=Fleet("list", order="timestamp", ranked_by="sort"),
    ),
    "describe": OpSpec(
        "lcm_cli.engine.recall.describe",
        _SELECTOR + ("all_conversations", "max_bytes", "max_tokens", "cursor"),
        args=("item_id",),
        summary="One summary (metadata, DAG neighbours, source ids) or large file (metadata, content).",
        help=(
            "Describe one summary (sum_…) or large file (file_…): metadata, links, content.\n\n"
            "A summary shows its time range, parents, children, source message ids and file ids; a "
            "file its metadata, exploration summary and content up to --max-bytes."
        ),
        example="lcm describe sum_1b2c3d4e5f607182 --max-tokens 800",
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
        },
        render=_RECORDS,
        caps_output=True,
    ),
    "expand": OpSpec(
        "lcm_cli.engine.recall.expand",
        _SELECTOR + ("all_conversations", "max_tokens", "cursor"),
        args=("summary_id",),
        summary="Walk a summary down the DAG to its source messages, in order, within a token cap.",
        help=(
            "A summary's source messages, in order, within a token cap (default maxExpandTokens).\n\n"
            "Reports what was left out and a cursor that continues exactly there."
        ),
        example="lcm expand sum_1b2c3d4e5f607182 --max-tokens 2000",
        param_help={
            "summary_id": "The summary to expand.",
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
        },
        render=_RECORDS,
        items="messages",
        caps_output=True,
    ),
    "export": OpSpec(
        "lcm_cli.engine.recall.export",
        _SELECTOR + ("to", "out", "include_summaries"),
        needs_selector=True,
        summary="Export one conversation's messages as Markdown or a re-importable JSONL transcript.",
        help=(
            "Export one conversation's raw messages as Markdown or a JSONL transcript.\n\n"
            "The JSONL form re-imports with `lcm migrate-sessions --file` to the same messages."
        ),
        example="lcm export --session-key agent:main:main --to jsonl --out main.jsonl",
        param_help={
            "out": "Write here (must not exist); default: the document on stdout.",
        },
        outputs={"out": "file"},
        render=_RECORDS,
    ),
    "expand.query": OpSpec(
        "lcm_cli.engine.recall.expand_query",
        _SELECTOR + ("all_conversations", "query", "summary_id", "max_tokens", "token_cap", "timeout_ms"),
        args=("prompt",),
        words=("expand-query",),
        summary="Answer a prompt from expanded summaries (found by --query or given by --summary-id).",
        help=(
            "Answer PROMPT from expanded summaries with the configured model.\n\n"
            "Without a model it returns the ranked, expanded evidence and says no answer was "
            "generated."
        ),
        example='lcm expand-query "Why did the deploy fail?" --query deploy --session-key agent:main:main',
        param_help={
            "session_key": "Search the whole session family of KEY: its active and archived conversations.",
            "max_tokens": "Hard cap on the answer in tokens (default 2000); a longer reply is cut.",
        },
        render=_RECORDS,
    ),
    # The OpenClaw model's recall tools (lossless-claw's names and parameters), one call each.
    "recall.tool": OpSpec(
        "lcm_cli.engine.recall.tools",
        ("tool", "arguments", "session_key", "session_id"),
        words=("tool",),
        summary="Run one agent tool call (lcm_grep, lcm_describe, lcm_expand, lcm_expand_query) as text.",
        help=(
            "Run one call of an agent tool and answer the text the model reads.\n\n"
            "The tools are lossless-claw's lcm_grep, lcm_describe, lcm_expand and lcm_expand_query, "
            "with its parameter names; they search the calling session's conversations unless "
            "the arguments name a conversationId or set allConversations. A mistake in the "
            "arguments is an answer with isError true, not a failure."
        ),
        example=(
            'lcm tool --tool lcm_grep --arguments \'{"pattern": "flaky", "mode": "full_text"}\' '
            "--session-key agent:main:main"
        ),
        param_help={
            "session_key": "The calling session's key: its session family is the default scope.",
            "session_id": "The calling session's runtime id (its active conversation wins over a stale key).",
        },
        render=Render(text=Text("text", "# {tool}")),
    ),
    "recall.tool_specs": OpSpec(
        "lcm_cli.engine.recall.tools",
        words=("tool", "specs"),
        opens_db=False,
        resolves_paths=False,
        summary="The agent tools' names, labels, descriptions and parameter JSON Schemas.",
        help=(
            "The four agent tools as data: name, label, description and parameter JSON Schema.\n\n"
            "The OpenClaw plugin registers its tools from this list."
        ),
        example="lcm tool specs --pretty",
        items="tools",
        unscoped=NO_HISTORY,
    ),
    "session.ingest": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "file", "message", "messages", "is_heartbeat"),
        words=("ingest",),
        writes=True,
        stdin=True,
        summary="Store messages for a session (JSON on stdin, --file, or --messages).",
        help=(
            "Store messages for a session: one JSON object, a JSON array, or JSON lines on stdin.\n\n"
            "Each message is reported as ingested (with its message id and seq) or skipped with the "
            "reason. Bad JSON or invalid UTF-8 is an INVALID_INPUT error naming the line, and nothing "
            "is written. Ingest never compacts."
        ),
        example=(
            'echo \'{"role": "user", "content": "Is the nightly green now?"}\' | lcm ingest '
            "--session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main"
        ),
        param_help={
            "file": "Read the messages from PATH instead of stdin ('-' is stdin).",
            "is_heartbeat": "A heartbeat turn: nothing is stored (reported as skipped).",
        },
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.bootstrap": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "session_file", "host_store"),
        writes=True,
        summary="Import a session's transcript JSONL, or reconcile what is missing.",
        help=(
            "Import a session's transcript, or only what the database is missing.\n\n"
            "The first import keeps the newest messages within bootstrapMaxTokens; later runs find "
            "the anchor and import what follows it (at most max(20% of stored, 50) a run). A current "
            "host (2026.7.2+) keeps no JSONL: without a --session-file that exists, the session is "
            "read from the host's SQLite store (--host-store, else the agent's openclaw-agent.sqlite "
            "under the state dir), once, when lcm has no conversation for it."
        ),
        example=(
            "lcm session bootstrap --session-id 9b1f0c2e-0000-4000-8000-0000000000a1 --session-file "
            "~/.openclaw/agents/main/sessions/9b1f0c2e-0000-4000-8000-0000000000a1.jsonl"
        ),
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.new": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key"),
        writes=True,
        summary="/new: prune the context to summaries of depth >= newSessionRetainDepth.",
        help=(
            "/new: drop messages and shallow summaries from the context (newSessionRetainDepth).\n\n"
            "Messages and summaries stay in the database; only context items are removed."
        ),
        example="lcm session new --session-key agent:main:main",
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.reset": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key"),
        writes=True,
        summary="/reset: archive the active conversation and start a fresh one.",
        help="/reset: archive the active conversation (manual-reset) and start a fresh one.",
        example="lcm session reset --session-key agent:main:main",
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.end": OpSpec(
        "lcm_cli.engine.session.ops",
        ("session_id", "session_key", "reason", "next_session_id", "next_session_key"),
        writes=True,
        summary="Session end: archive per the reason (deleted, reset, idle, ...).",
        help="Session end: archive the conversation as the host's reason says.",
        example="lcm session end --session-key agent:main:main --reason deleted",
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.after_turn": OpSpec(
        "lcm_cli.engine.session.after_turn",
        (
            "session_id",
            "session_key",
            "session_file",
            "file",
            "messages",
            "pre_prompt_message_count",
            "auto_compaction_summary",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("after-turn",),
        writes=True,
        stdin=True,
        summary=(
            "After a turn: store its new messages, then record debt (deferred) or compact locally "
            "(inline) when over the threshold; never waits for a model."
        ),
        help=(
            "After a turn: store its new messages, then apply the threshold policy.\n\n"
            "The new messages are messages[N:] (N = --pre-prompt-message-count). With --session-file "
            "the transcript is reconciled first; when it cannot be lined up with the database nothing "
            "is stored this turn. Over the threshold, one threshold debt row is recorded for `lcm "
            "maintain` (deferred, the default), or (proactiveThresholdCompactionMode inline) the "
            "context is compacted now with the local extractive summarizer, the model's work left "
            "as debt: no turn waits for a summarizer model."
        ),
        example=(
            'echo \'[{"role": "user", "content": "Is the nightly green?"}]\' | lcm after-turn '
            "--session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main "
            "--pre-prompt-message-count 0"
        ),
        param_help={
            "session_file": "The session's transcript JSONL (reconciled first).",
            "file": "Read the live messages from PATH instead of stdin.",
            "messages": "The live messages as a JSON array.",
        },
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.commit_turn": OpSpec(
        "lcm_cli.engine.session.turns",
        (
            "advancement_key",
            "session_id",
            "session_key",
            "messages",
            "file",
            "admission",
            "terminal",
            "is_heartbeat",
            "token_budget",
            "current_token_count",
            "model",
        ),
        words=("commit-turn",),
        writes=True,
        stdin=True,
        summary=(
            "Store one host-accepted turn atomically and idempotently by its advancement key "
            "(OpenClaw 2026.8+)."
        ),
        help=(
            "Commit one accepted turn, atomically and idempotently by its advancement key.\n\n"
            "What OpenClaw 2026.8+ calls as commitTurn: the turn's messages and its turn_advancements "
            "ledger row are stored in one transaction. A retry with the same key answers status "
            '"duplicate" and stores nothing; the same key with another turn is refused '
            "(TURN_ADVANCEMENT_CONFLICT). Then, over the threshold, one debt row is recorded for "
            "`lcm maintain` (always deferred, as lossless-claw 1.0 does); no summarizer model is called."
        ),
        example=(
            "lcm commit-turn --advancement-key turn-1 --session-id s1 --session-key agent:main:main "
            '--messages \'[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]\''
        ),
        param_help={
            "file": "Read the turn's messages from PATH instead of stdin.",
            "messages": "The turn's messages as a JSON array.",
            "is_heartbeat": "A heartbeat turn: acknowledged, nothing stored.",
        },
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "session.compact": OpSpec(
        "lcm_cli.engine.compaction.ops",
        _SELECTOR
        + (
            "session_id",
            "apply",
            "token_budget",
            "compaction_target",
            "force",
            "manual",
            "until_under_target",
            "current_token_count",
            "model",
        ),
        words=("compact",),
        writes=True,
        summary="Compact a conversation: leaf passes, then condensation (dry run unless --apply).",
        help=(
            "Compact a conversation: leaf passes over old raw messages, then condensation.\n\n"
            "Runs what the host's compact runs: nothing at or below the threshold unless --manual or "
            "--force. Without --apply this is a dry run on an in-memory copy of the conversation, "
            "with placeholder summaries: it lists the passes that would run and the tokens they would "
            "roughly save."
        ),
        example="lcm compact --session-key agent:main:main --manual --apply",
        param_help={
            "apply": "Really compact (dry run on an in-memory copy otherwise).",
        },
        render=_RECORDS,
        applies="compact",
        unscoped=HOST_LIFECYCLE,
    ),
    "context.assemble": OpSpec(
        "lcm_cli.engine.assembly.ops",
        _SELECTOR
        + (
            "session_id",
            "token_budget",
            "prompt",
            "messages",
            "available_tools",
            "model",
            "runtime_settings",
            "max_tokens",
        ),
        words=("context", "show"),
        summary="The context the model would see: summaries as XML, then the fresh tail, within a budget.",
        help=(
            "The assembled context exactly as the model would see it, with token totals.\n\n"
            "--max-tokens N prints only the newest messages that fit in N tokens (data.truncated "
            "says how many were left out); estimatedTokens stays the whole context's size."
        ),
        example="lcm context show --conversation-id 1 --token-budget 32000 --max-tokens 4000 --format table",
        param_help={
            "messages": (
                "The host's live messages: the fallback, a fork's live suffix, large tool outputs to stub."
            ),
        },
        render=_CONTEXT,
        cuts="messages",
        cuts_oldest=True,
    ),
    "session.maintain": OpSpec(
        "lcm_cli.engine.compaction.ops",
        _SELECTOR + ("session_id", "token_budget", "force"),
        words=("maintain",),
        writes=True,
        summary="Drain a conversation's deferred compaction debt (the host's maintain step).",
        help="Drain a conversation's deferred compaction debt now (the host's maintain step).",
        example="lcm maintain --session-key agent:main:main",
        render=_RECORDS,
        unscoped=HOST_LIFECYCLE,
    ),
    "rotate": OpSpec(
        "lcm_cli.engine.maintenance.rotate",
        _SELECTOR + ("apply", "backup", "session_file"),
        needs_selector=True,
        writes=True,
        summary=(
            "Cut a session's transcript to its preserved tail (dry run unless --apply); LCM keeps the rest."
        ),
        help=(
            "Rotate a session's transcript: keep the preserved tail and current settings, drop the "
            "rest.\n\n"
            "With --apply: import what the transcript has that lcm.db lacks, leaf-compact the raw "
            "messages outside the fresh tail, then replace the transcript "
            "atomically (the old file is kept as <path>.rotate-<stamp>.bak) and refresh the bootstrap "
            "checkpoint so nothing is replayed. Same conversation row, nothing lost. Everything it "
            "writes to lcm.db is kept in a change backup (--backup latest: the rolling rotate-latest "
            "copy, full: a timestamped copy). Ignored and stateless sessions, and sessions without LCM "
            "state, are refused."
        ),
        example="lcm rotate --session-key agent:main:main --apply --backup none",
        param_help={
            "apply": "Really rotate (dry run otherwise: nothing is written).",
            "backup": (
                "changes (default: the rows rotate changes, as they were), latest (the rolling "
                "rotate-latest copy the reference takes), full (a timestamped copy) or none."
            ),
            "session_file": "The session's transcript JSONL (default: the path its bootstrap checkpoint records).",
        },
        render=_RECORDS,
        applies="back up and rotate the transcript",
        unscoped=WHOLE_FILE,
    ),
    "prompts.list": OpSpec(
        _PROMPTS,
        opens_db=False,
        resolves_paths=False,
        summary="The summary prompt templates: builtin or overridden, and where.",
        help=(
            "Every template with its source (builtin or override), its path and its variables.\n\n"
            "Overrides live in $LCM_PROMPTS_DIR, else in the user config dir (lcm/prompts)."
        ),
        example="lcm prompts list --format table",
        render=Render(labels=(("items", "Templates"),)),
        items="items",
        unscoped=NO_HISTORY,
    ),
    "prompts.show": OpSpec(
        _PROMPTS,
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="The effective text of one prompt template.",
        help="The effective text of one template (the override when there is one).",
        example="lcm prompts show leaf",
        render=_prompt_text("text"),
        unscoped=NO_HISTORY,
    ),
    "prompts.export": OpSpec(
        _PROMPTS,
        ("out", "force"),
        opens_db=False,
        resolves_paths=False,
        summary="Copy the builtin templates into the override folder to edit them.",
        help=(
            "Copy the builtin templates into the override folder, ready to edit.\n\n"
            "Existing files are kept unless --force; every file is written atomically."
        ),
        example="lcm prompts export --out ./my-prompts",
        param_help={
            "out": "Write here instead of the override folder.",
            "force": "Overwrite templates that already exist.",
        },
        metavars={"out": "DIR"},
        outputs={"out": "directory"},
        unscoped=NO_HISTORY,
    ),
    "prompts.diff": OpSpec(
        _PROMPTS,
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="Unified diff of an override against the builtin template.",
        help="Unified diff of a template's override against the builtin (empty without an override).",
        example="lcm prompts diff condensed-d1",
        render=_prompt_text("diff"),
        unscoped=NO_HISTORY,
    ),
    "prompts.render": OpSpec(
        _PROMPTS,
        ("var", "source_file"),
        args=("name",),
        opens_db=False,
        resolves_paths=False,
        summary="Fill a prompt template with sample or given values.",
        help=(
            "Fill a template with sample values, or with --var and --source-file, as a model would see it."
        ),
        example="lcm prompts render leaf --var target_tokens=800 --var aggressive=true",
        render=_prompt_text("text"),
        unscoped=NO_HISTORY,
    ),
}


# The reference `lcm`'s commands (cli-contract.md §3; its `doctor` is a placeholder, ours is
# not bound by it): their options, grammar and JSON keep the reference's shape exactly.
REFERENCE_COMMANDS = frozenset(
    (
        "status",
        "conversations.list",
        "conversations.show",
        "messages.list",
        "messages.tail",
        "summaries.list",
        "summaries.show",
        "config.show",
        "config.get",
        "config.set",
    )
)


# Commands of the CLI door that are not operations: they read their own arguments
# (`lcm hook`, `lcm serve`) or describe the others (`lcm commands`).
DOOR_COMMANDS: dict[str, OpSpec] = {
    "hook": OpSpec(
        "lcm_cli.commands.hook",
        ("list",),
        args=("operation",),
        opens_db=False,
        help=(
            "Run one operation with JSON parameters from stdin; the envelope goes to stdout.\n\n"
            "Parameters are one JSON object keyed by field name (camelCase or snake_case); empty "
            'stdin means {}, e.g. {"sessionKey": "agent:main:main", "count": 5}. Errors go to '
            "stderr with the usual exit statuses."
        ),
        example="""echo '{"sessionKey": "agent:main:main", "count": 5}' | lcm hook messages.tail""",
    ),
    "serve": OpSpec(
        "lcm_cli.commands.serve",
        ("stdio", "socket", "max_request_bytes"),
        opens_db=False,
        help=(
            "Keep one warm engine process answering {id, method, params} requests.\n\n"
            "Answers are {id, result} (the same envelope as the command) or {id, error}. Server "
            "methods: health, reload, shutdown. Stops cleanly on EOF, shutdown or SIGTERM."
        ),
        example="lcm serve --stdio",
    ),
    "browse": OpSpec(
        "lcm_cli.commands.browse",
        ("conversation_id", "session_key", "screenshot", "force"),
        opens_db=False,
        interactive=True,
        help=(
            "Look around lcm.db in a terminal app: agents and conversations, messages, the summary "
            "DAG, the assembled context, large files and doctor.\n\n"
            "Read-only: every screen is read through the engine's read operations, each on its own "
            "short-lived read-only connection, so the app never holds a lock while you read. Press / "
            "to search, ? for the keys. Needs the browse extra: pip install 'lcm-cli[browse]'."
        ),
        example="lcm browse --session-key agent:main:main --screenshot browse.svg",
        param_help={
            "conversation_id": "Open this conversation first.",
            "session_key": "Open this session's conversation first (the active one wins).",
            "force": "Replace the file at --screenshot if there is one (atomically).",
        },
        outputs={"screenshot": "file"},
    ),
    "commands": OpSpec(
        "lcm_cli.commands.catalog",
        opens_db=False,
        help="Every command with its arguments and options (types, defaults, one-line help) as JSON.",
        example="lcm commands --pretty",
    ),
}

# Help of the command groups that only hold subcommands (`lcm conversations --help`).
# A group that runs itself (`lcm backup`, `lcm doctor`) is documented by its operation.
GROUPS: dict[str, str] = {
    "conversations": "List conversations or show one in detail.",
    "messages": "Page through a conversation's messages or read its fresh tail.",
    "summaries": (
        "Page through the summary DAG, show one summary, or operate on it: rewrite, dissolve, "
        "transplant, graph."
    ),
    "context": "The context the model sees.",
    "session": "A session's lifecycle: bootstrap from its transcript, /new, /reset, end.",
    "config": "Show, read or change the Lossless plugin config in openclaw.json.",
    "prompts": "Summary prompt templates (leaf, condensed-d1..d3, system): list, show, export, diff, render.",
}

# `lcm --help` in sections, each in the order a reader looks for it; a group's subcommands
# follow OPERATIONS.
COMMAND_SECTIONS: dict[str, tuple[str, ...]] = {
    "Core (read the history)": (
        "status",
        "conversations",
        "messages",
        "summaries",
        "context",
        "browse",
        "commands",
    ),
    "Recall (search and expand)": ("grep", "describe", "expand", "expand-query", "export", "tool"),
    "Maintenance (keep, check, repair)": (
        "migrate-sessions",
        "backup",
        "doctor",
        "prune",
        "vacuum",
        "compact",
        "maintain",
        "rotate",
        "config",
        "prompts",
        "control",
    ),
    "Engine doors (what the host calls each turn)": (
        "ingest",
        "after-turn",
        "commit-turn",
        "session",
        "hook",
        "serve",
    ),
}


class FollowUp(Record):
    """Work an operation leaves for after its answer: operation ``name`` called with ``params``.

    A warm door (`lcm serve`) runs it in the background, in the session's write queue; a
    cold door (the CLI, `lcm hook`, :func:`lcm_cli.engine.api.call`) leaves it undone, and
    the state that asked for it stays recorded (debt waits for the next ``session.maintain``).
    """

    name: str
    params: dict[str, Any]


class Result(Record):
    """What an operation returns: ``data``, for lists ``pagination``, and extra ``meta``.

    ``meta`` entries are added to the envelope's meta (e.g. which search back-end ran);
    ``streamed`` says the operation already wrote its document to the door's stream;
    ``exit_status`` is the status a successful call exits with (a report whose findings
    fail the run, as `lcm doctor --fail-on`); ``follow_ups`` is work for after the answer.
    """

    data: Any
    pagination: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    streamed: bool = False
    exit_status: int = 0
    follow_ups: tuple[FollowUp, ...] = ()


class Operation(Record):
    """A bound operation: its name, implementation and interface."""

    name: str
    func: Callable[..., Result]
    spec: OpSpec


_BOUND: dict[str, Operation] = {}


def operation(name: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Bind the decorated function as the implementation of operation ``name`` (declared in OPERATIONS)."""

    def bind(func: Callable[..., Result]) -> Callable[..., Result]:
        _BOUND[name] = Operation(name, func, OPERATIONS[name])
        return func

    return bind


def get_operation(name: str) -> Operation:
    """The operation called ``name`` (KeyError when there is none)."""
    if name not in _BOUND:
        importlib.import_module(OPERATIONS[name].module)
    return _BOUND[name]
