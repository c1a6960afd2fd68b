"""The 25 instructions of Google's IFEval (``instruction_following_eval/instructions.py``), one
builder each: it reads the instruction's kwargs (:class:`~.args.Args`) and returns its check, a
function ``(response, tools) -> bool``. Behaviour follows the reference checkers rule for rule,
including their quirks (keywords, forbidden words, postscript markers and section splitters are
used as regular expressions; an undetectable language counts as followed). Provenance and the
known differences from the reference: ``docs/tasks.md``, section "Instruction following".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from reward_service.verifiers.instructions.args import Args, BadInstruction, compile_pattern
from reward_service.verifiers.instructions.text_tools import TextTools, count_words

Check = Callable[[str, TextTools], bool]
Builder = Callable[[Args], Check]

#: ISO 639-1 codes IFEval accepts for ``language:response_language`` (instructions_util.LANGUAGE_CODES).
LANGUAGE_CODES = ("en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta", "te",
                  "bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi")
CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

_BULLET_STAR = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_BULLET_DASH = re.compile(r"^\s*-.*$", re.MULTILINE)
_HIGHLIGHT = re.compile(r"\*[^\n\*]*\*")
_DOUBLE_HIGHLIGHT = re.compile(r"\*\*[^\n\*]*\*\*")
_PARAGRAPH_DIVIDER = re.compile(r"\s?\*\*\*\s?")
_PLACEHOLDER = re.compile(r"\[.*?\]")
_TITLE = re.compile(r"<<[^\n]+>>")
#: IFEval's two postscript patterns (``\s*p\.\s?p\.\s?s.*$`` and ``\s*p\.\s?s\..*$``, multiline) without their
#: leading ``\s*`` and trailing ``.*$``: where a pattern matches, so does its core, and the other way round.
_PPS = re.compile(r"p\.\s?p\.\s?s")
_PS = re.compile(r"p\.\s?s\.")
_FIRST_WORD_STOP = frozenset(".,?!'\"")


def compare(count: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: ``less than`` is ``count < threshold``, anything else ``>=``."""
    return count < threshold if relation == "less than" else count >= threshold


def _detected_as(tools: TextTools, text: str, language: str) -> bool:
    detected = tools.detect_language(text)
    return True if detected is None else detected == language


def keywords_existence(a: Args) -> Check:
    patterns = [compile_pattern(a.instruction_id, k, re.IGNORECASE) for k in sorted(a.texts("keywords"))]
    return lambda text, tools: all(p.search(text) for p in patterns)


def keywords_frequency(a: Args) -> Check:
    keyword = a.text("keyword", non_empty=True).strip()  # IFEval picks a random keyword for an empty one
    pattern = compile_pattern(a.instruction_id, keyword, re.IGNORECASE)
    frequency, relation = a.integer("frequency", minimum=0), a.relation("relation")
    return lambda text, tools: compare(len(pattern.findall(text)), relation, frequency)


def keywords_forbidden_words(a: Args) -> Check:
    patterns = [compile_pattern(a.instruction_id, r"\b" + w + r"\b", re.IGNORECASE)
                for w in sorted(set(a.texts("forbidden_words")))]
    return lambda text, tools: not any(p.search(text) for p in patterns)


def keywords_letter_frequency(a: Args) -> Check:
    letter = a.text("letter")
    if len(letter) != 1 or not letter.strip():
        raise_bad(a, "letter must be one (non-space) character")
    letter = letter.lower()
    frequency, relation = a.integer("let_frequency", minimum=0), a.relation("let_relation")
    return lambda text, tools: compare(text.lower().count(letter), relation, frequency)  # one character


def language_response_language(a: Args) -> Check:
    language = a.text("language")
    if language not in LANGUAGE_CODES:
        raise_bad(a, f"language must be one of IFEval's codes {list(LANGUAGE_CODES)}, got {language!r}")
    return lambda text, tools: _detected_as(tools, text, language)


