"""vLLM's ``/classify`` and ``/score`` through the front door equal the reward model's gRPC ``Score``.

A real reward-model server (tiny random checkpoint) and a real front door on loopback; every
value is compared with what ``RewardModelService.Score`` answers for the same (prompt,
completion), within ``BATCH_TOL`` (batch composition changes padding, hence float rounding).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import grpc
import httpx
import pytest

from reward.v1 import reward_model_pb2 as pb
from reward.v1 import reward_model_pb2_grpc
from reward_service.http_door import classify
from reward_service.rm.config import RewardModelServerConfig
from reward_service.rm.dynamic_batcher import BatcherConfig
from reward_service.rm.request_limits import RequestLimits
from reward_service.rm.rm_server import create_rm_server
from tests.http_fixtures import serve_app
from tests.rm_fixtures import make_tiny_checkpoint

BATCH_TOL = 1e-4
NO_REWARD_SERVER = "127.0.0.1:9"  # never called: these routes use only the RM channel
TEXTS = ["4", "Seven is prime, and so is eleven.", "hello there, how are you doing today?", "x = 2"]
DATA_KEYS = {"index", "label", "probs", "num_classes"}
TOP_KEYS = {"id", "object", "created", "model", "data", "usage"}


@contextlib.contextmanager
def classify_door(rm: str) -> Iterator[str]:
    """The front door with only this adapter; yields its base URL."""
    with serve_app(NO_REWARD_SERVER, [classify.routes], rm=rm, timeout_s=60.0) as (url, _):
        yield url


@pytest.fixture(scope="module")
def rm_server(tmp_path_factory):
    checkpoint = make_tiny_checkpoint(tmp_path_factory.mktemp("rm") / "a", seed=0, max_length=64)
    server = create_rm_server(RewardModelServerConfig(checkpoint=str(checkpoint), port=0, grace_s=0.0,
                                                      batching=BatcherConfig(max_wait_ms=5.0),
                                                      limits=RequestLimits(max_items_per_request=8)))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(rm_server):
    with classify_door(rm_server.address) as url:
        yield url


@pytest.fixture(scope="module")
def grpc_scores(rm_server):
    """(prompt, completion) pairs -> the RM server's gRPC results, in order."""
    channel = grpc.insecure_channel(rm_server.address)
    stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)

    def score(pairs: list[tuple[str, str]]) -> list[pb.RewardModelResult]:
        items = [pb.RewardModelItem(id=str(k), prompt=p, completion=c) for k, (p, c) in enumerate(pairs)]
        return list(stub.Score(pb.RewardModelRequest(items=items), timeout=30).results)

    yield score
    channel.close()


def post(url: str, body: dict) -> httpx.Response:
    return httpx.post(url, json=body, timeout=60)


def test_classify_without_activation_returns_the_grpc_score_in_vllms_shape(door, grpc_scores):
    reply = post(f"{door}/classify", {"model": "rm", "input": TEXTS, "use_activation": False})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    expected = grpc_scores([("", t) for t in TEXTS])
    assert set(body) == TOP_KEYS and body["object"] == "list" and body["model"] == "rm"
    assert body["id"].startswith("classify-") and isinstance(body["created"], int)
    assert [set(d) for d in body["data"]] == [DATA_KEYS] * len(TEXTS)
    assert [(d["index"], d["label"], d["num_classes"]) for d in body["data"]] == [
        (k, "LABEL_0", 1) for k in range(len(TEXTS))]
    for d, r in zip(body["data"], expected):
        assert d["probs"] == [pytest.approx(r.score, abs=BATCH_TOL)]
    tokens = sum(r.num_tokens for r in expected)
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0,
                             "prompt_tokens_details": None}
    assert len({round(d["probs"][0], 4) for d in body["data"]}) > 1  # the model tells the texts apart


def test_default_activation_is_the_sigmoid_of_the_score_as_vllm_does_for_one_label(door, grpc_scores):
    body = post(f"{door}/classify", {"input": TEXTS[1]}).json()
    (expected,) = grpc_scores([("", TEXTS[1])])
    assert body["data"][0]["probs"][0] == pytest.approx(1 / (1 + math.exp(-expected.score)), abs=BATCH_TOL)


def test_verls_disrm_call_reads_the_raw_score(door, grpc_scores):
    # volcengine/verl reward_loop.py compute_score_disrm: this payload, then data[-1]["probs"][-1]
    body = post(f"{door}/classify", {"model": "/models/rm", "input": TEXTS[2], "activation": False}).json()
    (expected,) = grpc_scores([("", TEXTS[2])])
    assert body["data"][-1]["probs"][-1] == pytest.approx(expected.score, abs=BATCH_TOL)
    assert body["model"] == "/models/rm"


def test_chat_messages_score_the_last_assistant_turn_against_the_earlier_turns(door, grpc_scores):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]
    body = post(f"{door}/v1/classify", {"messages": messages, "use_activation": False}).json()
    (expected,) = grpc_scores([("Be brief.\n\nWhat is 2+2?", "4")])
    assert body["data"][0]["probs"][0] == pytest.approx(expected.score, abs=BATCH_TOL)


def test_score_pairs_text_1_with_each_text_2_and_lists_pairwise(door, grpc_scores):
    one_to_n = post(f"{door}/score", {"text_1": "Name a prime.", "text_2": TEXTS[:3], "use_activation": False}).json()
    pairwise = post(f"{door}/score", {"queries": ["a", "b"], "documents": ["c", "d"], "use_activation": False}).json()
    assert set(one_to_n) == TOP_KEYS and one_to_n["id"].startswith("score-")
    assert [set(d) for d in one_to_n["data"]] == [{"index", "object", "score"}] * 3
    for body, pairs in ((one_to_n, [("Name a prime.", t) for t in TEXTS[:3]]), (pairwise, [("a", "c"), ("b", "d")])):
        for k, (d, r) in enumerate(zip(body["data"], grpc_scores(pairs))):
            assert (d["index"], d["object"]) == (k, "score")
            assert d["score"] == pytest.approx(r.score, abs=BATCH_TOL)


def test_a_door_without_a_reward_model_answers_404_saying_how_to_fix_it():
    with classify_door("") as url:
        reply = post(f"{url}/classify", {"input": "x"})
    assert reply.status_code == 404
    assert reply.json()["error"]["code"] == 404 and "--rm" in reply.json()["error"]["message"]


@pytest.mark.parametrize(("body", "fragment"), [
    ({"input": [1, 2, 3]}, "token ids"),
    ({"input": []}, "non-empty"),
    ({"messages": [{"role": "user", "content": "hi"}]}, "assistant"),
    ({"input": "x", "truncate_prompt_tokens": 5}, "truncate_prompt_tokens"),
    ({"text_1": ["a", "b"], "text_2": ["c", "d", "e"]}, "as many"),
])
def test_bodies_it_cannot_serve_are_400_in_vllms_error_shape(door, body, fragment):
    path = "/score" if "text_1" in body else "/classify"
    reply = post(f"{door}{path}", body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "BadRequestError" and fragment in error["message"]


def test_a_body_that_is_not_json_is_400(door):
    reply = httpx.post(f"{door}/classify", content=b"{nope", timeout=30)
    assert reply.status_code == 400 and "not JSON" in reply.json()["error"]["message"]


def test_the_rm_servers_own_limits_come_back_as_400(door):
    reply = post(f"{door}/classify", {"input": [f"t{k}" for k in range(9)]})  # the server takes 8 per call
    assert reply.status_code == 400 and reply.json()["error"]["code"] == 400
