"""Judge tasks that grade one completion on its own: ``judge_reference`` and ``judge_rubric``.

``judge_reference`` asks whether the completion's final answer is equivalent to the gold (reference
``answer``), for answers no rule can parse: 1 or 0 (template ``templates/reference.yaml``, yes/no).

``judge_rubric`` scores the completion against each weighted criterion of the reference's ``rubric``
(one judge call per criterion, template ``templates/rubric.yaml``, ``Score: N/10``): one component per
criterion (``rubric/<name>``, in [0, 1]) and the weighted mean as the score. A rubric is a list of
criteria, each a string or ``{"criterion": text, "weight": w > 0, "name": component name}``::

    {"rubric": [{"criterion": "States the final answer 12", "weight": 3, "name": "answer"},
                "Shows the steps of the computation"]}

A criterion the judge could not grade makes the whole rollout unscored (with its failure kind), never
a mean over the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.judges import JudgeError
from reward_service.task_api import InvalidReference, TaskInput, TaskOutcome
from reward_service.tasks.judge_base import JudgeTask, blank, first_failure


def as_text(value: Any) -> str:
    """A reference value as the judge reads it: a string as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class JudgeReferenceTask(JudgeTask):
    """1 when the judge says the final answer is equivalent to the gold, else 0."""

    name = "judge_reference"
    description = "an LLM judge's yes/no: is the final answer equivalent to the reference answer"
    required_reference_fields = ("answer",)
    template_name = "reference"
    template_fields = ("prompt", "gold", "completion")

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        deadline = self.deadline()
        asked = [i for i, item in enumerate(items) if not blank(item.completion)]
        verdicts = self.run_all([
            (lambda item=items[i]: self.ask({"prompt": item.prompt, "gold": as_text(item.reference["answer"]),
                                             "completion": item.completion}, deadline)) for i in asked])
        outcomes = [self.blank_outcome()] * len(items)
        for i, verdict in zip(asked, verdicts):
            if isinstance(verdict, JudgeError):
                outcomes[i] = self.failed(verdict)
                continue
            outcomes[i] = self.scored(items[i].completion, verdict.value, {"judge_equivalent": verdict.value},
                                      detail=f"judge {self.judge_label} said {verdict.label!r}",
                                      explanation=f"the judge says the answer is {'' if verdict.value else 'not '}"
                                                  f"equivalent to the gold (reply {verdict.label!r})")
        return outcomes


@dataclass(frozen=True)
class Criterion:
    """One rubric criterion: its component name, text and weight."""

    name: str
    text: str
    weight: float


def read_rubric(value: Any) -> list[Criterion]:
    """The reference's ``rubric`` as criteria; raises InvalidReference saying what is wrong."""
    if not isinstance(value, list) or not value:
        raise InvalidReference(f"'rubric' must be a non-empty list of criteria, got {value!r}")
    criteria = []
    for k, entry in enumerate(value, 1):
        if isinstance(entry, str):
            entry = {"criterion": entry}
        if not isinstance(entry, Mapping) or not isinstance(entry.get("criterion"), str) \
                or not entry["criterion"].strip():
            raise InvalidReference(f"rubric criterion {k} must be a string or {{'criterion': text, 'weight': w, "
                                   f"'name': n}}, got {entry!r}")
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < float("inf"):
            raise InvalidReference(f"rubric criterion {k}: 'weight' must be a positive number, got {weight!r}")
        name = entry.get("name", f"c{k}")
        if not isinstance(name, str) or not name:
            raise InvalidReference(f"rubric criterion {k}: 'name' must be a non-empty string, got {name!r}")
        criteria.append(Criterion(name, entry["criterion"], float(weight)))
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise InvalidReference(f"rubric criterion names must differ, got {names}")
    return criteria


class JudgeRubricTask(JudgeTask):
    """The weighted mean of the judge's score of each rubric criterion; one component per criterion."""

    name = "judge_rubric"
    description = "an LLM judge scores each weighted rubric criterion (components rubric/<name>); weighted mean"
    required_reference_fields = ("rubric",)
    reference_fields = ("rubric", "answer")
    template_name = "rubric"
    template_fields = ("prompt", "completion", "criterion", "gold")

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        super().check_reference(reference)
        read_rubric(reference["rubric"])

    def canary_reference(self) -> Mapping[str, Any]:
        return {"rubric": ["States the answer 4"], "answer": "4"}

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        deadline = self.deadline()
        outcomes: list[TaskOutcome] = [self.blank_outcome()] * len(items)
        calls: list[tuple[int, Criterion]] = []
        for i, item in enumerate(items):
            try:
                rubric = read_rubric(item.reference.get("rubric"))
            except InvalidReference as exc:
                outcomes[i] = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=str(exc))
                continue
            if not blank(item.completion):
                calls += [(i, c) for c in rubric]
        verdicts = self.run_all([
            (lambda i=i, c=c: self.ask({"prompt": items[i].prompt, "completion": items[i].completion,
                                        "criterion": c.text, "gold": as_text(items[i].reference.get("answer", ""))},
                                       deadline)) for i, c in calls])
        per_item: dict[int, list[tuple[Criterion, Any]]] = {}
        for (i, criterion), verdict in zip(calls, verdicts):
            per_item.setdefault(i, []).append((criterion, verdict))
        for i, graded in per_item.items():
            failure = first_failure([v for _, v in graded])
            if failure is not None:
                outcomes[i] = self.failed(failure)
                continue
            total = sum(c.weight for c, _ in graded)
            score = sum(c.weight * v.value for c, v in graded) / total
            components = {f"rubric/{c.name}": v.value for c, v in graded}
            explanation = "weighted mean of the judge's criterion scores: " + ", ".join(
                f"{c.name} {v.value:g} (x{c.weight:g})" for c, v in graded)
            outcomes[i] = self.scored(items[i].completion, score, components, explanation=explanation)
        return outcomes

