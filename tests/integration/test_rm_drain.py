"""Graceful drain of the reward-model server: on ``begin_drain``/``stop`` and on SIGTERM.

Calls are held in the batcher (``DynamicBatcher.pause``) so they are certainly in flight when the
drain starts; the SIGTERM test runs ``reward-service serve-rm`` as a process and holds its call
with a long ``--max-wait-ms`` instead, seen queued on its /metrics.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import grpc
import pytest
from grpc_health.v1 import health_pb2

from reward.v1 import reward_model_pb2 as pb
from reward.v1 import reward_model_pb2_grpc
from reward_core.ports import free_port
from reward_service.rm.rm_server import create_rm_server
from tests.integration.test_rm_metrics import Scrape, wait_for
from tests.integration.test_rm_server import PAIRS, expect_status, health_status, request, rm_config
from tests.rm_fixtures import make_tiny_checkpoint


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("rm-drain") / "a", max_length=32)


@pytest.fixture
def held_call(ckpt_dir):
    """A started server with one Score call (2 pairs) waiting in its paused batcher."""
    server = create_rm_server(rm_config(ckpt_dir, grace_s=60.0))
    channel = grpc.insecure_channel(server.address)
    stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
    server.batcher.pause()
    call = stub.Score.future(request(PAIRS[:2]), timeout=120)
    wait_for(lambda: server.batcher.queued_items() == 2, "2 queued items")
    yield server, stub, call
    server.batcher.resume()
    server.stop(0)
    channel.close()


def test_a_draining_server_finishes_calls_in_flight_and_refuses_new_ones(held_call):
    server, stub, call = held_call
    server.begin_drain()
    assert health_status(server.address) == health_pb2.HealthCheckResponse.NOT_SERVING
    expect_status(lambda: stub.Score(request(PAIRS[:1]), timeout=10), grpc.StatusCode.UNAVAILABLE, "draining")
    expect_status(lambda: stub.Reload(pb.ReloadRequest(checkpoint_path=server.config.checkpoint), timeout=10),
                  grpc.StatusCode.UNAVAILABLE, "draining")
    server.batcher.resume()
    assert [r.id for r in call.result().results] == ["i0", "i1"]


def test_stop_lets_a_queued_call_finish_within_the_grace_period(held_call):
    server, _, call = held_call
    stopping = threading.Thread(target=server.stop, args=(60.0,))
    stopping.start()
    wait_for(server.servicer.draining.is_set, "the drain to start")
    server.batcher.resume()
    assert [r.id for r in call.result().results] == ["i0", "i1"]
    stopping.join(60)
    assert not stopping.is_alive()


def test_calls_still_queued_when_the_grace_period_ends_are_ended_unrun(held_call):
    server, _, call = held_call
    server.stop(0.2)  # the batcher stays paused: the call cannot finish in time
    assert call.exception(60) is not None
    stats = server.batcher.stats()
    assert (stats.items, stats.batches, stats.dropped_items) == (0, 0, 2)


def test_sigterm_drains_the_serve_rm_process_and_finishes_the_call_in_flight(ckpt_dir):
    port, metrics_port = free_port(), free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "reward_service", "serve-rm", "--checkpoint", str(ckpt_dir), "--port", str(port),
         "--metrics-port", str(metrics_port), "--max-wait-ms", "3000", "--grace-s", "60"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=120)
            wait_for(lambda: health_status(f"127.0.0.1:{port}") == health_pb2.HealthCheckResponse.SERVING,
                     "the model to load", timeout_s=120)
            stub = reward_model_pb2_grpc.RewardModelServiceStub(channel)
            call = stub.Score.future(request(PAIRS[:1]), timeout=120)
            wait_for(lambda: Scrape(metrics_port).value("rm_queue_items") == 1, "the call to queue")
            process.send_signal(signal.SIGTERM)
            assert [r.id for r in call.result().results] == ["i0"]
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, output
