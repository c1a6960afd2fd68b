"""STDIO output normalization, as documented in sandbox/output_compare.py."""

from __future__ import annotations

import pytest

from reward_core.sandbox_contract import OutputCompare
from sandbox.output_compare import describe_mismatch, normalize, outputs_match

EXACT = OutputCompare(ignore_trailing_whitespace=False, normalize_line_endings=False)


@pytest.mark.parametrize("expected, actual", [
    ("3\n", "3"), ("3", "3\n\n\n"), ("a b\n", "a b   \n"), ("1\n2\n", "1\r\n2\r\n"), ("1\n2", "1\r2"),
    ("x\t\n", "x"), ("", "\n\n"),
])
def test_default_normalization_matches(expected, actual):
    assert outputs_match(expected, actual)


@pytest.mark.parametrize("expected, actual", [("3", "4"), ("A", "a"), ("3", ""), ("1 2", "12")])
def test_default_normalization_differs(expected, actual):
    assert not outputs_match(expected, actual)


@pytest.mark.parametrize("expected, actual", [("a b", "a  b"), (" a", "a"), ("1\n\n2", "1\n2"), ("1 2", "1\n2")])
def test_default_is_tokens_and_mode_lines_keeps_the_old_line_comparison(expected, actual):
    assert outputs_match(expected, actual)                                  # tokens: whitespace runs do not matter
    assert not outputs_match(expected, actual, OutputCompare(mode="lines"))  # the comparison before modes existed


def test_normalize_splits_lines_and_drops_trailing_blank_lines():
    assert normalize("a \r\nb\t\n\n") == ["a", "b"]


def test_without_normalization_whitespace_and_line_endings_count():
    assert not outputs_match("3\n", "3\r\n", EXACT)
    assert not outputs_match("3", "3 ", EXACT)
    assert outputs_match("3\n", "3\n", EXACT)


def test_float_tolerance_compares_tokens():
    tol = OutputCompare(float_tolerance=1e-6)
    assert outputs_match("0.333333 2\n", "0.3333333333   2", tol)
    assert outputs_match("1e9", "1000000000.0004", tol)
    assert not outputs_match("0.5", "0.51", tol)
    assert not outputs_match("1 2", "1 2 3", tol)
    assert not outputs_match("nan", "inf", tol) and outputs_match("nan", "nan", tol)
    assert not outputs_match("abc", "abd", tol)


def test_mismatch_names_the_first_differing_line():
    assert describe_mismatch("1\n2\n3", "1\n5\n3") == "line 2: expected '2', got '5'"
    assert describe_mismatch("1\n2", "1") == "line 2: expected '2', got <end of output>"
    assert describe_mismatch("1", "1\n") == ""
