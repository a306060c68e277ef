"""JavaScript value semantics that lossless-claw's stored bytes depend on.

The reference is TypeScript: what it stores (content projections, hashes, part
metadata) comes out of ``JSON.parse``, ``JSON.stringify``, ``String.prototype.trim``
and ``localeCompare``. This module reproduces those from Python, for the transcript
reader (``lcm_cli.engine.transcript.reader``), the identity hash (``engine.identity``) and
runtime ingest alike, so all three produce the same bytes for the same input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.collation import sort_key

if TYPE_CHECKING:
    from typing import Any

# String.prototype.trim() strips exactly these; Python's str.strip() differs (it also
# strips U+001C-U+001F and U+0085, and keeps U+FEFF).
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_SPACE_CLASS = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


def trim(text: str) -> str:
    return text.strip(JS_SPACE)


def trim_start(text: str) -> str:
    return text.lstrip(JS_SPACE)


def is_blank(text: str) -> bool:
    # A first or last character that is not a space settles it without copying the text.
    return not text or (text[0] in JS_SPACE and text[-1] in JS_SPACE and not text.strip(JS_SPACE))


class JsNumber:
    """A JSON number whose JavaScript spelling Python's float repr cannot produce.

    Only tiny non-integral values (below 1e-4, which JavaScript writes positionally
    down to 1e-6 and with a one-digit exponent below) and overflowing literals
    (Infinity, which JSON.stringify writes as null) need it. The spelling is worked out
    when first needed: most such numbers (token costs in usage records) never are.
    """

    __slots__ = ("_text", "value")

    def __init__(self, value: float) -> None:
        self.value = value
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = js_number_text(self.value)
        return self._text


def js_number_text(value: float) -> str:
    """ECMAScript Number::toString for a finite double; ``null`` for non-finite (as JSON)."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mark = "+" if e >= 0 else "-"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + mark + str(abs(e))
    return sign + body


def js_number(value: float) -> Any:
    """The number ``value`` as JavaScript holds it, in the form :func:`stringify` spells as JS does.

    JavaScript has one number type: integral values print without ".0", so they become
    ints here (exactly as JS would spell them once past 2**53); tiny and non-finite
    values become :class:`JsNumber`; other floats print alike in both languages.
    """
    if math.isfinite(value) and value.is_integer():
        if abs(value) < 9007199254740992.0:
            return int(value)
        if abs(value) < 1e21:
            return int(js_number_text(value))
        return value
    if math.isfinite(value) and abs(value) >= 1e-4:
        return value
    return JsNumber(value)


def _parse_float(text: str) -> Any:
    return js_number(float(text))


def _parse_big_int(text: str) -> Any:
    if len(text) < 16:
        return int(text)
    return _parse_float(text)


_EXACT_INT_LIMIT = 9007199254740992  # 2**53: larger integers are rounded to a double in JavaScript


def js_values(value: Any) -> Any:
    """``value`` with every number as ``JSON.parse`` would have read it (see :func:`js_number`).

    For JSON values built in Python (a host's messages decoded by ``json.loads``, or a
    Python caller's dicts), so that :func:`stringify` then spells each number as
    ``JSON.stringify`` does (``1e-7``, not Python's ``1e-07``; ``1``, not ``1.0``) and
    integer-like keys come first, as the transcript importer's decoder already gives.
    Containers are copied only where something inside changes; otherwise ``value``
    itself is returned.
    """
    kind = type(value)
    if kind is dict:
        return _js_object_values(value)
    if kind is list or kind is tuple:
        items = [item if type(item) in _PLAIN else js_values(item) for item in value]
        if kind is list and all(a is b for a, b in zip(items, value)):
            return value
        return items
    if kind is float:
        return js_number(value)
    if kind is int and not -_EXACT_INT_LIMIT < value < _EXACT_INT_LIMIT:
        return _big_int(value)
    return value


def _big_int(value: int) -> Any:
    """An integer past 2**53 as JavaScript reads it: rounded to a double, or ±Infinity."""
    try:
        return js_number(float(value))
    except OverflowError:  # longer than any double (309+ digits): JSON.parse gives Infinity
        return JsNumber(math.inf if value > 0 else -math.inf)


