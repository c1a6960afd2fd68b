"""Composite rewards: a weighted sum of other tasks' scores (configured, not coded)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from reward_core.contract import RolloutStatus, TaskInfo
from reward_service.task_api import Task, TaskInput, TaskOutcome
from reward_service.tasks.explanation import cap, explain_outcome


class CompositeTask(Task):
    """score = sum(weight_i * score_i); components report each part's unweighted score.

    The composite is NO_ANSWER only when every component is; the extracted
    answer is the first component's that has one. A component that raises
    InvalidReference makes the whole rollout INVALID_REFERENCE; any other unscored
    component (ERROR, TIMEOUT) makes it unscored too, never a 0 in the sum. A groupwise
    component (``Task.groupwise``) gets its part of the score in the group stage.
    """

    canary_exemption = "a composite reward: each component runs its own canaries"

    def __init__(self, name: str, parts: Mapping[str, tuple[Task, float]], description: str = "") -> None:
        super().__init__()
        self._name = name
        self._parts = dict(parts)
        self._description = description or " + ".join(f"{w:g} x {n}" for n, (_, w) in self._parts.items())

    @property
    def parts(self) -> Mapping[str, tuple[Task, float]]:
        """Component name -> (its task, its weight)."""
        return self._parts

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        for task, _ in self._parts.values():
            task.check_reference(reference)

    @property
    def batch_size(self) -> int:  # type: ignore[override]
        return max(task.batch_size for task, _ in self._parts.values())

    @property
    def time_limit_s(self) -> float:  # type: ignore[override]
        return sum(task.time_limit_s for task, _ in self._parts.values())

    @property
    def groupwise(self) -> bool:  # type: ignore[override]
        return any(task.groupwise for task, _ in self._parts.values())

    @property
    def group_stage_waits(self) -> bool:  # type: ignore[override]
        return any(task.group_stage_waits for task, _ in self._parts.values())

    @property
    def runs_in_server(self) -> bool:  # type: ignore[override]
        """In the server when every component does (judges, the sandbox, a reward model: they share the
        server's clients, limits and caches); a composite mixing in a CPU-bound component (sympy) stays in
        the worker pool, where a hung verifier is killed, and each worker has its own clients."""
        return bool(self._parts) and all(task.runs_in_server for task, _ in self._parts.values())

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.combine({name: task.score(completion, reference, prompt)
                             for name, (task, _) in self._parts.items()})

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        """Each component scores the whole batch (so a batching component stays batched)."""
        per_part = {name: task.score_batch(items) for name, (task, _) in self._parts.items()}
        return [self.combine({name: outs[i] for name, outs in per_part.items()}) for i in range(len(items))]

    def score_group(self, items: Sequence[TaskInput], outcomes: Sequence[TaskOutcome]) -> list[TaskOutcome]:
        """Each groupwise component's group stage over its own part of the outcomes (its score and
        sub-components, as ``combine`` stored them), then the weighted sum again."""
        shaped = list(outcomes)
        for part_name, (task, _) in self._parts.items():
            if task.groupwise:
                parts = task.score_group(items, [_part_of(o, part_name) for o in shaped])
                shaped = [self._with_part(o, part_name, p) for o, p in zip(shaped, parts, strict=True)]
        return shaped

    def _with_part(self, outcome: TaskOutcome, part_name: str, part: TaskOutcome) -> TaskOutcome:
        components = {k: v for k, v in outcome.components.items() if not k.startswith(f"{part_name}.")}
        components[part_name] = part.score
        components.update({f"{part_name}.{sub}": v for sub, v in part.components.items() if sub != part_name})
        total = 0.0
        for name, (_, weight) in self._parts.items():
            total += weight * components[name]
        return dataclasses.replace(outcome, score=total, components=components)

    def combine(self, outcomes: Mapping[str, TaskOutcome]) -> TaskOutcome:
        """The weighted sum of the components' outcomes for one completion."""
        bad = next((o for o in outcomes.values() if o.status == RolloutStatus.INVALID_REFERENCE), None)
        if bad is not None:
            return bad
        failed = next(((n, o) for n, o in outcomes.items() if not o.status.scored), None)
        if failed is not None:  # a failure of ours is never a 0 in the sum
            part_name, outcome = failed
            return TaskOutcome(0.0, outcome.status, detail=f"{part_name}: {outcome.detail}",
                               explanation=f"{part_name}: {explain_outcome(outcome)}")
        total = 0.0
        components: dict[str, float] = {}
        extracted = ""
        details = []
        explanations = []
        all_no_answer = True
        for part_name, outcome in outcomes.items():
            weight = self._parts[part_name][1]
            total += weight * outcome.score
            components[part_name] = outcome.score
            for sub, value in outcome.components.items():
                if sub != part_name:
                    components[f"{part_name}.{sub}"] = value
            extracted = extracted or outcome.extracted
            all_no_answer = all_no_answer and outcome.status == RolloutStatus.NO_ANSWER
            if outcome.detail:
                details.append(f"{part_name}: {outcome.detail}")
            explanations.append(f"{part_name} ({weight:g}x): {cap(explain_outcome(outcome), 140)}")
        status = RolloutStatus.NO_ANSWER if all_no_answer else RolloutStatus.OK
        # step scores: those of the first component that produces them (a composite mixes one
        # process component with outcome components; its steps are that component's)
        steps = next((o.steps for o in outcomes.values() if o.steps), ())
        return TaskOutcome(total, status, components, extracted, "; ".join(details), steps,
                           cap(f"score {total:g} = " + " | ".join(explanations)))

    def info(self, name: str | None = None) -> TaskInfo:
        fields: list[str] = []
        required: list[str] = []
        for task, _ in self._parts.values():
            part = task.info()
            fields += [f for f in part.reference_fields if f not in fields]
            required += [f for f in part.required_reference_fields if f not in required]
        return TaskInfo(
            name=name or self._name,
            description=self._description,
            reference_fields=tuple(fields),
            required_reference_fields=tuple(required),
            kind="composite",
            weights={n: w for n, (_, w) in self._parts.items()},
            produces_steps=any(task.info().produces_steps for task, _ in self._parts.values()),
            groupwise=self.groupwise,
        )


def _part_of(outcome: TaskOutcome, part_name: str) -> TaskOutcome:
    """One component's outcome as ``combine`` stored it in a composite outcome."""
    prefix = f"{part_name}."
    subs = {k[len(prefix):]: v for k, v in outcome.components.items() if k.startswith(prefix)}
    return TaskOutcome(outcome.components.get(part_name, math.nan), outcome.status, subs)
