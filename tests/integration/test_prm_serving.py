"""A process reward model served by ``serve-rm`` (ScoreSteps) and used by the ``prm`` task.

The checkpoint is a tiny randomly initialised token classifier with the packaged MiniLM
tokenizer (its scores mean nothing; what is tested is that the server and the task return
exactly what the model computes, step by step, with the right spans).
"""

from __future__ import annotations

import os

import grpc
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")

from reward.v1 import reward_model_pb2 as pb  # noqa: E402
from reward.v1 import reward_model_pb2_grpc  # noqa: E402
from reward_core.contract import RolloutStatus  # noqa: E402
from reward_core.prm_inputs import load_prm, step_scores  # noqa: E402
from reward_service.rm.config import RewardModelServerConfig  # noqa: E402
from reward_service.rm.rm_server import create_rm_server  # noqa: E402
from reward_service.router.rewards_config import RewardsConfig, TaskSpec  # noqa: E402
from tests.integration.conftest import start_server  # noqa: E402
from tests.rm_fixtures import make_tiny_prm_checkpoint  # noqa: E402
from trainer_client import RewardClient  # noqa: E402

TOL = 1e-4  # batch composition changes padding: compare within a tolerance it cannot break
PROMPT = "Ava has 12 apples. She buys 5 more, then gives away 3."
COMPLETION = "Buys 5 more: 12 + 5 = 17\nGives away 3: 17 - 3 = 14\n#### 14"


@pytest.fixture(scope="module")
def prm_dir(tmp_path_factory):
    return make_tiny_prm_checkpoint(tmp_path_factory.mktemp("prm"))


@pytest.fixture(scope="module")
def prm_server(prm_dir):
    server = create_rm_server(RewardModelServerConfig(checkpoint=str(prm_dir), port=0, grace_s=0))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def stub(prm_server):
    with grpc.insecure_channel(prm_server.address) as channel:
        yield reward_model_pb2_grpc.RewardModelServiceStub(channel)


def test_score_steps_equals_the_model(prm_dir, stub):
    steps = COMPLETION.split("\n")
    reply = stub.ScoreSteps(pb.StepScoreRequest(items=[pb.StepScoreItem(id="a", prompt=PROMPT, steps=steps),
                                                       pb.StepScoreItem(id="b", prompt="", steps=steps[:1])]),
                            timeout=60)
    model, tokenizer, spec = load_prm(prm_dir)
    expected = step_scores(model, tokenizer, spec, [(PROMPT, steps), ("", steps[:1])])
    assert [r.id for r in reply.results] == ["a", "b"]
    for result, want in zip(reply.results, expected):
        assert list(result.scored) == [True] * len(want)
        assert list(result.step_scores) == pytest.approx(want, abs=TOL)


def test_a_prm_server_refuses_score_and_says_why(stub):
    with pytest.raises(grpc.RpcError) as info:
        stub.Score(pb.RewardModelRequest(items=[pb.RewardModelItem(id="a", prompt="p", completion="c")]), timeout=30)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "ScoreSteps" in info.value.details()
    assert stub.Info(pb.InfoRequest(), timeout=30).max_length == 96


def test_the_prm_task_returns_step_scores_with_spans(prm_dir, prm_server):
    rewards = RewardsConfig(tasks=(TaskSpec("prm", "prm", {"endpoint": prm_server.address}),
                                   TaskSpec("prm_mean", "prm", {"endpoint": prm_server.address, "aggregate": "mean"})))
    server = start_server(workers=1, rewards=rewards)
    try:
        with RewardClient(server.address, timeout_s=60) as client:
            by_min, by_mean, empty = client.score([
                {"id": "a", "task": "prm", "prompt": PROMPT, "completion": COMPLETION},
                {"id": "b", "task": "prm_mean", "prompt": PROMPT, "completion": COMPLETION},
                {"id": "c", "task": "prm", "prompt": PROMPT, "completion": "   "}])
            infos = {t.name: t for t in client.list_tasks()}
    finally:
        server.stop(0)
    model, tokenizer, spec = load_prm(prm_dir)
    [want] = step_scores(model, tokenizer, spec, [(PROMPT, COMPLETION.split("\n"))])
    assert [COMPLETION[s.start:s.end] for s in by_min.steps] == COMPLETION.split("\n")
    assert [s.score for s in by_min.steps] == pytest.approx(want, abs=TOL)
    assert by_min.score == pytest.approx(min(want), abs=TOL)
    assert by_mean.score == pytest.approx(sum(want) / len(want), abs=TOL)
    assert empty.status == RolloutStatus.NO_ANSWER
    assert infos["prm"].produces_steps


def test_a_prm_task_without_a_server_is_unscored_never_zero():
    rewards = RewardsConfig(tasks=(TaskSpec("prm", "prm", {"endpoint": "127.0.0.1:1", "timeout_s": 2}),))
    server = start_server(workers=1, rewards=rewards)
    try:
        with RewardClient(server.address, timeout_s=60) as client:
            [result] = client.score([{"id": "a", "task": "prm", "prompt": PROMPT, "completion": COMPLETION}])
    finally:
        server.stop(0)
    assert result.status == RolloutStatus.ERROR and not result.scored
