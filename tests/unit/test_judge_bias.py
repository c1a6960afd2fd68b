"""Bias statistics of a judge (reward_service/verifiers/judging/bias.py), on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from reward_service.verifiers.judging import OrderPair, RunningPearson, combine_orders, order_stats, pearson


def test_pearson_matches_the_hand_computed_value() -> None:
    # x mean 2.5, y mean 5: sum dx*dy = 11, sum dx^2 = 5, sum dy^2 = 26 -> r = 11 / sqrt(130)
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))


def test_pearson_of_a_perfect_line_and_its_mirror() -> None:
    assert pearson([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_pearson_is_undefined_without_spread_or_samples() -> None:
    assert math.isnan(pearson([], []))
    assert math.isnan(pearson([5], [1]))
    assert math.isnan(pearson([1, 2, 3], [7, 7, 7]))


def test_running_pearson_equals_the_batch_value_at_every_step() -> None:
    xs, ys = [120, 40, 300, 80, 210], [1.0, 0.0, 1.0, 0.5, 0.0]
    running = RunningPearson()
    for k, (x, y) in enumerate(zip(xs, ys), 1):
        running.add(x, y)
        expected = pearson(xs[:k], ys[:k])
        assert (math.isnan(expected) and math.isnan(running.value)) or running.value == pytest.approx(expected)
    assert running.n == 5


def test_a_longer_wins_judge_has_a_positive_length_correlation() -> None:
    lengths = [10, 200, 15, 180, 12, 220]
    rewards = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert pearson(lengths, rewards) > 0.99


def test_agreement_flip_and_tie_in_both_orders() -> None:
    assert OrderPair(1.0, 1.0).agree and not OrderPair(1.0, 1.0).flip  # x wins in both orders
    assert OrderPair(1.0, 0.0).flip and not OrderPair(1.0, 0.0).agree  # whoever is first wins: a flip
    assert not OrderPair(0.5, 1.0).agree and not OrderPair(0.5, 1.0).flip  # a tie, then a win: neither
    assert OrderPair(0.5, 0.5).agree


def test_disagreement_is_a_tie_and_agreement_keeps_the_verdict() -> None:
    assert OrderPair(1.0, 0.0).combined == 0.5
    assert OrderPair(0.5, 1.0).combined == 0.5
    assert OrderPair(0.0, 0.0).combined == 0.0


def test_combine_orders_reads_the_swapped_call_for_the_other_answer() -> None:
    # Second call shows y as A: its preference for A is the preference for y.
    assert combine_orders(1.0, 0.0) == (1.0, True)  # x first: x wins; y first: B (= x) wins
    assert combine_orders(1.0, 1.0) == (0.5, False)  # A wins both times: position bias, a tie
    assert combine_orders(0.5, 0.5) == (0.5, True)


def test_order_stats_hand_counted() -> None:
    pairs = [OrderPair(1, 1), OrderPair(1, 0), OrderPair(0.5, 1), OrderPair(0, 0), OrderPair(0.5, 0.5)]
    stats = order_stats(pairs)
    assert (stats.pairs, stats.agreements, stats.flips) == (5, 3, 1)
    assert stats.agreement_rate == pytest.approx(0.6) and stats.flip_rate == pytest.approx(0.2)
    # first position won: (1,1) once, (1,0) twice, (0,0) once; decided verdicts 2+2+1+2+0 = 7
    assert (stats.first_position_wins, stats.decided_verdicts) == (4, 7)
    assert stats.first_position_win_rate == pytest.approx(4 / 7)


def test_order_stats_of_nothing_are_nan() -> None:
    stats = order_stats([])
    assert math.isnan(stats.flip_rate) and math.isnan(stats.agreement_rate)
    assert math.isnan(stats.first_position_win_rate)
