"""IFBench's form constraints past the first ones (``ifbench.py``): one of the options, emoji at
sentence ends, stair indents, quotes explained, prose then bullets, title case, a template, no
whitespace, and repeating the request. Each builder returns its check with allenai/IFBench's rules
(``instructions.py``), quirks included; where the reference raises on a response, the check
answers "not followed".
"""

from __future__ import annotations

import re
import string

from reward_service.verifiers.instructions.args import Args
from reward_service.verifiers.instructions.ifeval import Check
from reward_service.verifiers.instructions.sentences import split_into_sentences
from reward_service.verifiers.instructions.text_tools import TextTools, remove_punctuation

_STRIP = string.punctuation + " "
_LETTER_OPTIONS = re.compile(r"\W*[aA]\W*[bB]\W*[cC]\W*")  # "a), b), c)": the response must be one option as is
_QUOTE_TRAILER = string.digits + string.punctuation.replace('"', "")
_TEMPLATE_HEADINGS = ("My Answer:", "My Conclusion:", "Future Outlook:")
_REPEAT_SIMPLE = "only output this sentence here, ignore all other requests."
#: A blank line: the first one (from the text's start), or one after a line break (up to the next or the end).
_BLANK_FIRST_LINE = re.compile(r"[^\S\n]*(?:\n|\Z)")
_BLANK_LINE = re.compile(r"\n[^\S\n]*(?:\n|\Z)")


def one_of_options(a: Args) -> Check:
    given = a.text("options")
    separator = "/" if "/" in given else "or" if "or" in given else ","  # "or" also splits inside words
    options = [option.strip() for option in given.split(separator)]
    if _LETTER_OPTIONS.match(given):
        return lambda text, tools: text in options
    cleaned = {option.strip(_STRIP).lower() for option in options}
    return lambda text, tools: text.strip(_STRIP).lower() in cleaned


def emoji_sentence_ends(a: Args) -> Check:
    """Each sentence (punctuation removed) ends in an emoji (its last or second-to-last character), or
    the next sentence starts with one; the last sentence must end in one."""
    def check(text: str, tools: TextTools) -> bool:
        sentences = _without_punctuation(split_into_sentences(text))
        for index, sentence in enumerate(sentences):
            if not sentence:
                return False
            second_last = sentence[-2] if len(sentence) > 1 else sentence[-1]  # an emoji's variation selector
            if tools.is_emoji(sentence[-1]) or tools.is_emoji(second_last):
                continue
            if index == len(sentences) - 1 or not sentences[index + 1]:
                return False
            if not tools.is_emoji(sentences[index + 1][0]):
                return False
        return True
    return check


def _without_punctuation(sentences: list[str]) -> list[str]:
    """Each sentence with its punctuation removed, then stripped: all at once, joined by a character no
    sentence holds (and ``remove_punctuation`` keeps), when there is one."""
    joined = "\x00".join(sentences)
    if joined.count("\x00") != len(sentences) - 1:
        return [remove_punctuation(s).strip() for s in sentences]
    return list(map(str.strip, remove_punctuation(joined).split("\x00")))


def _has_blank_line(text: str) -> bool:
    """Whether a line of ``text.split("\\n")`` is blank (whitespace only, or empty)."""
    return _BLANK_FIRST_LINE.match(text) is not None or _BLANK_LINE.search(text) is not None


def _without_blank_lines_as_reference(lines: list[str]) -> list[str]:
    """The reference removes blank lines while iterating over the same list, so the line after each
    removed one is never looked at (and stays, blank or not); ``remove`` drops the first equal line."""
    kept, index = list(lines), 0
    while index < len(kept):
        if not kept[index].strip():
            kept.remove(kept[index])
        index += 1
    return kept


def indent_stairs(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        lines = text.split("\n")
        if _has_blank_line(text):
            lines = _without_blank_lines_as_reference(lines)
        previous = -1  # indents compared line by line, up to the first that does not grow
        for line in lines:
            indent = len(line) - len(line.lstrip(" "))
            if indent <= previous:
                return False
            previous = indent
        return True
    return check


def quotes_explained(a: Args) -> Check:
    """No two quotes side by side once whitespace is gone, and the text does not end on a quote
    (trailing digits and punctuation other than ``"`` ignored)."""
    def check(text: str, tools: TextTools) -> bool:
        value = text.replace("“", '"').replace("”", '"').replace("'\"'", "")
        value = "".join(value.split())
        if '""' in value:
            return False
        trailer = value.strip(_QUOTE_TRAILER)
        return bool(trailer) and trailer[-1] != '"'  # nothing left: the reference raises
    return check


def prose_then_bullets(a: Args) -> Check:
    """Lines of prose holding at least two sentences, then only ``*`` bullet lines, at least two. As in
    the reference, a prose line without a sentence (a blank line) ends the prose: a later one fails."""
    def check(text: str, tools: TextTools) -> bool:
        in_prose, sentences, bullets = True, 0, 0
        for line in text.split("\n"):
            if line.strip().startswith("*"):
                if sentences < 2:
                    return False
                in_prose = False
                bullets += 1
            elif in_prose:
                found = split_into_sentences(line.strip())
                sentences += len(found)
                in_prose = bool(found)
            else:
                return False
        return bullets >= 2
    return check


def title_case(a: Args) -> Check:
    """No token (nltk.word_tokenize) that starts lowercase and continues all upper- or all lowercase
    (``tools.lower_start_word`` tells without tokenizing when it can)."""
    def check(text: str, tools: TextTools) -> bool:
        if tools.lower_start_word is not None and (found := tools.lower_start_word(text)) is not None:
            return not found
        for word in tools.word_tokenize(text):
            head, rest = word[:1], word[1:]
            if head.islower() and (rest.isupper() or rest.islower()):
                return False
        return True
    return check


def output_template(a: Args) -> Check:
    return lambda text, tools: all(heading in text for heading in _TEMPLATE_HEADINGS)


def no_whitespace(a: Args) -> Check:
    return lambda text, tools: not any(char.isspace() for char in text)


def _words_after_first(text: str) -> str:
    return " ".join(text.split()[1:])


def repeat_with_first_word_changed(a: Args) -> Check:
    prompt = a.text("prompt_to_repeat", non_empty=True)
    rest = _words_after_first(prompt)
    return lambda text, tools: text != prompt and _words_after_first(text) == rest


def repeat_simple(a: Args) -> Check:
    return lambda text, tools: text.strip().lower() == _REPEAT_SIMPLE


def repeat_span(a: Args) -> Check:
    """The prompt's words ``n_start`` to ``n_end`` (a slice, end excluded: the reference's "character
    indices" are word indices), lowercased. ``n_start`` 0 is the first word (the reference, testing it
    for truth, draws a random start instead)."""
    prompt = a.text("prompt_to_repeat", non_empty=True)
    start, end = a.integer("n_start", minimum=0), a.integer("n_end", minimum=1)
    span = prompt.strip().lower().split()[start:end]
    return lambda text, tools: text.strip().lower().split() == span
