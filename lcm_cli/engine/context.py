"""The open context an operation runs in: resolved paths, config, and a lazy database."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.config import paths as path_rules
from lcm_cli.engine.config.file import plugin_config_of, read_config_root
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.connection import busy_timeout_ms, open_read_only_access, translate_database_failure
from lcm_cli.engine.db.probe import SchemaProbe

if TYPE_CHECKING:  # pydantic stays off the cold path
    from typing import Any, TextIO

    from lcm_cli.engine.config.model import SettingsBase
    from lcm_cli.engine.config.view import EngineSettings
    from lcm_cli.engine.db.store import Store


class Context:
    """Paths, effective config and a read-only handle, each resolved on first use."""

    def __init__(
        self,
        *,
        db: str | None = None,
        config: str | None = None,
        openclaw_dir: str | None = None,
        env: Mapping[str, str] | None = None,
        agent: str | None = None,
    ) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self._flags = (db, config, openclaw_dir)
        #: The caller's agent (`--agent`, else LCM_AGENT_ID): whose history a scoped read sees.
        self.agent = agent if agent is not None else (self.env.get("LCM_AGENT_ID") or None)
        #: Set by the door per operation: the operation reads history, so the agent scope applies.
        self.scoped_reads = False
        #: The session key the host named for a recall tool call (its caller), when there is one.
        self.caller_session_key: str | None = None
        #: The agent of the session key a request names: whose file a per-agent path opens
        #: when no `--agent` is given (set by the door, see :meth:`route_to`).
        self.session_agent: str | None = None
        self.file_agent: str | None = None
        self._visibility_dirty = True
        self._scoped_conn = False  # the read connection carries the scope's views
        self.state_dir = ""
        self.config_path = ""
        self.database_path = ""
        self.config_root: dict[str, Any] | None = None
        self.plugin_config: dict[str, Any] = {}
        self._effective: dict[str, Any] | None = None
        #: Values of the config in use that `config set` would refuse (see :meth:`meta`).
        self.config_problems: list[dict[str, Any]] = []
        self._settings: SettingsBase | None = None
        self._conn: sqlite3.Connection | None = None
        self._conn_identity: tuple[int, int] | None = None
        # Set when the database could only be read through SQLite's immutable URI.
        self.database_access: dict[str, str] | None = None
        self._store: Store | None = None
        self._probe: SchemaProbe | None = None
        self.timeout_ms = busy_timeout_ms(dict(self.env))
        self.paths_resolved = False
        # Long operations report (stage, done, total) here; a door may show a progress bar.
        self.progress: Callable[[str, int, int], None] | None = None
        # Where a document-producing operation may stream its output (set by the CLI door).
        self.stream: TextIO | None = None
        # What the CLI door read from its stdin for an operation that takes messages as
        # text (`lcm ingest < turn.jsonl`); None through hook, serve and Python, whose
        # messages are a parameter. Operations never read the process's stdin themselves.
        self.stdin: bytes | None = None

    def resolve_paths(self, *, read_config: bool = True) -> None:
        """Resolve state dir and config path, read the config, then the database path.

        ``read_config=False`` is for `config set`, which reads and checks the file in its
        own order and then calls :meth:`resolve_database_path` with the rewritten config.
        """
        _, config_flag, dir_flag = self._flags
        self.state_dir = path_rules.resolve_state_dir(dir_flag, self.env)
        self.config_path = path_rules.resolve_config_path(config_flag, self.env, self.state_dir)
        if read_config:
            self.config_root = read_config_root(self.config_path)
            self.plugin_config = plugin_config_of(self.config_root, self.config_path)
        if read_config and self.config_root is not None:
            from lcm_cli.engine.config.resolve import validate_runtime

            try:
                validate_runtime(self.plugin_config)
            except LcmError as exc:
                raise LcmError(exc.code, exc.message, {"configPath": self.config_path}) from None
        self.resolve_database_path()
        self.paths_resolved = read_config

    def resolve_database_path(self) -> None:
        """Resolve the database path against the current plugin config.

        A path holding ``{agentId}`` is filled in with the caller's agent (``--agent``,
        LCM_AGENT_ID, else the agent of the request's session key); with none it stays as
        it is, and opening it asks for one (AGENT_REQUIRED). When the path changes (a warm
        context serving another agent), the handles on the previous file are closed.
        """
        agent = self.agent or self.session_agent
        if agent is not None and not path_rules.safe_agent_id(agent):
            agent = None
        path = path_rules.resolve_database_path(
            self._flags[0], self.env, self.plugin_config, self.state_dir, agent
        )
        if path != self.database_path and self.database_path:
            self.close()
        self.database_path = path
        #: The agent whose own file the path names (a per-agent path filled in), else None.
        self.file_agent = (
            agent
            if agent is not None
            and path_rules.is_per_agent(
                path_rules.resolve_database_path(self._flags[0], self.env, self.plugin_config, self.state_dir)
            )
            else None
        )

    def route_to(self, session_key: str | None) -> None:
        """Note the request's session key: a per-agent database path opens its agent's file."""
        from lcm_cli.engine.core.session_keys import agent_id_of

        self.session_agent = agent_id_of(session_key)

    def require_one_file(self) -> None:
        """AGENT_REQUIRED when the database path still names every agent's file at once."""
        if path_rules.is_per_agent(self.database_path):
            raise LcmError(
                "AGENT_REQUIRED",
                f"The database path {self.database_path} holds {{agentId}}: one file per agent. Pass "
                "--agent ID (or set LCM_AGENT_ID) to say whose database to open.",
                {"databasePath": self.database_path},
            )

    def protected_files(self) -> list[tuple[str, str]]:
        """The files no output may name (:func:`~lcm_cli.engine.core.outputs.protected_files`).

        An operation that resolves no paths (`prompts export`) still gets them: resolved
        here, a config that cannot be read counting as one without a ``dbPath``.
        """
        from lcm_cli.engine.core.outputs import protected_files

        if self.database_path:
            return protected_files(self.database_path, self.config_path)
        db_flag, config_flag, dir_flag = self._flags
        state_dir = path_rules.resolve_state_dir(dir_flag, self.env)
        config = path_rules.resolve_config_path(config_flag, self.env, state_dir)
        try:
            plugin = plugin_config_of(read_config_root(config), config)
        except LcmError:
            plugin = {}
        return protected_files(path_rules.resolve_database_path(db_flag, self.env, plugin, state_dir), config)

    def warm_copy(self) -> Context:
        """A new context sharing this one's resolved paths and config, with its own connections.

        `lcm serve` resolves config once per generation and hands each worker thread a
        copy (SQLite connections belong to the thread that opened them).
        """
        db, config, openclaw_dir = self._flags
        twin = Context(db=db, config=config, openclaw_dir=openclaw_dir, env=self.env, agent=self.agent)
        twin.state_dir, twin.config_path, twin.database_path = (
            self.state_dir,
            self.config_path,
            self.database_path,
        )
        twin.config_root, twin.plugin_config = self.config_root, self.plugin_config
        # Typed settings, once the template has built them, are shared by every copy.
        twin._settings = self._settings
        twin._effective = self._effective
        twin.config_problems = self.config_problems
        twin.paths_resolved = self.paths_resolved
        return twin

    def for_agent(self, agent: str) -> Context:
        """A context like this one for ``agent``: a per-agent database path names its own file.

        Its paths and config are resolved; the caller closes it.
        """
        db, config, openclaw_dir = self._flags
        other = Context(db=db, config=config, openclaw_dir=openclaw_dir, env=self.env, agent=agent)
        other.progress = self.progress
        other.resolve_paths()
        return other

    def meta(self) -> dict[str, Any]:
        """``{databasePath, configPath}`` for the envelope (and ``databaseAccess`` when immutable)."""
        meta: dict[str, Any] = {"databasePath": self.database_path, "configPath": self.config_path}
        if self.database_access is not None:
            meta["databaseAccess"] = dict(self.database_access)
        if self.config_problems:
            # Values the runtime coerces, clamps or falls through: said, never fatal.
            meta["configProblems"] = list(self.config_problems)
        if self._store is not None and self._store.totals_rebuilt:
            # Said once: a warm `lcm serve` keeps its store open across requests.
            meta["totals"] = {"rebuilt": True, "reason": self._store.totals_rebuilt}
            self._store.totals_rebuilt = None
        return meta

    @property
    def effective(self) -> dict[str, Any]:
        """The effective Lossless config (environment > plugin config > defaults).

        Resolved from the key table without pydantic, so a one-shot read stays fast; a
        context that already built :attr:`settings` uses their JSON form (the same dict).
        """
        if self._effective is None:
            from lcm_cli.engine.config.resolve import resolve_effective

            self._effective = resolve_effective(self.plugin_config, self.env, self.state_dir)
            self._note_config_problems()
        return self._effective

    @property
    def engine_settings(self) -> EngineSettings:
        """The keys the engine reads, typed (:mod:`lcm_cli.engine.config.view`): a view of
        :attr:`effective` (resolved once, on the first read of one of its keys) and of lcm's
        own keys in the current plugin config and environment. Cheap: a new view each time,
        so one taken before the config is read never goes stale."""
        from lcm_cli.engine.config.view import EngineSettings

        return EngineSettings(load=lambda: self.effective, plugin_config=self.plugin_config, env=self.env)

    @property
    def settings(self) -> SettingsBase:
        """The effective config as typed pydantic-settings (``LcmSettings``), built once.

        Costs pydantic-settings and the generated model on first use, so it is for the
        paths that pay that once: a warm `lcm serve` (its template context builds them, see
        :meth:`warm_copy`) and Python callers that keep a context. Notes a config's
        problems in :attr:`config_problems` exactly as :attr:`effective` does.
        """
        if self._settings is None:
            from lcm_cli.engine.config.model import load_settings

            self._settings = load_settings(self.plugin_config, self.env, self.state_dir)
            if self._effective is None:
                self._effective = self._settings.to_effective_dict()
                self._note_config_problems()
        return self._settings

    def _note_config_problems(self) -> None:
        """Note the values `config set` would refuse, each with the value in use.

        They are used as the runtime uses them (coerced, clamped or fallen through to the
        default) and reported in ``meta.configProblems``: a hand-written config never stops
        a read, the importer or an engine door.
        """
        from lcm_cli.engine.config.resolve import MISSING, effective_value
        from lcm_cli.engine.config.schema import config_problems
        from lcm_cli.engine.core.redact import redact_value

        problems = config_problems(self.plugin_config, self.env)
        for problem in problems:
            used = effective_value(self._effective or {}, problem["key"])
            problem["used"] = None if used is MISSING else redact_value(used)
        self.config_problems = problems

    @property
    def db(self) -> sqlite3.Connection:
        """The read-only connection, opened on first use, seeing what the agent scope allows."""
        if self._conn is None:
            self.require_one_file()
            self._conn, self.database_access = open_read_only_access(
                self.database_path, timeout_ms=self.timeout_ms
            )
            self._conn_identity = _identity(self.database_path)
            self._conn.row_factory = sqlite3.Row
            self._visibility_dirty = True
        if self._visibility_dirty:
            self._visibility_dirty = False
            limits = self.boundaries()
            if limits is not None or self._scoped_conn:
                from lcm_cli.engine.db import visibility

                visibility.install(self._conn, limits)
                self._scoped_conn = limits is not None
                self._probe = None
        return self._conn

    def rescope(self, *, scoped_reads: bool, caller_session_key: str | None = None) -> None:
        """Say what the next operation is: whether it reads history under the agent scope,
        and the session key the host named as its caller (recall tools). The visible set is
        computed again on the next query, so a warm context sees conversations created since."""
        self.scoped_reads = scoped_reads
        self.caller_session_key = caller_session_key
        self._visibility_dirty = True

    @property
    def agent_scope(self) -> str:
        """The ``agentScope`` policy in force (``unrestricted`` unless configured).

        A value that is not a policy is refused, not read as ``unrestricted``: a typo must
        not open every agent's history.
        """
        try:
            return self.engine_settings.agent_scope
        except LcmError as exc:
            raise LcmError(
                exc.code, exc.message, {**(exc.details or {}), "configPath": self.config_path}
            ) from None

    def boundaries(self) -> list[Any] | None:
        """The limits on what this call may read, or None when it may read every conversation.

        None unless the policy is ``agent`` or ``session-family`` and the operation reads
        history. The CLI's identity is ``--agent``/LCM_AGENT_ID (none: every conversation,
        an operator's view); a recall tool's is the session key the host named, and a
        call with none sees nothing. Both present: what both allow.
        """
        if not self.scoped_reads or (not self.agent and self.caller_session_key is None):
            return None
        policy = self.agent_scope
        if policy == "unrestricted":
            return None
        from lcm_cli.engine.core.session_keys import agent_id_of
        from lcm_cli.engine.db.visibility import Boundary

        limits: list[Any] = []
        if self.agent:
            limits.append(Boundary("agent", self.agent))
        key = self.caller_session_key
        if key is not None:
            if not key:
                limits.append(Boundary("nothing"))
            elif policy == "session-family":
                limits.append(Boundary("family", key))
            else:
                caller = agent_id_of(key)
                limits.append(Boundary("agent", caller) if caller else Boundary("family", key))
        return limits or None

    @property
    def probe(self) -> SchemaProbe:
        """What tables and columns this database has (no indexes on a scoped connection: its
        history tables are views)."""
        conn = self.db
        if self._probe is None:
            self._probe = SchemaProbe(conn, indexes=not self._scoped_conn)
        return self._probe

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[sqlite3.Row]:
        """Run one read query; SQLite failures become structured errors."""
        try:
            return self.db.execute(sql, params).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            translated = translate_database_failure(exc, self.database_path, self.timeout_ms)
            if translated is None:
                raise
            raise translated from None

    def query_one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> sqlite3.Row | None:
        """The first row of a read query, or None."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def report_progress(self, stage: str, done: int, total: int) -> None:
        """Tell the door how far a long operation has come (no-op without a listener)."""
        if self.progress is not None:
            self.progress(stage, done, total)

    def store(self) -> Store:
        """The write store on this context's database, opened (created, migrated) on first use.

        It lives as long as the context: one call for a CLI command, the whole process for
        a warm `lcm serve` worker, so repeated writes skip the open and migration check.
        """
        if self._store is not None and self._store.replaced:
            self._close_store()  # its last commit found the file replaced: open the new one
        if self._store is None:
            from lcm_cli.engine.db.store import Store

            self.require_one_file()
            try:
                store = Store.open(self.database_path)
            except OSError as exc:  # (sqlite3 errors reach the door, which maps busy/locked)
                raise LcmError(
                    "DATABASE_OPEN_FAILED",
                    f"Cannot open {self.database_path} for writing ({exc}). Check that the directory is writable.",
                    {"databasePath": self.database_path},
                ) from None
            store.conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_ms)}")
            self._store = store
        return self._store

    def drop_replaced(self) -> None:
        """Close the handles whose file is no longer the one at the database path.

        A warm context (`lcm serve`) calls it before each request, so a database that
        another process replaced (a restore, a copy over it) is reopened, not written
        through a handle on the unlinked file.
        """
        if self._store is not None and not self._store.still_current():
            self._close_store()
        if self._conn is not None and self._conn_identity != _identity(self.database_path):
            self._conn.close()
            self._conn, self._probe, self._scoped_conn = None, None, False

    def _close_store(self) -> None:
        store, self._store = self._store, None
        if store is None:
            return
        try:
            store.close()
        except sqlite3.Error:
            pass  # a handle on a replaced file: nothing of it is kept

    def close(self) -> None:
        """Close the database handles that were opened."""
        if self._conn is not None:
            self._conn.close()
            self._conn, self._scoped_conn = None, False
        if self._store is not None:
            self._store.close()
            self._store = None


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)
