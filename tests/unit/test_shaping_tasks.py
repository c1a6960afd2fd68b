"""The shaping tasks: options, units (characters, words, tokens), base outcomes kept unscored, the
answer scores of math and gsm8k (verl's format_score, DAPO's -1), composites over them."""

from __future__ import annotations

import math

import pytest

from reward_core.contract import RolloutStatus, StepScore
from reward_service.router.composite import CompositeTask
from reward_service.task_api import InvalidReference, InvalidTaskOptions, Task, TaskInput, TaskOutcome
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.math_task import MathTask
from reward_service.tasks.shaped_tasks import CosineScaledTask, KimiLengthTask, ReasoningAccuracyTask
from reward_service.tasks.shaping_tasks import RepetitionPenaltyTask, SoftOverlongTask, TagCountTask
from reward_service.tasks.steps_task import StepsTask

GOLD = {"answer": "3"}


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory) -> str:
    """A word-level tokenizer.json: one token per word or punctuation run."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "a": 1, "b": 2, "c": 3, "hello": 4, ",": 5, "world": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)


class Fixed(Task):
    """A base that answers what it is told: for unscored and odd base outcomes."""

    name = "fixed"
    runs_in_server = True

    def __init__(self, outcome: TaskOutcome) -> None:
        super().__init__()
        self.outcome = outcome

    def score(self, completion, reference, prompt=""):
        return self.outcome


# --- repetition, tags, overlong -----------------------------------------------------------------
def test_repetition_penalty_counts_words_by_default():
    assert RepetitionPenaltyTask(ngram_size=2).score("A b c a B c", {}).score == pytest.approx(-0.4)


def test_repetition_penalty_counts_token_ids_with_a_tokenizer(tokenizer_path):
    # "hello,hello,hello" is one word but 5 tokens: hello , hello , hello -> bigrams 4, distinct 2
    task = RepetitionPenaltyTask(ngram_size=2, tokenizer=tokenizer_path)
    assert task.score("hello,hello,hello", {}).score == pytest.approx(-0.5)
    assert RepetitionPenaltyTask(ngram_size=2).score("hello,hello,hello", {}).score == 0.0


def test_a_positive_max_penalty_is_refused():
    with pytest.raises(InvalidTaskOptions, match="max_penalty"):
        RepetitionPenaltyTask(max_penalty=0.5)


def test_an_ngram_size_of_zero_is_refused():
    with pytest.raises(InvalidTaskOptions, match="ngram_size"):
        RepetitionPenaltyTask(ngram_size=0)


def test_tag_count_task_pays_a_quarter_per_tag():
    assert TagCountTask().score("<think>\nx\n</think>\n", {}).score == 0.5


def test_tag_count_takes_its_own_tags():
    assert TagCountTask(tags=["<a>", "</a>"]).score("<a>x", {}).score == 0.5


def test_soft_overlong_counts_characters_without_a_tokenizer():
    # free up to 6 characters, then (6 - 8) / 4
    assert SoftOverlongTask(max_completion_len=10, soft_punish_cache=4).score("x" * 8, {}).score == -0.5


def test_soft_overlong_counts_tokens_with_a_tokenizer(tokenizer_path):
    task = SoftOverlongTask(max_completion_len=4, soft_punish_cache=2, tokenizer=tokenizer_path)
    outcome = task.score("a b c", {})  # 3 tokens: (2 - 3) / 2
    assert outcome.score == -0.5 and outcome.detail == "length 3 tokens"


def test_soft_overlong_refuses_a_cache_past_the_limit():
    with pytest.raises(InvalidTaskOptions, match="soft_punish_cache"):
        SoftOverlongTask(max_completion_len=10, soft_punish_cache=11)


def test_a_missing_tokenizer_file_is_refused_at_load(tmp_path):
    with pytest.raises(InvalidTaskOptions, match="no tokenizer file"):
        SoftOverlongTask(tokenizer=str(tmp_path / "nope"))


def test_a_tokenizer_folder_is_read_through_its_tokenizer_json(tokenizer_path):
    from pathlib import Path

    task = SoftOverlongTask(max_completion_len=4, soft_punish_cache=2, tokenizer=str(Path(tokenizer_path).parent))
    assert task.score("a b c", {}).score == -0.5


def test_the_tokenizer_files_padding_and_truncation_are_ignored(tmp_path, tokenizer_path):
    from tokenizers import Tokenizer

    padded = Tokenizer.from_file(tokenizer_path)
    padded.enable_padding(length=64)
    padded.enable_truncation(max_length=2)
    padded.save(str(tmp_path / "tokenizer.json"))
    task = SoftOverlongTask(max_completion_len=4, soft_punish_cache=2, tokenizer=str(tmp_path))
    assert task.score("a b c", {}).score == -0.5


# --- answer scores: verl's format_score, DAPO's -1 ------------------------------------------------
def test_default_answer_scores_are_unchanged():
    assert [MathTask().score(c, GOLD).score for c in (r"\boxed{3}", r"\boxed{4}", "no number")] == [1.0, 0.0, 0.0]


def test_dapo_scores_a_wrong_or_missing_answer_minus_one():
    task = MathTask(wrong_score=-1, no_answer_score=-1)
    right, wrong, none = (task.score(c, GOLD) for c in (r"\boxed{3}", r"\boxed{4}", "no number"))
    assert (right.score, wrong.score, none.score) == (1.0, -1.0, -1.0)
    assert none.status == RolloutStatus.NO_ANSWER


def test_verl_format_score_pays_a_well_formed_wrong_gsm8k_answer():
    task = Gsm8kTask(strict=True, wrong_score=0.1)
    assert [task.score(c, GOLD).score for c in ("#### 3", "#### 5", "I think 5")] == [1.0, 0.1, 0.0]


def test_an_unusable_gold_stays_unscored_whatever_the_wrong_score():
    outcome = Gsm8kTask(wrong_score=-1, no_answer_score=-1).score("#### 5", {"answer": "three"})
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


def test_answer_scores_keep_the_self_check_passing():
    assert MathTask(wrong_score=-1, no_answer_score=-1).self_check() == []


def test_a_non_numeric_wrong_score_is_refused():
    with pytest.raises(InvalidTaskOptions, match="wrong_score"):
        MathTask(wrong_score="low")


# --- cosine_scaled --------------------------------------------------------------------------------
def test_cosine_scales_a_right_answer_by_its_length_in_characters():
    completion = r"\boxed{3}" + " " * 41  # 50 characters of max_len 100
    outcome = CosineScaledTask(MathTask(), max_len=100).score(completion, GOLD)
    assert outcome.score == pytest.approx(0.75)
    assert outcome.components == {"correct": 1.0, "length": 50.0}


def test_cosine_scales_a_missing_answer_as_wrong_and_keeps_its_status():
    outcome = CosineScaledTask(MathTask(), max_len=100).score("x" * 50, GOLD)
    assert outcome.score == pytest.approx(-0.75) and outcome.status == RolloutStatus.NO_ANSWER


def test_cosine_counts_tokens_with_a_tokenizer(tokenizer_path):
    task = CosineScaledTask(Fixed(TaskOutcome(1.0)), max_len=4, tokenizer=tokenizer_path)
    assert task.score("a b", {}).score == pytest.approx(0.75)  # 2 tokens of 4


def test_correct_threshold_decides_what_counts_as_right():
    partial = Fixed(TaskOutcome(0.6))
    assert CosineScaledTask(partial, max_len=10).score("", {}).score == -1.0
    assert CosineScaledTask(partial, max_len=10, correct_threshold=0.5).score("", {}).score == 1.0


@pytest.mark.parametrize("status", [RolloutStatus.ERROR, RolloutStatus.INVALID_REFERENCE, RolloutStatus.TIMEOUT])
def test_an_unscored_base_stays_unscored_through_cosine(status):
    base = TaskOutcome(0.0, status, detail="boom")
    assert CosineScaledTask(Fixed(base)).score("x", {}) is base


def test_a_non_finite_base_score_is_not_shaped_into_a_number():
    base = TaskOutcome(math.nan)
    assert CosineScaledTask(Fixed(base)).score("x", {}) is base


def test_cosine_checks_the_reference_as_its_base_does():
    with pytest.raises(InvalidReference, match="answer"):
        CosineScaledTask(MathTask()).check_reference({})


def test_a_shaped_task_runs_where_its_base_runs():
    assert CosineScaledTask(Fixed(TaskOutcome(1.0))).runs_in_server
    assert not CosineScaledTask(MathTask()).runs_in_server


def test_a_groupwise_base_is_refused():
    with pytest.raises(InvalidTaskOptions, match="groupwise base"):
        CosineScaledTask(KimiLengthTask(MathTask()))


def test_a_base_that_is_not_a_task_is_refused():
    with pytest.raises(InvalidTaskOptions, match="base"):
        CosineScaledTask("math")


# --- reasoning_accuracy ---------------------------------------------------------------------------
def test_only_the_answer_after_think_is_graded():
    task = ReasoningAccuracyTask(MathTask())
    completion = r"<think>maybe \boxed{5}</think> so \boxed{3}"
    assert task.score(completion, GOLD).score == 1.0
    assert task.score(completion, {"answer": "5"}).score == 0.0


def test_unfinished_reasoning_is_no_answer_with_the_incomplete_score():
    outcome = ReasoningAccuracyTask(MathTask(), incomplete_score=-1.0).score(r"<think>\boxed{3}", GOLD)
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, -1.0)


def test_step_spans_of_the_base_point_into_the_whole_completion():
    completion = "<think>hmm</think>Step 1: 1 + 2 = 3\n#### 3"
    [step, _] = ReasoningAccuracyTask(StepsTask(), delimiters=["</think>"]).score(completion, GOLD).steps
    assert completion[step.start:step.end] == "Step 1: 1 + 2 = 3" and step == StepScore(18, 35, 1.0, True, "correct")


def test_reasoning_accuracy_keeps_an_unscored_base_unscored():
    base = TaskOutcome(0.0, RolloutStatus.ERROR)
    assert ReasoningAccuracyTask(Fixed(base)).score("</think>x", {}) is base


# --- kimi_length ----------------------------------------------------------------------------------
def test_kimi_length_has_no_score_before_its_group_stage():
    outcome = KimiLengthTask(MathTask()).score(r"\boxed{3}", GOLD)
    assert math.isnan(outcome.score) and outcome.components == {"correct": 1.0, "length": 9.0}


def test_kimi_length_group_stage_of_a_mixed_group():
    task = KimiLengthTask(MathTask())
    completions = [r"\boxed{3}", r"\boxed{3}" + "x" * 10, r"\boxed{4}" + "x" * 20]  # 9, 19, 29 characters
    items = [TaskInput(c, GOLD) for c in completions]
    shaped = task.score_group(items, task.score_batch(items))
    assert [o.score for o in shaped] == [0.5, 0.0, -0.5]
    assert "length 9 of 9..29 in a group of 3" in shaped[0].detail


def test_kimi_length_leaves_a_member_without_its_measures_alone():
    task = KimiLengthTask(MathTask())
    odd = TaskOutcome(math.nan)
    shaped = task.score_group([TaskInput("a", GOLD), TaskInput("bb", GOLD)],
                              [odd, TaskOutcome(math.nan, components={"correct": 1.0, "length": 2.0})])
    assert shaped[0] is odd and shaped[1].score == 0.0


# --- composites -----------------------------------------------------------------------------------
def test_an_unscored_component_makes_the_composite_unscored_never_a_zero():
    composite = CompositeTask("c", {"m": (MathTask(), 1.0), "bad": (Fixed(TaskOutcome(0.0, RolloutStatus.ERROR,
                                                                                     detail="boom")), 0.5)})
    outcome = composite.score(r"\boxed{3}", GOLD)
    assert outcome.status == RolloutStatus.ERROR and outcome.detail == "bad: boom"


def test_a_composite_with_a_groupwise_component_is_groupwise():
    assert CompositeTask("c", {"m": (MathTask(), 1.0), "k": (KimiLengthTask(MathTask()), 0.5)}).groupwise
    assert not CompositeTask("c", {"m": (MathTask(), 1.0)}).groupwise


def test_a_composite_group_stage_sums_the_shaped_component():
    composite = CompositeTask("c", {"m": (MathTask(), 1.0), "k": (KimiLengthTask(MathTask()), 0.5),
                                    "t": (TagCountTask(), 2.0)})
    items = [TaskInput(c, GOLD) for c in (r"\boxed{3}", r"\boxed{3}" + "x" * 10, r"\boxed{4}" + "x" * 20)]
    before = composite.score_batch(items)
    assert all(math.isnan(o.score) for o in before)
    after = composite.score_group(items, before)
    assert [o.score for o in after] == [1.0 + 0.5 * 0.5, 1.0, 0.5 * -0.5]
    assert after[0].components == {"m": 1.0, "k": 0.5, "k.correct": 1.0, "k.length": 9.0, "t": 0.0}
