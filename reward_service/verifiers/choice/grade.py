"""Grading one multiple-choice completion: the row's template regex first (NeMo Gym's
``template_metadata.output_regex``), then the grading mode (one of NeMo Gym's, or ``auto``).

A hedge never scores 1: besides what each mode rejects, a template-regex letter followed on its
line by another option letter in a list ("ANSWER IS A or B") is a hedge (NeMo Gym would take A),
and so, in every mode, is a final answer that names several options (``hedges.listed_letters``:
listed boxes or answer lines, the options echoed back, "C (or maybe A)"), where NeMo Gym would
take the last.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reward_service.verifiers.choice.auto_read import hedge_letters, read_choice
from reward_service.verifiers.choice.gym_modes import GYM_MODES, grade_mode, template_regex
from reward_service.verifiers.choice.hedges import listed_letters
from reward_service.verifiers.choice.options import Choices

GRADING_MODES = ("auto", *GYM_MODES)


@dataclass(frozen=True)
class ChoiceGrade:
    """The letter read (None: nothing, or a hedge), whether it is the gold, and which rule read it."""

    letter: str | None
    correct: bool
    rule: str
    hedge: tuple[str, ...] = ()


def _template_tail(text: str, patterns: str | Sequence[str]) -> str:
    """The rest of the line from the last match of the first pattern that matches (for the hedge check)."""
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        try:
            matches = list(re.finditer(pattern, text, re.IGNORECASE)) if isinstance(pattern, str) else []
        except re.error:
            continue
        if matches:
            last = matches[-1]
            start = last.start(1) if last.re.groups and last.group(1) is not None else last.start()
            end = text.find("\n", start)
            return text[start:end if end >= 0 else len(text)]
    return ""


def grade_choice(completion: str, gold: str, choices: Choices, mode: str = "auto", *,
                 template_patterns: str | Sequence[str] | None = None,
                 answer_prefix: str | None = None) -> ChoiceGrade:
    """Reads the answer of ``completion`` and compares it with ``gold`` (a letter of ``choices``)."""
    if mode not in GRADING_MODES:
        raise ValueError(f"unknown grading mode {mode!r}; use one of {GRADING_MODES}")
    text = completion.strip()
    listed = listed_letters(completion, choices)
    if listed:
        return ChoiceGrade(None, False, "listed", listed)
    if template_patterns and text:
        letter = template_regex(text, template_patterns, choices)
        if letter is not None:
            hedge = hedge_letters(_template_tail(text, template_patterns), choices)
            if hedge:
                return ChoiceGrade(None, False, "template_regex", hedge)
            return ChoiceGrade(letter, letter == gold, "template_regex")
    if mode == "auto":
        read = read_choice(completion, choices)
        return ChoiceGrade(read.letter, read.letter == gold, f"auto:{read.source}" if read.source else "auto",
                           read.hedge)
    letter = grade_mode(text, mode, choices, answer_prefix)
    return ChoiceGrade(letter, letter is not None and letter == gold, mode)
