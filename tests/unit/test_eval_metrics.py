"""Evaluation metrics, against values computed by hand: pass@k, maj@k, accuracy, unscored handling."""

from __future__ import annotations

import math

import pytest

from trainer_client.evaluation.metrics import (
    OVERALL,
    Sample,
    check_ks,
    flat_metrics,
    maj_at_k,
    majority_answer,
    pass_at_k,
    summarize,
    summarize_by_task,
)


def test_pass_at_k_matches_the_combinatorial_formula():
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)


def test_pass_at_k_is_one_when_too_few_wrong_samples_to_fill_k():
    assert pass_at_k(4, 3, 2) == 1.0  # C(1,2) = 0


def test_pass_at_k_is_zero_with_no_correct_sample():
    assert pass_at_k(6, 0, 3) == 0.0


def test_pass_at_k_refuses_fewer_samples_than_k():
    with pytest.raises(ValueError, match=r"pass@4 needs at least k=4 samples per prompt, got n=2"):
        pass_at_k(2, 1, 4)


def test_pass_at_k_refuses_more_correct_than_samples():
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(2, 3, 1)


def test_majority_answer_breaks_ties_by_first_seen():
    assert majority_answer(["7", "5", "5", "7"]) == 0
    assert majority_answer(["5", "7", "7", "5"]) == 0


def test_majority_answer_takes_the_most_frequent():
    assert majority_answer(["1", "2", "2"]) == 1


def test_maj_at_k_averages_disjoint_blocks_of_k():
    answers, correct = ["3", "4", "4", "3", "4"], [True, False, False, True, False]
    assert maj_at_k(correct, answers, 1) == pytest.approx(2 / 5)  # maj@1 is the fraction correct
    assert maj_at_k(correct, answers, 2) == pytest.approx(0.5)  # (3,4) tie -> 3 right; (4,3) tie -> 4 wrong
    assert maj_at_k(correct, answers, 3) == 0.0  # (3,4,4) -> 4; the fifth sample is left over
    assert maj_at_k([False, True, True], ["1", "2", "2"], 3) == 1.0


def test_maj_at_k_tie_goes_to_the_first_answer():
    assert maj_at_k([False, True], ["9", "8"], 2) == 0.0
    assert maj_at_k([True, False], ["8", "9"], 2) == 1.0


def test_maj_at_k_refuses_fewer_samples_than_k():
    with pytest.raises(ValueError, match="maj@3"):
        maj_at_k([True], ["1"], 3)


def _prompt(pid, scores, answers=None, task="t"):
    answers = answers or [str(i) for i in range(len(scores))]
    return [Sample(pid, task, s, a, "OK" if s is not None else "ERROR") for s, a in zip(scores, answers)]


def test_summary_by_hand():
    samples = _prompt("a", [1.0, 0.0, 1.0, 0.0], ["5", "4", "5", "3"]) + _prompt("b", [0.0, 0.0, 0.0, 1.0],
                                                                                   ["2", "2", "1", "6"])
    s = summarize(samples, ks=(1, 2))
    assert (s["prompts"], s["samples"], s["scored"], s["unscored"], s["unscored_rate"]) == (2, 8, 8, 0, 0.0)
    assert s["accuracy"] == pytest.approx(3 / 8)
    assert s["reward_mean"] == pytest.approx(3 / 8)
    assert s["pass@1"] == pytest.approx((2 / 4 + 1 / 4) / 2)
    # a: 1 - C(2,2)/C(4,2) = 5/6; b: 1 - C(3,2)/C(4,2) = 1/2
    assert s["pass@2"] == pytest.approx((5 / 6 + 1 / 2) / 2)
    # maj@2: a's blocks (5, 4) and (5, 3) are ties won by "5" (right, right) -> 1;
    # b's blocks (2, 2) -> "2" (wrong) and (1, 6) -> "1" (wrong) -> 0
    assert s["maj@2"] == pytest.approx(0.5)
    assert s["pass@2/prompts_skipped"] == 0


def test_unscored_samples_leave_the_denominators():
    samples = _prompt("a", [1.0, None, 0.0, None])
    s = summarize(samples, ks=(1, 2))
    assert (s["scored"], s["unscored"], s["unscored_rate"]) == (2, 2, 0.5)
    assert s["accuracy"] == pytest.approx(0.5)  # 1 of 2 scored, not 1 of 4
    assert s["pass@2"] == pytest.approx(1.0)  # n=2 scored, c=1: 1 - C(1,2)/C(2,2)


def test_a_prompt_with_fewer_scored_samples_than_k_is_skipped_and_counted():
    samples = _prompt("a", [1.0, None, None]) + _prompt("b", [0.0, 0.0, 1.0])
    s = summarize(samples, ks=(2,))
    assert s["pass@2/prompts_skipped"] == 1
    assert s["pass@2"] == pytest.approx(1 - math.comb(2, 2) / math.comb(3, 2))  # prompt b only


def test_all_unscored_gives_no_rates_and_no_zeroes():
    s = summarize(_prompt("a", [None, None]), ks=(1,))
    assert (s["accuracy"], s["reward_mean"], s["pass@1"], s["maj@1"]) == (None, None, None, None)
    assert (s["unscored_rate"], s["pass@1/prompts_skipped"]) == (1.0, 1)


def test_correct_at_sets_what_counts_as_correct():
    s = summarize(_prompt("a", [0.6, 0.4]), ks=(1,), correct_at=0.5)
    assert s["accuracy"] == pytest.approx(0.5) and s["reward_mean"] == pytest.approx(0.5)


def test_per_task_and_overall():
    samples = _prompt("a", [1.0, 1.0], task="math") + _prompt("b", [0.0, None], task="code")
    out = summarize_by_task(samples, ks=(1,), n=2)
    assert list(out) == [OVERALL, "code", "math"]
    assert out["math"]["accuracy"] == 1.0 and out["code"]["accuracy"] == 0.0
    assert out[OVERALL]["accuracy"] == pytest.approx(2 / 3) and out[OVERALL]["unscored"] == 1


def test_k_above_n_is_refused_up_front():
    with pytest.raises(ValueError, match=r"k=\[4\] impossible with n=2"):
        check_ks((1, 4), 2)
    with pytest.raises(ValueError, match="impossible"):
        summarize_by_task(_prompt("a", [1.0, 0.0]), ks=(3,), n=2)


def test_flat_metrics_names():
    flat = flat_metrics({OVERALL: {"accuracy": 0.5}, "gsm8k": {"pass@4": 1.0}})
    assert flat == {"eval/accuracy": 0.5, "eval/gsm8k/pass@4": 1.0}
