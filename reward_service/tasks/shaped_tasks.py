"""Shaping rewards over another task's outcome: ``cosine_scaled``, ``reasoning_accuracy`` and
``kimi_length``. The base is any registered task (a variant or a plugin too), ``math`` unless the
``base`` option names another; the registry hands the base's instance over::

    tasks:
      cosine_gsm8k: {task: cosine_scaled, options: {base: gsm8k, max_len: 2000}}
      think_then_math: {task: reasoning_accuracy, options: {base: math_strict}}

A base outcome that is unscored (or not a finite number) is passed on unchanged: a failure of
ours is never shaped into a number. "Correct" means the base scored at least ``correct_threshold``
(1 by default: a right math answer, every test of a code task). Sources: ``docs/tasks.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from reward_core.contract import RolloutStatus, TaskInfo
from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskInput, TaskOutcome
from reward_service.tasks.canaries import generic_canaries, wrapped
from reward_service.tasks.options import bool_option, int_option, number_option, strings_option
from reward_service.tasks.text_length import TextLength
from reward_service.verifiers.shaping import CosineSchedule, answer_after_reasoning, group_length_rewards


def _scored(outcome: TaskOutcome) -> bool:
    return outcome.status.scored and math.isfinite(outcome.score)


class ShapedTask(Task):
    """A task that reshapes its ``base`` task's outcomes; it reads what its base reads and runs where
    its base runs (a worker, or the server for a base that calls another service)."""

    default_base = "math"

    def __init__(self, base: Task) -> None:
        super().__init__()
        if not isinstance(base, Task):
            raise InvalidTaskOptions(f"task {self.name!r}: option 'base' must name a registered task, got {base!r}")
        if base.groupwise:
            raise InvalidTaskOptions(f"task {self.name!r}: a groupwise base ({type(base).__name__}) has no score "
                                     "before its group stage; shape a per-rollout task, or add both to a composite")
        self._base = base

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        self._base.check_reference(reference)

    @property
    def batch_size(self) -> int:  # type: ignore[override]
        return self._base.batch_size

    @property
    def time_limit_s(self) -> float:  # type: ignore[override]
        return self._base.time_limit_s

    @property
    def runs_in_server(self) -> bool:  # type: ignore[override]
        return self._base.runs_in_server

    def info(self, name: str | None = None) -> TaskInfo:
        base = self._base.info()
        return TaskInfo(name=name or self.name, description=f"{self.description} (base: {base.name})",
                        reference_fields=base.reference_fields,
                        required_reference_fields=base.required_reference_fields, groupwise=self.groupwise)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        outcomes = self._base.score_batch(items)
        return [self.shape(item, base) if _scored(base) else base for item, base in zip(items, outcomes)]

    def shape(self, item: TaskInput, base: TaskOutcome) -> TaskOutcome:
        """The shaped outcome of one item whose base outcome is scored."""
        raise NotImplementedError

    @property
    def canary_exemption(self) -> str:  # type: ignore[override]
        return f"its base task ({self._base.name or type(self._base).__name__}) declares no canaries"


class CosineScaledTask(ShapedTask):
    """Correctness scaled by length on a cosine (open-r1 / TRL ``get_cosine_scaled_reward``): a short
    right answer earns ``max_value_correct``, a long one ``min_value_correct``; a short wrong one
    ``min_value_wrong``, a long one ``max_value_wrong``. Length in characters (open-r1), or tokens
    with ``tokenizer`` (TRL); ``clamp`` keeps lengths past ``max_len`` at the long end (TRL)."""

    name = "cosine_scaled"
    description = "correctness scaled by length on a cosine: short right answers earn most, short wrong ones lose most"

    def __init__(self, base: Task, max_len: int = 1000, min_value_wrong: float = -1.0, max_value_wrong: float = -0.5,
                 min_value_correct: float = 0.5, max_value_correct: float = 1.0, clamp: bool = True,
                 tokenizer: str = "", correct_threshold: float = 1.0) -> None:
        super().__init__(base)
        values = {"min_value_wrong": min_value_wrong, "max_value_wrong": max_value_wrong,
                  "min_value_correct": min_value_correct, "max_value_correct": max_value_correct}
        self._schedule = CosineSchedule(int_option(self.name, "max_len", max_len, 1),
                                        **{k: number_option(self.name, k, v) for k, v in values.items()},
                                        clamp=bool_option(self.name, "clamp", clamp))
        self._length = TextLength(tokenizer)
        self._threshold = number_option(self.name, "correct_threshold", correct_threshold)

    def version_inputs(self) -> tuple[str, ...]:
        return self._length.version_inputs()  # the tokenizer file counts in the verifier version

    def shape(self, item: TaskInput, base: TaskOutcome) -> TaskOutcome:
        correct = base.score >= self._threshold
        length = self._length(item.completion)
        return TaskOutcome(self._schedule.reward(correct, length), base.status,
                           {"correct": float(correct), "length": float(length)}, base.extracted, base.detail)

    def canaries(self) -> list[Canary]:
        """The base's canaries (each one the base must not count correct), paid as a wrong answer at most."""
        wrong = max(self._schedule.min_value_wrong, self._schedule.max_value_wrong)
        return wrapped([c for c in self._base.canaries() if c.ceiling < self._threshold], str, ceiling=wrong)


