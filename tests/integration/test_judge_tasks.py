"""The judge tasks through a real reward server, judged by a real model served over OpenAI's API.

The judge is the tiny random causal LM of ``tests/judge_fixtures.py`` behind J1's endpoint: its
verdicts mean nothing, so each test checks that a task returns exactly what that model decides (asked
directly with the same messages and guided choices), and that every failure (garbage verdict, dead or
hanging endpoint) is an unscored status with its kind, never a 0.
"""

from __future__ import annotations

import socket

import httpx
import openai
import pytest

from reward_core.contract import RolloutStatus
from reward_service.http_door import nemo_gym
from reward_service.judges.fault_proxy import FaultPlan
from reward_service.judges.judge_metrics import judge_metrics
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from reward_service.verifiers.judging import load_template
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from tests.judge_fixtures import JUDGE_MODEL
from trainer_client import RewardClient

QUESTION = "What is 6 times 7?"
PAIR_FIELDS = ("prompt", "answer_a", "answer_b")
#: A pairwise template without the tie verdict: the tiny model then answers [[A]] whatever the order (a flip).
NO_TIE = {"parser": {"kind": "pairwise", "labels": {"A": "[[A]]", "B": "[[B]]"}}}


def judge(base_url: str, name: str, **settings: object) -> dict[str, object]:
    return {"base_url": base_url, "model": JUDGE_MODEL, "name": name, "max_retries": 1, **settings}


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def server(judge_server):
    tiny = judge(judge_server, "tiny")
    rewards = RewardsConfig(tasks=(
        TaskSpec("judge_reference", "judge_reference", {"judge": tiny}),
        TaskSpec("judge_reference_responses", "judge_reference",
                 {"judge": judge(judge_server, "tiny-responses", api="responses")}),
        TaskSpec("judge_rubric", "judge_rubric", {"judge": tiny}),
        TaskSpec("judge_pairwise", "judge_pairwise", {"judge": tiny}),
        TaskSpec("judge_pairwise_ab", "judge_pairwise", {"judge": tiny, "template": NO_TIE}),
        TaskSpec("judge_group", "judge_group", {"judge": tiny}),
        TaskSpec("judge_knockout", "judge_group", {"judge": tiny, "schedule": "knockout"}),
        TaskSpec("judge_dead", "judge_reference",
                 {"judge": judge(closed_port_url(), "dead", cache="off"), "timeout_s": 5}),
    ))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    yield server
    server.stop(0)


@pytest.fixture
def client(server):
    with RewardClient(server.address, timeout_s=120) as c:
        yield c


def ask_directly(base_url: str, template_name: str, fields: dict[str, str], names: tuple[str, ...],
                 override: object = None) -> float:
    """The model's verdict for these fields, asked without our client or task (the openai SDK directly)."""
    template = load_template(template_name, override, fields=names)
    sdk = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    reply = sdk.chat.completions.create(model=JUDGE_MODEL, messages=list(template.render(fields)), temperature=0.0,
                                        max_tokens=template.max_tokens, seed=0,
                                        extra_body={"guided_choice": list(template.choices)})
    return template.verdict_parser.parse(reply.choices[0].message.content).value


@pytest.mark.parametrize("task", ["judge_reference", "judge_reference_responses"])  # chat and Responses API
def test_judge_reference_returns_the_models_yes_or_no(client, judge_server, task):
    answers = ["42", "The answer is 41.", "6 x 7 = 42, so 42"]
    results = client.score([{"id": str(k), "task": task, "prompt": QUESTION, "completion": a,
                             "reference": {"answer": "42"}} for k, a in enumerate(answers)])
    for answer, result in zip(answers, results):
        expected = ask_directly(judge_server, "reference", {"prompt": QUESTION, "gold": "42", "completion": answer},
                                ("prompt", "gold", "completion"))
        assert result.status == RolloutStatus.OK and result.score == expected
        assert result.components["judge_equivalent"] == expected


def test_judge_rubric_is_the_weighted_mean_of_criterion_scores(client, judge_server):
    rubric = [{"criterion": "States the final answer 42", "weight": 3, "name": "answer"},
              "Explains the multiplication"]
    [result] = client.score([{"id": "r", "task": "judge_rubric", "prompt": QUESTION, "completion": "6*7 = 42",
                              "reference": {"rubric": rubric, "answer": "42"}}])
    per = {name: ask_directly(judge_server, "rubric", {"prompt": QUESTION, "completion": "6*7 = 42",
                                                        "criterion": text, "gold": "42"},
                              ("prompt", "completion", "criterion", "gold"))
           for name, text in (("answer", rubric[0]["criterion"]), ("c2", rubric[1]))}
    assert result.status == RolloutStatus.OK
    assert result.components["rubric/answer"] == pytest.approx(per["answer"])
    assert result.components["rubric/c2"] == pytest.approx(per["c2"])
    assert result.score == pytest.approx((3 * per["answer"] + per["c2"]) / 4)


