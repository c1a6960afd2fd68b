"""Extract the final answer from a model completion.

Special tokens of chat templates (``<|im_end|>``, ``</s>``...) are removed first
(:mod:`.special_tokens`).  Then, in priority order (the first method that finds
something wins):

1. ``gsm8k`` -- GSM8K style ``#### N``: the *last* ``####``; the rest of its
   line (the number, possibly with ``$``, commas, a unit or a mixed number
   such as ``5 1/2``; normalization deals with those).
2. ``boxed`` -- the *last* ``\\boxed{...}`` / ``\\fbox{...}`` whose braces are
   balanced (nested braces allowed; unbalanced ones are skipped, an empty
   last box means no boxed answer); also the brace-less ``\\boxed 5``; with
   the boxes *listed* right before it (:mod:`.boxes`: "$\\boxed{2}$ or
   $\\boxed{3}$" is the two candidates ``2, 3``).  :attr:`Extraction.boxes`
   keeps every box, in order, for golds with several parts (the grader
   joins them then).  Minerva's closing sentence ("Final Answer: The final
   answer is $X$. I hope it is correct.") *after* the last box wins over
   the boxes (method ``answer_is``): by the prompt's format, it is the answer.
3. ``answer_is`` -- the last "the answer is ...", "answer: ...",
   "final answer: ...", "answers are ...", "the correct choice/option is ..."
   (case-insensitive), up to the end of the line or sentence; every ``$``,
   ``\\(...\\)`` and ``**`` on that span is removed (so "$2$ or $3$" stays
   two candidates), a trailing remark ("15 (check: ...)", "12, since ...")
   and a rejected alternative ("8, not 9") are dropped, and a sentence
   ("The smallest $k$ is 21") is cut after its last "is"/"are"/"equals"; a
   prose answer with one number and no math or qualifier ("Jane started 3
   hours ago", not "at least 3") gives that number (:func:`sole_number`).
4. ``bare`` -- the whole completion, when it is one short math expression
   with no prose and no line break (``\\frac{10}{9}``, ``4 + 4/9``, ``(7, 1)``),
   or one word (``yes``, ``**No**``, ``\\text{Evelyn}``; a phrase such as
   "no number" is no answer).
5. ``delimited`` / ``bold`` / ``last_number`` -- whichever of these ends
   latest in the text: the last markdown-bold span holding a math answer
   (``**42**``, ``**x = 3**``; never a heading ``**Step 2:**`` or a word), the
   last math span (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``,
   see :mod:`.math_spans`, together with the spans listed right before it:
   "$x = 1$ and $x = -2$" is two answers), or the last number *outside* math spans (integers, decimals,
   thousands separators, mixed numbers ``2 1/2``, simple fractions ``a/b``;
   a unit may touch it: ``12kg``).  A number glued to a
   larger expression (``x^2+1``, ``3/4x``, the ``1`` of ``(7, 1)``) is never
   taken on its own: the fallback then finds no answer.  The last number
   counts only if ``ExtractionConfig.last_number_fallback`` is set.

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
from dataclasses import dataclass, field

from .boxes import CandidateTooLong, find_boxes, listed_run
from .math_spans import mask_spans, math_spans
from .special_tokens import DEFAULT_SPECIAL_TOKENS, strip_special_tokens

__all__ = ["Extraction", "ExtractionConfig", "extract_answer", "sole_number", "EXTRACTION_METHODS"]

EXTRACTION_METHODS = ("gsm8k", "boxed", "answer_is", "bare", "delimited", "bold", "last_number")

_ANSWER_IS_RE = re.compile(
    r"(?:answers?|choice|option)(?:\s*\*\*)?\s*(?:is\s*:?|are\s*:?|:|=)(?:\s*\*\*)?",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(
    r"-?\d+[ \t]+\d+\s*/\s*\d+|-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d{1,3}(?: \d{3})+(?![\d.,/])"
    r"|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+")
_SENTENCE_END_RE = re.compile(r"\.(?:\s|$)|\n")
#: Where a trailing remark starts: "15 (check: ...)", "15, since ...", "15 because",
#: "0.25 (25%)", a restatement ("1/2, i.e. 0.5", "— we reject -5"), and a rejected
#: alternative ("8, not 9", "8 rather than 9").
_REMARK_RE = re.compile(
    r"\s+\((?=[^)]{0,200}[A-Za-z]{3})(?![^)]{0,200}\\)|\s+\((?=[^),A-Za-z\\]{1,40}\))"
    r"|,?\s+(?:since|because|which|as|so|where|when|if|not|rather than|instead of)\s"
    r"|,?\s+(?:i\.e\.?|e\.g\.?|that is|or equivalently|equivalently)|\s+(?:—|–|--)\s")
#: A parenthetical that offers another answer: "8 (although 9 is also possible)", "20 (or 21 if ...)".
_HEDGE_RE = re.compile(
    r"\((?=[^)]{0,200}\b(?:or|also|alternatively|possibly|maybe|might|could)\b)(?=[^)]{0,200}\d)[^)]{0,200}\)",
    re.IGNORECASE)
#: "The smallest $k$ is 21": a sentence whose answer follows its last copula.
_COPULA_RE = re.compile(
    r"^(?:the|a|an|our|its|this|that|it|so|thus|hence|therefore)\b.*\s(?:is|are|equals|was|be)\s+(?=\S)",
    re.IGNORECASE)
#: Characters that glue a number into a larger expression when they touch it.
_GLUE_BEFORE = frozenset("^_{/*\\")
_GLUE_AFTER = frozenset("^_/*(\\{")
#: Units that may touch a number without making it part of an expression ("12kg", "1,000.99m²").
_GLUED_UNITS = frozenset({
    "mm", "cm", "km", "m", "kg", "g", "mg", "ml", "mL", "L", "s", "sec", "min", "h", "hr", "hrs",
    "ft", "in", "yd", "mi", "lb", "lbs", "oz", "mph", "kph", "st", "nd", "rd", "th", "pm", "am",
    "m²", "cm²", "km²", "m³", "cm³", "k", "K", "M", "USD", "EUR", "€", "pct",
})
_LETTERS_AFTER_RE = re.compile(r"[A-Za-z€]+[²³]?")
#: A bare answer: the whole completion is one short math expression, no prose.
_PROSE_WORD_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_BARE_MAX_CHARS = 200
#: What may stand between math spans that list answers: ", ", " and ", ", or ".
_CONNECTOR_RE = re.compile(r"\s*(?:,|;|,?\s*and|,?\s*or)\s*")
_BARE_MATH_WORDS = frozenset({"sin", "cos", "tan", "log", "exp", "sqrt", "frac", "pi", "infty", "and"})
_QUOTES = frozenset("\"'“”‘’")
#: Math in a sentence: then its number is no sole answer.
_MATH_MARKS_RE = re.compile(r"[$\\=^_{}<>]")
#: Words that make a sentence's number a bound, a count of something else or a rejection.
_QUALIFIER_RE = re.compile(
    r"\b(?:least|most|more|less|fewer|greater|smaller|larger|over|under|up to|not|no|never|except|between|than"
    r"|per|each|every|times|or|and|plus|minus|if|unless|without)\b", re.IGNORECASE)
#: A bare one-word answer ("yes", "Evelyn"), in a text command or not.
_BARE_WORD_MAX_CHARS = 40
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]*|\(?[A-Za-z]\)")
_TEXT_WRAPPER_RE = re.compile(r"\\(?:text|textbf|textrm|textit|mathrm|mathbf)\s*\{\s*([^{}]*?)\s*\}")
#: Markdown bold on one line: ``**42**``, ``**x = 3**``.
_BOLD_RE = re.compile(r"\*\*(?=[^*\s])([^*\n]{1,200}?)\*\*")
#: Minerva's closing sentence: the final answer by the prompt's own format, after any box.
_MINERVA_CLOSING_RE = re.compile(r"final answer is\b[^\n]{0,400}?I hope it is correct", re.IGNORECASE)


@dataclass(frozen=True)
class ExtractionConfig:
    """How :func:`extract_answer` searches.

    Attributes:
        strict: only ``####`` and ``\\boxed{}`` answers count.
        last_number_fallback: fall back to the last number in the text.
        max_answer_chars: hard cap; longer candidates mean "no answer".
        special_tokens: literal chat-template tokens removed before extraction
            (``<|name|>``-shaped tokens are always removed).
    """

    strict: bool = False
    last_number_fallback: bool = True
    max_answer_chars: int = 1_000_000
    special_tokens: tuple[str, ...] = DEFAULT_SPECIAL_TOKENS


@dataclass(frozen=True)
class Extraction:
    """An extracted answer and the method (one of :data:`EXTRACTION_METHODS`).

    ``boxes`` holds every balanced box of the text in order when the method is
    ``boxed`` (the answer is the last one); it is not part of equality.
    """

    answer: str
    method: str
    boxes: tuple[str, ...] = field(default=(), compare=False)


def _extract_gsm8k(text: str, limit: int) -> str | None:
    idx = text.rfind("####")
    if idx < 0:
        return None
    line = text[idx + 4: idx + 4 + limit + 1].split("\n", 1)[0]
    answer = _clean_answer_span(line)
    if len(answer) > limit:
        raise CandidateTooLong
    return answer or None


def _clean_answer_span(span: str) -> str:
    """Strip markdown/math delimiters and trailing remarks around an answer.

    All ``$``/``\\(..\\)`` delimiters in the span are removed (not just the
    first pair), so "$2$ or $3$" stays a two-candidate answer.
    """
    if _HEDGE_RE.search(span):
        return " ".join(span.split())  # a hedge stays in the answer, which then matches nothing
    span = _REMARK_RE.split(span, maxsplit=1)[0]
    for delim in ("\\(", "\\)", "\\[", "\\]", "$", "**"):
        span = span.replace(delim, " ")
    span = " ".join(span.split())
    span = span if span.endswith(("...", "…")) else span.rstrip(".:").strip()
    unescaped = span.replace('\\"', '"')  # a quoted answer: "12 and 13", also escaped: \"12 and 13\"
    if len(unescaped) > 1 and unescaped[0] in _QUOTES and unescaped[-1] in _QUOTES:
        span = unescaped[1:-1].strip()
    return span


def _extract_answer_is(text: str, limit: int) -> str | None:
    last = None
    for match in _ANSWER_IS_RE.finditer(text):
        last = match
    if last is None:
        return None
    rest = text[last.end(): last.end() + 4 * limit + 64]
    line = rest.lstrip(" \t").split("\n", 1)[0]
    if not line.strip():
        line = rest.strip().split("\n", 1)[0]
    spans = math_spans(line)
    # A sentence ends at a period outside the first math span: "$4.5$." and "$2$ or $3$." stay whole.
    after = spans[0].end if spans and not line[:spans[0].start].strip() else 0
    m = _SENTENCE_END_RE.search(line, after)
    if m is not None:
        line = line[: m.start()]
    answer = _clean_answer_span(line)
    copula = _COPULA_RE.match(answer)
    if copula is not None:
        answer = answer[copula.end():]
    elif not _MATH_MARKS_RE.search(line):
        answer = sole_number(answer) or answer  # "Final Answer: Jane started growing Sphere 3 hours ago."
    if len(answer) > limit:
        raise CandidateTooLong
    return answer or None


def _number_text(number: str) -> str:
    """A matched number as an answer: ``1 000`` is 1000, the mixed number ``2 1/2`` keeps its space."""
    return " ".join(number.split()) if "/" in number else number.replace(" ", "")


def sole_number(text: str) -> str | None:
    """The one number of a plain-prose sentence ("There are 4 ways.", "Sphere started 3 hours ago");
    ``None`` for math, several numbers, a number inside an expression, or a qualifier ("at least 3",
    "more than 5", "not 4") that makes the sentence say something else than the number."""
    if len(text) > _BARE_MAX_CHARS or not _PROSE_WORD_RE.search(text) or _MATH_MARKS_RE.search(text):
        return None
    if _QUALIFIER_RE.search(text):
        return None
    numbers = list(_NUMBER_RE.finditer(text))
    if len(numbers) != 1 or _glued(text, numbers[0].start(), numbers[0].end()):
        return None
    return _number_text(numbers[0].group())


def _glued(text: str, start: int, end: int) -> bool:
    """Whether the number ``text[start:end]`` is part of a larger expression."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    unit = _LETTERS_AFTER_RE.match(text, end)
    if unit is not None and unit.group() in _GLUED_UNITS:
        after = " "
    if before in _GLUE_BEFORE or before.isalnum() or after in _GLUE_AFTER or after.isalpha():
        return True
    if before in "+-" and start > 1 and (text[start - 2].isalnum() or text[start - 2] in ")}"):
        return True  # "3+4": the 4 of a sum
    if after in "+-*/^" and end + 1 < len(text) and (text[end + 1].isalnum() or text[end + 1] in "(\\"):
        return True  # "4+x": the 4 of a sum
    if after in ")]":  # the last element of a tuple or interval: "(7, 1)"
        line_start = text.rfind("\n", 0, start) + 1
        opening = max(text.rfind("(", line_start, start), text.rfind("[", line_start, start))
        return opening >= 0 and "," in text[opening:start]
    if before in "([" or (before == " " and start > 1 and text[start - 2] == ","):
        # an element inside brackets: "(7, 1" or ", 1)"
        line_end = text.find("\n", end)
        closing_zone = text[end: line_end if line_end >= 0 else len(text)]
        return closing_zone.lstrip().startswith((")", "]", ","))
    return False


