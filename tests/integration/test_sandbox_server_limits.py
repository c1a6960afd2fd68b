"""The sandbox server's caps, its answer to a malformed message, and its /metrics, over real gRPC.

Every cap is a server flag; a request above one is INVALID_ARGUMENT naming the limit, the value
asked and the flag that raises it. One module-wide server with small caps."""

from __future__ import annotations

import logging
import urllib.request

import grpc
import pytest

from reward.v1 import sandbox_pb2 as pb
from reward.v1 import sandbox_pb2_grpc
from reward_core.ports import free_port
from sandbox.request_limits import RequestLimits
from sandbox.server import SERVICE_NAME, SandboxServerConfig, create_server

pytestmark = pytest.mark.timeout(120)

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
ADD = "def add(a, b):\n    return a + b\n"
CAPS = dict(max_memory_mb=600, max_processes=40, max_output_bytes=100_000, max_code_bytes=2000, max_cases=3,
            max_wall_s=20.0)


@pytest.fixture(scope="module")
def server():
    server = create_server(SandboxServerConfig(port=0, workers=1, grace_s=0.0, metrics_port=free_port(),
                                               limits=RequestLimits(**CAPS)))
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(server.address) as channel:
        yield channel


@pytest.fixture(scope="module")
def stub(channel):
    return sandbox_pb2_grpc.SandboxServiceStub(channel)


def humaneval(**fields) -> pb.ExecutionRequest:
    settings = dict(code=ADD, style=pb.TEST_STYLE_HUMANEVAL, check_code=CHECK, entry_point="add",
                    limits=pb.Limits(wall_s=5, cpu_s=5))
    settings.update(fields)
    return pb.ExecutionRequest(**settings)


def stdio(code: str, n_cases: int = 1, **limits) -> pb.ExecutionRequest:
    return pb.ExecutionRequest(code=code, style=pb.TEST_STYLE_STDIO, limits=pb.Limits(**{"wall_s": 5, "cpu_s": 5,
                                                                                         **limits}),
                               cases=[pb.TestCase(stdin="", expected_stdout="1")] * n_cases)


def refused(stub, request: pb.ExecutionRequest) -> str:
    with pytest.raises(grpc.RpcError) as info:
        stub.Execute(request, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return info.value.details()


@pytest.mark.parametrize("request_msg, expected", [
    (humaneval(limits=pb.Limits(memory_mb=4096)), "limit memory_mb=4096 is above this server's cap of 600 MB "
                                                  "(raise it with --max-memory-mb)"),
    (humaneval(limits=pb.Limits(max_processes=500)), "limit max_processes=500 is above this server's cap of 40 "
                                                     "(raise it with --max-processes)"),
    (humaneval(limits=pb.Limits(output_bytes=10 ** 7)), "limit output_bytes=1e+07 is above this server's cap of "
                                                        "100000 bytes (raise it with --max-output-bytes)"),
    (humaneval(limits=pb.Limits(wall_s=100)), "limit wall_s=100 is above this server's cap of 20s "
                                              "(raise it with --max-wall-s)"),
    (humaneval(code=ADD + "#" * 3000), "limit code size=3032 is above this server's cap of 2000 bytes "
                                       "(raise it with --max-code-bytes)"),
    (stdio("print(1)", n_cases=4), "limit test cases=4 is above this server's cap of 3 (raise it with --max-cases)"),
    (humaneval(check_code="def check(candidate):\n" + "    assert candidate(1, 2) == 3\n" * 4),
     "limit test cases (asserts of check)=4 is above this server's cap of 3 (raise it with --max-cases)"),
])
def test_a_limit_above_its_cap_is_invalid_argument_naming_limit_value_and_flag(stub, request_msg, expected):
    assert expected in refused(stub, request_msg)


def test_output_beyond_the_asked_cap_is_an_output_limit_verdict_with_truncated_output(stub):
    result = stub.Execute(stdio("print('x' * 50_000)", output_bytes=1000), timeout=60)
    assert result.verdict == pb.VERDICT_OUTPUT_LIMIT and len(result.stdout) <= 1000


def test_limits_within_the_caps_run(stub):
    result = stub.Execute(humaneval(limits=pb.Limits(wall_s=5, cpu_s=5, memory_mb=600, max_processes=40)), timeout=60)
    assert result.verdict == pb.VERDICT_ACCEPTED


def test_a_default_server_caps_memory_at_1024_mb():
    config = SandboxServerConfig(port=0)
    assert config.limits.max_memory_mb == 1024 and config.executor_options()["max_memory_mb"] == 1024


def test_a_malformed_message_is_invalid_argument_with_one_log_line(channel, caplog):
    raw = channel.unary_unary(f"/{SERVICE_NAME}/Execute", request_serializer=None, response_deserializer=None)
    invalid_utf8_id = b"\x0a\x02\xff\xfe"            # field 1 (id, a string): bytes that are not UTF-8
    with caplog.at_level(logging.WARNING):
        with pytest.raises(grpc.RpcError) as info:
            raw(invalid_utf8_id, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith("malformed reward.v1.ExecutionRequest"), info.value.details()
    assert "UTF-8" in info.value.details()
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]   # the server shell's one line
    assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]


def test_a_malformed_batch_is_invalid_argument_and_counted(channel, server):
    counted = server.servicer.metrics.calls.labels("ExecuteBatch", "INVALID_ARGUMENT")._value.get()
    raw = channel.unary_unary(f"/{SERVICE_NAME}/ExecuteBatch", request_serializer=None, response_deserializer=None)
    with pytest.raises(grpc.RpcError) as info:
        raw(b"\x0a\x05\x0a\x03\xc3\x28\x00", timeout=30)     # requests[0].id: invalid UTF-8
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert server.servicer.metrics.calls.labels("ExecuteBatch", "INVALID_ARGUMENT")._value.get() == counted + 1


# -- /metrics -----------------------------------------------------------------------------------------
def scrape(server) -> dict[str, float]:
    url = f"http://127.0.0.1:{server.metrics_endpoint.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def test_metrics_count_executions_calls_limits_and_wall_time(server, stub):
    before = scrape(server)
    assert stub.Execute(humaneval(), timeout=60).verdict == pb.VERDICT_ACCEPTED
    assert stub.Execute(stdio("while True:\n    pass\n", wall_s=1, cpu_s=1), timeout=60).verdict == pb.VERDICT_TIMEOUT
    refused(stub, humaneval(language="cobol"))
    after = scrape(server)

    def moved(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    assert moved('sandbox_executions_total{language="python",verdict="ACCEPTED"}') == 1
    assert moved('sandbox_executions_total{language="python",verdict="TIMEOUT"}') == 1
    assert moved('sandbox_calls_total{code="OK",method="Execute"}') == 2
    assert moved('sandbox_calls_total{code="INVALID_ARGUMENT",method="Execute"}') == 1
    assert moved('sandbox_limit_hits_total{kind="time"}') == 1
    assert moved("sandbox_execution_wall_seconds_count") == 2
    assert after["sandbox_queue_depth"] == 0
    assert 'sandbox_cancelled_programs_total{stage="running"}' in after
