"""Character similarity: difflib's ratio and the InDel ratio (bit-parallel LCS), by hand, against a
plain dynamic-programming LCS, and against rapidfuzz's ``fuzz.ratio``."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.text import indel_similarity, lcs_length, similarity


def dp_lcs(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for ch in a:
        prev = 0
        for j, other in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if ch == other else max(row[j], row[j - 1])
    return row[-1]


@pytest.mark.parametrize("a,b,n", [("kitten", "sitting", 4), ("abc", "abc", 3), ("abc", "", 0),
                                   ("abcbdab", "bdcaba", 4), ("aaaa", "aa", 2), ("ab", "ba", 1)])
def test_lcs_length_by_hand(a: str, b: str, n: int) -> None:
    assert lcs_length(a, b) == n


def test_indel_similarity_is_twice_the_lcs_over_the_total_length() -> None:
    assert indel_similarity("kitten", "sitting") == pytest.approx(8 / 13)
    assert indel_similarity("", "") == 1.0 and indel_similarity("a", "") == 0.0


def test_difflib_ratio_is_its_matching_blocks_over_the_total_length() -> None:
    assert similarity("abcd", "bcde", "difflib") == pytest.approx(2 * 3 / 8)
    assert similarity("", "", "difflib") == 1.0


def test_difflib_ratio_ignores_the_autojunk_heuristic_on_long_strings() -> None:
    gold = "a" * 150 + "b" * 150
    assert similarity(gold, gold[:-1], "difflib") == pytest.approx(
        difflib.SequenceMatcher(None, gold, gold[:-1], autojunk=False).ratio())
    assert similarity(gold, gold[:-1], "difflib") > 0.99


def test_an_unknown_algorithm_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown similarity algorithm"):
        similarity("a", "b", "cosine")


short_text = st.text(alphabet="abcde é\n", max_size=60)


@settings(max_examples=500, deadline=None)
@given(short_text, short_text)
def test_bit_parallel_lcs_equals_the_dynamic_programme(a: str, b: str) -> None:
    assert lcs_length(a, b) == dp_lcs(a, b)


@settings(max_examples=300, deadline=None)
@given(short_text, short_text)
def test_indel_is_symmetric_bounded_and_1_only_for_equal_strings(a: str, b: str) -> None:
    value = indel_similarity(a, b)
    assert value == pytest.approx(indel_similarity(b, a)) and 0.0 <= value <= 1.0
    assert (value == 1.0) == (a == b)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_indel_equals_rapidfuzz_ratio(a: str, b: str) -> None:
    fuzz = pytest.importorskip("rapidfuzz.fuzz")
    assert indel_similarity(a, b) * 100 == pytest.approx(fuzz.ratio(a, b), abs=1e-9)
