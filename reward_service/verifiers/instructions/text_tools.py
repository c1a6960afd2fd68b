"""The language tools an instruction check needs, passed in (the checks themselves stay pure).

Sentence splitting, word tokenization, language detection, syllable counts and emoji lookup need
data (Punkt parameters, language profiles, syllapy's word list, emoji's table) that a pure verifier
must not load itself; the task builds a :class:`TextTools` once per process and hands it to every
check (``reward_service/tasks/instructions_nlp.py`` builds the English one IFEval and IFBench use:
nltk's Punkt and Treebank tokenizers, langdetect with a fixed seed, ``syllapy``, ``emoji``).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import regex

#: nltk's ``RegexpTokenizer(r"\w+")`` compiles with the ``regex`` engine since nltk 3.10.3, whose ``\w``
#: also takes marks, joiners and connector punctuation (stdlib ``re`` splits "❤️" or a Devanagari word there).
_WORD = regex.compile(r"\w+")
#: Every ASCII character to ``a`` when it is a word character (``[A-Za-z0-9_]``), else to a space: the words
#: of an ASCII text are then the runs ``bytes.split`` finds.
_ASCII_WORD_TABLE = bytes(ord("a") if code < 128 and (chr(code).isalnum() or chr(code) == "_") else ord(" ")
                          for code in range(256))


@dataclass(frozen=True)
class TextTools:
    """``split_sentences`` (Punkt), ``word_tokenize`` (nltk.word_tokenize: Punkt sentences, then the
    Treebank word tokenizer), ``detect_language`` (an ISO 639-1 code such as ``en``, or None when the
    text gives the detector nothing to go on: IFEval counts that as followed), ``count_syllables``
    (``syllapy.count``, IFBench's) and ``is_emoji`` (``emoji.is_emoji``, IFBench's)."""

    split_sentences: Callable[[str], Sequence[str]]
    word_tokenize: Callable[[str], Sequence[str]]
    detect_language: Callable[[str], str | None]
    count_syllables: Callable[[str], int]
    is_emoji: Callable[[str], bool]
    #: The word tokenizer of one sentence, when ``word_tokenize`` is ``split_sentences`` then this on each
    #: sentence (nltk's is): lets one response's texts share the sentences they have in common.
    sentence_words: Callable[[str], Sequence[str]] | None = None
    #: How many of ``word_tokenize``'s tokens are upper case, counted without tokenizing, or None when it
    #: cannot tell (``capital_words`` then tokenizes).
    count_capital_words: Callable[[str], int | None] | None = None
    #: Whether a token ``w`` of ``word_tokenize(text)`` has ``w[0].islower()`` and ``w[1:]`` all upper or all
    #: lower case (IFBench's ``format:title_case`` fails on one), told without tokenizing, or None when it
    #: cannot tell (the check then tokenizes).
    lower_start_word: Callable[[str], bool | None] | None = None

    def capital_words(self, text: str) -> int:
        """How many of ``word_tokenize(text)``'s tokens are upper case (``str.isupper``): IFEval's count."""
        if self.count_capital_words is not None and (count := self.count_capital_words(text)) is not None:
            return count
        return sum(1 for word in self.word_tokenize(text) if word.isupper())

    def words_at(self, text: str, *indices: int) -> tuple[str | None, ...]:
        """``word_tokenize(text)[index]`` for each index (a negative one counts from the end), None where out
        of range; with ``sentence_words``, the text split once and only the sentences up to each token (from
        the front or the back) tokenized."""
        if self.sentence_words is None:
            words = self.word_tokenize(text)
            return tuple(words[i] if -len(words) <= i < len(words) else None for i in indices)
        sentences = self.split_sentences(text)
        words = _memo(self.sentence_words) if len(indices) > 1 else self.sentence_words  # a sentence tokenized once
        return tuple(_word_at(sentences, words, index) for index in indices)  # type: ignore[arg-type]


def _word_at(sentences: Sequence[str], sentence_words: Callable[[str], Sequence[str]], index: int) -> str | None:
    """The token at ``index`` of the sentences' tokens, tokenizing them from the front (or the back) up to it."""
    wanted = index if index >= 0 else -index - 1
    for sentence in (sentences if index >= 0 else reversed(sentences)):
        words = sentence_words(sentence)
        if wanted < len(words):
            return words[wanted] if index >= 0 else words[-1 - wanted]
        wanted -= len(words)
    return None


