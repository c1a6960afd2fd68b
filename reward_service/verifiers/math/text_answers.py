"""Answers in words: option letters, number words, prose.

Pure string functions used by :mod:`.math_equal` on *normalized* answers
(``\\text{}``/``\\textbf{}`` already unwrapped):

* :func:`option_letter` -- the letter of a multiple-choice answer:
  ``D``, ``(D)``, ``(B) 15``, ``B: 15``, ``option D``, ``choice (D)``.
  Only upper-case ``A``-``J``, so a variable ``x`` or the constant ``e`` is
  never read as an option.
* :func:`number_word_value` -- an integer written in English words:
  ``fourteen``, ``twenty-one``, ``one hundred five``, ``two thousand``.
* :func:`time_of_day` -- a clock time ``9:30``, ``9:30 a.m.``, ``21:30``;
  with no a.m./p.m. on one side, only hours and minutes are compared.
* :func:`prose_key` -- prose compared loosely: case, punctuation and
  spacing do not matter (``\\text{No solution.}`` is ``no solution``).
* :func:`is_text_command` / :func:`is_words` -- a *raw* answer written as a
  whole in a text command (``\\text{NO}``, ``\\textbf{Yes}``) says it is words, so
  its case does not matter even when it is short; a bare ``No`` is words too.
  Math fonts (``\\mathrm{e}``) and single letters (a variable, a point ``B``) never are.
"""

from __future__ import annotations

import re

__all__ = ["option_letter", "number_word_value", "prose_key", "time_of_day", "times_match", "is_text_command",
           "is_words"]

_TIME_RE = re.compile(r"(\d{1,2}):(\d{2})\s*(?:([ap])\.?\s*m\.?)?", re.IGNORECASE)

_BARE_LETTER_RE = re.compile(r"\(?\s*([A-J])\s*\)?\.?")
_LETTER_WITH_TEXT_RE = re.compile(r"(?:\(\s*([A-J])\s*\)|([A-J])\s*[.:)])\s*\S.*", re.DOTALL)
_LETTER_PREFIX_RE = re.compile(r"(?:option|choice)\s*\(?\s*([A-J])\s*\)?", re.IGNORECASE)

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9}
_PUNCT_RE = re.compile(r"[^\w]+")
_TEXT_COMMAND_RE = re.compile(r"\\(?:text|textbf|textit|textrm|texttt|textsf|textnormal|mbox)\s*\{[^{}]*\}")
#: Words only, two letters or more: "NO", "no solution", "The second plan is cheaper."
_WORDS_RE = re.compile(r"(?=(?:[^A-Za-z]*[A-Za-z]){2})[A-Za-z][A-Za-z '\-.,!?]*")
#: Short words that are answers, never a product of two variables.
_SHORT_ANSWER_WORDS = frozenset({"no", "ok"})


def option_letter(s: str) -> str | None:
    """The option letter of a multiple-choice answer, or ``None``."""
    s = s.strip()
    for pattern in (_BARE_LETTER_RE, _LETTER_PREFIX_RE):
        m = pattern.fullmatch(s)
        if m is not None:
            return m.group(1).upper()
    m = _LETTER_WITH_TEXT_RE.fullmatch(s)
    if m is not None:
        return m.group(1) or m.group(2)
    return None


def number_word_value(s: str) -> int | None:
    """The integer an English number phrase names (``None`` if ``s`` is not one)."""
    words = s.strip().lower().replace("-", " ").replace(",", " ").split()
    words = [w for w in words if w != "and"]
    if not words or len(words) > 12:
        return None
    negative = words[0] in ("minus", "negative")
    if negative:
        words = words[1:]
    total = current = 0
    seen = False
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word in _SCALES:
            scale = _SCALES[word]
            if scale == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * scale
                current = 0
        else:
            return None
        seen = True
    if not seen:
        return None
    value = total + current
    return -value if negative else value


def time_of_day(s: str) -> tuple[int, int, str | None] | None:
    """``(hour, minute, "a"/"p"/None)`` of a clock time, or ``None``."""
    m = _TIME_RE.fullmatch(s.strip())
    if m is None or int(m.group(2)) > 59 or int(m.group(1)) > 24:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3).lower() if m.group(3) else None


def times_match(a: tuple[int, int, str | None], b: tuple[int, int, str | None]) -> bool:
    """Same clock time; a.m./p.m. count only when both sides give one."""
    if a[2] and b[2] and a[2] != b[2]:
        return False
    return a[:2] == b[:2]


def prose_key(s: str) -> str:
    """Prose in a form where case, punctuation and spacing are gone."""
    return _PUNCT_RE.sub(" ", s.casefold()).strip()


def is_text_command(raw: str) -> bool:
    """Whether ``raw`` (delimiters and ``\\boxed`` already stripped) is one text command: ``\\text{NO}``."""
    return _TEXT_COMMAND_RE.fullmatch(raw.strip()) is not None


def is_words(s: str, text_command: bool = False) -> bool:
    """Whether the normalized answer ``s`` is words whose case does not matter: written in a text
    command (``text_command``), three letters or more in a word, or a short answer word ("No")."""
    if _WORDS_RE.fullmatch(s.strip()) is None:
        return False
    return text_command or any(len(w) >= 3 for w in s.split()) or prose_key(s) in _SHORT_ANSWER_WORDS