# Leaves that stay as they are (ints are checked for size on their own).
_PLAIN = frozenset({str, bool, type(None)})


def _js_object_values(value: dict[Any, Any]) -> dict[Any, Any]:
    changed: dict[Any, Any] | None = None
    index_key = False
    for key, item in value.items():
        # Most keys start with a letter; only a leading digit may make an array index.
        if not index_key and type(key) is str and key[:1].isdigit() and _is_array_index(key):
            index_key = True
        kind = type(item)
        if kind in _PLAIN or (kind is int and -_EXACT_INT_LIMIT < item < _EXACT_INT_LIMIT):
            continue
        new = js_values(item)
        if new is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = new
    out = value if changed is None else changed
    # A JavaScript object lists integer-like keys first, ascending (as JSON.parse builds it).
    return js_ordered(out.items()) if index_key else out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_MAX_ARRAY_INDEX = 4294967294


def _is_array_index(key: str) -> bool:
    return (
        key[:1].isdigit()  # rules out almost every key at once
        and key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and len(key) <= 10
        and int(key) <= _MAX_ARRAY_INDEX
    )


def _js_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JavaScript objects list integer-like keys first, ascending, then the rest in
    # insertion order; a repeated key keeps its first position and its last value.
    obj = dict(pairs)
    if any(_is_array_index(key) for key in obj):
        return js_ordered(obj.items())
    return obj


def js_ordered(items: Any) -> dict[str, Any]:
    entries = list(items)
    index = [e for e in entries if _is_array_index(e[0])]
    if not index:
        return dict(entries)
    index.sort(key=lambda e: int(e[0]))
    rest = [e for e in entries if not _is_array_index(e[0])]
    return dict(index + rest)


_DECODERS: dict[tuple[bool, bool], json.JSONDecoder] = {}


def decoder(ordered: bool, big_ints: bool) -> json.JSONDecoder:
    key = (ordered, big_ints)
    found = _DECODERS.get(key)
    if found is None:
        found = json.JSONDecoder(
            parse_float=_parse_float,
            parse_int=_parse_big_int if big_ints else None,
            parse_constant=_reject_constant,
            object_pairs_hook=_js_object if ordered else None,
        )
        _DECODERS[key] = found
    return found


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def js_parse(text: str) -> Any:
    """``JSON.parse(text)``: raises ValueError (or RecursionError) when it would throw.

    A quick look at the text decides whether the slower JavaScript-faithful decoding
    paths are needed: integer-like object keys, or integers too long for a double.
    With every digit mapped to 0, a key ending in a digit and followed by its colon
    (or by whitespace) and a run of 16 digits are fixed substrings. The test may pick
    a slower path without need (same result), never the fast path wrongly.
    """
    folded = text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO)
    ordered = (
        b'0":' in folded or b'0" ' in folded or b'0"\n' in folded or b'0"\r' in folded or b'0"\t' in folded
    )
    big = b"0000000000000000" in folded
    return decoder(ordered, big).decode(text)


# The first pass only needs validity and structure, not how numbers print or keys
# order, so it uses the plain (fastest) decoder; only NaN/Infinity must still fail.
_SHAPE_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
# JSONDecoder.decode without its wrapper (two regex matches and two Python frames per
# call): the C scanner itself, for text that is already trimmed.
SHAPE_SCAN: Callable[[str, int], tuple[Any, int]] = _SHAPE_DECODER.scan_once  # type: ignore[attr-defined]


def js_parse_line(data: bytes, text: str) -> Any:
    """:func:`js_parse` for a trimmed transcript line, deciding the decoding path from its bytes.

    Mapping every digit to 0 turns both rare cases into fixed substrings, which is far
    cheaper than a regex over every line: an integer-like key (``"12":``) and a run
    of 16 digits. (A key written with spaces before its colon is not noticed.)
    """
    folded = data.translate(_DIGITS_TO_ZERO)
    # find, not `in`: Python 3.11 tries a bytes operand of `in` as an integer first and
    # pays for a formatted TypeError each time (this runs once per transcript line).
    ordered = folded.find(b'0":') != -1
    big = folded.find(b"0000000000000000") != -1
    # JSONDecoder.decode without its wrapper: the text is trimmed (no JSON whitespace at
    # either end), so the value must end exactly at its end.
    try:
        value, end = decoder(ordered, big).scan_once(text, 0)  # type: ignore[attr-defined]
    except StopIteration:
        raise ValueError("Expecting value") from None
    if end != len(text):
        raise ValueError("Extra data")
    return value


