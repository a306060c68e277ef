"""Every Lossless plugin config key, in one table.

This table is the one place a key of ``plugins.entries.lossless-claw.config`` is
declared (docs/reference/config.md §4 and §6): its spelling, manifest schema node (type, bounds,
enum), default, environment variables, coercion rule and help. Everything else is
derived from it:

- the manifest JSON schema and the validator `config set` uses
  (:mod:`lcm_cli.engine.config.schema`);
- the effective-config resolver (:mod:`lcm_cli.engine.config.resolve`), which walks the
  rows and applies each row's coercion rule;
- the pydantic-settings model (:mod:`lcm_cli.engine.config.model`), generated from the
  rows with the resolver as its only source;
- the config table of docs/cli.md (``scripts/gen_cli_docs.py``).

Standard library only: the JSON read commands import this module and must stay fast.
"""

from __future__ import annotations

import enum

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.record import Record

if TYPE_CHECKING:
    from typing import Any

#: Environment variable naming the OpenClaw state dir (default root for the DB and
#: the large-files dir). The CLI substitutes its own resolved state dir for it.
STATE_DIR_ENV = "OPENCLAW_STATE_DIR"

#: Environment variable the runtime reads for ``timezone``.
TIMEZONE_ENV = "TZ"


class Coercion(enum.Enum):
    """How a key's environment and plugin-config values are read (config.md §5)."""

    #: env: ``parseInt`` base 10 (leading digits); plugin: finite number or numeric string.
    INT = "int"
    #: env: ``parseFloat``; plugin: as INT. Optional floor / clamp on :class:`ConfigKey`.
    FLOAT = "float"
    #: env: JS ``Number`` (whole string, floats allowed, ``""`` is 0); plugin: as INT.
    NUMBER = "number"
    #: INT, then floored and raised to at least 1.
    POSITIVE_INT_CLAMPED = "positive-int-clamped"
    #: INT, but only integral values >= the schema ``minimum`` count; others fall through.
    INT_AT_LEAST = "int-at-least"
    #: env: anything but exactly ``false`` is true; plugin: boolean or ``"true"``/``"false"``.
    BOOL_TRUE_UNLESS_FALSE = "bool-true-unless-false"
    #: env: only exactly ``true`` is true; plugin: boolean or ``"true"``/``"false"``.
    BOOL_FALSE_UNLESS_TRUE = "bool-false-unless-true"
    #: env: trimmed value whenever set (even empty); plugin: trimmed, non-empty only.
    STRING = "string"
    #: env: raw value whenever set (even empty); plugin: trimmed, non-empty only.
    RAW_ENV_STRING = "raw-env-string"
    #: trimmed, case-insensitive member of the schema ``enum``; others fall through.
    ENUM = "enum"
    #: trimmed non-empty env, else plugin; only ``capture-only`` is honoured, else ``error``.
    HOST_FALLBACK_MODE = "host-fallback-mode"
    #: env: comma list (empty -> ``[]``, still wins); plugin: string array or comma string.
    PATTERN_LIST = "pattern-list"
    #: env: comma list, blank disables (``[]``); plugin: string array or comma string.
    TAG_LIST = "tag-list"
    #: env: ``provider/model`` comma list; plugin: ``{provider, model}`` objects.
    PROVIDER_LIST = "provider-list"
    #: no env; plugin array validated at runtime (config.md §6), errors are fatal.
    THRESHOLD_OVERRIDES = "threshold-overrides"
    #: a nested object: its children are keys of their own.
    OBJECT = "object"


class _Unset:
    """Marker for an optional key with no default (omitted from the effective config)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: Default of optional keys: nothing is emitted in the effective config.
UNSET: Any = _Unset()


class Derived(Record):
    """A default computed at resolution time; ``rule`` names the computation."""

    rule: str
    text: str
    arg: str = ""


# The rules a :class:`Derived` default can name (implemented in resolve.py).
STATE_DIR_FILE = "state-dir-file"  # join(<state dir>, arg)
SYSTEM_TIMEZONE = "system-timezone"  # the host's IANA zone, else "UTC"
BOOTSTRAP_TOKENS = "bootstrap-tokens"  # max(6000, floor(leafChunkTokens * 0.3))
DOUBLE_LEAF_CHUNK = "double-leaf-chunk"  # floor(leafChunkTokens * 2)
SAME_AS = "same-as"  # a copy of the resolved effective field named by arg (an output mirror)


class ConfigKey(Record):
    """One accepted key of the Lossless plugin config.

    ``path`` is the dot path in the plugin config. ``effective`` is the dot path of the
    effective ``LcmConfig`` field this key feeds; when several keys feed one field
    (aliases), the one with the lowest ``rank`` wins, environment variables first.
    """

    path: str
    schema: dict[str, Any]
    default: Any
    env: tuple[str, ...]
    coercion: Coercion
    description: str
    effective: str | None = None
    rank: int = 0
    alias_of: str | None = None
    # FLOAT: floor the value, then (``clamp``) raise or lower it into the schema's
    # ``[minimum, maximum]``, where the other FLOAT keys would fall through or pass.
    floor: bool = False
    clamp: bool = False
    at_least_of: str | None = None  # raised to at least this resolved effective field

    @property
    def is_alias(self) -> bool:
        """True for a legacy spelling that feeds another key's effective field."""
        return self.alias_of is not None


