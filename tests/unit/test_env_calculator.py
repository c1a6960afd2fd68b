"""The calculator tool's evaluation: exact values, and model-written code never evaluated."""

import pytest

from reward_service.environments.calculator import CalculatorError, evaluate, parse_expression


@pytest.mark.parametrize(("expression", "value"), [
    ("48213 * 902137", "43494731181"),
    ("2^10", "1024"),
    ("7 // 2 + 7 % 2", "4"),
    ("factorial(20)", "2432902008176640000"),
    ("1/3 + 1/6", "1/2 ≈ 0.500000000000000"),
    ("sqrt(8)", "2*sqrt(2) ≈ 2.82842712474619"),
    ("-(3 - 5) * 2", "4"),
])
def test_values_are_exact(expression, value):
    assert evaluate(expression) == value


@pytest.mark.parametrize("expression", [
    "__import__('os').system('true')", "(1).__class__", "open('/etc/passwd')", "x + 1", "[1, 2]",
    "lambda: 1", "sqrt(x=4)", "'a' * 3", "True + 1",
])
def test_anything_but_arithmetic_is_refused_without_running_it(expression):
    with pytest.raises(CalculatorError):
        parse_expression(expression)
    assert evaluate(expression).startswith("error:")


def test_an_undefined_value_is_an_error_not_a_number():
    assert evaluate("1/0").startswith("error:")


def test_an_empty_or_huge_expression_is_refused():
    assert evaluate("  ").startswith("error:")
    assert evaluate("1+" * 2000 + "1").startswith("error:")
