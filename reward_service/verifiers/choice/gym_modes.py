"""NeMo Gym's ``mcqa`` grading modes and its ``template_metadata.output_regex``, re-implemented.

Read from NeMo Gym's ``resources_servers/mcqa/app.py`` (the version whose config adds
``lenient_answer_colon_md``); each function below states the rule it follows:

- ``strict_single_letter_boxed``: the last ``\\boxed{`` (braces counted), ``\\text{}`` wrappers
  stripped; a box that holds one upper-case letter among non-letters (``[C]``) or starts with an
  upper-case letter and a label delimiter ``: ) . -`` (``E: option text``); the letter must be an
  option's.
- ``lenient_boxed``: strict, else the option whose (lower-cased, space-collapsed) text is a
  substring of the last box's content, when exactly one option's is.
- ``lenient_answer_colon``: the first ``answer:`` (any case) and the rest of its line,
  ``\\text{}`` stripped: one allowed letter (any case), else an option's text, equal after
  lower-casing and collapsing spaces.
- ``lenient_answer_colon_md``: every ``Answer:`` line (markdown emphasis around ``Answer`` and the
  colon allowed) and every line after the row's ``answer_prefix``, last first: the payload,
  NFKC-normalised with Arabic, Bengali and full-width A-D mapped to Latin, stripped of ``*_`.,;:``
  and spaces; distinct allowed letters separated only by ``/ | & , ;``, ``or``, ``and`` or spaces
  are a hedge (nothing); else one letter, else a leading letter, else the last standalone
  upper-case letter. With an ``answer_prefix`` and nothing found, the strict box rule.
- ``output_regex`` (a string or a list, tried in order): every match, case-insensitive; the last
  one's first group (the whole match without a group), normalised as above and upper-cased; a
  single letter is trusted even when no option has it; else an option's text. A pattern that
  does not compile matches nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from reward_service.verifiers.choice.options import Choices
from reward_service.verifiers.text.spans import last_boxed

GYM_MODES = ("strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon", "lenient_answer_colon_md")

_BOX_LETTER_ONLY = re.compile(r"[^A-Za-z]*([A-Z])[^A-Za-z]*")
_BOX_LETTER_LABEL = re.compile(r"\s*([A-Z])\s*[:).\-]")
_ANSWER_COLON_FIRST = re.compile(r"(?i)answer\s*:\s*(.+)")
_ANSWER_COLON_MD = re.compile(r"(?im)[*_]{0,2}Answer[*_]{0,2}\s*:[*_\s]{0,2}(.+)")
_LETTER_TOKEN = re.compile(r"(?<![A-Za-z])([A-Za-z])(?![A-Za-z])")
_LIST_SEPARATOR = re.compile(r"(?:\s*[/|&,;]\s*|\s+(?:or|and)\s+|\s+)", re.I)
_LEADING_LETTER = re.compile(r"([a-zA-Z])(?![a-zA-Z0-9])")
_LAST_STANDALONE = re.compile(r"\b[A-Z]\b(?!.*\b[A-Z]\b)", re.S)
#: Letters of other scripts and full-width Latin read as A-D (Gym's table).
_TEXT_WRAP = re.compile(r"\\text\{\s*(.*?)\s*\}", re.S)
_BOXED = ("\\boxed{",)
_SCRIPT_LETTERS = {"أ": " A", "ب": " B", "ج": " C", "د": " D", "অ": " A", "ব": " B", "ড": " C", "ঢ": " D",
                   "Ａ": " A", "Ｂ": " B", "Ｃ": " C", "Ｄ": " D"}


def strip_text_wrappers(text: str) -> str:
    """``\\text{X}`` wrapping the whole string, repeatedly, down to X (only ``\\text``, as Gym)."""
    while True:
        match = _TEXT_WRAP.fullmatch(text)
        if not match:
            return text
        text = match.group(1)


def _spaced_lower(text: str) -> str:
    return " ".join(text.lower().split())


def _to_latin(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    for letter, latin in _SCRIPT_LETTERS.items():
        text = text.replace(letter, latin)
    return text.strip()


def strict_boxed(text: str, choices: Choices) -> str | None:
    boxed = last_boxed(text, _BOXED)
    if boxed is None:
        return None
    inner = strip_text_wrappers(boxed[0].strip())
    match = _BOX_LETTER_ONLY.fullmatch(inner) or _BOX_LETTER_LABEL.match(inner)
    letter = match.group(1).upper() if match else None
    return letter if letter in choices.letters else None


def boxed_option_text(text: str, choices: Choices) -> str | None:
    boxed = last_boxed(text, _BOXED)
    if boxed is None:
        return None
    inner = boxed[0].strip()
    candidates = {_spaced_lower(inner), _spaced_lower(strip_text_wrappers(inner))}
    found = {letter for letter, option in choices.texts.items()
             for candidate in candidates if _spaced_lower(option) and _spaced_lower(option) in candidate}
    return found.pop() if len(found) == 1 else None


def answer_colon(text: str, choices: Choices) -> str | None:
    match = _ANSWER_COLON_FIRST.search(text)
    if not match:
        return None
    candidate = strip_text_wrappers(match.group(1)).strip()
    if len(candidate) == 1 and candidate.isalpha() and candidate.upper() in choices.letters:
        return candidate.upper()
    wanted = _spaced_lower(candidate)
    return next((letter for letter, option in choices.texts.items() if _spaced_lower(option) == wanted), None)


def _is_hedge(payload: str, choices: Choices) -> bool:
    found = [(m.group(1).upper(), m.span(1)) for m in _LETTER_TOKEN.finditer(payload)
             if m.group(1).upper() in choices.letters]
    return any(left != right and _LIST_SEPARATOR.fullmatch(payload[left_span[1]:right_span[0]]) is not None
               for (left, left_span), (right, right_span) in zip(found, found[1:]))


def choice_in_payload(payload: str, choices: Choices) -> str | None:
    """One letter from an answer payload (Gym's ``lenient_answer_colon_md`` rule); None for a hedge."""
    candidate = _to_latin(payload).strip().strip("*_` \t\n\r.,;:")
    if _is_hedge(candidate, choices):
        return None
    if len(candidate) == 1:
        letter = candidate
    else:
        match = _LEADING_LETTER.match(candidate) or _LAST_STANDALONE.search(candidate)
        letter = match.group(match.lastindex or 0) if match else ""
    return letter.upper() if letter and letter.upper() in choices.letters else None


def answer_colon_md(text: str, choices: Choices, answer_prefix: str | None = None) -> str | None:
    text_nfkc = unicodedata.normalize("NFKC", text)
    payloads = [(m.start(), m.group(1)) for m in _ANSWER_COLON_MD.finditer(text_nfkc)]
    if answer_prefix:
        prefix = re.compile(re.escape(unicodedata.normalize("NFKC", answer_prefix)) + r"\s*", re.I)
        for m in prefix.finditer(text_nfkc):
            end = text_nfkc.find("\n", m.end())
            payloads.append((m.start(), text_nfkc[m.end():end if end >= 0 else len(text_nfkc)]))
    for _, payload in sorted(payloads, key=lambda item: item[0], reverse=True):
        letter = choice_in_payload(payload, choices)
        if letter is not None:
            return letter
    return strict_boxed(text, choices) if answer_prefix else None


def template_regex(text: str, patterns: str | Sequence[str], choices: Choices) -> str | None:
    """The letter a row's ``template_metadata.output_regex`` finds (see the module docstring)."""
    for pattern in [patterns] if isinstance(patterns, str) else patterns:
        if not isinstance(pattern, str):
            continue
        try:
            matches = list(re.finditer(pattern, text, re.IGNORECASE))
        except re.error:
            continue
        if not matches:
            continue
        last = matches[-1]
        groups = [g for g in last.groups() if g is not None]
        captured = _to_latin((groups[0] if groups else last.group(0)).strip()).upper()
        if len(captured) == 1 and captured.isalpha():
            return captured
        wanted = _spaced_lower(captured)
        letter = next((letter for letter, option in choices.texts.items() if _spaced_lower(option) == wanted), None)
        if letter is not None:
            return letter
    return None


def grade_mode(text: str, mode: str, choices: Choices, answer_prefix: str | None = None) -> str | None:
    """The letter NeMo Gym's ``mode`` reads from ``text`` (stripped; empty reads nothing)."""
    text = text.strip()
    if not text:
        return None
    if mode == "strict_single_letter_boxed":
        return strict_boxed(text, choices)
    if mode == "lenient_boxed":
        return strict_boxed(text, choices) or boxed_option_text(text, choices)
    if mode == "lenient_answer_colon":
        return answer_colon(text, choices)
    if mode == "lenient_answer_colon_md":
        return answer_colon_md(text, choices, answer_prefix)
    raise ValueError(f"unknown grading mode {mode!r}; NeMo Gym's are {GYM_MODES}")