def _last_plain_number(masked: str) -> tuple[int, str | None]:
    """End position and text of the last number outside math spans (``None`` if glued or absent)."""
    window = 256
    while True:
        start = max(0, len(masked) - window)
        last = None
        for match in _NUMBER_RE.finditer(masked, start):
            last = match
        # A match touching the window edge may be a truncated number: widen.
        if last is not None and (start == 0 or last.start() > start):
            if _glued(masked, last.start(), last.end()):
                return last.end(), None
            return last.end(), _number_text(last.group())
        if start == 0:
            return -1, None
        window *= 4


def _span_answer(content: str) -> str:
    """A math span as an answer, without trailing punctuation (an ellipsis ``...`` stays)."""
    content = content.strip()
    if content.endswith(("...", "…")):
        return content
    return content.rstrip(".,;:").strip()


def _bare_expression(text: str) -> str | None:
    """``text`` when it is one short math expression with no prose (``\\frac{10}{9}``, ``4 + 4/9``)."""
    stripped = text.strip()
    if not stripped or len(stripped) > _BARE_MAX_CHARS or "\n" in stripped or "$" in stripped:
        return None
    if "\\boxed" in stripped or "\\fbox" in stripped:
        return None
    if not any(ch.isdigit() or ch == "\\" for ch in stripped):
        return None
    words = [w for w in _PROSE_WORD_RE.findall(stripped) if w.lower() not in _BARE_MATH_WORDS]
    return None if words else stripped.rstrip(".").strip() or None


