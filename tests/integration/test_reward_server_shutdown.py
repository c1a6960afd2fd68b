"""Graceful shutdown under load: a real ``reward-service serve`` process gets SIGTERM mid-batch.

Every rollout of every call in flight is answered before the process exits: verified ones
with their score, the rest UNAVAILABLE (retryable, unscored); calls after the drain began
are refused UNAVAILABLE as a whole; no worker process is left behind. The only physical
fact relied on: 30 half-second sleeps on one worker cannot finish in a 3 s grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward.v1 import reward_pb2 as pb
from reward.v1 import reward_pb2_grpc
from reward_core.ports import free_port
from reward_service.router.servicer import SHUTDOWN_REASON

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 60.0
GRACE_S = 3.0

REWARDS_YAML = """
tasks:
  sleep:
    task: tests.integration.stress_tasks:SleepTask
"""


def children_of(pid: int) -> set[int]:
    """Direct children of ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def server_process(tmp_path):
    config = tmp_path / "rewards.yaml"
    config.write_text(REWARDS_YAML)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reward_service", "serve", "--port", str(port), "--workers", "1",
         "--grace-s", str(GRACE_S), "--item-timeout-s", "30", "--max-item-timeout-s", "60", "--config", str(config)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    address = f"127.0.0.1:{port}"
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + HANG_GUARD_S
        while True:
            try:
                if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == \
                        health_pb2.HealthCheckResponse.SERVING:
                    break
            except grpc.RpcError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.1)
    yield proc, address
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def sleeping(prefix: str, n: int, seconds: float) -> pb.ScoreRequest:
    return pb.ScoreRequest(request_id=prefix, rollouts=[
        pb.Rollout(id=f"{prefix}-{i}", task="sleep", completion=f"{prefix}{i}", reference={"seconds": seconds})
        for i in range(n)])


def test_sigterm_under_load_answers_every_rollout_and_leaves_no_process(server_process):
    proc, address = server_process
    with grpc.insecure_channel(address) as channel:
        stub = reward_pb2_grpc.RewardServiceStub(channel)
        assert stub.Score(sleeping("warm", 1, 0.0), timeout=HANG_GUARD_S).results[0].score == 1.0
        workers = children_of(proc.pid)
        assert workers, "the server runs its verifiers in child processes"
        calls = [stub.Score.future(sleeping(f"load{k}", 10, 0.5), timeout=HANG_GUARD_S) for k in range(3)]
        time.sleep(1.0)  # let the worker start on them (not asserted: only makes the test meaningful)
        proc.send_signal(signal.SIGTERM)
        responses = [call.result() for call in calls]  # raises if a call failed as a whole

        late = None
        try:
            stub.Score(sleeping("late", 1, 0.0), timeout=10)
        except grpc.RpcError as exc:
            late = exc.code()
        assert late == grpc.StatusCode.UNAVAILABLE

    assert proc.wait(timeout=HANG_GUARD_S) == 0, proc.stdout.read()
    statuses = []
    for k, response in enumerate(responses):
        assert [r.id for r in response.results] == [f"load{k}-{i}" for i in range(10)]
        for r in response.results:
            statuses.append(r.status)
            if r.status == pb.ROLLOUT_STATUS_OK:
                assert r.scored and r.score == 1.0
            else:
                assert r.status == pb.ROLLOUT_STATUS_UNAVAILABLE and not r.scored and r.error == SHUTDOWN_REASON
    assert statuses.count(pb.ROLLOUT_STATUS_UNAVAILABLE) >= 1  # 15 s of work cannot fit in the grace period
    deadline = time.monotonic() + 10.0  # a hang guard: helpers notice their parent is gone
    while [pid for pid in workers if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.05)
    left = {pid: cmdline(pid) for pid in workers if alive(pid)}
    assert not left, f"processes of the server left running: {left}"


def test_a_call_during_the_drain_is_refused_unavailable_and_health_is_not_serving(server_process):
    proc, address = server_process
    with grpc.insecure_channel(address) as channel:
        stub = reward_pb2_grpc.RewardServiceStub(channel)
        busy = stub.Score.future(sleeping("busy", 4, 0.5), timeout=HANG_GUARD_S)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + HANG_GUARD_S
        while health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Score(sleeping("late", 1, 0.0), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert len(busy.result().results) == 4
    assert proc.wait(timeout=HANG_GUARD_S) == 0
