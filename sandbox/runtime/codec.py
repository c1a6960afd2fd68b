"""Plain-data value codec: how values cross the trust boundary.

Why a codec of our own instead of pickle or plain JSON: pickle executes code
on load, and plain JSON loses types (tuple vs list, set, bytes, big ints,
nan). The trusted side must rebuild *fresh built-in objects* from whatever the
untrusted side sends, so that a returned object can never carry behaviour
(an ``__eq__`` that is always true, a ``__hash__`` that lies, a ``str``
subclass with a custom ``__contains__``...).

Encoding (``encode``) accepts *exact* types only -- ``type(v) is int``, never
``isinstance`` -- so a subclass of ``int`` or ``list`` is :class:`Unserializable`
even if it looks right. The JSON form:

==============  ==============================================
value           JSON
==============  ==============================================
None/bool/str   null / true,false / "..."
int             number when |n| < 2**53, else {"int": "<hex>"}
float           number when finite, else {"float": "nan"|"inf"|"-inf"}
list            [...]
tuple           {"tuple": [...]}
dict            {"dict": [[key, value], ...]}   (any encodable hashable keys)
set/frozenset   {"set": [...]} / {"frozenset": [...]}
bytes           {"bytes": "<base64>"}
complex         {"complex": [real, imag]}     (each an encoded float)
==============  ==============================================

Big ints travel as hex because Python 3.11 refuses decimal conversions of more
than 4300 digits (and hex conversion is linear-time). Every JSON object is a
tag with exactly one key, so the decoder is strict: an unknown tag, a second
key, a payload of the wrong shape, an unhashable set element or nesting deeper
than :data:`MAX_DEPTH` is a :class:`CodecError`.

Stdlib only: this module runs inside the sandbox and on the host
(``sandbox.runtime.codec``).

Inside the sandbox, B encodes return values and decodes arguments *after* the program loaded,
in the program's own interpreter. So this module looks up nothing the program can rebind: its
functions use a private copy of the builtins taken at import (in the zygote, before any
program), and the library functions it needs (base64, isfinite, json's C encoder and scanner)
are bound here at import too. A program that sets ``builtins.isinstance``, ``json.JSONEncoder``
or ``binascii.b2a_base64`` changes its own interpreter, not the codec (see ARCHITECTURE.md, "B's
harness after the program").
"""

from __future__ import annotations

import binascii
import builtins
import json
import json.decoder
import json.encoder
import math
from typing import Any

__builtins__ = dict(vars(builtins))   # the functions below resolve builtins here (see above)

_isfinite = math.isfinite
_b2a_base64 = binascii.b2a_base64
_a2b_base64 = binascii.a2b_base64
MAX_DEPTH = 100
_SAFE_INT = 2 ** 53


class Unserializable(TypeError):
    """The value is not plain data (an object, a subclass, a cycle, too deep)."""


class CodecError(ValueError):
    """The JSON is not a well-formed encoding: it came from a buggy or hostile sender."""


