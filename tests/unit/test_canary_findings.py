"""What the canaries found in the built-in tasks, each fixed: hedges, echoes, special tokens, blank answers."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.tasks.format_task import FormatTask
from reward_service.tasks.ifeval_task import CANARY_PROMPT, CANARY_ROW, IfevalTask
from reward_service.tasks.mcqa_task import QUESTION, McqaTask
from reward_service.tasks.qa_task import ExactMatchTask, F1Task, StringSimilarityTask
from reward_service.tasks.reasoning_gym_data import make_rows
from reward_service.tasks.reasoning_gym_task import MAX_ANSWER_CHARS, ReasoningGymTask
from reward_service.verifiers.choice import GRADING_MODES

OPTIONS = [{"A": "Circle"}, {"B": "Square"}, {"C": "Triangle"}, {"D": "Hexagon"}]
ROW = {"options": OPTIONS, "answer": "C"}


@pytest.mark.parametrize("mode", GRADING_MODES)
@pytest.mark.parametrize("completion", [
    "\\boxed{A} \\boxed{B} \\boxed{D} \\boxed{C}", "$\\boxed{A}$ or $\\boxed{C}$", "Answer: A\nAnswer: D\nAnswer: C",
    "A. Circle\nB. Square\nD. Hexagon\nC. Triangle", "Answer: C (or maybe A)", "Answer: C, possibly A",
    "Answer: (A) or (C)"])
def test_mcqa_an_answer_naming_several_options_scores_zero_in_every_mode(completion: str, mode: str) -> None:
    outcome = McqaTask(grading_mode=mode).score(completion, ROW)
    assert outcome.score == 0.0 and "hedge" in outcome.detail


def test_mcqa_the_question_echoed_scores_zero_when_the_gold_is_its_last_option() -> None:
    assert McqaTask().score(QUESTION, {"options": OPTIONS, "answer": "D"}).score == 0.0


@pytest.mark.parametrize("completion", ["\\boxed{A} ... no, that is wrong. \\boxed{C}",
                                        "Answer: (A)? No wait.\nAnswer: C", "Answer: C\nFinal answer: C",
                                        "A is wrong, B too.\nC. Triangle"])
def test_mcqa_a_corrected_or_repeated_answer_still_counts(completion: str) -> None:
    assert McqaTask().score(completion, ROW).score == 1.0


@pytest.mark.parametrize("task", [ExactMatchTask(), F1Task(), StringSimilarityTask()], ids=lambda t: t.name)
@pytest.mark.parametrize("completion", ["Answer: Louvre or Eiffel Tower", "Answer: either Louvre or Eiffel Tower",
                                        "\\boxed{Louvre} \\boxed{Eiffel Tower}",
                                        "Answer: Louvre\nAnswer: Eiffel Tower"])
def test_short_answers_offered_together_are_worth_the_worst_of_them(task, completion: str) -> None:
    assert task.score(completion, {"answers": ["Eiffel Tower"]}).score < 0.2


def test_a_gold_that_holds_or_is_matched_whole() -> None:
    assert ExactMatchTask().score("Answer: Trick or treat", {"answers": ["trick or treat"]}).score == 1.0
    assert F1Task().score("Answer: Trick or treat", {"answers": ["trick or treat"]}).score == 1.0


@pytest.mark.parametrize("task", [ExactMatchTask(), F1Task(), StringSimilarityTask()], ids=lambda t: t.name)
def test_short_answer_special_tokens_only_are_no_answer(task) -> None:
    outcome = task.score("<|endoftext|><|im_end|>", {"answers": ["Paris"]})
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, 0.0)
    assert task.score("Paris<|im_end|>", {"answers": ["Paris"]}).score == 1.0


@pytest.mark.parametrize("completion", ["<think></think><answer></answer>", "<think>x</think>\n<answer>\n \n</answer>"])
def test_format_blank_answer_tags_are_not_the_format(completion: str) -> None:
    assert FormatTask().score(completion, {}).score == 0.0
    assert FormatTask().score("<think>x</think>\n<answer>72</answer>", {}).score == 1.0


@pytest.mark.parametrize("where", ["rollout prompt", "reference prompt"])
def test_ifeval_a_response_that_only_repeats_the_prompt_is_no_answer(where: str) -> None:
    reference = {**CANARY_ROW, "prompt": CANARY_PROMPT} if where == "reference prompt" else CANARY_ROW
    outcome = IfevalTask().score(f"  {CANARY_PROMPT}\n", reference, CANARY_PROMPT if where == "rollout prompt" else "")
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, 0.0)
    assert "repeats the prompt" in outcome.detail


def test_ifeval_a_response_quoting_part_of_the_prompt_is_graded() -> None:
    row = {"instruction_id_list": ["detectable_format:constrained_response"], "kwargs": [{}]}
    prompt = "Is the sky blue? Answer with one of: My answer is yes., My answer is no., My answer is maybe."
    assert IfevalTask().score("My answer is yes.", row, prompt).score == 1.0


def test_ifeval_special_tokens_only_are_no_answer() -> None:
    row = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    outcome = IfevalTask().score("<|endoftext|><|im_end|>", row)
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, 0.0)


@pytest.fixture(scope="module")
def leg_row():
    return next(make_rows("rg:leg_counting", 1, 0))


@pytest.mark.parametrize("completion", ["<answer><|endoftext|><|im_end|></answer>", "<answer> </answer>",
                                        "I think <answer>answer here</answer>"])
def test_rg_special_tokens_a_blank_tag_or_the_prompts_example_are_no_answer(leg_row, completion: str) -> None:
    outcome = ReasoningGymTask("leg_counting").score(completion, leg_row["reference"], leg_row["prompt"])
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, 0.0)


def test_rg_an_answer_too_long_to_read_scores_zero(leg_row) -> None:
    gold = leg_row["reference"]["entry"]["answer"]
    outcome = ReasoningGymTask("spell_backward").score(f"<answer>{gold}{'x' * MAX_ANSWER_CHARS}</answer>",
                                                      {"answer": gold})
    assert (outcome.status, outcome.score) == (RolloutStatus.OK, 0.0) and "not scored" in outcome.detail