def test_an_invalid_rubric_is_invalid_reference(client):
    [result] = client.score([{"id": "r", "task": "judge_rubric", "prompt": QUESTION, "completion": "42",
                              "reference": {"rubric": [{"criterion": "x", "weight": -1}]}}])
    assert result.status == RolloutStatus.INVALID_REFERENCE and "weight" in result.error


@pytest.mark.parametrize("task, override", [("judge_pairwise", None), ("judge_pairwise_ab", NO_TIE)])
def test_pairwise_is_judged_in_both_orders_and_a_disagreement_is_a_tie(client, judge_server, task, override):
    candidates = ["It is 42 because 6*7=42.", "41"]
    baseline = "The product is 42."
    results = client.score([{"id": str(k), "task": task, "prompt": QUESTION, "completion": c,
                             "reference": {"baseline": baseline}} for k, c in enumerate(candidates)])
    agreements = []
    for candidate, result in zip(candidates, results):
        first = ask_directly(judge_server, "pairwise", {"prompt": QUESTION, "answer_a": candidate,
                                                        "answer_b": baseline}, PAIR_FIELDS, override)
        second = 1.0 - ask_directly(judge_server, "pairwise", {"prompt": QUESTION, "answer_a": baseline,
                                                               "answer_b": candidate}, PAIR_FIELDS, override)
        agree = (first > 0.5, first < 0.5) == (second > 0.5, second < 0.5)
        agreements.append(agree)
        assert result.status == RolloutStatus.OK
        assert result.components["first_order"] == first and result.components["second_order"] == second
        assert result.components["order_agreement"] == (1.0 if agree else 0.0)
        assert result.score == (first if agree else 0.5)
        assert {"judge_order_agreement", "judge_flip_rate", "judge_length_reward_corr"} <= set(result.components)
    if override is NO_TIE:  # this random model answers [[A]] in both orders: the verdict follows the position
        assert not any(agreements), "expected the no-tie judge to flip; the tie rule was not exercised"
    stats = judge_metrics().bias("tiny")
    assert stats.pairs >= len(candidates) and 0.0 <= stats.order_agreement <= 1.0


def test_judge_group_round_robin_win_rates(client):
    completions = ["42", "41", "6*7=42", "I don't know"]
    rollouts = [{"id": str(k), "task": "judge_group", "group_id": "g", "prompt": QUESTION, "completion": c,
                 "reference": {"answer": "42"}} for k, c in enumerate(completions)]
    results = client.score(rollouts)
    assert all(r.status == RolloutStatus.OK for r in results)
    assert [r.components["games"] for r in results] == [3.0] * 4  # every pair once
    assert sum(r.components["wins"] for r in results) == pytest.approx(6.0)  # each of the 6 games gives 1 point
    assert all(r.score == pytest.approx(r.components["wins"] / 3) for r in results)
    again = client.score(list(reversed(rollouts)))  # the same group in another order: the same rewards
    assert {r.id: r.score for r in again} == {r.id: r.score for r in results}


def test_judge_group_knockout_plays_n_minus_one_games_and_a_blank_answer_loses(client):
    completions = ["42", "41", "6*7=42", ""]
    results = client.score([{"id": str(k), "task": "judge_knockout", "group_id": "k", "prompt": QUESTION,
                             "completion": c, "reference": {}} for k, c in enumerate(completions)])
    scored = [r for r in results if r.status == RolloutStatus.OK]
    assert results[3].status == RolloutStatus.NO_ANSWER and results[3].score == 0.0
    assert sum(r.components["games"] for r in scored) + 1 == 2 * 3  # 3 games, each counted by both members
    assert sum(r.components["wins"] for r in scored) == pytest.approx(3.0)  # the blank answer won no point


def test_judge_group_needs_a_group_id(client):
    [result] = client.score([{"id": "x", "task": "judge_group", "prompt": QUESTION, "completion": "42"}])
    assert result.status == RolloutStatus.INVALID_REFERENCE and "group_id" in result.error


def test_a_dead_endpoint_is_judge_failed_not_zero(client):
    [result] = client.score([{"id": "d", "task": "judge_dead", "prompt": QUESTION, "completion": "42",
                              "reference": {"answer": "42"}}])
    assert result.status == RolloutStatus.JUDGE_FAILED and not result.scored
    assert "connection" in result.error