def encode(value: Any, _depth: int = 0) -> Any:
    """The JSON-able form of a plain-data value. Raises Unserializable otherwise."""
    if _depth > MAX_DEPTH:
        raise Unserializable(f"nested deeper than {MAX_DEPTH}")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value if -_SAFE_INT < value < _SAFE_INT else {"int": format(value, "x")}
    if t is float:
        if _isfinite(value):
            return value
        return {"float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
    d = _depth + 1
    if t is list:
        return [encode(v, d) for v in value]
    if t is tuple:
        return {"tuple": [encode(v, d) for v in value]}
    if t is dict:
        return {"dict": [[encode(k, d), encode(v, d)] for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"set" if t is set else "frozenset": [encode(v, d) for v in value]}
    if t is bytes:
        return {"bytes": _b2a_base64(value, newline=False).decode("ascii")}
    if t is complex:
        return {"complex": [encode(value.real, d), encode(value.imag, d)]}
    raise Unserializable(f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__)


def decode(obj: Any, _depth: int = 0) -> Any:
    """Rebuild a value from its JSON form with fresh built-in objects. Raises CodecError."""
    if _depth > MAX_DEPTH:
        raise CodecError(f"nested deeper than {MAX_DEPTH}")
    t = type(obj)
    if obj is None or t is bool or t is str or t is int:
        return obj
    if t is float:
        if not _isfinite(obj):
            raise CodecError("non-finite float must be tagged")
        return obj
    d = _depth + 1
    if t is list:
        return [decode(v, d) for v in obj]
    if t is not dict or len(obj) != 1:
        raise CodecError(f"expected a value, got {t.__name__}" + (f" with {len(obj)} keys" if t is dict else ""))
    ((tag, payload),) = obj.items()
    try:
        return _DECODERS[tag](payload, d)
    except KeyError:
        raise CodecError(f"unknown tag {tag!r}") from None
    except (TypeError, ValueError, binascii.Error, OverflowError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"bad {tag!r} payload: {exc}") from None


def _items(payload: Any, depth: int) -> list:
    if type(payload) is not list:
        raise CodecError("expected a list payload")
    return [decode(v, depth) for v in payload]


def _int(payload: Any, depth: int) -> int:
    if type(payload) is not str or not 0 < len(payload) <= 1_000_000:
        raise CodecError("int payload must be a hex string")
    return int(payload, 16)


def _float(payload: Any, depth: int) -> float:
    if payload not in ("nan", "inf", "-inf"):
        raise CodecError("float tag is only for nan/inf/-inf")
    return float(payload)


def _dict(payload: Any, depth: int) -> dict:
    if type(payload) is not list:
        raise CodecError("dict payload must be a list of pairs")
    out = {}
    for pair in payload:
        if type(pair) is not list or len(pair) != 2:
            raise CodecError("dict entries must be [key, value] pairs")
        out[decode(pair[0], depth)] = decode(pair[1], depth)   # TypeError (unhashable) -> CodecError
    return out


def _bytes(payload: Any, depth: int) -> bytes:
    if type(payload) is not str:
        raise CodecError("bytes payload must be base64 text")
    return _a2b_base64(payload.encode("ascii"), strict_mode=True)   # = base64.b64decode(validate=True)


def _complex(payload: Any, depth: int) -> complex:
    if type(payload) is not list or len(payload) != 2:
        raise CodecError("complex payload must be [real, imag]")
    parts = [decode(p, depth) for p in payload]
    if any(type(p) is not float and type(p) is not int or type(p) is bool for p in parts):
        raise CodecError("complex parts must be numbers")
    return complex(float(parts[0]), float(parts[1]))


_DECODERS = {
    "int": _int,
    "float": _float,
    "tuple": lambda p, d: tuple(_items(p, d)),
    "dict": _dict,
    "set": lambda p, d: set(_items(p, d)),
    "frozenset": lambda p, d: frozenset(_items(p, d)),
    "bytes": _bytes,
    "complex": _complex,
}


def _reject_constant(name: str) -> Any:
    raise CodecError(f"bare {name} is not allowed; use the float tag")


def _not_json(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} is not JSON-able")


# Built once (and in the zygote, before any fork): json.dumps/loads with non-default options
# would build a new encoder/decoder on every call -- allocations that cost B page faults. Their
# C parts are called directly: JSONEncoder.encode and JSONDecoder.decode are Python methods of
# classes a program can patch. (What they do around the C calls is repeated below.)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN = _DECODER.scan_once
_SKIP_SPACE = json.decoder.WHITESPACE.match
_ENCODE_STR = json.encoder.encode_basestring
_ENCODE = (json.encoder.c_make_encoder(None, _not_json, _ENCODE_STR, None, ":", ",", False, False, False)
           if json.encoder.c_make_encoder is not None else None)   # markers None: encode()'s trees are acyclic
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads_json(text: str | bytes) -> Any:
    """Strict JSON parsing for anything received from another process (no NaN literals)."""
    try:
        if type(text) is not str:
            text = text.decode("utf-8")
        try:
            obj, end = _SCAN(text, _SKIP_SPACE(text, 0).end())
        except StopIteration as stop:
            raise CodecError(f"malformed JSON: expecting a value at {stop.value}") from None
        if _SKIP_SPACE(text, end).end() != len(text):
            raise CodecError(f"malformed JSON: extra data at {end}")
        return obj
    except (ValueError, RecursionError) as exc:   # JSONDecodeError, huge decimal ints, UnicodeDecodeError
        if isinstance(exc, CodecError):
            raise
        raise CodecError(f"malformed JSON: {exc}") from None


def dumps_json(obj: Any) -> str:
    """Compact JSON for the wire. ``obj`` must already be JSON-able (e.g. via encode)."""
    if _ENCODE is None:                      # a Python without the _json accelerator
        return _ENCODER.encode(obj)
    if type(obj) is str:
        return _ENCODE_STR(obj)
    return "".join(_ENCODE(obj, 0))
