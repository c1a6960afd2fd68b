"""The reward server over real gRPC on loopback, against what is not the model's fault: a call
without a deadline, a task plugin's bug, a bug of the server itself; and metadata reaching tasks."""

from __future__ import annotations

import json
import threading

import grpc
import pytest

from reward.v1 import reward_pb2 as pb

OK, ERROR = pb.ROLLOUT_STATUS_OK, pb.ROLLOUT_STATUS_ERROR
CLIENT_WAIT_S = 60  # the test's own patience; the calls themselves carry no deadline


def gsm(rid: str, completion: str = "#### 72") -> pb.Rollout:
    return pb.Rollout(id=rid, task="gsm8k", completion=completion, reference={"answer": "72"})


def buggy(rid: str) -> pb.Rollout:
    """A rollout of the test task whose check_reference raises KeyError (tests/integration/stress_tasks.py)."""
    return pb.Rollout(id=rid, task="bad_check", completion="x", reference={"answer": "1"})


def stream_without_deadline(stub, requests: list[pb.ScoreRequest]) -> list[pb.ScoreResponse]:
    call = stub.ScoreStream(iter(requests))  # no timeout: the server sees no deadline
    guard = threading.Timer(CLIENT_WAIT_S, call.cancel)
    guard.start()
    try:
        return list(call)
    finally:
        guard.cancel()


def results_by_id(responses: list[pb.ScoreResponse]) -> dict[str, pb.RolloutResult]:
    return {r.id: r for response in responses for r in response.results}


# --- no deadline ------------------------------------------------------------------------------

def test_score_without_a_deadline_is_answered(stub):
    rollout = pb.Rollout(id="m", task="math", completion=r"So $\boxed{\frac{1}{2}}$.", reference={"answer": "0.5"})
    response = stub.Score.future(pb.ScoreRequest(request_id="q", rollouts=[rollout])).result(timeout=CLIENT_WAIT_S)
    assert [(r.id, r.status, r.score) for r in response.results] == [("m", OK, 1.0)]


def test_score_stream_without_a_deadline_answers_every_request(stub):
    requests = [pb.ScoreRequest(request_id=f"s{k}", rollouts=[gsm(f"r{k}")]) for k in range(3)]
    responses = stream_without_deadline(stub, requests)
    assert sorted(r.request_id for r in responses) == ["s0", "s1", "s2"]
    assert all(r.status == OK and r.score == 1.0 for r in results_by_id(responses).values())


# --- a task plugin's bug: that rollout ERROR, everything else answered -------------------------

def test_check_reference_bug_fails_only_its_rollout_in_a_score_batch(stub):
    request = pb.ScoreRequest(request_id="q", rollouts=[gsm("a"), buggy("b"), gsm("c", "#### 1")])
    results = stub.Score(request, timeout=CLIENT_WAIT_S).results
    assert [(r.id, r.status) for r in results] == [("a", OK), ("b", ERROR), ("c", OK)]
    assert [r.score for r in results if r.scored] == [1.0, 0.0]
    assert not results[1].scored
    assert "bad_check" in results[1].error and "KeyError" in results[1].error


def test_check_reference_bug_mid_stream_answers_every_request(stub):
    requests = [pb.ScoreRequest(request_id="before", rollouts=[gsm("a")]),
                pb.ScoreRequest(request_id="bug", rollouts=[buggy("b"), gsm("c")]),
                pb.ScoreRequest(request_id="after", rollouts=[gsm("d")])]
    responses = list(stub.ScoreStream(iter(requests), timeout=CLIENT_WAIT_S))
    assert sorted(r.request_id for r in responses) == ["after", "before", "bug"]
    results = results_by_id(responses)
    assert results["b"].status == ERROR and not results["b"].scored and "KeyError" in results["b"].error
    assert all(results[i].status == OK and results[i].score == 1.0 for i in "acd")


# --- a bug of the server itself: the call ends loudly, naming the request -----------------------

@pytest.fixture
def failing_submit(reward_server, monkeypatch):
    """Makes the server's engine raise an unexpected error on the request with id 'boom'."""
    real = reward_server.scorer.submit

    def submit(rollouts, request_id="", item_timeout_s=0.0, client_id="", invalid=None):
        if request_id == "boom":
            raise RuntimeError("injected server bug")
        return real(rollouts, request_id, item_timeout_s, client_id, invalid=invalid)

    monkeypatch.setattr(reward_server.scorer, "submit", submit)


def test_server_bug_in_score_is_internal_naming_the_request(stub, failing_submit):
    with pytest.raises(grpc.RpcError) as info:
        stub.Score(pb.ScoreRequest(request_id="boom", rollouts=[gsm("a")]), timeout=CLIENT_WAIT_S)
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "'boom'" in info.value.details() and "injected server bug" in info.value.details()


def test_server_bug_mid_stream_ends_the_stream_with_internal_naming_the_request(stub, failing_submit):
    requests = [pb.ScoreRequest(request_id=rid, rollouts=[gsm(rid)]) for rid in ("before", "boom", "after")]
    call = stub.ScoreStream(iter(requests), timeout=CLIENT_WAIT_S)
    with pytest.raises(grpc.RpcError) as info:
        for _ in call:
            pass
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "'boom'" in info.value.details()


# --- metadata ---------------------------------------------------------------------------------

def test_tasks_see_the_rollout_metadata_the_client_sent(stub):
    sent = [{"lang": "en", "rank": "3"}, {"lang": "fr"}, {}]
    request = pb.ScoreRequest(rollouts=[pb.Rollout(id=f"m{i}", task="metadata", completion="same", metadata=meta)
                                        for i, meta in enumerate(sent)])
    results = stub.Score(request, timeout=CLIENT_WAIT_S).results
    assert [json.loads(r.extracted) for r in results] == sent  # identical items, told apart by metadata
