"""The effective Lossless config as a pydantic-settings model, generated from the key table.

Nothing here is declared by hand: :class:`LcmSettings` gets one field per effective field
of :func:`lcm_cli.engine.config.keys.effective_fields`, in output order, typed from the
key's manifest schema node (``boolean`` → bool, ``string`` with ``enum`` → a Literal,
numbers → a JS number, arrays and objects → lists and nested models built the same way);
keys without a default are optional. Its one settings source is the resolver of
:mod:`lcm_cli.engine.config.resolve`, so precedence, the JavaScript coercion quirks and
the cross-field rules exist once, and the model adds the typed, validated view.

Importing this module costs pydantic-settings and building the model (measured in
docs/dependencies.md): it is for the paths that pay that once — ``config show/get/set``
and a warm ``lcm serve`` context. The JSON read commands call the resolver directly and
never import pydantic.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, create_model
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from lcm_cli.engine.config.keys import STATE_DIR_ENV, EffectiveField, effective_fields
from lcm_cli.engine.config.resolve import nest, resolve_flat

#: A JS number as the resolver returns it: ``int`` when integral (< 1e21), else ``float``.
#: Bounds are not enforced here: `config show` must still type a config whose problems it
#: lists; the manifest validator (:mod:`lcm_cli.engine.config.schema`) owns the bounds.
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
        return _Inputs({}, dict(os.environ), os.environ.get(STATE_DIR_ENV))
    return inputs


@contextmanager
def _using(inputs: _Inputs) -> Iterator[None]:
    token = _INPUTS.set(inputs)
    try:
        yield
    finally:
        _INPUTS.reset(token)


class ResolvedSource(PydanticBaseSettingsSource):
    """Environment > plugin config > defaults, as :func:`resolve_flat` applies them."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ resolves every field at once.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        inputs = _current_inputs()
        return nest(resolve_flat(inputs.plugin_config, inputs.env, inputs.state_dir))


class SettingsBase(BaseSettings):
    """What every generated :class:`LcmSettings` shares: its source and its JSON form."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="forbid")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the resolver: pydantic's own environment parsing knows none of the JS rules."""
        return (ResolvedSource(settings_cls),)

    def to_effective_dict(self) -> dict[str, Any]:
        """The JSON-ready effective config, key for key what the resolver returns."""
        return self.model_dump(by_alias=True, exclude_none=True)


class _Record(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def attribute_name(key: str) -> str:
    """The Python attribute for a config spelling: ``cacheTTLSeconds`` → ``cache_ttl_seconds``."""
    return _WORD_BREAK.sub("_", key).lower()


def _class_name(key: str) -> str:
    return key[:1].upper() + key[1:]


def _annotation(schema: Mapping[str, Any], name: str) -> Any:
    """The Python type of a value that satisfies ``schema`` (a manifest schema node)."""
    kind = schema.get("type")
    if kind == "boolean":
        return StrictBool
    if kind == "string":
        members = schema.get("enum")
        return Literal[tuple(members)] if members else StrictStr
    if kind in ("integer", "number"):
        return JsNumber
    if kind == "array":
        return list[_annotation(schema.get("items", {}), name)]  # type: ignore[misc]
    if kind == "object":
        required = set(schema.get("required", ()))
        fields: dict[str, Any] = {}
        for child, node in schema.get("properties", {}).items():
            annotation = _annotation(node, child)
            if child in required:
                fields[attribute_name(child)] = (annotation, Field(alias=child))
            else:
                fields[attribute_name(child)] = (annotation | None, Field(None, alias=child))
        return create_model(_class_name(name), __base__=_Record, **fields)
    raise TypeError(f"no Python type for the schema node of {name}: {schema!r}")


def _field(field: EffectiveField, by_name: Mapping[str, EffectiveField]) -> tuple[Any, Any]:
    source = by_name[field.mirror_of] if field.mirror_of is not None else field
    leaf = field.name.rsplit(".", 1)[-1]
    annotation = _annotation(source.primary.schema, leaf)
    if field.optional:
        return annotation | None, Field(None, alias=leaf)
    return annotation, Field(alias=leaf)


def build_settings_class() -> type[SettingsBase]:
    """Generate :class:`LcmSettings` from the key table (nested objects become models)."""
    fields = effective_fields()
    by_name = {f.name: f for f in fields}
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for field in fields:
        parent, _, leaf = field.name.rpartition(".")
        spec = _field(field, by_name)
        if not parent:
            top[attribute_name(field.name)] = spec
            continue
        if parent not in groups:
            groups[parent] = {}
            top[attribute_name(parent)] = parent  # keeps the parent's place in the order
        groups[parent][attribute_name(leaf)] = spec
    for attribute, spec in top.items():
        if isinstance(spec, str):
            group = create_model(_class_name(spec), __base__=_Record, **groups[spec])
            top[attribute] = (group, Field(alias=spec))
    settings: type[SettingsBase] = create_model(
        "LcmSettings",
        __base__=SettingsBase,
        __doc__="The effective ``LcmConfig``; fields in JSON output order.",
        **top,
    )
    return settings


#: The effective ``LcmConfig`` as typed settings, generated once when this module loads.
LcmSettings = build_settings_class()


def load_settings(
    plugin_config: Mapping[str, Any] | None, env: Mapping[str, str], state_dir: str | None
) -> SettingsBase:
    """Resolve and type the effective config from explicit inputs (not the process environment).

    ``state_dir`` stands in for ``OPENCLAW_STATE_DIR``. Raises
    :class:`lcm_cli.engine.config.resolve.ConfigRuntimeError` when ``contextThresholdOverrides``
    fails runtime validation, like :func:`lcm_cli.engine.config.resolve.resolve_effective`.
    """
    with _using(_Inputs(plugin_config or {}, env, state_dir)):
        return LcmSettings()
