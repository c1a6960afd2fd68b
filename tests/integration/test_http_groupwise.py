"""A groupwise reward (``kimi_length``) through the HTTP door, in each peer's row shape: OpenRLHF's call
groups the rows of one prompt and label; a lone row, a slime sample and a NeMo Gym row are refused
saying why; ``/v1/score`` keeps the caller's groups; merged calls never share a group."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from reward_core.contract import Rollout
from tests.http_fixtures import batches_only_when_full, serve_app
from trainer_client import RewardClient

RIGHT, WRONG = r"The answer is \boxed{3}", r"The answer is \boxed{4}"
PROMPTS = ("<|user|>What is 1+2?<|assistant|>", "<|user|>What is 5-2?<|assistant|>")


@pytest.fixture(scope="module")
def door(reward_server) -> Iterator[tuple[str, object]]:
    with serve_app(reward_server.address, max_batch=64) as served:
        yield served


def _grpc_scores(reward_server, rollouts: list[Rollout]) -> list[float]:
    with RewardClient(reward_server.address, timeout_s=60) as client:
        results = client.score(rollouts)
    assert all(r.scored for r in results), results
    return [r.score for r in results]


def _openrlhf_call(samples: list[tuple[str, str]]) -> dict:
    """OpenRLHF's body: ``query`` is prompt + response, with each row's prompt and label."""
    return {"query": [p + c for p, c in samples], "prompts": [p for p, _ in samples], "labels": ["3"] * len(samples)}


def test_openrlhf_groups_the_rows_of_one_prompt_in_a_call(door, reward_server):
    url, _ = door
    # Interleaved prompts, as a micro-batch holding the n_samples_per_prompt samples of two prompts.
    samples = [(PROMPTS[0], RIGHT), (PROMPTS[1], WRONG + " " * 30), (PROMPTS[0], RIGHT + " so 3" * 4),
               (PROMPTS[1], RIGHT), (PROMPTS[0], WRONG + "!" * 25), (PROMPTS[1], RIGHT + "?" * 12)]
    answer = httpx.post(f"{url}/openrlhf/kimi_length", json=_openrlhf_call(samples), timeout=60)
    assert answer.status_code == 200, answer.text
    expected = _grpc_scores(reward_server, [Rollout(str(i), "kimi_length", c, {"answer": "3"}, p, group_id=p)
                                            for i, (p, c) in enumerate(samples)])
    assert answer.json()["rewards"] == expected
    assert len(set(expected)) > 2  # the groups shaped the rewards: not the base's 0/1


def test_openrlhf_refuses_a_row_alone_in_its_group_saying_why(door):
    url, _ = door
    answer = httpx.post(f"{url}/openrlhf/kimi_length", json=_openrlhf_call([(PROMPTS[0], RIGHT)]), timeout=60)
    assert answer.status_code == 400
    message = answer.json()["message"]
    assert "row(s) 0" in message and "same prompt and label" in message and "one sample per call" in message


def test_openrlhf_per_sample_rewards_still_take_one_row(door, reward_server):
    url, _ = door
    answer = httpx.post(f"{url}/openrlhf/math", json=_openrlhf_call([(PROMPTS[0], RIGHT)]), timeout=60)
    assert answer.status_code == 200 and answer.json()["rewards"] == [1.0]


def test_slime_refuses_a_groupwise_reward_saying_why(door):
    url, _ = door
    answer = httpx.post(f"{url}/slime/kimi_length", json={"prompt": "What is 1+2?", "response": RIGHT, "label": "3"},
                        timeout=60)
    assert answer.status_code == 400
    message = answer.json()["message"]
    assert "a slime call holds no group" in message and "one sample per call" in message


def test_nemo_gym_refuses_a_groupwise_reward_saying_why(door):
    url, _ = door
    row = {"responses_create_params": {"input": [{"role": "user", "content": "What is 1+2?"}]},
           "response": {"output": [{"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": RIGHT}]}]},
           "expected_answer": "3"}
    answer = httpx.post(f"{url}/gym/kimi_length/verify", json=row, timeout=60)
    assert answer.status_code == 400
    message = answer.json()["message"]
    assert "a NeMo Gym call holds no group" in message and "one row per call" in message


def test_merged_calls_keep_their_own_groups(door, reward_server):
    """Two OpenRLHF calls with the same prompt, merged into one upstream request, are two groups."""
    url, app = door
    calls = [[(PROMPTS[0], RIGHT), (PROMPTS[0], RIGHT + "x" * 20)],
             [(PROMPTS[0], RIGHT + "y" * 40), (PROMPTS[0], WRONG)]]

    async def both() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as client:
            return await asyncio.gather(*(client.post(f"{url}/openrlhf/kimi_length", json=_openrlhf_call(c))
                                          for c in calls))

    batcher = app.state.door.up.batcher
    before = batcher.batches_sent
    with batches_only_when_full(batcher, 4):  # one upstream batch holds both calls
        answers = asyncio.run(both())
    assert batcher.batches_sent == before + 1
    for call, answer in zip(calls, answers):
        assert answer.status_code == 200, answer.text
        alone = _grpc_scores(reward_server, [Rollout(str(i), "kimi_length", c, {"answer": "3"}, p, group_id="g")
                                             for i, (p, c) in enumerate(call)])
        assert answer.json()["rewards"] == alone


def test_json_score_keeps_the_callers_groups_on_the_merged_path(door, reward_server):
    url, _ = door
    rows = [Rollout(str(i), "kimi_length", c, {"answer": "3"}, group_id=g)
            for i, (c, g) in enumerate([(RIGHT, "a"), (RIGHT + "z" * 30, "a"), (WRONG, "b"), (RIGHT, "b")])]
    body = {"rollouts": [{"id": r.id, "task": r.task, "completion": r.completion, "reference": {"answer": "3"},
                          "groupId": r.group_id} for r in rows]}
    answer = httpx.post(f"{url}/v1/score", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [r.get("score", 0.0) for r in results] == _grpc_scores(reward_server, rows)
    assert [r["groupId"] for r in results] == ["a", "a", "b", "b"]
