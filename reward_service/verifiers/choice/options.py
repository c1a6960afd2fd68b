"""The options of a multiple-choice question and its gold letter, from the shapes datasets use.

Options: NeMo Gym's list of one-key objects ``[{"A": "Circle"}, {"B": "Square"}]`` (an entry whose
text is null is no option, as in Gym), an object ``{"A": "Circle", ...}``, or a list of texts
``["Circle", "Square"]`` lettered A, B, ... in order (MMLU's ``choices``). Without options the
letters are a configured default and only letters can be matched.

Gold: a letter (``"C"``, ``"(c)"``, ``"C."``), a 0-based index into the options (MMLU's
``answer: 2``), or the text of exactly one option. Anything else raises :class:`BadChoices`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_GOLD_LETTER = re.compile(r"[\(\[]?\s*([A-Za-z])\s*[\)\]]?\s*[.:]?")


class BadChoices(ValueError):
    """The options or the gold of a row cannot be used."""


@dataclass(frozen=True)
class Choices:
    """The allowed letters, in order, and each option's text (empty without options)."""

    letters: tuple[str, ...]
    texts: Mapping[str, str] = field(default_factory=dict)

    def text_matches(self, candidate: str) -> list[str]:
        """Letters whose option text equals ``candidate`` after :func:`loose_text`."""
        key = loose_text(candidate)
        return [letter for letter, text in self.texts.items() if key and loose_text(text) == key]


def loose_text(text: str) -> str:
    """Case-, width- and spacing-insensitive form of an option text, edge punctuation dropped."""
    folded = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    return folded.strip(string.punctuation + " \"'`*_")


def _entry_pairs(entry: Mapping[Any, Any]) -> list[tuple[str, str]]:
    return [(key.upper(), str(value)) for key, value in entry.items()
            if isinstance(key, str) and len(key) == 1 and key.isalpha() and value is not None]


def parse_choices(options: Any, default_letters: str = "ABCD") -> Choices:
    """:class:`Choices` from a row's ``options`` (see the module docstring); raises BadChoices."""
    if options is None:
        return Choices(tuple(dict.fromkeys(default_letters.upper())))
    pairs: list[tuple[str, str]] = []
    if isinstance(options, Mapping):
        pairs = _entry_pairs(options)
    elif isinstance(options, list) and options and all(isinstance(e, Mapping) for e in options):
        pairs = [pair for entry in options for pair in _entry_pairs(entry)]
    elif isinstance(options, list) and options and all(isinstance(e, (str, int, float)) for e in options):
        if len(options) > 26:
            raise BadChoices(f"{len(options)} options: at most 26 can be lettered A-Z")
        pairs = [(string.ascii_uppercase[i], str(text)) for i, text in enumerate(options)]
    else:
        raise BadChoices("options must be a list of {letter: text} objects, an object {letter: text} or a "
                         f"list of texts; got {type(options).__name__}")
    texts: dict[str, str] = {}
    for letter, text in pairs:
        texts.setdefault(letter, text)
    if not texts:
        raise BadChoices("options hold no single-letter key with a text")
    return Choices(tuple(texts), texts)


def gold_letter(answer: Any, choices: Choices) -> str:
    """The gold as one of ``choices.letters`` (see the module docstring); raises BadChoices."""
    if isinstance(answer, bool) or answer is None:
        raise BadChoices(f"the gold answer must be a letter, an index or an option text, not {answer!r}")
    if isinstance(answer, int) or (isinstance(answer, float) and answer.is_integer()):
        index = int(answer)
        if not 0 <= index < len(choices.letters):
            raise BadChoices(f"gold index {index} is outside the {len(choices.letters)} options")
        return choices.letters[index]
    text = str(answer).strip()
    match = _GOLD_LETTER.fullmatch(text)
    if match and match.group(1).upper() in choices.letters:
        return match.group(1).upper()
    by_text = choices.text_matches(text)
    if len(by_text) == 1:
        return by_text[0]
    raise BadChoices(f"gold {text[:60]!r} is none of the letters {''.join(choices.letters)}"
                     + (" nor the text of exactly one option" if choices.texts else ""))
