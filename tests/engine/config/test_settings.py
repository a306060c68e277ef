"""The effective Lossless config: precedence, coercion quirks, aliases, derived defaults,
diagnostics, runtime validation, and the pydantic-settings model generated from the key
table (config.md §2–§6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.config.keys import (
    CONFIG_KEYS,
    Coercion,
    effective_fields,
    env_var_names,
)
from lcm_cli.engine.config.model import LcmSettings, load_settings
from lcm_cli.engine.config.resolve import (
    MISSING,
    ConfigRuntimeError,
    effective_value,
    resolve_diagnostics,
    resolve_effective,
    system_timezone,
    validate_runtime,
)
from lcm_cli.engine.core.errors import LcmError

STATE = "/state"

TOP_LEVEL_ORDER = [
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
    "autoRotateSessionFiles",
    "independentLogFile",
    "maxAssemblyTokenBudget",
    "summaryMaxOverageFactor",
    "fallbackMaxTokens",
    "customInstructions",
    "circuitBreakerThreshold",
    "circuitBreakerCooldownMs",
    "replayFloodThresholdExternal",
    "replayFloodThresholdInternal",
    "fallbackProviders",
    "cacheAwareCompaction",
    "dynamicLeafChunkTokens",
    "stripInjectedContextTags",
]
NESTED_ORDER = {
    "autoRotateSessionFiles": ["enabled", "createBackups", "sizeBytes", "startup", "runtime"],
    "independentLogFile": ["enabled", "file", "maxFileBytes"],
    "cacheAwareCompaction": [
        "enabled",
        "cacheTTLSeconds",
        "maxColdCacheCatchupPasses",
        "hotCachePressureFactor",
        "hotCacheBudgetHeadroomRatio",
        "coldCacheObservationThreshold",
        "criticalBudgetPressureRatio",
    ],
    "dynamicLeafChunkTokens": ["enabled", "max"],
}


def expected_defaults() -> dict[str, Any]:
    """The effective config with no env and no plugin config (config.md §4)."""
    return {
        "enabled": True,
        "hostFallbackMode": "error",
        "databasePath": "/state/lcm.db",
        "largeFilesDir": "/state/lcm-files",
        "ignoreSessionPatterns": [],
        "statelessSessionPatterns": [],
        "skipStatelessSessions": True,
        "contextThreshold": 0.75,
        "contextThresholdOverrides": [],
        "freshTailCount": 64,
        "promptAwareEviction": False,
        "stubLargeToolPayloads": False,
        "newSessionRetainDepth": 2,
        "leafMinFanout": 8,
        "condensedMinFanout": 4,
        "condensedMinFanoutHard": 2,
        "sweepMaxDepth": 1,
        "incrementalMaxDepth": 1,
        "leafChunkTokens": 20000,
        "maxSweepIterations": 12,
        "sweepDeadlineMs": 120000,
        "compactUntilUnderDeadlineMs": 300000,
        "bootstrapMaxTokens": 6000,
        "leafTargetTokens": 2400,
        "condensedTargetTokens": 2000,
        "maxExpandTokens": 4000,
        "largeFileTokenThreshold": 25000,
        "summaryProvider": "",
        "summaryModel": "",
        "largeFileSummaryProvider": "",
        "largeFileSummaryModel": "",
        "expansionProvider": "",
        "expansionModel": "",
        "delegationTimeoutMs": 120000,
        "summaryTimeoutMs": 60000,
        "summaryCallWindowMs": 600000,
        "summaryMaxCallsPerWindow": 24,
        "summarySpendBackoffMs": 1800000,
        "timezone": system_timezone(),
        "pruneHeartbeatOk": False,
        "transcriptGcEnabled": False,
        "enableSummaryThinking": True,
        "proactiveThresholdCompactionMode": "deferred",
        "autoRotateSessionFiles": {
            "enabled": True,
            "createBackups": False,
            "sizeBytes": 2097152,
            "startup": "rotate",
            "runtime": "rotate",
        },
        "independentLogFile": {"enabled": True, "maxFileBytes": 104857600},
        "summaryMaxOverageFactor": 3,
        "fallbackMaxTokens": 512,
        "customInstructions": "",
        "circuitBreakerThreshold": 5,
        "circuitBreakerCooldownMs": 1800000,
        "replayFloodThresholdExternal": 3,
        "replayFloodThresholdInternal": 32,
        "fallbackProviders": [],
        "cacheAwareCompaction": {
            "enabled": True,
            "cacheTTLSeconds": 300,
            "maxColdCacheCatchupPasses": 2,
            "hotCachePressureFactor": 4,
            "hotCacheBudgetHeadroomRatio": 0.2,
            "coldCacheObservationThreshold": 3,
            "criticalBudgetPressureRatio": 0.9,
        },
        "dynamicLeafChunkTokens": {"enabled": True, "max": 40000},
        "stripInjectedContextTags": [
            "active_memory_plugin",
            "relevant-memories",
            "relevant_memories",
            "hindsight_memories",
        ],
    }


def effective(
    plugin: dict[str, Any] | None = None, env: dict[str, str] | None = None, state_dir: str | None = STATE
) -> dict[str, Any]:
    """Resolve with both implementations and insist they agree."""
    out = resolve_effective(plugin or {}, env or {}, state_dir)
    twin = load_settings(plugin or {}, env or {}, state_dir).to_effective_dict()
    assert json.dumps(twin) == json.dumps(out)
    return out


def value(plugin: dict[str, Any] | None, env: dict[str, str] | None, path: str) -> Any:
    """One effective value (MISSING when omitted)."""
    return effective_value(effective(plugin, env), path)


def same(a: Any, b: Any) -> bool:
    """Equal, including int vs float and bool vs int (JSON spelling matters)."""
    return json.dumps(a) == json.dumps(b)


# ---------------------------------------------------------------------------------------
# the table


def test_resolver_reads_72_environment_variables() -> None:
    names = env_var_names()
    assert len(names) == 72
    assert len([n for n in names if n.startswith("LCM_")]) == 70
    assert "TZ" in names and "OPENCLAW_STATE_DIR" in names


def test_every_effective_field_has_a_source() -> None:
    for field in effective_fields():
        assert field.mirror_of is not None or field.keys, field.name


def test_clamped_and_at_least_keys_have_schema_bounds() -> None:
    # The resolver reads these bounds from the schema node: nothing else states them.
    for key in CONFIG_KEYS:
        if key.clamp:
            assert key.coercion is Coercion.FLOAT and "minimum" in key.schema, key.path
        if key.coercion is Coercion.INT_AT_LEAST:
            assert isinstance(key.schema.get("minimum"), int), key.path


def test_only_aliases_share_an_environment_variable() -> None:
    seen: dict[str, list[str]] = {}
    for key in CONFIG_KEYS:
        for name in key.env:
            seen.setdefault(name, []).append(key.path)
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert shared == {
        "LCM_DATABASE_PATH": ["databasePath", "dbPath"],
        "LCM_LARGE_FILE_TOKEN_THRESHOLD": ["largeFileThresholdTokens", "largeFileTokenThreshold"],
    }


# ---------------------------------------------------------------------------------------
# defaults and key order


def test_defaults() -> None:
    assert same(effective(), expected_defaults())


def test_key_order() -> None:
    out = effective()
    expected_top = [
        k
        for k in TOP_LEVEL_ORDER
        if k not in ("freshTailMaxTokens", "summaryPrefixTargetTokens", "maxAssemblyTokenBudget")
    ]
    assert list(out) == expected_top
    for name, order in NESTED_ORDER.items():
        keys = [k for k in order if not (name == "independentLogFile" and k == "file")]
        assert list(out[name]) == keys


def test_key_order_with_every_optional_value_set() -> None:
    env = {
        "LCM_FRESH_TAIL_MAX_TOKENS": "100",
        "LCM_SUMMARY_PREFIX_TARGET_TOKENS": "5000",
        "LCM_MAX_ASSEMBLY_TOKEN_BUDGET": "30000",
        "LCM_LOG_FILE": "/tmp/x.log",
    }
    out = effective(env=env)
    assert list(out) == TOP_LEVEL_ORDER
    for name, order in NESTED_ORDER.items():
        assert list(out[name]) == order
    assert out["freshTailMaxTokens"] == 100
    assert out["summaryPrefixTargetTokens"] == 5000
    assert out["maxAssemblyTokenBudget"] == 30000
    assert out["independentLogFile"]["file"] == "/tmp/x.log"


def test_no_alias_spellings_in_the_effective_config() -> None:
    out = effective({"dbPath": "/a", "largeFileThresholdTokens": 3000})
    assert "dbPath" not in out and "largeFileThresholdTokens" not in out


def test_default_lists_are_fresh_copies() -> None:
    first = resolve_effective({}, {}, STATE)
    first["stripInjectedContextTags"].append("mine")
    first["ignoreSessionPatterns"].append("mine")
    assert resolve_effective({}, {}, STATE) == {**expected_defaults()}


# ---------------------------------------------------------------------------------------
# precedence: env > plugin config > default


def test_env_beats_plugin_beats_default() -> None:
    assert value({"freshTailCount": 10}, {"LCM_FRESH_TAIL_COUNT": "20"}, "freshTailCount") == 20
    assert value({"freshTailCount": 10}, {}, "freshTailCount") == 10
    assert value({}, {}, "freshTailCount") == 64


def test_invalid_values_fall_through_to_the_next_source() -> None:
    env = {"LCM_FRESH_TAIL_COUNT": "many"}
    assert value({"freshTailCount": 10}, env, "freshTailCount") == 10
    assert value({"freshTailCount": "many"}, env, "freshTailCount") == 64


def test_runtime_does_not_range_check() -> None:
    assert value(None, {"LCM_FRESH_TAIL_COUNT": "0"}, "freshTailCount") == 0
    assert value({"contextThreshold": 7}, None, "contextThreshold") == 7
    assert value({"newSessionRetainDepth": -9}, None, "newSessionRetainDepth") == -9


# ---------------------------------------------------------------------------------------
# coercion rules (config.md §5): (plugin config, env, effective path, expected)

P, E = "plugin", "env"
COERCIONS: list[tuple[str, dict[str, Any] | None, dict[str, str] | None, str, Any]] = [
    # integers: env parseInt, plugin Number()
    (E, None, {"LCM_FRESH_TAIL_COUNT": "12abc"}, "freshTailCount", 12),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "1.9"}, "freshTailCount", 1),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "  42  "}, "freshTailCount", 42),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "\u00a0\ufeff7"}, "freshTailCount", 7),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "-3"}, "freshTailCount", -3),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "+5"}, "freshTailCount", 5),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "1e3"}, "freshTailCount", 1),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "0x10"}, "freshTailCount", 0),
    (E, {"freshTailCount": 10}, {"LCM_FRESH_TAIL_COUNT": ""}, "freshTailCount", 10),
    (E, {"freshTailCount": 10}, {"LCM_FRESH_TAIL_COUNT": "\u001c5"}, "freshTailCount", 10),
    (E, None, {"LCM_FRESH_TAIL_COUNT": "9007199254740993"}, "freshTailCount", 9007199254740992),
    (P, {"freshTailCount": "12"}, None, "freshTailCount", 12),
    (P, {"freshTailCount": " 12 "}, None, "freshTailCount", 12),
    (P, {"freshTailCount": ""}, None, "freshTailCount", 0),
    (P, {"freshTailCount": "0x10"}, None, "freshTailCount", 16),
    (P, {"freshTailCount": "0b101"}, None, "freshTailCount", 5),
    (P, {"freshTailCount": "1e3"}, None, "freshTailCount", 1000),
    (P, {"freshTailCount": 5.5}, None, "freshTailCount", 5.5),
    (P, {"freshTailCount": 5.0}, None, "freshTailCount", 5),
    (P, {"freshTailCount": True}, None, "freshTailCount", 64),
    (P, {"freshTailCount": None}, None, "freshTailCount", 64),
    (P, {"freshTailCount": "12abc"}, None, "freshTailCount", 64),
    (P, {"freshTailCount": "1_000"}, None, "freshTailCount", 64),
    (P, {"freshTailCount": "Infinity"}, None, "freshTailCount", 64),
    (P, {"freshTailCount": [5]}, None, "freshTailCount", 64),
    (P, {"freshTailCount": 1e21}, None, "freshTailCount", 1e21),
    # floats: env parseFloat
    (E, None, {"LCM_CONTEXT_THRESHOLD": "0.5abc"}, "contextThreshold", 0.5),
    (E, None, {"LCM_CONTEXT_THRESHOLD": ".5"}, "contextThreshold", 0.5),
    (E, None, {"LCM_CONTEXT_THRESHOLD": "1e-1"}, "contextThreshold", 0.1),
    (E, None, {"LCM_CONTEXT_THRESHOLD": "1"}, "contextThreshold", 1),
    (E, {"contextThreshold": 0.6}, {"LCM_CONTEXT_THRESHOLD": "Infinity"}, "contextThreshold", 0.6),
    (E, {"contextThreshold": 0.6}, {"LCM_CONTEXT_THRESHOLD": "abc"}, "contextThreshold", 0.6),
    (P, {"contextThreshold": "0.3"}, None, "contextThreshold", 0.3),
    (E, None, {"LCM_SUMMARY_MAX_OVERAGE_FACTOR": "2.5x"}, "summaryMaxOverageFactor", 2.5),
    # delegationTimeoutMs: env Number()
    (E, None, {"LCM_DELEGATION_TIMEOUT_MS": ""}, "delegationTimeoutMs", 0),
    (E, None, {"LCM_DELEGATION_TIMEOUT_MS": "1.5"}, "delegationTimeoutMs", 1.5),
    (E, None, {"LCM_DELEGATION_TIMEOUT_MS": " 0x10 "}, "delegationTimeoutMs", 16),
    (E, {"delegationTimeoutMs": 5}, {"LCM_DELEGATION_TIMEOUT_MS": "12abc"}, "delegationTimeoutMs", 5),
    # booleans, true unless exactly "false"
    (E, None, {"LCM_ENABLED": "false"}, "enabled", False),
    (E, None, {"LCM_ENABLED": "FALSE"}, "enabled", True),
    (E, None, {"LCM_ENABLED": " false"}, "enabled", True),
    (E, None, {"LCM_ENABLED": "0"}, "enabled", True),
    (E, {"enabled": False}, {"LCM_ENABLED": ""}, "enabled", True),
    (E, None, {"LCM_LOG_FILE_ENABLED": "false"}, "independentLogFile.enabled", False),
    (E, None, {"LCM_AUTO_ROTATE_SESSION_FILES_ENABLED": "no"}, "autoRotateSessionFiles.enabled", True),
    (E, None, {"LCM_CACHE_AWARE_COMPACTION_ENABLED": "false"}, "cacheAwareCompaction.enabled", False),
    (P, {"enabled": "false"}, None, "enabled", False),
    (P, {"enabled": 0}, None, "enabled", True),
    (P, {"enabled": "no"}, None, "enabled", True),
    (P, {"enabled": " false "}, None, "enabled", True),
    # booleans, false unless exactly "true"
    (E, None, {"LCM_PRUNE_HEARTBEAT_OK": "true"}, "pruneHeartbeatOk", True),
    (E, None, {"LCM_PRUNE_HEARTBEAT_OK": "1"}, "pruneHeartbeatOk", False),
    (E, None, {"LCM_PRUNE_HEARTBEAT_OK": "TRUE"}, "pruneHeartbeatOk", False),
    (
        E,
        {"skipStatelessSessions": True},
        {"LCM_SKIP_STATELESS_SESSIONS": "yes"},
        "skipStatelessSessions",
        False,
    ),
    (E, None, {"LCM_ENABLE_SUMMARY_THINKING": "1"}, "enableSummaryThinking", False),
    (E, None, {"LCM_DYNAMIC_LEAF_CHUNK_TOKENS_ENABLED": ""}, "dynamicLeafChunkTokens.enabled", False),
    (E, None, {"LCM_PROMPT_AWARE_EVICTION_ENABLED": "true"}, "promptAwareEviction", True),
    (E, None, {"LCM_STUB_LARGE_TOOL_PAYLOADS": "true"}, "stubLargeToolPayloads", True),
    (E, None, {"LCM_TRANSCRIPT_GC_ENABLED": "true"}, "transcriptGcEnabled", True),
    (
        E,
        None,
        {"LCM_AUTO_ROTATE_SESSION_FILES_CREATE_BACKUPS": "true"},
        "autoRotateSessionFiles.createBackups",
        True,
    ),
    (P, {"promptAwareEviction": "true"}, None, "promptAwareEviction", True),
    (P, {"skipStatelessSessions": False}, None, "skipStatelessSessions", False),
    (P, {"dynamicLeafChunkTokens": {"enabled": "false"}}, None, "dynamicLeafChunkTokens.enabled", False),
    # strings
    (E, None, {"LCM_SUMMARY_MODEL": "  gpt  "}, "summaryModel", "gpt"),
    (E, {"summaryModel": "x"}, {"LCM_SUMMARY_MODEL": ""}, "summaryModel", ""),
    (E, {"summaryModel": "x"}, {"LCM_SUMMARY_MODEL": "   "}, "summaryModel", ""),
    (E, None, {"LCM_LARGE_FILES_DIR": " /d "}, "largeFilesDir", "/d"),
    (E, None, {"LCM_CUSTOM_INSTRUCTIONS": "\tBe brief.\n"}, "customInstructions", "Be brief."),
    (E, None, {"LCM_LOG_FILE": "  "}, "independentLogFile.file", ""),
    (P, {"summaryModel": "  m  "}, None, "summaryModel", "m"),
    (P, {"summaryModel": "  "}, None, "summaryModel", ""),
    (P, {"summaryModel": 5}, None, "summaryModel", ""),
    (P, {"largeFilesDir": " /p "}, None, "largeFilesDir", "/p"),
    (P, {"independentLogFile": {"file": " /l "}}, None, "independentLogFile.file", "/l"),
    (P, {"independentLogFile": {"file": ""}}, None, "independentLogFile.file", MISSING),
    (P, {"independentLogFile": "file"}, None, "independentLogFile.file", MISSING),
    # the database path: env raw, plugin trimmed
    (E, None, {"LCM_DATABASE_PATH": " /x "}, "databasePath", " /x "),
    (E, {"dbPath": "/a"}, {"LCM_DATABASE_PATH": ""}, "databasePath", ""),
    (P, {"databasePath": " /b "}, None, "databasePath", "/b"),
    # timezone: TZ raw, plugin trimmed
    (E, {"timezone": "Asia/Tokyo"}, {"TZ": " Europe/Paris "}, "timezone", " Europe/Paris "),
    (E, {"timezone": "Asia/Tokyo"}, {"TZ": ""}, "timezone", ""),
    (P, {"timezone": " Asia/Tokyo "}, None, "timezone", "Asia/Tokyo"),
    # enums: trimmed, case-insensitive
    (
        E,
        None,
        {"LCM_PROACTIVE_THRESHOLD_COMPACTION_MODE": " INLINE "},
        "proactiveThresholdCompactionMode",
        "inline",
    ),
    (
        E,
        {"proactiveThresholdCompactionMode": "inline"},
        {"LCM_PROACTIVE_THRESHOLD_COMPACTION_MODE": "bogus"},
        "proactiveThresholdCompactionMode",
        "inline",
    ),
    (P, {"proactiveThresholdCompactionMode": "Inline"}, None, "proactiveThresholdCompactionMode", "inline"),
    (P, {"proactiveThresholdCompactionMode": "bogus"}, None, "proactiveThresholdCompactionMode", "deferred"),
    (E, None, {"LCM_AUTO_ROTATE_SESSION_FILES_STARTUP": "WARN"}, "autoRotateSessionFiles.startup", "warn"),
    (P, {"autoRotateSessionFiles": {"runtime": " Off "}}, None, "autoRotateSessionFiles.runtime", "off"),
    # hostFallbackMode: only exactly capture-only
    (E, None, {"LCM_HOST_FALLBACK_MODE": " capture-only "}, "hostFallbackMode", "capture-only"),
    (
        E,
        {"hostFallbackMode": "capture-only"},
        {"LCM_HOST_FALLBACK_MODE": "CAPTURE-ONLY"},
        "hostFallbackMode",
        "error",
    ),
    (
        E,
        {"hostFallbackMode": "capture-only"},
        {"LCM_HOST_FALLBACK_MODE": "bogus"},
        "hostFallbackMode",
        "error",
    ),
    (
        E,
        {"hostFallbackMode": "capture-only"},
        {"LCM_HOST_FALLBACK_MODE": "  "},
        "hostFallbackMode",
        "capture-only",
    ),
    (P, {"hostFallbackMode": " capture-only "}, None, "hostFallbackMode", "capture-only"),
    (P, {"hostFallbackMode": "Capture-Only"}, None, "hostFallbackMode", "error"),
    # positive ints clamped up: floor, then at least 1
    (E, None, {"LCM_MAX_SWEEP_ITERATIONS": "0"}, "maxSweepIterations", 1),
    (E, None, {"LCM_MAX_SWEEP_ITERATIONS": "-5"}, "maxSweepIterations", 1),
    (E, None, {"LCM_MAX_SWEEP_ITERATIONS": "7.9"}, "maxSweepIterations", 7),
    (P, {"maxSweepIterations": 2.7}, None, "maxSweepIterations", 2),
    (P, {"maxSweepIterations": -3}, None, "maxSweepIterations", 1),
    (P, {"maxSweepIterations": "abc"}, None, "maxSweepIterations", 12),
    (P, {"summaryPrefixTargetTokens": 0.5}, None, "summaryPrefixTargetTokens", 1),
    (E, None, {"LCM_AUTO_ROTATE_SESSION_FILES_SIZE_BYTES": "0"}, "autoRotateSessionFiles.sizeBytes", 1),
    (P, {"independentLogFile": {"maxFileBytes": 10.5}}, None, "independentLogFile.maxFileBytes", 10),
    (E, None, {"LCM_SUMMARY_CALL_WINDOW_MS": "-1"}, "summaryCallWindowMs", 1),
    (P, {"summarySpendBackoffMs": "2.5"}, None, "summarySpendBackoffMs", 2),
    # strict positive ints
    (
        E,
        {"replayFloodThresholdExternal": 7},
        {"LCM_REPLAY_FLOOD_THRESHOLD_EXTERNAL": "0"},
        "replayFloodThresholdExternal",
        7,
    ),
    (E, None, {"LCM_REPLAY_FLOOD_THRESHOLD_INTERNAL": "5x"}, "replayFloodThresholdInternal", 5),
    (P, {"replayFloodThresholdExternal": 2.5}, None, "replayFloodThresholdExternal", 3),
    (P, {"replayFloodThresholdInternal": 0}, None, "replayFloodThresholdInternal", 32),
    (P, {"replayFloodThresholdInternal": "4"}, None, "replayFloodThresholdInternal", 4),
    # fallbackMaxTokens: integer >= 64 else next source
    (E, {"fallbackMaxTokens": 100}, {"LCM_FALLBACK_MAX_TOKENS": "63"}, "fallbackMaxTokens", 100),
    (E, None, {"LCM_FALLBACK_MAX_TOKENS": "64"}, "fallbackMaxTokens", 64),
    (P, {"fallbackMaxTokens": 63}, None, "fallbackMaxTokens", 512),
    (P, {"fallbackMaxTokens": 100.5}, None, "fallbackMaxTokens", 512),
    (P, {"fallbackMaxTokens": "128"}, None, "fallbackMaxTokens", 128),
    # deprecated cache-aware clamps
    (E, None, {"LCM_HOT_CACHE_PRESSURE_FACTOR": "0.5"}, "cacheAwareCompaction.hotCachePressureFactor", 1),
    (
        P,
        {"cacheAwareCompaction": {"hotCachePressureFactor": 2.5}},
        None,
        "cacheAwareCompaction.hotCachePressureFactor",
        2.5,
    ),
    (
        E,
        None,
        {"LCM_HOT_CACHE_BUDGET_HEADROOM_RATIO": "2"},
        "cacheAwareCompaction.hotCacheBudgetHeadroomRatio",
        0.95,
    ),
    (
        P,
        {"cacheAwareCompaction": {"hotCacheBudgetHeadroomRatio": -1}},
        None,
        "cacheAwareCompaction.hotCacheBudgetHeadroomRatio",
        0,
    ),
    (
        E,
        None,
        {"LCM_COLD_CACHE_OBSERVATION_THRESHOLD": "2.9"},
        "cacheAwareCompaction.coldCacheObservationThreshold",
        2,
    ),
    (
        P,
        {"cacheAwareCompaction": {"coldCacheObservationThreshold": 0}},
        None,
        "cacheAwareCompaction.coldCacheObservationThreshold",
        1,
    ),
    (
        E,
        None,
        {"LCM_CRITICAL_BUDGET_PRESSURE_RATIO": "1.5"},
        "cacheAwareCompaction.criticalBudgetPressureRatio",
        1,
    ),
    (
        P,
        {"cacheAwareCompaction": {"criticalBudgetPressureRatio": -0.5}},
        None,
        "cacheAwareCompaction.criticalBudgetPressureRatio",
        0,
    ),
    (E, None, {"LCM_CACHE_TTL_SECONDS": "-4"}, "cacheAwareCompaction.cacheTTLSeconds", -4),
    (P, {"cacheAwareCompaction": [1]}, None, "cacheAwareCompaction.cacheTTLSeconds", 300),
    # pattern lists
    (E, None, {"LCM_IGNORE_SESSION_PATTERNS": " a , ,b "}, "ignoreSessionPatterns", ["a", "b"]),
    (E, {"ignoreSessionPatterns": ["x"]}, {"LCM_IGNORE_SESSION_PATTERNS": ""}, "ignoreSessionPatterns", []),
    (P, {"statelessSessionPatterns": " a, b "}, None, "statelessSessionPatterns", ["a", "b"]),
    (P, {"ignoreSessionPatterns": [" a ", "", 3, None, "b"]}, None, "ignoreSessionPatterns", ["a", "b"]),
    (P, {"ignoreSessionPatterns": 5}, None, "ignoreSessionPatterns", []),
    # stripInjectedContextTags
    (E, None, {"LCM_STRIP_INJECTED_CONTEXT_TAGS": ""}, "stripInjectedContextTags", []),
    (E, None, {"LCM_STRIP_INJECTED_CONTEXT_TAGS": "  "}, "stripInjectedContextTags", []),
    (E, None, {"LCM_STRIP_INJECTED_CONTEXT_TAGS": ","}, "stripInjectedContextTags", []),
    (
        E,
        {"stripInjectedContextTags": ["z"]},
        {"LCM_STRIP_INJECTED_CONTEXT_TAGS": "x, y"},
        "stripInjectedContextTags",
        ["x", "y"],
    ),
    (P, {"stripInjectedContextTags": []}, None, "stripInjectedContextTags", []),
    (P, {"stripInjectedContextTags": "a,b"}, None, "stripInjectedContextTags", ["a", "b"]),
    (
        P,
        {"stripInjectedContextTags": "  "},
        None,
        "stripInjectedContextTags",
        ["active_memory_plugin", "relevant-memories", "relevant_memories", "hindsight_memories"],
    ),
    # fallbackProviders
    (
        E,
        None,
        {"LCM_FALLBACK_PROVIDERS": "p/m, x/y/z"},
        "fallbackProviders",
        [{"provider": "p", "model": "m"}, {"provider": "x", "model": "y/z"}],
    ),
    (
        E,
        {"fallbackProviders": [{"provider": "a", "model": "b"}]},
        {"LCM_FALLBACK_PROVIDERS": "/m,p/, q"},
        "fallbackProviders",
        [{"provider": "a", "model": "b"}],
    ),
    (E, None, {"LCM_FALLBACK_PROVIDERS": " p / m "}, "fallbackProviders", [{"provider": "p", "model": "m"}]),
    (
        P,
        {
            "fallbackProviders": [
                {"provider": " a ", "model": " b "},
                {"provider": "", "model": "c"},
                "a/b",
                {"provider": "p"},
            ]
        },
        None,
        "fallbackProviders",
        [{"provider": "a", "model": "b"}],
    ),
    (P, {"fallbackProviders": "a/b"}, None, "fallbackProviders", []),
]


@pytest.mark.parametrize(
    ("side", "plugin", "env", "path", "expected"),
    COERCIONS,
    ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(COERCIONS)],
)
def test_coercion(
    side: str, plugin: dict[str, Any] | None, env: dict[str, str] | None, path: str, expected: Any
) -> None:
    got = value(plugin, env, path)
    if expected is MISSING:
        assert got is MISSING
    else:
        assert same(got, expected), (got, expected)


def test_overrides_are_normalized() -> None:
    rules = [
        {
            "name": " big ",
            "match": {
                "sessionPattern": " agent:* ",
                "model": " m ",
                "modelContextWindowMax": "200000",
                "modelContextWindowMin": 1000.0,
            },
            "contextThreshold": "0.6",
            "freshTailCount": "8",
            "leafChunkTokens": 1e3,
        },
        {"name": "  ", "match": {"model": "x"}, "contextThreshold": 1},
    ]
    assert same(
        value({"contextThresholdOverrides": rules}, None, "contextThresholdOverrides"),
        [
            {
                "name": "big",
                "match": {
                    "model": "m",
                    "modelContextWindowMin": 1000,
                    "modelContextWindowMax": 200000,
                    "sessionPattern": "agent:*",
                },
                "contextThreshold": 0.6,
                "freshTailCount": 8,
                "leafChunkTokens": 1000,
            },
            {"match": {"model": "x"}, "contextThreshold": 1},
        ],
    )


# ---------------------------------------------------------------------------------------
# aliases (config.md §3)


@pytest.mark.parametrize(
    ("plugin", "env", "expected"),
    [
        ({}, {"LCM_SWEEP_MAX_DEPTH": "3", "LCM_INCREMENTAL_MAX_DEPTH": "4"}, 3),
        ({"sweepMaxDepth": 5}, {"LCM_INCREMENTAL_MAX_DEPTH": "4"}, 4),
        ({}, {"LCM_SWEEP_MAX_DEPTH": "x", "LCM_INCREMENTAL_MAX_DEPTH": "2"}, 2),
        ({"sweepMaxDepth": 5, "incrementalMaxDepth": 6}, {}, 5),
        ({"incrementalMaxDepth": 6}, {}, 6),
        ({"sweepMaxDepth": "deep", "incrementalMaxDepth": -1}, {}, -1),
        ({}, {}, 1),
    ],
)
def test_sweep_depth_alias(plugin: dict[str, Any], env: dict[str, str], expected: int) -> None:
    out = effective(plugin, env)
    assert out["sweepMaxDepth"] == expected
    assert out["incrementalMaxDepth"] == expected


@pytest.mark.parametrize(
    ("plugin", "env", "expected"),
    [
        ({"largeFileThresholdTokens": 30000, "largeFileTokenThreshold": 40000}, {}, 30000),
        ({"largeFileTokenThreshold": 40000}, {}, 40000),
        ({"largeFileThresholdTokens": "x", "largeFileTokenThreshold": 40000}, {}, 40000),
        ({"largeFileThresholdTokens": 30000}, {"LCM_LARGE_FILE_TOKEN_THRESHOLD": "50000"}, 50000),
    ],
)
def test_large_file_threshold_alias(plugin: dict[str, Any], env: dict[str, str], expected: int) -> None:
    assert effective(plugin, env)["largeFileTokenThreshold"] == expected


@pytest.mark.parametrize(
    ("plugin", "env", "expected"),
    [
        ({"dbPath": " /a.db ", "databasePath": "/b.db"}, {}, "/a.db"),
        ({"dbPath": "  ", "databasePath": "/b.db"}, {}, "/b.db"),
        ({"dbPath": 3, "databasePath": "/b.db"}, {}, "/b.db"),
        ({"databasePath": "/b.db"}, {"LCM_DATABASE_PATH": "/env.db"}, "/env.db"),
        ({"dbPath": "", "databasePath": ""}, {}, "/state/lcm.db"),
    ],
)
def test_database_path_alias(plugin: dict[str, Any], env: dict[str, str], expected: str) -> None:
    assert effective(plugin, env)["databasePath"] == expected


# ---------------------------------------------------------------------------------------
# derived defaults


@pytest.mark.parametrize(
    ("plugin", "env", "bootstrap", "dynamic_max"),
    [
        ({}, {}, 6000, 40000),
        ({"leafChunkTokens": 30000}, {}, 9000, 60000),
        ({"leafChunkTokens": 100}, {}, 6000, 200),
        ({}, {"LCM_LEAF_CHUNK_TOKENS": "33333"}, 9999, 66666),
        ({"leafChunkTokens": 7.5}, {}, 6000, 15),
        ({"leafChunkTokens": 20000, "bootstrapMaxTokens": 123}, {}, 123, 40000),
        ({"dynamicLeafChunkTokens": {"max": 10}}, {}, 6000, 20000),
        ({"dynamicLeafChunkTokens": {"max": 50000}}, {}, 6000, 50000),
        ({}, {"LCM_DYNAMIC_LEAF_CHUNK_TOKENS_MAX": "5"}, 6000, 20000),
        ({"leafChunkTokens": -10}, {}, 6000, -10),
    ],
)
def test_derived_defaults(
    plugin: dict[str, Any], env: dict[str, str], bootstrap: int, dynamic_max: int
) -> None:
    out = effective(plugin, env)
    assert same(out["bootstrapMaxTokens"], bootstrap)
    assert same(out["dynamicLeafChunkTokens"]["max"], dynamic_max)


@pytest.mark.parametrize(
    ("state_dir", "expected"),
    [
        ("/st", "/st"),
        (" /st/ ", "/st"),
        ("/a//b/../c/", "/a/c"),
        ("rel/x", "rel/x"),
    ],
)
def test_state_dir_paths(state_dir: str, expected: str) -> None:
    out = effective(state_dir=state_dir)
    assert out["databasePath"] == f"{expected}/lcm.db"
    assert out["largeFilesDir"] == f"{expected}/lcm-files"


@pytest.mark.parametrize("state_dir", ["", "   ", None])
def test_blank_state_dir_means_home_openclaw(state_dir: str | None) -> None:
    home = os.path.expanduser("~")
    assert effective(state_dir=state_dir)["databasePath"] == f"{home}/.openclaw/lcm.db"


def test_timezone_falls_back_to_the_system_zone() -> None:
    zone = system_timezone()
    assert zone and zone.strip() == zone
    assert effective()["timezone"] == zone
    if os.path.islink("/etc/localtime"):
        target = os.path.realpath("/etc/localtime")
        if target.endswith(("/Etc/UTC", "/UTC", "/Etc/GMT")):
            assert zone == "UTC"
        elif "/zoneinfo/" in target:
            assert target.endswith("/" + zone)


# ---------------------------------------------------------------------------------------
# diagnostics (cli-contract.md §14.1)


@pytest.mark.parametrize(
    ("plugin", "env", "expected"),
    [
        ({}, {}, ("default", "default", False, False)),
        ({"ignoreSessionPatterns": ["a"]}, {}, ("plugin-config", "default", False, False)),
        ({"ignoreSessionPatterns": []}, {}, ("plugin-config", "default", False, False)),
        ({"ignoreSessionPatterns": "  "}, {}, ("default", "default", False, False)),
        ({"ignoreSessionPatterns": 5}, {}, ("default", "default", False, False)),
        (
            {"ignoreSessionPatterns": ["a"]},
            {"LCM_IGNORE_SESSION_PATTERNS": ""},
            ("env", "default", True, False),
        ),
        (
            {"ignoreSessionPatterns": []},
            {"LCM_IGNORE_SESSION_PATTERNS": "x"},
            ("env", "default", False, False),
        ),
        (
            {"ignoreSessionPatterns": ["", " "]},
            {"LCM_IGNORE_SESSION_PATTERNS": "x"},
            ("env", "default", False, False),
        ),
        (
            {"statelessSessionPatterns": "b,c"},
            {"LCM_STATELESS_SESSION_PATTERNS": "a"},
            ("default", "env", False, True),
        ),
        ({}, {"LCM_STATELESS_SESSION_PATTERNS": "a"}, ("default", "env", False, False)),
    ],
)
def test_diagnostics(
    plugin: dict[str, Any], env: dict[str, str], expected: tuple[str, str, bool, bool]
) -> None:
    diagnostics = resolve_diagnostics(plugin, env)
    assert list(diagnostics) == [
        "ignoreSessionPatternsSource",
        "statelessSessionPatternsSource",
        "ignoreSessionPatternsEnvOverridesPluginConfig",
        "statelessSessionPatternsEnvOverridesPluginConfig",
    ]
    assert tuple(diagnostics.values()) == expected


# ---------------------------------------------------------------------------------------
# runtime validation (config.md §6)

GOOD_RULE = {"match": {"model": "m"}, "contextThreshold": 0.5}

BAD_OVERRIDES: list[tuple[Any, str]] = [
    ("x", "contextThresholdOverrides is not an array"),
    (None, "contextThresholdOverrides is not an array"),
    ({}, "contextThresholdOverrides is not an array"),
    ([3], "contextThresholdOverrides[0] is not an object"),
    ([None], "contextThresholdOverrides[0] is not an object"),
    ([{"contextThreshold": 0.5}], "contextThresholdOverrides[0].match is not an object"),
    ([{"match": [], "contextThreshold": 0.5}], "contextThresholdOverrides[0].match is not an"),
    ([{"match": {}, "contextThreshold": 0.5}], "contextThresholdOverrides[0].match has no matcher"),
    ([{"match": {"name": "x"}, "contextThreshold": 0.5}], "[0].match has no matcher"),
    ([{"match": {"model": "  "}, "contextThreshold": 0.5}], "[0].match.model needs a non-blank"),
    ([{"match": {"model": 3}, "contextThreshold": 0.5}], "[0].match.model needs"),
    ([{"match": {"sessionPattern": None}, "contextThreshold": 0.5}], "[0].match.sessionPattern needs"),
    (
        [{"match": {"modelContextWindowMin": 0}, "contextThreshold": 0.5}],
        "[0].match.modelContextWindowMin needs a positive integer",
    ),
    (
        [{"match": {"modelContextWindowMin": 1.5}, "contextThreshold": 0.5}],
        "[0].match.modelContextWindowMin needs",
    ),
    (
        [{"match": {"modelContextWindowMax": "abc"}, "contextThreshold": 0.5}],
        "[0].match.modelContextWindowMax needs",
    ),
    (
        [{"match": {"modelContextWindowMax": True}, "contextThreshold": 0.5}],
        "[0].match.modelContextWindowMax needs",
    ),
    (
        [{"match": {"modelContextWindowMin": 10, "modelContextWindowMax": "5"}, "contextThreshold": 0.5}],
        "[0].match.modelContextWindowMin is greater than",
    ),
    ([{**GOOD_RULE, "freshTailCount": 0}], "[0].freshTailCount needs a positive integer"),
    ([{**GOOD_RULE, "leafChunkTokens": "x"}], "[0].leafChunkTokens needs a positive integer"),
    ([{"match": {"model": "m"}}], "[0].contextThreshold needs a finite number"),
    ([{"match": {"model": "m"}, "contextThreshold": 1.5}], "[0].contextThreshold needs"),
    ([{"match": {"model": "m"}, "contextThreshold": -0.1}], "[0].contextThreshold needs"),
    ([{"match": {"model": "m"}, "contextThreshold": "abc"}], "[0].contextThreshold needs"),
    ([{"match": {"model": "m"}, "contextThreshold": None}], "[0].contextThreshold needs"),
    ([{"match": {"model": "m"}, "contextThreshold": True}], "[0].contextThreshold needs"),
    ([GOOD_RULE, {"match": {}, "contextThreshold": 0.5}], "[1].match has no matcher"),
    # The runtime checks the tail overrides before the threshold (recorded in the config
    # goldens: an override with no contextThreshold and freshTailCount 0 fails on the tail).
    ([{"match": {"model": "m"}, "freshTailCount": -1}], "[0].freshTailCount needs"),
]


@pytest.mark.parametrize(("overrides", "reason"), BAD_OVERRIDES)
def test_runtime_validation_failures(overrides: Any, reason: str) -> None:
    config = {"contextThresholdOverrides": overrides}
    with pytest.raises(LcmError) as caught:
        validate_runtime(config, {"configPath": "/c/openclaw.json"})
    error = caught.value
    assert isinstance(error, ConfigRuntimeError)
    assert error.code == "CONFIG_VALIDATION_FAILED"
    assert reason in error.reason and reason in error.message
    assert error.details == {"configPath": "/c/openclaw.json"}
    with pytest.raises(ConfigRuntimeError):
        resolve_effective(config, {}, STATE)
    with pytest.raises(ConfigRuntimeError):
        load_settings(config, {}, STATE)


def test_runtime_validation_message_and_default_details() -> None:
    bad = {"contextThresholdOverrides": "x"}
    with pytest.raises(ConfigRuntimeError) as caught:
        validate_runtime(bad)
    assert caught.value.details == {}
    assert caught.value.message == (
        "Lossless config failed runtime validation: contextThresholdOverrides is not an array"
    )
    with pytest.raises(ConfigRuntimeError) as caught:
        validate_runtime(bad, {"path": "contextThresholdOverrides"}, prefix="After the change")
    assert caught.value.message.startswith("After the change: contextThresholdOverrides")
    assert caught.value.to_dict()["details"] == {"path": "contextThresholdOverrides"}


@pytest.mark.parametrize(
    "config",
    [
        {},
        None,
        {"contextThresholdOverrides": []},
        {"contextThresholdOverrides": [GOOD_RULE]},
        {
            "contextThresholdOverrides": [
                {"match": {"modelContextWindowMin": "5", "modelContextWindowMax": 5}, "contextThreshold": "0"}
            ]
        },
        # Only the overrides are checked at runtime; other bad values fall through.
        {"freshTailCount": "lots", "enabled": "maybe", "unknownKey": 1},
    ],
)
def test_runtime_validation_passes(config: dict[str, Any] | None) -> None:
    assert validate_runtime(config) is None  # what the runtime accepts never stops lcm


# ---------------------------------------------------------------------------------------
# config get lookups (cli-contract.md §14.2)


def test_effective_value_aliases_and_missing() -> None:
    out = effective({"dbPath": "/a.db", "largeFileTokenThreshold": 4000, "incrementalMaxDepth": 3})
    assert effective_value(out, "dbPath") == "/a.db"
    assert effective_value(out, "databasePath") == "/a.db"
    assert effective_value(out, "largeFileThresholdTokens") == 4000
    assert effective_value(out, "largeFileTokenThreshold") == 4000
    assert effective_value(out, "incrementalMaxDepth") == 3
    assert effective_value(out, "autoRotateSessionFiles") == out["autoRotateSessionFiles"]
    assert effective_value(out, "autoRotateSessionFiles.sizeBytes") == 2097152
    assert effective_value(out, "freshTailMaxTokens") is MISSING
    assert effective_value(out, "independentLogFile.file") is MISSING
    assert effective_value(out, "stripInjectedContextTags.0") is MISSING
    assert effective_value(out, "enabled.value") is MISSING
    assert effective_value(out, "nope") is MISSING
    assert effective_value(out, "dbPath.x") is MISSING
    assert not MISSING and repr(MISSING) == "MISSING"


def test_effective_value_distinguishes_null_from_missing() -> None:
    assert effective_value({"a": None}, "a") is None
    assert effective_value({"a": None}, "b") is MISSING


# ---------------------------------------------------------------------------------------
# the pydantic-settings model generated from the key table


def test_attribute_names_follow_the_config_spelling() -> None:
    from lcm_cli.engine.config.model import attribute_name

    assert attribute_name("cacheTTLSeconds") == "cache_ttl_seconds"
    assert attribute_name("compactUntilUnderDeadlineMs") == "compact_until_under_deadline_ms"
    assert attribute_name("max") == "max"


def test_enum_keys_are_typed_as_their_members() -> None:
    from pydantic import TypeAdapter, ValidationError

    field = LcmSettings.model_fields["proactive_threshold_compaction_mode"]
    assert field.alias == "proactiveThresholdCompactionMode"
    assert TypeAdapter(field.annotation).validate_python("inline") == "inline"
    with pytest.raises(ValidationError):
        TypeAdapter(field.annotation).validate_python("x")


def test_load_settings_types_and_nested_models() -> None:
    settings_obj = load_settings(
        {"leafChunkTokens": 30000, "dbPath": "/a.db", "fallbackProviders": [{"provider": "p", "model": "m"}]},
        {"LCM_LOG_FILE": "/l.log"},
        STATE,
    )
    assert isinstance(settings_obj, LcmSettings)
    assert settings_obj.database_path == "/a.db"
    assert settings_obj.bootstrap_max_tokens == 9000
    assert settings_obj.incremental_max_depth == settings_obj.sweep_max_depth == 1
    assert settings_obj.dynamic_leaf_chunk_tokens.max == 60000
    assert settings_obj.independent_log_file.file == "/l.log"
    assert settings_obj.fallback_providers[0].provider == "p"
    assert settings_obj.fresh_tail_max_tokens is None


def test_settings_model_fields_follow_the_effective_order() -> None:
    aliases = [f.alias or name for name, f in LcmSettings.model_fields.items()]
    assert aliases == TOP_LEVEL_ORDER


def test_direct_construction_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "9")
    monkeypatch.setenv("OPENCLAW_STATE_DIR", "/proc-state")
    out = LcmSettings().to_effective_dict()  # type: ignore[call-arg]
    assert out == resolve_effective({}, dict(os.environ), "/proc-state")
    assert out["freshTailCount"] == 9


def test_pydantic_env_parsing_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic-settings would read a variable named after the field; only LCM_* count.
    monkeypatch.setenv("freshTailCount", "3")
    monkeypatch.setenv("FRESH_TAIL_COUNT", "3")
    assert load_settings({}, dict(os.environ), STATE).fresh_tail_count == 64


_ENV_TEXT = st.sampled_from(
    [
        "",
        " ",
        "0",
        "1",
        "-1",
        "12abc",
        "1.9",
        " 42 ",
        "0x10",
        "1e3",
        "true",
        "false",
        "TRUE",
        "Infinity",
        "abc",
        "a, ,b",
        "p/m, x/y",
        "/m",
        "inline",
        " WARN ",
        "capture-only",
        "\u00a05",
        "63",
        "64",
        "0.95",
        "2.5",
        ",",
        "9007199254740993",
        "Europe/Paris",
    ]
) | st.text(max_size=6)
_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-5, 70000)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | _ENV_TEXT
)
_JSONISH = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["provider", "model", "x"]), inner, max_size=2)
    ),
    max_leaves=5,
)
_MATCH = st.dictionaries(
    st.sampled_from(["model", "sessionPattern", "modelContextWindowMin", "modelContextWindowMax"]),
    st.sampled_from(["m", " ", "", 0, 1, 5, "5", 1.5, None, 100000]),
    max_size=3,
)
_RULE = st.fixed_dictionaries(
    {"match": _MATCH},
    optional={
        "contextThreshold": st.sampled_from([0, 0.5, 1, "0.3", 1.5, None, "x"]),
        "name": st.sampled_from(["n", " ", 3]),
        "freshTailCount": st.sampled_from([1, 0, "4", 2.5]),
        "leafChunkTokens": st.sampled_from([1, 0, "4", 2.5]),
    },
)

_PLUGIN_PATHS = [
    k.path
    for k in CONFIG_KEYS
    if k.coercion is not Coercion.OBJECT and k.coercion is not Coercion.THRESHOLD_OVERRIDES
]


@st.composite
def _plugin_configs(draw: st.DrawFn) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for path in draw(st.lists(st.sampled_from(_PLUGIN_PATHS), max_size=12, unique=True)):
        *parents, leaf = path.split(".")
        node = config
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = draw(_JSONISH)
    if draw(st.booleans()):
        config["contextThresholdOverrides"] = draw(st.lists(_RULE, max_size=2))
    return config


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plugin=_plugin_configs(),
    env=st.dictionaries(st.sampled_from(env_var_names()), _ENV_TEXT, max_size=10),
    state_dir=st.sampled_from(["/st", " /st/ ", "", "a/../b"]),
)
def test_generated_types_hold_every_resolved_value(
    plugin: dict[str, Any], env: dict[str, str], state_dir: str
) -> None:
    # The model's only source is the resolver, so this checks the types generated from the
    # schema nodes: every value the resolver can produce validates and dumps unchanged
    # (ints stay ints, enum members fit their Literal, unset optionals are dropped).
    try:
        expected: Any = json.dumps(resolve_effective(plugin, env, state_dir))
    except ConfigRuntimeError as exc:
        expected = ("error", exc.reason)
    try:
        got: Any = json.dumps(load_settings(plugin, env, state_dir).to_effective_dict())
    except ConfigRuntimeError as exc:
        got = ("error", exc.reason)
    assert got == expected


# ---------------------------------------------------------------------------------------
# start-up cost


def test_plain_modules_do_not_import_pydantic() -> None:
    code = (
        "import json, sys\n"
        "import lcm_cli.engine.config.resolve as s, lcm_cli.engine.config.schema as c\n"
        "s.resolve_effective({'contextThresholdOverrides': []}, {}, '/x')\n"
        "c.validate({}, c.MANIFEST_SCHEMA)\n"
        "heavy = ('pydantic', 'pydantic_core', 'pydantic_settings', 'typer', 'rich',"
        " 'sqlite_utils')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_context_types_the_config_once_and_warm_copies_share_it(tmp_path: Any) -> None:
    from lcm_cli.engine.context import Context

    ctx = Context(openclaw_dir=str(tmp_path), env={"LCM_FRESH_TAIL_COUNT": "9"})
    ctx.resolve_paths()
    typed = ctx.settings
    assert typed is ctx.settings and typed.fresh_tail_count == 9  # type: ignore[attr-defined]
    assert ctx.effective == typed.to_effective_dict()
    assert ctx.warm_copy().settings is typed
