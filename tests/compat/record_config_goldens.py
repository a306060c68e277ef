"""Seeded inputs for the config goldens: several hundred values for every key of the key table.

``tests/compat/test_config_goldens.py`` replays lossless-claw's own config resolver
(``resolveLcmConfigWithDiagnostics`` in its ``src/db/config.ts``) against ours. The
reference's answers are recorded by hand, as the engine goldens are, in two steps:

1. ``python -m tests.compat.record_config_goldens inputs PATH`` writes the cases below
   (JSON, from the fixed :data:`SEED`, so a rerun writes the same file);
2. ``node tests/compat/record_config_goldens.mjs CHECKOUT PATH OUT`` resolves every case
   with the reference checked out at CHECKOUT and writes the golden OUT; its header says
   how to get a checkout and which files the goldens are.

For every key of :data:`lcm_cli.engine.config.keys.CONFIG_KEYS` a case is a plugin config
(``plugins.entries.lossless-claw.config``) and the environment variables set on top of
:data:`BASE_ENV`. The values are valid ones, numeric strings (``"16"``, ``" 7000 "``,
``"1e3"``, ``"0x10"``, ``""``), wrong types, enum and boolean spellings, comma lists,
values out of range or clamped by the runtime, and the key's environment variables with
the strings each parser treats differently, alone and over a plugin value. Aliases are
also set together with the key they alias, and derived defaults together with the key
they derive from.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lcm_cli.engine.config.keys import CONFIG_KEYS, STATE_DIR_ENV, Coercion, ConfigKey

SEED = 20260528
PLUGIN_VALUES = 220  # plugin-config values per key
ENV_VALUES = 45  # values per environment variable, with no plugin value
ENV_OVER_PLUGIN = 25  # values per environment variable, over a random plugin value

#: The environment every case starts from: a fixed state dir. HOME and the process time
#: zone (the runtime's fallbacks for a blank state dir and an unset ``timezone``) are set
#: by the recorder from :data:`HOME` and :data:`SYSTEM_TIME_ZONE`.
BASE_ENV = {STATE_DIR_ENV: "/srv/openclaw-state"}
HOME = "/home/golden"
SYSTEM_TIME_ZONE = "Pacific/Chatham"

# What JavaScript's trim and number parsers skip, and look-alikes they do not.
JS_SPACES = " \t\n\v\f\r\u00a0\u1680\u2000\u2003\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NOT_SPACES = "\u200b\u180e\u0085"

COMMON = [
    None,
    True,
    False,
    [],
    [1],
    ["a"],
    {},
    {"a": 1},
    "",
    " ",
    "\t\n",
    "abc",
    0,
    1,
    -1,
    "null",
    "undefined",
    "NaN",
    "Infinity",
    "true",
    "false",
    "TRUE",
    "yes",
    "1",
    "0",
]

NUMBER_STRINGS = [
    "16",
    " 7000 ",
    "1e3",
    "0x10",
    "-3",
    "3.7",
    "",
    "  ",
    "+16",
    "-0",
    "+0",
    "0016",
    "00.5",
    ".5",
    "5.",
    "1e",
    "e3",
    "1e+3",
    "1E-3",
    "1.5e2",
    "0X1f",
    "0x",
    "-0x10",
    "0b101",
    "0B11",
    "0o17",
    "0O8",
    "017",
    "1_000",
    "1,000",
    "12abc",
    "abc12",
    "16 16",
    "--1",
    "+-1",
    "NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "+Infinity",
    "infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "9007199254740993",
    "12345678901234567890",
    "1e21",
    "123456789012345678901234",
    "\u00a016\u00a0",
    "\ufeff16",
    "\u200b16",
    "\u3000-7\u3000",
    "16\n",
    "\n\t42\r\n",
    "\u0661\u0662",
    "１６",
    "0.1",
    "0.30000000000000004",
    "64",
    "63.5",
    "1000",
    "999.9",
]

NUMBERS = [
    0,
    -0.0,
    0.5,
    1.5,
    2.5,
    -0.5,
    3.7,
    23,
    42,
    63,
    64,
    65,
    999,
    1000,
    1001,
    1e21,
    1e22,
    1.7976931348623157e308,
    5e-324,
    9007199254740993,
    12345678901234567890,
    123456789012345678901234,
    -3,
    -1.5,
    0.1,
    0.95,
    0.951,
    1.0000001,
]

BOOL_WORDS = ["true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n", "truee", "fals"]

STRING_ATOMS = [
    "openai/gpt-4.1",
    "anthropic/claude-sonnet-4",
    "gpt-4o-mini",
    "openai",
    "~/lcm/lcm.db",
    "/var/lib/lcm/lcm.db",
    "relative/dir",
    "./x/../y/",
    "UTC",
    "Asia/Tokyo",
    "America/New_York",
    "Not/AZone",
    "Summarize tersely.",
    "line one\nline two",
    "会话测试",
    "emoji 👋🏽",
    "a,b",
    "null",
]

PATTERN_ATOMS = [
    "agent:*:cron:*",
    "agent:*:cron:**",
    "agent:main:*",
    "**",
    "*",
    "subagent:*",
    "a?b",
    "x.y",
    "会话:*",
]


def _pad(rng: random.Random, text: str) -> str:
    """Wrap text in a random run of JS white space, or a look-alike that is not."""
    roll = rng.random()
    if roll < 0.45:
        return text
    pool = JS_SPACES if roll < 0.9 else NOT_SPACES
    left = "".join(rng.choice(pool) for _ in range(rng.randint(0, 2)))
    right = "".join(rng.choice(pool) for _ in range(rng.randint(0, 2)))
    return left + text + right


def _recase(rng: random.Random, text: str) -> str:
    roll = rng.random()
    if roll < 0.3:
        return text
    if roll < 0.45:
        return text.upper()
    if roll < 0.6:
        return text.capitalize()
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def _random_number(rng: random.Random, key: ConfigKey | None) -> int | float:
    roll = rng.random()
    low = key.schema.get("minimum", 0) if key is not None else 0
    if roll < 0.25:
        return int(low) + rng.randint(-3, 3)
    if roll < 0.4:
        return rng.randint(0, 100)
    if (
        roll < 0.5
        and key is not None
        and isinstance(key.default, (int, float))
        and not isinstance(key.default, bool)
    ):
        return key.default + rng.choice([-1, 0, 1, 0.5, key.default])
    if roll < 0.65:
        return int(10 ** rng.uniform(0, 25)) * rng.choice([1, 1, -1])
    if roll < 0.8:
        return round(rng.uniform(-2, 2), rng.randint(0, 6))
    if roll < 0.9:
        return round(10 ** rng.uniform(-3, 6), rng.randint(0, 4))
    return rng.choice([-1, 1]) * rng.random() * 10 ** rng.randint(-10, 30)


def _number_text(rng: random.Random, key: ConfigKey | None) -> str:
    """A string the runtime's parsers read as a number, read differently, or refuse."""
    roll = rng.random()
    if roll < 0.2:
        return _pad(rng, rng.choice(NUMBER_STRINGS))
    value = _random_number(rng, key)
    if roll < 0.55:
        text = repr(value) if isinstance(value, float) else str(value)
    elif roll < 0.65:
        text = f"{abs(int(value)):#x}" if abs(value) < 1e18 else "0x1f"
        text = text.upper().replace("X", rng.choice("xX")) if rng.random() < 0.3 else text
    elif roll < 0.7:
        text = rng.choice(["0o", "0b"]) + (
            format(abs(int(value)) % 4096, "o") if rng.random() < 0.5 else "101"
        )
    elif roll < 0.8:
        text = f"{value:.{rng.randint(0, 4)}e}"
    elif roll < 0.88:
        text = str(value) + rng.choice(["abc", "px", " 1", ".", "e", "_0", ",5", "x"])
    elif roll < 0.94:
        text = rng.choice(["+", "-", "00", "+0", ""]) + str(abs(value))
    else:
        text = str(value).replace(".", rng.choice([",", "_", ". "]))
    return _pad(rng, text)


