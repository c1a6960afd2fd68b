"""Unit tests for :mod:`reward_service.verifiers.math.latex_parser`."""

from __future__ import annotations

import os

import pytest
import sympy

from reward_service.verifiers.math import ExpressionTooLarge, MathParseError, parse_latex

x, y, r = sympy.symbols("x y r")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\frac{1}{2}", sympy.Rational(1, 2)),
        ("\\frac12", sympy.Rational(1, 2)),
        ("\\frac{3}{4}x", sympy.Rational(3, 4) * x),
        ("0.25", sympy.Rational(1, 4)),
        ("2^{10}", sympy.Integer(1024)),
        ("2**10", sympy.Integer(1024)),
        ("2^10", sympy.Integer(1024)),
        ("5!", sympy.Integer(120)),
        ("\\binom{5}{2}", sympy.Integer(10)),
        ("-2^2", sympy.Integer(-4)),
        ("2^{-1}", sympy.Rational(1, 2)),
        ("6 \\div 4", sympy.Rational(3, 2)),
        ("2 \\cdot 3 \\times 4", sympy.Integer(24)),
        ("|-3|", sympy.Integer(3)),
        ("\\lfloor 2.5 \\rfloor", sympy.Integer(2)),
        ("\\infty", sympy.oo),
        ("-\\infty", -sympy.oo),
    ],
)
def test_numeric_expressions_evaluate_exactly(text: str, expected: sympy.Expr) -> None:
    assert parse_latex(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\sqrt{x}", sympy.sqrt(x)),
        ("\\sqrt2", sympy.sqrt(2)),
        ("\\sqrt[3]{x}", x ** sympy.Rational(1, 3)),
        ("2\\pi", 2 * sympy.pi),
        ("2x", 2 * x),
        ("x y", x * y),
        ("xy", x * y),
        ("3(x+1)", 3 * (x + 1)),
        ("2\\pi r", 2 * sympy.pi * r),
        ("\\sin x", sympy.sin(x)),
        ("\\sin^2 x", sympy.sin(x) ** 2),
        ("\\cos(2x)", sympy.cos(2 * x)),
        ("\\ln x", sympy.log(x)),
        ("\\exp(x)", sympy.exp(x)),
        ("e^{x}", sympy.exp(x)),
        ("x_1 + x_{2}", sympy.Symbol("x_1") + sympy.Symbol("x_{2}")),
        ("\\theta", sympy.Symbol("theta")),
        ("sqrt(x)", sympy.sqrt(x)),
    ],
)
def test_symbolic_expressions_build_equivalent_sympy_objects(text: str, expected: sympy.Expr) -> None:
    # The parser builds unevaluated trees; simplify (trusted input) to compare.
    assert sympy.simplify(parse_latex(text) - expected) == 0


def test_e_and_i_are_constants() -> None:
    assert sympy.simplify(parse_latex("e^{i\\pi}")) == -1


def test_log_with_base() -> None:
    assert abs(sympy.N(parse_latex("\\log_2 8")) - 3) < 1e-12


@pytest.mark.parametrize("text", ["", "1 +", "(1", "x = 2", "1, 2", "\\foo{1}", "1 2", "\\frac{1}{0}", "2 < 3"])
def test_unsupported_or_malformed_input_raises_parse_error(text: str) -> None:
    with pytest.raises(MathParseError):
        parse_latex(text)


@pytest.mark.parametrize(
    "text",
    [
        "9^{9^{9^9}}",
        "10^{10^{10^{10}}}",
        "2^{1000000}",
        "100000!",
        "1001!",
        "(x+1)^{100000}",
        "\\binom{100000}{5000}",
        "(" * 150 + "1" + ")" * 150,
        "-" * 500 + "1",
        "1+" * 1500 + "1",
    ],
)
def test_pathological_input_raises_too_large(text: str) -> None:
    with pytest.raises(ExpressionTooLarge):
        parse_latex(text)


def test_large_but_allowed_power_is_exact() -> None:
    assert parse_latex("2^{100}") == 2 ** 100


def test_many_large_powers_hit_total_budget() -> None:
    with pytest.raises(ExpressionTooLarge):
        parse_latex("+".join(["9^{90000}"] * 10))


def test_hostile_python_is_never_executed(tmp_path: pytest.TempPathFactory) -> None:
    target = "/tmp/pwned_math_verifier_parser"
    if os.path.exists(target):
        os.remove(target)
    with pytest.raises(MathParseError):
        parse_latex(f"__import__('os').system('touch {target}')")
    assert not os.path.exists(target)
