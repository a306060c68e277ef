"""The config as the engine reads it: one typed attribute per key, bound to the key table.

:class:`EngineSettings` wraps an effective config the resolver already built (it never
resolves again) and names each key the engine reads once, as a descriptor:
``fresh_tail_count = Setting[float]("freshTailCount")``. The descriptor checks, when the
class is created, that its path is a field of the effective config
(:data:`~lcm_cli.engine.config.keys.EFFECTIVE_KEY_ORDER`) or, for an :class:`LcmSetting`,
a row of :data:`~lcm_cli.engine.config.keys.LCM_KEYS`: a misspelt path fails at import.
Outside :mod:`lcm_cli.engine.config`, engine code reads the config only through here.

Values are what the resolver gives, unchanged: numbers are JavaScript numbers (an ``int``,
or a ``float`` from a plugin config such as ``3.5``), annotated ``float``, which admits
both; each reader keeps its own rounding. A key with no default reads as None when unset.

Standard library only, and nothing evaluated but the table lookups: the JSON read
commands import this module (``status`` reads the fresh tail through it).
"""

from __future__ import annotations

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.config.keys import EFFECTIVE_KEY_ORDER, LCM_KEYS, declared_default

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Generic, TypeVar, overload

    from lcm_cli.engine.db.sessions import SessionPolicy

    T = TypeVar("T")
else:

    class Generic:
        """At run time a setting needs no type parameter: ``Generic[T]`` is this empty base."""

        __slots__ = ()

        def __class_getitem__(cls, _parameter: object) -> type:
            return cls

    T = None


class UnknownSettingError(LookupError):
    """A view attribute names a path the key table does not have."""


class Setting(Generic[T]):
    """A field of lossless-claw's effective config (``CONFIG_KEYS``), read as resolved."""

    __slots__ = ("path", "_segments")

    def __init__(self, path: str) -> None:
        self.path = path
        self._segments = tuple(path.split("."))

    def __set_name__(self, owner: type, name: str) -> None:
        if self.path not in EFFECTIVE_KEY_ORDER:
            raise UnknownSettingError(
                f"{owner.__name__}.{name} reads {self.path!r}, which is no field of the effective "
                "config (keys.EFFECTIVE_KEY_ORDER); check its spelling in keys.py."
            )

    @property
    def default(self) -> Any:
        """The default the key table declares for this path (a value, ``UNSET`` or a ``Derived``)."""
        return declared_default(self.path)

    if TYPE_CHECKING:

        @overload
        def __get__(self, view: None, owner: type) -> Setting[T]: ...

        @overload
        def __get__(self, view: EngineSettings, owner: type) -> T: ...

    def __get__(self, view: EngineSettings | None, owner: type) -> Any:
        if view is None:
            return self
        head, *rest = self._segments
        value = view.effective.get(head)
        for segment in rest:
            value = value.get(segment) if isinstance(value, dict) else None
        return value


class LcmSetting(Generic[T]):
    """One of lcm's own keys (``LCM_KEYS``): environment > plugin config > default.

    ``strict``: a value that is set but unusable is refused instead of falling back
    (:func:`~lcm_cli.engine.config.resolve.lcm_setting`).
    """

    __slots__ = ("path", "strict")

    def __init__(self, path: str, *, strict: bool = False) -> None:
        self.path = path
        self.strict = strict

    def __set_name__(self, owner: type, name: str) -> None:
        if not any(key.path == self.path for key in LCM_KEYS):
            raise UnknownSettingError(
                f"{owner.__name__}.{name} reads {self.path!r}, which is no row of keys.LCM_KEYS; "
                "check its spelling in keys.py."
            )

    if TYPE_CHECKING:

        @overload
        def __get__(self, view: None, owner: type) -> LcmSetting[T]: ...

        @overload
        def __get__(self, view: EngineSettings, owner: type) -> T: ...

    def __get__(self, view: EngineSettings | None, owner: type) -> Any:
        if view is None:
            return self
        return view.lcm_value(self.path, strict=self.strict)


