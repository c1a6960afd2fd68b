"""The reward-model server over real gRPC on loopback, and the ``rm`` task inside a reward server."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from reward.v1 import reward_model_pb2 as pb
from reward.v1 import reward_model_pb2_grpc
from reward_core.config_flags import dataclass_from_values
from reward_core.contract import RolloutStatus
from reward_service.rm.checkpoint import CheckpointError, LoadedRewardModel, load_checkpoint
from reward_service.rm.config import RewardModelServerConfig
from reward_service.rm.rm_server import create_rm_server
from reward_service.router.rewards_config import CompositeSpec, RewardsConfig, TaskSpec
from tests.integration.conftest import start_server
from tests.rm_fixtures import make_tiny_checkpoint
from trainer_client import RewardClient

RM_TASK = "reward_service.tasks.rm_task:RewardModelTask"
#: The same pair scored in batches of different composition (padding, batch size) differs by float32
#: rounding (~1e-6); distinct pairs differ by orders of magnitude more. Comparisons across two calls
#: use this tolerance, so the server's dynamic batching cannot make them flaky.
BATCH_TOL = 1e-4
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
PAIRS = [("What is 2+2?", "4"), ("Name a prime.", "Seven is prime, and so is eleven."),
         ("hi", "hello there, how are you doing today?"), ("Solve x+1=3.", "x = 2")]


@pytest.fixture(scope="module")
def rm_root(tmp_path_factory) -> Path:
    """The checkpoints' directory: the servers' Reload root (the directory holding --checkpoint)."""
    return tmp_path_factory.mktemp("rm")


@pytest.fixture(scope="module")
def ckpt_dir(rm_root) -> Path:
    return make_tiny_checkpoint(rm_root / "a", seed=0, max_length=32, mean=0.5, std=2.0)


@pytest.fixture(scope="module")
def other_ckpt_dir(rm_root) -> Path:
    return make_tiny_checkpoint(rm_root / "b", seed=1, max_length=32)


def rm_config(checkpoint: Path, **overrides) -> RewardModelServerConfig:
    settings = dict(checkpoint=str(checkpoint), port=0, max_wait_ms=20.0, grace_s=0.0)
    settings.update(overrides)
    return dataclass_from_values(RewardModelServerConfig, settings)  # overrides named as the flags are


@pytest.fixture(scope="module")
def rm_server(ckpt_dir):
    server = create_rm_server(rm_config(ckpt_dir, max_items_per_request=8))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def stub(rm_server):
    channel = grpc.insecure_channel(rm_server.address)
    yield reward_model_pb2_grpc.RewardModelServiceStub(channel)
    channel.close()


@pytest.fixture(scope="module")
def reference(ckpt_dir):
    """Scores straight from transformers, without the server or encode_pair."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ckpt_dir)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt_dir).eval()

    def score(prompt: str, completion: str) -> float:
        with torch.inference_mode():
            return model(**tokenizer(prompt, completion, return_tensors="pt")).logits[0, 0].item()

    return score


def request(pairs, ids=None) -> pb.RewardModelRequest:
    ids = ids or [f"i{k}" for k in range(len(pairs))]
    return pb.RewardModelRequest(items=[pb.RewardModelItem(id=i, prompt=p, completion=c)
                                        for i, (p, c) in zip(ids, pairs)])


def health_status(address: str, service: str = "") -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                         timeout=5).status


