"""Our own reading of a multiple-choice answer in the forms models write (the ``auto`` mode).

Where: after any ``</think>``, the last ``<answer>`` tag, the last ``\\boxed{}`` and every answer
marker ("Answer: C", "the answer is (C)", "**Final Answer:** C", "the correct option is C",
"Option Selected: C", "I choose C"), latest first, until one reads a letter or a hedge; with none
of them, the last non-empty line.

What, in a payload: an option's text (case-, width- and spacing-insensitive); a letter alone
with brackets, emphasis or a period (``(C)``, ``[c]``, ``**C**``, ``C.``; lower case too); a
letter label before text (``C. Paris``, ``(C) Paris``, ``C: Paris``), repeated letters (``C. C``).
After a marker or in a box the reading is more lenient: a leading upper-case letter (``C because
...``; ``A``/``I`` before a lower-case word are the article and pronoun unless no option text
fits), the words "option"/"choice"/"letter" before it, or the one label-like letter of the payload,
or the one option whose text the payload contains. Distinct letters listed together ("A or C",
"(A) and (C)", "B/D", "A, C") are a hedge: no letter, whatever the gold.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from reward_service.verifiers.choice.options import Choices, loose_text
from reward_service.verifiers.text.spans import ANSWER_TAG, after_thinking, last_boxed, strip_text_wrappers

#: An answer marker from its keyword on ("answer is", "Answer:", "option selected:", "choice:"), and its payload.
_AFTER_KEYWORD = re.compile(r"(?:answer|option|choice)(?:\s+letter|\s+selected)?[*_]*\s*"
                            r"(?:[:：=]|is\b|would\s+be\b|will\s+be\b|should\s+be\b)[*_\s]*(?:[:：][*_\s]*)?"
                            r"(?P<payload>[^\n]*)", re.I)
_KEYWORDS = ("answer", "option", "choice")
#: "I choose C", "I would go with (B)": the verb, its payload, and what must precede it.
_AFTER_VERB = re.compile(r"(?:choose|pick|select|go\s+with)\b[*_\s]*(?:[:：][*_\s]*)?(?P<payload>[^\n]*)", re.I)
_VERBS = ("choose", "pick", "select", "go with")
_I_BEFORE = re.compile(r"(?:^|\W)I\s+(?:would\s+)?$")
_DECORATION = "*_`\"' \t"
_ONLY_LETTER = re.compile(r"[\W_]*([A-Za-z])[\W_]*")
_LABEL_BEFORE_TEXT = re.compile(r"[(\[]\s*([A-Za-z])\s*[)\]]\s*\S|([A-Z])\s*[.:)\-]\s*\S")
_LEADING_UPPER = re.compile(r"([A-Z])(?=$|[\s,;!?])")
_FILLER = re.compile(r"(?i)^(?:(?:the|is|option|choice|letter|answer|correct|final)\b[\s:]*)+")
_LABEL_LIKE = re.compile(r"[(\[]\s*([A-Za-z])\s*[)\]]|(?<![A-Za-z'’])([A-Z])(?![A-Za-z'’])")
_SEPARATOR = re.compile(r"[\s)\]}*_.]*(?:[/|&,;+]|\bor\b|\band\b|\s)[\s(\[{*_]*", re.I)


@dataclass(frozen=True)
class ChoiceRead:
    """What was read: a letter, or the letters of a hedge (``letter`` None), and from where."""

    letter: str | None
    source: str = ""
    payload: str = ""
    hedge: tuple[str, ...] = ()


def _clean(payload: str) -> str:
    text = strip_text_wrappers(unicodedata.normalize("NFKC", payload).strip())
    return text.strip(_DECORATION).rstrip(".,;:!").strip(_DECORATION)


def hedge_letters(payload: str, choices: Choices) -> tuple[str, ...]:
    """The distinct allowed letters listed next to each other in ``payload`` (empty: no hedge)."""
    found = [((m.group(1) or m.group(2)).upper(), m.span()) for m in _LABEL_LIKE.finditer(payload)]
    found = [(letter, span) for letter, span in found if letter in choices.letters]
    listed: list[str] = []
    for (left, left_span), (right, right_span) in zip(found, found[1:]):
        if left != right and _SEPARATOR.fullmatch(payload[left_span[1]:right_span[0]]):
            listed += [left, right]
    return tuple(dict.fromkeys(listed))


def _contained_option(text: str, choices: Choices) -> str | None:
    key = f" {loose_text(text)} "
    hits = {letter for letter, option in choices.texts.items()
            if loose_text(option) and f" {loose_text(option)} " in key}
    return hits.pop() if len(hits) == 1 else None


def read_payload(payload: str, choices: Choices, *, lenient: bool) -> ChoiceRead:
    """One letter (or a hedge) from an answer payload; ``lenient`` after a marker or in a box."""
    text = _clean(payload)
    if not text:
        return ChoiceRead(None, payload=payload)
    hedge = hedge_letters(text, choices)
    if hedge:
        return ChoiceRead(None, payload=text, hedge=hedge)
    by_text = choices.text_matches(text)
    if len(by_text) == 1:
        return ChoiceRead(by_text[0], payload=text)
    for pattern in (_ONLY_LETTER, _LABEL_BEFORE_TEXT):
        match = pattern.fullmatch(text) if pattern is _ONLY_LETTER else pattern.match(text)
        letter = match and (match.group(1) or match.group(match.lastindex or 1))
        if letter and letter.upper() in choices.letters:
            return ChoiceRead(letter.upper(), payload=text)
    if not lenient:
        return ChoiceRead(None, payload=text)
    return ChoiceRead(_lenient_letter(text, choices), payload=text)


def _lenient_letter(text: str, choices: Choices) -> str | None:
    stripped = _FILLER.sub("", text).strip(_DECORATION)
    labels = {(m.group(1) or m.group(2)).upper() for m in _LABEL_LIKE.finditer(stripped)
              if (m.group(1) or m.group(2)).upper() in choices.letters
              and not (m.group(2) in ("A", "I") and re.match(r"\s+[a-z]", stripped[m.end():]))}
    lead = _LEADING_UPPER.match(stripped)
    if lead and lead.group(1) in choices.letters:
        if not re.match(r"[AI]\s+[a-z]", stripped):
            return lead.group(1)
        # "A"/"I" before a lower-case word: the article or the pronoun, unless nothing else fits
        return _contained_option(stripped, choices) or (labels.pop() if len(labels) == 1 else lead.group(1))
    inner = _ONLY_LETTER.fullmatch(stripped) or _LABEL_BEFORE_TEXT.match(stripped)
    if inner and (inner.group(1) or inner.group(inner.lastindex or 1)).upper() in choices.letters:
        return (inner.group(1) or inner.group(inner.lastindex or 1)).upper()
    if len(labels) == 1:
        return labels.pop()
    return _contained_option(stripped, choices)


def _keyword_starts(text: str, lower: str, keyword: str):
    start = lower.find(keyword)
    while start >= 0:
        if start == 0 or not text[start - 1].isalpha():
            yield start
        start = lower.find(keyword, start + 1)


def marker_payloads(text: str) -> list[tuple[int, str]]:
    """Every answer marker of ``text`` with the rest of its line, by position. Keywords are found with
    ``str.find`` and the marker matched there: a regex scanning every position of a long completion
    costs ten times more."""
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lower case is longer: positions would shift
        lower = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    found = []
    for keyword in _KEYWORDS:
        for start in _keyword_starts(text, lower, keyword):
            match = _AFTER_KEYWORD.match(text, start)
            if match:
                found.append((start, match.group("payload")))
    for verb in _VERBS:
        for start in _keyword_starts(text, lower, verb):
            match = _AFTER_VERB.match(text, start)
            if match and _I_BEFORE.search(text, max(0, start - 12), start):
                found.append((start, match.group("payload")))
    return sorted(found)


def read_choice(completion: str, choices: Choices) -> ChoiceRead:
    """The answer of ``completion`` (see the module docstring)."""
    text = after_thinking(unicodedata.normalize("NFKC", completion))
    sources: list[tuple[int, str, str]] = []
    tags = list(ANSWER_TAG.finditer(text))
    if tags:
        sources.append((tags[-1].start(), "tag", tags[-1].group(1)))
    boxed = last_boxed(text)
    if boxed:
        sources.append((boxed[1], "boxed", boxed[0]))
    sources += [(start, "marker", payload) for start, payload in marker_payloads(text)]
    for _, source, payload in sorted(sources, reverse=True):
        read = read_payload(payload, choices, lenient=True)
        if read.letter or read.hedge:
            return ChoiceRead(read.letter, source, read.payload, read.hedge)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ChoiceRead(None)
    read = read_payload(lines[-1], choices, lenient=False)
    return ChoiceRead(read.letter, "last_line", read.payload, read.hedge)
