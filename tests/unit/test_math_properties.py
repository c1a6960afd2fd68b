"""Properties of the math grader over generated values (hypothesis), not over our own examples.

Derandomized (a fixed example sequence per run), so the suite stays deterministic.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.math import grade, grade_numeric
from reward_service.verifiers.math.self_check import gold_rewrites

PROPERTY_SETTINGS = settings(max_examples=150, derandomize=True, deadline=None)
integers = st.integers(min_value=-10**6, max_value=10**6)
fractions = st.tuples(st.integers(-999, 999), st.integers(2, 999)).map(lambda t: Fraction(*t)).filter(
    lambda f: f.denominator > 1)


def _latex(f: Fraction) -> str:
    sign = "-" if f < 0 else ""
    return f"{sign}\\frac{{{abs(f.numerator)}}}{{{f.denominator}}}"


@PROPERTY_SETTINGS
@given(integers)
def test_an_integer_matches_itself_in_every_common_form(n: int) -> None:
    for completion in gold_rewrites(str(n)):
        assert grade(completion, str(n)).correct, completion


@PROPERTY_SETTINGS
@given(integers, st.integers(min_value=1, max_value=1000))
def test_a_different_integer_never_matches(n: int, delta: int) -> None:
    for completion in gold_rewrites(str(n + delta)):
        assert not grade(completion, str(n)).correct, completion


@PROPERTY_SETTINGS
@given(fractions)
def test_a_fraction_matches_its_slash_and_decimal_free_forms(f: Fraction) -> None:
    for completion in gold_rewrites(_latex(f)):
        assert grade(completion, f"{f.numerator}/{f.denominator}").correct, completion


@PROPERTY_SETTINGS
@given(fractions, fractions)
def test_different_fractions_never_match(f: Fraction, g: Fraction) -> None:
    if f != g:
        assert not grade(f"The answer is ${_latex(f)}$.", _latex(g)).correct


@PROPERTY_SETTINGS
@given(integers, st.from_regex(r"<\|[a-z_]{1,12}\|>", fullmatch=True))
def test_a_special_token_never_changes_the_verdict(n: int, token: str) -> None:
    for gold in (str(n), str(n + 1)):
        expected = gold == str(n)
        assert grade(f"#### {n}{token}", gold).correct == expected
        assert grade_numeric(f"The answer is {n}.{token}", gold).correct == expected


@PROPERTY_SETTINGS
@given(integers, integers)
def test_a_number_inside_a_final_expression_is_never_the_answer(a: int, b: int) -> None:
    expression = f"$\\frac{{{a} + \\sqrt{{7}}}}{{{abs(b) + 2}}}$"
    assert not grade(f"So the value is {expression}.", str(abs(b) + 2)).correct


@PROPERTY_SETTINGS
@given(st.text(max_size=300))
def test_grading_arbitrary_text_never_raises(text: str) -> None:
    result = grade(text, "42")
    assert isinstance(result.correct, bool)
    assert isinstance(grade_numeric(text, "42").correct, bool)
