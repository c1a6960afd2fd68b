"""``judge_group`` ranks each GRPO group (the rollouts of one request sharing a ``group_id``) in the
server's group stage, off its event loop; composites of judges run in the server.

Real parts: a reward server on port 0, the tiny judge model served over OpenAI's API
(``tests/judge_fixtures.py``) and the fault proxy in front of it. A held call is ordered by events
(the proxy holds it until the test releases it), never by timing.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward.v1 import reward_pb2_grpc
from reward_core import convert
from reward_core.contract import Rollout, RolloutStatus
from reward_service.judges.fault_proxy import FaultPlan
from reward_service.judges.judge_metrics import judge_metrics
from reward_service.router.rewards_config import CompositeSpec, RewardsConfig, TaskSpec
from tests.integration.conftest import start_server
from tests.judge_fixtures import JUDGE_MODEL
from trainer_client import RewardClient

QUESTION = "What is 6 times 7?"
GROUP_A = ("42", "41", "6*7=42")
GROUP_B = ("forty-two", "43", "I think it is 42")


def judge(base_url: str, name: str, **settings: object) -> dict[str, object]:
    return {"base_url": base_url, "model": JUDGE_MODEL, "name": name, "max_retries": 1, "cache": "off", **settings}


def group(task: str, group_id: str, completions: tuple[str, ...]) -> list[dict]:
    return [{"id": f"{group_id}{k}", "task": task, "group_id": group_id, "prompt": QUESTION, "completion": c,
             "reference": {"answer": "42"}} for k, c in enumerate(completions)]


def judge_calls(name: str) -> float:
    """Judgements this process made for judge ``name`` (the server's threads; not its worker processes)."""
    return judge_metrics().sample("reward_judge_calls_total", {"judge": name, "outcome": "ok"})


@pytest.fixture(scope="module")
def server(judge_server):
    rewards = RewardsConfig(
        tasks=(TaskSpec("judge_group", "judge_group", {"judge": judge(judge_server, "group-stage")}),
               TaskSpec("judge_ref", "judge_reference", {"judge": judge(judge_server, "composite-ref")}),
               TaskSpec("judge_grp", "judge_group", {"judge": judge(judge_server, "composite-group")})),
        rewards=(CompositeSpec("judged", {"judge_ref": 0.5, "judge_grp": 0.5}),
                 CompositeSpec("mixed", {"gsm8k": 0.5, "judge_grp": 0.5})))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    yield server
    server.stop(0)


@pytest.fixture
def client(server):
    with RewardClient(server.address, timeout_s=120) as c:
        yield c


def test_two_groups_with_the_same_prompt_are_ranked_apart(client):
    together = client.score(group("judge_group", "a", GROUP_A) + group("judge_group", "b", GROUP_B))
    assert all(r.status == RolloutStatus.OK for r in together)
    assert [r.components["games"] for r in together] == [2.0] * 6  # 3 members: 2 games each, not 5
    for gid in "ab":
        assert sum(r.components["wins"] for r in together if r.group_id == gid) == pytest.approx(3.0)
    alone = client.score(group("judge_group", "a", GROUP_A)) + client.score(group("judge_group", "b", GROUP_B))
    assert {r.id: r.score for r in together} == {r.id: r.score for r in alone}


def test_a_blank_member_keeps_its_no_answer_and_loses_its_games(client):
    results = client.score(group("judge_group", "z", ("42", "41", " ")))
    assert results[2].status == RolloutStatus.NO_ANSWER and results[2].score == 0.0
    assert [r.components["games"] for r in results[:2]] == [2.0, 2.0]
    assert sum(r.components["wins"] for r in results[:2]) == pytest.approx(3.0)  # 1 between them + 2 over the blank


def test_a_failed_judge_leaves_the_group_unscored_not_zero(fault_proxy):
    broken = fault_proxy(FaultPlan(every={"http_500": 1}))
    rewards = RewardsConfig(tasks=(TaskSpec("judge_group", "judge_group",
                                            {"judge": judge(broken.base_url, "broken-group"), "timeout_s": 20}),))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    try:
        with RewardClient(server.address, timeout_s=60) as c:
            results = c.score(group("judge_group", "f", ("42", "41", "")))
    finally:
        server.stop(0)
    assert [r.status for r in results] == [RolloutStatus.JUDGE_FAILED, RolloutStatus.JUDGE_FAILED,
                                           RolloutStatus.NO_ANSWER]
    assert not results[0].scored and "500" in results[0].error
    assert broken.counts.get("http_500", 0) >= 1


def test_the_server_answers_other_calls_while_a_group_is_judged(fault_proxy):
    held = fault_proxy(FaultPlan(rates={"latency": 1.0}, latency_s=600))  # held until released
    rewards = RewardsConfig(tasks=(TaskSpec("judge_group", "judge_group",
                                            {"judge": judge(held.base_url, "held-group"), "timeout_s": 300}),))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    try:
        with RewardClient(server.address, timeout_s=300) as c, ThreadPoolExecutor(1) as pool, \
                grpc.insecure_channel(server.address) as channel:
            ranking = pool.submit(c.score, group("judge_group", "h", GROUP_A))
            try:
                deadline = time.monotonic() + 120
                while not held.counts.get("latency") and not ranking.done() and time.monotonic() < deadline:
                    time.sleep(0.01)  # waiting for an event (the group's first judge call), not timing one
                assert held.counts.get("latency"), "the group stage never called the judge"
                health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
                assert health.status == health_pb2.HealthCheckResponse.SERVING
                [other] = c.score([{"id": "o", "task": "gsm8k", "completion": "#### 72",
                                    "reference": {"answer": "72"}}])
                assert other.status == RolloutStatus.OK and other.score == 1.0
                assert [t for t in c.list_tasks() if t.name == "judge_group"]
                assert not ranking.done()  # still being judged: the calls above did not wait for it
            finally:
                held.release_latency()  # before the pool's exit waits for the ranking
            results = ranking.result(timeout=300)
    finally:
        server.stop(0)
    assert [r.status for r in results] == [RolloutStatus.OK] * 3
    assert sum(r.components["wins"] for r in results) == pytest.approx(3.0)


def test_a_group_still_being_judged_at_shutdown_is_handed_back_unavailable(fault_proxy):
    held = fault_proxy(FaultPlan(rates={"latency": 1.0}, latency_s=600))  # held until released
    rewards = RewardsConfig(tasks=(TaskSpec("judge_group", "judge_group",
                                            {"judge": judge(held.base_url, "held-at-stop"), "timeout_s": 300}),))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30)
    rollouts = [Rollout(r["id"], r["task"], r["completion"], reference=r["reference"], prompt=r["prompt"],
                        group_id=r["group_id"]) for r in group("judge_group", "s", GROUP_A)]
    try:
        with grpc.insecure_channel(server.address) as channel, ThreadPoolExecutor(1) as pool:
            stub = reward_pb2_grpc.RewardServiceStub(channel)
            call = pool.submit(stub.Score, convert.score_request_to_proto(rollouts, "stopping"), timeout=120)
            try:
                deadline = time.monotonic() + 120
                while not held.counts.get("latency") and not call.done() and time.monotonic() < deadline:
                    time.sleep(0.01)  # waiting for an event (the group's first judge call), not timing one
                assert held.counts.get("latency"), "the group stage never called the judge"
                server.stop(2.0)  # the call is handed back before the grace period ends
                response = call.result(timeout=120)
            finally:
                held.release_latency()
    finally:
        server.stop(0)
    results = convert.batch_from_proto(response).results
    assert [r.status for r in results] == [RolloutStatus.UNAVAILABLE] * 3  # retryable, never a guess
    assert all("send" in r.error for r in results)


def test_a_composite_of_judges_runs_in_the_server_with_its_judge_clients(client):
    before = judge_calls("composite-ref"), judge_calls("composite-group")
    results = client.score(group("judged", "c", GROUP_A))
    assert all(r.status == RolloutStatus.OK for r in results)
    assert [r.components["judge_grp.games"] for r in results] == [2.0] * 3
    assert all(r.score == pytest.approx(0.5 * r.components["judge_ref"] + 0.5 * r.components["judge_grp"])
               for r in results)
    # both judges were called from this process (the server's threads), none from a worker process
    assert judge_calls("composite-ref") >= before[0] + 3 and judge_calls("composite-group") >= before[1] + 6


def test_a_composite_mixing_in_a_worker_task_ranks_its_groups_in_the_server(client):
    before = judge_calls("composite-group")
    results = client.score(group("mixed", "m", ("#### 42", "#### 41", "#### 6*7")))
    assert all(r.status == RolloutStatus.OK for r in results)
    assert [r.components["gsm8k"] for r in results] == [1.0, 0.0, 0.0]
    assert [r.components["judge_grp.games"] for r in results] == [2.0] * 3
    assert judge_calls("composite-group") >= before + 6  # the group stage's calls: in the server
