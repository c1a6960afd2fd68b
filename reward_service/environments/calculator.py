"""The ``calculator`` tool's evaluation: an arithmetic expression to its exact value, with sympy.

The expression is model-written, so it is never passed to ``eval`` (nor to sympy's parser, which
uses it): Python's ``ast`` parses it and only numbers, the arithmetic operators, the constants
and the functions of :data:`FUNCTIONS` become sympy objects; anything else is refused with a
message. ``^`` means a power (as people write it). Evaluation can still be expensive
(``9**9**9``): the session manager runs :func:`evaluate_job` in a supervised worker pool with a
hard time and memory limit, off its event loop.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

import sympy

#: Longest expression accepted (characters).
MAX_EXPRESSION_CHARS = 2000
#: Digits shown for a decimal value.
DECIMAL_DIGITS = 15

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": sympy.sqrt, "cbrt": sympy.cbrt, "root": sympy.root, "abs": sympy.Abs, "exp": sympy.exp,
    "log": sympy.log, "ln": sympy.log, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "asin": sympy.asin, "acos": sympy.acos, "atan": sympy.atan, "factorial": sympy.factorial,
    "binomial": sympy.binomial, "gcd": sympy.gcd, "lcm": sympy.lcm, "floor": sympy.floor,
    "ceiling": sympy.ceiling, "ceil": sympy.ceiling, "Rational": sympy.Rational, "min": sympy.Min,
    "max": sympy.Max,
}
CONSTANTS = {"pi": sympy.pi, "E": sympy.E, "e": sympy.E}

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class CalculatorError(ValueError):
    """The expression is not one the calculator evaluates (the message says why)."""


def parse_expression(expression: str) -> sympy.Expr:
    """The sympy expression for ``expression`` (unevaluated numbers kept exact); raises CalculatorError."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("empty expression")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    source = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"cannot parse the expression: {exc.msg}") from None
    return _build(tree.body)


def _build(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return sympy.Integer(node.value) if isinstance(node.value, int) else sympy.Rational(repr(node.value))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_build(node.left), _build(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_build(node.operand))
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}; constants: {sorted(CONSTANTS)}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = FUNCTIONS.get(node.func.id)
        if function is None:
            raise CalculatorError(f"unknown function {node.func.id!r}; functions: {sorted(FUNCTIONS)}")
        return function(*[_build(arg) for arg in node.args])
    raise CalculatorError(f"not allowed in an expression: {ast.unparse(node)[:80]!r} (numbers, + - * / // % **, "
                          "parentheses, the listed functions and constants only)")


def evaluate(expression: str) -> str:
    """The value of ``expression`` as the tool answers it: exact, plus a decimal when not an integer
    (``1/3`` -> ``1/3 ≈ 0.333333333333333``); a refused expression answers ``error: ...``."""
    try:
        value = sympy.simplify(parse_expression(expression))
    except CalculatorError as exc:
        return f"error: {exc}"
    except (ZeroDivisionError, TypeError, ValueError, ArithmeticError) as exc:
        return f"error: {type(exc).__name__}: {exc}"
    if value.has(sympy.zoo, sympy.nan) or value in (sympy.oo, -sympy.oo):
        return f"error: the value is undefined ({value})"
    if value.is_Integer:
        return str(value)
    exact = sympy.sstr(value)
    try:
        decimal = sympy.N(value, DECIMAL_DIGITS)
    except (TypeError, ValueError):
        return exact
    text = sympy.sstr(decimal)
    return exact if text == exact else f"{exact} ≈ {text}"


def evaluate_job(expression: str) -> str:
    """The worker pool's job function (module level, so workers import it by reference)."""
    return evaluate(expression)
