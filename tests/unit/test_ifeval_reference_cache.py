"""The ifeval task parses a reference and builds its instructions once, for every response to it, and a
reference that differs in any way (even by a value that compares equal) is parsed afresh."""

from __future__ import annotations

import pytest

import reward_service.tasks.ifeval_task as ifeval_task
from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference
from reward_service.tasks.ifeval_task import IfevalTask, reference_key

WORDS = {"instruction_id_list": ["length_constraints:number_words"],
         "kwargs": [{"num_words": 3, "relation": "at least"}]}


def test_a_reference_is_built_once_for_many_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, ...]] = []
    original = ifeval_task.build_instructions

    def counting(ids, *rest):  # type: ignore[no-untyped-def]
        built.append(tuple(ids))
        return original(ids, *rest)

    monkeypatch.setattr(ifeval_task, "build_instructions", counting)
    task = IfevalTask()
    scores = [task.score(text, dict(WORDS)).score for text in ("one two three", "one two", "a b c d")]
    assert scores == [1.0, 0.0, 1.0]
    assert built == [("length_constraints:number_words",)]


def test_keys_tell_apart_values_that_compare_equal() -> None:
    keys = {reference_key({"kwargs": [{"num_words": value}]}) for value in (1, 1.0, True, "1", [1], (1,))}
    assert len(keys) == 6 and None not in keys
    assert reference_key({"a": 1, "b": 2}) != reference_key({"b": 2, "a": 1})
    assert reference_key([WORDS]) is None  # only plain dicts are kept


def test_a_cached_reference_does_not_answer_for_an_equal_comparing_bad_one() -> None:
    task = IfevalTask()
    assert task.score("one two three", WORDS).status == RolloutStatus.OK
    bad = {"instruction_id_list": WORDS["instruction_id_list"], "kwargs": [{"num_words": True, "relation": "at least"}]}
    with pytest.raises(InvalidReference):
        task.score("one two three", bad)


def test_an_instruction_shared_by_two_references_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, ...]] = []
    original = ifeval_task.build_instructions
    monkeypatch.setattr(ifeval_task, "build_instructions",
                        lambda ids, *rest: built.append(tuple(ids)) or original(ids, *rest))
    task = IfevalTask()
    comma = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    both = {"instruction_id_list": ["punctuation:no_comma", *WORDS["instruction_id_list"]],
            "kwargs": [{}, *WORDS["kwargs"]]}
    assert [task.score("one two three", ref).score for ref in (comma, WORDS, both)] == [1.0, 1.0, 1.0]
    assert built == [("punctuation:no_comma",), ("length_constraints:number_words",)]
