"""The ``steps`` task: a score per reasoning step (process), and the final answer (outcome).

The completion is split into steps (:mod:`reward_service.verifiers.process.step_split`: a
configured separator, numbered steps, or lines); each step's arithmetic claims are checked
exactly (:mod:`reward_service.verifiers.process.claims`: ``48/2 = 24``, chains, GSM8K's
``<<48/2=24>>``). A step with a wrong claim scores 0, a step whose claims all hold 1, and a
step with nothing to check is neutral (``scored=False``: left out, never a 0).

Reference: ``{"answer": <gold>}`` as for ``gsm8k`` / ``math``. Options::

    outcome: gsm8k | math      # how the final answer is graded (default gsm8k)
    separator: "\\n\\n"          # split on this instead of numbered steps / lines
    outcome_weight: 1.0         # score = outcome_weight * outcome + process_weight * process
    process_weight: 0.0
    process: mean | min         # process = mean of the scored steps, or their minimum

Components: ``outcome`` (the final answer, 0/1) and ``process`` (the aggregate over scored
steps; without any scored step it equals the outcome, so a completion with nothing to check
is neither rewarded nor punished by the process part). Variants are configuration, e.g.
``steps_process: {task: steps, options: {outcome_weight: 0, process_weight: 1}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_core.contract import RolloutStatus, StepScore
from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.math_task import MathTask
from reward_service.verifiers.process import check_step, split_steps

OUTCOME_TASKS = {"gsm8k": Gsm8kTask, "math": MathTask}


class StepsTask(Task):
    """Process + outcome rewards for arithmetic reasoning (see the module docstring)."""

    name = "steps"
    description = ("a score per reasoning step (its arithmetic checked exactly; neutral when there is nothing "
                   "to check) and the final answer; score = outcome_weight*outcome + process_weight*process")
    required_reference_fields = ("answer",)
    produces_steps = True

    def __init__(self, outcome: str = "gsm8k", separator: str = "", outcome_weight: float = 1.0,
                 process_weight: float = 0.0, process: str = "mean") -> None:
        super().__init__()
        if outcome not in OUTCOME_TASKS:
            raise InvalidTaskOptions(f"task {self.name!r}: outcome must be one of {sorted(OUTCOME_TASKS)}, "
                                     f"got {outcome!r}")
        if process not in ("mean", "min"):
            raise InvalidTaskOptions(f"task {self.name!r}: process must be 'mean' or 'min', got {process!r}")
        for label, weight in (("outcome_weight", outcome_weight), ("process_weight", process_weight)):
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise InvalidTaskOptions(f"task {self.name!r}: {label} must be a number, got {weight!r}")
        self._outcome = OUTCOME_TASKS[outcome]()
        self._separator = separator or None
        self._weights = (float(outcome_weight), float(process_weight))
        self._aggregate = min if process == "min" else (lambda xs: sum(xs) / len(xs))

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        self._outcome.check_reference(reference)

    def canaries(self) -> list[Canary]:
        """The outcome task's canaries: they state no arithmetic, so the process part adds nothing."""
        return list(self._outcome.canaries())

    def steps(self, completion: str) -> tuple[StepScore, ...]:
        """The step scores of ``completion`` (pure: no reference needed)."""
        scores = []
        for step in split_steps(completion, self._separator):
            label, score = check_step(step.text)
            scores.append(StepScore(step.start, step.end, score if score is not None else 0.0, score is not None,
                                    label))
        return tuple(scores)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        outcome = self._outcome.score(completion, reference, prompt)
        if not outcome.status.scored:
            return outcome  # an unusable gold or a verifier failure: unscored, as the outcome task says
        steps = self.steps(completion)
        scored = [s.score for s in steps if s.scored]
        process = self._aggregate(scored) if scored else outcome.score
        w_outcome, w_process = self._weights
        total = w_outcome * outcome.score + w_process * process
        wrong = sum(1 for s in steps if s.scored and s.score == 0.0)
        detail = f"{len(scored)} of {len(steps)} steps checked, {wrong} wrong"
        status = outcome.status if outcome.status == RolloutStatus.NO_ANSWER else RolloutStatus.OK
        return TaskOutcome(total, status, {"outcome": outcome.score, "process": process}, outcome.extracted,
                           outcome.detail or detail, steps)
