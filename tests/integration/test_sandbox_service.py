"""The SandboxService over real gRPC on loopback, with the real process backend."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

import reward_core.sandbox_contract as ex
from reward.v1 import sandbox_pb2 as pb
from reward.v1 import sandbox_pb2_grpc
from reward_core import sandbox_convert as convert
from reward_core.config_flags import dataclass_from_values
from sandbox.remote_executor import RemoteExecutor
from sandbox.server import SERVICE_NAME, SandboxServerConfig, create_server

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
ADD = "def add(a, b):\n    return a + b\n"
FAST = pb.Limits(wall_s=5, cpu_s=5)


def config(**overrides) -> SandboxServerConfig:
    settings = dict(port=0, workers=2, max_batch=8, max_wall_s=20.0, grace_s=0.0)
    settings.update(overrides)
    return dataclass_from_values(SandboxServerConfig, settings)  # overrides named as the flags are


@pytest.fixture(scope="module")
def server():
    server = create_server(config())
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(server.address)
    yield sandbox_pb2_grpc.SandboxServiceStub(channel)
    channel.close()


def humaneval(code: str = ADD, rid: str = "", **fields) -> pb.ExecutionRequest:
    settings = dict(id=rid, code=code, style=pb.TEST_STYLE_HUMANEVAL, check_code=CHECK, entry_point="add",
                    limits=FAST)
    settings.update(fields)
    return pb.ExecutionRequest(**settings)


def expect_status(call, code: grpc.StatusCode, fragment: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == code, info.value.details()
    assert fragment in info.value.details(), info.value.details()


def test_execute_passes_a_correct_program(stub):
    result = stub.Execute(humaneval(rid="ok"), timeout=60)
    assert (result.id, result.verdict, result.passed) == ("ok", pb.VERDICT_ACCEPTED, True)
    assert (result.tests_passed, result.tests_total) == (2, 2)
    assert result.backend == "process"


def test_execute_without_a_deadline_is_answered(stub):
    result = stub.Execute.future(humaneval(rid="plain")).result(timeout=60)  # no timeout: no deadline on the call
    assert (result.id, result.verdict, result.passed) == ("plain", pb.VERDICT_ACCEPTED, True)


def test_execute_batch_answers_every_style_in_request_order(stub):
    requests = [
        humaneval("def add(a, b):\n    return a - b\n", rid="wrong"),
        pb.ExecutionRequest(id="stdio", code="a, b = map(int, input().split())\nprint(a + b)\n",
                            style=pb.TEST_STYLE_STDIO, limits=FAST,
                            cases=[pb.TestCase(stdin="1 2\n", expected_stdout="3\n"),
                                   pb.TestCase(stdin="5 5\n", expected_stdout="10\n")]),
        pb.ExecutionRequest(id="call", code="def f(xs):\n    return sorted(xs)\n", entry_point="f",
                            style=pb.TEST_STYLE_FUNCTION_CALL, limits=FAST,
                            cases=[pb.TestCase(args_json="[[3, 1, 2]]", expected_json="[1, 2, 3]"),
                                   pb.TestCase(args_json="[[2, 1]]", expected_json="[2, 1]")]),
        humaneval(rid="ok"),
    ]
    results = stub.ExecuteBatch(pb.ExecuteBatchRequest(requests=requests), timeout=120).results
    assert [r.id for r in results] == ["wrong", "stdio", "call", "ok"]
    assert [r.verdict for r in results] == [pb.VERDICT_WRONG_ANSWER, pb.VERDICT_ACCEPTED,
                                            pb.VERDICT_WRONG_ANSWER, pb.VERDICT_ACCEPTED]
    assert [(r.tests_passed, r.tests_total) for r in results] == [(0, 2), (2, 2), (1, 2), (2, 2)]


def test_undecodable_output_bytes_come_back_as_replacement_characters(stub):
    code = ("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\nsys.stdout.flush()\n"
            "sys.stderr.buffer.write(b'\\x80err')\n")
    result = stub.Execute(pb.ExecutionRequest(code=code, style=pb.TEST_STYLE_STDIO, limits=FAST,
                                              cases=[pb.TestCase(stdin="", expected_stdout="ok\n")]), timeout=60)
    assert result.verdict == pb.VERDICT_WRONG_ANSWER
    assert result.stdout == "ok \ufffd\ufffd end\n" and result.stderr == "\ufffderr"


def test_non_ascii_text_and_nul_characters_round_trip(stub):
    text = "\u2713 caf\u00e9 \U0001F600 a\x00b"
    code = f"import sys\ndata = sys.stdin.read()\nprint(data + ' ' + {text!r})\n"
    result = stub.Execute(pb.ExecutionRequest(code=code, style=pb.TEST_STYLE_STDIO, limits=FAST,
                                              cases=[pb.TestCase(stdin=text, expected_stdout=f"{text} {text}\n")]),
                          timeout=60)
    assert result.verdict == pb.VERDICT_ACCEPTED, result


def test_health_is_serving_for_the_server_and_the_service(server):
    with grpc.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE_NAME):
            status = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_sandbox_service(server):
    with grpc.insecure_channel(server.address) as channel:
        responses = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        names = {s.name for s in next(responses).list_services_response.service}
    assert SERVICE_NAME in names


@pytest.mark.parametrize("request_msg, fragment", [
    (humaneval(language="cobol"), "unknown language 'cobol'"),
    (humaneval(check_code=""), "must define a top-level function check(candidate)"),
    (humaneval(entry_point=""), "need an entry_point"),
    (pb.ExecutionRequest(code="print(1)", style=pb.TEST_STYLE_STDIO), "need at least one case"),
    (pb.ExecutionRequest(code="print(1)"), "style is required"),
    (humaneval(limits=pb.Limits(wall_s=-1)), "wall_s must be > 0"),
    (humaneval(limits=pb.Limits(wall_s=500)), "above this server's cap"),
    (humaneval(limits=pb.Limits(memory_mb=1 << 20)), "memory_mb"),
    (pb.ExecutionRequest(code="", style=pb.TEST_STYLE_FUNCTION_CALL, entry_point="f",
                         cases=[pb.TestCase(args_json="[1,")]), "args_json is not valid JSON"),
])
def test_a_bad_request_is_invalid_argument_saying_what_to_fix(stub, request_msg, fragment):
    expect_status(lambda: stub.Execute(request_msg, timeout=30), grpc.StatusCode.INVALID_ARGUMENT, fragment)


def test_one_bad_request_refuses_the_batch_and_names_it(stub):
    batch = pb.ExecuteBatchRequest(requests=[humaneval(rid="a"), humaneval(rid="b", language="cobol")])
    expect_status(lambda: stub.ExecuteBatch(batch, timeout=30), grpc.StatusCode.INVALID_ARGUMENT, "request 1 (id 'b')")


def test_too_many_programs_in_one_call_is_invalid_argument(stub):
    batch = pb.ExecuteBatchRequest(requests=[humaneval() for _ in range(9)])
    expect_status(lambda: stub.ExecuteBatch(batch, timeout=30), grpc.StatusCode.INVALID_ARGUMENT, "split it")


def test_duplicate_ids_are_invalid_argument_but_empty_ids_are_fine(stub):
    dup = pb.ExecuteBatchRequest(requests=[humaneval(rid="x"), humaneval(rid="x")])
    expect_status(lambda: stub.ExecuteBatch(dup, timeout=30), grpc.StatusCode.INVALID_ARGUMENT, "duplicate id 'x'")
    results = stub.ExecuteBatch(pb.ExecuteBatchRequest(requests=[humaneval(), humaneval()]), timeout=60).results
    assert [r.passed for r in results] == [True, True]


def test_a_full_queue_is_resource_exhausted(server):
    small = create_server(config(max_queue=1), executor=server.executor)
    try:
        with grpc.insecure_channel(small.address) as channel:
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            batch = pb.ExecuteBatchRequest(requests=[humaneval(), humaneval()])
            expect_status(lambda: stub.ExecuteBatch(batch, timeout=30), grpc.StatusCode.RESOURCE_EXHAUSTED,
                          "queued")
    finally:
        small.stop(0)


def test_a_draining_server_is_not_serving_and_answers_unavailable(server):
    draining = create_server(config(), executor=server.executor)
    try:
        draining.begin_drain()
        with grpc.insecure_channel(draining.address) as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
            stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
            expect_status(lambda: stub.Execute(humaneval(), timeout=30), grpc.StatusCode.UNAVAILABLE, "draining")
    finally:
        draining.stop(0)


def test_a_deadline_shorter_than_the_programs_is_deadline_exceeded(stub):
    spin = pb.ExecutionRequest(code="while True:\n    pass\n", style=pb.TEST_STYLE_STDIO,
                               limits=pb.Limits(wall_s=2, cpu_s=2), cases=[pb.TestCase(expected_stdout="")])
    with pytest.raises(grpc.RpcError) as info:
        stub.Execute(spin, timeout=0.5)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_an_endless_loop_is_a_timeout_verdict_not_an_error(stub):
    spin = pb.ExecutionRequest(code="while True:\n    pass\n", style=pb.TEST_STYLE_STDIO,
                               limits=pb.Limits(wall_s=1, cpu_s=1), cases=[pb.TestCase(expected_stdout="")])
    result = stub.Execute(spin, timeout=60)
    assert result.verdict == pb.VERDICT_TIMEOUT and not result.passed


# --- the remote executor against the real service ---------------------------------------------


def test_the_remote_executor_gets_the_same_verdicts_with_the_callers_ids(server):
    remote = RemoteExecutor(server.address, call_timeout_s=60)
    try:
        requests = [convert.request_from_proto(humaneval(rid="same")),
                    convert.request_from_proto(humaneval("def add(a, b):\n    return 0\n", rid="same"))]
        results = remote.execute_batch(requests)
    finally:
        remote.close()
    assert [r.id for r in results] == ["same", "same"]
    assert [r.verdict for r in results] == [ex.Verdict.ACCEPTED, ex.Verdict.WRONG_ANSWER]


def test_the_remote_executor_raises_on_a_refused_request(server):
    remote = RemoteExecutor(server.address, call_timeout_s=30)
    try:
        with pytest.raises(ex.InvalidExecutionRequest, match="unknown language"):
            remote.execute(convert.request_from_proto(humaneval(language="cobol")))
    finally:
        remote.close()


def test_an_unreachable_sandbox_is_a_sandbox_error_result_never_a_verdict_on_the_code():
    remote = RemoteExecutor("127.0.0.1:1", call_timeout_s=10)
    try:
        [result] = remote.execute_batch([convert.request_from_proto(humaneval(rid="r"))])
    finally:
        remote.close()
    assert result.verdict is ex.Verdict.SANDBOX_ERROR and not result.verdict.is_verdict_on_code
    assert "UNAVAILABLE" in result.error and result.id == "r"


def test_cancelling_the_remote_executors_call_answers_a_sandbox_error_at_once(server):
    spin = convert.request_from_proto(pb.ExecutionRequest(
        id="spin", code="while True:\n    pass\n", style=pb.TEST_STYLE_STDIO, limits=pb.Limits(wall_s=15, cpu_s=15),
        cases=[pb.TestCase(expected_stdout="")]))
    remote = RemoteExecutor(server.address, call_timeout_s=60)
    cancel = ex.Cancellation()
    timer = threading.Timer(0.5, cancel.cancel)
    try:
        timer.start()
        t0 = time.monotonic()
        result = remote.execute(spin, cancel=cancel)
        elapsed = time.monotonic() - t0
    finally:
        timer.cancel()
        remote.close()
    assert result.verdict is ex.Verdict.SANDBOX_ERROR and "cancelled" in result.error and result.id == "spin"
    assert elapsed < 10, elapsed