def _bare_word(text: str) -> str | None:
    """``text`` when it is one word, maybe in ``**…**``, ``$…$`` or ``\\text{…}``: "yes", "**No**"."""
    core = text.strip().rstrip(".").strip()
    if len(core) > _BARE_WORD_MAX_CHARS:
        return None
    for left, right in (("**", "**"), ("$", "$")):
        if len(core) > len(left) + len(right) and core.startswith(left) and core.endswith(right):
            core = core[len(left):-len(right)].strip()
    m = _TEXT_WRAPPER_RE.fullmatch(core)
    word = m.group(1) if m else core
    return text.strip().rstrip(".").strip() if _WORD_RE.fullmatch(word) else None


def _extract_bare(text: str) -> str | None:
    """The whole completion when it is one short expression or one word (see :func:`_bare_word`)."""
    return _bare_expression(text) or _bare_word(text)


def _last_bold(plain: str) -> tuple[int, str | None]:
    """End and content of the last markdown-bold span ``**…**`` that holds a math answer (``**42**``,
    ``**x = 3**``); a bold heading or prose (``**Step 2:**``, ``**Check**``) is never one."""
    last = None
    for m in _BOLD_RE.finditer(plain):
        last = m
    if last is None:
        return -1, None
    content = last.group(1).strip().rstrip(".,;").strip()
    if content.endswith(":") or _bare_expression(content) is None:
        return -1, None
    return last.end(), content


