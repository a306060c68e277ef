"""Issue 28: lcm reads the plugin config exactly as lossless-claw's runtime resolver does.

``goldens/config/<tag>.json.gz`` hold lossless-claw's own answers
(``resolveLcmConfigWithDiagnostics`` of ``src/db/config.ts``) for several hundred seeded
plugin-config and environment values per key of the key table, recorded by hand from
v0.15.3 and v1.0.0-beta.4 (``record_config_goldens.mjs`` says how to rerun it). Each case
is replayed through our resolver in-process, and the whole effective config is compared:
the baseline with the case's recorded changes applied. A value compares as JSON prints it
(``16`` is not ``16.0``, ``true`` is not ``1``). 1.0 dropped some keys: for it only the
fields it still has are compared.

Two runtime fallbacks depend on the machine; the recorder fixed them and they are replayed
here, narrowly: a blank state dir means ``$HOME/.openclaw`` (HOME is set to the recorded
one) and an unset ``timezone`` means the system zone (``system_timezone`` answers the
recorded one).
"""

from __future__ import annotations

import functools
import gzip
import json
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.config import resolve
from lcm_cli.engine.config.keys import CONFIG_KEYS, STATE_DIR_ENV, effective_fields
from lcm_cli.engine.config.resolve import ConfigRuntimeError, resolve_diagnostics, resolve_effective

GOLDENS = Path(__file__).parent / "goldens" / "config"
VERSIONS = ("v0.15.3", "v1.0.0-beta.4")
#: Keys of the key table that 1.0 no longer reads (its goldens have no case for them).
DROPPED_IN_1_0 = {
    "transcriptGcEnabled",
    "autoRotateSessionFiles",
    "autoRotateSessionFiles.enabled",
    "autoRotateSessionFiles.createBackups",
    "autoRotateSessionFiles.sizeBytes",
    "autoRotateSessionFiles.startup",
    "autoRotateSessionFiles.runtime",
}

#: Where we deliberately do not copy the reference: (field, the reference's value as JSON
#: prints it) -> why. Such a field may differ; every entry must still be met by some case.
KNOWN: dict[tuple[str, str], str] = {
    ("dynamicLeafChunkTokens.max", "null"): (
        "leafChunkTokens near the largest double makes floor(leafChunkTokens * 2) Infinity, "
        "which the runtime prints as null; we keep leafChunkTokens, the floor the field is "
        "raised to (a deprecated, unused field; no JSON number, no crash)"
    ),
}
_KNOWN_FIELDS = {field for field, _ in KNOWN}
_KNOWN_MET: set[tuple[str, str]] = set()


@functools.cache
def golden(version: str) -> dict[str, Any]:
    """The recorded goldens of one reference version, with their cases grouped by key."""
    data: dict[str, Any] = json.loads(gzip.decompress((GOLDENS / f"{version}.json.gz").read_bytes()))
    by_key: dict[str, list[dict[str, Any]]] = {}
    for case in data["cases"]:
        by_key.setdefault(case["key"], []).append(case)
    data["byKey"] = by_key
    data["baseFlat"] = flat_leaves(data["baseline"]["config"])
    # Our fields this version does not have (1.0 dropped some): not compared.
    data["notFields"] = {f.name for f in effective_fields()} - set(data["fields"])
    return data


def flat_leaves(value: dict[str, Any]) -> dict[str, Any]:
    """Effective leaves by dot path, as the recorder flattens them (arrays are leaves)."""
    out: dict[str, Any] = {}
    for name, child in value.items():
        if type(child) is dict:
            for path, leaf in flat_leaves(child).items():
                out[f"{name}.{path}"] = leaf
        else:
            out[name] = child
    return out


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """HOME and the system time zone of the recording (the same in every golden file)."""
    data = golden(VERSIONS[0])
    monkeypatch.setenv("HOME", data["home"])
    monkeypatch.setattr(resolve, "system_timezone", lambda: data["systemTimeZone"])
    yield


# Ours, once per input: both versions replay the same inputs (1.0 skips the keys it
# dropped), so the answer is kept by the case's key and its place among that key's cases.
_OURS: dict[tuple[str, int], tuple[Any, Any, str, Any, Any]] = {}


def ours(key: str, index: int, plugin: dict[str, Any], env: dict[str, str]) -> tuple[str, Any, Any]:
    """("ok", flat effective config, diagnostics) or ("error", reason, None)."""
    hit = _OURS.get((key, index))
    if hit is None or hit[0] != plugin or hit[1] != env:
        try:
            effective = resolve_effective(plugin, env, env.get(STATE_DIR_ENV))
        except ConfigRuntimeError as exc:
            hit = (plugin, env, "error", exc.reason, None)
        else:
            hit = (plugin, env, "ok", flat_leaves(effective), resolve_diagnostics(plugin, env))
        _OURS[(key, index)] = hit
    return hit[2:]


def error_subject(message: str) -> str:
    """The value a runtime check names (``contextThresholdOverrides[0].match``): the wording
    differs, the value and the order of the checks must not."""
    return message.split(" ", 1)[0]


