"""SQuAD exact match and token F1 (the v1.1 official script's definitions), by hand and against
torchmetrics' SQuAD metric, a port of that script."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.text import best_over_golds, exact_match, normalize_answer, token_f1


@pytest.mark.parametrize("text,normal", [
    ("The Eiffel Tower!", "eiffel tower"), ("  an   apple, a pear ", "apple pear"), ("Theory", "theory"),
    ("U.S.A.", "usa"), ("the", ""), ("A-B", "ab"), ("Ünïcode Café", "ünïcode café"),
])
def test_normalisation_lowers_drops_punctuation_articles_and_extra_spaces(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


def test_case_sensitive_normalisation_keeps_case_and_still_drops_articles() -> None:
    assert normalize_answer("The Eiffel Tower", case_sensitive=True) == "Eiffel Tower"


def test_exact_match_compares_normalised_strings() -> None:
    assert exact_match("eiffel tower", "eiffel tower") == 1.0
    assert exact_match("eiffel", "eiffel tower") == 0.0


@pytest.mark.parametrize("pred,gold,f1", [
    ("cat sat", "cat sat on mat", 2 * 1.0 * 0.5 / 1.5),  # p = 2/2, r = 2/4
    ("red red", "red red blue", 2 * 1.0 * (2 / 3) / (1 + 2 / 3)),  # multiset: both reds count
    ("red red red", "red", 2 * (1 / 3) * 1.0 / (1 / 3 + 1)),  # only one red is shared
    ("dog", "cat", 0.0), ("x y", "y x", 1.0),
])
def test_token_f1_is_the_harmonic_mean_of_token_precision_and_recall(pred: str, gold: str, f1: float) -> None:
    assert token_f1(pred, gold) == pytest.approx(f1)


def test_two_empty_answers_agree_as_in_the_v2_script() -> None:
    assert (token_f1("", ""), token_f1("", "x"), token_f1("x", "")) == (1.0, 0.0, 0.0)


def test_the_best_gold_wins_and_is_named() -> None:
    assert best_over_golds("broncos", ["denver broncos", "broncos", "x"], token_f1) == (1.0, 1)
    assert best_over_golds("x", [], token_f1) == (0.0, -1)


words = st.lists(st.sampled_from(["the", "a", "cat", "Cat", "sat,", "on", "mat.", "Mat", "an", "dog!", "  "]),
                 max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(words, words)
def test_f1_is_symmetric_bounded_and_1_on_exact_match(pred: str, gold: str) -> None:
    p, g = normalize_answer(pred), normalize_answer(gold)
    assert 0.0 <= token_f1(p, g) <= 1.0
    assert token_f1(p, g) == pytest.approx(token_f1(g, p))
    if exact_match(p, g):
        assert token_f1(p, g) == 1.0


@settings(max_examples=120, deadline=None)
@given(st.one_of(words, st.text(max_size=40)), st.lists(st.one_of(words, st.text(max_size=40)), min_size=1, max_size=3))
def test_em_and_f1_equal_torchmetrics_squad(pred: str, golds: list[str]) -> None:
    squad = pytest.importorskip("torchmetrics.functional.text").squad
    theirs = squad([{"prediction_text": pred, "id": "q"}],
                   [{"answers": {"answer_start": [0] * len(golds), "text": golds}, "id": "q"}])
    normal = [normalize_answer(g) for g in golds]
    assert best_over_golds(normalize_answer(pred), normal, exact_match)[0] * 100 == pytest.approx(
        float(theirs["exact_match"]), abs=1e-3)
    assert best_over_golds(normalize_answer(pred), normal, token_f1)[0] * 100 == pytest.approx(
        float(theirs["f1"]), abs=1e-3)
