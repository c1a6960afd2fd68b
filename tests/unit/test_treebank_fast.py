"""``plain_tokens`` gives nltk's Treebank tokens (``NLTKWordTokenizer().tokenize``) for the sentences it
decides, and ``word_tokenize`` (which uses it) equals Punkt then nltk's own Treebank tokenizer: on
IFBench's responses, the bench corpus, seeded random sentences and hypothesis' texts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize.destructive import NLTKWordTokenizer

from bench.bench_tasks_instructions import make_rows
from reward_service.tasks.instructions_nlp import split_sentences, word_tokenize
from reward_service.tasks.treebank_fast import plain_tokens
from tests.ifeval_peer import IfbenchPeer

NLTK = NLTKWordTokenizer().tokenize
#: The characters a plain sentence may hold, and the ones next to them the rules treat apart.
PLAIN_ALPHABET = "aAbZ09 \n\t;@#$%&?!*-,:.()[]{}<>"
ALPHABET = PLAIN_ALPHABET + "'\"`/_«»“”‘’–—é\x1c\u00a0"
TRAPS = ["Hello world.", "1.", "a, b, c", "a,b", "1,000 people", "3:30 pm", "a: b", "x .", "a. ", "a--b", "a-b",
         "Cannot go", "I wanna go", "GONNA", "a,,b", "a,:b", "a,.", "a:.", "a.b.", "What?!", "50% off*", "a;b@c#d",
         "end,", "end:", "- a -", "a -- b.", "..", ". a", "\x0ba,\x0bb.", "(a).", "(a.)", "a (b) c.", ",(a)", "a:[b]"]


def nltk_words(text: str) -> list[str]:
    """nltk.word_tokenize: Punkt sentences, then nltk's own Treebank tokenizer on each."""
    return [token for sentence in split_sentences(text) for token in NLTK(sentence)]


def agrees(sentence: str) -> bool:
    plain = plain_tokens(sentence)
    return plain is None or plain == NLTK(sentence)


@pytest.mark.parametrize("sentence", TRAPS)
def test_the_tokens_are_nltks_on_the_traps(sentence: str) -> None:
    assert agrees(sentence)


def test_known_answers_and_undecided_sentences() -> None:
    assert plain_tokens("Hello, world: 3:30 - 50% off!") == ["Hello", ",", "world", ":", "3:30", "-", "50", "%",
                                                              "off", "!"]
    assert plain_tokens("It is 1,000.") == ["It", "is", "1,000", "."]
    for sentence in ("I can't", "a--b", "Cannot go", "a,,b", "end,", "(a.)", "a.b.", "café"):
        assert plain_tokens(sentence) is None


def test_word_tokenize_is_nltks_on_ifbenchs_responses_and_the_bench_corpus() -> None:
    try:
        responses = [response for _, response in IfbenchPeer().rows()]
    except ImportError:
        responses = []
    texts = responses + [response for _, response in make_rows(200, 0)]
    assert [text for text in texts if word_tokenize(text) != nltk_words(text)] == []
    sentences = [s for text in responses for s in split_sentences(text)]
    assert sum(plain_tokens(s) is not None for s in sentences) >= 0.5 * len(sentences)  # most skip nltk


def test_the_tokens_are_nltks_on_seeded_random_sentences() -> None:
    rng = random.Random(21)
    sentences = ["".join(rng.choice(PLAIN_ALPHABET + "xc") for _ in range(rng.randint(0, 14))) for _ in range(30000)]
    assert [s for s in sentences if not agrees(s)] == []
    assert sum(plain_tokens(s) is not None for s in sentences) > 10000  # the fast path is exercised


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(st.text(alphabet=PLAIN_ALPHABET, max_size=40))
def test_the_tokens_are_nltks_on_plain_alphabet_text(sentence: str) -> None:
    assert agrees(sentence)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_word_tokenize_is_nltks_on_any_text(text: str) -> None:
    assert agrees(text)
    assert word_tokenize(text) == nltk_words(text)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_every_nltk_token_is_a_piece_of_the_text_or_a_converted_quote(text: str) -> None:
    """What ``words:words_position`` and ``words:keywords_specific_position`` rely on to answer early."""
    assert [token for token in nltk_words(text) if token not in text and token not in ("``", "''")] == []
