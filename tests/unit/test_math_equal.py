"""Unit tests for :mod:`reward_service.verifiers.math.math_equal` and the grader."""

from __future__ import annotations

import os
import time

import pytest

from reward_service.verifiers.math import (
    EquivalenceConfig,
    answers_match,
    compare_answers,
    grade,
    grade_numeric,
)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("0.5", "\\frac{1}{2}"), ("5e-1", "1/2"), ("2\\frac{1}{2}", "5/2"), ("2 1/2", "2.5"),
        ("-3", "-3.0"), ("1.5\\times10^{3}", "1500"), ("1.5e3", "1500"), ("\\frac38", "0.375"),
        ("\\frac{6}{8}", "\\frac{3}{4}"), (".5", "0.50"), ("\\mathbf{12}", "12"),
    ],
)
def test_exact_values_compare_exactly(pred: str, gold: str) -> None:
    assert answers_match(pred, gold)


ALLOW_DECIMALS = EquivalenceConfig(decimal_approximations="allow")
SHORT_DECIMALS = [("0.333", "\\frac{1}{3}"), ("0.667", "2/3"), ("3.14", "\\pi"), ("3.142", "\\pi"),
                  ("1.41", "\\sqrt{2}"), ("12.57", "4\\pi"), ("\\frac{1}{3}", "0.333"), ("33.3\\%", "\\frac{1}{3}")]


@pytest.mark.parametrize(("pred", "gold"), SHORT_DECIMALS)
def test_short_decimal_for_a_non_terminating_value_does_not_match_by_default(pred: str, gold: str) -> None:
    assert not answers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold"), SHORT_DECIMALS)
def test_short_decimal_with_three_significant_digits_matches_when_allowed(pred: str, gold: str) -> None:
    assert answers_match(pred, gold, ALLOW_DECIMALS)


@pytest.mark.parametrize(("pred", "gold"), [("0.333333", "\\frac{1}{3}"), ("0.0833333333333333", "\\frac{1}{12}"),
                                            ("3.14159", "\\pi"), ("4.123105625617661", "\\sqrt{17}"),
                                            ("\\frac{2}{3}", "0.666667"), ("(1, 0.333333)", "(1, \\frac13)")])
def test_decimal_with_six_significant_digits_matches_by_default(pred: str, gold: str) -> None:
    assert answers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold"), [("0.333334", "\\frac{1}{3}"), ("3.14160", "\\pi"), ("0.666666", "2/3")])
def test_wrongly_rounded_long_decimal_does_not_match(pred: str, gold: str) -> None:
    assert not answers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold"), [("0.33", "\\frac{1}{3}"), ("0.666", "2/3"), ("3.1", "\\pi"),
                                            ("0.334", "1/3"), ("12.56", "4\\pi"), ("0.12", "0.125"),
                                            ("0.13", "1/8")])
def test_truncated_short_or_terminating_decimal_does_not_match_even_when_allowed(pred: str, gold: str) -> None:
    assert not answers_match(pred, gold, ALLOW_DECIMALS)


def test_decimal_approximations_takes_strict_or_allow() -> None:
    with pytest.raises(ValueError, match="allow"):
        EquivalenceConfig(decimal_approximations="loose")


@pytest.mark.parametrize(("pred", "gold"), [("25\\%", "25"), ("25\\%", "0.25"), ("0.25", "25\\%"),
                                            ("25", "25%"), ("33.3333\\%", "\\frac{1}{3}")])
def test_percent_matches_p_and_p_over_100(pred: str, gold: str) -> None:
    assert answers_match(pred, gold)


def test_percent_does_not_match_other_scale() -> None:
    assert not answers_match("2.5\\%", "0.25")


@pytest.mark.parametrize("pred", ["30^\\circ", "30^{\\circ}", "30 degrees", "30\\degree"])
def test_degrees_match_bare_number(pred: str) -> None:
    assert answers_match(pred, "30")


@pytest.mark.parametrize(("pred", "gold"), [("5 cm", "5"), ("5\\text{ cm}", "5"), ("\\$5", "5"), ("5 dollars", "5"),
                                            ("7\\ \\mathrm{kg}", "7"), ("20 \\text{ cm}^2", "20")])
def test_units_after_number_are_ignored(pred: str, gold: str) -> None:
    assert answers_match(pred, gold)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"), ("\\sqrt{12}", "2\\sqrt{3}"), ("2^{10}", "1024"),
        ("x(x+1)", "x^2+x"), ("\\frac{x+1}{x-1}", "1 + \\frac{2}{x-1}"), ("2 \\cdot x", "2x"),
        ("\\frac{1}{4}\\pi", "\\frac{\\pi}{4}"), ("e^{i\\pi}", "-1"), ("\\sin^2 x + \\cos^2 x", "1"),
    ],
)
def test_symbolically_equal_expressions_match(pred: str, gold: str) -> None:
    assert answers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold"), [("x^2-x", "x(x+1)"), ("\\sqrt[3]{2}", "\\sqrt{2}"), ("3", "3\\pi"),
                                            ("2^3", "3^2"), ("x", "y"), ("2x", "x^2")])
