"""Short-answer and string tasks: ``exact_match`` and ``f1`` (SQuAD v1.1's definitions, best over
several golds) and ``string_similarity`` (character similarity with partial reward).

Golds: ``answers`` (a list, or SQuAD's ``{"text": [...], "answer_start": [...]}``), ``answer`` (a
string, a list, or TriviaQA's ``{"value", "aliases"}``; NeMo Gym's ``expected_answer`` arrives
as ``answer``) and ``aliases``, all together, blanks dropped.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import each, generic_canaries, hedge_canaries, joined
from reward_service.tasks.explanation import quote
from reward_service.tasks.options import bool_option, choice_option
from reward_service.verifiers.math.special_tokens import strip_special_tokens
from reward_service.verifiers.text import (
    ALGORITHMS,
    EXTRACT_MODES,
    best_over_golds,
    exact_match,
    extract_answer,
    normalize_answer,
    similarity,
    token_f1,
)
from reward_service.verifiers.text.spans import after_thinking, box_run, marker_run, strip_text_wrappers

NORMALIZATIONS = ("squad", "whitespace", "strip")
GOLD_FIELDS = ("answers", "answer", "expected_answer", "aliases")
#: "Paris or Rome", "either Paris or Rome": alternatives offered as one answer.
_OR = re.compile(r"\s*,?\s+or\s+", re.I)
_EITHER = re.compile(r"^either\s+", re.I)
#: The canaries' row: a short-answer question, its gold and other candidates.
QUESTION = "Which Paris landmark was built for the 1889 World's Fair?"
GOLD = "Eiffel Tower"
OTHERS = ("Louvre", "Notre Dame", "Arc de Triomphe")
HEDGE_FORMS = (("'or' between them", joined("Answer: {}", " or ")),
               ("'either ... or'", lambda c: "Answer: either " + ", ".join(c[:-1]) + " or " + c[-1]),
               ("every candidate boxed", each("\\boxed{{{}}}")),
               ("an answer line per candidate", each("Answer: {}", "\n")))


def _gold_values(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return _gold_values(value.get("text", value.get("value"))) + _gold_values(value.get("aliases"))
    items = value if isinstance(value, list) else [value]
    return [str(item) for item in items if isinstance(item, (str, int, float)) and not isinstance(item, bool)]


def listed_candidates(text: str, extracted: str) -> list[str]:
    """The answers given together where one is expected: the listed boxes or answer lines the extracted
    answer ends, or its "or" alternatives; ``[extracted]`` when it is one answer."""
    text = after_thinking(text)
    for run in (box_run(text), marker_run(text)):
        if len(run) > 1 and strip_text_wrappers(run[-1]).strip() == extracted.strip():
            return [strip_text_wrappers(r).strip() for r in run]
    parts = [p for p in _OR.split(_EITHER.sub("", extracted.strip())) if p.strip()]
    return parts if len(parts) > 1 else [extracted]


def golds_of(reference: Mapping[str, Any], task: str) -> list[str]:
    """Every gold of ``reference`` (see the module docstring); InvalidReference when there is none."""
    golds = [g for field in GOLD_FIELDS for g in _gold_values(reference.get(field)) if g.strip()]
    if not golds:
        raise InvalidReference(f"task {task!r} needs a non-empty gold in one of {list(GOLD_FIELDS)}; "
                               f"got {dict(reference)!r:.200}")
    return list(dict.fromkeys(golds))




#: Why an answer task found nothing to compare.
NO_ANSWER_EXPLANATION = "no answer: the completion is blank, special tokens only, or an unfinished reasoning"


class _AnswerTask(Task):
    """Shared options: where the answer is (``extract``), how texts are normalised, case."""

    reference_fields = GOLD_FIELDS
    default_normalize = "squad"

    def __init__(self, extract: str = "auto", normalize: str | None = None, case_sensitive: bool = False) -> None:
        super().__init__()
        self._extract = choice_option(self.name, "extract", extract, EXTRACT_MODES)
        self._normalize = choice_option(self.name, "normalize", normalize or self.default_normalize, NORMALIZATIONS)
        self._case_sensitive = bool_option(self.name, "case_sensitive", case_sensitive)

    def normalized(self, text: str) -> str:
        if self._normalize == "squad":
            return normalize_answer(text, case_sensitive=self._case_sensitive)
        text = " ".join(text.split()) if self._normalize == "whitespace" else text.strip()
        return text if self._case_sensitive else text.lower()

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        golds_of(reference, self.name)

    def best(self, completion: str, reference: Mapping[str, Any],
             metric: Callable[[str, str], float]) -> tuple[str, list[str], float, int] | None:
        """(extracted, golds, best value, index of the best gold), or None when nothing was extracted.

        Chat special tokens are no answer. Several answers given as one (``listed_candidates``: "Paris
        or Rome", listed boxes) are a hedge, worth their worst candidate, unless the whole answer is a
        gold or a gold itself holds "or".
        """
        golds = golds_of(reference, self.name)
        text = strip_special_tokens(completion)
        extracted = extract_answer(text, self._extract)
        if extracted is None:
            return None
        normalized_golds = [self.normalized(g) for g in golds]
        value, index = best_over_golds(self.normalized(extracted), normalized_golds, metric)
        candidates = listed_candidates(text, extracted)
        if len(candidates) > 1 and not any(_OR.search(g) for g in golds):
            value, index = min(best_over_golds(self.normalized(c), normalized_golds, metric) for c in candidates)
            extracted = " | ".join(candidates)
        return extracted, golds, value, index

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        return []

    #: The most a canary may score where the metric pays partial credit by overlap: a comma list of
    #: candidates (``list_ceiling``), and any other text that is not blank (``overlap_ceiling``).
    list_ceiling: ClassVar[float] = 0.0
    overlap_ceiling: ClassVar[float] = 0.0

    def canaries(self) -> list[Canary]:
        row = {"answers": [GOLD]}
        *blank, huge = generic_canaries(row, prompt=QUESTION)
        return [*blank, dataclasses.replace(huge, ceiling=self.overlap_ceiling),
                *hedge_canaries(row, GOLD, OTHERS, HEDGE_FORMS, prompt=QUESTION, ceiling=self.overlap_ceiling),
                *hedge_canaries(row, GOLD, OTHERS, [("a comma list", joined("Answer: {}", ", "))], prompt=QUESTION,
                                ceiling=max(self.list_ceiling, self.overlap_ceiling)),
                Canary("the question echoed", QUESTION, row, QUESTION, self.overlap_ceiling)]

    def self_check(self) -> list[str]:
        failures = []
        for completion, golds, want in self.known_answers():
            got = self.score(completion, {"answers": golds})
            if abs(got.score - want) > 1e-9:
                failures.append(f"{completion!r} against {golds}: got {got.score}, want {want}")
        return failures


class ExactMatchTask(_AnswerTask):
    """SQuAD exact match: 1 when the extracted answer equals one gold after normalisation."""

    name = "exact_match"
    description = ("1 if the answer equals one of the golds after SQuAD normalisation (lower case, no punctuation, "
                   "no a/an/the, single spaces), else 0")

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        found = self.best(completion, reference, exact_match)
        if found is None:
            return TaskOutcome.no_answer(explanation=NO_ANSWER_EXPLANATION)
        extracted, golds, value, index = found
        detail = f"matches gold {golds[index]!r:.80}" if value else f"none of {len(golds)} gold(s) matches"
        how = f"after {self._normalize} normalization" if self._normalize != "strip" else "stripped"
        explanation = (f"extracted {quote(extracted)}; equals gold {quote(golds[index])} {how}" if value else
                       f"extracted {quote(extracted)}; equals none of {len(golds)} gold(s) {how}, e.g. "
                       f"{quote(golds[0])}")
        return TaskOutcome(value, components={"exact_match": value}, extracted=extracted, detail=detail,
                           explanation=explanation)

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        if self._normalize != "squad" or self._case_sensitive:
            return []
        return [("The Eiffel Tower!", ["eiffel tower"], 1.0), ("Answer: an apple.", ["Apple"], 1.0),
                ("Eiffel", ["Eiffel Tower"], 0.0), ("Denver Broncos", ["Carolina Panthers", "Denver  broncos"], 1.0)]


class F1Task(_AnswerTask):
    """SQuAD token F1 against the best gold (partial credit), with exact match as a component."""

    name = "f1"
    description = "token F1 (SQuAD normalisation) of the answer against the best of the golds, in [0, 1]"
    list_ceiling = 0.5  # a list of k candidates holding the gold: precision 1/k of the words, F1 about 2/(k+1)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        found = self.best(completion, reference, token_f1)
        if found is None:
            return TaskOutcome.no_answer(explanation=NO_ANSWER_EXPLANATION)
        extracted, golds, value, index = found
        em = best_over_golds(self.normalized(extracted), [self.normalized(g) for g in golds], exact_match)[0]
        return TaskOutcome(value, components={"f1": value, "exact_match": em}, extracted=extracted,
                           detail=f"best gold {golds[index]!r:.80}",
                           explanation=f"extracted {quote(extracted)}; token F1 {value:.3g} against the best gold "
                                       f"{quote(golds[index])} (exact match {em:g}, of {len(golds)} gold(s))")

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        if self._normalize != "squad" or self._case_sensitive:
            return []
        return [("the cat sat", ["cat sat on mat"], 2 * 1.0 * 0.5 / 1.5), ("The Cat.", ["cat"], 1.0),
                ("dog", ["cat"], 0.0), ("red red", ["red", "red red blue"], 2 * 1.0 * (2 / 3) / (1 + 2 / 3))]


class StringSimilarityTask(_AnswerTask):
    """Character similarity of the answer to the best gold: partial reward, optionally thresholded."""

    name = "string_similarity"
    description = ("character similarity (difflib ratio or InDel) of the answer to the best gold, in [0, 1]; "
                   "0 below the threshold")
    default_normalize = "whitespace"
    #: Any text shares characters with the gold, so its similarity is never quite 0 (``threshold`` pays
    #: nothing below it): a canary may score up to half.
    list_ceiling = overlap_ceiling = 0.5

    def __init__(self, algorithm: str = "difflib", threshold: float = 0.0, binary: bool = False,
                 extract: str = "auto", normalize: str | None = None, case_sensitive: bool = False) -> None:
        super().__init__(extract, normalize, case_sensitive)
        self._algorithm = choice_option(self.name, "algorithm", algorithm, ALGORITHMS)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidTaskOptions(f"option 'threshold' must be a number in [0, 1], got {threshold!r}")
        self._threshold = float(threshold)
        self._binary = bool_option(self.name, "binary", binary)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        found = self.best(completion, reference, lambda p, g: similarity(g, p, self._algorithm))
        if found is None:
            return TaskOutcome.no_answer()
        extracted, golds, value, index = found
        passed = value >= self._threshold
        reward = (1.0 if passed else 0.0) if self._binary else (value if passed else 0.0)
        return TaskOutcome(reward, components={"similarity": value}, extracted=extracted,
                           detail=f"{self._algorithm} similarity {value:.4f} to gold {golds[index]!r:.80}"
                                  + ("" if passed else f" (below the threshold {self._threshold})"))

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        if self._case_sensitive or self._normalize != "whitespace" or self._threshold or self._binary:
            return []
        kitten = 8 / 13 if self._algorithm == "indel" else 2 * 4 / 13  # LCS 'ittn'; difflib blocks 'itt', 'n'
        return [("Paris", ["paris"], 1.0), ("kitten", ["sitting"], kitten), ("xyz", ["abc"], 0.0)]
