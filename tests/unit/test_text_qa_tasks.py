"""The ``exact_match``, ``f1`` and ``string_similarity`` tasks: golds, extraction, options, statuses."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, InvalidTaskOptions
from reward_service.tasks.qa_task import ExactMatchTask, F1Task, StringSimilarityTask, golds_of


@pytest.mark.parametrize("reference,golds", [
    ({"answer": "Paris"}, ["Paris"]), ({"answers": ["a1", "a2"]}, ["a1", "a2"]),
    ({"answers": {"text": ["Denver Broncos", "Broncos"], "answer_start": [1, 2]}}, ["Denver Broncos", "Broncos"]),
    ({"answer": {"value": "Paris", "aliases": ["City of Light"]}}, ["Paris", "City of Light"]),
    ({"answer": "x", "aliases": ["y", "x"]}, ["x", "y"]), ({"expected_answer": "42"}, ["42"]), ({"answer": 42}, ["42"]),
])
def test_golds_come_from_answers_answer_and_aliases(reference, golds) -> None:
    assert golds_of(reference, "f1") == golds


@pytest.mark.parametrize("reference", [{}, {"answer": ""}, {"answers": []}, {"answer": "  "}, {"answer": True},
                                       {"question": "q"}])
def test_no_gold_is_invalid_reference(reference) -> None:
    with pytest.raises(InvalidReference):
        F1Task().check_reference(reference)


def test_exact_match_is_1_on_any_gold_after_normalisation() -> None:
    outcome = ExactMatchTask().score("The answer is: the Denver Broncos.", {"answers": ["Broncos", "Denver Broncos"]})
    assert (outcome.score, outcome.extracted, outcome.components) == (1.0, "the Denver Broncos", {"exact_match": 1.0})


def test_exact_match_is_0_on_a_partial_answer() -> None:
    assert ExactMatchTask().score("Denver", {"answer": "Denver Broncos"}).score == 0.0


def test_f1_is_the_best_token_f1_with_em_as_a_component() -> None:
    outcome = F1Task().score("Answer: Denver", {"answers": ["Denver Broncos", "the Broncos"]})
    assert outcome.score == pytest.approx(2 / 3) and outcome.components == {"f1": pytest.approx(2 / 3),
                                                                             "exact_match": 0.0}


def test_an_empty_completion_is_no_answer() -> None:
    for task in (ExactMatchTask(), F1Task(), StringSimilarityTask()):
        assert task.score("   ", {"answer": "x"}).status == RolloutStatus.NO_ANSWER


def test_extract_full_scores_the_whole_completion() -> None:
    assert ExactMatchTask(extract="full").score("Answer: Paris", {"answer": "Paris"}).score == 0.0
    assert ExactMatchTask(extract="full").score("Paris", {"answer": "Paris"}).score == 1.0


def test_extract_boxed_without_a_box_is_no_answer() -> None:
    assert ExactMatchTask(extract="boxed").score("Paris", {"answer": "Paris"}).status == RolloutStatus.NO_ANSWER


def test_case_sensitive_exact_match_tells_case_apart() -> None:
    assert ExactMatchTask(case_sensitive=True).score("paris", {"answer": "Paris"}).score == 0.0
    assert ExactMatchTask().score("paris", {"answer": "Paris"}).score == 1.0


def test_strip_normalisation_keeps_punctuation() -> None:
    # after a marker the final period goes; "strip" keeps the rest of the punctuation
    assert ExactMatchTask(normalize="strip").score("Answer: Paris.", {"answer": "Paris"}).score == 1.0
    assert ExactMatchTask(normalize="strip", extract="full").score("Paris!", {"answer": "Paris"}).score == 0.0


def test_string_similarity_is_partial_credit() -> None:
    outcome = StringSimilarityTask(algorithm="indel").score("kitten", {"answer": "sitting"})
    assert outcome.score == pytest.approx(8 / 13) and outcome.components == {"similarity": pytest.approx(8 / 13)}


def test_string_similarity_below_the_threshold_is_0_with_the_similarity_kept() -> None:
    outcome = StringSimilarityTask(algorithm="indel", threshold=0.8).score("kitten", {"answer": "sitting"})
    assert outcome.score == 0.0 and outcome.components["similarity"] == pytest.approx(8 / 13)


def test_binary_string_similarity_is_1_at_or_above_the_threshold() -> None:
    task = StringSimilarityTask(threshold=0.9, binary=True)
    assert task.score("Photosynthesis", {"answer": "photosynthesiss"}).score == 1.0
    assert task.score("Photo", {"answer": "photosynthesis"}).score == 0.0


def test_string_similarity_takes_the_best_gold() -> None:
    assert StringSimilarityTask().score("colour", {"answers": ["hue", "Colour"]}).score == 1.0


@pytest.mark.parametrize("cls,options", [
    (ExactMatchTask, {"extract": "first"}), (F1Task, {"normalize": "nfkc"}), (F1Task, {"case_sensitive": "no"}),
    (StringSimilarityTask, {"algorithm": "jaro"}), (StringSimilarityTask, {"threshold": 1.5}),
    (StringSimilarityTask, {"threshold": True}), (StringSimilarityTask, {"binary": 1}),
])
def test_bad_options_are_rejected(cls, options) -> None:
    with pytest.raises(InvalidTaskOptions):
        cls(**options)


@pytest.mark.parametrize("task", [ExactMatchTask(), F1Task(), StringSimilarityTask(),
                                  StringSimilarityTask(algorithm="indel"), F1Task(case_sensitive=True)])
def test_the_self_check_passes(task) -> None:
    assert task.self_check() == []
