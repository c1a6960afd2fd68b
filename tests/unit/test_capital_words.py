"""``count_capital_words`` counts what ``nltk.word_tokenize`` then ``str.isupper`` count, or says it
cannot tell (None): checked against nltk itself on the bench corpus and its loose variants, on
hand-picked traps, on seeded random texts and on hypothesis' texts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.bench_tasks_instructions import make_rows
from reward_service.tasks.capital_words import count_capital_words
from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS, word_tokenize
from reward_service.verifiers.instructions.grading import response_variants

#: The ASCII characters the tokenizer treats differently (the apostrophe aside), letters of both cases,
#: digits and spaces: texts the fast path decides.
ASCII_ALPHABET = "AAABBZaabz0129 \n\t.,:;--...!?\"`*()[]{}<>@#$%&/+=_~^|\\"
#: And the apostrophe, typographic quotes, dashes, non-ASCII letters and odd spaces.
ALPHABET = ASCII_ALPHABET + "'«»“”‘’„\u2013\u2014éÉßǅ\u00a0\x1c"
TRAPS = [
    "NASA said so. The USA, too.", "P.S. I said: OK.", "U.S.A. and U.K.", "A,B and C:D and 3:30PM and A,1B",
    "A.:1B then A.:B", "CANNOT go, GONNA go, WANNA go. Cannot", "I'm here, DON'T go, it's JOHN'S.",
    "\"QUOTE\" (PAREN) [BR] {CU} <AN> *ST* A--B A...B A..B A-B A/B", "Dr. Smith met Mr. JONES at 5 p.m.",
    "ÉCOLE and École", "X.\"Y Z.)W V.*U", "end with CAPS.", "``A'' `B`", "A;B@C#D$E%F&G?H!I", "\x1cA B\x1cC",
    "A1B2 C_D 1CANNOT CANNOT1 _GONNA", "I CANNOT", "GIMME", "GOTTA GO", "LEMME", "WANNA go", "GONNA",
    "A,9B A:0B A,,B A::9B A,:9B", "A.B.C. D.E", "Sentence one. SENTENCE TWO! Three? FOUR: five, SIX",
]


def nltk_count(text: str) -> int:
    """nltk's own answer: Punkt sentences, then nltk's Treebank tokenizer, then ``str.isupper``."""
    return sum(1 for token in word_tokenize(text) if token.isupper())


def agrees(text: str) -> bool:
    fast = count_capital_words(text)
    return fast is None or fast == nltk_count(text)


def test_the_count_is_nltks_on_the_bench_corpus_and_every_loose_variant() -> None:
    texts = {variant for _, response in make_rows(300, 0) for variant in response_variants(response, "loose")}
    decided = [text for text in texts if count_capital_words(text) is not None]
    assert [text for text in texts if not agrees(text)] == []
    assert len(decided) == len(texts)  # the bench's texts are all ASCII without apostrophes: all decided here


@pytest.mark.parametrize("text", TRAPS)
def test_the_count_is_nltks_on_the_traps(text: str) -> None:
    assert agrees(text)


def test_undecided_texts_are_the_ones_with_an_apostrophe_non_ascii_capital_contraction_or_dot_colon() -> None:
    for text in ("I'm OK", "ÉCOLE", "GONNA", "A.:1B", "Caf\u00e9 X"):
        assert count_capital_words(text) is None
    assert count_capital_words("it's fine, café and gonna") == 0


def test_the_count_is_nltks_on_seeded_random_texts() -> None:
    rng = random.Random(21)
    words = ["NASA", "USA", "The", "the", "P.S.", "U.S.", "Dr.", "e.g.", "A", "I", "OK", "ok", "3:30", "A,B",
             "--", "...", "(", ")", "\"", "*", "x.y", "X.Y", "1,000", "A-B", "a-B", "B:", ",", ".", "!", "?"]
    seps = [" ", " ", " ", "\n", "\n\n", "", "\t"]
    bad = []
    for _ in range(3000):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 40)))
        if not agrees(text):
            bad.append(text)
    assert bad == []


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(alphabet=ASCII_ALPHABET, max_size=80))
def test_the_count_is_nltks_on_ascii_text(text: str) -> None:
    assert agrees(text)


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_the_count_is_nltks_on_any_text(text: str) -> None:
    assert agrees(text)


def test_the_tools_count_through_the_fast_path_and_fall_back_to_tokens() -> None:
    for text in ("NASA and the USA", "I'm NOT sure, DON'T ask", "ÉCOLE NASA"):
        assert ENGLISH_TOOLS.capital_words(text) == nltk_count(text)
