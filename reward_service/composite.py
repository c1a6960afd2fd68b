"""Composite rewards: a weighted sum of other tasks' scores (configured, not coded)."""

from __future__ import annotations

from typing import Any, Mapping

from reward_service.contract import RolloutStatus, TaskInfo
from reward_service.task_api import Task, TaskOutcome


class CompositeTask(Task):
    """score = sum(weight_i * score_i); components report each part's unweighted score.

    The composite is NO_ANSWER only when every component is; the extracted
    answer is the first component's that has one. A component that raises
    InvalidReference makes the whole rollout INVALID_REFERENCE.
    """

    def __init__(self, name: str, parts: Mapping[str, tuple[Task, float]], description: str = "") -> None:
        super().__init__()
        self._name = name
        self._parts = dict(parts)
        self._description = description or " + ".join(f"{w:g} x {n}" for n, (_, w) in self._parts.items())

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        for task, _ in self._parts.values():
            task.check_reference(reference)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        total = 0.0
        components: dict[str, float] = {}
        extracted = ""
        details = []
        all_no_answer = True
        for part_name, (task, weight) in self._parts.items():
            outcome = task.score(completion, reference, prompt)
            total += weight * outcome.score
            components[part_name] = outcome.score
            for sub, value in outcome.components.items():
                if sub != part_name:
                    components[f"{part_name}.{sub}"] = value
            extracted = extracted or outcome.extracted
            all_no_answer = all_no_answer and outcome.status == RolloutStatus.NO_ANSWER
            if outcome.detail:
                details.append(f"{part_name}: {outcome.detail}")
        status = RolloutStatus.NO_ANSWER if all_no_answer else RolloutStatus.OK
        return TaskOutcome(total, status, components, extracted, "; ".join(details))

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
        )
