"""The local judge endpoint, called by the real ``openai`` client: a real (tiny) causal LM over real HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from reward_core.ports import free_port
from reward_service.judges.local_server import JudgeServer, JudgeServerConfig
from tests.judge_fixtures import JUDGE_MODEL, make_tiny_judge_model

QUESTION = [{"role": "system", "content": "You are a strict judge."},
            {"role": "user", "content": "Answer: 4. Reference: 4. Equivalent?"}]


@pytest.fixture(scope="module")
def client(judge_server: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=judge_server, api_key="unused", max_retries=0, timeout=120)


def ask(client: openai.OpenAI, **options):
    settings = {"model": JUDGE_MODEL, "messages": QUESTION, "temperature": 0, "max_tokens": 8}
    return client.chat.completions.create(**{**settings, **options})


def test_a_chat_completion_has_text_a_finish_reason_and_usage(client) -> None:
    reply = ask(client, max_tokens=6)
    choice = reply.choices[0]
    assert isinstance(choice.message.content, str) and choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length") and reply.model == JUDGE_MODEL
    assert 1 <= reply.usage.completion_tokens <= 6 and reply.usage.prompt_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_prompt_tokens_are_the_chat_template_s(client, judge_endpoint) -> None:
    tokenizer = judge_endpoint.model.tokenizer
    text = tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=False)
    assert ask(client).usage.prompt_tokens == len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_greedy_replies_are_reproducible(client) -> None:
    first, again = (ask(client, max_tokens=12).choices[0].message.content for _ in range(2))
    assert first == again


def test_the_same_seed_samples_the_same_reply(client) -> None:
    first, again, other = (ask(client, temperature=1.0, seed=s, max_tokens=16).choices[0].message.content
                           for s in (5, 5, 6))
    assert first == again != other


def test_a_reply_that_reaches_max_tokens_ends_for_length(client) -> None:
    reply = ask(client, max_tokens=3)
    assert reply.usage.completion_tokens <= 3
    assert (reply.choices[0].finish_reason == "length") == (reply.usage.completion_tokens == 3)


def test_a_stop_string_ends_the_reply_before_it(client) -> None:
    full = ask(client, max_tokens=40).choices[0].message.content
    at = next(i for i, ch in enumerate(full) if i >= 3 and ch.isascii() and ch.isprintable())
    reply = ask(client, max_tokens=40, stop=[full[at]])
    assert reply.choices[0].message.content == full[:full.index(full[at])]
    assert reply.choices[0].finish_reason == "stop" and reply.usage.completion_tokens < 40


def test_guided_choice_answers_exactly_one_choice(client) -> None:
    reply = ask(client, extra_body={"guided_choice": ["equivalent", "not equivalent"]})
    assert reply.choices[0].message.content in ("equivalent", "not equivalent")
    assert reply.choices[0].finish_reason == "stop"


def test_guided_choice_picks_the_most_likely_choice_scored_one_by_one(client, judge_model_dir) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    choices = ["A", "B", "tie", "[[A]] is better", "neither"]  # different lengths: padded in one batch
    tokenizer = AutoTokenizer.from_pretrained(judge_model_dir)
    model = AutoModelForCausalLM.from_pretrained(judge_model_dir).eval()
    prompt = tokenizer(tokenizer.apply_chat_template(QUESTION, add_generation_prompt=True, tokenize=False),
                       add_special_tokens=False)["input_ids"]

    def loglik(choice: str) -> float:
        ids = tokenizer(choice, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logprobs = torch.log_softmax(model(torch.tensor([prompt + ids])).logits[0].float(), -1)
        return sum(logprobs[len(prompt) - 1 + i, t].item() for i, t in enumerate(ids))

    expected = max(choices, key=loglik)
    assert ask(client, extra_body={"guided_choice": choices}).choices[0].message.content == expected
    assert ask(client, extra_body={"guided_choice": choices[::-1]}).choices[0].message.content == expected


def test_the_responses_api_answers_with_output_text(client) -> None:
    reply = client.responses.create(model=JUDGE_MODEL, input="Is 4 equal to 2+2?", instructions="Judge.",
                                    max_output_tokens=5, temperature=0)
    assert reply.object == "response" and isinstance(reply.output_text, str)
    assert 1 <= reply.usage.output_tokens <= 5
    assert reply.status == ("incomplete" if reply.usage.output_tokens == 5 else "completed")


def test_instructions_are_part_of_the_responses_prompt(client) -> None:
    bare = client.responses.create(model=JUDGE_MODEL, input="hi", max_output_tokens=1, temperature=0)
    instructed = client.responses.create(model=JUDGE_MODEL, input="hi", instructions="Judge.", max_output_tokens=1,
                                         temperature=0)
    assert instructed.usage.input_tokens > bare.usage.input_tokens


def test_the_responses_api_honours_guided_choice(client) -> None:
    reply = client.responses.create(model=JUDGE_MODEL, input=[{"role": "user", "content": "A or B?"}],
                                    temperature=0, extra_body={"guided_choice": ["A", "B"]})
    assert reply.output_text in ("A", "B")


def test_concurrent_calls_each_get_the_reply_a_lone_call_gets(client) -> None:
    alone = ask(client, max_tokens=10).choices[0].message.content
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: ask(client, max_tokens=10).choices[0].message.content, range(16)))
    assert replies == [alone] * 16


def test_another_model_name_is_not_found(client) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        ask(client, model="gpt-4o")
    assert info.value.code == "model_not_found"


def test_a_malformed_request_is_a_bad_request_naming_the_field(client) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, temperature=5)
    assert info.value.param == "temperature" and info.value.type == "invalid_request_error"


def test_streaming_is_refused_not_ignored(client) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, stream=True)
    assert info.value.param == "stream"


def test_a_prompt_past_the_context_is_a_bad_request(client, judge_endpoint) -> None:
    long = [{"role": "user", "content": "x" * judge_endpoint.model.context_length}]
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, messages=long)
    assert info.value.code == "context_length_exceeded"


@pytest.mark.parametrize("method, path, body, status", [
    ("GET", "/no/such/path", None, 404),
    ("POST", "/chat/completions", b"{not json", 400),
    ("GET", "/chat/completions", None, 405),
])
def test_http_errors_are_openai_shaped(judge_server, method, path, body, status) -> None:
    reply = httpx.request(method, judge_server + path, content=body)
    assert reply.status_code == status
    assert set(reply.json()["error"]) == {"message", "type", "param", "code"}


def test_a_model_failure_is_an_openai_shaped_500(client, judge_endpoint, monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(judge_endpoint.model, "generate", fail)
    with pytest.raises(openai.InternalServerError) as info:
        ask(client)
    assert info.value.status_code == 500 and "out of memory" in info.value.message
    monkeypatch.undo()
    # The connection the 500 came on stays usable: the pooled client's next calls are answered.
    assert [m.id for m in client.models.list().data] == [JUDGE_MODEL]
    assert ask(client, extra_body={"guided_choice": ["A", "B"]}).choices[0].message.content in ("A", "B")


def test_models_lists_the_served_model(client, judge_endpoint) -> None:
    assert [m.id for m in client.models.list().data] == [JUDGE_MODEL]


def test_an_endpoint_with_a_key_refuses_a_wrong_one(judge_endpoint) -> None:
    config = JudgeServerConfig(model=judge_endpoint.config.model, served_model_name=JUDGE_MODEL, port=0,
                               api_key="s3cret")
    with JudgeServer(config, model=judge_endpoint.model) as server:
        wrong = openai.OpenAI(base_url=server.base_url, api_key="guess", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            ask(wrong)
        right = openai.OpenAI(base_url=server.base_url, api_key="s3cret", max_retries=0)
        assert ask(right, extra_body={"guided_choice": ["A", "B"]}).choices[0].message.content in ("A", "B")


def test_a_tokenizer_without_a_chat_template_gets_a_plain_transcript(tmp_path) -> None:
    from reward_service.judges.local_model import plain_transcript

    path = make_tiny_judge_model(tmp_path / "plain", chat_template=False)
    with JudgeServer(JudgeServerConfig(model=str(path), port=0)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        reply = ask(client, model="plain", extra_body={"guided_choice": ["yes", "no"]})
        expected = len(server.model.tokenizer(plain_transcript(QUESTION))["input_ids"])
    assert reply.choices[0].message.content in ("yes", "no") and reply.usage.prompt_tokens == expected


@pytest.mark.slow
def test_serve_judge_serves_the_model_from_the_command_line(judge_model_dir) -> None:
    port = free_port()
    command = [sys.executable, "-m", "reward_service", "serve-judge", "--model", str(judge_model_dir),
               "--served-model-name", JUDGE_MODEL, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=60)
        deadline = time.monotonic() + 120
        while True:
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                assert process.poll() is None, process.stderr.read()
                assert time.monotonic() < deadline, "serve-judge did not start listening in 120 s"
                time.sleep(0.2)
        assert ask(client, extra_body={"guided_choice": ["A", "B"]}).choices[0].message.content in ("A", "B")
    finally:
        process.terminate()
        process.wait(timeout=30)