class ReasoningAccuracyTask(ShapedTask):
    """The base task graded on the text after the reasoning: after the last ``</think>`` (or the first
    of ``delimiters`` that occurs), as TRL's ``reasoning_accuracy_reward``. Without the delimiter the
    reasoning never finished: NO_ANSWER, scored ``incomplete_score`` (TRL: 0)."""

    name = "reasoning_accuracy"
    description = "the base task graded on the answer after </think>; unfinished reasoning scores incomplete_score"

    def __init__(self, base: Task, delimiters: Sequence[str] = ("</think>",), incomplete_score: float = 0.0) -> None:
        super().__init__(base)
        self._delimiters = strings_option(self.name, "delimiters", delimiters)
        self._incomplete = TaskOutcome(number_option(self.name, "incomplete_score", incomplete_score),
                                       RolloutStatus.NO_ANSWER,
                                       detail=f"reasoning not finished: no {self._delimiters[0]!r}")

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        answers = [answer_after_reasoning(item.completion, self._delimiters) for item in items]
        finished = [i for i, answer in enumerate(answers) if answer is not None]
        stripped = [dataclasses.replace(items[i], completion=answers[i]) for i in finished]
        graded = self._base.score_batch(stripped) if stripped else []
        outcomes = [self._incomplete] * len(items)
        for i, outcome in zip(finished, graded):
            offset = len(items[i].completion) - len(answers[i] or "")
            steps = tuple(dataclasses.replace(s, start=s.start + offset, end=s.end + offset) for s in outcome.steps)
            outcomes[i] = dataclasses.replace(outcome, steps=steps) if steps else outcome
        return outcomes

    def canaries(self) -> list[Canary]:
        """The base's canaries after finished reasoning, and the generic ones with none (unfinished: not
        rewarded)."""
        base = list(self._base.canaries())
        if not base:
            return []
        reasoning = f"<think>\nLet me work it out.\n{self._delimiters[0]}\n"
        return [*generic_canaries(base[0].reference, prompt=base[0].prompt),
                *wrapped(base, lambda text: reasoning + text, suffix=f" after {self._delimiters[0]}")]


class KimiLengthTask(ShapedTask):
    """Kimi 1.5's length reward (open-r1 ``len_reward``), computed over each group (rollouts of one
    request sharing a ``group_id``): ``lam = 0.5 - (len - min_len) / (max_len - min_len)``; a correct
    member gets ``lam``, a wrong one ``min(0, lam)``; 0 for all when every length is equal.

    The worker stage grades the base and measures the length (characters, or tokens with
    ``tokenizer``); the score exists only after the group stage (``score`` alone gives NaN, which
    the server would answer ERROR). Only the group's scored members count for ``min_len``/``max_len``;
    a rollout without a ``group_id`` is refused (INVALID_REFERENCE) before scoring.
    """

    name = "kimi_length"
    description = ("Kimi 1.5 length reward over the group (needs group_id): 0.5 - (len - min)/(max - min) "
                   "if correct, else min(0, that)")
    groupwise = True

    canary_exemption = ("groupwise: its reward exists only relative to the group (a canary alone scores 0); "
                        "correctness is its base's, whose canaries run under the base's name")

    def __init__(self, base: Task, tokenizer: str = "", correct_threshold: float = 1.0) -> None:
        super().__init__(base)
        self._length = TextLength(tokenizer)
        self._threshold = number_option(self.name, "correct_threshold", correct_threshold)

    def version_inputs(self) -> tuple[str, ...]:
        return self._length.version_inputs()  # the tokenizer file counts in the verifier version

    def shape(self, item: TaskInput, base: TaskOutcome) -> TaskOutcome:
        correct = base.score >= self._threshold
        length = self._length(item.completion)
        return TaskOutcome(math.nan, base.status, {"correct": float(correct), "length": float(length)},
                           base.extracted, base.detail)

    @property
    def group_stage_waits(self) -> bool:  # type: ignore[override]
        return False  # arithmetic over the group's lengths, whatever its base waits on

    def score_group(self, items: Sequence[TaskInput], outcomes: Sequence[TaskOutcome]) -> list[TaskOutcome]:
        members = [i for i, o in enumerate(outcomes) if {"correct", "length"} <= set(o.components)]
        lengths = [int(outcomes[i].components["length"]) for i in members]
        rewards = group_length_rewards(lengths, [outcomes[i].components["correct"] >= 1.0 for i in members])
        shaped = list(outcomes)
        for k, (i, reward) in enumerate(zip(members, rewards)):
            where = f"length {lengths[k]} of {min(lengths)}..{max(lengths)} in a group of {len(members)}"
            detail = "; ".join(d for d in (outcomes[i].detail, where) if d)
            shaped[i] = dataclasses.replace(outcomes[i], score=reward, detail=detail)
        return shaped
