"""The client's gRPC retry policy, against a real server that fails on purpose."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest

from reward.v1 import reward_pb2 as pb
from reward.v1 import reward_pb2_grpc
from trainer_client import RewardClient


class FlakyServicer(reward_pb2_grpc.RewardServiceServicer):
    """Fails the first ``failures`` Score calls with ``code``, then answers."""

    def __init__(self, code: grpc.StatusCode, failures: int) -> None:
        self.code, self.failures, self.calls = code, failures, 0

    def Score(self, request, context):
        self.calls += 1
        if self.calls <= self.failures:
            context.abort(self.code, "injected failure")
        return pb.ScoreResponse(request_id=request.request_id, results=[
            pb.RolloutResult(id=r.id, score=1.0, status=pb.ROLLOUT_STATUS_OK, scored=True) for r in request.rollouts])


@pytest.fixture
def flaky_server(request):
    servicer = FlakyServicer(*request.param)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    reward_pb2_grpc.add_RewardServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(0)


ROLLOUT = [{"id": "a", "task": "gsm8k", "completion": "#### 1", "reference": "1"}]


@pytest.mark.parametrize("flaky_server", [(grpc.StatusCode.UNAVAILABLE, 2)], indirect=True)
def test_unavailable_is_retried_by_the_channel_policy(flaky_server):
    servicer, address = flaky_server
    with RewardClient(address, timeout_s=30) as client:
        [result] = client.score(ROLLOUT)
    assert result.score == 1.0
    assert servicer.calls == 3


@pytest.mark.parametrize("flaky_server", [(grpc.StatusCode.INVALID_ARGUMENT, 1)], indirect=True)
def test_other_errors_are_not_retried(flaky_server):
    servicer, address = flaky_server
    with RewardClient(address, timeout_s=30) as client, pytest.raises(grpc.RpcError) as info:
        client.score(ROLLOUT)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert servicer.calls == 1
