"""Rule-based process verification: step splitting and exact arithmetic claims."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.process import check_step, find_claims, split_steps
from reward_service.verifiers.process.claims import evaluate


@pytest.mark.parametrize("text, expected", [
    ("48/2 = 24", ("correct", 1.0)),
    ("3 + 4 = 7 = 14/2", ("correct", 1.0)),
    ("3 + 4 = 7 = 15/2", ("wrong", 0.0)),
    ("He sells <<48/2=24>>24 clips", ("correct", 1.0)),
    ("He sells <<48/2=25>>25 clips", ("wrong", 0.0)),
    ("so 10/3 = 3.33 each", ("correct", 1.0)),        # a decimal with k places: rounded
    ("so 10/3 = 3.4 each", ("wrong", 0.0)),
    ("$1,200 * 0.5 = $600.", ("correct", 1.0)),
    ("20 - 5 = 15 and 15 / 3 = 5", ("correct", 1.0)),
    ("3+4=7, 7*2=15", ("wrong", 0.0)),
    ("\\frac{1}{2} \\times 8 = 4", ("correct", 1.0)),
    ("50 * 20% = 10", ("correct", 1.0)),
    ("2^10 = 1024", ("correct", 1.0)),
    ("1. 3 + 4 = 7", ("correct", 1.0)),
    ("2) 3 + 4 = 8", ("wrong", 0.0)),
])
def test_claims_are_checked_exactly(text, expected):
    assert check_step(text) == expected


@pytest.mark.parametrize("text", [
    "48 apples / 2 = 24",      # the left side is cut out of a larger expression
    "x = 5", "2x = 10", "a = 2x", "3:4 = 6:8", "1/0 = 5", "= 5", "3 + 4 =", "no claims here",
    "x5 = 5", "apples - 2 = 24", "9**9**9**9 = 1",
])
def test_what_cannot_be_checked_is_neutral_never_wrong(text):
    assert check_step(text) == ("neutral", None)


def test_a_chain_keeps_its_sides():
    [claim] = find_claims("so 3 + 4 = 7 = 14/2 apples")
    assert claim.sides == ("3 + 4", "7", "14/2") and claim.correct


def test_decimals_are_exact():
    assert evaluate("0.1 + 0.2") == Fraction(3, 10)


@settings(max_examples=300, deadline=None)
@given(st.integers(-10_000, 10_000), st.integers(-10_000, 10_000), st.sampled_from(["+", "-", "*"]),
       st.integers(1, 50))
def test_a_true_equation_is_correct_and_an_off_by_k_one_is_wrong(a, b, op, k):
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    expression = f"{a} {op} {b}" if b >= 0 else f"{a} {op} ({b})"
    assert check_step(f"We get {expression} = {value} here") == ("correct", 1.0)
    assert check_step(f"We get {expression} = {value + k} here") == ("wrong", 0.0)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcxyz 0123456789+-*/.,:()$%\n")), max_size=60))
def test_text_without_an_equals_sign_makes_no_claim(text):
    assert find_claims(text) == []


def test_numbered_steps_span_several_lines():
    text = "Let's go.\nStep 1: 3+4=7\nso 7\nStep 2: 7*2=14\nThe answer is 14"
    steps = split_steps(text)
    assert [s.text for s in steps] == ["Let's go.", "Step 1: 3+4=7\nso 7", "Step 2: 7*2=14\nThe answer is 14"]
    assert all(text[s.start:s.end] == s.text for s in steps)


def test_lines_and_a_separator():
    assert [s.text for s in split_steps("a\n\n b \nc")] == ["a", "b", "c"]
    steps = split_steps("x = 1<step>y = 2 <step><step>z", separator="<step>")
    assert [s.text for s in steps] == ["x = 1", "y = 2", "z"]
    assert split_steps("") == [] and split_steps("   \n ") == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.sampled_from([None, "\n\n", "<step>"]))
def test_spans_always_point_at_their_text(text, separator):
    for step in split_steps(text, separator):
        assert text[step.start:step.end] == step.text and step.text.strip() == step.text and step.text
