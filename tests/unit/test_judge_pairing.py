"""Group pairing schedules (reward_service/verifiers/judging/pairing.py): round-robin, knockout, win rates."""

from __future__ import annotations

import random

import pytest

from reward_service.verifiers.judging import Game, knockout, round_robin, seeded_order, win_rates


def higher_index_wins(pairs: list[tuple[int, int]]) -> list[float | None]:
    return [1.0 if a > b else 0.0 for a, b in pairs]


def test_round_robin_meets_every_pair_once_and_alternates_who_is_first() -> None:
    assert round_robin([0, 1, 2]) == [(0, 1), (2, 0), (1, 2)]
    pairs = round_robin([3, 1, 0, 2])
    assert sorted(tuple(sorted(p)) for p in pairs) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    firsts = [a for a, _ in pairs]
    assert sorted(firsts.count(m) for m in range(4)) == [1, 1, 2, 2]


def test_round_robin_of_one_is_empty() -> None:
    assert round_robin([0]) == []


def test_knockout_bracket_of_four() -> None:
    games = knockout([3, 0, 2, 1], higher_index_wins, random.Random(0))
    assert games == [Game(3, 0, 1.0), Game(2, 1, 1.0), Game(3, 2, 1.0)]
    assert win_rates(4, games) == [(0.0, 1), (0.0, 1), (1.0, 2), (2.0, 2)]


def test_knockout_gives_the_odd_one_a_bye() -> None:
    games = knockout([0, 1, 2], higher_index_wins, random.Random(0))
    assert games == [Game(0, 1, 0.0), Game(1, 2, 0.0)]
    assert win_rates(3, games) == [(0.0, 1), (1.0, 2), (1.0, 1)]


def test_knockout_breaks_a_tie_with_the_rng() -> None:
    ties = knockout([0, 1], lambda pairs: [0.5] * len(pairs), random.Random(0))
    assert ties == [Game(0, 1, 0.5)]


def test_knockout_keeps_both_when_the_judge_fails_and_stops_when_a_round_all_fails() -> None:
    def fails_on_0_1(pairs: list[tuple[int, int]]) -> list[float | None]:
        return [None if {a, b} == {0, 1} else (1.0 if a > b else 0.0) for a, b in pairs]
    games = knockout([0, 1, 2, 3], fails_on_0_1, random.Random(0))
    # round 1: (0,1) failed -> both on, 3 beats 2; round 2: (0,1) fails again (3 has a bye): nothing changes
    assert games == [Game(2, 3, 0.0)]
    assert knockout([0, 1, 2, 3], lambda pairs: [None] * len(pairs), random.Random(0)) == []


def test_win_rates_count_ties_as_half() -> None:
    games = [Game(0, 1, 0.5), Game(0, 2, 1.0), Game(1, 2, 0.0)]
    assert win_rates(3, games) == [(1.5, 2), (0.5, 2), (1.0, 2)]


def test_seeded_order_is_fixed_by_seed_and_key() -> None:
    assert seeded_order(6, 0, "g1") == [3, 4, 2, 1, 5, 0]  # the same in every process (str seeds hash stably)
    assert seeded_order(6, 1, "g1") == [2, 0, 3, 4, 5, 1]
    assert sorted(seeded_order(9, 7, "k")) == list(range(9))


def test_knockout_rejects_a_play_that_drops_results() -> None:
    with pytest.raises(ValueError):
        knockout([0, 1, 2, 3], lambda pairs: [1.0], random.Random(0))
