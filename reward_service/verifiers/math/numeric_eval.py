"""Bounded numeric evaluation of parser-built sympy trees with mpmath.

sympy's own ``evalf`` raises its working precision adaptively and can spend
unbounded time on inputs such as ``0^{(e-i)!^{-10^{41}}}``.  This module
walks the (small, parser-built) expression tree itself and evaluates it with
mpmath at a *fixed* precision, refusing arguments whose evaluation would be
expensive (huge exponents, trigonometric functions of astronomically large
arguments, large factorials).  Refusals raise :class:`EvaluationError`; the
caller treats the point / constant as unusable.

The mpmath contexts are private, created once and never mutated, so the
module has no global side effects and is safe to use from several threads.
"""

from __future__ import annotations

from collections.abc import Mapping

import mpmath
import sympy

__all__ = ["EvaluationError", "evaluate", "point_value", "is_close", "round_scaled",
           "STANDARD_PREC", "HIGH_PREC", "Number"]

#: Working precision (bits) for comparisons (~60 significant digits).
STANDARD_PREC = 200
#: Working precision (bits) for the decimal-rounding rule (~120 digits).
HIGH_PREC = 400
#: Largest |exponent * log|base||, |x| for exp/sinh/cosh/tanh, |Im x| for sin/cos/...
MAX_LOG_MAGNITUDE = 1e5
#: Largest |argument| of periodic functions (argument reduction cost).
MAX_PERIODIC_ARG = 1e30
#: Largest argument of factorial / gamma.
MAX_GAMMA_ARG = 1e4

Number = mpmath.mpf | mpmath.mpc


class EvaluationError(ArithmeticError):
    """The expression cannot be evaluated cheaply to a finite number."""


def _make_context(prec: int) -> mpmath.MPContext:
    ctx = mpmath.MPContext()
    ctx.prec = prec
    return ctx


_CONTEXTS = {STANDARD_PREC: _make_context(STANDARD_PREC), HIGH_PREC: _make_context(HIGH_PREC)}

_PERIODIC: dict[type, str] = {
    sympy.sin: "sin", sympy.cos: "cos", sympy.tan: "tan", sympy.sec: "sec",
    sympy.csc: "csc", sympy.cot: "cot",
}
_HYPERBOLIC: dict[type, str] = {sympy.sinh: "sinh", sympy.cosh: "cosh", sympy.tanh: "tanh"}
_OTHER_FUNCS: dict[type, str] = {
    sympy.asin: "asin", sympy.acos: "acos", sympy.atan: "atan", sympy.log: "log",
}


def _finite(ctx: mpmath.MPContext, value: Number) -> Number:
    if ctx.isnan(value) or ctx.isinf(value):
        raise EvaluationError("not finite")
    return value


def _log_magnitude(ctx: mpmath.MPContext, value: Number) -> float:
    """``log|value|`` as a float (``-inf`` for zero)."""
    if value == 0:
        return float("-inf")
    return float(ctx.log(abs(value)))


def _power(ctx: mpmath.MPContext, base: Number, exp: Number) -> Number:
    if base == 0:
        if ctx.re(exp) > 0:
            return ctx.mpf(0)
        raise EvaluationError("0 to a non-positive power")
    if abs(exp) * max(abs(_log_magnitude(ctx, base)), 1.0) > MAX_LOG_MAGNITUDE:
        raise EvaluationError("power too large")
    return ctx.power(base, exp)


def _exp_like(ctx: mpmath.MPContext, name: str, x: Number) -> Number:
    """exp/sinh/cosh/tanh: bounded real part (size) and imaginary part (reduction)."""
    if abs(ctx.re(x)) > MAX_LOG_MAGNITUDE or abs(ctx.im(x)) > MAX_PERIODIC_ARG:
        raise EvaluationError(f"{name} argument too large")
    return getattr(ctx, name)(x)


def _periodic(ctx: mpmath.MPContext, name: str, x: Number) -> Number:
    """sin/cos/...: bounded real part (reduction) and imaginary part (size)."""
    if abs(ctx.re(x)) > MAX_PERIODIC_ARG or abs(ctx.im(x)) > MAX_LOG_MAGNITUDE:
        raise EvaluationError(f"{name} argument too large")
    return getattr(ctx, name)(x)