def _bool() -> dict[str, Any]:
    return {"type": "boolean"}


def _str() -> dict[str, Any]:
    return {"type": "string"}


def _int(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum}


def _num(minimum: float, maximum: float | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "number", "minimum": minimum}
    if maximum is not None:
        node["maximum"] = maximum
    return node


def _enum(*members: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(members)}


def _str_list() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


def _object() -> dict[str, Any]:
    # Children are filled in by config_schema from the child rows.
    return {"type": "object", "additionalProperties": False}


def _threshold_overrides_schema() -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["match", "contextThreshold"],
            "properties": {
                "name": {"type": "string"},
                "match": {
                    "type": "object",
                    "additionalProperties": False,
                    "minProperties": 1,
                    "properties": {
                        "model": {"type": "string", "minLength": 1},
                        "modelContextWindowMin": {"type": "integer", "minimum": 1},
                        "modelContextWindowMax": {"type": "integer", "minimum": 1},
                        "sessionPattern": {"type": "string", "minLength": 1},
                    },
                },
                "contextThreshold": {"type": "number", "minimum": 0, "maximum": 1},
                "freshTailCount": {"type": "integer", "minimum": 1},
                "leafChunkTokens": {"type": "integer", "minimum": 1},
            },
        },
    }


def _providers_schema() -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"provider": {"type": "string"}, "model": {"type": "string"}},
            "required": ["provider", "model"],
            "additionalProperties": False,
        },
    }


#: Default XML tags stripped before summarization (memory plugins' injected blocks).
DEFAULT_STRIP_INJECTED_CONTEXT_TAGS: tuple[str, ...] = (
    "active_memory_plugin",
    "relevant-memories",
    "relevant_memories",
    "hindsight_memories",
)

#: The smallest ``fallbackMaxTokens`` the runtime accepts.
MIN_FALLBACK_MAX_TOKENS = 64

C = Coercion

_DB_DEFAULT = Derived(STATE_DIR_FILE, "<state dir>/lcm.db", "lcm.db")
_FILES_DEFAULT = Derived(STATE_DIR_FILE, "<state dir>/lcm-files", "lcm-files")

