"""The ``mcqa`` task: statuses, options, which grading mode applies, and its self-check."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, InvalidTaskOptions, TaskInput
from reward_service.tasks.mcqa_task import McqaTask

OPTIONS = [{"A": "Circle"}, {"B": "Square"}, {"C": "Triangle"}, {"D": "Hexagon"}]


def ref(**fields):
    return {"options": OPTIONS, "answer": "C", **fields}


def test_the_right_letter_scores_1_and_says_what_it_read() -> None:
    outcome = McqaTask().score("The answer is (C).", ref())
    assert (outcome.score, outcome.status, outcome.extracted) == (1.0, RolloutStatus.OK, "C")


def test_a_wrong_letter_is_a_scored_0() -> None:
    outcome = McqaTask().score("Answer: B", ref())
    assert (outcome.score, outcome.status, outcome.extracted) == (0.0, RolloutStatus.OK, "B")


def test_no_letter_is_no_answer() -> None:
    outcome = McqaTask().score("I am not sure.", ref())
    assert (outcome.score, outcome.status) == (0.0, RolloutStatus.NO_ANSWER)


def test_a_hedge_containing_the_gold_scores_0() -> None:
    outcome = McqaTask().score("The answer is B or C", ref())
    assert (outcome.score, outcome.status, outcome.extracted) == (0.0, RolloutStatus.OK, "B|C")


def test_the_rows_grading_mode_applies() -> None:
    assert McqaTask().score("Answer: C", ref(grading_mode="strict_single_letter_boxed")).score == 0.0
    assert McqaTask().score("Answer: C", ref()).score == 1.0


def test_the_task_option_grading_mode_overrides_the_row() -> None:
    task = McqaTask(grading_mode="lenient_answer_colon")
    assert task.score("Answer: C", ref(grading_mode="strict_single_letter_boxed")).score == 1.0


def test_default_grading_mode_applies_to_rows_without_one() -> None:
    assert McqaTask(default_grading_mode="strict_single_letter_boxed").score("Answer: C", ref()).score == 0.0


def test_gyms_expected_answer_is_read_when_answer_is_absent() -> None:
    assert McqaTask().score("\\boxed{C}", {"options": OPTIONS, "expected_answer": "C"}).score == 1.0


def test_mmlu_choices_and_index_gold_are_read() -> None:
    assert McqaTask().score("Answer: (c)", {"choices": ["x", "y", "z", "w"], "answer": 2}).score == 1.0


def test_a_row_without_options_uses_the_letters_option() -> None:
    assert McqaTask().score("Answer: J", {"answer": "J"}).score == 1.0
    with pytest.raises(InvalidReference, match="none of the letters ABCD"):
        McqaTask(letters="ABCD").check_reference({"answer": "J"})


@pytest.mark.parametrize("reference", [
    {"options": OPTIONS}, {"options": OPTIONS, "answer": "E"}, {"options": OPTIONS, "answer": ""},
    {"options": "A: x", "answer": "A"}, ref(grading_mode="loose"),
])
def test_an_unusable_row_is_invalid_reference(reference) -> None:
    with pytest.raises(InvalidReference):
        McqaTask().check_reference(reference)
    [outcome] = McqaTask().score_batch([TaskInput("Answer: C", reference)])
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


@pytest.mark.parametrize("options", [{"grading_mode": "loose"}, {"default_grading_mode": "x"}, {"letters": "AB1"},
                                     {"letters": ""}, {"use_template_regex": "yes"}])
def test_bad_options_are_rejected(options) -> None:
    with pytest.raises(InvalidTaskOptions):
        McqaTask(**options)


def test_template_regex_can_be_turned_off() -> None:
    row = ref(template_metadata={"output_regex": r"Pick:\s*([A-Z])"})
    assert McqaTask().score("Pick: C", row).score == 1.0
    assert McqaTask(use_template_regex=False).score("Pick: C", row).status == RolloutStatus.NO_ANSWER


@pytest.mark.parametrize("options", [{}, {"grading_mode": "lenient_boxed"}, {"default_grading_mode": "lenient_boxed"}])
def test_the_self_check_passes_under_every_configuration(options) -> None:
    assert McqaTask(**options).self_check() == []
