"""NeMo Gym resources-server routes: rewards equal gRPC ``Score``; errors are never rewards.

nemo-gym (0.7.0, the newest) requires Python >= 3.13.14 and cannot be installed into this
3.11 venv, so requests and replies are checked against shapes recorded from its source
(``nemo_gym/base_resources_server.py``: ``BaseVerifyRequest``, ``BaseMultiRewardVerifyResponse``;
``nemo_gym/openai_utils.py``: ``NeMoGymResponse`` items; ``nemo_gym/config_types.py``:
``AggregateMetrics``) as the pydantic models below; ``test_their_own_models_accept_our_reply``
runs with the real models where ``nemo_gym`` imports.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx
import pydantic
import pytest

from reward_core.contract import Rollout
from reward_service.http_door import nemo_gym
from tests.http_fixtures import serve_app
from trainer_client import RewardClient


class RecordedCreateParams(pydantic.BaseModel):
    """NeMoGymResponseCreateParamsNonStreaming: ``input`` is required."""

    input: str | list[dict[str, Any]]


class RecordedResponse(pydantic.BaseModel):
    """NeMoGymResponse (openai ``Response``): these fields are required."""

    id: str
    created_at: float
    model: str
    object: Literal["response"]
    output: list[dict[str, Any]]
    parallel_tool_calls: bool
    tool_choice: Any
    tools: list[Any]


class RecordedVerifyResponse(pydantic.BaseModel):
    """BaseMultiRewardVerifyResponse: the row, ``reward`` and ``reward_components``."""

    responses_create_params: RecordedCreateParams
    response: RecordedResponse
    reward: float
    reward_components: dict[str, float]
    mask_sample: bool = False


class RecordedAggregateMetrics(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    group_level_metrics: list[dict[str, Any]]
    agent_metrics: dict[str, Any]
    key_metrics: dict[str, Any]
    repeat_level_metrics: list[dict[str, Any]]


def row(answer_text: str, *, question: str = "What is 2+2?", task_index: int = 0, lead: str = "so ",
        **task_fields: Any) -> dict:
    """A verify body as simple_agent sends it: the dataset row plus the model's response."""
    fields = task_fields or {"expected_answer": "4"}
    return {
        "responses_create_params": {"input": [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": question}]},
        "response": {"id": "resp_1", "created_at": 1.0, "model": "policy", "object": "response",
                     "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                     "output": [{"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text",
                                                                                "text": "#### 9"}]},
                                {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                                 "content": [{"type": "output_text", "annotations": [], "text": lead},
                                             {"type": "output_text", "annotations": [], "text": answer_text}]}]},
        "_ng_task_index": task_index, "_ng_rollout_index": 0, **fields,
    }


@pytest.fixture(scope="module")
def door(reward_server):
    with serve_app(reward_server.address, [nemo_gym.routes], timeout_s=60.0) as (url, _):
        yield url


def test_rewards_equal_grpc_score(door, reward_server):
    cases = [("gsm8k", row("#### 4")), ("gsm8k", row("#### 5")), ("gsm8k", row("#### 4", ground_truth="4")),
             ("gsm8k", row("#### 7", answer="7", expected_answer="4")), ("math_with_format", row("\\boxed{4}")),
             ("math_with_format", row("4"))]
    replies = [httpx.post(f"{door}/gym/{reward}/verify", json=body, timeout=60) for reward, body in cases]
    assert [r.status_code for r in replies] == [200] * len(cases), [r.text for r in replies]
    expected = [Rollout(f"{i}", reward, "so " + body["response"]["output"][1]["content"][1]["text"],
                        nemo_gym.reference_of(body), "What is 2+2?") for i, (reward, body) in enumerate(cases)]
    with RewardClient(reward_server.address, timeout_s=60) as client:
        grpc_results = client.score(expected)
    assert all(r.scored for r in grpc_results)
    got = [(r.json()["reward"], r.json()["reward_components"]) for r in replies]
    assert got == [(r.score, dict(r.components)) for r in grpc_results]
    assert [g[0] for g in got[:4]] == [1.0, 0.0, 1.0, 1.0]  # the row's own 'answer' wins over expected_answer


def test_reply_echoes_the_row_in_the_verify_response_shape(door):
    body = row("#### 4", question="q?")
    reply = httpx.post(f"{door}/gym/gsm8k/verify", json=body, timeout=60).json()
    RecordedVerifyResponse.model_validate(reply)
    assert {k: v for k, v in reply.items() if k not in ("reward", "reward_components", "extracted_answer")} == body


def test_their_own_models_accept_our_reply(door):
    base = pytest.importorskip("nemo_gym.base_resources_server", reason="nemo-gym needs Python >= 3.13.14")
    body = row("#### 4")
    base.BaseVerifyRequest.model_validate(body)
    reply = httpx.post(f"{door}/gym/gsm8k/verify", json=body, timeout=60).json()
    assert base.BaseMultiRewardVerifyResponse.model_validate(reply).reward == 1.0


def test_mapping_takes_text_parts_last_user_message_and_task_fields():
    body = row("#### 4", expected_answer="4", topic="Q")
    body["responses_create_params"]["input"].append({"role": "assistant", "content": "earlier"})
    rollout = nemo_gym.rollout_of("gsm8k", body)
    assert (rollout.completion, rollout.prompt) == ("so #### 4", "What is 2+2?")
    assert rollout.reference == {"answer": "4", "topic": "Q"}
    assert nemo_gym.prompt_text({"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"},
        {"type": "input_text", "text": "b"}]}]}) == "ab"