#: Every accepted key, in the order of config.md §4 (objects before their children).
CONFIG_KEYS: tuple[ConfigKey, ...] = (
    # ---- storage, session selection, lifecycle --------------------------------------
    ConfigKey(
        "enabled",
        _bool(),
        True,
        ("LCM_ENABLED",),
        C.BOOL_TRUE_UNLESS_FALSE,
        "Switch the engine off without uninstalling the plugin.",
    ),
    ConfigKey(
        "hostFallbackMode",
        _enum("error", "capture-only"),
        "error",
        ("LCM_HOST_FALLBACK_MODE",),
        C.HOST_FALLBACK_MODE,
        "What the host must provide: the full lifecycle, or capture and recall only.",
    ),
    ConfigKey(
        "databasePath",
        _str(),
        _DB_DEFAULT,
        ("LCM_DATABASE_PATH",),
        C.RAW_ENV_STRING,
        "Path of the SQLite database file.",
        rank=1,
    ),
    ConfigKey(
        "dbPath",
        _str(),
        _DB_DEFAULT,
        ("LCM_DATABASE_PATH",),
        C.RAW_ENV_STRING,
        "Legacy spelling of databasePath; wins when both are present.",
        effective="databasePath",
        rank=0,
        alias_of="databasePath",
    ),
    ConfigKey(
        "largeFilesDir",
        _str(),
        _FILES_DEFAULT,
        ("LCM_LARGE_FILES_DIR",),
        C.STRING,
        "Directory holding externalized large payloads.",
    ),
    ConfigKey(
        "ignoreSessionPatterns",
        _str_list(),
        [],
        ("LCM_IGNORE_SESSION_PATTERNS",),
        C.PATTERN_LIST,
        "Session-key globs kept out of LCM entirely.",
    ),
    ConfigKey(
        "statelessSessionPatterns",
        _str_list(),
        [],
        ("LCM_STATELESS_SESSION_PATTERNS",),
        C.PATTERN_LIST,
        "Session-key globs that may read LCM but never write to it.",
    ),
    ConfigKey(
        "skipStatelessSessions",
        _bool(),
        True,
        ("LCM_SKIP_STATELESS_SESSIONS",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Enforce the stateless session patterns.",
    ),
    ConfigKey(
        "newSessionRetainDepth",
        _int(-1),
        2,
        ("LCM_NEW_SESSION_RETAIN_DEPTH",),
        C.INT,
        "What /new keeps: -1 everything, 0 summaries only, n summaries of depth >= n.",
    ),
    ConfigKey(
        "timezone",
        _str(),
        Derived(SYSTEM_TIMEZONE, "TZ, else the system zone"),
        (TIMEZONE_ENV,),
        C.RAW_ENV_STRING,
        "IANA zone used to render timestamps.",
    ),
    ConfigKey(
        "pruneHeartbeatOk",
        _bool(),
        False,
        ("LCM_PRUNE_HEARTBEAT_OK",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Delete HEARTBEAT_OK turn cycles from storage.",
    ),
    ConfigKey(
        "transcriptGcEnabled",
        _bool(),
        False,
        ("LCM_TRANSCRIPT_GC_ENABLED",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Let maintenance rewrite transcripts to collect garbage.",
    ),
    ConfigKey(
        "enableSummaryThinking",
        _bool(),
        True,
        ("LCM_ENABLE_SUMMARY_THINKING",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Request low reasoning effort for summarizer calls.",
    ),
    ConfigKey(
        "proactiveThresholdCompactionMode",
        _enum("deferred", "inline"),
        "deferred",
        ("LCM_PROACTIVE_THRESHOLD_COMPACTION_MODE",),
        C.ENUM,
        "Run threshold compaction inline, or record it as maintenance debt.",
    ),
    ConfigKey(
        "stubLargeToolPayloads",
        _bool(),
        False,
        ("LCM_STUB_LARGE_TOOL_PAYLOADS",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Replace externalized tool results with file stubs when assembling context.",
    ),
    ConfigKey(
        "promptAwareEviction",
        _bool(),
        False,
        ("LCM_PROMPT_AWARE_EVICTION_ENABLED",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Under budget pressure, keep older items by relevance to the prompt.",
    ),
    # ---- compaction and sizing -----------------------------------------------------
    ConfigKey(
        "contextThreshold",
        _num(0, 1),
        0.75,
        ("LCM_CONTEXT_THRESHOLD",),
        C.FLOAT,
        "Fraction of the context window at which compaction starts.",
    ),
    ConfigKey(
        "contextThresholdOverrides",
        _threshold_overrides_schema(),
        [],
        (),
        C.THRESHOLD_OVERRIDES,
        "Ordered threshold rules matched by model, session pattern or window size.",
    ),
    ConfigKey(
        "freshTailCount",
        _int(1),
        64,
        ("LCM_FRESH_TAIL_COUNT",),
        C.INT,
        "Newest raw messages protected from compaction.",
    ),
    ConfigKey(
        "freshTailMaxTokens",
        _int(0),
        UNSET,
        ("LCM_FRESH_TAIL_MAX_TOKENS",),
        C.INT,
        "Optional token cap on the protected fresh tail.",
    ),
    ConfigKey(
        "leafMinFanout",
        _int(2),
        8,
        ("LCM_LEAF_MIN_FANOUT",),
        C.INT,
        "Raw messages needed before a leaf pass runs.",
    ),
    ConfigKey(
        "condensedMinFanout",
        _int(2),
        4,
        ("LCM_CONDENSED_MIN_FANOUT",),
        C.INT,
        "Same-depth summaries needed before condensing.",
    ),
    ConfigKey(
        "condensedMinFanoutHard",
        _int(2),
        2,
        ("LCM_CONDENSED_MIN_FANOUT_HARD",),
        C.INT,
        "Lowest grouping allowed when condensation is forced.",
    ),
    ConfigKey(
        "sweepMaxDepth",
        _int(-1),
        1,
        ("LCM_SWEEP_MAX_DEPTH",),
        C.INT,
        "Deepest source depth condensed in routine sweeps (0 leaf only, -1 no limit).",
        rank=0,
    ),
    ConfigKey(
        "incrementalMaxDepth",
        _int(-1),
        Derived(SAME_AS, "= sweepMaxDepth", "sweepMaxDepth"),
        ("LCM_INCREMENTAL_MAX_DEPTH",),
        C.INT,
        "Deprecated spelling of sweepMaxDepth.",
        effective="sweepMaxDepth",
        rank=1,
        alias_of="sweepMaxDepth",
    ),
    ConfigKey(
        "leafChunkTokens",
        _int(1),
        20000,
        ("LCM_LEAF_CHUNK_TOKENS",),
        C.INT,
        "Largest source token count summarized in one leaf chunk.",
    ),
    ConfigKey(
        "summaryPrefixTargetTokens",
        _int(1),
        UNSET,
        ("LCM_SUMMARY_PREFIX_TARGET_TOKENS",),
        C.POSITIVE_INT_CLAMPED,
        "Target size of the summarized prefix after a sweep (derived when unset).",
    ),
    ConfigKey(
        "maxSweepIterations",
        _int(1),
        12,
        ("LCM_MAX_SWEEP_ITERATIONS",),
        C.POSITIVE_INT_CLAMPED,
        "Most summarizer passes in one sweep.",
    ),
    ConfigKey(
        "sweepDeadlineMs",
        _int(1),
        120000,
        ("LCM_SWEEP_DEADLINE_MS",),
        C.POSITIVE_INT_CLAMPED,
        "Wall-clock limit of one sweep, in milliseconds.",
    ),
    ConfigKey(
        "compactUntilUnderDeadlineMs",
        _int(1),
        300000,
        ("LCM_COMPACT_UNTIL_UNDER_DEADLINE_MS",),
        C.POSITIVE_INT_CLAMPED,
        "Wall-clock limit of one overflow-recovery run, in milliseconds.",
    ),
    ConfigKey(
        "bootstrapMaxTokens",
        _int(1),
        Derived(BOOTSTRAP_TOKENS, "max(6000, floor(leafChunkTokens * 0.3))"),
        ("LCM_BOOTSTRAP_MAX_TOKENS",),
        C.INT,
        "Most parent-history tokens imported when a conversation is first bootstrapped.",
    ),
    ConfigKey(
        "leafTargetTokens",
        _int(1),
        2400,
        ("LCM_LEAF_TARGET_TOKENS",),
        C.INT,
        "Target size of a leaf summary.",
    ),
    ConfigKey(
        "condensedTargetTokens",
        _int(1),
        2000,
        ("LCM_CONDENSED_TARGET_TOKENS",),
        C.INT,
        "Target size of a condensed summary.",
    ),
    ConfigKey(
        "maxExpandTokens",
        _int(1),
        4000,
        ("LCM_MAX_EXPAND_TOKENS",),
        C.INT,
        "Default token cap of expand-query answers.",
    ),
    ConfigKey(
        "largeFileThresholdTokens",
        _int(1000),
        25000,
        ("LCM_LARGE_FILE_TOKEN_THRESHOLD",),
        C.INT,
        "Attachment size in tokens above which text goes to large-file storage.",
        effective="largeFileTokenThreshold",
        rank=0,
    ),
    ConfigKey(
        "largeFileTokenThreshold",
        _int(1000),
        25000,
        ("LCM_LARGE_FILE_TOKEN_THRESHOLD",),
        C.INT,
        "Legacy spelling of largeFileThresholdTokens.",
        effective="largeFileTokenThreshold",
        rank=1,
        alias_of="largeFileThresholdTokens",
    ),
    ConfigKey(
        "maxAssemblyTokenBudget",
        _int(1000),
        UNSET,
        ("LCM_MAX_ASSEMBLY_TOKEN_BUDGET",),
        C.INT,
        "Hard cap on the assembly and threshold token budget.",
    ),
    ConfigKey(
        "summaryMaxOverageFactor",
        _num(1),
        3,
        ("LCM_SUMMARY_MAX_OVERAGE_FACTOR",),
        C.FLOAT,
        "How far past its target a summary may run before it is truncated.",
    ),
    ConfigKey(
        "fallbackMaxTokens",
        _int(MIN_FALLBACK_MAX_TOKENS),
        512,
        ("LCM_FALLBACK_MAX_TOKENS",),
        C.INT_AT_LEAST,
        "Token budget of deterministic fallback summaries (values below 64 ignored).",
    ),
    # ---- models, timing, safety ----------------------------------------------------
    ConfigKey(
        "summaryModel",
        _str(),
        "",
        ("LCM_SUMMARY_MODEL",),
        C.STRING,
        "Summarizer model, provider/model or bare.",
    ),
    ConfigKey(
        "summaryProvider",
        _str(),
        "",
        ("LCM_SUMMARY_PROVIDER",),
        C.STRING,
        "Provider used when summaryModel is bare.",
    ),
    ConfigKey(
        "largeFileSummaryModel",
        _str(),
        "",
        ("LCM_LARGE_FILE_SUMMARY_MODEL",),
        C.STRING,
        "Model summarizing large files.",
    ),
    ConfigKey(
        "largeFileSummaryProvider",
        _str(),
        "",
        ("LCM_LARGE_FILE_SUMMARY_PROVIDER",),
        C.STRING,
        "Provider used when largeFileSummaryModel is bare.",
    ),
    ConfigKey(
        "expansionModel",
        _str(),
        "",
        ("LCM_EXPANSION_MODEL",),
        C.STRING,
        "Model of the expand-query sub-agent.",
    ),
    ConfigKey(
        "expansionProvider",
        _str(),
        "",
        ("LCM_EXPANSION_PROVIDER",),
        C.STRING,
        "Provider used when expansionModel is bare.",
    ),
    ConfigKey(
        "delegationTimeoutMs",
        _int(1),
        120000,
        ("LCM_DELEGATION_TIMEOUT_MS",),
        C.NUMBER,
        "Time budget of a delegated expansion, in milliseconds.",
    ),
    ConfigKey(
        "summaryTimeoutMs",
        _int(1),
        60000,
        ("LCM_SUMMARY_TIMEOUT_MS",),
        C.INT,
        "Timeout of one summarizer call, in milliseconds.",
    ),
    ConfigKey(
        "summaryCallWindowMs",
        _int(1),
        600000,
        ("LCM_SUMMARY_CALL_WINDOW_MS",),
        C.POSITIVE_INT_CLAMPED,
        "Length of the summarizer spend-guard window, in ms.",
    ),
    ConfigKey(
        "summaryMaxCallsPerWindow",
        _int(1),
        24,
        ("LCM_SUMMARY_MAX_CALLS_PER_WINDOW",),
        C.POSITIVE_INT_CLAMPED,
        "Summarizer calls allowed in one window.",
    ),
    ConfigKey(
        "summarySpendBackoffMs",
        _int(1),
        1800000,
        ("LCM_SUMMARY_SPEND_BACKOFF_MS",),
        C.POSITIVE_INT_CLAMPED,
        "Pause after the spend guard trips, in milliseconds.",
    ),
    ConfigKey(
        "customInstructions",
        _str(),
        "",
        ("LCM_CUSTOM_INSTRUCTIONS",),
        C.STRING,
        "Extra text added to every summarization prompt.",
    ),
    ConfigKey(
        "circuitBreakerThreshold",
        _int(1),
        5,
        ("LCM_CIRCUIT_BREAKER_THRESHOLD",),
        C.INT,
        "Consecutive auth failures that trip the summarizer breaker.",
    ),
    ConfigKey(
        "circuitBreakerCooldownMs",
        _int(1),
        1800000,
        ("LCM_CIRCUIT_BREAKER_COOLDOWN_MS",),
        C.INT,
        "Time before a tripped breaker resets, in milliseconds.",
    ),
    ConfigKey(
        "replayFloodThresholdExternal",
        _int(1),
        3,
        ("LCM_REPLAY_FLOOD_THRESHOLD_EXTERNAL",),
        C.INT_AT_LEAST,
        "Replays of one user row allowed within the same second.",
    ),
    ConfigKey(
        "replayFloodThresholdInternal",
        _int(1),
        32,
        ("LCM_REPLAY_FLOOD_THRESHOLD_INTERNAL",),
        C.INT_AT_LEAST,
        "Identical tool/assistant/system rows allowed within the same second.",
    ),
    ConfigKey(
        "fallbackProviders",
        _providers_schema(),
        [],
        ("LCM_FALLBACK_PROVIDERS",),
        C.PROVIDER_LIST,
        "Ordered provider/model pairs tried when the summarizer fails.",
    ),
    ConfigKey(
        "stripInjectedContextTags",
        _str_list(),
        list(DEFAULT_STRIP_INJECTED_CONTEXT_TAGS),
        ("LCM_STRIP_INJECTED_CONTEXT_TAGS",),
        C.TAG_LIST,
        "XML tags whose blocks are removed before summarization ([] disables).",
    ),
    # ---- nested objects -------------------------------------------------------------
    ConfigKey(
        "autoRotateSessionFiles",
        _object(),
        UNSET,
        (),
        C.OBJECT,
        "Automatic rotation of oversized session JSONL files.",
    ),
    ConfigKey(
        "autoRotateSessionFiles.enabled",
        _bool(),
        True,
        ("LCM_AUTO_ROTATE_SESSION_FILES_ENABLED",),
        C.BOOL_TRUE_UNLESS_FALSE,
        "Master switch of automatic rotation.",
    ),
    ConfigKey(
        "autoRotateSessionFiles.createBackups",
        _bool(),
        False,
        ("LCM_AUTO_ROTATE_SESSION_FILES_CREATE_BACKUPS",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Take a rolling rotate-latest database backup before rotating.",
    ),
    ConfigKey(
        "autoRotateSessionFiles.sizeBytes",
        _int(1),
        2097152,
        ("LCM_AUTO_ROTATE_SESSION_FILES_SIZE_BYTES",),
        C.POSITIVE_INT_CLAMPED,
        "File size in bytes above which a session file is rotated.",
    ),
    ConfigKey(
        "autoRotateSessionFiles.startup",
        _enum("rotate", "warn", "off"),
        "rotate",
        ("LCM_AUTO_ROTATE_SESSION_FILES_STARTUP",),
        C.ENUM,
        "What to do with oversized files at startup.",
    ),
    ConfigKey(
        "autoRotateSessionFiles.runtime",
        _enum("rotate", "warn", "off"),
        "rotate",
        ("LCM_AUTO_ROTATE_SESSION_FILES_RUNTIME",),
        C.ENUM,
        "What to do with an oversized file after a turn (rotation is deferred).",
    ),
    ConfigKey("independentLogFile", _object(), UNSET, (), C.OBJECT, "The plugin's own JSONL log file."),
    ConfigKey(
        "independentLogFile.enabled",
        _bool(),
        True,
        ("LCM_LOG_FILE_ENABLED",),
        C.BOOL_TRUE_UNLESS_FALSE,
        "Write the plugin's own JSONL log.",
    ),
    ConfigKey(
        "independentLogFile.file",
        _str(),
        UNSET,
        ("LCM_LOG_FILE",),
        C.STRING,
        "Log path (unset: a dated file under the OS temp openclaw dir).",
    ),
    ConfigKey(
        "independentLogFile.maxFileBytes",
        _int(1),
        104857600,
        ("LCM_LOG_MAX_FILE_BYTES",),
        C.POSITIVE_INT_CLAMPED,
        "Log size in bytes that triggers rotation.",
    ),
    ConfigKey(
        "cacheAwareCompaction",
        _object(),
        UNSET,
        (),
        C.OBJECT,
        "Deprecated cache-aware compaction policy (accepted, unused).",
    ),
    ConfigKey(
        "cacheAwareCompaction.enabled",
        _bool(),
        True,
        ("LCM_CACHE_AWARE_COMPACTION_ENABLED",),
        C.BOOL_TRUE_UNLESS_FALSE,
        "Deprecated; accepted for compatibility.",
    ),
    ConfigKey(
        "cacheAwareCompaction.cacheTTLSeconds",
        _int(1),
        300,
        ("LCM_CACHE_TTL_SECONDS",),
        C.INT,
        "Deprecated; prompt-cache lifetime in seconds.",
    ),
    ConfigKey(
        "cacheAwareCompaction.maxColdCacheCatchupPasses",
        _int(1),
        2,
        ("LCM_MAX_COLD_CACHE_CATCHUP_PASSES",),
        C.INT,
        "Deprecated; catch-up passes after the cache went cold.",
    ),
    ConfigKey(
        "cacheAwareCompaction.hotCachePressureFactor",
        _num(1),
        4,
        ("LCM_HOT_CACHE_PRESSURE_FACTOR",),
        C.FLOAT,
        "Deprecated; raw-history pressure factor while the cache is hot (at least 1).",
        clamp=True,
    ),
    ConfigKey(
        "cacheAwareCompaction.hotCacheBudgetHeadroomRatio",
        _num(0, 0.95),
        0.2,
        ("LCM_HOT_CACHE_BUDGET_HEADROOM_RATIO",),
        C.FLOAT,
        "Deprecated; budget headroom kept while the cache is hot (0 to 0.95).",
        clamp=True,
    ),
    ConfigKey(
        "cacheAwareCompaction.coldCacheObservationThreshold",
        _int(1),
        3,
        ("LCM_COLD_CACHE_OBSERVATION_THRESHOLD",),
        C.FLOAT,
        "Deprecated; cold observations before the cache counts as cold (floored, >= 1).",
        floor=True,
        clamp=True,
    ),
    ConfigKey(
        "cacheAwareCompaction.criticalBudgetPressureRatio",
        _num(0, 1),
        0.9,
        ("LCM_CRITICAL_BUDGET_PRESSURE_RATIO",),
        C.FLOAT,
        "Deprecated; budget pressure treated as critical (0 to 1).",
        clamp=True,
    ),
    ConfigKey(
        "dynamicLeafChunkTokens",
        _object(),
        UNSET,
        (),
        C.OBJECT,
        "Deprecated dynamic leaf-chunk sizing (accepted, unused).",
    ),
    ConfigKey(
        "dynamicLeafChunkTokens.enabled",
        _bool(),
        True,
        ("LCM_DYNAMIC_LEAF_CHUNK_TOKENS_ENABLED",),
        C.BOOL_FALSE_UNLESS_TRUE,
        "Deprecated; accepted for compatibility.",
    ),
    ConfigKey(
        "dynamicLeafChunkTokens.max",
        _int(1),
        Derived(DOUBLE_LEAF_CHUNK, "max(leafChunkTokens, floor(leafChunkTokens * 2))"),
        ("LCM_DYNAMIC_LEAF_CHUNK_TOKENS_MAX",),
        C.INT,
        "Deprecated; largest dynamic leaf chunk (never below leafChunkTokens).",
        at_least_of="leafChunkTokens",
    ),
)

#: lcm's own engine keys: lossless-claw has no such setting, so they feed no field of its
#: effective config (``config show`` stays the reference's); the engine reads each with
#: :func:`lcm_cli.engine.config.resolve.lcm_setting` (environment > plugin config > default).
LCM_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "pendingPreparationBudgetMs",
        _int(0),
        30000,
        ("LCM_PENDING_PREPARATION_BUDGET_MS",),
        C.INT,
        "Time `maintain` spends preparing pending summaries with the summarizer model, in ms "
        "(0: none); a call already started finishes. lossless-claw 1.0 bounds its background "
        "preparation by steps (maxSweepIterations), lcm by this time budget.",
    ),
    ConfigKey(
        "agentScope",
        _enum("unrestricted", "agent", "session-family"),
        "unrestricted",
        ("LCM_AGENT_SCOPE",),
        C.ENUM,
        "Whose history a read sees (docs/agents.md): every conversation (unrestricted, "
        "lossless-claw's behaviour), the calling agent's (agent), or the calling session's "
        "key and the keys below it (session-family). The caller is the session key the host "
        "names for a recall tool, or `--agent`/LCM_AGENT_ID on the command line.",
    ),
)


#: Dot paths of the effective ``LcmConfig``, in JSON output order (config.md §5).
#: Nested fields follow their parent's position; a parent appears at its first child.
class ShimKey(Record):
    """A setting of lcm's OpenClaw plugin itself (``integrations/openclaw``), not the engine's.

    It lives in ``plugins.entries.lcm.config`` beside the engine keys; the plugin reads it
    (its default from the manifest generated from this table), the engine ignores it.
    """

    path: str
    schema: dict[str, Any]
    default: Any
    description: str


#: The plugin's own settings (the engine keys of :data:`CONFIG_KEYS` share its entry).
SHIM_KEYS: tuple[ShimKey, ...] = (
    ShimKey(
        "command",
        _str_list(),
        ["lcm", "serve", "--stdio"],
        "How the plugin starts the engine: the argv of `lcm serve --stdio` (a full path when lcm is not "
        "on the host's PATH). The environment variable LCM_COMMAND (space-separated) overrides it.",
    ),
    ShimKey(
        "callTimeoutMs",
        _int(1),
        5000,
        "Deadline of one call to the engine, in ms; past it the call falls back (assemble passes "
        "the host's own messages through).",
    ),
    ShimKey(
        "compactTimeoutMs",
        _int(1),
        120000,
        "Deadline of the calls that may compact (bootstrap, commitTurn, afterTurn, compact, "
        "maintain), in ms.",
    ),
)


EFFECTIVE_KEY_ORDER: tuple[str, ...] = (
    "enabled",
    "hostFallbackMode",
    "databasePath",
    "largeFilesDir",
    "ignoreSessionPatterns",
    "statelessSessionPatterns",
    "skipStatelessSessions",
    "contextThreshold",
    "contextThresholdOverrides",
    "freshTailCount",
    "freshTailMaxTokens",
    "promptAwareEviction",
    "stubLargeToolPayloads",
    "newSessionRetainDepth",
    "leafMinFanout",
    "condensedMinFanout",
    "condensedMinFanoutHard",
    "sweepMaxDepth",
    "incrementalMaxDepth",
    "leafChunkTokens",
    "summaryPrefixTargetTokens",
    "maxSweepIterations",
    "sweepDeadlineMs",
    "compactUntilUnderDeadlineMs",
    "bootstrapMaxTokens",
    "leafTargetTokens",
    "condensedTargetTokens",
    "maxExpandTokens",
    "largeFileTokenThreshold",
    "summaryProvider",
    "summaryModel",
    "largeFileSummaryProvider",
    "largeFileSummaryModel",
    "expansionProvider",
    "expansionModel",
    "delegationTimeoutMs",
    "summaryTimeoutMs",
    "summaryCallWindowMs",
    "summaryMaxCallsPerWindow",
    "summarySpendBackoffMs",
    "timezone",
    "pruneHeartbeatOk",
    "transcriptGcEnabled",
    "enableSummaryThinking",
    "proactiveThresholdCompactionMode",
    "autoRotateSessionFiles.enabled",
    "autoRotateSessionFiles.createBackups",
    "autoRotateSessionFiles.sizeBytes",
    "autoRotateSessionFiles.startup",
    "autoRotateSessionFiles.runtime",
    "independentLogFile.enabled",
    "independentLogFile.file",
    "independentLogFile.maxFileBytes",
    "maxAssemblyTokenBudget",
    "summaryMaxOverageFactor",
    "fallbackMaxTokens",
    "customInstructions",
    "circuitBreakerThreshold",
    "circuitBreakerCooldownMs",
    "replayFloodThresholdExternal",
    "replayFloodThresholdInternal",
    "fallbackProviders",
    "cacheAwareCompaction.enabled",
    "cacheAwareCompaction.cacheTTLSeconds",
    "cacheAwareCompaction.maxColdCacheCatchupPasses",
    "cacheAwareCompaction.hotCachePressureFactor",
    "cacheAwareCompaction.hotCacheBudgetHeadroomRatio",
    "cacheAwareCompaction.coldCacheObservationThreshold",
    "cacheAwareCompaction.criticalBudgetPressureRatio",
    "dynamicLeafChunkTokens.enabled",
    "dynamicLeafChunkTokens.max",
    "stripInjectedContextTags",
)


class EffectiveField(Record):
    """One leaf of the effective ``LcmConfig`` and the keys that feed it, winner first."""

    name: str
    keys: tuple[ConfigKey, ...]
    mirror_of: str | None = None

    @property
    def primary(self) -> ConfigKey:
        """The canonical (non-alias) key: its coercion and default apply."""
        for key in self.keys:
            if not key.is_alias:
                return key
        return self.keys[0]

    @property
    def env(self) -> tuple[str, ...]:
        """Environment variables read for this field, highest priority first."""
        names: list[str] = []
        for key in self.keys:
            for name in key.env:
                if name not in names:
                    names.append(name)
        return tuple(names)

    @property
    def optional(self) -> bool:
        """True when an unset value is omitted from the effective config."""
        return self.mirror_of is None and self.primary.default is UNSET


def effective_path_aliases() -> dict[str, str]:
    """``config get`` lookups (cli-contract.md §14.2): a legacy or deprecated spelling and
    the effective field it reads (``dbPath`` → ``databasePath``), from each row's ``effective``.
    Applied to the whole path only."""
    return {k.path: k.effective for k in CONFIG_KEYS if k.effective is not None and k.effective != k.path}


def key_by_path(path: str) -> ConfigKey | None:
    """The table row for a plugin-config dot path, or None."""
    for key in CONFIG_KEYS:
        if key.path == path:
            return key
    return None


def declared_default(path: str) -> Any:
    """The default the table declares for a plugin-config dot path (KeyError if unknown)."""
    key = key_by_path(path)
    if key is None:
        raise KeyError(path)
    return key.default


_FIELDS_CACHE: list[tuple[EffectiveField, ...]] = []


def effective_fields() -> tuple[EffectiveField, ...]:
    """The effective ``LcmConfig`` leaves in output order (built once, on first use)."""
    if not _FIELDS_CACHE:
        fields: list[EffectiveField] = []
        for name in EFFECTIVE_KEY_ORDER:
            keys = [
                k
                for k in CONFIG_KEYS
                if (k.effective or k.path) == name and k.coercion is not Coercion.OBJECT
            ]
            if not keys:
                # A deprecated spelling kept in the output as a copy of what it feeds
                # (incrementalMaxDepth = sweepMaxDepth): its row's default names the field.
                row = key_by_path(name)
                assert row is not None and isinstance(row.default, Derived) and row.default.rule == SAME_AS
                fields.append(EffectiveField(name, (), mirror_of=row.default.arg))
                continue
            keys.sort(key=lambda k: k.rank)
            fields.append(EffectiveField(name, tuple(keys)))
        _FIELDS_CACHE.append(tuple(fields))
    return _FIELDS_CACHE[0]


def env_var_names() -> tuple[str, ...]:
    """Every environment variable the resolver reads (72: 70 ``LCM_*``, TZ, state dir)."""
    names: list[str] = []
    for key in CONFIG_KEYS:
        for name in key.env:
            if name not in names:
                names.append(name)
    names.append(STATE_DIR_ENV)
    return tuple(names)
