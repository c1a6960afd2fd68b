"""Tool calls read from a turn in each format (``episodes.tool_call_format``): well-formed, several in one
turn, malformed (an explicit marker: an error answered to the policy; bare text: no call), and the
prompt and stop strings that go with each."""

from __future__ import annotations

import pytest

from reward_core.episode_contract import ToolSpec
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.tool_calls import (
    TOOL_CALL_FORMATS,
    format_tool_call,
    format_tool_calls,
    parse_tool_call,
    parse_tool_calls,
    stop_strings,
    tools_prompt,
)

CALC = ("calculator", {"expression": "48213 * 902137"})
SUBMIT = ("submit_answer", {"answer": "43494731181"})


def calls(text: str, fmt: str) -> list[tuple[str, dict, str]]:
    return [(c.name, dict(c.arguments), c.error) for c in parse_tool_calls(text, fmt)]


@pytest.mark.parametrize("text", [
    '{"name": "calculator", "parameters": {"expression": "48213 * 902137"}}',
    '<|python_tag|>{"name": "calculator", "parameters": {"expression": "48213 * 902137"}}',
    '  {"name": "calculator", "arguments": {"expression": "48213 * 902137"}}\n',
    '{"name": "calculator", "parameters": "{\\"expression\\": \\"48213 * 902137\\"}"}',
])
def test_llama3_json_reads_one_call_with_or_without_the_python_tag(text):
    assert calls(text, "llama3_json") == [(*CALC, "")]


def test_llama3_json_reads_calls_separated_by_semicolons_in_order():
    text = ('{"name": "calculator", "parameters": {"expression": "48213 * 902137"}};'
            '  {"name": "submit_answer", "parameters": {"answer": "43494731181"}}')
    assert calls(text, "llama3_json") == [(*CALC, ""), (*SUBMIT, "")]


@pytest.mark.parametrize("text", ["The answer is 42.", '{"answer": 42}', "[1, 2]", '{"name": "calculator", ',
                                  'I will call {"name": "calculator", "parameters": {}}'])
def test_llama3_json_text_that_is_not_a_call_is_the_final_message(text):
    assert parse_tool_calls(text, "llama3_json") == []


@pytest.mark.parametrize("text", ['<|python_tag|>{"name": "calculator", "parameters": {',
                                  '<|python_tag|>{"parameters": {}}', '<|python_tag|>{"name": "f", "parameters": [1]}',
                                  '<|python_tag|>brave_search.call(query="x")'])
def test_llama3_json_after_the_python_tag_a_bad_call_is_malformed(text):
    (call,) = parse_tool_calls(text, "llama3_json")
    assert call.error


def test_llama3_json_a_bad_second_call_is_malformed_and_the_first_stands():
    out = calls('{"name": "calculator", "parameters": {"expression": "48213 * 902137"}}; {"name": ', "llama3_json")
    assert out[0] == (*CALC, "") and len(out) == 2 and out[1][2]


@pytest.mark.parametrize("text", [
    '[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "48213 * 902137"}}]',
    '[{"name": "calculator", "arguments": {"expression": "48213 * 902137"}}]',  # the marker dropped by decoding
    '[TOOL_CALLS] {"name": "calculator", "arguments": {"expression": "48213 * 902137"}}',
])
def test_mistral_reads_a_call_with_or_without_the_marker(text):
    assert calls(text, "mistral") == [(*CALC, "")]


def test_mistral_reads_several_calls_of_one_array_in_order():
    text = ('[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "48213 * 902137"}}, '
            '{"name": "submit_answer", "arguments": {"answer": "43494731181"}}]')
    assert calls(text, "mistral") == [(*CALC, ""), (*SUBMIT, "")]


@pytest.mark.parametrize("text", ["The answer is 42.", "[1, 2]", '[{"answer": 42}]', "[]", '{"name": "f"}'])
def test_mistral_text_that_is_not_a_call_is_the_final_message(text):
    assert parse_tool_calls(text, "mistral") == []


@pytest.mark.parametrize("text", ['[TOOL_CALLS][{"name": "calculator", "arguments": {', "[TOOL_CALLS][]",
                                  '[TOOL_CALLS]"calculator"', '[TOOL_CALLS][{"arguments": {}}]'])
def test_mistral_after_the_marker_a_bad_call_is_malformed(text):
    assert [c.error != "" for c in parse_tool_calls(text, "mistral")] == [True]


def test_hermes_reads_every_block_of_a_turn_in_order_and_a_malformed_one_as_an_error():
    text = ('<tool_call>{"name": "calculator", "arguments": {"expression": "48213 * 902137"}}</tool_call>\n'
            '<tool_call>{name: oops}</tool_call>'
            '<tool_call>{"name": "submit_answer", "arguments": {"answer": "43494731181"}}</tool_call>')
    out = calls(text, "hermes")
    assert [o[0] for o in out] == ["calculator", "", "submit_answer"] and out[1][2] and not out[2][2]


@pytest.mark.parametrize("fmt", TOOL_CALL_FORMATS)
def test_format_and_parse_round_trip_in_every_format(fmt):
    assert calls(format_tool_calls([CALC, SUBMIT], fmt), fmt) == [(*CALC, ""), (*SUBMIT, "")]
    call = parse_tool_call(format_tool_call(*SUBMIT, fmt=fmt), fmt)
    assert call is not None and (call.name, dict(call.arguments)) == SUBMIT


def test_each_format_writes_its_own_argument_key_and_marker():
    assert '"parameters"' in format_tool_call(*CALC, fmt="llama3_json")
    assert format_tool_call(*CALC, fmt="mistral").startswith('[TOOL_CALLS][{"name": "calculator", "arguments"')
    assert format_tool_call(*CALC).startswith('<tool_call>{"name": "calculator", "arguments"')


def test_only_hermes_stops_a_turn_at_a_tag_and_each_prompt_describes_its_format():
    assert stop_strings("hermes") == ("</tool_call>",) and stop_strings("llama3_json") == stop_strings("mistral") == ()
    tools = [ToolSpec("calculator", "evaluates", {"type": "object"})]
    assert '"parameters"' in tools_prompt(tools, "names", "llama3_json")
    assert "[TOOL_CALLS]" in tools_prompt(tools, "full", "mistral")


def test_an_unknown_format_is_refused_by_the_config_and_the_parser():
    with pytest.raises(ValueError, match="tool_call_format must be one of"):
        EpisodesConfig(environment="e", tool_call_format="chatml")
    with pytest.raises(ValueError, match="unknown tool call format"):
        parse_tool_calls("x", "chatml")
