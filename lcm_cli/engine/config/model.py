"""The effective Lossless config as a pydantic-settings model.

Same answer as :func:`lcm_cli.engine.config.resolve.resolve_effective`, expressed as typed
settings for Python callers and ``config show/get/set``. Importing this module costs
pydantic-settings (~180 ms): JSON read commands use :mod:`lcm_cli.engine.config.resolve` instead.

Sources, highest priority first: environment, plugin config, defaults. Every source reads
values through the coercion functions of :mod:`lcm_cli.engine.config.resolve` (one copy of the
JavaScript quirks) and leaves out what a source cannot supply, so the next source wins.
The cross-field rules (derived defaults, the ``incrementalMaxDepth`` mirror, the
``dynamicLeafChunkTokens.max`` floor) run once on the merged values.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from lcm_cli.engine.config.keys import UNSET, effective_fields
from lcm_cli.engine.config.resolve import (
    MISSING,
    finish_flat,
    flatten,
    nest,
    static_or_path_default,
    value_from_env,
    value_from_plugin,
)

#: A JS number as the resolver returns it: ``int`` when integral (< 1e21), else ``float``.
JsNumber = StrictInt | StrictFloat


@dataclass(frozen=True)
class _Inputs:
    plugin_config: Mapping[str, Any]
    env: Mapping[str, str]
    state_dir: str | None


_INPUTS: ContextVar[_Inputs | None] = ContextVar("lcm_settings_inputs", default=None)


def _current_inputs() -> _Inputs:
    inputs = _INPUTS.get()
    if inputs is None:
        # Constructed directly: the process environment, no plugin config.
        return _Inputs({}, dict(os.environ), os.environ.get("OPENCLAW_STATE_DIR"))
    return inputs


@contextmanager
def _using(inputs: _Inputs) -> Iterator[None]:
    token = _INPUTS.set(inputs)
    try:
        yield
    finally:
        _INPUTS.reset(token)


class _FlatSource(PydanticBaseSettingsSource):
    """A source that resolves every effective field by itself and returns nested values."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ resolves all fields at once from the key table.
        return None, field_name, False

    def read(self, inputs: _Inputs) -> dict[str, Any]:
        raise NotImplementedError

    def __call__(self) -> dict[str, Any]:
        return self.read(_current_inputs())


class EnvSource(_FlatSource):
    """``LCM_*`` / ``TZ`` environment variables, parsed with the runtime's env rules."""

    def read(self, inputs: _Inputs) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        for field in effective_fields():
            if field.mirror_of is None:
                value = value_from_env(field, inputs.env)
                if value is not MISSING:
                    flat[field.name] = value
        return nest(flat)


class PluginConfigSource(_FlatSource):
    """``plugins.entries.lossless-claw.config``; aliases ranked as the runtime ranks them."""

    def read(self, inputs: _Inputs) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        for field in effective_fields():
            if field.mirror_of is None:
                value = value_from_plugin(field, inputs.plugin_config)
                if value is not MISSING:
                    flat[field.name] = value
        return nest(flat)


class DefaultsSource(_FlatSource):
    """Static defaults plus the state-dir paths and the system timezone."""

    def read(self, inputs: _Inputs) -> dict[str, Any]:
        flat: dict[str, Any] = {}
        for field in effective_fields():
            if field.mirror_of is None:
                value = static_or_path_default(field, inputs.state_dir)
                if value is not MISSING and value is not UNSET:
                    flat[field.name] = value
        return nest(flat)


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ThresholdMatch(_Model):
    """The matchers of one ``contextThresholdOverrides`` rule."""

    model: StrictStr | None = None
    model_context_window_min: JsNumber | None = Field(None, alias="modelContextWindowMin")
    model_context_window_max: JsNumber | None = Field(None, alias="modelContextWindowMax")
    session_pattern: StrictStr | None = Field(None, alias="sessionPattern")


class ThresholdOverride(_Model):
    """One normalized ``contextThresholdOverrides`` rule."""

    name: StrictStr | None = None
    match: ThresholdMatch
    context_threshold: JsNumber = Field(alias="contextThreshold")
    fresh_tail_count: JsNumber | None = Field(None, alias="freshTailCount")
    leaf_chunk_tokens: JsNumber | None = Field(None, alias="leafChunkTokens")