def _random_string(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return _pad(rng, rng.choice(STRING_ATOMS))
    if roll < 0.7:
        alphabet = "abcXYZ019/._-: ~é会👋"
        return _pad(rng, "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))))
    if roll < 0.8:
        return "".join(rng.choice(JS_SPACES) for _ in range(rng.randint(0, 3)))
    if roll < 0.85:
        return rng.choice(["\ud800x", "x\udfff", "\u200b", "\u0085", "\u180e"])
    return _junk(rng)


def _junk(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(COMMON)
    if roll < 0.7:
        return _random_number(rng, None)
    if roll < 0.85:
        return [rng.choice(COMMON) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "value", "enabled", "0"]): rng.choice(COMMON)}


def _number_value(key: ConfigKey) -> Callable[[random.Random], Any]:
    def make(rng: random.Random) -> Any:
        roll = rng.random()
        if roll < 0.4:
            return _random_number(rng, key)
        if roll < 0.85:
            return _number_text(rng, key)
        return _junk(rng)

    return make


def _bool_text(rng: random.Random) -> str:
    return _pad(rng, _recase(rng, rng.choice(BOOL_WORDS)))


def _bool_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.25:
        return rng.choice([True, False])
    if roll < 0.8:
        return _bool_text(rng)
    return _junk(rng)


def _enum_value(members: list[str]) -> Callable[[random.Random], Any]:
    near = [
        "in line",
        "inlinee",
        "deferred,inline",
        "İNLINE",
        "ınline",
        "defer",
        "rotate warn",
        "ROTATE\u0130",
        "Off ",
        "capture_only",
        "captureonly",
        "capture-only-x",
        "none",
    ]

    def make(rng: random.Random) -> Any:
        roll = rng.random()
        if roll < 0.6:
            return _pad(rng, _recase(rng, rng.choice(members)))
        if roll < 0.8:
            return _pad(rng, _recase(rng, rng.choice(near)))
        return _junk(rng)

    return make


def _enum_text(members: list[str]) -> Callable[[random.Random], str]:
    make = _enum_value(members)

    def text(rng: random.Random) -> str:
        value = make(rng)
        return value if isinstance(value, str) else rng.choice(members)

    return text


def _pattern_items(rng: random.Random) -> list[Any]:
    items: list[Any] = []
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.6:
            items.append(_pad(rng, rng.choice(PATTERN_ATOMS)))
        elif roll < 0.75:
            items.append(rng.choice(["", " ", "\t"]))
        elif roll < 0.85:
            items.append(_pad(rng, rng.choice(PATTERN_ATOMS)) + "," + rng.choice(PATTERN_ATOMS))
        else:
            items.append(rng.choice([None, 1, True, [], {}, ["x"]]))
    return items


def _comma_text(rng: random.Random) -> str:
    parts = [str(p) if not isinstance(p, str) else p for p in _pattern_items(rng)]
    joined = "".join(p + rng.choice([",", ", ", " ,", ",,", " , "]) for p in parts)
    return _pad(rng, joined[: -rng.randint(0, 2)] if joined else rng.choice(["", ",", " , ,"]))


def _pattern_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return _pattern_items(rng)
    if roll < 0.85:
        return _comma_text(rng)
    return _junk(rng)


def _provider_item(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.7:
        item: dict[str, Any] = {}
        for field in ("provider", "model"):
            pick = rng.random()
            if pick < 0.7:
                item[field] = _pad(rng, rng.choice(["openai", "anthropic", "gpt-4o", "claude", "x/y", "会"]))
            elif pick < 0.85:
                item[field] = rng.choice(["", " ", None, 1, ["a"]])
        if rng.random() < 0.1:
            item["extra"] = 1
        return item
    return rng.choice(["openai/gpt-4o", None, 1, [], ["openai", "gpt"], {"provider": "a"}])


def _provider_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.75:
        return [_provider_item(rng) for _ in range(rng.randint(0, 3))]
    if roll < 0.85:
        return rng.choice(
            ["openai/gpt-4o", "openai/gpt-4o,anthropic/claude", {"provider": "a", "model": "b"}]
        )
    return _junk(rng)


def _provider_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 3)):
        parts.append(
            _pad(
                rng,
                rng.choice(
                    ["openai/gpt-4o", "a/b/c", "/m", "p/", "p//m", "nomodel", " p / m ", "", "会/话", "p/ "]
                ),
            )
        )
    return rng.choice([",", ", ", " , "]).join(parts)


