"""The reward-model server's /metrics (scraped over HTTP), and calls that end before their pairs run.

Cancellation and deadline tests hold the batcher (``DynamicBatcher.pause``) so the pairs are
certainly still queued when the call ends; the metrics then show they never reached the model.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reward.v1 import reward_model_pb2 as pb
from reward.v1 import reward_model_pb2_grpc
from reward_core.ports import free_port
from reward_service.rm.rm_server import create_rm_server
from tests.integration.test_rm_server import PAIRS, expect_status, request, rm_config
from tests.rm_fixtures import make_tiny_checkpoint


def wait_for(predicate: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Waits for a condition the server reaches on its own threads (a bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


class Scrape:
    """One GET of /metrics; ``value(name, **labels)`` is 0 for a series not exported."""

    def __init__(self, port: int) -> None:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        self.samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                        for family in text_string_to_metric_families(body) for s in family.samples}

    def value(self, name: str, **labels: str) -> float:
        return self.samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def rm_root(tmp_path_factory):
    return tmp_path_factory.mktemp("rm-metrics")


@pytest.fixture(scope="module")
def ckpt_dir(rm_root):
    return make_tiny_checkpoint(rm_root / "a", seed=0, max_length=32)


@pytest.fixture(scope="module")
def server(ckpt_dir):
    server = create_rm_server(rm_config(ckpt_dir, metrics_port=free_port(), max_items_per_request=8))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.address) as channel:
        yield reward_model_pb2_grpc.RewardModelServiceStub(channel)


@pytest.fixture
def scrape(server) -> Callable[[], Scrape]:
    return lambda: Scrape(server.metrics.port)


@pytest.fixture
def paused(server):
    """The server's batcher, held for the test: calls queue their pairs, none is run."""
    server.batcher.pause()
    yield server.batcher
    server.batcher.resume()


def delta(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


def test_metrics_serve_on_the_bind_host_by_default(server):
    assert server.config.metrics_host == "" and server.metrics.port == server.config.metrics_port
    assert Scrape(server.metrics.port).value("rm_model_load_seconds") > 0


def test_calls_are_counted_by_method_and_status_code(stub, scrape):
    before = scrape()
    stub.Score(request(PAIRS), timeout=30)
    stub.Info(pb.InfoRequest(), timeout=5)
    expect_status(lambda: stub.Score(request(PAIRS[:2], ids=["a", "a"]), timeout=5),
                  grpc.StatusCode.INVALID_ARGUMENT, "duplicate")
    after = scrape()
    assert delta(before, after, "rm_requests_total", method="Score", code="OK") == 1
    assert delta(before, after, "rm_requests_total", method="Info", code="OK") == 1
    assert delta(before, after, "rm_requests_total", method="Score", code="INVALID_ARGUMENT") == 1
    assert delta(before, after, "rm_request_seconds_count", method="Score") == 2
    assert delta(before, after, "rm_items_scored_total") == len(PAIRS)


def test_truncated_items_are_counted(stub, scrape):
    before = scrape()
    long_prompt = " ".join(f"word{k}" for k in range(100))
    stub.Score(request([(long_prompt, "the answer"), ("short", "pair")]), timeout=30)
    after = scrape()
    assert delta(before, after, "rm_items_truncated_total") == 1
    assert delta(before, after, "rm_items_scored_total") == 2


def test_each_forward_pass_records_its_items_and_padded_tokens(stub, scrape):
    before = scrape()
    stub.Score(request([("x", "y"), ("z", "w")]), timeout=30)  # 5 tokens each: one pass of 2 x 5
    after = scrape()
    assert delta(before, after, "rm_batch_items_count") == 1
    assert delta(before, after, "rm_batch_items_sum") == 2
    assert delta(before, after, "rm_batch_tokens_sum") == 10


def test_queue_depth_counts_the_items_waiting_in_the_batcher(stub, scrape, paused):
    assert scrape().value("rm_queue_items") == 0
    call = stub.Score.future(request(PAIRS[:3]), timeout=30)
    wait_for(lambda: scrape().value("rm_queue_items") == 3, "3 queued items")
    paused.resume()
    assert len(call.result().results) == 3
    assert scrape().value("rm_queue_items") == 0


def test_reloads_are_counted_by_outcome_and_the_load_time_exported(stub, scrape, ckpt_dir, rm_root):
    before = scrape()
    reply = stub.Reload(pb.ReloadRequest(checkpoint_path=str(ckpt_dir)), timeout=60)
    expect_status(lambda: stub.Reload(pb.ReloadRequest(checkpoint_path=str(rm_root / "missing")), timeout=30),
                  grpc.StatusCode.FAILED_PRECONDITION, "does not exist")
    expect_status(lambda: stub.Reload(pb.ReloadRequest(checkpoint_path="/"), timeout=30),
                  grpc.StatusCode.PERMISSION_DENIED, "outside")
    after = scrape()
    assert [delta(before, after, "rm_reloads_total", outcome=o) for o in ("ok", "failed", "refused")] == [1, 1, 1]
    assert after.value("rm_model_load_seconds") == pytest.approx(reply.load_seconds)


def test_an_expired_call_drops_its_queued_items_unrun(stub, scrape, paused):
    before = scrape()
    call = stub.Score.future(request(PAIRS[:3]), timeout=3)
    wait_for(lambda: scrape().value("rm_queue_items") == 3, "3 queued items")  # queued before the deadline
    assert call.exception(60).code() == grpc.StatusCode.DEADLINE_EXCEEDED
    wait_for(lambda: delta(before, scrape(), "rm_items_dropped_total") == 3, "3 dropped items")
    wait_for(lambda: delta(before, scrape(), "rm_requests_total", method="Score", code="DEADLINE_EXCEEDED") == 1,
             "the expired call counted")
    paused.resume()
    assert len(stub.Score(request(PAIRS[:1]), timeout=30).results) == 1
    after = scrape()
    assert delta(before, after, "rm_batch_items_sum") == 1  # only the later call's item reached the model
    assert delta(before, after, "rm_items_scored_total") == 1
    assert after.value("rm_queue_items") == 0


def test_a_cancelled_call_drops_its_queued_items_unrun(stub, scrape, paused):
    before = scrape()
    call = stub.Score.future(request(PAIRS[:3]), timeout=30)
    wait_for(lambda: scrape().value("rm_queue_items") == 3, "3 queued items")
    assert call.cancel()
    wait_for(lambda: delta(before, scrape(), "rm_items_dropped_total") == 3, "3 dropped items")
    wait_for(lambda: delta(before, scrape(), "rm_requests_total", method="Score", code="CANCELLED") == 1,
             "the cancelled call counted")
    assert scrape().value("rm_queue_items") == 0
    paused.resume()
    assert len(stub.Score(request(PAIRS[:2]), timeout=30).results) == 2
    after = scrape()
    assert delta(before, after, "rm_batch_items_sum") == 2
    assert delta(before, after, "rm_batch_items_count") == 1


def test_each_server_has_its_own_registry(server, ckpt_dir):
    other = create_rm_server(rm_config(ckpt_dir))
    try:
        assert other.metrics.registry is not server.metrics.registry
        assert other.metrics.port == 0  # --metrics-port 0: no /metrics endpoint
    finally:
        other.stop(0)
