"""Strict and loose scoring, aggregation, and the row shapes a reference comes in."""

from __future__ import annotations

import pytest

from reward_service.tasks.instructions_nlp import ENGLISH_TOOLS
from reward_service.verifiers.instructions import (
    IFEVAL_INSTRUCTIONS,
    BadInstruction,
    aggregate,
    build_instructions,
    grade,
    parse_instructions,
    response_variants,
)


def built(*ids, kwargs=None):
    return build_instructions(ids, kwargs or [{}] * len(ids), IFEVAL_INSTRUCTIONS)


def test_loose_has_ifevals_eight_variants_in_order():
    assert response_variants("intro\n*body*\noutro", "loose") == (
        "intro\n*body*\noutro", "intro\nbody\noutro", "*body*\noutro", "intro\n*body*", "*body*",
        "body\noutro", "intro\nbody", "body")


def test_strict_checks_the_response_alone():
    assert response_variants("a\nb", "strict") == ("a\nb",)


def test_loose_forgives_a_chatty_first_line():
    instructions = built("startend:quotation")
    response = 'Sure, here it is:\n"quoted answer"'
    assert grade(instructions, response, ENGLISH_TOOLS, "strict") == [False]
    assert grade(instructions, response, ENGLISH_TOOLS, "loose") == [True]


def test_loose_strips_markdown_asterisks():
    instructions = build_instructions(["startend:end_checker"], [{"end_phrase": "the end."}], IFEVAL_INSTRUCTIONS)
    assert grade(instructions, "Story... **The end.**", ENGLISH_TOOLS, "strict") == [False]
    assert grade(instructions, "Story... **The end.**", ENGLISH_TOOLS, "loose") == [True]


def test_a_blank_response_follows_nothing_even_no_comma():
    assert grade(built("punctuation:no_comma"), "  \n ", ENGLISH_TOOLS, "strict") == [False]
    assert grade(built("punctuation:no_comma"), "  \n ", ENGLISH_TOOLS, "loose") == [False]


def test_aggregation_all_is_all_or_nothing():
    assert aggregate([True, False, True], "all") == 0.0
    assert aggregate([True, True], "all") == 1.0


def test_aggregation_fraction_is_the_share_followed():
    assert aggregate([True, False, True, True], "fraction") == 0.75


def test_no_results_aggregate_to_zero():
    assert aggregate([], "fraction") == 0.0


def test_unknown_mode_is_a_programming_error():
    with pytest.raises(ValueError):
        grade(built("punctuation:no_comma"), "x", ENGLISH_TOOLS, "lenient")


def test_ifeval_row_with_null_kwargs_parses():
    row = parse_instructions({"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"],
                              "kwargs": [{"num_words": None}]})
    assert row.instruction_ids == ("punctuation:no_comma",) and row.prompt == "p" and row.dialect == "ifeval"


def test_gym_grading_mode_becomes_the_rows_aggregation():
    assert parse_instructions({"instruction_id_list": ["a"], "kwargs": [{}], "grading_mode": "fraction"}
                              ).aggregation == "fraction"
    assert parse_instructions({"instruction_id_list": ["a"], "kwargs": [{}], "grading_mode": "binary"}
                              ).aggregation == "all"


def test_gym_verifier_metadata_is_read():
    row = parse_instructions({"id": 3, "verifier_metadata": {"instruction_id_list": ["x"], "kwargs": [None]}})
    assert row.instruction_ids == ("x",) and row.kwargs == ({},)


def test_open_instruct_literal_string_uses_its_first_element():
    row = parse_instructions({"answer": "[{'instruction_id': ['a', 'b'], 'kwargs': [None, {'n': 2}]}]"})
    assert row.instruction_ids == ("a", "b") and row.kwargs == ({}, {"n": 2})


def test_tulu_func_name_row_keeps_only_argument_fields():
    row = parse_instructions({"answer": '{"func_name": "validate_end", "end_phrase": "Bye.", "N": null}',
                              "dataset": "ifeval"})
    assert row.dialect == "open_instruct" and row.instruction_ids == ("validate_end",)
    assert row.kwargs == ({"end_phrase": "Bye."},)


@pytest.mark.parametrize("reference", [
    {},
    {"answer": "just a gold string"},
    {"instruction_id_list": [], "kwargs": []},
    {"instruction_id_list": ["a", "b"], "kwargs": [{}]},
    {"instruction_id_list": "punctuation:no_comma", "kwargs": [{}]},
    {"instruction_id_list": ["a"], "kwargs": [{}], "grading_mode": "partial"},
    {"ground_truth": "[]"},
])
def test_unusable_references_are_rejected(reference):
    with pytest.raises(BadInstruction):
        parse_instructions(reference)
