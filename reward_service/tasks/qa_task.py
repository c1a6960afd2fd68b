"""Short-answer and string tasks: ``exact_match`` and ``f1`` (SQuAD v1.1's definitions, best over
several golds) and ``string_similarity`` (character similarity with partial reward).

Golds: ``answers`` (a list, or SQuAD's ``{"text": [...], "answer_start": [...]}``), ``answer`` (a
string, a list, or TriviaQA's ``{"value", "aliases"}``; NeMo Gym's ``expected_answer`` arrives
as ``answer``) and ``aliases``, all together, blanks dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reward_service.task_api import InvalidReference, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.options import bool_option, choice_option
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

NORMALIZATIONS = ("squad", "whitespace", "strip")
GOLD_FIELDS = ("answers", "answer", "expected_answer", "aliases")


def _gold_values(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return _gold_values(value.get("text", value.get("value"))) + _gold_values(value.get("aliases"))
    items = value if isinstance(value, list) else [value]
    return [str(item) for item in items if isinstance(item, (str, int, float)) and not isinstance(item, bool)]


def golds_of(reference: Mapping[str, Any], task: str) -> list[str]:
    """Every gold of ``reference`` (see the module docstring); InvalidReference when there is none."""
    golds = [g for field in GOLD_FIELDS for g in _gold_values(reference.get(field)) if g.strip()]
    if not golds:
        raise InvalidReference(f"task {task!r} needs a non-empty gold in one of {list(GOLD_FIELDS)}; "
                               f"got {dict(reference)!r:.200}")
    return list(dict.fromkeys(golds))




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
        """(extracted, golds, best value, index of the best gold), or None when nothing was extracted."""
        golds = golds_of(reference, self.name)
        extracted = extract_answer(completion, self._extract)
        if extracted is None:
            return None
        value, index = best_over_golds(self.normalized(extracted), [self.normalized(g) for g in golds], metric)
        return extracted, golds, value, index

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        return []

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
            return TaskOutcome.no_answer()
        extracted, golds, value, index = found
        detail = f"matches gold {golds[index]!r:.80}" if value else f"none of {len(golds)} gold(s) matches"
        return TaskOutcome(value, components={"exact_match": value}, extracted=extracted, detail=detail)

    def known_answers(self) -> list[tuple[str, list[str], float]]:
        if self._normalize != "squad" or self._case_sensitive:
            return []
        return [("The Eiffel Tower!", ["eiffel tower"], 1.0), ("Answer: an apple.", ["Apple"], 1.0),
                ("Eiffel", ["Eiffel Tower"], 0.0), ("Denver Broncos", ["Carolina Panthers", "Denver  broncos"], 1.0)]


class F1Task(_AnswerTask):
    """SQuAD token F1 against the best gold (partial credit), with exact match as a component."""

    name = "f1"
    description = "token F1 (SQuAD normalisation) of the answer against the best of the golds, in [0, 1]"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        found = self.best(completion, reference, token_f1)
        if found is None:
            return TaskOutcome.no_answer()
        extracted, golds, value, index = found
        em = best_over_golds(self.normalized(extracted), [self.normalized(g) for g in golds], exact_match)[0]
        return TaskOutcome(value, components={"f1": value, "exact_match": em}, extracted=extracted,
                           detail=f"best gold {golds[index]!r:.80}")

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