def _real(ctx: mpmath.MPContext, x: Number) -> mpmath.mpf:
    if ctx.im(x) != 0:
        raise EvaluationError("complex argument")
    return ctx.re(x)


def _gamma_like(ctx: mpmath.MPContext, x: Number) -> None:
    if abs(x) > MAX_GAMMA_ARG:
        raise EvaluationError("factorial argument too large")


def _apply(ctx: mpmath.MPContext, expr: sympy.Basic, args: list[Number]) -> Number:
    """Evaluate a non-leaf node whose arguments are already evaluated."""
    func = type(expr)
    if isinstance(expr, sympy.Add):
        return ctx.fsum(args)
    if isinstance(expr, sympy.Mul):
        return ctx.fprod(args)
    if isinstance(expr, sympy.Pow):
        return _power(ctx, args[0], args[1])
    if func is sympy.exp:
        return _exp_like(ctx, "exp", args[0])
    if func in _HYPERBOLIC:
        return _exp_like(ctx, _HYPERBOLIC[func], args[0])
    if func in _PERIODIC:
        return _periodic(ctx, _PERIODIC[func], args[0])
    if func in _OTHER_FUNCS:
        if func is sympy.log and args[0] == 0:
            raise EvaluationError("log(0)")
        return getattr(ctx, _OTHER_FUNCS[func])(*args)
    if func is sympy.Abs:
        return abs(args[0])
    if func is sympy.floor:
        return ctx.floor(_real(ctx, args[0]))
    if func is sympy.ceiling:
        return ctx.ceil(_real(ctx, args[0]))
    if func is sympy.factorial:
        _gamma_like(ctx, args[0])
        return ctx.factorial(args[0])
    if func is sympy.binomial:
        _gamma_like(ctx, args[0])
        _gamma_like(ctx, args[1])
        return ctx.binomial(args[0], args[1])
    raise EvaluationError(f"cannot evaluate {func.__name__}")


def _leaf(ctx: mpmath.MPContext, expr: sympy.Basic, values: Mapping[sympy.Symbol, Number]) -> Number:
    if isinstance(expr, sympy.Rational):
        return ctx.mpf(int(expr.p)) / int(expr.q)
    if isinstance(expr, sympy.Float):
        return ctx.mpf(expr._mpf_)
    if expr is sympy.pi:
        return +ctx.pi
    if expr is sympy.E:
        return +ctx.e
    if expr is sympy.I:
        return ctx.mpc(0, 1)
    if isinstance(expr, sympy.Symbol):
        if expr not in values:
            raise EvaluationError(f"no value for {expr}")
        return values[expr]
    raise EvaluationError(f"cannot evaluate {expr!r}")


def evaluate(expr: sympy.Basic, values: Mapping[sympy.Symbol, Number] | None = None,
             prec: int = STANDARD_PREC) -> Number:
    """Evaluate ``expr`` (symbols taken from ``values``) at ``prec`` bits.

    Raises:
        EvaluationError: unsupported node, non-finite value or too costly.
    """
    ctx = _CONTEXTS[prec]
    env: Mapping[sympy.Symbol, Number] = values or {}

    def walk(node: sympy.Basic) -> Number:
        if not node.args:
            return _leaf(ctx, node, env)
        return _finite(ctx, _apply(ctx, node, [walk(arg) for arg in node.args]))

    try:
        return _finite(ctx, walk(expr))
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        raise EvaluationError(str(exc)) from exc


def point_value(text: str) -> mpmath.mpf:
    """An mpmath number (standard precision) for a fixed evaluation point."""
    return _CONTEXTS[STANDARD_PREC].mpf(text)


def is_close(a: Number, b: Number, rtol: float, floor: float) -> bool:
    """``|a - b| <= rtol * max(|a|, |b|, floor)``."""
    ctx = _CONTEXTS[STANDARD_PREC]
    return bool(abs(a - b) <= ctx.mpf(rtol) * max(abs(a), abs(b), ctx.mpf(floor)))


def round_scaled(value: Number, places: int) -> int | None:
    """``round(value * 10**places)`` for a real ``value`` (``None`` if complex)."""
    ctx = _CONTEXTS[HIGH_PREC]
    if abs(ctx.im(value)) > ctx.mpf(10) ** -60 * max(abs(value), 1):
        return None
    return int(ctx.nint(ctx.re(value) * ctx.mpf(10) ** places))
