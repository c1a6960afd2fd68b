"""The named STDIO comparators of sandbox/output_compare.py (OutputCompare.mode), property by property."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_core.sandbox_contract import InvalidExecutionRequest, OutputCompare
from sandbox.output_compare import describe_mismatch, outputs_match, tokens

TOKENS = OutputCompare(mode="tokens")
FLOAT = OutputCompare(mode="float")
EXACT = OutputCompare(mode="exact")
UNORDERED = OutputCompare(mode="lines_unordered")

token = st.text(alphabet=st.characters(blacklist_characters=" \t\n\r\v\f", blacklist_categories=("Cs",)),
                min_size=1, max_size=6)
whitespace = st.text(alphabet=" \t\n\r\v\f", min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(token, min_size=0, max_size=8), st.data())
def test_tokens_ignore_every_run_of_whitespace(words, data):
    gaps_a = [data.draw(whitespace) for _ in words]
    gaps_b = [data.draw(whitespace) for _ in words]
    a = data.draw(st.sampled_from(["", " ", "\n\n"])) + "".join(w + g for w, g in zip(words, gaps_a))
    b = "".join(w + g for w, g in zip(words, gaps_b)) + data.draw(st.sampled_from(["", "\r\n", "\t"]))
    assert tokens(a) == tokens(b) == words
    assert outputs_match(a, b, TOKENS)
    assert outputs_match(a, b)                 # tokens is the default


@settings(max_examples=200, deadline=None)
@given(st.lists(token, min_size=1, max_size=8), st.data())
def test_tokens_differ_when_one_token_differs(words, data):
    i = data.draw(st.integers(0, len(words) - 1))
    other = data.draw(token.filter(lambda t: t != words[i]))
    changed = words[:i] + [other] + words[i + 1:]
    assert not outputs_match(" ".join(words), " ".join(changed), TOKENS)
    assert not outputs_match(" ".join(words), " ".join(words + ["x"]), TOKENS)


def test_tokens_split_on_ascii_whitespace_only():
    assert not outputs_match("a b", "a\u00a0b", TOKENS)       # a no-break space is part of a token
    assert outputs_match("a b", "a\vb\f", TOKENS)
    assert not outputs_match("Yes", "YES", TOKENS)            # case matters


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e9, 1e9, allow_nan=False), st.floats(1e-9, 1e-3))
def test_float_accepts_within_and_rejects_outside_the_tolerance(value, tol):
    compare = OutputCompare(mode="float", float_tolerance=tol)
    bound = tol * max(1.0, abs(value))
    assert outputs_match(repr(value), repr(value + 0.5 * bound), compare)
    assert outputs_match(f"{value:.17g} 7", f"{value - 0.5 * bound:.17g}\n7", compare)
    assert not outputs_match(repr(value), repr(value + 2 * bound + 1e-300), compare)


def test_float_default_tolerance_is_1e_6_absolute_or_relative():
    assert FLOAT.tolerance == 1e-6 and TOKENS.tolerance is None
    assert outputs_match("0.3333333", "0.333333", FLOAT)           # absolute error 3.3e-8
    assert outputs_match("1000000000", "1000000000.5", FLOAT)      # relative error 5e-10
    assert not outputs_match("0.5", "0.502", FLOAT)
    assert not outputs_match("0.5", "0.502", TOKENS)               # tokens: numbers compare as text


def test_float_only_reads_decimal_numbers():
    assert not outputs_match("10", "1_0", FLOAT)                   # Python's float() would take it
    assert not outputs_match("inf", "infinity", FLOAT)
    assert outputs_match("nan", "nan", FLOAT)                      # equal text still matches
    assert not outputs_match("0x10", "16", FLOAT)
    assert outputs_match("-.5e1 +3.", "-5 3", FLOAT)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc 1", min_size=1, max_size=5).filter(str.strip), min_size=1, max_size=8),
       st.randoms(use_true_random=False))
def test_lines_unordered_accepts_every_permutation(lines, rnd: random.Random):
    shuffled = list(lines)
    rnd.shuffle(shuffled)
    expected = "\n".join(lines) + "\n"
    actual = "\r\n".join(line + " " for line in shuffled) + "\n\n"     # trailing spaces, blank lines: ignored
    assert outputs_match(expected, actual, UNORDERED)


def test_lines_unordered_counts_each_line():
    assert not outputs_match("a\na\nb", "a\nb\nb", UNORDERED)
    assert not outputs_match("a\nb", "a\nb\nc", UNORDERED)
    assert not outputs_match("a b", "a  b", UNORDERED)              # within a line, spacing matters
    assert not outputs_match("a", " a", UNORDERED)                  # and so does leading whitespace
    assert "1 expected line(s) missing" in describe_mismatch("a\nb", "a\nc", UNORDERED)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_exact_matches_only_the_same_text(text):
    assert outputs_match(text, text, EXACT)
    assert not outputs_match(text, text + "x", EXACT)
    assert not outputs_match(text, text + " ", EXACT)


def test_exact_normalizes_line_endings_only_when_set():
    assert outputs_match("1\n2\n", "1\r\n2\r\n", EXACT)
    assert not outputs_match("1\n", "1", EXACT)                      # a missing final newline counts
    raw = OutputCompare(mode="exact", normalize_line_endings=False)
    assert not outputs_match("1\n", "1\r\n", raw)
    assert describe_mismatch("abc\nxyz", "abc\nxYz", EXACT).startswith("byte 6 (line 2)")


def test_mismatch_detail_names_the_line_of_the_first_differing_token():
    assert describe_mismatch("1 2\n3 4\n", "1 2\n3 5") == "line 2: expected '4', got '5'"
    assert describe_mismatch("1 2 3", "1 2") == "line 1: expected '3', got <end of output>"
    assert describe_mismatch("1", "1 2") == "line 1: expected <end of output>, got '2'"


def test_a_mode_less_request_keeps_its_old_meaning():
    assert OutputCompare().effective_mode == "tokens"
    assert OutputCompare(float_tolerance=1e-3).effective_mode == "float"
    assert OutputCompare(ignore_trailing_whitespace=False).effective_mode == "lines"
    assert OutputCompare(normalize_line_endings=False).effective_mode == "lines"


@pytest.mark.parametrize("kwargs", [
    {"mode": "fuzzy"}, {"mode": "checker"}, {"mode": "tokens", "checker_code": "x"}, {"float_tolerance": -1.0},
    {"float_tolerance": float("nan")},
])
def test_an_unusable_compare_is_an_invalid_request(kwargs):
    with pytest.raises(InvalidExecutionRequest):
        OutputCompare(**kwargs)


def test_checker_mode_is_not_a_text_comparison():
    with pytest.raises(ValueError):
        describe_mismatch("1", "1", OutputCompare(mode="checker", checker_code="print()"))