def length_number_sentences(a: Args) -> Check:
    threshold, relation = a.integer("num_sentences", minimum=0), a.relation("relation")
    return lambda text, tools: compare(len(tools.split_sentences(text)), relation, threshold)


def count_divided_paragraphs(text: str) -> int | None:
    """Paragraphs between ``***`` dividers; None when an inner one is empty (IFEval: not followed)."""
    if "***" not in text:  # no divider: the text is the one paragraph, if it is not blank
        return 1 if text.strip() else 0
    paragraphs = _PARAGRAPH_DIVIDER.split(text)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return None
    return count


def length_number_paragraphs(a: Args) -> Check:
    wanted = a.integer("num_paragraphs", minimum=0)
    return lambda text, tools: count_divided_paragraphs(text) == wanted


def length_number_words(a: Args) -> Check:
    threshold, relation = a.integer("num_words", minimum=0), a.relation("relation")
    return lambda text, tools: compare(count_words(text), relation, threshold)


def first_word_of(paragraph: str) -> str:
    """IFEval's first word: the first whitespace token, leading quotes dropped, cut at punctuation, lowercased."""
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    out = []
    for letter in word:
        if letter in _FIRST_WORD_STOP:
            break
        out.append(letter.lower())
    return "".join(out)


def length_nth_paragraph_first_word(a: Args) -> Check:
    wanted = a.integer("num_paragraphs", minimum=0)
    nth = a.integer("nth_paragraph", minimum=1)
    if nth > wanted:
        raise_bad(a, f"nth_paragraph {nth} is past num_paragraphs {wanted}")
    first = a.text("first_word").lower()

    def check(text: str, tools: TextTools) -> bool:
        paragraphs = text.split("\n\n")
        count = sum(1 for p in paragraphs if p.strip())
        if nth > count:  # the reference indexes the raw split, empty paragraphs included
            return False
        paragraph = paragraphs[nth - 1].strip()
        return bool(paragraph) and count == wanted and first_word_of(paragraph) == first
    return check


def content_number_placeholders(a: Args) -> Check:
    wanted = a.integer("num_placeholders", minimum=0)
    return lambda text, tools: len(_PLACEHOLDER.findall(text)) >= wanted


def content_postscript(a: Args) -> Check:
    marker = a.text("postscript_marker").strip()
    if marker == "P.P.S":
        pattern = _PPS
    elif marker == "P.S.":
        pattern = _PS
    else:
        pattern = compile_pattern(a.instruction_id, r"\s*" + marker.lower() + r".*$", re.MULTILINE)
    return lambda text, tools: pattern.search(text.lower()) is not None  # IFEval: findall(...) is not empty


def format_number_bullet_lists(a: Args) -> Check:
    wanted = a.integer("num_bullets", minimum=0)
    return lambda text, tools: len(_BULLET_STAR.findall(text)) + len(_BULLET_DASH.findall(text)) == wanted


def format_constrained_response(a: Args) -> Check:
    return lambda text, tools: any(option in text.strip() for option in CONSTRAINED_RESPONSES)


def count_highlights(text: str) -> int:
    """``*x*`` spans with text inside, plus ``**x**`` spans with text inside (IFEval counts both)."""
    single = sum(1 for h in _HIGHLIGHT.findall(text) if h.strip("*").strip())
    double = sum(1 for h in _DOUBLE_HIGHLIGHT.findall(text) if h.removeprefix("**").removesuffix("**").strip())
    return single + double


def format_number_highlighted_sections(a: Args) -> Check:
    wanted = a.integer("num_highlights", minimum=0)
    return lambda text, tools: count_highlights(text) >= wanted


def format_multiple_sections(a: Args) -> Check:
    splitter = a.text("section_spliter").strip()
    pattern = compile_pattern(a.instruction_id, r"\s?" + splitter + r"\s?\d+\s?")
    wanted = a.integer("num_sections", minimum=0)
    literal = re.escape(splitter) == splitter  # a plain word: a text without it has no section (split: [text])

    def check(text: str, tools: TextTools) -> bool:
        if literal and splitter not in text:
            return 0 >= wanted
        return len(pattern.split(text)) - 1 >= wanted
    return check


