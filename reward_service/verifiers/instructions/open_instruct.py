"""Tulu 3's instruction checks (allenai open-instruct ``open_instruct/if_functions.py``), the
``{"func_name": ..., <args>}`` ground truth of the RLVR-IFeval data: one function per constraint,
IFEval's 25 constraint kinds with simpler rules of their own (words split on whitespace, sentences
on a regex, paragraphs on ``* * *``). Each builder reads the function's arguments and returns its
check ``(response, tools) -> bool``; open-instruct's verifier passes the row's non-null fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from reward_service.verifiers.instructions.args import Args, BadInstruction
from reward_service.verifiers.instructions.ifeval import Check

_SENTENCE_END = re.compile(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?|!)\s")
_WORD = re.compile(r"\b\w+\b")
_PLACEHOLDER = re.compile(r"\[(.*?)\]")
_TITLE = re.compile(r"<<(.*?)>>")
_HIGHLIGHT = re.compile(r"\*(.*?)\*")
_CAPITAL_WORD = re.compile(r"\b[A-Z]+\b")


def quantified(count: int, quantifier: str, n: int, around: int) -> bool:
    """``at least`` / ``at most`` / ``around`` (within ``around``); any other quantifier is not followed."""
    if quantifier == "at least":
        return count >= n
    if quantifier == "at most":
        return count <= n
    if quantifier == "around":
        return abs(count - n) <= around
    return False


def _tolerance(n: int) -> int:
    return max(round(n * 0.1), 1)


def verify_keywords(a: Args) -> Check:
    keywords = [k.lower() for k in a.texts("keyword_list")]
    return lambda text, tools: all(k in text.lower() for k in keywords)


def verify_keyword_frequency(a: Args) -> Check:
    word, n = a.text("word").lower(), a.integer("N")
    return lambda text, tools: sum(1 for w in _WORD.findall(text.lower()) if w == word) == n


def validate_forbidden_words(a: Args) -> Check:
    words = [w.lower() for w in a.texts("forbidden_words")]
    return lambda text, tools: not any(w in text.lower() for w in words)


def verify_letter_frequency(a: Args) -> Check:
    letter, n = a.text("letter"), a.integer("N")
    if len(letter) != 1:
        raise BadInstruction(f"{a.instruction_id}: letter must be a single character, got {letter!r}")
    return lambda text, tools: text.count(letter) == n


def validate_response_language(a: Args) -> Check:
    language = a.text("language")
    return lambda text, tools: tools.detect_language(text) == language


def paragraphs_between_dividers(text: str) -> int | None:
    """Parts around ``* * *`` after stripping each line; None when one of them is empty."""
    cleaned = "\n".join(line.strip() for line in text.splitlines()).strip()
    parts = cleaned.split("* * *")
    return len(parts) if all(p.strip() for p in parts) else None


def verify_paragraph_count(a: Args) -> Check:
    n = a.integer("N")
    return lambda text, tools: paragraphs_between_dividers(text) == n


def validate_word_constraint(a: Args) -> Check:
    n, quantifier = a.integer("N"), a.text("quantifier")
    return lambda text, tools: quantified(len(text.strip().split()), quantifier, n, _tolerance(n))


def verify_sentence_constraint(a: Args) -> Check:
    n, quantifier = a.integer("N"), a.text("quantifier")
    return lambda text, tools: quantified(len(_SENTENCE_END.split(text)), quantifier, n, 1)


def validate_paragraphs(a: Args) -> Check:
    n, first_word, i = a.integer("N"), a.text("first_word"), a.integer("i", minimum=1)
    if i > n:
        raise BadInstruction(f"{a.instruction_id}: i ({i}) is past N ({n})")

    def check(text: str, tools: object) -> bool:
        paragraphs = text.split("\n\n")
        return len(paragraphs) == n and paragraphs[i - 1].strip().startswith(first_word)
    return check


def verify_postscript(a: Args) -> Check:
    marker = a.text("postscript_marker")

    def check(text: str, tools: object) -> bool:
        at = text.find(marker)
        return at >= 0 and len(text[at:].strip()) > len(marker)
    return check


def validate_placeholders(a: Args) -> Check:
    n = a.integer("N")
    return lambda text, tools: len(_PLACEHOLDER.findall(text)) >= n


def verify_bullet_points(a: Args) -> Check:
    n = a.integer("N")
    return lambda text, tools: sum(1 for line in text.split("\n") if line.strip().startswith(("*", "-"))) == n


def validate_title(a: Args) -> Check:
    return lambda text, tools: bool(_TITLE.findall(text))


def validate_choice(a: Args) -> Check:
    options = a.texts("options")  # a bare string would be iterated character by character upstream
    return lambda text, tools: any(option in text for option in options)


def validate_highlighted_sections(a: Args) -> Check:
    n = a.integer("N")
    return lambda text, tools: len(_HIGHLIGHT.findall(text)) >= n


def validate_sections(a: Args) -> Check:
    n, splitter = a.integer("N"), a.text("section_splitter")
    pattern = re.compile(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", re.IGNORECASE)
    return lambda text, tools: len(pattern.split(text)) - 1 >= n


def _loads(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def validate_json_format(a: Args) -> Check:
    return lambda text, tools: _loads(text)


def validate_repeat_prompt(a: Args) -> Check:
    prompt = a.text("original_prompt")
    return lambda text, tools: text.startswith(prompt)


def validate_two_responses(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        if text.count("******") != 1:
            return False
        first, second = text.split("******")
        return first.strip() != second.strip()
    return check


def validate_uppercase(a: Args) -> Check:
    return lambda text, tools: text == text.upper()


def validate_lowercase(a: Args) -> Check:
    return lambda text, tools: text == text.lower()


def validate_frequency_capital_words(a: Args) -> Check:
    n, quantifier = a.integer("N"), a.text("quantifier")
    return lambda text, tools: quantified(len(_CAPITAL_WORD.findall(text)), quantifier, n, _tolerance(n))


def validate_end(a: Args) -> Check:
    phrase = a.text("end_phrase")
    return lambda text, tools: text.endswith(phrase)


def validate_quotation(a: Args) -> Check:
    return lambda text, tools: text.startswith('"') and text.endswith('"')


def validate_no_commas(a: Args) -> Check:
    return lambda text, tools: "," not in text


#: func_name -> builder, as open-instruct's ``IF_FUNCTIONS_MAP`` (25 functions).
OPEN_INSTRUCT_FUNCTIONS: dict[str, Callable[[Args], Check]] = {f.__name__: f for f in (
    verify_keywords, verify_keyword_frequency, validate_forbidden_words, verify_letter_frequency,
    validate_response_language, verify_paragraph_count, validate_word_constraint, verify_sentence_constraint,
    validate_paragraphs, verify_postscript, validate_placeholders, verify_bullet_points, validate_title,
    validate_choice, validate_highlighted_sections, validate_sections, validate_json_format,
    validate_repeat_prompt, validate_two_responses, validate_uppercase, validate_lowercase,
    validate_frequency_capital_words, validate_end, validate_quotation, validate_no_commas)}

#: Every argument name of those functions: other fields of a row are row metadata, not arguments.
OPEN_INSTRUCT_ARGUMENTS = frozenset({"keyword_list", "word", "N", "forbidden_words", "letter", "language",
                                     "quantifier", "first_word", "i", "postscript_marker", "options",
                                     "section_splitter", "original_prompt", "end_phrase"})
