"""STDIO output comparison on the host: one documented normalization, no surprises.

Given the expected and the actual stdout, with an :class:`OutputCompare`:

1. ``normalize_line_endings`` (default on): ``\\r\\n`` and lone ``\\r`` become ``\\n``.
2. ``ignore_trailing_whitespace`` (default on): trailing whitespace is removed
   from every line, and trailing empty lines are dropped -- so a missing or an
   extra final newline never matters. Leading whitespace and blank lines
   *between* lines still do.
3. ``float_tolerance`` (default None = exact): when set, each line is compared
   token by token (split on whitespace, so spacing within a line no longer
   matters); two tokens match if they are equal as text or if both parse as
   finite floats within the tolerance, absolute or relative
   (``|a - e| <= tol * max(1, |e|)``). Line and token counts must match.

Everything else is exact text equality (case-sensitive, Unicode as is).
Pure functions; no I/O.
"""

from __future__ import annotations

import math

from reward_core.sandbox_contract import OutputCompare


def normalize(text: str, compare: OutputCompare = OutputCompare()) -> list[str]:
    """The lines that are compared, after steps 1 and 2."""
    if compare.normalize_line_endings:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if compare.ignore_trailing_whitespace:
        lines = [line.rstrip() for line in lines]
        while lines and lines[-1] == "":
            lines.pop()
    elif lines and lines[-1] == "" and text.endswith("\n"):
        lines.pop()             # "a\n" is one line, not "a" plus an empty one
    return lines


def _float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def tokens_match(expected: str, actual: str, tolerance: float) -> bool:
    if expected == actual:
        return True
    e, a = _float(expected), _float(actual)
    return e is not None and a is not None and abs(a - e) <= tolerance * max(1.0, abs(e))


def _lines_match(expected: str, actual: str, tolerance: float | None) -> bool:
    if tolerance is None:
        return expected == actual
    et, at = expected.split(), actual.split()
    return len(et) == len(at) and all(tokens_match(e, a, tolerance) for e, a in zip(et, at))


def first_difference(expected: str, actual: str, compare: OutputCompare = OutputCompare()) -> int | None:
    """Index of the first differing (normalized) line, or None if the outputs match."""
    exp, act = normalize(expected, compare), normalize(actual, compare)
    for i, (e, a) in enumerate(zip(exp, act)):
        if not _lines_match(e, a, compare.float_tolerance):
            return i
    return None if len(exp) == len(act) else min(len(exp), len(act))


def outputs_match(expected: str, actual: str, compare: OutputCompare = OutputCompare()) -> bool:
    return first_difference(expected, actual, compare) is None


def _show(line: str | None) -> str:
    if line is None:
        return "<end of output>"
    return repr(line if len(line) <= 80 else line[:77] + "...")


def describe_mismatch(expected: str, actual: str, compare: OutputCompare = OutputCompare()) -> str:
    """A one-line explanation: which line differs and how ("" if they match)."""
    i = first_difference(expected, actual, compare)
    if i is None:
        return ""
    exp, act = normalize(expected, compare), normalize(actual, compare)
    e = exp[i] if i < len(exp) else None
    a = act[i] if i < len(act) else None
    return f"line {i + 1}: expected {_show(e)}, got {_show(a)}"
