"""Guarded constructors of sympy objects for the LaTeX parser.

Pure rational arithmetic is done exactly (sympy ``Rational``), behind size
guards.  Everything else is built with ``evaluate=False``: sympy's automatic
simplification runs its assumption system, which calls ``evalf`` with
adaptive precision and can take unbounded time on hostile input.  The
comparison layer evaluates the resulting trees numerically with
:mod:`.numeric_eval` instead.  Sums and products are kept flat (n-ary), so
long inputs do not produce deep trees.

Guards (raising :class:`ExpressionTooLarge` before any work is done): exact
results over :data:`MAX_DIGITS` digits (including power towers, caught at
their first oversized level), factorials/binomials above
:data:`MAX_FACTORIAL`, integer exponents above
:data:`MAX_SYMBOLIC_EXPONENT` on symbolic bases, non-integer powers
involving numbers over :data:`MAX_ROOT_DIGITS` digits.
"""

from __future__ import annotations

import math

import sympy

from .errors import ExpressionTooLarge, MathParseError

__all__ = [
    "MAX_DIGITS", "MAX_FACTORIAL", "MAX_SYMBOLIC_EXPONENT", "MAX_ROOT_DIGITS",
    "number_digits", "add", "neg", "mul", "div", "power", "root", "factorial", "binomial", "symbol",
]

MAX_DIGITS = 100_000
MAX_FACTORIAL = 1000
MAX_SYMBOLIC_EXPONENT = 1000
#: Rational roots of numbers up to this size are simplified by sympy (``\sqrt{12} = 2\sqrt3``).
MAX_ROOT_EXTRACTION_DIGITS = 30
#: Non-integer powers involving larger exact numbers are refused.
MAX_ROOT_DIGITS = 300


def _digits(n: int) -> float:
    """Approximate number of decimal digits of ``|n|`` (cheap, from the bit length)."""
    return abs(n).bit_length() * 0.30103


def number_digits(x: sympy.Expr) -> float:
    """Digits of an exact rational (numerator or denominator); 0 for anything else."""
    if isinstance(x, sympy.Rational):
        return max(_digits(int(x.p)), _digits(int(x.q)))
    return 0.0


def _max_atom_digits(expr: sympy.Expr) -> float:
    if isinstance(expr, sympy.Rational):
        return number_digits(expr)
    return max((number_digits(a) for a in expr.atoms(sympy.Rational)), default=0.0)


def _exponent_magnitude(exp: sympy.Rational | sympy.Float) -> float:
    if isinstance(exp, sympy.Rational) and _digits(int(exp.p)) > 15:
        return math.inf
    return abs(float(exp))


def _check_pow(base: sympy.Expr, exp: sympy.Expr) -> None:
    """Raise :class:`ExpressionTooLarge` if ``base**exp`` is too big to build."""
    if not isinstance(exp, sympy.Number) or exp.is_zero:
        return
    magnitude = _exponent_magnitude(exp)
    if isinstance(base, sympy.Number):
        if base.is_zero or base in (sympy.Integer(1), sympy.Integer(-1)):
            return
        log_base = abs(math.log10(abs(float(base)))) if isinstance(base, sympy.Float) else number_digits(base)
        if magnitude * max(log_base, 0.3) > MAX_DIGITS:
            raise ExpressionTooLarge("power result too large")
    elif magnitude * max(_max_atom_digits(base), 1.0) > MAX_DIGITS:
        raise ExpressionTooLarge("power of an expression too large")
    elif base.free_symbols and magnitude > MAX_SYMBOLIC_EXPONENT:
        raise ExpressionTooLarge("symbolic exponent too large")


def _flat(cls: type, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    args = [*(a.args if isinstance(a, cls) else (a,)), *(b.args if isinstance(b, cls) else (b,))]
    return cls(*args, evaluate=False)


def add(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``a + b``: exact for numbers, otherwise an unevaluated flat sum."""
    if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
        return a + b
    return _flat(sympy.Add, a, b)


def mul(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``a * b``: exact for numbers, otherwise an unevaluated flat product."""
    if _max_atom_digits(a) + _max_atom_digits(b) > MAX_DIGITS:
        raise ExpressionTooLarge("product too large")
    if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
        return a * b
    return _flat(sympy.Mul, a, b)


def neg(a: sympy.Expr) -> sympy.Expr:
    """``-a``."""
    return -a if isinstance(a, sympy.Number) else mul(sympy.Integer(-1), a)


def div(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """``a / b`` (a literal zero divisor is a parse error)."""
    if isinstance(b, sympy.Rational):
        if b.is_zero:
            raise MathParseError("division by zero")
        return mul(a, 1 / b)
    return mul(a, sympy.Pow(b, -1, evaluate=False))


def power(base: sympy.Expr, exp: sympy.Expr) -> sympy.Expr:
    """``base ** exp`` behind the size guards (see the module docstring)."""
    _check_pow(base, exp)
    if not (isinstance(base, sympy.Rational) and isinstance(exp, sympy.Rational)):
        if _max_atom_digits(exp) > MAX_ROOT_DIGITS and not isinstance(exp, sympy.Integer):
            raise ExpressionTooLarge("exponent holds a huge number")
        return sympy.Pow(base, exp, evaluate=False)
    if base.is_zero and exp.is_negative:
        raise MathParseError("division by zero")
    if isinstance(exp, sympy.Integer):
        return sympy.Pow(base, exp)
    digits = max(number_digits(base), number_digits(exp))
    if digits > MAX_ROOT_DIGITS:
        raise ExpressionTooLarge("root of a huge number")
    return sympy.Pow(base, exp, evaluate=digits <= MAX_ROOT_EXTRACTION_DIGITS)


def root(radicand: sympy.Expr, index: sympy.Expr) -> sympy.Expr:
    """``\\sqrt[n]{x}``; the real root for odd ``n`` and a negative number ``x``."""
    if (isinstance(index, sympy.Integer) and index % 2 == 1 and isinstance(radicand, sympy.Rational)
            and radicand.is_negative):
        return neg(power(-radicand, div(sympy.Integer(1), index)))
    return power(radicand, div(sympy.Integer(1), index))


def factorial(x: sympy.Expr) -> sympy.Expr:
    """``x!``: exact for naturals up to :data:`MAX_FACTORIAL`."""
    if isinstance(x, sympy.Number):
        if not isinstance(x, sympy.Integer) or x < 0:
            raise MathParseError("factorial of a non-natural number")
        if x > MAX_FACTORIAL:
            raise ExpressionTooLarge("factorial too large")
        return sympy.factorial(x)
    return sympy.factorial(x, evaluate=False)


def binomial(n: sympy.Expr, k: sympy.Expr) -> sympy.Expr:
    """``\\binom{n}{k}``: exact for integers up to :data:`MAX_FACTORIAL`."""
    for arg in (n, k):
        if isinstance(arg, sympy.Number) and abs(arg) > MAX_FACTORIAL:
            raise ExpressionTooLarge("binomial too large")
    if isinstance(n, sympy.Integer) and isinstance(k, sympy.Integer):
        return sympy.binomial(n, k)
    return sympy.binomial(n, k, evaluate=False)


def symbol(name: str) -> sympy.Expr:
    """A letter: ``e`` and ``i`` are the constants, anything else a symbol."""
    if name == "e":
        return sympy.E
    if name == "i":
        return sympy.I
    return sympy.Symbol(name)
