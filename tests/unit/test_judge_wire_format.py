"""The local judge endpoint's OpenAI wire format: what requests mean, what is refused, reply shapes."""

from __future__ import annotations

import pytest

from reward_service.judges.local_model import Generation, SamplingParams, cut_at_stop, plain_transcript
from reward_service.judges.openai_errors import RequestError
from reward_service.judges.openai_requests import (
    JudgeRequest,
    chat_completion_body,
    parse_chat,
    parse_responses,
    response_body,
)

USER = [{"role": "user", "content": "Is 2+2 4?"}]


def chat(**fields):
    return {"model": "m", "messages": USER, **fields}


def test_chat_fields_become_sampling_params() -> None:
    request = parse_chat(chat(temperature=0, top_p=0.5, max_tokens=7, seed=3, stop="\n"), default_max_tokens=64)
    assert request == JudgeRequest("m", tuple(USER), SamplingParams(7, 0.0, 0.5, 3, ("\n",)))


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    assert parse_chat(chat(max_tokens=5, max_completion_tokens=9), 64).params.max_tokens == 9


def test_unsent_fields_take_openai_defaults() -> None:
    params = parse_chat(chat(), default_max_tokens=64).params
    assert (params.temperature, params.top_p, params.max_tokens, params.seed) == (1.0, 1.0, 64, None)


def test_text_parts_are_joined() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert parse_chat(chat(messages=messages), 64).messages == ({"role": "user", "content": "ab"},)


@pytest.mark.parametrize("body, param", [
    ({"model": "m"}, "messages"),
    (chat(messages=[]), "messages"),
    (chat(messages=[{"role": "wizard", "content": "x"}]), "messages[0]"),
    (chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}]), "messages[0].content"),
    ({"messages": USER}, "model"),
    (chat(temperature=3), "temperature"),
    (chat(temperature="hot"), "temperature"),
    (chat(max_tokens=0), "max_tokens"),
    (chat(max_tokens=True), "max_tokens"),
    (chat(seed=1.5), "seed"),
    (chat(stop=["a", "b", "c", "d", "e"]), "stop"),
    (chat(stream=True), "stream"),
    (chat(n=2), "n"),
    (chat(tools=[{"type": "function"}]), "tools"),
    (chat(guided_choice=[]), "guided_choice"),
    (chat(guided_choice=["yes", ""]), "guided_choice"),
])
def test_a_request_the_endpoint_cannot_honour_is_a_400_naming_the_field(body, param) -> None:
    with pytest.raises(RequestError) as info:
        parse_chat(body, 64)
    assert (info.value.status, info.value.param) == (400, param)


def test_a_body_that_is_not_an_object_is_a_400() -> None:
    with pytest.raises(RequestError):
        parse_chat(["messages"], 64)


def test_guided_choice_and_structured_outputs_choice_both_ask_for_a_choice() -> None:
    assert parse_chat(chat(guided_choice=["A", "B"]), 64).choices == ("A", "B")
    assert parse_chat(chat(structured_outputs={"choice": ["A", "B"]}), 64).choices == ("A", "B")


def test_responses_input_string_is_one_user_message_after_the_instructions() -> None:
    request = parse_responses({"model": "m", "input": "hi", "instructions": "judge", "max_output_tokens": 4}, 64)
    assert request.messages == ({"role": "system", "content": "judge"}, {"role": "user", "content": "hi"})
    assert request.params.max_tokens == 4


def test_responses_input_messages_take_input_text_parts() -> None:
    body = {"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
    assert parse_responses(body, 64).messages == ({"role": "user", "content": "hi"},)


def test_chat_completion_body_carries_text_reason_and_usage() -> None:
    body = chat_completion_body("m", Generation("yes", 10, 2, "stop"))
    assert body["object"] == "chat.completion" and body["model"] == "m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "yes"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def test_a_response_cut_by_max_output_tokens_is_incomplete() -> None:
    request = parse_responses({"model": "m", "input": "hi"}, 64)
    body = response_body("m", request, Generation("abc", 5, 64, "length"))
    assert (body["status"], body["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert body["output"][0]["content"][0] == {"type": "output_text", "text": "abc", "annotations": []}
    assert body["usage"]["total_tokens"] == 69


def test_stop_cuts_at_the_earliest_stop_string() -> None:
    assert cut_at_stop("a. b! c", ["!", "."]) == ("a", True)
    assert cut_at_stop("abc", ["x"]) == ("abc", False)


def test_the_plain_transcript_ends_with_an_open_assistant_turn() -> None:
    messages = [{"role": "system", "content": "be fair"}, {"role": "user", "content": "hi"}]
    assert plain_transcript(messages) == "System: be fair\nUser: hi\nAssistant:"
