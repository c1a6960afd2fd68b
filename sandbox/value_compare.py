"""FUNCTION_CALL comparison on the host: a JSON ``expected`` against a decoded return value.

The actual value was rebuilt from the plain-data codec (sandbox/runtime/codec.py),
so it consists of fresh built-ins only and comparing it runs none of the
program's code. JSON cannot express every Python type, so the rules are:

* ``null`` matches only ``None``; ``true``/``false`` match only a ``bool``
  (``1`` does not match ``true``, nor ``True`` match ``1``).
* Numbers match numbers (int or float, never bool): exactly (``2`` matches
  ``2.0``) or, with ``float_tolerance``, when ``|a - e| <= tol * max(1, |e|)``.
  NaN matches NaN; infinities match the same infinity.
* A JSON array matches a ``list`` **or a ``tuple``** (JSON has no tuples) of
  the same length, element by element. It does *not* match a set: order and
  duplicates would be lost.
* A JSON object matches a ``dict`` with the same keys, where a non-string key
  of the actual dict is first converted the way ``json.dumps`` would
  (``1`` -> ``"1"``, ``True`` -> ``"true"``, ``None`` -> ``"null"``); keys that
  collide after conversion never match.
* Strings match equal strings. When ``expected`` is given from Python rather
  than JSON, a tuple behaves like a list, and set/frozenset/bytes/complex must
  be equal exactly (same kind of set).

Pure functions; no I/O.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 200


def _json_key(key: Any) -> str | None:
    t = type(key)
    if t is str:
        return key
    if t is bool:
        return "true" if key else "false"
    if key is None:
        return "null"
    if t is int:
        return str(key)
    if t is float:
        return repr(key) if math.isfinite(key) else ("NaN" if key != key else ("Infinity" if key > 0 else "-Infinity"))
    return None


def _json_keyed(mapping: dict) -> dict | None:
    """The dict with keys as JSON would write them; None if a key has no JSON form or two collide."""
    out = {}
    for key, value in mapping.items():
        jk = _json_key(key)
        if jk is None or jk in out:
            return None
        out[jk] = value
    return out


def _numbers_equal(e: float, a: float, tolerance: float | None) -> bool:
    if type(e) is float and type(a) is float and math.isnan(e) and math.isnan(a):
        return True
    if tolerance is None:
        return e == a
    if math.isinf(e) or math.isinf(a):
        return e == a
    return abs(a - e) <= tolerance * max(1.0, abs(e))


def _is_number(v: Any) -> bool:
    return type(v) is int or type(v) is float


def values_equal(expected: Any, actual: Any, tolerance: float | None = None, _depth: int = 0) -> bool:
    """Does the decoded return value match the expected JSON value under the rules above?"""
    if _depth > MAX_DEPTH:
        return False
    d = _depth + 1
    if expected is None:
        return actual is None
    te = type(expected)
    if te is bool:
        return type(actual) is bool and actual == expected
    if _is_number(expected):
        return _is_number(actual) and _numbers_equal(expected, actual, tolerance)
    if te is str:
        return type(actual) is str and actual == expected
    if te is list or te is tuple:
        return (type(actual) is list or type(actual) is tuple) and len(actual) == len(expected) and all(
            values_equal(e, a, tolerance, d) for e, a in zip(expected, actual))
    if te is dict:
        if type(actual) is not dict or len(actual) != len(expected):
            return False
        exp, act = _json_keyed(expected), _json_keyed(actual)
        if exp is None or act is None or exp.keys() != act.keys():
            return False
        return all(values_equal(v, act[k], tolerance, d) for k, v in exp.items())
    if te in (set, frozenset, bytes, complex):
        return type(actual) is te and actual == expected
    return False


def short_repr(value: Any, limit: int = 120) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - decoded values are built-ins; this is belt and braces
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_mismatch(expected: Any, actual: Any) -> str:
    return f"expected {short_repr(expected)}, got {short_repr(actual)}"