class FallbackProvider(_Model):
    """One summarizer fallback pair."""

    provider: StrictStr
    model: StrictStr


class AutoRotateSessionFiles(_Model):
    """``autoRotateSessionFiles``."""

    enabled: StrictBool
    create_backups: StrictBool = Field(alias="createBackups")
    size_bytes: JsNumber = Field(alias="sizeBytes")
    startup: StrictStr
    runtime: StrictStr


class IndependentLogFile(_Model):
    """``independentLogFile``."""

    enabled: StrictBool
    file: StrictStr | None = None
    max_file_bytes: JsNumber = Field(alias="maxFileBytes")


class CacheAwareCompaction(_Model):
    """``cacheAwareCompaction`` (deprecated, accepted)."""

    enabled: StrictBool
    cache_ttl_seconds: JsNumber = Field(alias="cacheTTLSeconds")
    max_cold_cache_catchup_passes: JsNumber = Field(alias="maxColdCacheCatchupPasses")
    hot_cache_pressure_factor: JsNumber = Field(alias="hotCachePressureFactor")
    hot_cache_budget_headroom_ratio: JsNumber = Field(alias="hotCacheBudgetHeadroomRatio")
    cold_cache_observation_threshold: JsNumber = Field(alias="coldCacheObservationThreshold")
    critical_budget_pressure_ratio: JsNumber = Field(alias="criticalBudgetPressureRatio")


class DynamicLeafChunkTokens(_Model):
    """``dynamicLeafChunkTokens`` (deprecated, accepted)."""

    enabled: StrictBool
    max: JsNumber


