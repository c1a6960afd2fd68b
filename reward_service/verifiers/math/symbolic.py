"""Symbolic equivalence of parser-built sympy expressions, by bounded numeric evaluation.

No ``simplify``/``expand`` is run: values are compared with
:mod:`.numeric_eval` (mpmath at a fixed precision, with cost guards).

* Constants (no free symbols): exact when both are sympy rationals,
  otherwise evaluated to ~60 digits and compared with relative tolerance
  1e-25 (absolute 1e-35 near zero).
* Expressions with free symbols: evaluated at fixed pseudo-random points
  over the union of both sides' symbols (every symbol takes positive and
  negative values, so ``|x| != x``); equal when all usable points agree to
  a relative 1e-15 and at least one point was usable.
* Equations ``l1 = r1`` vs ``l2 = r2``: ``(l1 - r1) / (l2 - r2)`` is the
  same nonzero constant at every point.
"""

from __future__ import annotations

import sympy

from .numeric import NumericValue, decimal_matches
from .numeric_eval import HIGH_PREC, EvaluationError, Number, evaluate, is_close, point_value, round_scaled

__all__ = ["expressions_equal", "equations_equal", "decimal_matches_expression"]

CONST_RTOL = 1e-25
CONST_FLOOR = 1e-10
POINT_RTOL = 1e-15
#: Point k gives symbol j the value ``POINT_VALUES[(3k + j) % 8]``.
POINT_VALUES = ("0.7236067977", "1.3247179572", "-0.5772156649", "-1.6180339887",
                "0.4142135624", "2.2360679775", "1.0471975512", "-0.3183098862")
_INFINITIES = (sympy.oo, -sympy.oo, sympy.zoo, sympy.nan)


def _points(symbols: list[sympy.Symbol], count: int) -> list[dict[sympy.Symbol, Number]]:
    n = len(POINT_VALUES)
    return [{s: point_value(POINT_VALUES[(k * 3 + j) % n]) for j, s in enumerate(symbols)}
            for k in range(count)]


def _sorted_symbols(*exprs: sympy.Expr) -> list[sympy.Symbol]:
    symbols: set[sympy.Symbol] = set()
    for expr in exprs:
        symbols |= expr.free_symbols
    return sorted(symbols, key=lambda s: s.name)


def _value(expr: sympy.Expr, point: dict[sympy.Symbol, Number] | None = None) -> Number | None:
    try:
        return evaluate(expr, point)
    except EvaluationError:
        return None


def _constants_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    if isinstance(a, sympy.Rational) and isinstance(b, sympy.Rational):
        return a == b
    if a.has(*_INFINITIES) or b.has(*_INFINITIES):
        return a == b
    va, vb = _value(a), _value(b)
    return va is not None and vb is not None and is_close(va, vb, CONST_RTOL, CONST_FLOOR)


def expressions_equal(a: sympy.Expr, b: sympy.Expr, eval_points: int = 3) -> bool:
    """Whether two expressions are equal (see the module docstring)."""
    if a == b:
        return True
    symbols = _sorted_symbols(a, b)
    if not symbols:
        return _constants_equal(a, b)
    if a.has(*_INFINITIES) or b.has(*_INFINITIES):
        return False
    usable = 0
    for point in _points(symbols, eval_points):
        va, vb = _value(a, point), _value(b, point)
        if va is None or vb is None:
            continue
        if not is_close(va, vb, POINT_RTOL, 1.0):
            return False
        usable += 1
    return usable > 0


def equations_equal(da: sympy.Expr, db: sympy.Expr, eval_points: int = 4) -> bool:
    """Whether ``da = 0`` and ``db = 0`` agree up to a nonzero constant factor."""
    if da == db:
        return True
    symbols = _sorted_symbols(da, db)
    if not symbols or {s.name for s in da.free_symbols} != {s.name for s in db.free_symbols}:
        return False
    ratio = None
    for point in _points(symbols, eval_points):
        va, vb = _value(da, point), _value(db, point)
        if va is None or vb is None or va == 0 or vb == 0:
            return False
        r = va / vb
        if ratio is None:
            ratio = r
        elif not is_close(r, ratio, POINT_RTOL, 1.0):
            return False
    return ratio is not None


def decimal_matches_expression(literal: NumericValue, expr: sympy.Expr, min_sig_digits: int) -> bool:
    """The decimal-rounding rule against a non-rational constant (``3.14159`` vs ``\\pi``)."""
    if literal.decimal_places is None or expr.free_symbols or isinstance(expr, sympy.Rational):
        return False
    if expr.has(*_INFINITIES):
        return False
    try:
        value = evaluate(expr, None, HIGH_PREC)
    except EvaluationError:
        return False
    if abs(value) > 10 ** 60 or literal.decimal_places > 60:
        return False
    rounded = round_scaled(value, literal.decimal_places)
    return rounded is not None and decimal_matches(literal, rounded, min_sig_digits)
