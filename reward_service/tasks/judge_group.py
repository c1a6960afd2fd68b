"""``judge_group``: rank the completions of one GRPO group against each other; reward = win rate.

A group is the rollouts of one request sharing a ``group_id`` (the server's group stage:
``Task.score_group``; a rollout without one is refused). ``score_batch`` makes no call: a blank
completion is NO_ANSWER (0) there and stays so; the others wait for their group. In ``score_group``
(which the server runs on its own threads, never on its event loop) the members meet in pairs judged
by the pairwise template, each pair in both orders (a disagreement is a tie). ``schedule``:
``round_robin`` (every pair; n(n-1)/2 pairs) or ``knockout`` (a bracket; n-1 pairs, ties broken by the
seed). The members' order is shuffled with ``seed`` and the group's prompt, after sorting them by
content, so the same group always meets the same way (and a second pass is answered by the verdict
cache). Reward: points / games (1 a win, 0.5 a tie); components ``wins``, ``games``,
``order_agreement`` (share of its games whose two orders agreed), and the judge's running bias
figures. A member alone in its group (or whose copies are all identical) scores 0.5.

A pair the judge failed on makes both its members unscored with the failure's kind (JUDGE_FAILED,
JUDGE_RATE_LIMITED, JUDGE_UNPARSEABLE), never 0 nor a rate over the games that were judged; the other
members keep their games against them (in a knockout, both go on). A blank completion loses to every
other without a call. Two groups with the same prompt are ranked apart.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.judges import JudgeError
from reward_service.task_api import TaskInput, TaskOutcome
from reward_service.tasks.judge_base import blank
from reward_service.tasks.judge_pairwise import PairResult, PairwiseJudge
from reward_service.tasks.options import choice_option
from reward_service.verifiers.judging import SCHEDULES, Game, knockout, round_robin, seeded_order, win_rates

#: What a member's verification says before its group is ranked (its score is the group stage's).
AWAITS_GROUP = "awaits its group's ranking"


@dataclass
class _Tally:
    """What one member's games gave besides points: agreements, and the failures it met."""

    agreed: int = 0
    both_orders: int = 0
    failures: list[JudgeError] = field(default_factory=list)


def group_key(item: TaskInput) -> str:
    """The seed of a group's draws: its prompt and reference (the same group always meets the same way)."""
    ref = json.dumps(item.reference, sort_keys=True, default=str)
    return hashlib.sha256(f"{len(item.prompt)}:{item.prompt}{ref}".encode()).hexdigest()


class JudgeGroupTask(PairwiseJudge):
    """Win rate of each completion against the others of its group, judged in pairs (both orders)."""

    name = "judge_group"
    description = ("an LLM judge ranks the completions of each group (group_id) in pairs, both orders, "
                   "round-robin or knockout; reward = win rate")
    groupwise = True

    def __init__(self, schedule: str = "round_robin", **options: Any) -> None:
        super().__init__(**options)
        self.schedule = choice_option(self.name, "schedule", schedule, SCHEDULES)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        """No call: a blank completion is NO_ANSWER; another one's score is its group's ranking (NaN alone)."""
        if blank(completion):
            return self.blank_outcome()
        return TaskOutcome(math.nan, RolloutStatus.OK, detail=AWAITS_GROUP)

    def score_group(self, items: Sequence[TaskInput], outcomes: Sequence[TaskOutcome]) -> list[TaskOutcome]:
        """The group's ranking: each member's win rate; a member's own outcome (NO_ANSWER: its score is
        not NaN) is kept."""
        ranked = self._rank(list(items))
        return [new if math.isnan(own.score) else own for own, new in zip(outcomes, ranked)]

    def _rank(self, group: list[TaskInput]) -> list[TaskOutcome]:
        """One group's outcomes, in its order."""
        n = len(group)
        if n == 1:
            return [self.blank_outcome() if blank(group[0].completion) else
                    self.scored(group[0].completion, 0.5, {"wins": 0.0, "games": 0.0},
                                detail="no other completion in its group to compare with")]
        prompt = group[0].prompt
        canonical = sorted(range(n), key=lambda i: hashlib.sha256(group[i].completion.encode()).hexdigest())
        order = [canonical[k] for k in seeded_order(n, self.seed or 0, group_key(group[0]))]
        deadline = self.deadline()
        tallies = [_Tally() for _ in range(n)]

        def play(pairs: list[tuple[int, int]]) -> list[float | None]:
            return self._play(prompt, group, pairs, deadline, tallies)

        if self.schedule == "knockout":
            games = knockout(order, play, random.Random(f"{self.seed}:{group_key(group[0])}:ties"))
        else:
            pairs = round_robin(order)
            games = [Game(a, b, p) for (a, b), p in zip(pairs, play(pairs)) if p is not None]
        return [self._member_outcome(group[m], points, played, tallies[m])
                for m, (points, played) in enumerate(win_rates(n, games))]

    def _play(self, prompt: str, group: list[TaskInput], pairs: list[tuple[int, int]], deadline: float,
              tallies: list[_Tally]) -> list[float | None]:
        """Judges ``pairs`` (all their calls at once); the first member's points, None where the judge failed."""
        results: list[PairResult | None] = [None] * len(pairs)
        jobs, spans = [], {}
        for k, (a, b) in enumerate(pairs):
            x, y = group[a].completion, group[b].completion
            ruled = self.rule(x, y)
            if ruled is not None:
                results[k] = ruled
                continue
            calls = self.pair_calls(prompt, x, y, deadline)
            spans[k] = (len(jobs), len(jobs) + len(calls))
            jobs += calls
        verdicts = self.run_all(jobs)
        for k, (start, end) in spans.items():
            a, b = pairs[k]
            try:
                results[k] = self.pair_result(prompt, group[a].completion, group[b].completion, verdicts[start:end])
            except JudgeError as exc:
                tallies[a].failures.append(exc)
                tallies[b].failures.append(exc)
        for (a, b), result in zip(pairs, results):
            if result is not None and result.agree is not None:
                for m in (a, b):
                    tallies[m].both_orders += 1
                    tallies[m].agreed += result.agree
        return [None if r is None else r.points for r in results]

    def _member_outcome(self, item: TaskInput, points: float, played: int, tally: _Tally) -> TaskOutcome:
        if blank(item.completion):
            return self.blank_outcome()
        if tally.failures:  # a rate over the games that were judged is not comparable with its group's others
            return self.failed(tally.failures[0])
        if played == 0:
            return self.scored(item.completion, 0.5, {"wins": 0.0, "games": 0.0},
                               detail="no game against another completion of its group")
        rate = points / played
        components = {"wins": points, "games": float(played)}
        if tally.both_orders:
            components["order_agreement"] = tally.agreed / tally.both_orders
        return self.scored(item.completion, rate, components,
                           detail=f"{points:g} point(s) in {played} game(s) ({self.schedule})",
                           explanation=f"win rate {rate:.3g} in its group: {points:g} of {played} game(s)")
