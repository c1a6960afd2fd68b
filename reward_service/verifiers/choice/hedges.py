"""Hedges a reader of one answer would miss: several answers listed together at the end of a completion.

Whatever the grading mode, a completion whose final answer names more than one option is a hedge
(scored 0): the last box with the boxes listed right before it ("\\boxed{A} \\boxed{C}"), the last
answer marker with the marker lines right before it ("Answer: A" then "Answer: C"), the options
echoed back as its last lines ("A. Circle" ... "D. Hexagon": the question repeated), or an answer
that offers another option ("C (or maybe A)", "C, possibly A").
"""

from __future__ import annotations

import re
import unicodedata

from reward_service.verifiers.choice.auto_read import marker_payloads, read_payload
from reward_service.verifiers.choice.options import Choices
from reward_service.verifiers.text.spans import MAX_RUN, after_thinking, box_run, last_boxed

#: An option's label and text on a line of its own ("C. Triangle", "(C) Triangle", "C) Triangle").
_OPTION_LINE = re.compile(r"\s*[(\[]?\s*([A-Za-z])\s*[.):\]]\s*(.+?)\s*")
#: Another option offered after the answer: "(or maybe A)", ", possibly A", "or perhaps (A)".
_ALTERNATIVE = re.compile(r"\b(?:or|maybe|possibly|perhaps|alternatively|otherwise|might\s+be|could\s+be)\b"
                          r"[^A-Za-z\n]{0,6}\(?([A-Z])\)?(?![A-Za-z])", re.I)
_LONE_LETTER = re.compile(r"[\W_]*[A-Za-z][\W_]*")


def listed_letters(completion: str, choices: Choices) -> tuple[str, ...]:
    """The options a completion's final answer names when it names several (empty: no such hedge)."""
    text = after_thinking(unicodedata.normalize("NFKC", completion))
    for payloads in (box_run(text), _marker_run(text)):
        letters = _distinct(_lone_letter(p, choices) for p in payloads)
        if len(letters) > 1:
            return letters
    echoed = _option_echo_run(text, choices)
    if len(echoed) > 1:
        return echoed
    return _alternatives(text, choices)


def _lone_letter(payload: str, choices: Choices) -> str | None:
    """The option a payload names and nothing else (a letter alone, or one option's text), else None:
    "(A)? No wait" in a run of answers is a correction, not a listed answer."""
    read = read_payload(payload, choices, lenient=False)
    if read.letter and (_LONE_LETTER.fullmatch(read.payload) or choices.text_matches(read.payload)):
        return read.letter
    return None


def _distinct(letters) -> tuple[str, ...]:
    return tuple(dict.fromkeys(letter for letter in letters if letter))


def _marker_run(text: str) -> list[str]:
    """The payloads of the last answer-marker line and the marker lines right before it."""
    lines = [line for line in text.splitlines() if line.strip()]
    markers = [marker_payloads(line) for line in lines]
    last = max((i for i, found in enumerate(markers) if found), default=None)
    if last is None:
        return []
    run = []
    for i in range(last, max(-1, last - MAX_RUN), -1):
        if not markers[i]:
            break
        run.append(markers[i][-1][1])
    return run


def _option_echo_run(text: str, choices: Choices) -> tuple[str, ...]:
    """The letters of the options echoed as the completion's last lines ("C. Triangle": label and text)."""
    letters = []
    for line in reversed([line for line in text.splitlines() if line.strip()][-MAX_RUN:]):
        match = _OPTION_LINE.fullmatch(line)
        letter = match.group(1).upper() if match else ""
        if not letter or letter not in choices.letters or letter not in choices.text_matches(match.group(2)):
            break
        letters.append(letter)
    return _distinct(reversed(letters))


def _alternatives(text: str, choices: Choices) -> tuple[str, ...]:
    """The options the final answer (the last box or answer marker) lists ("A or C") or offers besides its
    letter ("C (or maybe A)")."""
    sources = [(start, payload) for start, payload in marker_payloads(text)]
    boxed = last_boxed(text)
    if boxed:
        sources.append((boxed[1], boxed[0]))
    if not sources:
        return ()
    payload = max(sources)[1]
    read = read_payload(payload, choices, lenient=True)
    if read.hedge:
        return read.hedge  # "A or C": listed letters, whichever mode reads the completion
    letter = read.letter
    others = [m.group(1).upper() for m in _ALTERNATIVE.finditer(payload)]
    others = [o for o in others if o in choices.letters and o != letter]
    return _distinct([letter, *others]) if letter and others else ()