def _override_rule(rng: random.Random) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, 1, "rule", []])
    rule: dict[str, Any] = {}
    if rng.random() < 0.4:
        rule["name"] = rng.choice(["big", " spaced ", "", 1, None])
    if rng.random() < 0.05:
        rule["match"] = rng.choice([None, "model", [], 1])
    elif rng.random() < 0.97:
        match: dict[str, Any] = {}
        if rng.random() < 0.5:
            match["model"] = rng.choice(["openai/gpt-4o", " gpt-4o ", "gpt-4o", "", " ", 1, None])
        if rng.random() < 0.4:
            match["sessionPattern"] = rng.choice(["agent:*:cron:*", " x:** ", "", None, 2])
        for bound in ("modelContextWindowMin", "modelContextWindowMax"):
            if rng.random() < 0.35:
                match[bound] = rng.choice(
                    [1, 8000, 32000, 128000, "64000", " 200 ", 0, -1, 1.5, "x", None, "1e5"]
                )
        rule["match"] = match
    if rng.random() < 0.95:
        rule["contextThreshold"] = rng.choice(
            [0, 0.5, 0.8, 1, "0.6", " 0.9 ", "", 1.01, -0.1, "abc", None, True, "1e-1", "0x1"]
        )
    for field in ("freshTailCount", "leafChunkTokens"):
        if rng.random() < 0.25:
            rule[field] = rng.choice([8, 2000, "16", 0, -3, 1.5, None, "x", " 4 ", True])
    return rule


