"""The typed view of the config (engine/config/view.py): bound to the key table, equal to the resolver."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.config.keys import LCM_KEYS, ConfigKey, effective_fields
from lcm_cli.engine.config.resolve import MISSING, effective_value, lcm_setting, resolve_effective
from lcm_cli.engine.config.view import EngineSettings, LcmSetting, Setting, UnknownSettingError
from lcm_cli.engine.context import Context

STATE = "/tmp/lcm-view-state"
PACKAGE = Path(__file__).resolve().parents[3] / "lcm_cli"


def _declared() -> dict[str, Setting[Any] | LcmSetting[Any]]:
    return {
        name: value
        for name, value in vars(EngineSettings).items()
        if isinstance(value, (Setting, LcmSetting))
    }


def _set_name_error(descriptor: Setting[Any] | LcmSetting[Any]) -> BaseException:
    """What defining a view attribute with ``descriptor`` raises (3.11 wraps __set_name__'s error)."""
    with pytest.raises((UnknownSettingError, RuntimeError)) as info:
        type("Typo", (), {"fresh_tail_count": descriptor})
    error: BaseException | None = info.value
    while error is not None and not isinstance(error, UnknownSettingError):
        error = error.__cause__
    assert error is not None, info.value
    return error


def test_a_misspelt_path_fails_when_the_class_is_created() -> None:
    assert "freshTailCuont" in str(_set_name_error(Setting[int]("freshTailCuont")))
    # A legacy spelling feeds another field: the effective config has no such field to read.
    assert "largeFileThresholdTokens" in str(_set_name_error(Setting[int]("largeFileThresholdTokens")))
    # lcm's own keys are checked against LCM_KEYS, the effective fields against CONFIG_KEYS.
    assert "agentScope" in str(_set_name_error(Setting[str]("agentScope")))
    assert "freshTailCount" in str(_set_name_error(LcmSetting[int]("freshTailCount")))


def test_every_declared_path_is_in_the_key_table_once() -> None:
    declared = _declared()
    paths = [d.path for d in declared.values()]
    assert len(paths) == len(set(paths))
    fields = {f.name for f in effective_fields()}
    own = {k.path for k in LCM_KEYS}
    for descriptor in declared.values():
        assert descriptor.path in (fields if isinstance(descriptor, Setting) else own)


def test_a_setting_knows_its_declared_default() -> None:
    assert EngineSettings.fresh_tail_count.default == 64
    assert EngineSettings.large_file_token_threshold.default == 25000  # the legacy row's, same value


def _primary(path: str) -> ConfigKey:
    return next(f.primary for f in effective_fields() if f.name == path)


def _values(key: ConfigKey) -> tuple[Any, str | None]:
    """A plugin-config value and an environment value for ``key``, neither its default."""
    schema = key.schema
    kind = schema.get("type")
    if kind == "boolean":
        value = not key.default
        return value, "true" if value else "false"
    if kind == "string" and "enum" in schema:
        member = next(m for m in schema["enum"] if m != key.default)
        return member, member
    if kind == "string":
        zone = "Asia/Tokyo" if key.path == "timezone" else f"set-{key.path}"
        return zone, zone
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum")
        value = (low + high) / 2 if high is not None else low + 7
        return value, str(value)
    if key.path == "fallbackProviders":
        return [{"provider": "acme", "model": "m1"}], "acme/m1"
    if key.path == "contextThresholdOverrides":
        return [{"name": "r", "match": {"model": "m"}, "contextThreshold": 0.5}], None
    assert kind == "array", key.path
    return ["one", "two"], "one,two"


def test_the_view_answers_what_the_resolver_resolved_from_env_and_from_plugin_config() -> None:
    declared = _declared()
    plugin: dict[str, Any] = {}
    env: dict[str, str] = {}
    for descriptor in declared.values():
        if isinstance(descriptor, Setting):
            key = _primary(descriptor.path)
        else:
            key = next(k for k in LCM_KEYS if k.path == descriptor.path)
        plugin_value, env_value = _values(key)
        plugin[key.path] = plugin_value
        if env_value is not None:
            env[key.env[0]] = env_value
    defaults = resolve_effective({}, {}, STATE)
    for source_plugin, source_env in ((plugin, {}), ({}, env)):
        resolved = resolve_effective(source_plugin, source_env, STATE)
        view = EngineSettings(resolved, plugin_config=source_plugin, env=source_env)
        for name, descriptor in declared.items():
            got = getattr(view, name)
            if isinstance(descriptor, LcmSetting):
                assert got == lcm_setting(descriptor.path, source_plugin, source_env), name
                assert got != lcm_setting(descriptor.path, {}, {}), name
                continue
            expected = effective_value(resolved, descriptor.path)
            assert expected is not MISSING and got == expected, name
            if not (source_env and descriptor.path == "contextThresholdOverrides"):
                # Set, not defaulted (the overrides have no environment variable).
                assert got != effective_value(defaults, descriptor.path), name


def test_the_context_view_reads_the_contexts_resolved_config(tmp_path: Path) -> None:
    env = {"LCM_FRESH_TAIL_COUNT": "9", "LCM_AGENT_SCOPE": "agent", "OPENCLAW_STATE_DIR": str(tmp_path)}
    ctx = Context(env=env)
    ctx.resolve_paths()
    view = ctx.engine_settings
    assert view.fresh_tail_count == 9 and view.agent_scope == "agent"
    assert view.effective is ctx.effective  # one resolution, shared


def test_a_view_without_its_sources_refuses_lcms_own_keys() -> None:
    with pytest.raises(LookupError):
        _ = EngineSettings({}).pending_preparation_budget_ms


def test_an_override_names_attributes_not_paths() -> None:
    view = EngineSettings({"contextThreshold": 0.75, "freshTailCount": 64})
    assert view.overridden(context_threshold=0.5) == {"contextThreshold": 0.5, "freshTailCount": 64}
    with pytest.raises(UnknownSettingError):
        view.overridden(contextThreshold=0.5)


#: A read of the effective config by a string key: ``effective.get("k")``, ``effective["k"]``.
_STRING_KEYED = re.compile(r"""effective(\.get\(|\[)["']""")
#: Lookups in the key table by path: the view's descriptors make them (``Setting.default``).
_TABLE_LOOKUPS = ("lcm_setting(", "declared_default(", "key_by_path(")


def test_no_string_keyed_config_read_outside_engine_config() -> None:
    config_dir = PACKAGE / "engine" / "config"
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        if config_dir not in path.parents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _STRING_KEYED.search(line) or any(call in line for call in _TABLE_LOOKUPS)
    ]
    assert found == [], "read these through EngineSettings (engine/config/view.py)"