def test_different_expressions_do_not_match(pred: str, gold: str) -> None:
    assert not answers_match(pred, gold)


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("(1, 2)", "(1,2)", True), ("(2, 1)", "(1,2)", False), ("(1,2,3)", "(1,2)", False),
    ("\\left(\\frac12, 3\\right)", "(0.5, 3)", True),
])
def test_tuples_are_ordered(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("(1, 2]", "(1,2]", True), ("[1, 2]", "(1, 2]", False), ("[1,2]", "(1,2)", False),
    ("[0, \\infty)", "[0,\\infty)", True), ("(-\\infty, 0.5]", "(-\\infty, \\frac12]", True),
    ("(3, \\infty) \\cup (-\\infty, 1)", "(-\\infty,1)\\cup(3,\\infty)", True),
])
def test_interval_bracket_types_matter_and_unions_are_unordered(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("\\{2, 1\\}", "\\{1, 2\\}", True), ("\\{1, 2, 3\\}", "\\{1, 2\\}", False),
    ("\\emptyset", "\\varnothing", True), ("\\left\\{ 1,2 \\right\\}", "\\{2,1\\}", True),
])
def test_sets_are_unordered_without_extras(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "expected"), [
    ("\\begin{bmatrix}1 & 0.5\\\\ 3 & 4\\end{bmatrix}", True),
    ("\\left[\\begin{matrix}1&\\frac12\\\\3&4\\end{matrix}\\right]", True),
    ("\\begin{pmatrix}1 & 3\\\\ \\frac12 & 4\\end{pmatrix}", False),
    ("\\begin{pmatrix}1 & \\frac12 & 0\\\\ 3 & 4 & 0\\end{pmatrix}", False),
])
def test_matrices_compare_elementwise_with_shape(pred: str, expected: bool) -> None:
    gold = "\\begin{pmatrix} 1 & \\frac{1}{2} \\\\ 3 & 4 \\end{pmatrix}"
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("x = 3", "3", True), ("3", "x=3", True), ("k = 5", "5", True), ("y = 1 + 2x", "y = 2x+1", True),
    ("2x + 2y = 2", "x + y = 1", True), ("x + y = 2", "x + y = 1", False), ("x = 4", "3", False),
])
def test_equations(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("3, 2", "2, 3", True), ("2 and 3", "2, 3", True), ("x = 3 \\text{ or } x = 2", "2, 3", True),
    ("x = 2, 3", "3, 2", True), ("\\pm 2", "2, -2", True), ("1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}", True),
    ("2", "2, 3", False), ("2, 3, 4", "2, 3", False), ("2, -3", "2, 3", False),
])
def test_several_answers_form_an_exact_multiset(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize("pred", ["1 or 2 or 3", "1, 2, 3, 4, 5", "\\pm 2", "x = 2 \\text{ or } x = -2",
                                  "[1, 3]", "\\{1, 2, 3\\}"])
def test_candidate_lists_never_match_single_gold(pred: str) -> None:
    assert not answers_match(pred, "2")


@pytest.mark.parametrize(("pred", "gold"), [
    ("9^{9^{9^8}}", "9^{9^{9^9}}"), ("99999!", "100000!"), ("10^{10^{10^{10}}}", "3"),
    ("1" * 100_000, "7"), ("1+" * 50_000 + "1", "12"), ("\\sqrt{" * 16_000 + "2" + "}" * 16_000, "5"),
])
def test_pathological_inputs_are_a_quick_non_match(pred: str, gold: str) -> None:
    start = time.monotonic()
    assert compare_answers(pred, gold).match is False
    assert time.monotonic() - start < 2.0


@pytest.mark.parametrize("text", ["9^{9^{9^9}}", "100000!", "7" * 100_000])
def test_pathological_identical_strings_match(text: str) -> None:
    assert answers_match(text, text)


def test_too_large_reason_is_reported() -> None:
    assert compare_answers("9^{9^{9^8}}", "9^{9^{9^9}}").reason == "too_large"


def test_symbolic_step_can_be_disabled() -> None:
    assert not answers_match("\\sqrt{12}", "2\\sqrt{3}", EquivalenceConfig(symbolic=False))


@pytest.mark.parametrize("pred", ["__import__('os').system('touch /tmp/pwned_math_verifier')",
                                  "().__class__.__bases__[0].__subclasses__()",
                                  "eval(\"__import__('os').system('touch /tmp/pwned_math_verifier')\")"])
def test_hostile_strings_are_never_executed(pred: str) -> None:
    if os.path.exists("/tmp/pwned_math_verifier"):
        os.remove("/tmp/pwned_math_verifier")
    assert not answers_match(pred, "0")
    assert not grade(f"\\boxed{{{pred}}}", "0").correct
    assert not os.path.exists("/tmp/pwned_math_verifier")


@pytest.mark.parametrize(("pred", "gold"), [(None, "1"), ("1", None), ("", "1"), ("1", ""), ("}{", "{}")])
def test_odd_inputs_do_not_raise(pred: object, gold: object) -> None:
    assert answers_match(pred, gold) is False  # type: ignore[arg-type]


# --- grader -----------------------------------------------------------------

def test_grade_reports_extraction_and_match() -> None:
    result = grade("so the total is $\\boxed{\\frac{1}{2}}$.", "0.5")
    assert (result.correct, result.extracted, result.method, result.reason) == (True, "\\frac{1}{2}", "boxed", "match")


def test_grade_without_answer_is_no_answer() -> None:
    result = grade("I refuse to answer.", "3")
    assert (result.correct, result.extracted, result.method, result.reason) == (False, None, None, "no_answer")


def test_grade_mismatch_reason() -> None:
    assert grade("\\boxed{4}", "3").reason == "mismatch"


def test_grade_extracts_gold_from_full_solution() -> None:
    gold = "She has 9 * 2 = <<9*2=18>>18 kg.\n#### 18"
    assert grade("So 18 kg.\n#### 18", gold).correct


def test_grade_extracts_boxed_gold() -> None:
    assert grade("The answer is 6.", "We get $3 \\cdot 2 = \\boxed{6}$.").correct


def test_grade_numeric_compares_exact_rationals() -> None:
    assert grade_numeric("Total: $1,200.\n#### $1,200.00", "1200").correct


def test_grade_numeric_rejects_non_numbers() -> None:
    assert grade_numeric("#### x+1", "1").reason == "not_numeric"


def test_grade_numeric_has_no_rounding_tolerance() -> None:
    assert not grade_numeric("#### 0.333", "1/3").correct


def test_grade_megabyte_completion_returns() -> None:
    completion = "think " * 200_000 + "\\boxed{" + "9" * 100_000 + "}"
    assert grade(completion, "9").correct is False


@pytest.mark.parametrize(("pred", "gold"), [
    ("\\binom{e}{1000}\\sqrt[x]{3}", "e"),
    ("\\sqrt({(1000)!}^{-1}-i)", "1"),
    ("\\sqrt[{(e-i)!}^{\\frac{y+1000}{{y}^{99}}}]{\\tan(0)}", "|\\binom{0.5}{(|\\pi|)\\cdot((n)!)}|"),
    ("(\\frac{e^{\\pi}}{1000!})^{1000}+y", "2"),
    ("({\\frac{99}{99}}^{\\sqrt[\\binom{0.5}{i\\pi}]{\\binom{1000}{990}}})\\cdot(99)", "\\lfloor \\infty \\rfloor"),
    ("\\tanh({\\binom{1000}{3x}}^{\\binom{i-99}{e-0.5}})", "0"),
    ("e^{e^{e^{e^{10}}}}", "1"),
    ("\\sin(10^{9999})", "\\cos(10^{9999})"),
    ("\\sqrt{7^{50000}+1}", "1"),
])
def test_hostile_expressions_found_by_fuzzing_are_a_quick_non_match(pred: str, gold: str) -> None:
    start = time.monotonic()
    assert answers_match(pred, gold) is False
    assert time.monotonic() - start < 2.0


# --- issue 21: relations with a negated variable, lists of points, matrix arithmetic ----------

@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("-x > -1", "x < 1", True), ("-x \\ge -1", "x \\le 1", True), ("2 < -x", "x < -2", True),
    ("-x \\ne 2", "x \\ne -2", True), ("-x > -1", "x > 1", False), ("-x < 3", "x < -3", False),
])
def test_a_negated_variable_flips_its_inequality(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    ("(3, 17), (1, 2), (3, 17)", "(1, 2), (3, 17)", True), ("(1, 2), (3, 4)", "(1, 2), (3, 4), (5, 6)", False),
    ("2, 2, 4", "2, 4", False),  # numbers listed twice are roots with multiplicity
])
def test_a_list_of_points_is_a_set_of_solutions(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


A = "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"
B = "\\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}"


@pytest.mark.parametrize(("pred", "gold", "expected"), [
    (f"{A} + {B}", "\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}", True),
    (f"{A} - {B}", "\\begin{pmatrix}-4 & -4 \\\\ -4 & -4\\end{pmatrix}", True),
    (f"{A} {B}", "\\begin{pmatrix}19 & 22 \\\\ 43 & 50\\end{pmatrix}", True),
    (f"{A} \\cdot {B}", "\\begin{pmatrix}19 & 22 \\\\ 43 & 50\\end{pmatrix}", True),
    (f"{A} {B}", "\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}", False),
    (f"{A} + {B}", A, False), (f"{A} + x", A, False),
])
def test_arithmetic_on_literal_matrices_is_the_matrix_it_makes(pred: str, gold: str, expected: bool) -> None:
    assert answers_match(pred, gold) is expected


def test_logical_or_lists_candidates() -> None:
    assert not answers_match("x = 1 \\vee x = 2", "2")
    assert answers_match("x = 1 \\lor x = 2", "1, 2")


def test_braced_comma_with_spaces_is_a_thousands_separator() -> None:
    assert answers_match("14 {, }916", "14916")