def test_an_empty_answer_is_no_answer_without_a_call(client):
    [result] = client.score([{"id": "e", "task": "judge_dead", "prompt": QUESTION, "completion": " <|im_end|> ",
                              "reference": {"answer": "42"}}])
    assert result.status == RolloutStatus.NO_ANSWER and result.score == 0.0  # the dead judge was never asked


def test_garbage_is_unparseable_a_hang_is_failed_within_the_deadline_and_429s_are_rate_limited(fault_proxy):
    garbage = fault_proxy(FaultPlan(every={"garbage": 1}))
    hang = fault_proxy(FaultPlan(every={"hang": 1}))
    busy = fault_proxy(FaultPlan(every={"http_429": 1}, retry_after_s=0.1))
    rewards = RewardsConfig(tasks=(
        TaskSpec("garbage", "judge_pairwise", {"judge": judge(garbage.base_url, "garbage", cache="off")}),
        TaskSpec("hang", "judge_reference", {"judge": judge(hang.base_url, "hang", cache="off"), "timeout_s": 2}),
        TaskSpec("busy", "judge_rubric", {"judge": judge(busy.base_url, "busy", cache="off"), "timeout_s": 10}),
    ))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    try:
        with RewardClient(server.address, timeout_s=60) as c:  # a judge ignoring its 2 s deadline would hang here
            bad, hung, limited = c.score([
                {"id": "g", "task": "garbage", "prompt": QUESTION, "completion": "42", "reference": {"answer": "41"}},
                {"id": "h", "task": "hang", "prompt": QUESTION, "completion": "42", "reference": {"answer": "42"}},
                {"id": "b", "task": "busy", "prompt": QUESTION, "completion": "42",
                 "reference": {"rubric": ["States 42", "Is polite"]}}])
    finally:
        server.stop(0)
    assert bad.status == RolloutStatus.JUDGE_UNPARSEABLE and not bad.scored and "no verdict" in bad.error
    assert garbage.counts.get("garbage", 0) >= 1
    assert hung.status == RolloutStatus.JUDGE_FAILED and not hung.scored
    assert limited.status == RolloutStatus.JUDGE_RATE_LIMITED and not limited.scored and "429" in limited.error


def gym_row(answer: str) -> dict:
    """A NeMo Gym verify body (the dataset row plus the model's Responses API response)."""
    return {"responses_create_params": {"input": [{"role": "user", "content": QUESTION}]},
            "response": {"id": "r", "created_at": 1.0, "model": "policy", "object": "response",
                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                         "output": [{"id": "m", "type": "message", "role": "assistant", "status": "completed",
                                     "content": [{"type": "output_text", "annotations": [], "text": answer}]}]},
            "expected_answer": "42", "_ng_task_index": 0, "_ng_rollout_index": 0}


def test_the_gym_door_answers_a_failed_judge_as_gyms_judge_failsafe(server):
    with serve_app(server.address, [nemo_gym.routes], timeout_s=60.0) as (door, _):
        masked = httpx.post(f"{door}/gym/judge_dead/verify", json=gym_row("42"), timeout=60)
        error = httpx.post(f"{door}/gym/judge_dead/verify?unscored=error", json=gym_row("42"), timeout=60)
        judged = httpx.post(f"{door}/gym/judge_reference/verify", json=gym_row("42"), timeout=60)
    body = masked.json()
    assert masked.status_code == 200 and body["reward"] == 0.0 and body["mask_sample"] is True
    assert body["failure_kind"] == "judge_failed" and "JUDGE_FAILED" in body["failure_reason"]
    assert body["_ng_failure_class"] == "judge_failed" and body["instance_config"] == {"mask_sample": True}
    assert error.status_code == 503 and error.json()["failure_kind"] == "judge_failed"
    assert "reward" not in error.json()
    assert judged.status_code == 200 and "mask_sample" not in judged.json()
    assert judged.json()["reward"] in (0.0, 1.0)


def test_the_gym_door_names_an_unparseable_verdict(fault_proxy):
    garbage = fault_proxy(FaultPlan(every={"garbage": 1}))
    rewards = RewardsConfig(tasks=(
        TaskSpec("garbage", "judge_reference", {"judge": judge(garbage.base_url, "garbage-gym", cache="off")}),))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    try:
        with serve_app(server.address, [nemo_gym.routes], timeout_s=60.0) as (door, _):
            reply = httpx.post(f"{door}/gym/garbage/verify", json=gym_row("42"), timeout=60).json()
    finally:
        server.stop(0)
    assert reply["mask_sample"] is True and reply["failure_kind"] == "judge_unparseable"
    assert reply["_ng_failure_class"] == "judge_invalid" and reply["reward"] == 0.0