def _memo(fn: Callable[[str], object]) -> Callable[[str], object]:
    known: dict[str, object] = {}

    def cached(text: str) -> object:
        if text not in known:
            known[text] = fn(text)
        return known[text]
    return cached


def per_response(tools: TextTools) -> TextTools:
    """``tools`` for one response's grading: each text split, tokenized or detected once, whichever
    instructions ask and on whichever of the loose variants (several are often the same text)."""
    split = _memo(tools.split_sentences)
    words = _memo(tools.word_tokenize)
    sentence_words = None
    if tools.sentence_words is not None:
        sentence_words = _memo(tools.sentence_words)

        def by_sentence(text: str) -> list[str]:
            return [w for sentence in split(text) for w in sentence_words(sentence)]  # type: ignore[attr-defined]
        words = _memo(by_sentence)
    return TextTools(split_sentences=split,  # type: ignore[arg-type]
                     word_tokenize=words,  # type: ignore[arg-type]
                     detect_language=_memo(tools.detect_language),  # type: ignore[arg-type]
                     count_syllables=tools.count_syllables, is_emoji=tools.is_emoji,
                     sentence_words=sentence_words,  # type: ignore[arg-type]
                     count_capital_words=tools.count_capital_words, lower_start_word=tools.lower_start_word)


def count_words(text: str) -> int:
    """IFEval's and IFBench's word count: runs of word characters, as nltk's ``RegexpTokenizer(r"\\w+")``
    (on ASCII text both engines' ``\\w`` is ``[A-Za-z0-9_]``: its runs are counted without a regex)."""
    if text.isascii():
        return count_runs(text.encode("ascii").translate(_ASCII_WORD_TABLE), b"a")
    return len(_WORD.findall(text))


def count_runs(classes: bytes, member: bytes) -> int:
    """How many runs of ``member`` (one byte) ``classes`` holds, where every other byte is a space: each run
    but a leading one follows a space. Counted without making an object per run."""
    return classes.count(b" " + member) + classes.startswith(member)


#: ``split_lazily``'s first piece: most checks that stop early stop within the first few words.
_FIRST_WORDS = 16


def split_in_pieces(text: str) -> Iterator[list[str]]:
    """``text.split()``'s words in order, in growing pieces (16 words, then 4 times more each time): a check
    that stops early does not split the whole text. ``str.split(None, n)`` splits off the first ``n`` words
    and leaves the rest as the last item, its leading whitespace stripped, which splits into the remaining
    words."""
    size = _FIRST_WORDS
    while text:
        words = text.split(None, size)
        if len(words) <= size:
            yield words
            return
        text = words.pop()
        yield words
        size *= 4


def split_lazily(text: str) -> Iterator[str]:
    """``text.split()``'s words one by one, split off in growing pieces (``split_in_pieces``)."""
    for words in split_in_pieces(text):
        yield from words


_ASCII_PUNCTUATION = string.punctuation.encode("ascii")


def remove_punctuation(text: str) -> str:
    """``text.translate(str.maketrans("", "", string.punctuation))``: ASCII punctuation deleted (IFBench's
    cleaning), done on the UTF-8 bytes, where no byte of a multi-byte character is ASCII (``str.translate``
    looks every character of non-ASCII text up in the table one by one; lone surrogates pass as they are)."""
    return text.encode("utf-8", "surrogatepass").translate(None, _ASCII_PUNCTUATION).decode("utf-8", "surrogatepass")