def test_unknown_reward_is_400_naming_the_known_ones(door):
    reply = httpx.post(f"{door}/gym/nope/verify", json=row("#### 4"), timeout=60)
    assert reply.status_code == 400 and "unknown reward 'nope'" in reply.json()["message"]
    assert "gsm8k" in reply.json()["message"]


def test_bad_bodies_are_400_or_422_with_a_message(door):
    not_json = httpx.post(f"{door}/gym/gsm8k/verify", content=b"{nope", timeout=60)
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["message"]
    no_response = {k: v for k, v in row("#### 4").items() if k != "response"}
    missing = httpx.post(f"{door}/gym/gsm8k/verify", json=no_response, timeout=60)
    assert missing.status_code == 422 and "'response'" in missing.json()["message"]
    no_input = {**row("#### 4"), "responses_create_params": {}}
    assert httpx.post(f"{door}/gym/gsm8k/verify", json=no_input, timeout=60).status_code == 422
    assert httpx.post(f"{door}/gym/gsm8k/verify", json=[1], timeout=60).status_code == 422
    bad_policy = httpx.post(f"{door}/gym/gsm8k/verify?unscored=zero", json=row("#### 4"), timeout=60)
    assert bad_policy.status_code == 400


def test_an_unscored_rollout_is_an_http_error_never_a_reward(door):
    bug = httpx.post(f"{door}/gym/raise/verify", json=row("raise", lead=""), timeout=60)
    assert bug.status_code == 500 and "ERROR" in bug.json()["message"] and "reward" not in bug.json()
    no_reference = httpx.post(f"{door}/gym/gsm8k/verify", json=row("#### 4", other="x"), timeout=60)
    assert no_reference.status_code == 400 and "INVALID_REFERENCE" in no_reference.json()["message"]


def test_unscored_mask_answers_gyms_masked_failure_row(door):
    reply = httpx.post(f"{door}/gym/raise/verify?unscored=mask", json=row("raise", lead=""), timeout=60)
    assert reply.status_code == 200
    body = RecordedVerifyResponse.model_validate(reply.json())
    assert body.mask_sample is True and reply.json()["failure_kind"] == "verifier_error"
    assert reply.json()["instance_config"] == {"mask_sample": True}


def test_seed_and_close_session_are_stateless_acknowledgements(door):
    legacy = httpx.post(f"{door}/gym/gsm8k/seed_session", json={k: v for k, v in row("x").items() if k != "response"})
    assert legacy.status_code == 200 and legacy.json() == {}
    seeded = httpx.post(f"{door}/gym/gsm8k/seed_session", json={
        "resources_session_id": "s1", "episode_id": "e1", "task_id": "t1", "task_data": {}})
    assert seeded.json() == {"resources_session_id": "s1"}
    closed = httpx.post(f"{door}/gym/gsm8k/close_session", json={"resources_session_id": "s1", "episode_id": "e1"})
    assert closed.json() == {"resources_session_id": "s1"}
    assert httpx.get(f"{door}/gym/gsm8k/reverify_mode").json() == "stateless"
    assert httpx.post(f"{door}/gym/nope/seed_session", json={}).status_code == 400


def test_aggregate_metrics_mean_reward_over_scored_rows(door):
    verify_responses = [httpx.post(f"{door}/gym/gsm8k/verify", json=row(text, task_index=t), timeout=60).json()
                        for text, t in (("#### 4", 0), ("#### 5", 0), ("#### 4", 1))]
    verify_responses.append({**verify_responses[2], "_ng_rollout_index": 1, "reward": 0.0, "mask_sample": True})
    reply = httpx.post(f"{door}/gym/gsm8k/aggregate_metrics", json={"verify_responses": verify_responses})
    metrics = RecordedAggregateMetrics.model_validate(reply.json())
    assert metrics.agent_metrics["mean/reward"] == pytest.approx(2 / 3)
    assert metrics.key_metrics["mean/reward"] == pytest.approx(2 / 3)
    assert [(g["_ng_task_index"], g["mean/reward"]) for g in metrics.group_level_metrics] == [(0, 0.5), (1, 1.0)]
    assert metrics.agent_metrics["coverage/masked_rollouts"] == 1 and metrics.agent_metrics["num_repeats"] == 2
    empty = httpx.post(f"{door}/gym/gsm8k/aggregate_metrics", json={"verify_responses": []}).json()
    assert empty["agent_metrics"] == {}
    assert httpx.post(f"{door}/gym/gsm8k/aggregate_metrics", json={"rows": []}).status_code == 422


def test_root_routes_serve_one_reward_where_stock_gym_calls(reward_server):
    with serve_app(reward_server.address, [nemo_gym.root_routes("gsm8k")], timeout_s=60.0) as (url, _):
        assert httpx.post(f"{url}/seed_session", json={}).status_code == 200
        assert httpx.post(f"{url}/verify", json=row("#### 4"), timeout=60).json()["reward"] == 1.0
        prefixed = httpx.post(f"{url}/ng-rollout/r-1/verify", json=row("#### 5"), timeout=60)
        assert prefixed.json()["reward"] == 0.0


def test_serve_http_nemo_gym_reward_flag_serves_the_root_routes(reward_server):
    """``serve-http --nemo-gym-reward gsm8k``: the front door is a stock NeMo Gym resources server."""
    from tests.http_fixtures import running_door

    with running_door(reward_server.address, nemo_gym_reward="gsm8k") as url:
        assert httpx.post(f"{url}/verify", json=row("#### 4"), timeout=60).json()["reward"] == 1.0
        assert httpx.post(f"{url}/gym/gsm8k/verify", json=row("#### 5"), timeout=60).json()["reward"] == 0.0
