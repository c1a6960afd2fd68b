"""JSON found and parsed strictly, JSON equality, and the ``json_valid`` / ``json_schema`` tasks."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, InvalidTaskOptions, TaskInput
from reward_service.tasks.json_task import JsonSchemaTask, JsonValidTask
from reward_service.verifiers.structured import json_equal, parse_completion
from reward_service.verifiers.structured.json_text import json_text
from reward_service.verifiers.structured.schema import strictified

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name"]}


@pytest.mark.parametrize("completion,mode,text", [
    ('{"a": 1}', "whole", '{"a": 1}'), ('Here:\n```json\n{"a": 1}\n```\nDone', "fenced", '{"a": 1}'),
    ('```\n[1]\n```', "fenced", "[1]"), ('```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```', "auto", '{"b": 2}'),
    ("<think>{x}</think> [1, 2]", "auto", "[1, 2]"), ("no fence", "fenced", None), ("   ", "whole", None),
])
def test_where_the_json_is_taken_from(completion: str, mode: str, text) -> None:
    assert json_text(completion, mode) == text


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "{'a': 1}", '{"a": 1,}', "[1] [2]", "{", '{"a": 1} trailing'])
def test_strict_parsing_rejects_what_rfc_8259_does_not_allow(text: str) -> None:
    assert not parse_completion(text, "whole").ok


def test_deep_nesting_is_invalid_not_an_exception() -> None:
    assert not parse_completion("[" * 100_000 + "]" * 100_000, "whole").ok


@pytest.mark.parametrize("a,b,equal", [
    (1, 1.0, True), (True, 1, False), (False, 0, False), ({"a": [1, 2]}, {"a": [1, 2.0]}, True),
    ([1, 2], [2, 1], False), ({"a": 1}, {"a": 1, "b": None}, False), (None, None, True), ("1", 1, False)])
def test_json_equality_is_by_value_with_booleans_apart(a, b, equal: bool) -> None:
    assert json_equal(a, b) is equal


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parsing_never_raises_on_arbitrary_text(text: str) -> None:
    for mode in ("auto", "whole", "fenced"):
        parse_completion(text, mode)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_value_round_trips_as_valid(value) -> None:
    assert JsonValidTask().score(json.dumps(value), {}).score == 1.0


def test_json_valid_statuses() -> None:
    assert JsonValidTask().score("", {}).status == RolloutStatus.NO_ANSWER
    bad = JsonValidTask().score("{oops}", {})
    assert (bad.score, bad.status, bad.components) == (0.0, RolloutStatus.OK, {"valid_json": 0.0})


def test_json_valid_top_level_constrains_the_kind_of_value() -> None:
    assert JsonValidTask(top_level="object").score("[1]", {}).score == 0.0
    assert JsonValidTask(top_level="container").score("[1]", {}).score == 1.0
    assert JsonValidTask(top_level="array").score('"s"', {}).score == 0.0


def test_json_valid_extract_whole_refuses_a_fenced_block() -> None:
    assert JsonValidTask(extract="whole").score('```json\n{"a": 1}\n```', {}).score == 0.0
    assert JsonValidTask(extract="fenced").score('```json\n{"a": 1}\n```', {}).score == 1.0


def test_a_conforming_answer_scores_1() -> None:
    outcome = JsonSchemaTask().score('```json\n{"name": "Ada", "age": 36}\n```', {"schema": PERSON})
    assert (outcome.score, outcome.components) == (1.0, {"valid_json": 1.0, "conforms": 1.0})


def test_a_non_conforming_answer_scores_0_and_says_where() -> None:
    outcome = JsonSchemaTask().score('{"name": "Ada", "age": -1}', {"schema": PERSON})
    assert outcome.score == 0.0 and outcome.detail.startswith("age: -1 is less than the minimum")


def test_invalid_json_scores_0_for_the_schema_task() -> None:
    outcome = JsonSchemaTask().score('{"name": ', {"schema": PERSON})
    assert (outcome.score, outcome.components["valid_json"]) == (0.0, 0.0)


def test_gyms_schema_str_and_schema_type_rows_are_read() -> None:
    row = {"schema_str": json.dumps(PERSON), "schema_type": "json"}
    assert JsonSchemaTask().score('{"name": "Ada"}', row).score == 1.0


def test_strict_requires_every_property_and_forbids_others_like_gym() -> None:
    assert JsonSchemaTask().score('{"name": "Ada"}', {"schema": PERSON}).score == 1.0
    assert JsonSchemaTask(strict=True).score('{"name": "Ada"}', {"schema": PERSON}).score == 0.0
    assert JsonSchemaTask(strict=True).score('{"name": "Ada", "age": 1, "x": 0}', {"schema": PERSON}).score == 0.0


def test_strictifying_walks_objects_not_lists() -> None:
    schema = {"properties": {"a": {"properties": {"b": {}}}}, "anyOf": [{"properties": {"c": {}}}]}
    strict = strictified(schema)
    assert strict["required"] == ["a"] and strict["properties"]["a"]["required"] == ["b"]
    assert "required" not in strict["anyOf"][0] and "required" not in schema


@pytest.mark.parametrize("reference", [
    {}, {"schema": {"type": "nope"}}, {"schema": "{not json"}, {"schema": 5},
    {"schema_str": "{}", "schema_type": "xml"},
    {"schema": {"$ref": "https://example.com/remote.json"}}, {"schema": {"type": "string", "pattern": "("}},
])
def test_an_unusable_schema_is_invalid_reference_never_0(reference) -> None:
    [outcome] = JsonSchemaTask().score_batch([TaskInput('"x"', reference)])
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


def test_an_invalid_schema_fails_the_reference_check() -> None:
    with pytest.raises(InvalidReference, match="invalid JSON Schema"):
        JsonSchemaTask().check_reference({"schema": {"type": 12}})


def test_the_schemas_draft_is_honoured() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 5,
              "exclusiveMaximum": True}
    assert JsonSchemaTask().score("5", {"schema": draft4}).score == 0.0
    assert JsonSchemaTask().score("4.5", {"schema": draft4}).score == 1.0


@pytest.mark.parametrize("cls,options", [(JsonValidTask, {"extract": "first"}), (JsonValidTask, {"top_level": "map"}),
                                         (JsonSchemaTask, {"strict": "yes"})])
def test_bad_options_are_rejected(cls, options) -> None:
    with pytest.raises(InvalidTaskOptions):
        cls(**options)


@pytest.mark.parametrize("task", [JsonValidTask(), JsonValidTask(extract="whole"), JsonSchemaTask(),
                                  JsonSchemaTask(strict=True)])
def test_the_self_check_passes(task) -> None:
    assert task.self_check() == []