def is_json(text: str) -> bool:
    """IFEval's JSON check: optional ```json fences stripped, then ``json.loads`` must succeed."""
    value = (text.strip().removeprefix("```json").removeprefix("```Json").removeprefix("```JSON")
             .removeprefix("```").removesuffix("```").strip())
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return False
    return True


def format_json_format(a: Args) -> Check:
    return lambda text, tools: is_json(text)


def format_title(a: Args) -> Check:
    return lambda text, tools: any(t.lstrip("<").rstrip(">").strip() for t in _TITLE.findall(text))


def two_different_responses(text: str) -> bool:
    """Exactly two non-empty parts around ``******`` (empty only at the ends), and they differ."""
    parts = text.split("******")
    valid = []
    for index, part in enumerate(parts):
        if not part.strip():
            if index not in (0, len(parts) - 1):
                return False
        else:
            valid.append(part)
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def combination_two_responses(a: Args) -> Check:
    return lambda text, tools: two_different_responses(text)


def combination_repeat_prompt(a: Args) -> Check:
    prompt = a.text("prompt_to_repeat", non_empty=True).strip().lower()
    return lambda text, tools: text.strip().lower().startswith(prompt)


def startend_end_checker(a: Args) -> Check:
    phrase = a.text("end_phrase").strip().lower()
    return lambda text, tools: text.strip().strip('"').lower().endswith(phrase)


def change_case_capital_word_frequency(a: Args) -> Check:
    frequency, relation = a.integer("capital_frequency"), a.relation("capital_relation")
    return lambda text, tools: compare(tools.capital_words(text), relation, frequency)


def change_case_english_capital(a: Args) -> Check:
    return lambda text, tools: text.isupper() and _detected_as(tools, text, "en")


def change_case_english_lowercase(a: Args) -> Check:
    return lambda text, tools: text.islower() and _detected_as(tools, text, "en")


def punctuation_no_comma(a: Args) -> Check:
    return lambda text, tools: "," not in text


def startend_quotation(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        value = text.strip()
        return len(value) > 1 and value[0] == '"' and value[-1] == '"'
    return check


def raise_bad(a: Args, message: str) -> None:
    raise BadInstruction(f"{a.instruction_id}: {message}")


#: instruction id -> builder, as IFEval's ``instructions_registry.INSTRUCTION_DICT`` (25 ids).
IFEVAL_INSTRUCTIONS: dict[str, Builder] = {
    "keywords:existence": keywords_existence,
    "keywords:frequency": keywords_frequency,
    "keywords:forbidden_words": keywords_forbidden_words,
    "keywords:letter_frequency": keywords_letter_frequency,
    "language:response_language": language_response_language,
    "length_constraints:number_sentences": length_number_sentences,
    "length_constraints:number_paragraphs": length_number_paragraphs,
    "length_constraints:number_words": length_number_words,
    "length_constraints:nth_paragraph_first_word": length_nth_paragraph_first_word,
    "detectable_content:number_placeholders": content_number_placeholders,
    "detectable_content:postscript": content_postscript,
    "detectable_format:number_bullet_lists": format_number_bullet_lists,
    "detectable_format:constrained_response": format_constrained_response,
    "detectable_format:number_highlighted_sections": format_number_highlighted_sections,
    "detectable_format:multiple_sections": format_multiple_sections,
    "detectable_format:json_format": format_json_format,
    "detectable_format:title": format_title,
    "combination:two_responses": combination_two_responses,
    "combination:repeat_prompt": combination_repeat_prompt,
    "startend:end_checker": startend_end_checker,
    "change_case:capital_word_frequency": change_case_capital_word_frequency,
    "change_case:english_capital": change_case_english_capital,
    "change_case:english_lowercase": change_case_english_lowercase,
    "punctuation:no_comma": punctuation_no_comma,
    "startend:quotation": startend_quotation,
}
