"""The ``rg:<dataset>`` task family: every reasoning-gym dataset, scored by its own ``score_answer``.

The answer is the last ``<answer>...</answer>`` of the completion (reasoning-gym's convention);
the reference carries the dataset's entry (shapes: ``reasoning_gym_entries``). The score is
``score_answer``'s, partial credit included (``partial_credit: false``: 1 only for a full score).
``score_answer`` is third-party code run on model output: an exception it raises is ERROR
(unscored, with the reason), never a 0; a hang is the worker pool's per-item time limit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from reward_core.contract import RolloutStatus, TaskInfo
from reward_service.task_api import FamilyTask, InvalidReference, InvalidTaskOptions, TaskOutcome
from reward_service.tasks.reasoning_gym_entries import (
    ANSWER_TAG,
    BROKEN_SCORERS,
    DATASETS,
    NEEDS_METADATA,
    PINNED_VERSION,
    dataset_config,
    extract_answer,
    installed_version,
    reference_entry,
)

logger = logging.getLogger(__name__)

#: Dataset objects (the scorers) one task keeps, one per distinct config its entries name.
MAX_CONFIGS = 16


class ScorerUnavailable(RuntimeError):
    """The dataset's scorer cannot be made here (reasoning-gym missing or failing to load)."""


class ReasoningGymTask(FamilyTask):
    """One reasoning-gym dataset (the member): extraction, then the dataset's ``score_answer``."""

    description = "reasoning-gym dataset scored by its own score_answer"
    reference_fields = ("entry", "answer", "question", "metadata")

    @classmethod
    def members(cls) -> Sequence[str]:
        return DATASETS

    def __init__(self, dataset: str, answer_tag: str = ANSWER_TAG, fallback_to_completion: bool = False,
                 partial_credit: bool = True) -> None:
        super().__init__()
        if dataset not in DATASETS:
            raise InvalidTaskOptions(f"reasoning-gym has no dataset {dataset!r} (version {PINNED_VERSION})")
        if not isinstance(answer_tag, str) or not all(c.isalnum() or c in "_-" for c in answer_tag):
            raise InvalidTaskOptions(f"answer_tag must be a tag name such as 'answer' ('' for the whole "
                                     f"completion), got {answer_tag!r}")
        for key, value in (("fallback_to_completion", fallback_to_completion), ("partial_credit", partial_credit)):
            if not isinstance(value, bool):
                raise InvalidTaskOptions(f"option {key!r} must be true or false, got {value!r}")
        self.dataset = dataset
        self.name = f"rg:{dataset}"
        self._tag, self._fallback, self._partial = answer_tag, fallback_to_completion, partial_credit
        self._scorers: dict[str, Any] = {}

    def info(self, name: str | None = None) -> TaskInfo:
        needs = "the whole entry" if self.dataset in NEEDS_METADATA else "the entry, or only its gold answer"
        where = f"the last <{self._tag}>...</{self._tag}>" if self._tag else "the completion"
        broken = (f"; BROKEN in reasoning-gym {PINNED_VERSION}: {BROKEN_SCORERS[self.dataset]}"
                  if self.dataset in BROKEN_SCORERS else "")
        return dataclasses.replace(super().info(name), description=(
            f"reasoning-gym {self.dataset}: {where} scored by the dataset's own score_answer "
            f"(reference: {needs}){broken}"))

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        reference_entry(reference, self.dataset, self.name)

    def self_check(self) -> list[str]:
        """A reasoning-gym other than the pinned one is a failure; none installed is not (the rg
        extra is optional: each rg rollout is then ERROR, saying what to install)."""
        installed = installed_version()
        if installed is not None and installed != PINNED_VERSION:
            return [f"reasoning-gym {installed} is installed; this suite is pinned to {PINNED_VERSION}"]
        return []

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        entry = reference_entry(reference, self.dataset, self.name)
        answer = extract_answer(completion, self._tag, self._fallback)
        if answer is None:
            return TaskOutcome.no_answer(f"no <{self._tag}>...</{self._tag}> in the completion"
                                         if self._tag else "empty completion")
        try:
            scorer = self._scorer(dataset_config(entry))
        except ScorerUnavailable as exc:
            return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=answer, detail=str(exc))
        try:
            raw = scorer.score_answer(answer, entry)
        except Exception as exc:  # noqa: BLE001 -- third-party scoring code on model output: unscored, not 0
            return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=answer,
                               detail=f"reasoning-gym {self.dataset}.score_answer raised "
                                      f"{type(exc).__name__}: {str(exc)[:200]}")
        return self._outcome(raw, answer)

    def _outcome(self, raw: Any, answer: str) -> TaskOutcome:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=answer,
                               detail=f"reasoning-gym {self.dataset}.score_answer returned {raw!r:.80}, not a score")
        raw = min(1.0, max(0.0, float(raw)))
        score = raw if self._partial else float(raw >= 1.0)
        detail = "" if score == raw else f"score_answer {raw:g}"
        return TaskOutcome(score, extracted=answer, detail=detail)

    def _scorer(self, config: Mapping[str, Any]) -> Any:
        """The dataset object whose ``score_answer`` scores entries made with ``config`` (made once).

        Raises InvalidReference for a config the dataset rejects, ScorerUnavailable when
        reasoning-gym is missing or its default config fails to load.
        """
        key = json.dumps(config, sort_keys=True, default=str) if config else ""
        scorer = self._scorers.get(key)
        if scorer is not None:
            return scorer
        try:
            import reasoning_gym
        except ImportError as exc:
            raise ScorerUnavailable(f"reasoning-gym is not installed here ({exc}): "
                                    f"pip install 'reward-suite[rg]'") from None
        try:
            scorer = reasoning_gym.create_dataset(self.dataset, **config)
        except Exception as exc:  # noqa: BLE001 -- any failure of a config the reference brought is the reference's
            if config:
                raise InvalidReference(f"task {self.name!r}: the entry's dataset_config {config!r:.200} is not a "
                                       f"valid {self.dataset} config: {type(exc).__name__}: {exc}") from None
            raise ScorerUnavailable(f"reasoning-gym {self.dataset} failed to load: "
                                    f"{type(exc).__name__}: {exc}") from None
        if not self._scorers and self.dataset in BROKEN_SCORERS:
            logger.warning("rg:%s: %s (reasoning-gym %s); its rewards carry no signal", self.dataset,
                           BROKEN_SCORERS[self.dataset], PINNED_VERSION)
        if len(self._scorers) >= MAX_CONFIGS:
            self._scorers.pop(next(iter(self._scorers)))
        self._scorers[key] = scorer
        return scorer
