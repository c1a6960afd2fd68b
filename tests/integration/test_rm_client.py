"""The core's reward-model clients (``reward_core.clients``) against real ``serve-rm`` servers on loopback."""

from __future__ import annotations

import asyncio
import os

import grpc
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")

from reward.v1 import reward_model_pb2 as pb  # noqa: E402
from reward.v1 import reward_model_pb2_grpc  # noqa: E402
from reward_core.channel_config import ChannelConfig  # noqa: E402
from reward_core.clients import AsyncRewardModelClient, RewardModelClient, ServerUnavailable  # noqa: E402
from reward_core.config_flags import dataclass_from_values  # noqa: E402
from reward_core.prm_inputs import load_prm, step_scores  # noqa: E402
from reward_core.rm_contract import RewardModelReplyError  # noqa: E402
from reward_service.rm.config import RewardModelServerConfig  # noqa: E402
from reward_service.rm.rm_server import create_rm_server  # noqa: E402
from tests.integration.conftest import fake_grpc_server  # noqa: E402
from tests.rm_fixtures import make_tiny_checkpoint, make_tiny_prm_checkpoint  # noqa: E402

TOL = 1e-4  # the same pair batched differently differs by float32 rounding only
PAIRS = [("What is 2+2?", "4"), ("Name a prime.", "Seven."), ("hi", "hello there")]
STEPS = ["Buys 5 more: 12 + 5 = 17", "Gives away 3: 17 - 3 = 14", "#### 14"]
NO_RETRY = ChannelConfig(max_attempts=1, wait_for_ready=False)


@pytest.fixture(scope="module")
def rm_root(tmp_path_factory):
    return tmp_path_factory.mktemp("rm-client")


@pytest.fixture(scope="module")
def rm_server(rm_root):
    make_tiny_checkpoint(rm_root / "a", seed=0, max_length=32, mean=0.5, std=2.0)
    make_tiny_checkpoint(rm_root / "b", seed=1, max_length=32)
    settings = dict(checkpoint=str(rm_root / "a"), port=0, max_wait_ms=5.0, grace_s=0.0)
    server = create_rm_server(dataclass_from_values(RewardModelServerConfig, settings))  # named as the flags are
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def prm_server(tmp_path_factory):
    out = make_tiny_prm_checkpoint(tmp_path_factory.mktemp("prm-client"))
    server = create_rm_server(RewardModelServerConfig(checkpoint=str(out), port=0, grace_s=0.0))
    yield server, out
    server.stop(0)


def raw_scores(address: str) -> list[tuple[float, float, bool, int]]:
    with grpc.insecure_channel(address) as channel:
        reply = reward_model_pb2_grpc.RewardModelServiceStub(channel).Score(pb.RewardModelRequest(items=[
            pb.RewardModelItem(id=f"x{k}", prompt=p, completion=c) for k, (p, c) in enumerate(PAIRS)]), timeout=60)
    return [(r.score, r.normalized_score, r.truncated, r.num_tokens) for r in reply.results]


def test_score_returns_the_servers_scores_in_request_order(rm_server):
    with RewardModelClient(rm_server.address, timeout_s=60) as rm:
        reply = rm.score(PAIRS)
    assert reply.checkpoint == rm_server.config.checkpoint
    got = [(r.score, r.normalized_score, r.truncated, r.num_tokens) for r in reply.results]
    for mine, theirs in zip(got, raw_scores(rm_server.address), strict=True):
        assert mine[:2] == pytest.approx(theirs[:2], abs=TOL) and mine[2:] == theirs[2:]
    assert got[0][1] == pytest.approx((got[0][0] - 0.5) / 2.0, abs=1e-6)  # normalized by the checkpoint's stats


def test_the_async_client_scores_the_same_pairs_alike(rm_server):
    async def scores() -> list[float]:
        async with AsyncRewardModelClient(rm_server.address, timeout_s=60) as rm:
            assert await rm.serving()
            return [r.score for r in (await rm.score(PAIRS)).results]

    with RewardModelClient(rm_server.address, timeout_s=60) as rm:
        expected = [r.score for r in rm.score(PAIRS).results]
    assert asyncio.run(scores()) == pytest.approx(expected, abs=TOL)


def test_info_names_the_checkpoint_and_its_settings(rm_server):
    with RewardModelClient(rm_server.address, timeout_s=30) as rm:
        info = rm.info()
    assert (info.checkpoint, info.max_length, info.truncation) == (rm_server.config.checkpoint, 32, "prompt_left")
    assert (info.reward_mean, info.reward_std) == (0.5, 2.0)


def test_reload_swaps_the_checkpoint_and_reports_the_previous_one(rm_server, rm_root):
    with RewardModelClient(rm_server.address, timeout_s=30) as rm:
        swapped = rm.reload(str(rm_root / "b"), timeout_s=120)
        back = rm.reload(str(rm_root / "a"), timeout_s=120)
        assert rm.info().checkpoint == str(rm_root / "a")
    assert (swapped.checkpoint, swapped.previous_checkpoint) == (str(rm_root / "b"), str(rm_root / "a"))
    assert back.previous_checkpoint == str(rm_root / "b") and back.load_seconds > 0


def test_score_steps_returns_a_prms_step_probabilities(prm_server):
    server, checkpoint = prm_server
    with RewardModelClient(server.address, timeout_s=60) as rm:
        reply = rm.score_steps([("Ava has 12 apples.", STEPS), ("", STEPS[:1])])
    model, tokenizer, spec = load_prm(checkpoint)
    expected = step_scores(model, tokenizer, spec, [("Ava has 12 apples.", STEPS), ("", STEPS[:1])])
    assert [len(r.step_scores) for r in reply.results] == [3, 1]
    for result, want in zip(reply.results, expected, strict=True):
        assert result.scored == (True,) * len(want)
        assert list(result.step_scores) == pytest.approx(want, abs=TOL)


def test_score_on_a_prm_server_is_failed_precondition(prm_server):
    server, _ = prm_server
    with RewardModelClient(server.address, timeout_s=30) as rm, pytest.raises(grpc.RpcError) as info:
        rm.score(PAIRS[:1])
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "ScoreSteps" in info.value.details()


def test_an_unreachable_server_is_unavailable_and_not_serving():
    # connect_timeout_s=None: the call itself, not the connect check (tests/unit/test_fail_fast_services.py)
    with RewardModelClient("127.0.0.1:1", timeout_s=5, channel=NO_RETRY, connect_timeout_s=None) as rm:
        assert not rm.serving(timeout_s=2)
        with pytest.raises(grpc.RpcError) as info:
            rm.score(PAIRS[:1])
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # callers reading the code keep working
    assert isinstance(info.value, ServerUnavailable)
    assert str(info.value).startswith("the reward-model service at 127.0.0.1:1 is unavailable: ")


class _ReversedRm(reward_model_pb2_grpc.RewardModelServiceServicer):
    """Answers every Score with its results in reverse order."""

    def Score(self, request, context):  # noqa: N802 - the gRPC method name
        return pb.RewardModelResponse(results=[pb.RewardModelResult(id=item.id) for item in reversed(request.items)])


def test_an_answer_out_of_order_raises_instead_of_misattributing_scores():
    with fake_grpc_server(reward_model_pb2_grpc.add_RewardModelServiceServicer_to_server, _ReversedRm()) as address, \
            RewardModelClient(address, timeout_s=10) as rm, pytest.raises(RewardModelReplyError, match="out of order"):
        rm.score(PAIRS)