def _listed_spans(text: str, spans: list) -> list:
    """The last span with the spans listed right before it: "$x = 1$ and $x = -2$" is two answers."""
    listed = [spans[-1]]
    for prev in reversed(spans[:-1]):
        if len(listed) >= 16 or not _CONNECTOR_RE.fullmatch(text[prev.end:listed[0].start]):
            break
        listed.insert(0, prev)
    return listed


def _extract_fallback(text: str, limit: int, last_number: bool) -> Extraction | None:
    """The latest of the last math span, the last bold math answer and the last plain-text number."""
    spans = math_spans(text)
    span = spans[-1] if spans else None
    masked = mask_spans(text, spans)
    bold_end, bold = _last_bold(masked)
    plain = masked.replace("**", "  ")  # markdown bold is not an operator
    number_end, number = _last_plain_number(plain) if last_number else (-1, None)
    if bold is not None and bold_end > number_end and (span is None or bold_end > span.end):
        if len(bold) > limit:
            raise CandidateTooLong
        return Extraction(answer=bold, method="bold")
    if span is not None and span.end > number_end:
        answer = ", ".join(_span_answer(s.content) for s in _listed_spans(text, spans))
        if len(answer) > limit:
            raise CandidateTooLong
        return Extraction(answer=answer, method="delimited") if answer else None
    if number is None or len(number) > limit:
        return None
    return Extraction(answer=number, method="last_number")


