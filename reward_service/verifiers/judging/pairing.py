"""Which members of a group meet, and what each earned: round-robin and knockout schedules, win rates.

Members are indices 0..n-1. Their order is shuffled with a seed and a key naming the group
(:func:`seeded_order`), so the same group always meets in the same order (reproducible, and the judge's
verdict cache answers a second pass) while no member is favoured by the order it arrived in.

A **game** is one judged pair: ``points`` in [0, 1] for its first member (1 a win, 0.5 a tie), the rest
for the second. A member's reward is its win rate: points over games played.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SCHEDULES = ("round_robin", "knockout")


@dataclass(frozen=True)
class Game:
    """One judged pair: members ``first`` and ``second``, and the points ``first`` earned."""

    first: int
    second: int
    points: float


def seeded_order(n: int, seed: int, key: str = "") -> list[int]:
    """A permutation of ``range(n)`` fixed by ``seed`` and ``key`` (the same in every process)."""
    order = list(range(n))
    random.Random(f"{seed}:{key}").shuffle(order)
    return order


def round_robin(order: Sequence[int]) -> list[tuple[int, int]]:
    """Every pair of ``order`` once, in the order's sequence; who is shown first alternates so each member
    is first in about half its games."""
    pairs = []
    for a in range(len(order)):
        for b in range(a + 1, len(order)):
            pairs.append((order[a], order[b]) if (a + b) % 2 else (order[b], order[a]))
    return pairs


#: Judges a round's pairs: the points of each pair's first member, or None where the judge failed.
PlayRound = Callable[[list[tuple[int, int]]], list[float | None]]


def knockout(order: Sequence[int], play: PlayRound, rng: random.Random) -> list[Game]:
    """A single-elimination bracket over ``order``: adjacent members meet, winners go on, an odd one out
    gets a bye. A tie is broken by ``rng``; a pair the judge failed on is not a game and both go on. Stops
    when one member is left, or when a whole round failed (nothing can change)."""
    games: list[Game] = []
    alive = list(order)
    while len(alive) > 1:
        pairs = [(alive[k], alive[k + 1]) for k in range(0, len(alive) - 1, 2)]
        results = play(pairs)
        if len(results) != len(pairs):
            raise ValueError(f"play returned {len(results)} results for {len(pairs)} pairs")
        survivors = []
        for (a, b), points in zip(pairs, results):
            if points is None:
                survivors += [a, b]
                continue
            games.append(Game(a, b, points))
            if points == 0.5:
                survivors.append(a if rng.random() < 0.5 else b)
            else:
                survivors.append(a if points > 0.5 else b)
        if len(alive) % 2:
            survivors.append(alive[-1])
        if all(r is None for r in results):
            break
        alive = survivors
    return games


def win_rates(n: int, games: Sequence[Game]) -> list[tuple[float, int]]:
    """(points, games played) of each of ``n`` members."""
    points, played = [0.0] * n, [0] * n
    for game in games:
        points[game.first] += game.points
        points[game.second] += 1.0 - game.points
        played[game.first] += 1
        played[game.second] += 1
    return list(zip(points, played))