def expect_status(call, code: grpc.StatusCode, fragment: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, info.value.details()
    assert fragment in info.value.details()


# --- Score ------------------------------------------------------------------------------------

def test_scores_equal_a_direct_forward_pass_of_the_checkpoint(stub, reference):
    response = stub.Score(request(PAIRS), timeout=30)
    for result, (prompt, completion) in zip(response.results, PAIRS):
        assert result.score == pytest.approx(reference(prompt, completion), abs=BATCH_TOL)
    assert len({round(r.score, 4) for r in response.results}) > 1  # the model tells inputs apart


def test_score_without_a_deadline_is_answered(stub, reference):
    response = stub.Score.future(request(PAIRS[:2])).result(timeout=60)  # no timeout: no deadline on the call
    assert [r.id for r in response.results] == ["i0", "i1"]
    assert response.results[0].score == pytest.approx(reference(*PAIRS[0]), abs=BATCH_TOL)


def test_results_come_back_in_request_order(stub, reference):
    pairs = [("p " * n, "c " * (9 - n)) for n in (8, 1, 5, 2, 7)]
    ids = ["e", "a", "d", "b", "c"]
    response = stub.Score(request(pairs, ids), timeout=30)
    assert [r.id for r in response.results] == ids
    for result, (prompt, completion) in zip(response.results, pairs):
        assert result.score == pytest.approx(reference(prompt, completion), abs=BATCH_TOL)


def test_normalized_score_is_score_minus_mean_over_std(stub):
    for r in stub.Score(request(PAIRS), timeout=30).results:
        assert r.normalized_score == pytest.approx((r.score - 0.5) / 2.0)


def test_an_overlong_pair_is_truncated_and_reported(stub, reference):
    long_prompt = " ".join(f"word{k}" for k in range(100))
    response = stub.Score(request([(long_prompt, "the answer"), ("short", "pair")]), timeout=30)
    long, short = response.results
    assert long.truncated and long.num_tokens == 32
    assert not short.truncated and short.num_tokens == 5
    assert math.isfinite(long.score)


def test_response_names_the_checkpoint(stub, ckpt_dir):
    assert stub.Score(request(PAIRS[:1]), timeout=30).checkpoint == str(ckpt_dir)


def test_concurrent_calls_are_merged_into_fewer_forward_passes(ckpt_dir, reference):
    server = create_rm_server(rm_config(ckpt_dir, max_wait_ms=300.0))
    start = threading.Barrier(12)
    results: dict[int, float] = {}

    def call(stub, k: int) -> None:
        start.wait()
        prompt, completion = PAIRS[k % len(PAIRS)]
        results[k] = stub.Score(request([(prompt, completion)]), timeout=30).results[0].score

    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            threads = [threading.Thread(target=call, args=(stub, k)) for k in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        stats = server.batcher.stats()
    finally:
        server.stop(0)
    assert (stats.requests, stats.items) == (12, 12)
    assert stats.batches < 12
    for k, score in results.items():
        assert score == pytest.approx(reference(*PAIRS[k % len(PAIRS)]), abs=BATCH_TOL)


def test_batches_are_sorted_by_length_to_limit_padding(ckpt_dir):
    server = create_rm_server(rm_config(ckpt_dir, max_batch_tokens=64, max_wait_ms=50.0))
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            before = server.batcher.stats()
            pairs = [("a " * 28, "b"), ("x", "y"), ("a " * 28, "c"), ("z", "w")]  # 32, 5, 32, 5 tokens
            stub.Score(request(pairs), timeout=30)
            after = server.batcher.stats()
    finally:
        server.stop(0)
    assert after.batches - before.batches == 2
    assert after.padded_tokens - before.padded_tokens == 2 * 32 + 2 * 5  # not 2 x (32 + 32)


def test_reflection_lists_the_reward_model_service(rm_server):
    with grpc.insecure_channel(rm_server.address) as channel:
        replies = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert {"reward.v1.RewardModelService", "grpc.health.v1.Health"} <= names


def test_info_reports_the_checkpoint_and_settings(stub, ckpt_dir):
    info = stub.Info(pb.InfoRequest(), timeout=5)
    assert (info.checkpoint, info.max_length, info.truncation) == (str(ckpt_dir), 32, "prompt_left")
    assert (info.device, info.dtype, info.reward_mean, info.reward_std) == ("cpu", "float32", 0.5, 2.0)
    assert info.max_batch_tokens == 4096 and info.max_wait_ms == 20.0


# --- malformed requests -----------------------------------------------------------------------

def test_empty_item_id_is_invalid_argument(stub):
    expect_status(lambda: stub.Score(request(PAIRS[:1], ids=[""]), timeout=5),
                  grpc.StatusCode.INVALID_ARGUMENT, "empty id")


def test_duplicate_item_ids_are_invalid_argument(stub):
    expect_status(lambda: stub.Score(request(PAIRS[:2], ids=["a", "a"]), timeout=5),
                  grpc.StatusCode.INVALID_ARGUMENT, "duplicate")


def test_too_many_items_is_invalid_argument(stub):
    expect_status(lambda: stub.Score(request([("p", "c")] * 9), timeout=5),
                  grpc.StatusCode.INVALID_ARGUMENT, "9 items; the limit is 8 (--max-items-per-request)")


def test_empty_reload_path_is_invalid_argument(stub):
    expect_status(lambda: stub.Reload(pb.ReloadRequest(), timeout=5), grpc.StatusCode.INVALID_ARGUMENT, "empty")


# --- reload -----------------------------------------------------------------------------------

SLOW_STARTED = threading.Event()


@dataclasses.dataclass(frozen=True)
class SlowModel(LoadedRewardModel):
    """A real checkpoint whose forward passes over long pairs take a second (SLOW_STARTED tells when)."""

    def forward(self, pairs):
        if max(len(p.input_ids) for p in pairs) >= 20:
            SLOW_STARTED.set()
            time.sleep(1.0)
        return super().forward(pairs)


def slow_loader(path: str) -> LoadedRewardModel:
    return SlowModel(**vars(load_checkpoint(path)))


def test_reload_switches_checkpoint_while_an_in_flight_request_completes(ckpt_dir, other_ckpt_dir, reference):
    server = create_rm_server(rm_config(ckpt_dir, max_wait_ms=1.0), loader=slow_loader)
    slow_pair = ("a " * 18, "old model")  # 23 tokens: slow, not truncated
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            SLOW_STARTED.clear()
            in_flight = stub.Score.future(request([slow_pair]), timeout=30)
            assert SLOW_STARTED.wait(30)  # the slow forward pass on the old model has started
            reply = stub.Reload(pb.ReloadRequest(checkpoint_path=str(other_ckpt_dir)), timeout=30)
            old = in_flight.result()
            new = stub.Score(request([slow_pair]), timeout=30)
            info = stub.Info(pb.InfoRequest(), timeout=5)
    finally:
        server.stop(0)
    assert (reply.checkpoint, reply.previous_checkpoint) == (str(other_ckpt_dir), str(ckpt_dir))
    assert reply.load_seconds > 0
    assert old.checkpoint == str(ckpt_dir)
    assert old.results[0].score == pytest.approx(reference(*slow_pair), abs=BATCH_TOL)
    assert new.checkpoint == str(other_ckpt_dir) and info.checkpoint == str(other_ckpt_dir)
    assert abs(new.results[0].score - old.results[0].score) > 1e-3


def test_a_bad_reload_path_keeps_the_old_model_serving(rm_server, stub, ckpt_dir, rm_root):
    before = stub.Score(request(PAIRS[:1]), timeout=30).results[0].score
    expect_status(lambda: stub.Reload(pb.ReloadRequest(checkpoint_path=str(rm_root / "no-such-rm")), timeout=30),
                  grpc.StatusCode.FAILED_PRECONDITION, "does not exist")
    after = stub.Score(request(PAIRS[:1]), timeout=30)
    assert after.checkpoint == str(ckpt_dir) and after.results[0].score == pytest.approx(before, abs=BATCH_TOL)
    assert stub.Info(pb.InfoRequest(), timeout=5).checkpoint == str(ckpt_dir)
    assert health_status(rm_server.address) == SERVING


def test_reload_of_a_checkpoint_without_normalization_names_the_missing_file(stub, rm_root, ckpt_dir):
    broken = make_tiny_checkpoint(rm_root / "broken")
    (broken / "reward_normalization.json").unlink()
    expect_status(lambda: stub.Reload(pb.ReloadRequest(checkpoint_path=str(broken)), timeout=30),
                  grpc.StatusCode.FAILED_PRECONDITION, "reward_normalization.json")
    assert stub.Info(pb.InfoRequest(), timeout=5).checkpoint == str(ckpt_dir)


def test_load_checkpoint_raises_checkpoint_error_for_a_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nope")


def test_load_checkpoint_names_missing_weights(tmp_path, ckpt_dir):
    import shutil

    broken = Path(shutil.copytree(ckpt_dir, tmp_path / "no-weights"))
    (broken / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="weights"):
        load_checkpoint(broken)


def test_a_model_with_two_outputs_is_not_a_reward_model(tmp_path, ckpt_dir):
    from transformers import AutoModelForSequenceClassification

    two = tmp_path / "two-labels"
    AutoModelForSequenceClassification.from_pretrained(
        ckpt_dir, num_labels=2, ignore_mismatched_sizes=True).save_pretrained(two)
    for name in ("tokenizer.json", "tokenizer_config.json", "reward_model_config.json", "reward_normalization.json"):
        (two / name).write_bytes((ckpt_dir / name).read_bytes())
    with pytest.raises(CheckpointError, match="2 outputs"):
        load_checkpoint(two)


def test_bfloat16_scores_are_close_to_float32(ckpt_dir):
    full, half = load_checkpoint(ckpt_dir), load_checkpoint(ckpt_dir, dtype="bfloat16")
    pairs = [full.encode(*p) for p in PAIRS]
    assert half.forward(pairs) == pytest.approx(full.forward(pairs), abs=0.1)


# --- health -----------------------------------------------------------------------------------

def test_health_is_not_serving_until_the_model_is_loaded_and_warmed(ckpt_dir):
    release = threading.Event()
    warmed: list[bool] = []

    @dataclasses.dataclass(frozen=True)
    class Recording(LoadedRewardModel):
        def warm_up(self) -> None:
            super().warm_up()
            warmed.append(True)

    def gated_loader(path: str) -> LoadedRewardModel:
        release.wait(30)
        return Recording(**vars(load_checkpoint(path)))

    server = create_rm_server(rm_config(ckpt_dir), wait_ready=False, loader=gated_loader)
    try:
        assert health_status(server.address) == NOT_SERVING
        assert health_status(server.address, "reward.v1.RewardModelService") == NOT_SERVING
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            expect_status(lambda: stub.Score(request(PAIRS[:1]), timeout=5), grpc.StatusCode.UNAVAILABLE, "loading")
        release.set()
        assert server.wait_loaded(30)
        assert health_status(server.address) == SERVING and warmed == [True]
    finally:
        release.set()
        server.stop(0)


def test_health_answers_serving_while_a_hundred_score_calls_wait_for_their_scores(ckpt_dir):
    from tests.integration.test_rm_metrics import wait_for

    server = create_rm_server(rm_config(ckpt_dir))
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            server.batcher.pause()
            try:
                calls = [stub.Score.future(request([PAIRS[k % len(PAIRS)]], ids=[f"c{k}"]), timeout=60)
                         for k in range(100)]
                wait_for(lambda: server.batcher.queued_items() == 100, "100 queued pairs")
                assert health_status(server.address) == SERVING
                assert not any(call.done() for call in calls)
            finally:
                server.batcher.resume()
            assert [call.result().results[0].id for call in calls] == [f"c{k}" for k in range(100)]
    finally:
        server.stop(0)


def test_a_draining_server_reports_not_serving_and_answers_unavailable(ckpt_dir):
    server = create_rm_server(rm_config(ckpt_dir))
    try:
        server.begin_drain()
        with grpc.insecure_channel(server.address) as channel:
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            expect_status(lambda: stub.Score(request(PAIRS[:1]), timeout=5), grpc.StatusCode.UNAVAILABLE, "draining")
        assert health_status(server.address) == NOT_SERVING
    finally:
        server.stop(0)


def test_stop_lets_an_in_flight_call_finish(ckpt_dir):
    server = create_rm_server(rm_config(ckpt_dir), loader=slow_loader)
    with grpc.insecure_channel(server.address) as channel:
        stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
        SLOW_STARTED.clear()
        in_flight = stub.Score.future(request([("a " * 25, "slow")]), timeout=30)
        assert SLOW_STARTED.wait(30)
        server.stop(5.0)
        assert in_flight.result().results[0].num_tokens > 20


def test_a_failed_initial_load_raises_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        create_rm_server(rm_config(tmp_path / "missing"))


# --- the rm task inside a reward server ---------------------------------------------------------

@pytest.fixture(scope="module")
def reward_server(rm_server):
    rewards = RewardsConfig(
        tasks=(TaskSpec("rm", RM_TASK, {"endpoint": rm_server.address}),
               TaskSpec("rm_raw", RM_TASK, {"endpoint": rm_server.address, "normalize": False}),
               TaskSpec("rm_unset", RM_TASK, {"endpoint": ""}),
               TaskSpec("rm_down", RM_TASK, {"endpoint": "127.0.0.1:1", "timeout_s": 5.0})),
        rewards=(CompositeSpec("math_rm", {"math": 1.0, "rm": 0.1}),),
    )
    server = start_server(workers=1, rewards=rewards, item_timeout_s=30.0)
    yield server
    server.stop(0)


def rollout(rid: str, task: str, prompt: str, completion: str, reference: str = "") -> dict:
    return {"id": rid, "task": task, "prompt": prompt, "completion": completion, "reference": reference}


def test_rm_task_scores_match_the_rm_servers_normalized_scores(reward_server, stub):
    expected = stub.Score(request(PAIRS), timeout=30).results
    with RewardClient(reward_server.address, timeout_s=60) as client:
        results = client.score([rollout(f"r{k}", "rm", p, c) for k, (p, c) in enumerate(PAIRS)])
        raw = client.score([rollout("raw", "rm_raw", *PAIRS[0])])
    assert [r.status for r in results] == [RolloutStatus.OK] * len(PAIRS)
    for got, want in zip(results, expected):
        assert got.score == pytest.approx(want.normalized_score, abs=BATCH_TOL)
        assert got.components == {"rm": pytest.approx(want.normalized_score, abs=BATCH_TOL)}
    assert raw[0].score == pytest.approx(expected[0].score, abs=BATCH_TOL)


def test_composite_is_math_plus_a_tenth_of_the_rm_score(reward_server, stub):
    prompt, completion = "What is 2+2?", r"So the answer is $\boxed{4}$."
    rm = stub.Score(request([(prompt, completion)]), timeout=30).results[0].normalized_score
    with RewardClient(reward_server.address, timeout_s=60) as client:
        right, wrong = client.score([rollout("ok", "math_rm", prompt, completion, "4"),
                                     rollout("no", "math_rm", prompt, completion, "5")])
    assert right.status == RolloutStatus.OK
    assert right.score == pytest.approx(1.0 + 0.1 * rm, abs=BATCH_TOL)
    assert right.components == {"math": 1.0, "rm": pytest.approx(rm, abs=BATCH_TOL)}
    assert wrong.score == pytest.approx(0.1 * rm, abs=BATCH_TOL)


def test_rm_task_without_an_endpoint_is_an_error_not_zero(reward_server):
    with RewardClient(reward_server.address, timeout_s=60) as client:
        results = client.score([rollout(f"u{k}", "rm_unset", "p", f"c{k}") for k in range(3)])
    for r in results:
        assert r.status == RolloutStatus.ERROR and not r.scored and r.reward is None
        assert "REWARD_SERVICE_RM_ENDPOINT" in r.error and "tasks.rm.options.endpoint" in r.error


def test_rm_task_with_an_unreachable_server_is_an_error_not_zero(reward_server):
    with RewardClient(reward_server.address, timeout_s=60) as client:
        [r] = client.score([rollout("d", "rm_down", "p", "c")])
    assert r.status == RolloutStatus.ERROR and r.reward is None
    assert "127.0.0.1:1" in r.error and "UNAVAILABLE" in r.error


def test_rm_task_constructs_with_no_options_and_takes_the_servers_rm_endpoint():
    from reward_service.router.registry import build_registry
    from reward_service.router.rewards_config import RewardsConfig, TaskEndpoints
    from reward_service.tasks.rm_task import RewardModelTask

    assert RewardModelTask().endpoint == ""
    task = build_registry(RewardsConfig(), endpoints=TaskEndpoints(rm_endpoint="rm-host:50052")).get("rm")
    assert (task.endpoint, task.normalize, task.timeout_s, task.batch_size) == ("rm-host:50052", True, 30.0, 64)


@pytest.mark.parametrize("options", [{"timeout_s": 0}, {"timeout_s": "soon"}, {"endpoint": 50052},
                                     {"normalize": "false"}])
def test_rm_task_rejects_bad_options(options):
    from reward_service.task_api import InvalidTaskOptions
    from reward_service.tasks.rm_task import RewardModelTask

    with pytest.raises(InvalidTaskOptions):
        RewardModelTask(**options)
