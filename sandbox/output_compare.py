"""STDIO output comparison on the host: named comparators, one documented rule each.

``OutputCompare.mode`` (reward_core/sandbox_contract.py) picks the comparator; expected and
actual are the case's expected stdout and the program's captured stdout:

``tokens`` (the default)
    Both texts split on runs of ASCII whitespace (space, ``\\t``, ``\\n``, ``\\r``, ``\\v``,
    ``\\f``); the token sequences must be equal. Spacing, blank lines, line breaks and a missing
    or extra final newline never matter; case and every other character do. What competitive
    judges do by default (testlib's ``wcmp``, Codeforces' "tokens" checker).
``float``
    ``tokens``, where two tokens that both look like decimal numbers (``[+-]digits[.digits][e±d]``;
    no ``inf``/``nan``/hex/underscores) match when ``|a - e| <= tol * max(1, |e|)``: within
    ``tol`` absolutely or relatively (testlib's ``doubleCompare``). ``tol`` is
    ``float_tolerance``, 1e-6 when unset. Other tokens compare as text.
``exact``
    Byte-exact text (after ``\\r\\n``/``\\r`` -> ``\\n`` when ``normalize_line_endings``, the default).
``lines``
    Line by line (after line-ending normalization when set); with ``ignore_trailing_whitespace``
    (default) each line's trailing whitespace and the trailing blank lines are dropped, so a missing
    final newline does not matter but leading spaces and blank lines *between* lines do; with
    ``float_tolerance`` set, lines are compared token by token as in ``float``. This was the only
    comparison before modes existed; a request without a mode that turns a whitespace flag off
    still gets it (``OutputCompare.effective_mode``).
``lines_unordered``
    The multiset of non-empty lines, each line's trailing whitespace ignored (line endings
    normalized when set): the lines may come in any order, each as often as expected.
``checker``
    Not decided here: a checker program judges each case (``sandbox/checker.py``).

Pure functions; no I/O.
"""

from __future__ import annotations

import collections
import math
import re

from reward_core.sandbox_contract import OutputCompare

_WHITESPACE = re.compile(r"[ \t\n\r\v\f]+")
_TOKEN = re.compile(r"[^ \t\n\r\v\f]+")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_SHOW = 80


def _endings(text: str, compare: OutputCompare) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if compare.normalize_line_endings else text


def normalize(text: str, compare: OutputCompare = OutputCompare(mode="lines")) -> list[str]:
    """Mode ``lines``: the lines that are compared (line endings, trailing whitespace, trailing blank lines)."""
    text = _endings(text, compare)
    lines = text.split("\n")
    if compare.ignore_trailing_whitespace:
        lines = [line.rstrip() for line in lines]
        while lines and lines[-1] == "":
            lines.pop()
    elif lines and lines[-1] == "" and text.endswith("\n"):
        lines.pop()             # "a\n" is one line, not "a" plus an empty one
    return lines


def tokens(text: str) -> list[str]:
    """The whitespace-separated tokens of ``text`` (ASCII whitespace only)."""
    return [t for t in _WHITESPACE.split(text) if t]


def _number(token: str) -> float | None:
    if not _NUMBER.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def tokens_match(expected: str, actual: str, tolerance: float | None) -> bool:
    """Two tokens: equal as text, or (with a tolerance) both numbers within it."""
    if expected == actual:
        return True
    if tolerance is None:
        return False
    e, a = _number(expected), _number(actual)
    return e is not None and a is not None and abs(a - e) <= tolerance * max(1.0, abs(e))


def _unordered_lines(text: str, compare: OutputCompare) -> collections.Counter:
    return collections.Counter(line.rstrip() for line in _endings(text, compare).split("\n") if line.strip())


def outputs_match(expected: str, actual: str, compare: OutputCompare = OutputCompare()) -> bool:
    """Does ``actual`` pass against ``expected`` under ``compare``'s comparator? (``checker``: ValueError.)"""
    return describe_mismatch(expected, actual, compare) == ""