ABSENT: Any = object()


def try_parse(text: str) -> Any:
    """``JSON.parse`` in a try block: the value, or ``ABSENT`` when it would throw."""
    try:
        return js_parse(text)
    except (ValueError, RecursionError):
        return ABSENT


_NUMBER_MARK = "\x00\x01lcm-js-number:"
_NUMBER_MARK_JSON = re.compile(r'"\\u0000\\u0001lcm-js-number:([^"\\]*)\\u0001\\u0000"')
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode_special(value: Any) -> Any:
    if isinstance(value, JsNumber):
        return _NUMBER_MARK + value.text + "\x01\x00"
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


_encode_string: Callable[[str], str] = json.encoder.encode_basestring  # the C one when built


def _make_encoder() -> Callable[[Any], str]:
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_encode_special)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    # The C encoder built once: JSONEncoder.encode rebuilds it on every call, which
    # dominates for the many small objects serialized here. Values come from JSON, so
    # they cannot be circular and no marker table is needed.
    try:
        iterencode = make(
            None, _encode_special, json.encoder.encode_basestring, None, ":", ",", False, False, True
        )
    except TypeError:  # a CPython whose private encoder takes other arguments
        return encoder.encode

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return _encode_string(value)
        return "".join(iterencode(value, 0))

    return encode


_encode = _make_encoder()


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for a value read from JSON.

    The two fix-ups below act inside single string literals, so the serialization of a
    container equals its members' serializations (each fixed up) joined as JSON.
    """
    return _finish(_encode(value))


def stringify_indented(value: Any, indent: int) -> str:
    """``JSON.stringify(value, null, indent)``: as :func:`stringify`, laid out on lines."""
    return _finish(json.dumps(value, ensure_ascii=False, indent=indent, default=_encode_special))


def _finish(text: str) -> str:
    if "\\u0000\\u0001lcm-js-number:" in text:
        text = _NUMBER_MARK_JSON.sub(lambda m: m.group(1), text)
    if not text.isascii() and _has_lone_surrogate(text):
        # Well-formed JSON.stringify escapes a lone surrogate rather than emitting it.
        text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _has_lone_surrogate(text: str) -> bool:
    # Strict UTF-8 encoding fails exactly on a lone surrogate; in C it is several
    # times faster than a regex scan, and the failure is rare.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def utf8_safe(text: str) -> str:
    """Text as Node writes it out as UTF-8: a lone surrogate becomes U+FFFD."""
    if text.isascii() or not _has_lone_surrogate(text):
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or isinstance(value, JsNumber)


def js_string(value: Any) -> str:
    """``String(value)`` for a value read from JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JsNumber):
        return (
            "Infinity" if value.value == math.inf else "-Infinity" if value.value == -math.inf else value.text
        )
    if isinstance(value, float):
        return js_number_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def str_or_none(value: Any) -> str | None:
    """The reference's ``safeString``: the value if it is a string."""
    return value if isinstance(value, str) else None


def bool_or_none(value: Any) -> bool | None:
    """The reference's ``safeBoolean``: the value if it is a boolean."""
    return value if isinstance(value, bool) else None


def first_str(record: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None


def envelope_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = trim(value)
    return trimmed or None


# --- localeCompare --------------------------------------------------------
# Metadata keys are sorted with JavaScript's localeCompare (ICU root collation), not by
# code point; engine/collation.py is the one home of that order.


def collation_key(text: str) -> tuple[int, ...]:
    """Sort key giving ``localeCompare`` order (see :mod:`lcm_cli.engine.core.collation`)."""
    return sort_key(text)
