"""The ifeval task: options, statuses, components, a row's grading mode, its self-check."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, InvalidTaskOptions, TaskInput
from reward_service.tasks.ifeval_task import IfevalTask

TWO = {"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"], "kwargs": [{}, None]}


def test_components_are_one_per_instruction_in_order():
    outcome = IfevalTask().score("<<T>> one, two", TWO)
    assert outcome.components == {"0:punctuation:no_comma": 0.0, "1:detectable_format:title": 1.0}


def test_all_aggregation_scores_zero_when_one_is_missed():
    assert IfevalTask().score("<<T>> one, two", TWO).score == 0.0


def test_fraction_option_scores_the_share():
    assert IfevalTask(aggregation="fraction").score("<<T>> one, two", TWO).score == 0.5


def test_rows_grading_mode_wins_over_the_option():
    assert IfevalTask().score("<<T>> one, two", {**TWO, "grading_mode": "fraction"}).score == 0.5


def test_rows_grading_mode_is_ignored_when_asked():
    task = IfevalTask(row_grading_mode=False)
    assert task.score("<<T>> one, two", {**TWO, "grading_mode": "fraction"}).score == 0.0


def test_loose_mode_forgives_a_leading_line():
    reference = {"instruction_id_list": ["startend:quotation"], "kwargs": [{}]}
    assert IfevalTask().score('Here:\n"x y"', reference).score == 0.0
    assert IfevalTask(mode="loose").score('Here:\n"x y"', reference).score == 1.0


def test_blank_response_is_no_answer_scored_zero():
    outcome = IfevalTask().score("   ", TWO)
    assert outcome.status == RolloutStatus.NO_ANSWER and outcome.score == 0.0


def test_after_think_scores_only_the_answer():
    reference = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    completion = "<think>hmm, well</think>No commas here."
    assert IfevalTask().score(completion, reference).score == 0.0
    assert IfevalTask(after_think=True).score(completion, reference).score == 1.0


def test_unknown_instruction_is_invalid_reference_not_zero():
    [outcome] = IfevalTask().score_batch([TaskInput("x", {"instruction_id_list": ["nope:x"], "kwargs": [{}]})])
    assert outcome.status == RolloutStatus.INVALID_REFERENCE and not outcome.status.scored


def test_check_reference_raises_for_missing_argument():
    with pytest.raises(InvalidReference, match="num_words"):
        IfevalTask().check_reference({"instruction_id_list": ["length_constraints:number_words"],
                                      "kwargs": [{"relation": "at least"}]})


def test_tulu_row_is_scored_with_open_instructs_function():
    reference = {"ground_truth": '{"func_name": "validate_lowercase", "N": null}'}
    assert IfevalTask().score("all lower", reference).score == 1.0
    assert IfevalTask().score("Not lower", reference).score == 0.0


@pytest.mark.parametrize("options", [{"mode": "lenient"}, {"aggregation": "mean"}, {"row_grading_mode": "yes"},
                                     {"after_think": 1}])
def test_bad_options_are_rejected(options):
    with pytest.raises(InvalidTaskOptions):
        IfevalTask(**options)


def test_self_check_passes():
    assert IfevalTask().self_check() == []
