"""The core's sandbox clients (``reward_core.clients``) against a real SandboxService on loopback."""

from __future__ import annotations

import asyncio
import threading
import time

import grpc
import pytest

import reward_core.sandbox_contract as ex
from reward.v1 import sandbox_pb2 as pb
from reward.v1 import sandbox_pb2_grpc
from reward_core.channel_config import ChannelConfig
from reward_core.clients import AsyncSandboxClient, SandboxClient, SandboxReplyError, ServerUnavailable
from reward_core.config_flags import dataclass_from_values
from sandbox.server import SandboxServerConfig, create_server
from tests.integration.conftest import fake_grpc_server

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
FAST = ex.Limits(wall_s=5, cpu_s=5)
NO_RETRY = ChannelConfig(max_attempts=1, wait_for_ready=False)


@pytest.fixture(scope="module")
def server():
    settings = dict(port=0, workers=2, max_batch=8, max_wall_s=20.0, grace_s=0.0)
    server = create_server(dataclass_from_values(SandboxServerConfig, settings))  # named as the flags are
    yield server
    server.stop(0)


def add(body: str, rid: str) -> ex.ExecutionRequest:
    return ex.ExecutionRequest(code=f"def add(a, b):\n    return {body}\n", style=ex.TestStyle.HUMANEVAL, id=rid,
                               check_code=CHECK, entry_point="add", limits=FAST)


def stdio(code: str, rid: str = "", **limits: float) -> ex.ExecutionRequest:
    return ex.ExecutionRequest(code=code, style=ex.TestStyle.STDIO, id=rid,
                               limits=ex.Limits(**{"wall_s": 5, "cpu_s": 5, **limits}),
                               cases=(ex.TestCase(stdin="1 2\n", expected_stdout="3\n"),))


def test_execute_batch_answers_in_order_with_the_callers_ids(server):
    requests = [add("a + b", "same"), add("a - b", "same"), add("a + b", ""),
                stdio("a, b = map(int, input().split())\nprint(a + b)\n", "io")]
    with SandboxClient(server.address, timeout_s=60) as sandbox:
        results = sandbox.execute_batch(requests)
    assert [r.id for r in results] == ["same", "same", "", "io"]  # repeated and empty ids are the caller's business
    ok, wrong = ex.Verdict.ACCEPTED, ex.Verdict.WRONG_ANSWER
    assert [r.verdict for r in results] == [ok, wrong, ok, ok]
    assert (results[1].tests_passed, results[1].tests_total) == (0, 2)


def test_execute_runs_one_program(server):
    with SandboxClient(server.address, timeout_s=60) as sandbox:
        assert sandbox.serving()
        result = sandbox.execute(stdio("print(4)\n", "one"))
    assert (result.id, result.verdict, result.stdout) == ("one", ex.Verdict.WRONG_ANSWER, "4\n")


def test_the_async_client_gets_the_same_verdicts(server):
    async def run():
        async with AsyncSandboxClient(server.address, timeout_s=60) as sandbox:
            assert await sandbox.serving()
            one = await sandbox.execute(add("a + b", "x"))
            return one, await sandbox.execute_batch([add("a * b", "y"), add("a + b", "z")])

    one, batch = asyncio.run(run())
    assert (one.id, one.verdict) == ("x", ex.Verdict.ACCEPTED)
    assert [(r.id, r.verdict) for r in batch] == [("y", ex.Verdict.WRONG_ANSWER), ("z", ex.Verdict.ACCEPTED)]


def test_a_request_the_sandbox_cannot_run_is_invalid_argument(server):
    unknown = ex.ExecutionRequest(code="print(1)", style=ex.TestStyle.STDIO, language="cobol", limits=FAST,
                                  cases=(ex.TestCase(expected_stdout="1\n"),))
    with SandboxClient(server.address, timeout_s=30) as sandbox, pytest.raises(grpc.RpcError) as info:
        sandbox.execute_batch([unknown])
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "cobol" in info.value.details()


def test_cancelling_a_call_stops_waiting_at_once(server):
    cancel = ex.Cancellation()
    timer = threading.Timer(0.5, cancel.cancel)
    with SandboxClient(server.address, timeout_s=60) as sandbox:
        timer.start()
        start = time.monotonic()
        with pytest.raises(grpc.FutureCancelledError):
            sandbox.execute(stdio("while True:\n    pass\n", "spin", wall_s=15, cpu_s=15), cancel=cancel)
        elapsed = time.monotonic() - start
    timer.cancel()
    assert elapsed < 10, elapsed


def test_an_unreachable_sandbox_is_unavailable_and_not_serving():
    # connect_timeout_s=None: the call itself, not the connect check (tests/unit/test_fail_fast_services.py)
    with SandboxClient("127.0.0.1:1", timeout_s=5, channel=NO_RETRY, connect_timeout_s=None) as sandbox:
        assert not sandbox.serving(timeout_s=2)
        with pytest.raises(grpc.RpcError) as info:
            sandbox.execute_batch([add("a + b", "r")])
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # callers reading the code keep working
    assert isinstance(info.value, ServerUnavailable)
    assert str(info.value).startswith("the sandbox service at 127.0.0.1:1 is unavailable: ")


class _DroppingSandbox(sandbox_pb2_grpc.SandboxServiceServicer):
    """Answers ExecuteBatch with one result fewer than it was sent."""

    def ExecuteBatch(self, request, context):  # noqa: N802 - the gRPC method name
        return pb.ExecuteBatchResponse(results=[pb.ExecutionResult(id=r.id, verdict=pb.VERDICT_ACCEPTED, passed=True)
                                                for r in request.requests[:-1]])


def test_an_answer_missing_a_result_raises_instead_of_passing_the_wrong_program():
    with fake_grpc_server(sandbox_pb2_grpc.add_SandboxServiceServicer_to_server, _DroppingSandbox()) as address, \
            SandboxClient(address, timeout_s=10) as sandbox, \
            pytest.raises(SandboxReplyError, match="missing or out of order"):
        sandbox.execute_batch([add("a + b", "a"), add("a + b", "b")])
