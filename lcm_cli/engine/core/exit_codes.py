"""Every error code: its exit status, when it happens and what to do next, declared once.

Exit statuses follow the reference `lcm` contract: 0 success, 1 internal failure,
2 invalid invocation, 3 something requested was not found, 4 config or backup
failures, 5 database open, query or lock failures. Every door applies :func:`exit_status`;
the error tables of docs/cli.md and skills/lcm/SKILL.md are generated from :data:`ERRORS`
(``scripts/gen_cli_docs.py``). Texts are Markdown.
"""

from __future__ import annotations

from lcm_cli.engine.core.record import Record


class ErrorCode(Record):
    """One error code: the exit status, when it is raised, and the reader's next step."""

    status: int
    when: str
    next_step: str


ERRORS: dict[str, ErrorCode] = {
    "INVALID_ARGUMENT": ErrorCode(
        2,
        "unknown option, missing option value, value given to a flag; bad number or range for `--limit`, `--count`, `--depth`, `--conversation-id`; bad `--format`, `--role` or `--kind`; an option the command does not take (`details: {option, command}`); a malformed `--fields`; `--all` on a command without a list",
        "try `details.suggestions` when there are some; else check the command's `--help` or `lcm commands` for its options and ranges",
    ),
    "INVALID_COMMAND": ErrorCode(
        2,
        "unknown command words (including a group named without its subcommand, such as `config` alone), or the wrong number of positional arguments",
        "try `details.suggestions` when there are some; else run `lcm --help`; `summaries show` takes one id, `config get` one path, `config set` a path and a value",
    ),
    "INVALID_SELECTOR": ErrorCode(
        2,
        "both `--conversation-id` and `--session-key` given",
        "keep one of them",
    ),
    "AGENT_REQUIRED": ErrorCode(
        2,
        "the database path holds `{agentId}` (one file per agent) and the call names no agent: no `--agent`, no `LCM_AGENT_ID`, no `agent:<id>:...` session key; or the agent id cannot name a file (`details: {databasePath}`)",
        "pass `--agent ID` (or set `LCM_AGENT_ID`) to say whose database to open",
    ),
    "MISSING_SELECTOR": ErrorCode(
        2,
        "`conversations show`, `messages list` or `messages tail` without a selector",
        "add `--conversation-id` or `--session-key`; find them with `lcm conversations list`",
    ),
    "INVALID_TIME_FILTER": ErrorCode(
        2,
        "malformed timestamp or duration, conflicting time options, or a lower bound not before the upper one",
        "use `2026-07-01T00:00:00Z`-style timestamps with a zone and `12h`/`7d` durations; lcm's own commands also take dates (`2026-07-01`); see [Time filters](#time-filters)",
    ),
    "INVALID_CURSOR": ErrorCode(
        2,
        "a cursor that does not decode, or belongs to another list",
        "pass `pagination.nextCursor` unchanged to the same command with the same arguments, or drop `--cursor` to start over",
    ),
    "FLEET_UNSUPPORTED": ErrorCode(
        2,
        "several databases (`--db` repeated or a glob, `--openclaw-dir` repeated) given to a command that reads one; or `--db` and `--openclaw-dir` both repeated; or `--cursor` with a fleet `status`/`doctor`, which answer per member (`details: {command, fleetCommands}`)",
        "give one `--db` or `--openclaw-dir`, or use a command of `details.fleetCommands`: `status`, `conversations list`, `grep`, `doctor`, `backup list`",
    ),
    "INVALID_PATTERN": ErrorCode(
        2,
        "`lcm grep PATTERN`: an empty pattern, a regex that does not compile or is over 500 characters, or regex syntax in `--mode full_text`; `details.acceptedBy` names the mode that would take it",
        "fix the pattern, or switch `--mode` as the message says",
    ),
    "NOT_A_TERMINAL": ErrorCode(
        2,
        "`lcm browse` without a terminal on stdin and stdout (a pipe, a script, an agent's tool call)",
        "run it in a terminal, or draw one screen with `--screenshot FILE.svg`; scripts and agents read the same data through the JSON commands",
    ),
    "INVALID_REQUEST": ErrorCode(
        2,
        '`lcm hook` stdin or an `lcm serve` line is not one JSON object, lacks `id`/`method`, or nests deeper than 200 levels (`details.reason: "too-deep"`)',
        'send one JSON object (`{}` for no parameters); for serve, `{"id", "method", "params"}` per line',
    ),
    "REQUEST_TOO_LARGE": ErrorCode(
        2,
        "hook input over `LCM_MAX_HOOK_BYTES` (64 MiB) or a serve line over `--max-request-bytes` / `LCM_SERVE_MAX_REQUEST_BYTES` (32 MiB)",
        "split big ingest batches into several requests",
    ),
    "INPUT_TOO_LARGE": ErrorCode(
        2,
        "stdin or `--file` of `ingest`, `after-turn` or `commit-turn` over `LCM_MAX_INPUT_BYTES` (64 MiB); at most that many bytes plus one are read, nothing is written (`details: {source, limitBytes, setting}`)",
        "split the batch, or raise `LCM_MAX_INPUT_BYTES`",
    ),
    "UNKNOWN_OPERATION": ErrorCode(
        2,
        "`lcm hook NAME` / a serve `method` that is not an operation",
        "list them with `lcm hook --list`",
    ),
    "INVALID_INPUT": ErrorCode(
        2,
        '`lcm ingest` input that is not messages: invalid UTF-8, bad JSON (the line is named), JSON nested deeper than 200 levels (`reason: "too-deep"`), a non-object, a missing role, a wrong-typed field; nothing is written',
        "fix the named line or field and send the whole batch again",
    ),
    "OUTPUT_REFUSED": ErrorCode(
        2,
        "a path lcm would write (`--out`, `--screenshot`, a file of `prompts export --out DIR`, that folder or a parent it would create) names the database, its `-wal`/`-shm`/`-journal`, the config file or a `*.manifest.json` (by any spelling or hard link), or is a symlink or not a regular file; `--force` does not override it, nothing is written (`details: {path, option, reason}`)",
        "choose another path; see [Files lcm writes](#files-lcm-writes-modes-temp-names-orphans)",
    ),
    "WRONG_BACKUP_KIND": ErrorCode(
        2,
        "`backup verify`/`backup restore` given a prune archive, or `prune restore` given a database backup or a change backup (`details: {path, kind, expected}`); nothing was changed",
        "use the command the message names: `lcm prune restore ARCHIVE` for a `*.prune-*.jsonl.gz` archive, `lcm backup restore FILE` for a `*.bak` copy or a `*.changes.jsonl.gz` change backup",
    ),
    "CONVERSATION_NOT_FOUND": ErrorCode(
        3,
        "the selector matched no conversation (`details` = the selector)",
        "list conversations with `lcm conversations list`; session keys match exactly",
    ),
    "SUMMARY_NOT_FOUND": ErrorCode(
        3,
        "`summaries show` with an unknown id (`details: {summaryId}`)",
        "copy a `summaryId` from `lcm summaries list`",
    ),
    "DATABASE_NOT_FOUND": ErrorCode(
        3,
        "the database path is missing or not a regular file (`details: {databasePath}`)",
        "check `meta.databasePath` of `lcm config show`; pass `--db` or `--openclaw-dir`, or set `LCM_DATABASE_PATH`",
    ),
    "CONFIG_NOT_FOUND": ErrorCode(
        3,
        "`config set` and the config file does not exist",
        "pass `--config` or `--openclaw-dir` pointing at the real `openclaw.json`; `lcm` never creates it",
    ),
    "CONFIG_KEY_NOT_FOUND": ErrorCode(
        3,
        "`config get` with a path that is neither stored nor an effective key",
        "see the keys with `lcm config show` or the [Config keys](#config-keys) table",
    ),
    "STATE_DIR_NOT_FOUND": ErrorCode(
        3,
        "`migrate-sessions` without `--file`/`--sessions-dir` and the state dir does not exist (`details: {stateDir}`)",
        "pass `--openclaw-dir`, or name transcripts with `--file` / `--sessions-dir`",
    ),
    "SESSIONS_DIR_NOT_FOUND": ErrorCode(
        3,
        "a `--sessions-dir` that is not a directory (`details: {sessionsDir}`)",
        "check the path",
    ),
    "BACKUP_NOT_FOUND": ErrorCode(
        3,
        "`backup verify` or `backup restore` of a file that does not exist",
        "list backups with `lcm backup list`",
    ),
    "TRANSCRIPT_UNREADABLE": ErrorCode(
        3,
        "a transcript is missing, unreadable or not a regular file; reported per file in `migrate-sessions` (`reason: unreadable-file`) and the batch goes on",
        "check the path and permissions",
    ),
    "ARCHIVE_NOT_FOUND": ErrorCode(
        3,
        "`prune restore` of a file that does not exist",
        "archives are written beside the database as `<db>.prune-<stamp>.jsonl.gz`",
    ),
    "FILE_NOT_FOUND": ErrorCode(
        3,
        "`lcm describe file_…` or `lcm grep PATTERN --scope files --file-id ID` names a large file that is not in `large_files`",
        "find ids with `lcm conversations show`",
    ),
    "NOT_IN_SCOPE": ErrorCode(
        3,
        "the summary or file exists but belongs to a conversation outside `--conversation-id` / `--session-key`",
        "widen the scope, or drop the selector",
    ),
    "SUMMARY_NOT_IN_CONTEXT": ErrorCode(
        3,
        "`summaries dissolve ID`: the summary is not one of its conversation's context items, so there is no condensation to undo (`details: {summaryId, conversationId}`)",
        "pick a summary that `lcm context show` lists; `lcm summaries graph` shows the DAG",
    ),
    "SUMMARY_NOT_CONDENSED": ErrorCode(
        2,
        "`summaries dissolve ID` with a leaf summary: only a condensed summary has summaries to give back (`details: {summaryId, kind, depth}`)",
        "dissolve the condensed summary that consumes it (its `parents` in `lcm summaries show ID`)",
    ),
    "TRANSPLANT_DUPLICATE": ErrorCode(
        2,
        "`summaries transplant`: the target already holds a summary with the same content (SHA-256) as one to be copied, so the DAG was transplanted before; nothing was written (`details: {duplicates}`)",
        "check the target with `lcm summaries list --conversation-id N`; dissolve or restore a backup before copying again",
    ),
    "GRAPHVIZ_NOT_FOUND": ErrorCode(
        3,
        "`summaries graph --to svg` and Graphviz's `dot` is not on PATH (or failed; `details: {program}`)",
        "install Graphviz, or use `--to dot` / `--to mermaid` and render the source elsewhere",
    ),
    "PROMPT_NOT_FOUND": ErrorCode(
        3,
        "a template name given to `lcm prompts show NAME` (or `diff`, `render`) that does not exist (`details: {name, known}`)",
        "use one of `system`, `leaf`, `condensed-d1`, `condensed-d2`, `condensed-d3` (`lcm prompts list`)",
    ),
    "CONTROL_UNAVAILABLE": ErrorCode(
        3,
        "`lcm control` for an operation this lcm cannot run (yet), an unknown one, or a refused rotate; `details.reasonCode` is the reference's (`unsupported_operation`, `session_key_unavailable`, `conversation_unavailable`, `session_id_unavailable`, `transcript_unavailable`, `summarization_unavailable`, `backup_failed`, `rotate_failed`, `unavailable`, …)",
        "use `lcm control capabilities` to see what is available",
    ),
    "INPUT_NOT_FOUND": ErrorCode(
        3,
        "`lcm ingest --file PATH` cannot read PATH",
        "check the path, or pipe the messages on stdin",
    ),
    "ROTATE_UNAVAILABLE": ErrorCode(
        3,
        "`lcm rotate` refused before rewriting anything: no active conversation, an ignored or stateless session, no stored messages, no transcript path or file, a transcript without a session header, a transcript not proven to be the conversation's (`transcript-not-owned`), a reconcile that could not be proven safe, or a summarizer that could not cover the raw messages outside the fresh tail (`details: {reasonCode, reason, …}`, `reasonCode` as in the control contract)",
        "read `details.reason`; see [docs/rotate.md](rotate.md#refusals) for each reason and its fix",
    ),
    "HOST_STORE_NOT_FOUND": ErrorCode(
        3,
        "`migrate-sessions --store PATH` names no regular file (`details: {store}`)",
        "check the path: `<state dir>/agents/<agentId>/agent/openclaw-agent.sqlite`",
    ),
    "EXTRA_NOT_INSTALLED": ErrorCode(
        3,
        "`lcm browse` where its optional dependency (Textual) is not installed",
        "install it with `pip install 'lcm-cli[browse]'`",
    ),
    "CONFIG_PARSE_FAILED": ErrorCode(
        4,
        "the config file is not strict JSON (comments, trailing commas, JSON5) or its root is not an object",
        "fix the file by hand; meanwhile `--config` with another file works",
    ),
    "CONFIG_SHAPE_INVALID": ErrorCode(
        4,
        "`plugins`, `plugins.entries`, the `lossless-claw` entry, its `config`, or an object on the `config set` path exists but is not an object (`details: {configPath, key}`)",
        "fix that key in the file by hand",
    ),
    "CONFIG_VALIDATION_FAILED": ErrorCode(
        4,
        "the stored plugin config fails validation on read; `config set` with a malformed dot path, an unknown key, a value that is not JSON, or a value or resulting config that breaks the schema (`details.errors` lists up to 20 `{path, message}`)",
        "read `details.errors`; check the key in [Config keys](#config-keys); quote JSON strings (`'\"text\"'`)",
    ),
    "CONFIG_INCLUDE_UNSUPPORTED": ErrorCode(
        4,
        "`config set` on a file with `$include` at the root, `plugins`, `plugins.entries`, the entry or its config (`details.includePath` says where)",
        "edit the included file by hand; `lcm` does not follow includes",
    ),
    "CONFIG_SYMLINK_UNSUPPORTED": ErrorCode(
        4,
        "`config set` on a config path that is a symlink",
        "pass `--config` with the symlink's target",
    ),
    "CONFIG_BACKUP_FAILED": ErrorCode(
        4,
        "the exclusive backup copy could not be made (permissions, disk full, a backup with the same stamp exists); nothing was changed",
        "fix permissions or space, then retry",
    ),
    "CONFIG_WRITE_FAILED": ErrorCode(
        4,
        "writing, syncing or renaming the new file failed; the original is unchanged, the temporary file is removed, the backup stays",
        "fix permissions or space, then retry",
    ),
    "CONFIG_SCHEMA_NOT_FOUND": ErrorCode(
        4,
        "kept for compatibility: the reference raises it when its packaged plugin manifest is missing; `lcm` builds the schema from its own key table",
        "report it as a bug",
    ),
    "CONFIG_SCHEMA_INVALID": ErrorCode(
        4,
        "kept for compatibility: the reference raises it when its plugin manifest has no `configSchema`",
        "report it as a bug",
    ),
    "BACKUP_TARGET_EXISTS": ErrorCode(
        4,
        "`backup --out` names a file that exists (it is left unchanged)",
        "choose another path or omit `--out`",
    ),
    "BACKUP_TARGET_UNWRITABLE": ErrorCode(
        4,
        "the backup directory is missing, not a directory, or refuses writes",
        "pass `--out` in a writable directory",
    ),
    "BACKUP_NO_SPACE": ErrorCode(
        4,
        "not enough free space for the copy, checked first, or the disk filled while copying (no partial file is left)",
        "free space or pass `--out` on another disk",
    ),
    "BACKUP_FAILED": ErrorCode(
        4,
        "the copy or its integrity check failed (partial file removed)",
        "check the source with `PRAGMA integrity_check`; retry",
    ),
    "BACKUP_VERIFY_FAILED": ErrorCode(
        4,
        "`backup verify` found a mismatch with the manifest, or `restore --apply` was given such a backup (`details` has the checks); a change backup that is truncated or altered (gzip, header, content sha256 or counts of its trailer, its manifest: `details.reason`)",
        "do not restore it; take a new backup",
    ),
    "TRANSCRIPT_CHANGED": ErrorCode(
        4,
        "a transcript was replaced or rewritten while it was being imported (that file's transaction is rolled back and reported), or changed while `lcm rotate --apply` was rewriting it (nothing was rewritten)",
        "run `migrate-sessions --apply` (or `lcm rotate --apply`) again",
    ),
    "ROTATE_FAILED": ErrorCode(
        4,
        "`lcm rotate --apply` could not name the kept copy of the old transcript (`<path>.rotate-<stamp>.bak`); nothing was rewritten",
        "retry; clear old `.rotate-*.bak` files beside the transcript if there are many",
    ),
    "ARCHIVE_CORRUPT": ErrorCode(
        4,
        "a prune archive failed verification (gzip CRC, content sha256 in its trailer, row counts, or the manifest's file sha256); nothing was deleted or restored",
        "do not use it; `lcm prune` writes a new archive each run",
    ),
    "STATE_CHANGED": ErrorCode(
        4,
        "what a repair or prune planned changed before its transaction (a live writer got there first); that unit is rolled back, others stand",
        "run the command again",
    ),
    "RESTORE_CONFLICT": ErrorCode(
        4,
        "`backup restore --apply` of a change backup found rows changed since the backup (another writer changed or deleted them, or added rows that reference a row to remove); they are never overwritten, and without `--force` nothing was restored (`details: {conflictCount, conflicts: [{table, rowid, reason}], tables}`)",
        "look at the conflicts in the dry run; pass `--force` to restore every other row (the skipped ones are listed), or restore a full backup",
    ),
    "BACKUP_WRONG_DATABASE": ErrorCode(
        4,
        "`backup restore` or `backup verify` of a change backup taken of another database (its identity differs; `details: {backupPath, databasePath, backupDatabasePath}`); nothing was changed",
        "pass the database it was taken of with `--db` (`details.backupDatabasePath`)",
    ),
    "TURN_ADVANCEMENT_CONFLICT": ErrorCode(
        4,
        "`commit-turn` got an advancement key already committed with a different turn (`details: {advancementKey}`); nothing was written",
        "the host must send a new key for a new turn; a true retry (same payload) answers `duplicate`",
    ),
    "OUTPUT_EXISTS": ErrorCode(
        4,
        "`summaries graph --out` or `browse --screenshot` names a file that exists (it is left unchanged; `details: {path, option}`)",
        "pass `--force` to replace it, or choose another path",
    ),
    "EXPORT_TARGET_EXISTS": ErrorCode(
        4,
        "`lcm export --out PATH` where PATH already exists (never overwritten)",
        "choose another path or remove the file",
    ),
    "EXPORT_WRITE_FAILED": ErrorCode(
        4,
        "the file of `export --out`, `summaries graph --out` or `browse --screenshot` could not be written (missing directory, permissions, full disk); the temp file is removed",
        "fix the directory, then run again",
    ),
    "PROMPT_UNREADABLE": ErrorCode(
        4,
        "a prompt override file exists but cannot be read or is not UTF-8 (`details: {path}`)",
        "fix or delete the file; `lcm prompts diff NAME` compares it with the builtin",
    ),
    "PROMPT_WRITE_FAILED": ErrorCode(
        4,
        "`prompts export` could not create the folder or write a template (`details: {dir, written}`); files already written are complete",
        "fix permissions or pass `--out` with a writable folder",
    ),
    "DATABASE_OPEN_FAILED": ErrorCode(
        5,
        "the file cannot be read, does not start with the SQLite header, or SQLite refuses to open it (damage found while reading is `DATABASE_CORRUPT`)",
        "check `--db` / `LCM_DATABASE_PATH` points at `lcm.db`; run `PRAGMA integrity_check` on a copy",
    ),
    "HOST_STORE_UNREADABLE": ErrorCode(
        5,
        "an OpenClaw session store cannot be opened read-only, is not an SQLite database, has no `transcript_events` table, or stayed locked past the busy timeout (`details: {store}`); with `--store` the command fails, a store found in the state dir is reported per file (`reason: unreadable-store`) and the batch goes on",
        "check permissions; make sure the path is the host's `openclaw-agent.sqlite`",
    ),
    "DATABASE_BUSY": ErrorCode(
        5,
        "another process kept the database locked for longer than `LCM_BUSY_TIMEOUT_MS` (`details: {databasePath, waitedMs}`)",
        "retry shortly, or raise `LCM_BUSY_TIMEOUT_MS`",
    ),
    "DATABASE_IN_USE": ErrorCode(
        5,
        "`backup restore --apply` or `vacuum --full --apply` while another process (the agent host, `lcm serve`) has the database open",
        "stop the agent host first; `backup restore` also takes `--force` (restart the host afterwards)",
    ),
    "REPLICATION_ACTIVE": ErrorCode(
        5,
        "`backup restore --apply` (even with `--force`) or `vacuum --full --apply` while Litestream's state is beside the database (`.lcm.db-litestream/`) and another process has the file open: replacing or rewriting the file outside the WAL under a running `litestream replicate` would leave its LTX files describing the old file (`details: {databasePath, stateDir, localTxid, holderPid, holderName}`)",
        "stop the agent host and `litestream replicate`, run the command again, then start `litestream replicate` again (it writes the whole database as new LTX files); check with `litestream restore -o /tmp/check.db <replica>` and `lcm doctor --check storage.replication` (docs/replication.md)",
    ),
    "DATABASE_REPLACED": ErrorCode(
        5,
        "a write found that `lcm.db` or its `-wal` at the database path is no longer the file lcm has open: another process replaced, moved or deleted it (`details: {databasePath, file}`); a write that had not started is rolled back, one that had committed is reported failed, never acknowledged",
        "retry: lcm reopens the file at the path on the next call (the agent host retries a turn by itself); find what replaced the file (a restore with `--force`, a copy over it, a cleanup of `-wal` files)",
    ),
    "DATABASE_QUERY_FAILED": ErrorCode(
        5,
        "any other SQLite error while querying; `details.reason` says which case: `not-lcm-database` (an SQLite file without lcm's tables), `not-sqlite` (not an SQLite file), `read-only` (the file, its folder or the file system refuses a write), `sqlite-error` (anything else)",
        "`not-lcm-database`/`not-sqlite`: point `--db` or `--openclaw-dir` at the agent's `lcm.db`; `read-only`: make the file and its folder writable, or use a read-only command; `sqlite-error`: rerun with `LCM_DEBUG=1` and report it with the database's lossless-claw version",
    ),
    "DATABASE_CORRUPT": ErrorCode(
        5,
        "SQLite says the file is damaged while reading it: a malformed schema (one bad byte in `sqlite_master` is enough), a malformed page, or a header that is no longer a database's (`details: {databasePath, sqliteError}`); `lcm doctor` reports it as a `storage.quick-check` FAIL instead of failing",
        "run `lcm doctor` to see what it can still read; `lcm backup list`, then `lcm backup restore PATH --apply` with a backup taken before the damage",
    ),
    "SUMMARY_GRAPH_DAMAGED": ErrorCode(
        5,
        "`summaries transplant`, `dissolve` or `rewrite`: the part of the summary graph it would touch has a cycle, a link into another conversation, a link to a summary or message that does not exist, or a summary without sources; nothing was written (`details: {command, problemCount, problems: [{summaryId, reason, other}], checks}`)",
        "run `lcm doctor --check dag` to see the damage (`details.checks` names the checks), then restore a backup taken before it (`lcm backup list`, `lcm backup restore PATH --apply`)",
    ),
    "SERVE_SOCKET_IN_USE": ErrorCode(
        5,
        "another `lcm serve` owns the `--socket` path, or the path is not a socket",
        "stop the other server or choose another path",
    ),
    "SERVE_SOCKET_FAILED": ErrorCode(
        5,
        "the socket could not be created (directory missing or not writable, path too long)",
        "pick a writable directory and a short path",
    ),
    "SUMMARIZER_FAILED": ErrorCode(
        1,
        "the summarizer failed during `compact --apply` or `maintain`; the failed pass wrote nothing, earlier passes are kept (`details` = the compaction result)",
        "check the summarizer settings with `lcm config show` and retry",
    ),
    "SERVER_STOPPING": ErrorCode(
        1,
        "`lcm serve` only: the server was stopped (SIGTERM, `shutdown`) while this request waited or ran; a read is abandoned after 1 s, a write after `LCM_SERVE_GRACE_MS` (it rolled back)",
        "send the request again to the next server",
    ),
    "INTERNAL_ERROR": ErrorCode(
        1,
        "an unexpected exception (exit 130 when interrupted)",
        "rerun with `LCM_DEBUG=1` for the traceback and report it",
    ),
}

