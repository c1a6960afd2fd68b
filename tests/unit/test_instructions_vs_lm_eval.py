"""Differential: our IFEval checks against lm-evaluation-harness's copy of Google's (the peer),
strict and loose, on generated responses. Every instruction, several argument sets each."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFEVAL_INSTRUCTIONS, build_instructions, grade

pytest.importorskip("lm_eval", reason="the peer: pip install --no-deps lm-eval==0.4.13")

CASES = [
    ("keywords:existence", {"keywords": ["cat", "dog"]}),
    ("keywords:frequency", {"keyword": "the", "frequency": 2, "relation": "at least"}),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}),
    ("keywords:forbidden_words", {"forbidden_words": ["cat", "sun"]}),
    ("keywords:letter_frequency", {"letter": "e", "let_frequency": 5, "let_relation": "less than"}),
    ("keywords:letter_frequency", {"letter": "a", "let_frequency": 3, "let_relation": "at least"}),
    ("language:response_language", {"language": "en"}),
    ("language:response_language", {"language": "fr"}),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"}),
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "less than"}),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}),
    ("length_constraints:number_words", {"num_words": 12, "relation": "less than"}),
    ("length_constraints:number_words", {"num_words": 8, "relation": "at least"}),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "the"}),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 3, "nth_paragraph": 1, "first_word": "dr"}),
    ("detectable_content:number_placeholders", {"num_placeholders": 1}),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}),
    ("detectable_format:constrained_response", {}),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2}),
    ("detectable_format:multiple_sections", {"section_spliter": " Section ", "num_sections": 1}),
    ("detectable_format:json_format", {}),
    ("detectable_format:title", {}),
    ("combination:two_responses", {}),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write about the cat."}),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}),
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"}),
    ("change_case:capital_word_frequency", {"capital_frequency": 1, "capital_relation": "less than"}),
    ("change_case:english_capital", {}),
    ("change_case:english_lowercase", {}),
    ("punctuation:no_comma", {}),
    ("startend:quotation", {}),
]
IDS = [c[0] for c in CASES]
KWARGS = [c[1] for c in CASES]

FRAGMENTS = [
    "The cat sat.", "the dog ran", " ", "\n", "\n\n", "***", "\n***\n", "******", "*", "**", "*bold*", "**big**",
    "<<A Title>>", "<<", ">>", "[name]", "[", "]", "P.S. ", "p. p. s ", "P.P.S", "SECTION 1", "Section 2", " 3 ",
    "My answer is yes.", "My answer is maybe.", '"', '{"a": 1}', "```json", "```", "[1, 2]", "Dr. Smith", "Mr.",
    "U.S.A.", "e.g.", "NASA", "USA", "OK", "HELLO WORLD", "hello world", "Any other questions?", ", ", "!", "?",
    "Write about the cat.", "write ABOUT the CAT.", "* item", "- item", "  * nested", "Bonjour, je suis là.",
    "c'est la vie", "Das ist gut.", "Ünïcödé", "3.14", "Hello.World", "it's", "'quoted'", "The", "the", "—", "\t",
    "Sun", "sunny", "ee", "aaa",
]

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                     derandomize=True)
responses = st.one_of(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join),
                      st.text(max_size=80))


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    from tests.ifeval_peer import IfevalPeer
    return IfevalPeer(tmp_path_factory.mktemp("nltk_data"))


@pytest.fixture(scope="module")
def ours():
    return build_instructions(IDS, KWARGS, IFEVAL_INSTRUCTIONS)


def test_peer_registers_the_same_25_ids(peer):
    assert set(peer.registry) == set(IFEVAL_INSTRUCTIONS)


def test_cases_cover_every_instruction():
    assert set(IDS) == set(IFEVAL_INSTRUCTIONS)


@_settings
@given(response=responses)
def test_strict_agrees_with_the_peer(peer, ours, response):
    assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(IDS, KWARGS, response)


@_settings
@given(response=responses)
def test_loose_agrees_with_the_peer(peer, ours, response):
    assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(IDS, KWARGS, response)


@pytest.mark.parametrize("response", [
    "", "   ", "Dr. Smith went to Washington. He arrived at 3 p.m. and left! Did he?",
    "SECTION 1\nThe cat.\nSECTION 2\nThe dog.\n***\nthe end P.S. bye", '"HELLO, WORLD. ANY OTHER QUESTIONS?"',
    "Sure:\n```json\n{\"a\": [1, 2]}\n```\nThanks", "<<Title>>\n\n*a* **b** *c*\n\n- x\n- y\nAny other questions?",
    "Write about the cat.\nThe cat is [adjective].\n******\nThe dog is [noun].",
])
def test_hand_picked_responses_agree(peer, ours, response):
    assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(IDS, KWARGS, response)
    assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(IDS, KWARGS, response)


@_settings
@given(response=st.tuples(st.sampled_from(["", "\n", " \n", "\n\n"]), st.lists(st.sampled_from(FRAGMENTS), max_size=24)
                          .map("".join), st.sampled_from(["", "\n", "\n \n"])).map("".join))
def test_the_task_grades_the_response_as_sent_with_its_surrounding_space(peer, response):
    """Through ``IfevalTask``: a response with a ``[`` or ``<`` but no special token keeps its leading and
    trailing space and lines (loose drops its first and last line: a blank first line is one)."""
    from reward_service.tasks.ifeval_task import IfevalTask

    reference = {"instruction_id_list": IDS, "kwargs": KWARGS}
    for mode, theirs in (("strict", peer.strict), ("loose", peer.loose)):
        ours = list(IfevalTask(mode=mode).score(response, reference).components.values())
        assert ours == [float(ok) for ok in theirs(IDS, KWARGS, response)], mode


def test_a_leading_line_break_and_a_placeholder_are_graded_as_lm_eval_does(peer):
    from reward_service.tasks.ifeval_task import IfevalTask

    ids, kwargs, response = ["length_constraints:number_words"], [{"num_words": 2, "relation": "less than"}], \
        "\nfoo [x] baz\nbar\n"
    reference = {"instruction_id_list": ids, "kwargs": kwargs}
    assert peer.loose(ids, kwargs, response) == [False]
    assert IfevalTask(mode="loose").score(response, reference).components == {"0:length_constraints:number_words": 0.0}


def test_the_bench_corpus_agrees_strict_and_loose(peer):
    """``make bench-tasks``'s rows, scored through the task (its fast tools and per-reference cache)."""
    from bench.bench_tasks_instructions import make_rows
    from reward_service.tasks.ifeval_task import IfevalTask

    for mode, theirs in (("strict", peer.strict), ("loose", peer.loose)):
        task = IfevalTask(mode=mode)
        for reference, response in make_rows(300, 0):
            ours = list(task.score(response, reference).components.values())
            assert ours == [float(ok) for ok in theirs(reference["instruction_id_list"], reference["kwargs"],
                                                           response)], (mode, reference, response)
