"""IFBench's word- and sentence-level constraints past the first ones (``ifbench.py``): trigram
overlap, equal sentences, Japanese words, syllable parity, chained and growing sentences,
alliteration, keyword counts and positions. Each builder returns its check with allenai/IFBench's
rules (``instructions.py``); where the reference raises on a response (an empty sentence, nothing
to divide by), the check answers "not followed".
"""

from __future__ import annotations

import re
import string

from reward_service.verifiers.instructions.args import Args, BadInstruction
from reward_service.verifiers.instructions.ifeval import Check
from reward_service.verifiers.instructions.sentences import split_into_sentences
from reward_service.verifiers.instructions.text_tools import TextTools, remove_punctuation, split_lazily

_STRIP = string.punctuation + " "
_JAPANESE = re.compile("[\u3040-\u30ff\u4e00-\u9fff]")  # hiragana, katakana, CJK ideographs
_MULTIPLE_KEYWORD_COUNTS = (1, 2, 3, 5, 7)  # keyword1 once, keyword2 twice, ... keyword5 seven times


def _keyword(a: Args, name: str) -> str:
    """A keyword argument, stripped as the reference does; empty is refused (the reference draws a random one)."""
    keyword = a.text(name).strip()
    if not keyword:
        raise BadInstruction(f"{a.instruction_id}: {name} must not be empty")
    return keyword


def _character_trigrams(text: str) -> set[tuple[str, str, str]]:
    """``set(nltk.ngrams(text, 3))`` on a string: its character trigrams (as nltk's, tuples of characters)."""
    return set(zip(text, text[1:], text[2:]))


def _latin1_trigram_keys(data: bytes) -> set[int]:
    """The character trigrams of Latin-1 text (``data``: its bytes), each packed into one int (its three
    bytes in a 4-byte word): the same trigrams as ``_character_trigrams``, one key each, without a tuple per
    character. The packing is three strided copies and the ints come from C."""
    count = len(data) - 2
    if count <= 0:
        return set()
    packed = bytearray(4 * count)
    packed[0::4], packed[1::4], packed[2::4] = data[:count], data[1:count + 1], data[2:]
    return set(memoryview(packed).cast("I"))


#: Runs of characters outside Latin-1 (whose trigrams no Latin-1 text shares).
_NOT_LATIN1 = re.compile("[^\\x00-\\xff]+")


class ReferenceTrigrams:
    """A reference text's character trigrams, as tuples and (those of Latin-1 characters) packed."""

    def __init__(self, reference: str) -> None:
        self.tuples = _character_trigrams(reference)
        self.keys = set().union(*(_latin1_trigram_keys(run.encode("latin-1")) for run in _NOT_LATIN1.split(reference)))

    def shared(self, text: str) -> tuple[int, int]:
        """How many distinct character trigrams ``text`` has, and how many of them the reference has too."""
        try:
            data = text.encode("latin-1")
        except UnicodeEncodeError:
            trigrams = _character_trigrams(text)
            return len(trigrams), len(trigrams & self.tuples)
        keys = _latin1_trigram_keys(data)  # a Latin-1 text: packed trigrams, the reference's packed ones
        return len(keys), len(keys & self.keys)


def trigram_overlap(a: Args) -> Check:
    reference = ReferenceTrigrams(a.text("reference_text"))
    percentage = a.number("percentage", minimum=0)

    def check(text: str, tools: TextTools) -> bool:
        size, shared = reference.shared(text)
        if not size:  # under three characters: the reference divides by zero
            return False
        overlap = shared / size
        return percentage - 2 <= overlap * 100 <= percentage + 2
    return check


def three_equal_sentences(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        sentences = split_into_sentences(text)
        return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1
    return check


def japanese_every_nth_word(a: Args) -> Check:
    every = a.integer("N", minimum=1)

    def check(text: str, tools: TextTools) -> bool:
        for position, word in enumerate(text.split(), start=1):
            word = word.strip(_STRIP)
            if position % every == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
                return False
        return True
    return check


def alternating_syllable_parity(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        previous = None  # counted word by word, up to the first two neighbours of the same parity
        for word in split_lazily(remove_punctuation(text).lower()):
            parity = tools.count_syllables(word) % 2
            if parity == previous:
                return False
            previous = parity
        return True
    return check


def last_word_first_next(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        sentences = split_into_sentences(text)
        for current, following in zip(sentences, sentences[1:]):
            ending, opening = current.rstrip(_STRIP).split(), following.lstrip(_STRIP).split()
            if not ending or not opening or ending[-1].lower() != opening[0].lower():
                return False
        return True
    return check


def incrementing_word_counts(a: Args) -> Check:
    step = a.integer("small_n", minimum=0)

    def check(text: str, tools: TextTools) -> bool:
        previous = None  # counted sentence by sentence, up to the first that does not grow by ``step``
        for sentence in split_into_sentences(text):
            count = len(remove_punctuation(sentence).split())
            if previous is not None and count != previous + step:
                return False
            previous = count
        return previous is not None
    return check


def _alliteration(sentence: str) -> int:
    """Words in runs of neighbours sharing a first letter (punctuation before a word ignored), over all runs."""
    words = [w for w in (word.lstrip(_STRIP) for word in sentence.lower().split()) if w]
    total, in_run = 0, False
    for first, second in zip(words, words[1:]):
        if first[0] == second[0]:
            total += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return total


def incrementing_alliteration(a: Args) -> Check:
    def check(text: str, tools: TextTools) -> bool:
        previous = -1
        for sentence in split_into_sentences(text):
            current = _alliteration(sentence)
            if current <= previous:
                return False
            previous = current
        return True
    return check


def keywords_multiple(a: Args) -> Check:
    wanted = [(_keyword(a, f"keyword{i}").lower(), count) for i, count in enumerate(_MULTIPLE_KEYWORD_COUNTS, 1)]

    def check(text: str, tools: TextTools) -> bool:
        lowered = text.lower()
        return all(lowered.count(keyword) == count for keyword, count in wanted)
    return check


#: The tokens of ``nltk.word_tokenize`` that need not be in the text: the quotes it converts ``"`` into.
_CONVERTED_QUOTES = ("``", "''")


def _may_be_a_token(keyword: str, text: str) -> bool:
    """False when ``keyword`` is no token of ``word_tokenize(text)``: every token is a piece of the text
    (the tokenizer only inserts spaces), the quotes it converts ``"`` into aside."""
    return keyword in text or keyword in _CONVERTED_QUOTES


def keyword_at_position(a: Args) -> Check:
    keyword = _keyword(a, "keyword")
    sentence, word = a.integer("n", minimum=1), a.integer("m", minimum=1)

    def check(text: str, tools: TextTools) -> bool:
        sentences = split_into_sentences(text)
        if len(sentences) < sentence or not _may_be_a_token(keyword, sentences[sentence - 1]):
            return False
        return tools.words_at(sentences[sentence - 1], word - 1)[0] == keyword  # None: too few words
    return check


def second_and_second_last_word(a: Args) -> Check:
    keyword = _keyword(a, "keyword")

    def check(text: str, tools: TextTools) -> bool:
        if not _may_be_a_token(keyword, text):
            return False
        second, second_last = tools.words_at(text, 1, -2)  # only the first and last sentences tokenized
        return second is not None and second == second_last == keyword
    return check