EXIT_STATUS: dict[str, int] = {code: error.status for code, error in ERRORS.items()}

#: The exit status of a check that found problems; the report is on stdout as usual.
FINDINGS_EXIT_STATUS = 6

#: Every exit status `lcm` uses and what it means (the tables of docs/cli.md and SKILL.md).
EXIT_STATUSES: dict[int, str] = {
    0: "success (also for `--help`, `--version` and `lcm` with no arguments)",
    1: "unexpected internal failure (`INTERNAL_ERROR`); or a report on stdout whose work partly failed: `migrate-sessions` with a file it could not read or import (`errorFiles` > 0), `summaries rewrite` with a summary it could not rewrite",
    2: "the invocation is wrong: command, option, selector, time filter or cursor",
    3: "something asked for does not exist: database, config file, config key, conversation, summary",
    4: "the config file cannot be read, validated, backed up or written; a backup or archive failed",
    5: "the database cannot be opened, queried or written (the error's `details.reason` says why)",
    FINDINGS_EXIT_STATUS: "a check found problems, with the report on stdout as usual: `lcm doctor` at or above `--fail-on` (default `warn`), `migrate-sessions --verify` that found transcript entries missing from the database",
    130: "interrupted (Ctrl-C); the error object says `INTERNAL_ERROR`",
}


def exit_status(code: str) -> int:
    """Exit status for an error code; unknown codes are internal failures (1)."""
    return EXIT_STATUS.get(code, 1)