def _overrides_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.9:
        return [_override_rule(rng) for _ in range(rng.randint(0, 3))]
    return _junk(rng)


def _plugin_maker(key: ConfigKey) -> Callable[[random.Random], Any]:
    kind = key.coercion
    if kind in (
        Coercion.INT,
        Coercion.FLOAT,
        Coercion.NUMBER,
        Coercion.POSITIVE_INT_CLAMPED,
        Coercion.INT_AT_LEAST,
    ):
        return _number_value(key)
    if kind in (Coercion.BOOL_TRUE_UNLESS_FALSE, Coercion.BOOL_FALSE_UNLESS_TRUE):
        return _bool_value
    if kind in (Coercion.ENUM, Coercion.HOST_FALLBACK_MODE):
        return _enum_value(list(key.schema["enum"]))
    if kind in (Coercion.STRING, Coercion.RAW_ENV_STRING):
        return _random_string
    if kind in (Coercion.PATTERN_LIST, Coercion.TAG_LIST):
        return _pattern_value
    if kind is Coercion.PROVIDER_LIST:
        return _provider_value
    if kind is Coercion.THRESHOLD_OVERRIDES:
        return _overrides_value
    if kind is Coercion.OBJECT:
        return _object_maker(key)
    raise AssertionError(f"no value maker for {key.path} ({kind})")


def _object_maker(key: ConfigKey) -> Callable[[random.Random], Any]:
    children = [k for k in CONFIG_KEYS if k.path.startswith(key.path + ".")]

    def make(rng: random.Random) -> Any:
        if rng.random() < 0.2:
            return _junk(rng)
        obj: dict[str, Any] = {}
        for child in children:
            if rng.random() < 0.5:
                obj[child.path.rsplit(".", 1)[1]] = _plugin_maker(child)(rng)
        if rng.random() < 0.1:
            obj["unknownKey"] = 1
        return obj

    return make


def _env_maker(key: ConfigKey) -> Callable[[random.Random], str]:
    kind = key.coercion
    if kind in (
        Coercion.INT,
        Coercion.FLOAT,
        Coercion.NUMBER,
        Coercion.POSITIVE_INT_CLAMPED,
        Coercion.INT_AT_LEAST,
    ):
        return lambda rng: _number_text(rng, key)
    if kind in (Coercion.BOOL_TRUE_UNLESS_FALSE, Coercion.BOOL_FALSE_UNLESS_TRUE):
        return _bool_text
    if kind in (Coercion.ENUM, Coercion.HOST_FALLBACK_MODE):
        return _enum_text(list(key.schema["enum"]))
    if kind in (Coercion.PATTERN_LIST, Coercion.TAG_LIST):
        return _comma_text
    if kind is Coercion.PROVIDER_LIST:
        return _provider_text

    def text(rng: random.Random) -> str:
        value = _random_string(rng)
        # Environment values are strings without lone surrogates.
        if not isinstance(value, str) or any("\ud800" <= c <= "\udfff" for c in value):
            return rng.choice(STRING_ATOMS)
        return value

    return text


