"""The pure shaping functions: hand-computed values from the peers' published definitions (open-r1,
TRL, DAPO, Kimi 1.5), properties over generated inputs, and TRL's own functions side by side."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.shaping import (
    R1_TAGS,
    CosineSchedule,
    answer_after_reasoning,
    group_length_rewards,
    repetition_penalty,
    soft_overlong,
    tag_count,
    words,
)

PROPERTY = settings(max_examples=200, derandomize=True, deadline=None)
ids = st.lists(st.integers(0, 6), max_size=40)


# --- repetition penalty (open-r1 over words, TRL over token ids) ------------------------------------
def test_repeated_bigrams_are_penalised_by_their_share():
    # bigrams ab bc ca ab bc: 5 in all, 3 distinct -> (1 - 3/5) * -1
    assert repetition_penalty(words("a b c a b c"), 2, -1.0) == pytest.approx(-0.4)


def test_words_are_lower_cased_before_counting():
    assert repetition_penalty(words("The the THE"), 1, -1.0) == pytest.approx(-2 / 3)


def test_max_penalty_scales_the_penalty():
    assert repetition_penalty(words("a b c a b c"), 2, -0.5) == pytest.approx(-0.2)


def test_fewer_words_than_the_ngram_size_is_no_penalty():
    assert repetition_penalty(words("a b"), 3, -1.0) == 0.0
    assert repetition_penalty(words(""), 3, -1.0) == 0.0


def test_trl_docstring_example_over_token_ids():
    assert [repetition_penalty(x, 2, -1.0) for x in ([1, 2, 3, 4], [5, 5, 5, 5, 5])] == [0.0, -0.75]


def test_no_repetition_is_exactly_zero_not_negative_zero():
    assert math.copysign(1.0, repetition_penalty([1, 2, 3], 1, -1.0)) == 1.0


def test_ngram_size_below_one_is_refused():
    with pytest.raises(ValueError, match="ngram_size"):
        repetition_penalty([1], 0, -1.0)


@PROPERTY
@given(ids, st.integers(1, 5), st.floats(-3.0, 0.0))
def test_the_penalty_lies_between_max_penalty_and_zero(units, n, max_penalty):
    assert max_penalty <= repetition_penalty(units, n, max_penalty) <= 0.0


@PROPERTY
@given(ids, st.integers(1, 5), st.floats(-3.0, 0.0))
def test_repetition_penalty_equals_trls_over_token_ids(units, n, max_penalty):
    from trl.rewards import get_repetition_penalty_reward

    assert repetition_penalty(units, n, max_penalty) == get_repetition_penalty_reward(n, max_penalty)([units])[0]


# --- cosine-scaled correctness ------------------------------------------------------------------
def test_cosine_at_half_max_len_is_the_midpoint_trl_docstring():
    schedule = CosineSchedule(max_len=100)
    assert (schedule.reward(True, 50), schedule.reward(False, 50)) == (pytest.approx(0.75), pytest.approx(-0.75))


def test_cosine_ends_short_and_long():
    schedule = CosineSchedule(max_len=100)
    assert [schedule.reward(True, 0), schedule.reward(True, 100)] == [1.0, 0.5]
    assert [schedule.reward(False, 0), schedule.reward(False, 100)] == [-1.0, pytest.approx(-0.5)]


def test_clamped_cosine_stays_at_the_long_end_past_max_len():
    assert CosineSchedule(max_len=100).reward(True, 150) == 0.5


def test_unclamped_cosine_turns_back_up_past_max_len_as_open_r1():
    # progress 1.5: cos(1.5 pi) = 0 -> the midpoint again
    assert CosineSchedule(max_len=100, clamp=False).reward(True, 150) == pytest.approx(0.75)


def test_cosine_schedule_refuses_a_zero_max_len():
    with pytest.raises(ValueError, match="max_len"):
        CosineSchedule(max_len=0)


@PROPERTY
@given(st.integers(0, 3000), st.integers(0, 3000), st.booleans())
def test_cosine_rewards_short_right_answers_and_punishes_short_wrong_ones(a, b, correct):
    schedule = CosineSchedule(max_len=1000)
    short, long = sorted((a, b))
    if correct:
        assert schedule.reward(True, short) >= schedule.reward(True, long)
    else:
        assert schedule.reward(False, short) <= schedule.reward(False, long)


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 400), st.booleans()), min_size=1, max_size=8), st.integers(1, 300))
def test_cosine_equals_trls_given_the_same_correctness(rows, max_len):
    import trl.rewards.accuracy_rewards as trl_accuracy
    from trl.rewards import get_cosine_scaled_reward

    flags = [1.0 if ok else 0.0 for _, ok in rows]
    original = trl_accuracy.accuracy_reward
    trl_accuracy.accuracy_reward = lambda completions, solution, **kw: flags  # TRL's grader needs math_verify
    try:
        theirs = get_cosine_scaled_reward(max_len)([[{"content": ""}]] * len(rows), [""] * len(rows),
                                                   [[0] * n for n, _ in rows])
    finally:
        trl_accuracy.accuracy_reward = original
    ours = [CosineSchedule(max_len=max_len).reward(ok, n) for n, ok in rows]
    assert ours == pytest.approx(theirs, abs=1e-12)


# --- soft overlong punishment ---------------------------------------------------------------------
@pytest.mark.parametrize("length, expected", [(80, 0.0), (90, -0.5), (100, -1.0), (101, -1.0), (0, 0.0)])
def test_soft_overlong_of_trls_docstring_setting(length, expected):
    assert soft_overlong(length, 100, 20) == pytest.approx(expected)


def test_a_zero_cache_is_a_hard_cut():
    assert (soft_overlong(100, 100, 0), soft_overlong(101, 100, 0)) == (0.0, -1.0)


def test_a_cache_longer_than_the_limit_is_refused():
    with pytest.raises(ValueError, match="soft_punish_cache"):
        soft_overlong(1, 10, 11)


@PROPERTY
@given(st.integers(0, 500), st.integers(1, 300), st.data())
def test_soft_overlong_equals_trls(length, max_len, data):
    from trl.rewards import get_soft_overlong_punishment

    cache = data.draw(st.integers(0, max_len))
    assert soft_overlong(length, max_len, cache) == get_soft_overlong_punishment(max_len, cache)([[0] * length])[0]


@PROPERTY
@given(st.integers(0, 500), st.integers(1, 300), st.data())
def test_soft_overlong_equals_our_trainers_own_penalty(length, max_len, data):
    import torch

    from trainer_client.rl.overlong import overlong_penalty

    cache = data.draw(st.integers(1, max_len))  # the trainer's takes a cache of at least 1
    ours = overlong_penalty(torch.tensor([length]), max_len, cache).item()
    assert soft_overlong(length, max_len, cache) == pytest.approx(ours, abs=1e-6)


# --- Kimi 1.5 group length reward ------------------------------------------------------------------
def test_group_length_reward_of_a_mixed_group():
    # min 10, max 30: lam = 0.5, 0.0, -0.5
    assert group_length_rewards([10, 20, 30], [True, True, False]) == [0.5, 0.0, -0.5]


def test_a_wrong_answer_never_earns_a_length_bonus():
    assert group_length_rewards([10, 20, 30], [False, False, True]) == [0.0, 0.0, -0.5]


def test_a_group_of_equal_lengths_gets_zeros():
    assert group_length_rewards([7, 7, 7], [True, False, True]) == [0.0, 0.0, 0.0]


def test_an_empty_group_gets_nothing():
    assert group_length_rewards([], []) == []


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 1000), st.booleans()), min_size=1, max_size=16), st.randoms())
def test_group_length_rewards_do_not_depend_on_member_order(rows, rnd):
    order = list(range(len(rows)))
    rnd.shuffle(order)
    rewards = group_length_rewards([n for n, _ in rows], [ok for _, ok in rows])
    shuffled = group_length_rewards([rows[i][0] for i in order], [rows[i][1] for i in order])
    assert shuffled == [rewards[i] for i in order]


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 1000), st.booleans()), min_size=1, max_size=16))
def test_group_length_rewards_lie_in_minus_half_to_half(rows):
    rewards = group_length_rewards([n for n, _ in rows], [ok for _, ok in rows])
    assert all(-0.5 <= r <= 0.5 for r in rewards)
    assert all(r <= 0.0 for r, (_, ok) in zip(rewards, rows) if not ok)


# --- tags ---------------------------------------------------------------------------------------
def test_all_four_r1_tags_once_is_one():
    assert tag_count("<think>\nx\n</think>\n<answer>\ny\n</answer>") == 1.0


def test_each_missing_tag_costs_a_quarter():
    assert tag_count("<think>\nx\n</think>\n") == 0.5


def test_a_tag_twice_earns_nothing_for_that_tag():
    assert tag_count("<think>\n<think>\nx\n</think>\n<answer>\ny\n</answer>") == 0.75


def test_tags_without_their_newlines_do_not_count():
    assert tag_count("<think>x</think><answer>y</answer>") == 0.0


def test_r1_tags_are_the_four_of_open_r1():
    assert R1_TAGS == ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")


def test_the_answer_is_the_text_after_the_last_delimiter():
    assert answer_after_reasoning("<think>a</think>b</think>c") == "c"


def test_no_delimiter_means_the_reasoning_never_finished():
    assert answer_after_reasoning("<think>still thinking") is None


def test_the_first_delimiter_that_occurs_decides():
    assert answer_after_reasoning("x</think>y", ("</reasoning>", "</think>")) == "y"