def strictly_equal(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal as JSON prints them: ``16`` is not ``16.0`` and ``true`` is not ``1``."""
    return have == want and all(
        map(operator.is_, map(type, have.values()), map(type, map(want.__getitem__, have)))
    )


def mismatch(data: dict[str, Any], case: dict[str, Any], index: int) -> str | None:
    """Why our answer to ``case`` differs from the golden's, or None."""
    env = {**data["baseEnv"], **case.get("env", {})}
    outcome, got, diagnostics = ours(case["key"], index, case["plugin"], env)
    if "error" in case:
        if outcome != "error":
            return f"the reference refuses ({case['error']}); we resolve"
        if error_subject(got) != error_subject(case["error"]):
            return f"the reference refuses with {case['error']!r}; we with {got!r}"
        return None
    if outcome == "error":
        return f"we refuse ({got}); the reference resolves"
    changed = case["effective"]
    want = dict(data["baseFlat"])
    want.update(changed)
    for field in case.get("unset", ()):
        want.pop(field, None)
    have = dict(got)
    for field in data["notFields"].intersection(have):
        del have[field]
    for field in _KNOWN_FIELDS.intersection(changed):
        known = (field, as_json(changed[field]))
        if known in KNOWN and field in have and as_json(have[field]) != known[1]:
            _KNOWN_MET.add(known)
            have[field] = changed[field]
    if not strictly_equal(have, want):
        diff = {
            f: (have.get(f, "<unset>"), want.get(f, "<unset>"))
            for f in data["fields"]
            if as_json(have.get(f, "<unset>")) != as_json(want.get(f, "<unset>"))
        }
        return f"effective (ours, reference): {diff}"
    # Lists are compared as printed, key order inside them included (rules, providers).
    for field, value in changed.items():
        if isinstance(value, list) and json.dumps(have[field]) != json.dumps(value):
            return f"{field}: we print {json.dumps(have[field])}, the reference {json.dumps(value)}"
    expected_diagnostics = case.get("diagnostics", data["baseline"]["diagnostics"])
    if diagnostics != expected_diagnostics:
        return f"diagnostics {diagnostics} != {expected_diagnostics}"
    return None


def _cases() -> Iterator[Any]:
    for version in VERSIONS:
        for key in CONFIG_KEYS:
            if version.startswith("v1.") and key.path in DROPPED_IN_1_0:
                continue
            yield pytest.param(version, key.path, id=f"{version}-{key.path}")


@pytest.mark.parametrize(("version", "key"), list(_cases()))
def test_every_recorded_value_resolves_as_the_reference_resolves_it(
    machine: None, version: str, key: str
) -> None:
    data = golden(version)
    cases = data["byKey"].get(key, [])
    assert len(cases) >= 200, f"{version}: only {len(cases)} recorded cases for {key}; re-record the goldens"
    problems = []
    for index, case in enumerate(cases):
        why = mismatch(data, case, index)
        if why is not None:
            problems.append(f"plugin={as_json(case['plugin'])} env={as_json(case.get('env', {}))}: {why}")
    assert not problems, f"{len(problems)} of {len(cases)} cases differ:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_defaults_and_the_field_order_are_the_references(machine: None, version: str) -> None:
    """With no plugin config, and with every optional field set, our effective config prints
    as the reference's does: the same fields, values and order (1.0: the fields it has)."""
    data = golden(version)
    env = dict(data["baseEnv"])
    for plugin, reference in (
        ({}, data["baseline"]["config"]),
        (data["full"]["plugin"], data["full"]["config"]),
    ):
        effective = resolve_effective(plugin, env, env.get(STATE_DIR_ENV))
        flat = flat_leaves(effective)
        kept = {f: v for f, v in flat.items() if f in data["fields"]}
        assert json.dumps(kept) == json.dumps(flat_leaves(reference))
        if version == "v0.15.3":
            assert json.dumps(effective) == json.dumps(reference)
    assert list(flat_leaves(data["full"]["config"])) == data["fields"]


def test_every_known_difference_is_still_met(machine: None) -> None:
    """A difference that got fixed leaves :data:`KNOWN`."""
    for version in VERSIONS:
        data = golden(version)
        for cases in data["byKey"].values():
            for index, case in enumerate(cases):
                if _KNOWN_FIELDS.intersection(case.get("effective", ())):
                    assert mismatch(data, case, index) is None
    assert set(KNOWN) == _KNOWN_MET


def test_the_goldens_cover_every_key() -> None:
    recorded = set(golden("v0.15.3")["byKey"])
    assert recorded == {k.path for k in CONFIG_KEYS}
    # 1.0 has no case for a key that feeds none of its fields, and those are the ones listed.
    fields = golden("v1.0.0-beta.4")["fields"]
    dropped = {
        k.path
        for k in CONFIG_KEYS
        if not any(f == (k.effective or k.path) or f.startswith(f"{k.effective or k.path}.") for f in fields)
    }
    assert dropped == DROPPED_IN_1_0
    assert set(golden("v1.0.0-beta.4")["byKey"]) == recorded - DROPPED_IN_1_0
