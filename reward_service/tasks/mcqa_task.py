"""The ``mcqa`` task: a multiple-choice answer (a letter, or an option's text) against the gold letter.

Row fields, as NeMo Gym's ``mcqa`` resources server reads them (through the HTTP door its
``expected_answer`` arrives as ``answer``): ``options`` (``[{"A": "..."}, ...]``; also an object or a
list of texts; MMLU's ``choices``), the gold ``answer``, ``grading_mode`` and
``template_metadata`` (``output_regex``, ``answer_prefix``). See ``reward_service.verifiers.choice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.task_api import Canary, InvalidReference, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import each, generic_canaries, hedge_canaries, joined
from reward_service.verifiers.choice import GRADING_MODES, BadChoices, Choices, gold_letter, grade_choice, parse_choices

GOLD_FIELDS = ("answer", "expected_answer")
#: The self-check's row, and its question as a prompt shows it (the canaries' echo).
OPTIONS = {"A": "Circle", "B": "Square", "C": "Triangle", "D": "Hexagon"}
QUESTION = "Which shape has three sides?\n" + "\n".join(f"{letter}. {text}" for letter, text in OPTIONS.items())
HEDGE_FORMS = (
    ("letters in a row", joined("{}", " ")),
    ("'Answer:' a comma list", joined("Answer: {}", ", ")),
    ("'the answer is' with 'or'", joined("The answer is {}.", " or ")),
    ("every letter boxed", each("\\boxed{{{}}}")),
    ("one box of every letter", joined("\\boxed{{{}}}", "")),
    ("an answer line per letter", each("Answer: {}", "\n")),
    ("every option's text", lambda letters: ", ".join(OPTIONS[x] for x in letters)),
    ("the options listed", lambda letters: "\n".join(f"{x}. {OPTIONS[x]}" for x in letters)),
)


class McqaTask(Task):
    """Multiple choice: read the chosen letter, 1 if it is the gold. A hedge ("A or C") scores 0.

    ``grading_mode`` forces a mode for every row (as Gym's server config does); otherwise the row's
    ``grading_mode``, else ``default_grading_mode``: ``auto`` (our reading of the forms models write)
    or one of NeMo Gym's four. ``letters`` are the choices of a row without ``options``.
    """

    name = "mcqa"
    description = ("multiple choice: 1 if the answer's letter (or option text) is the gold letter, else 0; "
                   "NeMo Gym's grading modes and template regex, or 'auto'")
    reference_fields = ("answer", "options", "choices", "grading_mode", "template_metadata")
    required_reference_fields = ("answer",)

    def __init__(self, grading_mode: str | None = None, default_grading_mode: str = "auto",
                 letters: str = "ABCDEFGHIJ", use_template_regex: bool = True) -> None:
        super().__init__()
        for key, value in (("grading_mode", grading_mode), ("default_grading_mode", default_grading_mode)):
            if value is not None and value not in GRADING_MODES:
                raise InvalidTaskOptions(f"option {key!r} must be one of {list(GRADING_MODES)}, got {value!r}")
        if not (isinstance(letters, str) and letters.isalpha() and letters.isascii()):
            raise InvalidTaskOptions(f"option 'letters' must be a string of letters such as 'ABCD', got {letters!r}")
        if not isinstance(use_template_regex, bool):
            raise InvalidTaskOptions(f"option 'use_template_regex' must be true or false, got {use_template_regex!r}")
        self._forced_mode = grading_mode
        self._default_mode = default_grading_mode
        self._letters = letters.upper()
        self._use_template = use_template_regex

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        self._row(reference)

    def _row(self, reference: Mapping[str, Any]) -> tuple[Choices, str, str, Any, str | None]:
        """(choices, gold letter, mode, template patterns, answer prefix); InvalidReference if unusable."""
        options = reference.get("options", reference.get("choices"))
        answer = next((reference[f] for f in GOLD_FIELDS if reference.get(f) not in (None, "")), None)
        if answer is None:
            raise InvalidReference(f"task 'mcqa' needs the gold letter in 'answer' (NeMo Gym: 'expected_answer'); "
                                   f"got fields {sorted(reference)}")
        try:
            choices = parse_choices(options, self._letters)
            gold = gold_letter(answer, choices)
        except BadChoices as exc:
            raise InvalidReference(f"mcqa: {exc}") from None
        mode = self._forced_mode or reference.get("grading_mode") or self._default_mode
        if mode not in GRADING_MODES:
            raise InvalidReference(f"mcqa: grading_mode {mode!r} is none of {list(GRADING_MODES)}")
        template = reference.get("template_metadata")
        template = template if isinstance(template, Mapping) else {}
        patterns = template.get("output_regex") if self._use_template else None
        prefix = template.get("answer_prefix")
        return choices, gold, mode, patterns, prefix if isinstance(prefix, str) else None

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        choices, gold, mode, patterns, prefix = self._row(reference)
        result = grade_choice(completion, gold, choices, mode, template_patterns=patterns, answer_prefix=prefix)
        if result.hedge:
            return TaskOutcome(0.0, extracted="|".join(result.hedge),
                               detail=f"hedge: lists options {', '.join(result.hedge)} ({result.rule})",
                               explanation=f"hedge: lists options {', '.join(result.hedge)} (read by {result.rule}); "
                                           f"gold {gold}; a hedge scores 0")
        if result.letter is None:
            return TaskOutcome(0.0, RolloutStatus.NO_ANSWER, detail=f"no option letter found ({mode})",
                               explanation=f"no answer: no option letter or option text found (grading mode {mode})")
        verdict = "equals" if result.correct else "is not"
        return TaskOutcome.binary(result.correct, extracted=result.letter,
                                  detail=f"read {result.letter} by {result.rule}; gold {gold}",
                                  explanation=f"read option {result.letter} by {result.rule}; {verdict} "
                                              f"gold {gold}")

    def canaries(self) -> list[Canary]:
        options = [{letter: text} for letter, text in OPTIONS.items()]
        row = {"options": options, "answer": "C"}
        return [*generic_canaries(row, prompt=QUESTION),
                *hedge_canaries(row, "C", ["A", "B", "D"], HEDGE_FORMS, prompt=QUESTION),
                Canary("an answer offering another", "Answer: C (or maybe A)", row, QUESTION),
                Canary("the question echoed (the gold its last option)", QUESTION, {"options": options, "answer": "D"},
                       QUESTION)]

    def self_check(self) -> list[str]:
        options = [{"A": "Circle"}, {"B": "Square"}, {"C": "Triangle"}, {"D": "Hexagon"}]
        cases = [("Answer: C", "auto", 1.0), ("the answer is (c).", "auto", 1.0), ("\\boxed{C}", "auto", 1.0),
                 ("**C**", "auto", 1.0), ("C. C", "auto", 1.0), ("The answer is Triangle", "auto", 1.0),
                 ("The answer is A or C", "auto", 0.0), ("Answer: B", "auto", 0.0),
                 ("Final: \\boxed{ [C] }", "strict_single_letter_boxed", 1.0),
                 ("Answer: C", "strict_single_letter_boxed", 0.0), ("\\boxed{Triangle}", "lenient_boxed", 1.0),
                 ("Answer: triangle", "lenient_answer_colon", 1.0), ("**Answer:** C", "lenient_answer_colon_md", 1.0),
                 ("Answer: A/C", "lenient_answer_colon_md", 0.0)]
        failures = []
        for completion, mode, want in cases:
            got = self.score(completion, {"options": options, "answer": "C", "grading_mode": mode}).score
            if got != want and not (self._forced_mode and self._forced_mode != mode):
                failures.append(f"{completion!r} ({mode}): got {got}, want {want}")
        return failures
