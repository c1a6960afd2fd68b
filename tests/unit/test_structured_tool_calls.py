"""Function calls read from completions (Hermes blocks, OpenAI JSON), matched order-insensitively,
and the ``tool_call`` task."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidTaskOptions, TaskInput
from reward_service.tasks.tool_call_task import ToolCallTask
from reward_service.verifiers.structured import BadCalls, ToolCall, expected_calls, match_calls, parse_calls

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
TIME = {"name": "get_time", "arguments": {"tz": "CET"}}


def hermes(*calls) -> str:
    return "\n".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)


def openai(*calls) -> str:
    return json.dumps({"tool_calls": [{"id": f"call_{i}", "type": "function",
                                       "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                      for i, c in enumerate(calls)]})


@pytest.mark.parametrize("text", [
    hermes(WEATHER), openai(WEATHER), json.dumps(WEATHER), json.dumps([WEATHER]),
    f"Sure, calling it now: {json.dumps(WEATHER)}", f"```json\n{json.dumps(WEATHER)}\n```",
    '<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}\n',
])
def test_one_call_is_read_in_each_common_form(text: str) -> None:
    assert parse_calls(text) == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


def test_several_hermes_blocks_are_read_in_order() -> None:
    assert [c.name for c in parse_calls(hermes(WEATHER, TIME))] == ["get_weather", "get_time"]


def test_a_malformed_block_is_a_call_that_matches_nothing() -> None:
    calls = parse_calls(hermes(WEATHER) + "<tool_call>{name: oops}</tool_call>")
    assert [c.ok for c in calls] == [True, False]


def test_arguments_given_as_a_bad_json_string_are_malformed() -> None:
    [call] = parse_calls('{"name": "f", "arguments": "{x"}')
    assert call == ToolCall("f", None, ok=False)


def test_text_without_calls_reads_none() -> None:
    assert parse_calls("The weather in Paris is sunny.") == []
    assert parse_calls('{"city": "Paris"}') == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_reading_never_raises_on_arbitrary_text(text: str) -> None:
    parse_calls(text)
    parse_calls("<tool_call>" + text)


def test_matching_ignores_order_and_number_spelling() -> None:
    predicted = parse_calls(hermes(TIME, {"name": "get_weather", "arguments": {"days": 3.0, "city": "Paris"}}))
    assert match_calls(predicted, expected_calls([WEATHER, TIME])).exact


def test_a_boolean_is_not_a_number_in_arguments() -> None:
    predicted = parse_calls(hermes({"name": "f", "arguments": {"flag": 1}}))
    assert match_calls(predicted, expected_calls([{"name": "f", "arguments": {"flag": True}}])).matched == 0


def test_extra_arguments_fail_unless_allowed() -> None:
    predicted = parse_calls(hermes({"name": "get_time", "arguments": {"tz": "CET", "format": "24h"}}))
    assert match_calls(predicted, expected_calls([TIME])).matched == 0
    assert match_calls(predicted, expected_calls([TIME]), "allow").matched == 1


def test_matching_finds_the_maximum_pairing_not_a_greedy_one() -> None:
    # With extra arguments allowed, the first prediction fits both expected calls; greedy could pair it
    # with the first and leave the second prediction unmatched.
    expected = expected_calls([{"name": "f", "arguments": {}}, {"name": "f", "arguments": {"a": 1}}])
    predicted = [ToolCall("f", {"a": 1}), ToolCall("f", {"b": 2})]
    assert match_calls(predicted, expected, "allow").matched == 2


def test_fraction_counts_extra_calls_against_the_reward() -> None:
    result = match_calls(parse_calls(hermes(WEATHER, TIME)), expected_calls([WEATHER]))
    assert (result.matched, result.fraction, result.exact) == (1, 0.5, False)


@pytest.mark.parametrize("value", [[WEATHER], json.dumps([WEATHER]), WEATHER, json.loads(openai(WEATHER)),
                                   json.loads(openai(WEATHER))["tool_calls"]])
def test_expected_calls_come_as_lists_objects_openai_shapes_or_json_strings(value) -> None:
    assert expected_calls(value) == [ToolCall("get_weather", {"city": "Paris", "days": 3})]


@pytest.mark.parametrize("value", ["{not json", [{"arguments": {}}], [{"name": "f", "arguments": "{x"}], [3]])
def test_unreadable_expected_calls_are_rejected(value) -> None:
    with pytest.raises(BadCalls):
        expected_calls(value)


def test_the_task_scores_1_for_the_expected_calls_in_any_order() -> None:
    outcome = ToolCallTask().score(openai(TIME, WEATHER), {"tool_calls": [WEATHER, TIME]})
    assert (outcome.score, outcome.components) == (1.0, {"calls_matched": 1.0, "names_matched": 1.0})


def test_the_task_scores_wrong_arguments_0_with_the_names_component_kept() -> None:
    outcome = ToolCallTask().score(hermes({"name": "get_time", "arguments": {"tz": "UTC"}}), {"tool_calls": [TIME]})
    assert (outcome.score, outcome.components) == (0.0, {"calls_matched": 0.0, "names_matched": 1.0})


def test_fraction_reward_is_the_share_matched_over_the_larger_count() -> None:
    assert ToolCallTask(reward="fraction").score(hermes(WEATHER), {"tool_calls": [WEATHER, TIME]}).score == 0.5


def test_no_call_where_one_is_expected_is_no_answer() -> None:
    assert ToolCallTask().score("It is sunny.", {"tool_calls": [WEATHER]}).status == RolloutStatus.NO_ANSWER


def test_when_no_call_is_expected_making_none_scores_1_and_making_one_scores_0() -> None:
    assert ToolCallTask().score("No tool needed: 4.", {"tool_calls": []}).score == 1.0
    assert ToolCallTask().score(hermes(TIME), {"tool_calls": []}).score == 0.0


def test_gyms_xlam_expected_answers_field_is_read() -> None:
    assert ToolCallTask().score(hermes(TIME), {"expected_answers": [TIME]}).score == 1.0


def test_function_calls_in_metadata_are_read_before_the_text() -> None:
    metadata = {"function_calls": json.dumps([{"name": "get_time", "arguments": '{"tz": "CET"}'}])}
    [outcome] = ToolCallTask().score_batch([TaskInput("no text calls", {"tool_calls": [TIME]}, metadata=metadata)])
    assert outcome.score == 1.0


@pytest.mark.parametrize("reference", [{}, {"tool_calls": "{x"}, {"tool_calls": [{"arguments": {}}]}])
def test_unusable_expected_calls_are_invalid_reference(reference) -> None:
    [outcome] = ToolCallTask().score_batch([TaskInput(hermes(TIME), reference)])
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


@pytest.mark.parametrize("options", [{"reward": "partial"}, {"extra_arguments": "ignore"}])
def test_bad_options_are_rejected(options) -> None:
    with pytest.raises(InvalidTaskOptions):
        ToolCallTask(**options)


@pytest.mark.parametrize("task", [ToolCallTask(), ToolCallTask(reward="fraction", extra_arguments="allow")])
def test_the_self_check_passes(task) -> None:
    assert task.self_check() == []