class LcmSettings(BaseSettings):
    """The effective ``LcmConfig``; fields are declared in JSON output order."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="forbid")

    enabled: StrictBool
    host_fallback_mode: StrictStr = Field(alias="hostFallbackMode")
    database_path: StrictStr = Field(alias="databasePath")
    large_files_dir: StrictStr = Field(alias="largeFilesDir")
    ignore_session_patterns: list[StrictStr] = Field(alias="ignoreSessionPatterns")
    stateless_session_patterns: list[StrictStr] = Field(alias="statelessSessionPatterns")
    skip_stateless_sessions: StrictBool = Field(alias="skipStatelessSessions")
    context_threshold: JsNumber = Field(alias="contextThreshold")
    context_threshold_overrides: list[ThresholdOverride] = Field(alias="contextThresholdOverrides")
    fresh_tail_count: JsNumber = Field(alias="freshTailCount")
    fresh_tail_max_tokens: JsNumber | None = Field(None, alias="freshTailMaxTokens")
    prompt_aware_eviction: StrictBool = Field(alias="promptAwareEviction")
    stub_large_tool_payloads: StrictBool = Field(alias="stubLargeToolPayloads")
    new_session_retain_depth: JsNumber = Field(alias="newSessionRetainDepth")
    leaf_min_fanout: JsNumber = Field(alias="leafMinFanout")
    condensed_min_fanout: JsNumber = Field(alias="condensedMinFanout")
    condensed_min_fanout_hard: JsNumber = Field(alias="condensedMinFanoutHard")
    sweep_max_depth: JsNumber = Field(alias="sweepMaxDepth")
    incremental_max_depth: JsNumber = Field(alias="incrementalMaxDepth")
    leaf_chunk_tokens: JsNumber = Field(alias="leafChunkTokens")
    summary_prefix_target_tokens: JsNumber | None = Field(None, alias="summaryPrefixTargetTokens")
    max_sweep_iterations: JsNumber = Field(alias="maxSweepIterations")
    sweep_deadline_ms: JsNumber = Field(alias="sweepDeadlineMs")
    compact_until_under_deadline_ms: JsNumber = Field(alias="compactUntilUnderDeadlineMs")
    bootstrap_max_tokens: JsNumber = Field(alias="bootstrapMaxTokens")
    leaf_target_tokens: JsNumber = Field(alias="leafTargetTokens")
    condensed_target_tokens: JsNumber = Field(alias="condensedTargetTokens")
    max_expand_tokens: JsNumber = Field(alias="maxExpandTokens")
    large_file_token_threshold: JsNumber = Field(alias="largeFileTokenThreshold")
    summary_provider: StrictStr = Field(alias="summaryProvider")
    summary_model: StrictStr = Field(alias="summaryModel")
    large_file_summary_provider: StrictStr = Field(alias="largeFileSummaryProvider")
    large_file_summary_model: StrictStr = Field(alias="largeFileSummaryModel")
    expansion_provider: StrictStr = Field(alias="expansionProvider")
    expansion_model: StrictStr = Field(alias="expansionModel")
    delegation_timeout_ms: JsNumber = Field(alias="delegationTimeoutMs")
    summary_timeout_ms: JsNumber = Field(alias="summaryTimeoutMs")
    summary_call_window_ms: JsNumber = Field(alias="summaryCallWindowMs")
    summary_max_calls_per_window: JsNumber = Field(alias="summaryMaxCallsPerWindow")
    summary_spend_backoff_ms: JsNumber = Field(alias="summarySpendBackoffMs")
    timezone: StrictStr
    prune_heartbeat_ok: StrictBool = Field(alias="pruneHeartbeatOk")
    transcript_gc_enabled: StrictBool = Field(alias="transcriptGcEnabled")
    enable_summary_thinking: StrictBool = Field(alias="enableSummaryThinking")
    proactive_threshold_compaction_mode: StrictStr = Field(alias="proactiveThresholdCompactionMode")
    auto_rotate_session_files: AutoRotateSessionFiles = Field(alias="autoRotateSessionFiles")
    independent_log_file: IndependentLogFile = Field(alias="independentLogFile")
    max_assembly_token_budget: JsNumber | None = Field(None, alias="maxAssemblyTokenBudget")
    summary_max_overage_factor: JsNumber = Field(alias="summaryMaxOverageFactor")
    fallback_max_tokens: JsNumber = Field(alias="fallbackMaxTokens")
    custom_instructions: StrictStr = Field(alias="customInstructions")
    circuit_breaker_threshold: JsNumber = Field(alias="circuitBreakerThreshold")
    circuit_breaker_cooldown_ms: JsNumber = Field(alias="circuitBreakerCooldownMs")
    replay_flood_threshold_external: JsNumber = Field(alias="replayFloodThresholdExternal")
    replay_flood_threshold_internal: JsNumber = Field(alias="replayFloodThresholdInternal")
    fallback_providers: list[FallbackProvider] = Field(alias="fallbackProviders")
    cache_aware_compaction: CacheAwareCompaction = Field(alias="cacheAwareCompaction")
    dynamic_leaf_chunk_tokens: DynamicLeafChunkTokens = Field(alias="dynamicLeafChunkTokens")
    strip_injected_context_tags: list[StrictStr] = Field(alias="stripInjectedContextTags")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Environment > plugin config > defaults; pydantic's own env parsing is not used."""
        return (
            EnvSource(settings_cls),
            PluginConfigSource(settings_cls),
            DefaultsSource(settings_cls),
        )

    @model_validator(mode="before")
    @classmethod
    def _apply_cross_field_rules(cls, data: Any) -> Any:
        # The merged sources are nested by alias; the shared rules work on dot paths.
        if not isinstance(data, dict):
            return data
        return nest(finish_flat(flatten(data)))

    def to_effective_dict(self) -> dict[str, Any]:
        """The JSON-ready effective config, equal to ``settings.resolve_effective``."""
        return self.model_dump(by_alias=True, exclude_none=True)


def load_settings(
    plugin_config: Mapping[str, Any] | None, env: Mapping[str, str], state_dir: str | None
) -> LcmSettings:
    """Resolve the effective config from explicit inputs (not the process environment).

    ``state_dir`` stands in for ``OPENCLAW_STATE_DIR``. Raises
    :class:`lcm_cli.engine.config.resolve.ConfigRuntimeError` when ``contextThresholdOverrides``
    fails runtime validation, like ``resolve_effective``.
    """
    with _using(_Inputs(plugin_config or {}, env, state_dir)):
        return LcmSettings()  # type: ignore[call-arg]  # the sources supply every field
