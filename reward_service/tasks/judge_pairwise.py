"""``judge_pairwise``: is the completion better than a reference answer (or a second completion)?

The judge sees both answers (template ``templates/pairwise.yaml``, verdicts ``[[A]]``/``[[B]]``/``[[C]]``)
**in both orders** by default (``both_orders``): the completion first, then second. When the two
verdicts agree, that is the verdict; when they disagree (the judge followed the position, not the
answers) it is a tie, 0.5. Score: 1 (the completion wins), 0.5 (tie), 0 (it loses). Components:
``win``, ``order_agreement`` (1 when both orders agreed), ``first_order``/``second_order`` (the
completion's preference in each order), and the judge's running bias figures. ``both_orders: false``
asks once, the completion's position drawn from ``seed`` and the pair (reproducible).

Reference: ``baseline`` (a second completion to beat) or ``answer`` (a reference answer).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_service.judges import JudgeError
from reward_service.judges.judge_metrics import judge_metrics
from reward_service.task_api import InvalidReference, TaskInput, TaskOutcome
from reward_service.tasks.judge_base import JudgeTask, blank
from reward_service.tasks.options import bool_option
from reward_service.verifiers.judging import OrderPair, Verdict

#: Reference fields holding the answer to compare with, in order of preference.
OPPONENT_FIELDS = ("baseline", "answer")


@dataclass(frozen=True)
class PairResult:
    """A judged pair (x, y): ``points`` for x, and x's preference in each order asked (``second`` None when
    asked once; ``ruled``: decided by a rule, no call)."""

    points: float
    first: float | None = None
    second: float | None = None
    ruled: str = ""

    @property
    def agree(self) -> bool | None:
        """Whether both orders agreed (None unless asked in both)."""
        if self.first is None or self.second is None:
            return None
        return OrderPair(self.first, self.second).agree


def pair_key(*texts: str) -> str:
    """A stable key naming a pair (for the seeded position draw)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(len(text.encode()).to_bytes(8, "big") + text.encode())
    return digest.hexdigest()[:16]


class PairwiseJudge(JudgeTask):
    """What judging a pair takes: the calls of one pair (one or both orders) and their result."""

    template_name = "pairwise"
    template_fields = ("prompt", "answer_a", "answer_b")

    def __init__(self, both_orders: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.both_orders = bool_option(self.name, "both_orders", both_orders)

    def rule(self, x: str, y: str) -> PairResult | None:
        """A pair decided without the judge: a blank answer loses to any other, and equal ones tie."""
        if blank(x) or blank(y):
            return PairResult(0.5 if blank(x) and blank(y) else (0.0 if blank(x) else 1.0),
                              ruled="blank answer" if blank(x) != blank(y) else "both blank")
        if x.strip() == y.strip():
            return PairResult(0.5, ruled="identical answers")
        return None

    def x_first(self, prompt: str, x: str, y: str) -> bool:
        """With one order: whether x is shown first (drawn from the seed and the pair)."""
        return random.Random(f"{self.seed}:{pair_key(prompt, x, y)}").random() < 0.5

    def pair_calls(self, prompt: str, x: str, y: str, deadline: float) -> list[Callable[[], Verdict]]:
        """The judge calls of pair (x, y): x as A then y as A (both orders), or one in the drawn order."""
        def ask(a: str, b: str) -> Callable[[], Verdict]:
            return lambda: self.ask({"prompt": prompt, "answer_a": a, "answer_b": b}, deadline)
        if self.both_orders:
            return [ask(x, y), ask(y, x)]
        return [ask(x, y) if self.x_first(prompt, x, y) else ask(y, x)]

    def pair_result(self, prompt: str, x: str, y: str, verdicts: Sequence[Verdict | JudgeError]) -> PairResult:
        """The pair's result from its calls' verdicts (raises the first JudgeError); records order agreement."""
        for verdict in verdicts:
            if isinstance(verdict, JudgeError):
                raise verdict
        if not self.both_orders:
            [verdict] = verdicts
            first = self.x_first(prompt, x, y)
            pref = verdict.value if first else 1.0 - verdict.value  # type: ignore[union-attr]
            return PairResult(pref, pref if first else None, None if first else pref)
        pair = OrderPair(verdicts[0].value, 1.0 - verdicts[1].value)  # type: ignore[union-attr]
        judge_metrics().record_order_pair(self.judge_label, agreed=pair.agree, flipped=pair.flip)
        return PairResult(pair.combined, pair.first, pair.second)


class JudgePairwiseTask(PairwiseJudge):
    """1 / 0.5 / 0 as the completion beats, ties or loses to the reference's answer, judged in both orders."""

    name = "judge_pairwise"
    description = ("an LLM judge compares the completion with the reference's baseline/answer, in both orders "
                   "(disagreement: a tie): 1 win, 0.5 tie, 0 loss")
    reference_fields = OPPONENT_FIELDS

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        opponent(reference)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        deadline = self.deadline()
        outcomes: list[TaskOutcome | None] = [None] * len(items)
        jobs: list[Callable[[], Verdict]] = []
        spans: dict[int, tuple[int, int]] = {}
        for i, item in enumerate(items):
            y = opponent(item.reference)
            ruled = self.rule(item.completion, y)
            if ruled is not None:
                outcomes[i] = self._outcome(item, ruled) if not blank(item.completion) else self.blank_outcome()
                continue
            calls = self.pair_calls(item.prompt, item.completion, y, deadline)
            spans[i] = (len(jobs), len(jobs) + len(calls))
            jobs += calls
        verdicts = self.run_all(jobs)
        for i, (start, end) in spans.items():
            item = items[i]
            try:
                result = self.pair_result(item.prompt, item.completion, opponent(item.reference), verdicts[start:end])
            except JudgeError as exc:
                outcomes[i] = self.failed(exc)
                continue
            outcomes[i] = self._outcome(item, result)
        return [o for o in outcomes if o is not None]

    def _outcome(self, item: TaskInput, result: PairResult) -> TaskOutcome:
        components = {"win": result.points}
        for name, value in (("first_order", result.first), ("second_order", result.second)):
            if value is not None:
                components[name] = value
        if result.agree is not None:
            components["order_agreement"] = 1.0 if result.agree else 0.0
        how = result.ruled or ("both orders agree" if result.agree else
                               "the orders disagree: a tie" if result.agree is False else "one order asked")
        verdict = {1.0: "wins over", 0.5: "ties with", 0.0: "loses to"}.get(result.points, "scores against")
        return self.scored(item.completion, result.points, components, detail=how,
                           explanation=f"the completion {verdict} the reference's answer ({how})")

    def canary_reference(self) -> Mapping[str, Any]:
        return {"answer": "2 + 2 = 4"}


def opponent(reference: Mapping[str, Any]) -> str:
    """The answer the completion is compared with: ``baseline``, else ``answer`` (InvalidReference if none)."""
    for name in OPPONENT_FIELDS:
        value = reference.get(name)
        if isinstance(value, str) and value.strip():
            return value
        if value not in (None, ""):
            raise InvalidReference(f"reference {name!r} must be a non-empty string, got {value!r}")
    raise InvalidReference(f"judge_pairwise needs the answer to compare with in the reference: one of "
                           f"{list(OPPONENT_FIELDS)}; got {sorted(reference)}")