def _nest(path: str, value: Any, into: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if into is None else into
    *parents, leaf = path.split(".")
    node = out
    for parent in parents:
        child = node.get(parent)
        if not isinstance(child, dict):
            child = node[parent] = {}
        node = child
    node[leaf] = value
    return out


def _fixed_values(key: ConfigKey) -> list[Any]:
    kind = key.coercion
    values: list[Any] = list(COMMON)
    if kind in (
        Coercion.INT,
        Coercion.FLOAT,
        Coercion.NUMBER,
        Coercion.POSITIVE_INT_CLAMPED,
        Coercion.INT_AT_LEAST,
    ):
        values += NUMBER_STRINGS + NUMBERS
        low, high = key.schema.get("minimum"), key.schema.get("maximum")
        for bound in (low, high):
            if bound is not None:
                values += [bound, bound - 1, bound + 1, bound - 0.5, bound + 0.5, str(bound), f" {bound} "]
        if isinstance(key.default, (int, float)) and not isinstance(key.default, bool):
            values += [key.default, str(key.default), key.default * 10]
    elif kind in (Coercion.BOOL_TRUE_UNLESS_FALSE, Coercion.BOOL_FALSE_UNLESS_TRUE):
        values += ["True", "FALSE", " true", "false ", "no", "on", "off", "t", 0.0, [True], {"value": True}]
    elif kind in (Coercion.ENUM, Coercion.HOST_FALLBACK_MODE):
        for member in key.schema["enum"]:
            values += [member, member.upper(), f" {member} ", member.capitalize(), f"\u00a0{member}\ufeff"]
        values += ["INLINE", " deferred ", "Deferred\n"]
    elif kind in (Coercion.STRING, Coercion.RAW_ENV_STRING):
        values += STRING_ATOMS + [f"  {s}\t" for s in STRING_ATOMS[:6]] + ["\u200b", "\u00a0", "\ufeff"]
    elif kind in (Coercion.PATTERN_LIST, Coercion.TAG_LIST):
        values += [
            "agent:*:cron:*,agent:*:subagent:*",
            " a , b ,, c ",
            ",",
            ",,,",
            "single",
            ["agent:*:cron:*"],
            [" a ", "", "b", None, 1],
            ["", " "],
            [["a"]],
            ["a,b"],
        ]
    elif kind is Coercion.PROVIDER_LIST:
        values += [
            [{"provider": "openai", "model": "gpt-4o"}],
            [{"provider": " openai ", "model": " gpt-4o "}],
            [{"provider": "", "model": "gpt-4o"}],
            [{"provider": "openai"}],
            [{"provider": "openai", "model": "gpt-4o", "extra": True}],
            ["openai/gpt-4o"],
            "openai/gpt-4o",
        ]
    elif kind is Coercion.THRESHOLD_OVERRIDES:
        values += [
            [{"match": {"model": "gpt-4o"}, "contextThreshold": 0.6}],
            [{"match": {}, "contextThreshold": 0.6}],
            [{"match": {"modelContextWindowMin": 9, "modelContextWindowMax": 3}, "contextThreshold": 0.5}],
            [{"match": {"sessionPattern": "x:*"}, "contextThreshold": "0.5", "freshTailCount": "8"}],
        ]
    return values


def _cases_for(key: ConfigKey, rng: random.Random) -> list[dict[str, Any]]:
    seen: set[str] = set()
    cases: list[dict[str, Any]] = []

    def add(plugin: dict[str, Any], env: dict[str, str] | None = None) -> bool:
        case: dict[str, Any] = {"key": key.path, "plugin": plugin}
        if env:
            case["env"] = env
        ident = json.dumps(case, sort_keys=True)
        if ident in seen:
            return False
        seen.add(ident)
        cases.append(case)
        return True

    make = _plugin_maker(key)
    for value in _fixed_values(key):
        add(_nest(key.path, value))
    attempts = 0
    while len(cases) < PLUGIN_VALUES and attempts < PLUGIN_VALUES * 20:
        attempts += 1
        add(_nest(key.path, make(rng)))

    # Two keys feeding one field: which one wins, and fall-through from one to the other.
    partner = _partner(key)
    if partner is not None:
        partner_make = _plugin_maker(partner)
        for _ in range(60):
            plugin = _nest(key.path, make(rng))
            add(_nest(partner.path, partner_make(rng), plugin))
    # Defaults derived from leafChunkTokens, and the floor it sets.
    if key.path in ("bootstrapMaxTokens", "dynamicLeafChunkTokens.max", "leafChunkTokens"):
        leaf_make = _plugin_maker(_key("leafChunkTokens"))
        for _ in range(40):
            plugin = _nest("leafChunkTokens", leaf_make(rng))
            if key.path != "leafChunkTokens" and rng.random() < 0.7:
                _nest(key.path, make(rng), plugin)
            add(plugin)

    env_make = _env_maker(key)
    for name in key.env:
        for _ in range(ENV_VALUES):
            add({}, {name: env_make(rng)})
        for _ in range(ENV_OVER_PLUGIN):
            add(_nest(key.path, make(rng)), {name: env_make(rng)})
    if key.path == "incrementalMaxDepth":
        for _ in range(25):
            env = {"LCM_SWEEP_MAX_DEPTH": env_make(rng), "LCM_INCREMENTAL_MAX_DEPTH": env_make(rng)}
            add(_nest("sweepMaxDepth", make(rng)), env)
    if key.path in ("databasePath", "largeFilesDir"):
        for _ in range(25):
            state = rng.choice(
                ["", " ", " /srv/other ", "/a/b/", "/a/../c", "rel/dir", "/x//y/./z", "\u00a0/tab"]
            )
            plugin = _nest(key.path, make(rng)) if rng.random() < 0.4 else {}
            add(plugin, {STATE_DIR_ENV: state})
    return cases


def _key(path: str) -> ConfigKey:
    return next(k for k in CONFIG_KEYS if k.path == path)


def _partner(key: ConfigKey) -> ConfigKey | None:
    """The other key of an alias pair (the alias row names the canonical key)."""
    if key.alias_of is not None:
        return _key(key.alias_of)
    return next((k for k in CONFIG_KEYS if k.alias_of == key.path), None)


def _field_of(key: ConfigKey) -> str:
    return key.effective or key.path


def full_plugin_config() -> dict[str, Any]:
    """A plugin config that sets every optional field, so the effective config has them all."""
    plugin: dict[str, Any] = {
        "freshTailMaxTokens": 1234,
        "summaryPrefixTargetTokens": 5678,
        "maxAssemblyTokenBudget": 90000,
        "contextThresholdOverrides": [{"name": "n", "match": {"model": "m"}, "contextThreshold": 0.5}],
        "fallbackProviders": [{"provider": "p", "model": "m"}],
    }
    return _nest("independentLogFile.file", "/tmp/lcm.log", plugin)


def inputs() -> dict[str, Any]:
    """Every case, in key-table order, from :data:`SEED`."""
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    for key in CONFIG_KEYS:
        for case in _cases_for(key, rng):
            case["field"] = _field_of(key)
            cases.append(case)
    return {
        "seed": SEED,
        "baseEnv": BASE_ENV,
        "home": HOME,
        "systemTimeZone": SYSTEM_TIME_ZONE,
        "full": full_plugin_config(),
        "cases": cases,
    }


def main(argv: list[str]) -> int:
    """``inputs PATH``: write the seeded cases for record_config_goldens.mjs."""
    if argv[:1] == ["inputs"] and len(argv) == 2:
        # ASCII escapes: some cases hold lone surrogates, which UTF-8 cannot encode.
        Path(argv[1]).write_text(json.dumps(inputs(), ensure_ascii=True) + "\n", encoding="utf-8")
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
