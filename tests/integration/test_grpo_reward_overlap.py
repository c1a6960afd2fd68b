"""Overlapped scoring against a real reward server on loopback: results, unscored, failures, embedded server."""

from __future__ import annotations

import time
from concurrent import futures

import grpc
import pytest

from reward.v1 import reward_pb2_grpc
from trainer_client.errors import EndpointUnreachable
from trainer_client.train.reward_overlap import EmbeddedRewardServer, OverlappedScorer


def _group(tag: str, answers: list[str], gold: str = "4", task: str = "gsm8k") -> list[dict]:
    return [{"id": f"{tag}-{k}", "group_id": tag, "task": task, "completion": f"so #### {a}",
             "reference": {"answer": gold}, "prompt": "2+2?"} for k, a in enumerate(answers)]


def test_submitted_groups_come_back_scored_in_order(reward_server):
    with OverlappedScorer(reward_server.address, timeout_s=30) as scorer:
        first = scorer.submit([_group("a", ["4", "5"]), _group("b", ["4", "4"])])
        second = scorer.submit([_group("c", ["1", "4"])])
        results = scorer.wait(first) + scorer.wait(second)
    assert [g.group_id for g in results] == ["a", "b", "c"]
    assert [g.rewards for g in results] == [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    assert [g.stats.zero_variance for g in results] == [False, True, False]


def test_scoring_runs_while_the_caller_works(reward_server):
    with OverlappedScorer(reward_server.address, timeout_s=30) as scorer:
        job = scorer.submit([_group("a", ["4"] * 8)])
        time.sleep(1.0)  # "generating the next prompts"
        assert job.future.done()  # scored in the background, before anyone waited
        scorer.wait(job)
        assert scorer.wait_s < 0.5
        assert job.done_at is not None and job.done_at - job.submitted_at < 1.0


def test_unknown_task_is_unscored_not_zero(reward_server):
    with OverlappedScorer(reward_server.address, timeout_s=30) as scorer:
        [group] = scorer.wait(scorer.submit([_group("a", ["4", "4"], task="no_such_task")]))
    assert group.rewards == [None, None]
    assert all(not r.scored for r in group.results)


class FailingServicer(reward_pb2_grpc.RewardServiceServicer):
    """Fails every Score call as a whole (INTERNAL: not retried)."""

    def Score(self, request, context):  # noqa: N802 - the gRPC method name
        context.abort(grpc.StatusCode.INTERNAL, "injected failure")


def test_a_failed_call_makes_its_rollouts_unscored():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    reward_pb2_grpc.add_RewardServiceServicer_to_server(FailingServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with OverlappedScorer(f"127.0.0.1:{port}", timeout_s=30) as scorer:
            [group] = scorer.wait(scorer.submit([_group("a", ["4", "5"])]))
    finally:
        server.stop(0)
    assert group.rewards == [None, None]
    # the client's own words (CallFailed: the endpoint and the code), then what the server said
    assert all(r.status.name == "ERROR" and r.error.startswith("request failed: the reward service at ")
               and "INTERNAL: injected failure" in r.error for r in group.results)


def test_an_unreachable_endpoint_is_said_before_anything_is_submitted():
    with pytest.raises(EndpointUnreachable, match="connection refused"):
        OverlappedScorer("127.0.0.1:1", timeout_s=600)  # nothing listens there


@pytest.mark.slow
def test_embedded_server_serves_and_stops(tmp_path):
    server = EmbeddedRewardServer(tmp_path / "server.log", workers=1)
    with server:
        with OverlappedScorer(server.address, timeout_s=30) as scorer:
            [group] = scorer.wait(scorer.submit([_group("a", ["4", "3"])]))
        assert group.rewards == [1.0, 0.0]
    assert server.process.returncode is not None
    assert "listening on" in (tmp_path / "server.log").read_text()


TRAINER_THAT_DIES = """
import sys, time
from trainer_client.train.reward_overlap import EmbeddedRewardServer
server = EmbeddedRewardServer(sys.argv[1], workers=1).start()
print(server.process.pid, flush=True)
time.sleep(600)
"""


def test_the_embedded_server_exits_when_its_trainer_is_killed(tmp_path):
    """SIGKILL of the trainer (no chance to clean up) must not leave its reward server running."""
    import os
    import signal
    import subprocess
    import sys

    trainer = subprocess.Popen([sys.executable, "-c", TRAINER_THAT_DIES, str(tmp_path / "server.log")],
                               stdout=subprocess.PIPE, text=True)
    server_pid = int(trainer.stdout.readline())
    trainer.send_signal(signal.SIGKILL)
    trainer.wait()
    deadline = time.monotonic() + 60  # a hang guard: the server checks its parent every second
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(server_pid, signal.SIGKILL)
        raise AssertionError("the embedded reward server outlived its trainer")
    assert "is gone: draining and exiting" in (tmp_path / "server.log").read_text()
