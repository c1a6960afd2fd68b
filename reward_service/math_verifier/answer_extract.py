"""Extract the final answer from a model completion.

Priority order (the first method that finds something wins):

1. ``gsm8k`` -- GSM8K style ``#### N``: the *last* ``####``; the rest of its
   line (the number, possibly with ``$``, commas, a unit or a mixed number
   such as ``5 1/2``; normalization deals with those).
2. ``boxed`` -- the *last* ``\\boxed{...}`` / ``\\fbox{...}`` whose braces are
   balanced (nested braces allowed; unbalanced ones are skipped, an empty
   last box means no boxed answer); also the brace-less ``\\boxed 5``.
3. ``answer_is`` -- the last "the answer is ...", "answer: ...",
   "final answer: ...", "answers are ..." (case-insensitive), up to the end
   of the line or sentence; every ``$``, ``\\(...\\)`` and ``**`` on that
   span is removed (so "$2$ or $3$" stays two candidates) and a trailing
   remark ("15 (check: ...)", "12, since ...") is dropped.
4. ``last_number`` -- the last number in the text (integers, decimals,
   thousands separators, simple fractions ``a/b``), if
   ``ExtractionConfig.last_number_fallback`` is set.

``ExtractionConfig.strict`` keeps only methods 1 and 2.

Over-long answers: extraction returns long answers unchanged (the
equivalence step treats anything over its own, much smaller cap --
``EquivalenceConfig.max_answer_chars``, 1000 -- as a non-match unless it is
literally identical to the gold).  ``ExtractionConfig.max_answer_chars``
(default 1,000,000) is only a hard memory/time cap: a longer candidate makes
:func:`extract_answer` return ``None``, and lower-priority methods are *not*
tried then, so padding a huge ``\\boxed{}`` cannot steer extraction
elsewhere.

All scans are linear in the text length: ``####`` and boxes are found with
``str.rfind`` from the end, brace matching is bounded by
``max_answer_chars`` (and at most 64 unbalanced boxes are skipped), the last
number is searched in growing windows from the end, and the regular
expressions have no nested quantifiers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Extraction", "ExtractionConfig", "extract_answer", "EXTRACTION_METHODS"]

EXTRACTION_METHODS = ("gsm8k", "boxed", "answer_is", "last_number")

_ANSWER_IS_RE = re.compile(
    r"answers?(?:\s*\*\*)?\s*(?:is\s*:?|are\s*:?|:|=)(?:\s*\*\*)?",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")
_SENTENCE_END_RE = re.compile(r"\.(?:\s|$)|\n")
#: Where a trailing remark starts: "15 (check: ...)", "15, since ...", "15 because".
_REMARK_RE = re.compile(
    r"\s+\((?=[^)]{0,200}[A-Za-z]{3})(?![^)]{0,200}\\)|,?\s+(?:since|because|which|as|so|where|when|if)\s")
_MAX_BOXED_TRIES = 64
_BRACE_RE = re.compile(r"\\.|[{}]", re.DOTALL)


class _TooLong(Exception):
    """Internal signal: the candidate answer exceeds ``max_answer_chars``."""


@dataclass(frozen=True)
class ExtractionConfig:
    """How :func:`extract_answer` searches.

    Attributes:
        strict: only ``####`` and ``\\boxed{}`` answers count.
        last_number_fallback: fall back to the last number in the text.
        max_answer_chars: hard cap; longer candidates mean "no answer".
    """

    strict: bool = False
    last_number_fallback: bool = True
    max_answer_chars: int = 1_000_000


@dataclass(frozen=True)
class Extraction:
    """An extracted answer and the method (one of :data:`EXTRACTION_METHODS`)."""

    answer: str
    method: str


def _extract_gsm8k(text: str, limit: int) -> str | None:
    idx = text.rfind("####")
    if idx < 0:
        return None
    line = text[idx + 4: idx + 4 + limit + 1].split("\n", 1)[0]
    answer = _clean_answer_span(line)
    if len(answer) > limit:
        raise _TooLong
    return answer or None


def _boxed_group(text: str, start: int, limit: int) -> str | None:
    """Content of the balanced ``{...}`` opening at ``start`` (``None`` if unbalanced)."""
    depth = 0
    end = min(len(text), start + limit + 2)
    for m in _BRACE_RE.finditer(text, start, end):
        tok = m.group()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1: m.start()]
    if end < len(text):
        raise _TooLong
    return None


def _boxed_at(text: str, idx: int, cmd: str, limit: int) -> str | None:
    pos = idx + len(cmd)
    if pos < len(text) and text[pos].isalpha():
        return None  # e.g. \boxedx is another command
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos < len(text) and text[pos] == "{":
        return _boxed_group(text, pos, limit)
    if pos > idx + len(cmd):  # "\boxed 5": one token up to whitespace or "$"
        m = re.match(r"[^\s$]+", text[pos: pos + limit + 1])
        if m is None:
            return None
        if len(m.group(0)) > limit:
            raise _TooLong
        return m.group(0).rstrip(".,;")
    return None


def _extract_boxed(text: str, limit: int) -> str | None:
    """The last balanced ``\\boxed``/``\\fbox`` content, scanning from the end."""
    ends = {"\\boxed": len(text), "\\fbox": len(text)}
    for _ in range(_MAX_BOXED_TRIES):
        found = {cmd: text.rfind(cmd, 0, ends[cmd]) for cmd in ends}
        cmd = max(found, key=lambda c: found[c])
        idx = found[cmd]
        if idx < 0:
            return None
        content = _boxed_at(text, idx, cmd, limit)
        if content is not None:
            return content.strip() or None  # an empty last box is no boxed answer
        ends[cmd] = idx
    return None


def _clean_answer_span(span: str) -> str:
    """Strip markdown/math delimiters and trailing remarks around an answer.

    All ``$``/``\\(..\\)`` delimiters in the span are removed (not just the
    first pair), so "$2$ or $3$" stays a two-candidate answer.
    """
    span = _REMARK_RE.split(span, maxsplit=1)[0]
    for delim in ("\\(", "\\)", "\\[", "\\]", "$", "**"):
        span = span.replace(delim, " ")
    return " ".join(span.split()).rstrip(".:").strip()


def _extract_answer_is(text: str, limit: int) -> str | None:
    last = None
    for last in _ANSWER_IS_RE.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end(): last.end() + 4 * limit + 64]
    line = rest.lstrip(" \t").split("\n", 1)[0]
    if not line.strip():
        line = rest.strip().split("\n", 1)[0]
    m = _SENTENCE_END_RE.search(line)
    if m is not None and not (line.lstrip().startswith("$") and "$" in line[m.start():]):
        line = line[: m.start()]
    answer = _clean_answer_span(line)
    if len(answer) > limit:
        raise _TooLong
    return answer or None


def _extract_last_number(text: str) -> str | None:
    """The last number, searching growing windows from the end (linear overall)."""
    window = 256
    while True:
        start = max(0, len(text) - window)
        last = None
        for last in _NUMBER_RE.finditer(text, start):
            pass
        # A match touching the window edge may be a truncated number: widen.
        if last is not None and (start == 0 or last.start() > start):
            return last.group().replace(" ", "")
        if start == 0:
            return None
        window *= 4


def extract_answer(text: str, config: ExtractionConfig = ExtractionConfig()) -> Extraction | None:
    """Extract the final answer of ``text`` (see the module docstring for the order).

    Never raises on odd input: returns ``None`` when nothing usable is found.
    """
    if not isinstance(text, str) or not text:
        return None
    limit = config.max_answer_chars
    steps = [("gsm8k", _extract_gsm8k), ("boxed", _extract_boxed)]
    if not config.strict:
        steps.append(("answer_is", _extract_answer_is))
    try:
        for method, func in steps:
            answer = func(text, limit)
            if answer:
                return Extraction(answer=answer, method=method)
    except _TooLong:
        return None
    if config.strict or not config.last_number_fallback:
        return None
    number = _extract_last_number(text)
    if number is None or len(number) > limit:
        return None
    return Extraction(answer=number, method="last_number")
