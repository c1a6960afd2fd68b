"""The ``rg:<dataset>`` task family: every reasoning-gym dataset, scored by its own ``score_answer``.

The answer is the last ``<answer>...</answer>`` of the completion (reasoning-gym's convention);
the reference carries the dataset's entry (shapes: ``reasoning_gym_entries``). The score is
``score_answer``'s, partial credit included (``partial_credit: false``: 1 only for a full score),
except the default scorer's credit for an answer that merely contains the gold (``len(gold) /
len(answer)``: a hedge, or "80" for the gold 8, earns it), which is not paid. No answer: a missing
or blank tag, chat special tokens only, or the prompt's own example answer ("answer here" in
reasoning-gym's instruction); an answer over ``MAX_ANSWER_CHARS`` scores 0 unread.
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
from reward_service.task_api import Canary, FamilyTask, InvalidReference, InvalidTaskOptions, TaskOutcome
from reward_service.tasks.canaries import HUGE_CHARS, SPECIAL_TOKENS_ONLY, generic_canaries, huge_text
from reward_service.tasks.reasoning_gym_data import DataError, make_rows
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
from reward_service.verifiers.math.special_tokens import strip_special_tokens

logger = logging.getLogger(__name__)

#: Dataset objects (the scorers) one task keeps, one per distinct config its entries name.
MAX_CONFIGS = 16
#: The longest answer handed to a dataset's ``score_answer``: reasoning-gym's answers are short, and
#: third-party scoring may take quadratic time on a long one. A longer answer scores 0.
MAX_ANSWER_CHARS = 100_000
#: reasoning-gym's default ``score_answer``: 1 for the gold, else len(gold)/len(answer) when the answer
#: contains the gold -- partial credit a hedge earns, which this task does not pay.
DEFAULT_SCORER = "ProceduralDataset.score_answer"


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

    canary_exemption = ("its canaries are built on entries reasoning-gym generates, and reasoning-gym is not "
                        "installed here or failed to generate them")

    def canaries(self) -> list[Canary]:
        """Entries of this dataset from reasoning-gym (seed 0): the first one's gold hedged among the others'
        golds, its question echoed, and blank, special-token and huge answers, in the answer tag and without."""
        try:
            rows = list(make_rows(self.name, 6, seed=0))
        except DataError:
            return []
        reference, prompt = rows[0]["reference"], rows[0]["prompt"]
        entry = reference["entry"]
        tag = (lambda text: f"<{self._tag}>{text}</{self._tag}>") if self._tag else str
        cases = [("special tokens in the answer", tag(SPECIAL_TOKENS_ONLY)), ("an empty answer", tag("")),
                 ("the question echoed as the answer", tag(entry["question"])), ("the prompt echoed", prompt),
                 (f"huge answer ({HUGE_CHARS:,} chars) as the answer", tag(huge_text(chars=HUGE_CHARS - 20)))]
        gold = entry.get("answer")
        others = [str(a) for r in rows[1:] if (a := r["reference"]["entry"].get("answer")) not in (None, gold)]
        others = list(dict.fromkeys(o for o in others if o != str(gold)))[:3]
        if gold is not None and len(others) >= 2:
            listed = [*others[:1], str(gold), *others[1:]]
            cases += [("hedge: golds of other entries around the gold, 'or'", tag(" or ".join(listed))),
                      ("hedge: golds of other entries, one a line, the gold last",
                       tag("\n".join([*others, str(gold)])))]
        return [*generic_canaries(reference, prompt=prompt), *(Canary(n, c, reference, prompt) for n, c in cases)]

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
        answer = strip_special_tokens(answer) if answer else None  # chat special tokens are no answer
        if not answer:
            return TaskOutcome.no_answer(f"no <{self._tag}>...</{self._tag}> in the completion"
                                         if self._tag else "empty completion")
        if self._tag and f"<{self._tag}>{answer}</{self._tag}>" in prompt:
            return TaskOutcome.no_answer(f"the answer is the prompt's own example ({answer[:40]!r})")
        if len(answer) > MAX_ANSWER_CHARS:
            return TaskOutcome(0.0, extracted=answer[:80], detail=f"an answer of {len(answer):,} characters "
                                                                 f"(over {MAX_ANSWER_CHARS:,}) is not scored")
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
        method = getattr(scorer.score_answer, "__func__", scorer.score_answer)
        return self._outcome(raw, answer, getattr(method, "__qualname__", "") == DEFAULT_SCORER)

    def _outcome(self, raw: Any, answer: str, default_scorer: bool = False) -> TaskOutcome:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            return TaskOutcome(0.0, RolloutStatus.ERROR, extracted=answer,
                               detail=f"reasoning-gym {self.dataset}.score_answer returned {raw!r:.80}, not a score")
        raw = min(1.0, max(0.0, float(raw)))
        if default_scorer and raw < 1.0:
            return TaskOutcome(0.0, extracted=answer, detail=f"score_answer {raw:g} not paid: reasoning-gym's "
                                                             "credit for an answer that contains the gold, which a "
                                                             "hedge earns")
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