def _show(text: str | None) -> str:
    if text is None:
        return "<end of output>"
    return repr(text if len(text) <= _SHOW else text[: _SHOW - 3] + "...")


def _token_spans(text: str) -> list[re.Match]:
    return list(_TOKEN.finditer(text))


def _line_of(text: str, match: re.Match | None) -> int:
    return text.count("\n", 0, match.start()) + 1 if match is not None else 0


def _describe_tokens(expected: str, actual: str, tolerance: float | None) -> str:
    """The first differing token, with the line it is on (the program's line; the expected one at its end)."""
    exp, act = _token_spans(expected), _token_spans(actual)
    i = next((k for k, (e, a) in enumerate(zip(exp, act)) if not tokens_match(e.group(), a.group(), tolerance)),
             None)
    if i is None:
        if len(exp) == len(act):
            return ""
        i = min(len(exp), len(act))
    e = exp[i] if i < len(exp) else None
    a = act[i] if i < len(act) else None
    line = _line_of(actual, a) if a is not None else _line_of(expected, e)
    return (f"line {line}: expected {_show(e.group() if e else None)}, "
            f"got {_show(a.group() if a else None)}")


def _line_tokens_match(expected: str, actual: str, tolerance: float) -> bool:
    et, at = tokens(expected), tokens(actual)
    return len(et) == len(at) and all(tokens_match(e, a, tolerance) for e, a in zip(et, at))


def first_difference(expected: str, actual: str, compare: OutputCompare = OutputCompare(mode="lines")) -> int | None:
    """Mode ``lines``: index of the first differing (normalized) line, or None if the outputs match."""
    exp, act = normalize(expected, compare), normalize(actual, compare)
    tolerance = compare.float_tolerance
    for i, (e, a) in enumerate(zip(exp, act)):
        if e != a and (tolerance is None or not _line_tokens_match(e, a, tolerance)):
            return i
    return None if len(exp) == len(act) else min(len(exp), len(act))


def _describe_lines(expected: str, actual: str, compare: OutputCompare) -> str:
    i = first_difference(expected, actual, compare)
    if i is None:
        return ""
    exp, act = normalize(expected, compare), normalize(actual, compare)
    return (f"line {i + 1}: expected {_show(exp[i] if i < len(exp) else None)}, "
            f"got {_show(act[i] if i < len(act) else None)}")


def _describe_exact(expected: str, actual: str, compare: OutputCompare) -> str:
    exp, act = _endings(expected, compare), _endings(actual, compare)
    if exp == act:
        return ""
    i = next((k for k, (e, a) in enumerate(zip(exp, act)) if e != a), min(len(exp), len(act)))
    line = exp.count("\n", 0, i) + 1
    start = max(0, i - 20)
    return f"byte {i + 1} (line {line}): expected {_show(exp[start:i + 40])}, got {_show(act[start:i + 40])}"


def _describe_unordered(expected: str, actual: str, compare: OutputCompare) -> str:
    exp, act = _unordered_lines(expected, compare), _unordered_lines(actual, compare)
    if exp == act:
        return ""
    missing, extra = exp - act, act - exp
    parts = []
    if missing:
        parts.append(f"{sum(missing.values())} expected line(s) missing, e.g. {_show(next(iter(missing)))}")
    if extra:
        parts.append(f"{sum(extra.values())} unexpected line(s), e.g. {_show(next(iter(extra)))}")
    return "; ".join(parts)


def describe_mismatch(expected: str, actual: str, compare: OutputCompare = OutputCompare()) -> str:
    """A one-line explanation of the first difference, "" when the outputs match.

    Mode ``checker`` is no text comparison: ValueError (the host runs the checker instead).
    """
    mode = compare.effective_mode
    if mode in ("tokens", "float"):
        return _describe_tokens(expected, actual, compare.tolerance)
    if mode == "lines":
        return _describe_lines(expected, actual, compare)
    if mode == "exact":
        return _describe_exact(expected, actual, compare)
    if mode == "lines_unordered":
        return _describe_unordered(expected, actual, compare)
    raise ValueError(f"compare mode {mode!r} is not a text comparison")
