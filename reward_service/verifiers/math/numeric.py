"""Exact numeric parsing and comparison with :class:`fractions.Fraction` (no sympy).

:func:`parse_number` recognises, on *normalized* answers (see
:mod:`.normalize`): integers, decimals (``.5``, ``2.``), scientific notation
(``1.5e3``, ``1.5\\times10^{3}``, ``1.5 \\cdot 10^3``, ``10^{-2}``),
repeating decimals (``0.\\overline{3}``),
fractions (``a/b``, ``\\frac{a}{b}``, ``\\frac ab``, ``-\\frac{1}{2}``,
``\\frac{-1}{2}``), mixed numbers (``2\\frac{1}{2}``, ``2 1/2``), signs and a
trailing percent marker (``50%``).

:func:`numbers_match` implements the tolerance policy documented in
:mod:`.math_equal`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .errors import ExpressionTooLarge

__all__ = ["NumericValue", "parse_number", "numbers_match", "decimal_matches", "is_terminating",
           "APPROX_SIG_DIGITS"]

#: Longest digit string accepted (Python refuses int() of > 4300 digits anyway).
MAX_NUMBER_CHARS = 400
#: Largest power-of-ten exponent accepted in scientific notation.
MAX_SCI_EXPONENT = 1000
#: Significant digits a decimal literal needs to stand for a value that is not a terminating
#: decimal (``1/3``, ``\pi``), by ``EquivalenceConfig.decimal_approximations``: ``strict`` (the
#: default) wants a float-like value (``0.333333``, ``3.14159``), ``allow`` a short one (``0.333``).
APPROX_SIG_DIGITS = {"strict": 6, "allow": 3}

_UNSIGNED = r"(?:\d+\.\d*|\.\d+|\d+)"
_DECIMAL_RE = re.compile(r"(\d*)\.(\d+)|(\d+)\.?")
_SCI_E_RE = re.compile(rf"({_UNSIGNED})[eE]([-+]?\d+)")
_SCI_TIMES_RE = re.compile(
    rf"(?:({_UNSIGNED})\s*(?:\\times|\\cdot|\*|x)\s*)?10\s*(?:\^|\*\*)\s*(?:\{{\s*([-+]?\s*\d+)\s*\}}|([-+]?\d+))"
)
_FRAC_RE = re.compile(
    r"\\frac\s*(?:\{\s*([-+]?\s*\d+)\s*\}|(\d))\s*(?:\{\s*([-+]?\s*\d+)\s*\}|(\d))"
)
_SLASH_RE = re.compile(r"(\d+)\s*/\s*(\d+)")
_REPEATING_RE = re.compile(r"(\d*)\.(\d*)\s*\\(?:overline|bar)\s*\{\s*(\d+)\s*\}")
_MIXED_RE = re.compile(r"(\d+)\s*(\\frac.*)|(\d+)\s+(\d+\s*/\s*\d+)")


@dataclass(frozen=True)
class NumericValue:
    """An exactly parsed number.

    Attributes:
        value: the exact value (percent *not* applied).
        decimal_places: digits after the point when written as a plain
            decimal literal (``0.333`` -> 3), else ``None``.
        sig_digits: significant digits of a decimal literal (``0.0330`` -> 3).
        percent: written with a trailing ``%``.
    """

    value: Fraction
    decimal_places: int | None = None
    sig_digits: int = 0
    percent: bool = False

    def candidates(self) -> tuple[NumericValue, ...]:
        """Readings of the number: ``p%`` is both ``p`` and ``p/100``."""
        if not self.percent:
            return (self,)
        plain = NumericValue(self.value, self.decimal_places, self.sig_digits)
        places = None if self.decimal_places is None else self.decimal_places + 2
        return (plain, NumericValue(self.value / 100, places, self.sig_digits))


def _parse_decimal(s: str) -> NumericValue | None:
    m = _DECIMAL_RE.fullmatch(s)
    if m is None:
        return None
    if m.group(3) is not None:
        return NumericValue(Fraction(int(m.group(3))))
    whole, frac = m.group(1) or "0", m.group(2)
    value = Fraction(int(whole + frac), 10 ** len(frac))
    sig = len((whole + frac).lstrip("0"))
    return NumericValue(value, decimal_places=len(frac), sig_digits=sig)


def _parse_repeating(s: str) -> NumericValue | None:
    """``0.1\\overline{6}`` -> 1/6 (exact)."""
    m = _REPEATING_RE.fullmatch(s)
    if m is None:
        return None
    whole, fixed, rep = int(m.group(1) or "0"), m.group(2), m.group(3)
    numerator = int(fixed + rep) - int(fixed or "0")
    return NumericValue(whole + Fraction(numerator, 10 ** len(fixed) * (10 ** len(rep) - 1)))


def _sci_value(mantissa: str | None, exponent: str) -> Fraction:
    exp = int(exponent.replace(" ", ""))
    if abs(exp) > MAX_SCI_EXPONENT:
        raise ExpressionTooLarge(f"exponent {exp} too large")
    base = Fraction(mantissa) if mantissa else Fraction(1)
    return base * Fraction(10) ** exp


def _parse_unsigned(s: str) -> NumericValue | None:
    """Parse a number without sign or percent; ``None`` if not a plain number."""
    value = _parse_decimal(s)
    if value is not None:
        return value
    value = _parse_repeating(s)
    if value is not None:
        return value
    m = _SCI_E_RE.fullmatch(s)
    if m is not None:
        return NumericValue(_sci_value(m.group(1), m.group(2)))
    m = _SCI_TIMES_RE.fullmatch(s)
    if m is not None:
        return NumericValue(_sci_value(m.group(1), m.group(2) or m.group(3)))
    m = _FRAC_RE.fullmatch(s)
    if m is not None:
        num = int((m.group(1) or m.group(2)).replace(" ", ""))
        den = int((m.group(3) or m.group(4)).replace(" ", ""))
        return NumericValue(Fraction(num, den)) if den != 0 else None
    m = _SLASH_RE.fullmatch(s)
    if m is not None:
        den = int(m.group(2))
        return NumericValue(Fraction(int(m.group(1)), den)) if den != 0 else None
    m = _MIXED_RE.fullmatch(s)
    if m is not None:
        whole = int(m.group(1) or m.group(3))
        part = _parse_unsigned(m.group(2) or m.group(4))
        if part is not None and part.decimal_places is None and 0 < part.value < 1:
            return NumericValue(whole + part.value)
    return None


def parse_number(s: str) -> NumericValue | None:
    """Parse a normalized answer as an exact number, or return ``None``.

    Raises:
        ExpressionTooLarge: for absurd scientific exponents.
    """
    s = s.strip()
    if not s or len(s) > MAX_NUMBER_CHARS:
        return None
    percent = s.endswith("%")
    if percent:
        s = s[:-1].strip()
    sign = 1
    while s[:1] in ("-", "+"):
        if s[0] == "-":
            sign = -sign
        s = s[1:].lstrip()
    if s.startswith("{") and s.endswith("}") and "{" not in s[1:-1]:
        s = s[1:-1].strip()
    if not s:
        return None
    value = _parse_unsigned(s)
    if value is None:
        return None
    return NumericValue(sign * value.value, value.decimal_places, value.sig_digits, percent)


def is_terminating(value: Fraction) -> bool:
    """Whether ``value`` has a finite decimal expansion (denominator 2^a 5^b)."""
    den = value.denominator
    for prime in (2, 5):
        while den % prime == 0:
            den //= prime
    return den == 1


def decimal_matches(literal: NumericValue, rounded_int: int, min_sig_digits: int) -> bool:
    """Whether ``literal`` (with ``min_sig_digits`` or more) equals a value whose ``value * 10**places``
    rounds to ``rounded_int``."""
    if literal.decimal_places is None or literal.sig_digits < min_sig_digits:
        return False
    return literal.value * 10 ** literal.decimal_places == rounded_int


def _one_way(literal: NumericValue, other: NumericValue, min_sig_digits: int) -> bool:
    if literal.decimal_places is None or is_terminating(other.value):
        return False
    scaled = other.value * 10 ** literal.decimal_places
    return decimal_matches(literal, round(scaled), min_sig_digits)


def numbers_match(a: NumericValue, b: NumericValue, min_sig_digits: int | None = APPROX_SIG_DIGITS["strict"]) -> bool:
    """Exact equality, plus the percent rule and the decimal rule (a decimal literal with at least
    ``min_sig_digits`` significant digits for the value it rounds; ``None``: exact values only)."""
    for ca in a.candidates():
        for cb in b.candidates():
            if ca.value == cb.value:
                return True
            if min_sig_digits is not None and (_one_way(ca, cb, min_sig_digits) or _one_way(cb, ca, min_sig_digits)):
                return True
    return False
