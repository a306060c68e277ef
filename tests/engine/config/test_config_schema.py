"""The manifest schema built from the key table, and the validator `config set` uses."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lcm_cli.engine.config.keys import CONFIG_KEYS, LCM_KEYS, SHIM_KEYS, UNSET, Coercion, Derived
from lcm_cli.engine.config.schema import (
    MANIFEST_SCHEMA,
    MAX_ERRORS,
    build_manifest_schema,
    schema_node_for,
    settable_paths,
    validate,
)

# Every key of docs/reference/config.md §4, as listed there.
DOCUMENTED_KEYS = """
enabled hostFallbackMode databasePath dbPath largeFilesDir ignoreSessionPatterns
statelessSessionPatterns skipStatelessSessions newSessionRetainDepth timezone pruneHeartbeatOk
transcriptGcEnabled enableSummaryThinking proactiveThresholdCompactionMode stubLargeToolPayloads
promptAwareEviction contextThreshold contextThresholdOverrides freshTailCount freshTailMaxTokens
leafMinFanout condensedMinFanout condensedMinFanoutHard sweepMaxDepth incrementalMaxDepth
leafChunkTokens summaryPrefixTargetTokens maxSweepIterations sweepDeadlineMs
compactUntilUnderDeadlineMs bootstrapMaxTokens leafTargetTokens condensedTargetTokens
maxExpandTokens largeFileThresholdTokens largeFileTokenThreshold maxAssemblyTokenBudget
summaryMaxOverageFactor fallbackMaxTokens summaryModel summaryProvider largeFileSummaryModel
largeFileSummaryProvider expansionModel expansionProvider delegationTimeoutMs summaryTimeoutMs
summaryCallWindowMs summaryMaxCallsPerWindow summarySpendBackoffMs customInstructions
circuitBreakerThreshold circuitBreakerCooldownMs replayFloodThresholdExternal
replayFloodThresholdInternal fallbackProviders stripInjectedContextTags
autoRotateSessionFiles.enabled autoRotateSessionFiles.createBackups
autoRotateSessionFiles.sizeBytes autoRotateSessionFiles.startup autoRotateSessionFiles.runtime
independentLogFile.enabled independentLogFile.file independentLogFile.maxFileBytes
cacheAwareCompaction.enabled cacheAwareCompaction.cacheTTLSeconds
cacheAwareCompaction.maxColdCacheCatchupPasses cacheAwareCompaction.hotCachePressureFactor
cacheAwareCompaction.hotCacheBudgetHeadroomRatio cacheAwareCompaction.coldCacheObservationThreshold
cacheAwareCompaction.criticalBudgetPressureRatio dynamicLeafChunkTokens.enabled
dynamicLeafChunkTokens.max
""".split()  # noqa: SIM905

NESTED_OBJECTS = [
    "autoRotateSessionFiles",
    "independentLogFile",
    "cacheAwareCompaction",
    "dynamicLeafChunkTokens",
]

# (path, expected schema node) for a sample of documented constraints (config.md §4).
DOCUMENTED_NODES = [
    ("enabled", {"type": "boolean"}),
    ("hostFallbackMode", {"type": "string", "enum": ["error", "capture-only"]}),
    ("newSessionRetainDepth", {"type": "integer", "minimum": -1}),
    ("contextThreshold", {"type": "number", "minimum": 0, "maximum": 1}),
    ("freshTailCount", {"type": "integer", "minimum": 1}),
    ("freshTailMaxTokens", {"type": "integer", "minimum": 0}),
    ("leafMinFanout", {"type": "integer", "minimum": 2}),
    ("largeFileThresholdTokens", {"type": "integer", "minimum": 1000}),
    ("largeFileTokenThreshold", {"type": "integer", "minimum": 1000}),
    ("maxAssemblyTokenBudget", {"type": "integer", "minimum": 1000}),
    ("summaryMaxOverageFactor", {"type": "number", "minimum": 1}),
    ("fallbackMaxTokens", {"type": "integer", "minimum": 64}),
    ("ignoreSessionPatterns", {"type": "array", "items": {"type": "string"}}),
    ("proactiveThresholdCompactionMode", {"type": "string", "enum": ["deferred", "inline"]}),
    ("autoRotateSessionFiles.startup", {"type": "string", "enum": ["rotate", "warn", "off"]}),
    ("cacheAwareCompaction.hotCacheBudgetHeadroomRatio", {"type": "number", "minimum": 0, "maximum": 0.95}),
    ("cacheAwareCompaction.coldCacheObservationThreshold", {"type": "integer", "minimum": 1}),
    ("dynamicLeafChunkTokens.max", {"type": "integer", "minimum": 1}),
    (
        "fallbackProviders",
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"provider": {"type": "string"}, "model": {"type": "string"}},
                "required": ["provider", "model"],
                "additionalProperties": False,
            },
        },
    ),
]


def errors_of(value: Any, path: str | None = None) -> list[dict[str, str]]:
    """Validate ``value`` against the node of ``path`` (the whole config when None)."""
    schema = MANIFEST_SCHEMA if path is None else schema_node_for(path)
    assert schema is not None
    return validate(value, schema)


# ---------------------------------------------------------------------------------------
# the schema


@pytest.mark.parametrize("path", DOCUMENTED_KEYS)
def test_every_documented_key_has_a_schema_node(path: str) -> None:
    node = schema_node_for(path)
    assert node is not None and "type" in node


@pytest.mark.parametrize(("path", "node"), DOCUMENTED_NODES)
def test_documented_constraints(path: str, node: dict[str, Any]) -> None:
    assert schema_node_for(path) == node


def test_table_holds_exactly_the_documented_keys_plus_their_parent_objects() -> None:
    assert sorted(k.path for k in CONFIG_KEYS) == sorted(DOCUMENTED_KEYS + NESTED_OBJECTS)


def test_settable_paths_are_the_table_paths() -> None:
    assert sorted(settable_paths()) == sorted(k.path for k in (*CONFIG_KEYS, *LCM_KEYS, *SHIM_KEYS))


def test_threshold_override_items_match_section_6() -> None:
    items = MANIFEST_SCHEMA["properties"]["contextThresholdOverrides"]["items"]
    assert items["required"] == ["match", "contextThreshold"]
    assert items["additionalProperties"] is False
    assert set(items["properties"]) == {
        "name",
        "match",
        "contextThreshold",
        "freshTailCount",
        "leafChunkTokens",
    }
    match = items["properties"]["match"]
    assert match["minProperties"] == 1 and match["additionalProperties"] is False
    assert match["properties"]["model"] == {"type": "string", "minLength": 1}
    assert match["properties"]["sessionPattern"] == {"type": "string", "minLength": 1}
    assert match["properties"]["modelContextWindowMin"] == {"type": "integer", "minimum": 1}
    assert match["properties"]["modelContextWindowMax"] == {"type": "integer", "minimum": 1}
    assert items["properties"]["contextThreshold"] == {"type": "number", "minimum": 0, "maximum": 1}


@pytest.mark.parametrize("name", [None, *NESTED_OBJECTS])
def test_every_object_rejects_additional_properties(name: str | None) -> None:
    node = MANIFEST_SCHEMA if name is None else schema_node_for(name)
    assert node is not None
    assert node["type"] == "object" and node["additionalProperties"] is False
    assert node["properties"]


@pytest.mark.parametrize(
    "path",
    [
        "",
        "contextThresholdOverrides.0",
        "contextThresholdOverrides.0.match",
        "contextThresholdOverrides.items",
        "fallbackProviders.0.provider",
        "__proto__",
        "constructor",
        "toString",
        "hasOwnProperty",
        "enabled.value",
        "autoRotateSessionFiles.nope",
        "properties",
        "autoRotateSessionFiles.properties",
        "Enabled",
        "enabled ",
    ],
)
def test_paths_outside_the_manifest_are_not_settable(path: str) -> None:
    assert schema_node_for(path) is None


def test_schema_node_is_a_copy() -> None:
    node = schema_node_for("autoRotateSessionFiles")
    assert node is not None
    node["properties"].clear()
    assert schema_node_for("autoRotateSessionFiles.enabled") == {"type": "boolean"}
    assert build_manifest_schema() == MANIFEST_SCHEMA


def test_static_defaults_satisfy_their_own_schema() -> None:
    for key in CONFIG_KEYS:
        if key.default is UNSET or isinstance(key.default, Derived):
            continue
        assert validate(key.default, key.schema) == [], key.path


def test_enum_members_come_from_the_table() -> None:
    for key in CONFIG_KEYS:
        if key.coercion is Coercion.ENUM or key.coercion is Coercion.HOST_FALLBACK_MODE:
            assert key.default in key.schema["enum"]


# ---------------------------------------------------------------------------------------
# validation: one test per message category (cli-contract.md §13)


def test_valid_config_has_no_errors() -> None:
    config = {
        "enabled": False,
        "dbPath": "/x/lcm.db",
        "contextThreshold": 0.5,
        "freshTailCount": 32,
        "newSessionRetainDepth": -1,
        "ignoreSessionPatterns": ["agent:*:cron:**"],
        "autoRotateSessionFiles": {"startup": "warn", "sizeBytes": 1},
        "contextThresholdOverrides": [
            {"name": "big", "match": {"modelContextWindowMin": 100000}, "contextThreshold": 1},
        ],
        "fallbackProviders": [{"provider": "openai", "model": "gpt"}],
        "stripInjectedContextTags": [],
    }
    assert errors_of(config) == []
    assert errors_of({}) == []


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [
        ([], None, "expected an object"),
        (None, None, "expected an object"),
        ("x", "autoRotateSessionFiles", "expected an object"),
        ({}, "ignoreSessionPatterns", "expected an array"),
        (3, "dbPath", "expected a string"),
        (None, "customInstructions", "expected a string"),
        ("true", "enabled", "expected a boolean"),
        (0, "enabled", "expected a boolean"),
        ("0.5", "contextThreshold", "expected a number"),
        (True, "contextThreshold", "expected a number"),
        (math.nan, "contextThreshold", "expected a number"),
        (math.inf, "summaryMaxOverageFactor", "expected a number"),
        (5.5, "freshTailCount", "expected an integer"),
        (False, "freshTailCount", "expected an integer"),
        ("64", "freshTailCount", "expected an integer"),
    ],
)
def test_type_mismatch_messages(value: Any, path: str | None, message: str) -> None:
    assert errors_of(value, path) == [{"path": "", "message": message}]


def test_type_mismatch_inside_the_config_points_at_the_key() -> None:
    assert errors_of({"freshTailCount": "64", "enabled": 1}) == [
        {"path": "/freshTailCount", "message": "expected an integer"},
        {"path": "/enabled", "message": "expected a boolean"},
    ]


def test_required_property_missing() -> None:
    assert errors_of({"contextThresholdOverrides": [{}]}) == [
        {"path": "/contextThresholdOverrides/0/match", "message": "required property missing"},
        {"path": "/contextThresholdOverrides/0/contextThreshold", "message": "required property missing"},
    ]
    assert errors_of([{"provider": "p"}], "fallbackProviders") == [
        {"path": "/0/model", "message": "required property missing"},
    ]


def test_unexpected_property() -> None:
    assert errors_of({"enabled": True, "bogus": 1, "autoRotateSessionFiles": {"x": 1}}) == [
        {"path": "/bogus", "message": "unexpected property"},
        {"path": "/autoRotateSessionFiles/x", "message": "unexpected property"},
    ]
    assert errors_of([{"provider": "p", "model": "m", "extra": 1}], "fallbackProviders") == [
        {"path": "/0/extra", "message": "unexpected property"},
    ]


def test_unexpected_properties_follow_js_key_order() -> None:
    # JS lists integer-like keys first, ascending, then the rest in insertion order.
    errors = errors_of({"b": 1, "10": 1, "2": 1, "a": 1, "01": 1})
    assert [e["path"] for e in errors] == ["/2", "/10", "/b", "/a", "/01"]


def test_javascript_prototype_names_are_plain_unknown_keys() -> None:
    errors = errors_of({"__proto__": {}, "constructor": 1, "toString": "x"})
    assert errors == [
        {"path": "/__proto__", "message": "unexpected property"},
        {"path": "/constructor", "message": "unexpected property"},
        {"path": "/toString", "message": "unexpected property"},
    ]


def test_fewer_than_min_properties() -> None:
    errors = errors_of({"contextThresholdOverrides": [{"match": {}, "contextThreshold": 0.5}]})
    assert errors == [
        {
            "path": "/contextThresholdOverrides/0/match",
            "message": "has fewer properties than minProperties (1)",
        }
    ]


def test_shorter_than_min_length() -> None:
    rule = {"match": {"model": ""}, "contextThreshold": 0.5}
    assert errors_of({"contextThresholdOverrides": [rule]}) == [
        {"path": "/contextThresholdOverrides/0/match/model", "message": "shorter than minLength (1)"},
    ]


def test_min_length_counts_utf16_code_units() -> None:
    schema = {"type": "string", "minLength": 2}
    assert validate("\U0001f600", schema) == []  # one astral character = two code units
    assert validate("é", schema) == [{"path": "", "message": "shorter than minLength (2)"}]


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [
        (0, "freshTailCount", "below minimum (1)"),
        (-2, "sweepMaxDepth", "below minimum (-1)"),
        (-1e2, "newSessionRetainDepth", "below minimum (-1)"),
        (63, "fallbackMaxTokens", "below minimum (64)"),
        (999, "largeFileThresholdTokens", "below minimum (1000)"),
        (-0.1, "contextThreshold", "below minimum (0)"),
        (1.01, "contextThreshold", "above maximum (1)"),
        (0.96, "cacheAwareCompaction.hotCacheBudgetHeadroomRatio", "above maximum (0.95)"),
    ],
)
def test_range_messages(value: Any, path: str, message: str) -> None:
    assert errors_of(value, path) == [{"path": "", "message": message}]


def test_not_in_enum() -> None:
    assert errors_of("ERROR", "hostFallbackMode") == [
        {"path": "", "message": "not in enum (error, capture-only)"},
    ]
    assert errors_of({"autoRotateSessionFiles": {"runtime": "never"}}) == [
        {"path": "/autoRotateSessionFiles/runtime", "message": "not in enum (rotate, warn, off)"},
    ]
    # A type mismatch is reported alone, without the enum message.
    assert errors_of(5, "hostFallbackMode") == [{"path": "", "message": "expected a string"}]


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (5.0, "freshTailCount"),
        (1e2, "freshTailCount"),
        (-1e0, "sweepMaxDepth"),
        (1e3, "largeFileThresholdTokens"),
        (2.0, "autoRotateSessionFiles.sizeBytes"),
        (1, "contextThreshold"),
        (0, "contextThreshold"),
    ],
)
def test_integral_floats_and_ints_are_accepted(value: Any, path: str) -> None:
    assert errors_of(value, path) == []


def test_array_items_are_validated_with_their_index() -> None:
    assert errors_of({"ignoreSessionPatterns": ["ok", 3, None]}) == [
        {"path": "/ignoreSessionPatterns/1", "message": "expected a string"},
        {"path": "/ignoreSessionPatterns/2", "message": "expected a string"},
    ]


def test_several_errors_in_one_override() -> None:
    rule = {"name": 3, "match": {"modelContextWindowMin": 0, "x": 1}, "contextThreshold": 2}
    assert errors_of({"contextThresholdOverrides": [rule]}) == [
        {"path": "/contextThresholdOverrides/0/name", "message": "expected a string"},
        {"path": "/contextThresholdOverrides/0/match/modelContextWindowMin", "message": "below minimum (1)"},
        {"path": "/contextThresholdOverrides/0/match/x", "message": "unexpected property"},
        {"path": "/contextThresholdOverrides/0/contextThreshold", "message": "above maximum (1)"},
    ]


def test_at_most_twenty_errors_in_order() -> None:
    config = {f"unknown{i:02d}": i for i in range(30)}
    errors = errors_of(config)
    assert len(errors) == MAX_ERRORS == 20
    assert [e["path"] for e in errors] == [f"/unknown{i:02d}" for i in range(20)]
    many_items = {"ignoreSessionPatterns": list(range(25))}
    assert len(errors_of(many_items)) == 20


def test_base_path_prefixes_every_pointer() -> None:
    node = schema_node_for("autoRotateSessionFiles")
    assert node is not None
    assert validate({"sizeBytes": 0}, node, base_path="/autoRotateSessionFiles") == [
        {"path": "/autoRotateSessionFiles/sizeBytes", "message": "below minimum (1)"},
    ]


def test_lcm_own_keys_resolve_env_then_plugin_then_default() -> None:
    from lcm_cli.engine.config.resolve import lcm_setting

    name = "pendingPreparationBudgetMs"
    assert lcm_setting(name, {}, {}) == 30000
    assert lcm_setting(name, {name: 1500}, {}) == 1500
    assert lcm_setting(name, {name: 1500}, {"LCM_PENDING_PREPARATION_BUDGET_MS": "0"}) == 0
    assert lcm_setting(name, {name: "soon"}, {"LCM_PENDING_PREPARATION_BUDGET_MS": "x"}) == 30000


def test_agent_scope_resolves_env_then_plugin_then_default() -> None:
    from lcm_cli.engine.config.resolve import lcm_setting

    name = "agentScope"
    assert lcm_setting(name, {}, {}) == "unrestricted"
    assert lcm_setting(name, {name: "agent"}, {}) == "agent"
    assert lcm_setting(name, {name: "agent"}, {"LCM_AGENT_SCOPE": " Session-Family "}) == "session-family"