class EngineSettings:
    """The keys the engine reads, typed; a view of one resolved effective config."""

    __slots__ = ("_effective", "_load", "_plugin_config", "_env")

    # ---- storage, sessions, lifecycle ----------------------------------------------
    large_files_dir = Setting[str]("largeFilesDir")
    ignore_session_patterns = Setting[list[str]]("ignoreSessionPatterns")
    stateless_session_patterns = Setting[list[str]]("statelessSessionPatterns")
    skip_stateless_sessions = Setting[bool]("skipStatelessSessions")
    new_session_retain_depth = Setting[float]("newSessionRetainDepth")
    timezone = Setting[str]("timezone")
    prune_heartbeat_ok = Setting[bool]("pruneHeartbeatOk")
    enable_summary_thinking = Setting[bool]("enableSummaryThinking")
    proactive_threshold_compaction_mode = Setting[str]("proactiveThresholdCompactionMode")
    stub_large_tool_payloads = Setting[bool]("stubLargeToolPayloads")
    prompt_aware_eviction = Setting[bool]("promptAwareEviction")
    # ---- compaction and sizing -------------------------------------------------------
    context_threshold = Setting[float]("contextThreshold")
    #: The normalized rules (resolve.normalize_threshold_overrides), as JSON objects.
    context_threshold_overrides = Setting["list[dict[str, Any]]"]("contextThresholdOverrides")
    fresh_tail_count = Setting[float]("freshTailCount")
    fresh_tail_max_tokens = Setting[float | None]("freshTailMaxTokens")
    leaf_min_fanout = Setting[float]("leafMinFanout")
    condensed_min_fanout = Setting[float]("condensedMinFanout")
    condensed_min_fanout_hard = Setting[float]("condensedMinFanoutHard")
    sweep_max_depth = Setting[float]("sweepMaxDepth")
    leaf_chunk_tokens = Setting[float]("leafChunkTokens")
    summary_prefix_target_tokens = Setting[float | None]("summaryPrefixTargetTokens")
    max_sweep_iterations = Setting[float]("maxSweepIterations")
    sweep_deadline_ms = Setting[float]("sweepDeadlineMs")
    compact_until_under_deadline_ms = Setting[float]("compactUntilUnderDeadlineMs")
    bootstrap_max_tokens = Setting[float]("bootstrapMaxTokens")
    leaf_target_tokens = Setting[float]("leafTargetTokens")
    condensed_target_tokens = Setting[float]("condensedTargetTokens")
    max_expand_tokens = Setting[float]("maxExpandTokens")
    max_assembly_token_budget = Setting[float | None]("maxAssemblyTokenBudget")
    summary_max_overage_factor = Setting[float]("summaryMaxOverageFactor")
    fallback_max_tokens = Setting[float]("fallbackMaxTokens")
    # ---- models, timing, safety ------------------------------------------------------
    summary_model = Setting[str]("summaryModel")
    summary_provider = Setting[str]("summaryProvider")
    large_file_summary_model = Setting[str]("largeFileSummaryModel")
    large_file_summary_provider = Setting[str]("largeFileSummaryProvider")
    expansion_model = Setting[str]("expansionModel")
    expansion_provider = Setting[str]("expansionProvider")
    delegation_timeout_ms = Setting[float]("delegationTimeoutMs")
    summary_timeout_ms = Setting[float]("summaryTimeoutMs")
    summary_call_window_ms = Setting[float]("summaryCallWindowMs")
    summary_max_calls_per_window = Setting[float]("summaryMaxCallsPerWindow")
    summary_spend_backoff_ms = Setting[float]("summarySpendBackoffMs")
    custom_instructions = Setting[str]("customInstructions")
    circuit_breaker_threshold = Setting[float]("circuitBreakerThreshold")
    circuit_breaker_cooldown_ms = Setting[float]("circuitBreakerCooldownMs")
    replay_flood_threshold_external = Setting[float]("replayFloodThresholdExternal")
    replay_flood_threshold_internal = Setting[float]("replayFloodThresholdInternal")
    #: ``{provider, model}`` objects, in order.
    fallback_providers = Setting["list[dict[str, str]]"]("fallbackProviders")
    strip_injected_context_tags = Setting[list[str]]("stripInjectedContextTags")
    large_file_token_threshold = Setting[float]("largeFileTokenThreshold")
    # ---- lcm's own keys --------------------------------------------------------------
    pending_preparation_budget_ms = LcmSetting[float]("pendingPreparationBudgetMs")
    agent_scope = LcmSetting[str]("agentScope", strict=True)

    def __init__(
        self,
        effective: Mapping[str, Any] | None = None,
        *,
        load: Callable[[], Mapping[str, Any]] | None = None,
        plugin_config: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``effective`` as :func:`~lcm_cli.engine.config.resolve.resolve_effective` built it,
        or ``load``, which returns it on first use (a context's view reads lcm's own keys
        without resolving the rest); ``plugin_config`` and ``env`` are what lcm's own keys
        are read from (a view without them answers only the effective config's keys)."""
        if (effective is None) == (load is None):
            raise TypeError("EngineSettings takes an effective config or a load function, not both")
        self._effective = effective
        self._load = load
        self._plugin_config = plugin_config
        self._env = env

    @property
    def effective(self) -> Mapping[str, Any]:
        """The effective config this view reads (resolved once, by whoever built it)."""
        if self._effective is None:
            assert self._load is not None
            self._effective = self._load()
        return self._effective

    def lcm_value(self, path: str, *, strict: bool = False) -> Any:
        """An ``LCM_KEYS`` value from this view's plugin config and environment."""
        if self._plugin_config is None or self._env is None:
            raise LookupError(f"{path} is one of lcm's own keys: build the view with plugin_config and env")
        from lcm_cli.engine.config.resolve import lcm_setting

        return lcm_setting(path, self._plugin_config, self._env, strict=strict)

    def files_dir(self) -> str:
        """``largeFilesDir`` as the engine writes under it. An empty value (the resolver keeps
        ``LCM_LARGE_FILES_DIR=""``, config.md §5) means a relative ``lcm-files``."""
        return str(self.large_files_dir or EngineSettings.large_files_dir.default.arg)

    def large_file_threshold(self) -> int:
        """``largeFileTokenThreshold`` as the engine applies it. The resolver does not range-check
        (env ``0``, plugin ``""`` resolve to 0, config.md §5): zero means the declared default."""
        return int(self.large_file_token_threshold or EngineSettings.large_file_token_threshold.default)

    def session_policy(self) -> SessionPolicy:
        """The session exclusion rules (ignore and stateless patterns)."""
        from lcm_cli.engine.db.sessions import SessionPolicy

        return SessionPolicy(
            tuple(str(p) for p in self.ignore_session_patterns),
            tuple(str(p) for p in self.stateless_session_patterns),
            bool(self.skip_stateless_sessions),
        )

    def overridden(self, **values: Any) -> dict[str, Any]:
        """A copy of the effective config with some attributes' values replaced
        (``overridden(context_threshold=0.5)``); a threshold override's sizing uses it."""
        out = dict(self.effective)
        for attribute, value in values.items():
            setting = type(self).__dict__.get(attribute)
            if not isinstance(setting, Setting) or "." in setting.path:
                raise UnknownSettingError(f"EngineSettings has no top-level setting {attribute!r}")
            out[setting.path] = value
        return out