def extract_answer(text: str, config: ExtractionConfig = ExtractionConfig()) -> Extraction | None:
    """Extract the final answer of ``text`` (see the module docstring for the order).

    Never raises on odd input: returns ``None`` when nothing usable is found.
    """
    if not isinstance(text, str) or not text:
        return None
    text = strip_special_tokens(text, config.special_tokens)
    limit = config.max_answer_chars
    try:
        answer = _extract_gsm8k(text, limit)
        if answer:
            return Extraction(answer=answer, method="gsm8k")
        boxes = find_boxes(text, limit)
        if boxes and not config.strict:
            closing = _MINERVA_CLOSING_RE.search(text, boxes[0].end)
            answer = _extract_answer_is(closing.group(), limit) if closing else None
            if answer:  # "Final Answer: The final answer is $X$. I hope it is correct." after the boxes
                return Extraction(answer=answer, method="answer_is")
        if boxes:  # the last box, with the boxes listed right before it: "$\\boxed{2}$ or $\\boxed{3}$"
            listed = dict.fromkeys(b.content for b in listed_run(text, boxes))
            return Extraction(answer=", ".join(listed), method="boxed",
                              boxes=tuple(b.content for b in reversed(boxes)))
        if config.strict:
            return None
        answer = _extract_answer_is(text, limit)
        if answer:
            return Extraction(answer=answer, method="answer_is")
        answer = _extract_bare(text)
        if answer:
            return Extraction(answer=answer, method="bare")
        return _extract_fallback(text, limit, config.last_number_fallback)
    except CandidateTooLong:
        return None
