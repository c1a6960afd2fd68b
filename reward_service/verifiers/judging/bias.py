"""Position and length bias of a judge, measured: pure statistics over its verdicts.

A pair (x, y) judged in both orders gives two preferences for x: ``first`` (x shown as A) and
``second`` (x shown as B, i.e. ``1 - `` the preference for A of the swapped call). The orders **agree**
when both name the same winner (or both a tie); a **flip** is a disagreement where each order picks a
different winner (the verdict followed the position, not the answers). A disagreement is scored as a
tie (0.5). The **length-reward correlation** is Pearson's r between a completion's length and its
reward, kept as a running statistic per judge (:class:`RunningPearson`, no samples stored).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TIE = 0.5


def winner(preference: float) -> str:
    """``"x"``, ``"y"`` or ``"tie"`` for a preference for x in [0, 1]."""
    if preference > TIE:
        return "x"
    return "y" if preference < TIE else "tie"


@dataclass(frozen=True)
class OrderPair:
    """One pair judged in both orders: the preference for x with x first, and with x second."""

    first: float
    second: float

    @property
    def agree(self) -> bool:
        """Both orders name the same winner (or both a tie)."""
        return winner(self.first) == winner(self.second)

    @property
    def flip(self) -> bool:
        """Each order picks a different winner (x, then y, or y, then x)."""
        return {winner(self.first), winner(self.second)} == {"x", "y"}

    @property
    def first_position_won(self) -> tuple[bool, bool]:
        """Whether the answer shown first won, in each order (a tie: neither)."""
        return self.first > TIE, self.second < TIE

    @property
    def combined(self) -> float:
        """The preference for x: the verdict both orders agree on, else a tie."""
        return self.first if self.agree else TIE


def combine_orders(first: float, second_swapped: float) -> tuple[float, bool]:
    """(preference for x, whether the orders agree) from the preference for A of each call: ``first`` with x
    as A, ``second_swapped`` with y as A."""
    pair = OrderPair(first, 1.0 - second_swapped)
    return pair.combined, pair.agree


@dataclass(frozen=True)
class OrderStats:
    """Order statistics over pairs judged in both orders; rates are NaN with no pairs."""

    pairs: int
    agreements: int
    flips: int
    first_position_wins: int
    decided_verdicts: int

    @property
    def agreement_rate(self) -> float:
        return self.agreements / self.pairs if self.pairs else math.nan

    @property
    def flip_rate(self) -> float:
        return self.flips / self.pairs if self.pairs else math.nan

    @property
    def first_position_win_rate(self) -> float:
        """Of the verdicts that named a winner, the share won by the answer shown first (0.5: no bias)."""
        return self.first_position_wins / self.decided_verdicts if self.decided_verdicts else math.nan


def order_stats(pairs: Sequence[OrderPair]) -> OrderStats:
    """Agreement, flips and first-position wins over ``pairs``."""
    first_wins = sum(sum(p.first_position_won) for p in pairs)
    decided = sum((p.first != TIE) + (p.second != TIE) for p in pairs)
    return OrderStats(len(pairs), sum(p.agree for p in pairs), sum(p.flip for p in pairs), first_wins, decided)


class RunningPearson:
    """Pearson's r of (x, y) pairs added one at a time (Welford's co-moment update; O(1) memory).

    ``value`` is NaN with fewer than two pairs or when either variable has no spread.
    """

    def __init__(self) -> None:
        self.n = 0
        self._mean_x = self._mean_y = 0.0
        self._m2x = self._m2y = self._cxy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        dx = x - self._mean_x
        self._mean_x += dx / self.n
        dy = y - self._mean_y
        self._mean_y += dy / self.n
        self._m2x += dx * (x - self._mean_x)
        self._m2y += dy * (y - self._mean_y)
        self._cxy += dx * (y - self._mean_y)

    @property
    def value(self) -> float:
        if self.n < 2 or self._m2x <= 0.0 or self._m2y <= 0.0:
            return math.nan
        return max(-1.0, min(1.0, self._cxy / math.sqrt(self._m2x * self._m2y)))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's r of two equal-length sequences (NaN when undefined)."""
    if len(xs) != len(ys):
        raise ValueError(f"pearson needs sequences of equal length, got {len(xs)} and {len(ys)}")
    running = RunningPearson()
    for x, y in zip(xs, ys):
        running.add(x, y)
    return running.value
