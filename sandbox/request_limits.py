"""What one call to the sandbox server may ask for, and the checks that refuse the rest by name.

Every cap is a server flag (``SandboxServerConfig.limits``, ``python -m sandbox serve --max-...``,
``SANDBOX_MAX_...``). A request above a cap is refused as a whole with INVALID_ARGUMENT,
and the message names the limit, the value asked, the cap and the flag that raises it::

    request 0 (id 'r1'): limit memory_mb=4096 is above this server's cap of 1024 MB (raise it with --max-memory-mb)

Whatever the *code* does within the caps is a verdict in its result (an output beyond
``output_bytes`` is an OUTPUT_LIMIT verdict, with the captured output truncated), never an
error of the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import grpc

from reward.v1 import sandbox_pb2 as pb
from reward_core import sandbox_convert as convert
from reward_core.grpc_common import DEFAULT_MAX_CALL_S, RequestRejected
from reward_core.sandbox_contract import (
    ExecutionRequest,
    InvalidExecutionRequest,
    Limits,
    TestStyle,
    UnsupportedLanguage,
)
from sandbox.languages import Language
from sandbox.runtime.check_split import count_cases
from sandbox.zygote_client import validate_request as check_runnable


@dataclass(frozen=True)
class RequestLimits:
    """What one call may ask for: the server's caps, each a flag of ``python -m sandbox serve``."""

    max_batch: int = field(default=1024, metadata={"help": "programs per ExecuteBatch call; more: INVALID_ARGUMENT"})
    max_queue: int = field(default=10_000, metadata={"help": "programs queued or running before RESOURCE_EXHAUSTED"})
    max_wall_s: float = field(default=60.0, metadata={"help": "largest wall/CPU limit a request may ask"})
    max_compile_s: float = field(default=120.0, metadata={"help": "largest compile limit a request may ask"})
    max_memory_mb: int = field(default=1024, metadata={"help": "largest memory/scratch limit (MB) a request may ask"})
    max_processes: int = field(default=64, metadata={
        "help": "largest max_processes (processes and threads of one execution) a request may ask"})
    max_output_bytes: int = field(default=1 << 20, metadata={
        "help": "largest output_bytes (captured stdout, and stderr, each; more is an OUTPUT_LIMIT verdict) a "
                "request may ask"})
    max_code_bytes: int = field(default=1 << 20, metadata={
        "help": "largest program source (UTF-8 bytes), and check code + prompt, a request may send"})
    max_cases: int = field(default=1024, metadata={"help": "most test cases one program may have"})
    max_call_s: float = field(default=DEFAULT_MAX_CALL_S, metadata={
        "help": "longest a call waits for its programs, with or without a client deadline; then DEADLINE_EXCEEDED"})

    def __post_init__(self) -> None:
        if min(self.max_batch, self.max_queue, self.max_memory_mb, self.max_processes, self.max_output_bytes,
               self.max_code_bytes, self.max_cases) < 1:
            raise ValueError("max_batch, max_queue, max_memory_mb, max_processes, max_output_bytes, "
                             "max_code_bytes and max_cases must be >= 1")
        if not self.max_call_s > 0:
            raise ValueError(f"max_call_s must be > 0 seconds, got {self.max_call_s}")
        defaults = Limits()  # a request that leaves its limits unset gets these: the caps must allow them
        for cap, value, name in ((self.max_wall_s, max(defaults.wall_s, defaults.cpu_s), "max_wall_s"),
                                 (self.max_compile_s, defaults.compile_wall_s, "max_compile_s"),
                                 (self.max_memory_mb, max(defaults.memory_mb, defaults.scratch_mb), "max_memory_mb"),
                                 (self.max_processes, defaults.max_processes, "max_processes"),
                                 (self.max_output_bytes, defaults.output_bytes, "max_output_bytes")):
            if not cap >= value:
                raise ValueError(f"{name} must be at least the default limit {value:g}, got {cap:g}")


def _over(name: str, value: float, cap: float, unit: str, flag: str) -> InvalidExecutionRequest:
    return InvalidExecutionRequest(f"limit {name}={value:g} is above this server's cap of {cap:g}{unit} "
                                   f"(raise it with --{flag})")


def check_caps(request: ExecutionRequest, limits: RequestLimits) -> None:
    """Raises InvalidExecutionRequest naming the first limit above this server's cap."""
    lim = request.limits
    checks = (("wall_s", lim.wall_s, limits.max_wall_s, "s", "max-wall-s"),
              ("cpu_s", lim.cpu_s, limits.max_wall_s, "s", "max-wall-s"),
              ("compile_wall_s", lim.compile_wall_s, limits.max_compile_s, "s", "max-compile-s"),
              ("memory_mb", lim.memory_mb, limits.max_memory_mb, " MB", "max-memory-mb"),
              ("scratch_mb", lim.scratch_mb, limits.max_memory_mb, " MB", "max-memory-mb"),
              ("max_processes", lim.max_processes, limits.max_processes, "", "max-processes"),
              ("output_bytes", lim.output_bytes, limits.max_output_bytes, " bytes", "max-output-bytes"))
    for name, value, cap, unit, flag in checks:
        if value > cap:
            raise _over(name, value, cap, unit, flag)
    code = len(request.code.encode("utf-8", "surrogatepass"))
    if code > limits.max_code_bytes:
        raise _over("code size", code, limits.max_code_bytes, " bytes", "max-code-bytes")
    trusted = len(request.check_code.encode("utf-8", "surrogatepass")) + \
        len(request.prompt.encode("utf-8", "surrogatepass"))
    if trusted > limits.max_code_bytes:
        raise _over("check_code + prompt size", trusted, limits.max_code_bytes, " bytes", "max-code-bytes")
    if len(request.cases) > limits.max_cases:
        raise _over("test cases", len(request.cases), limits.max_cases, "", "max-cases")


def validate_request(request: ExecutionRequest, languages: Mapping[str, Language], limits: RequestLimits) -> None:
    """Raises InvalidExecutionRequest, saying what to fix, when a request cannot be run as given.

    This server's caps first (cheap, and a huge check code is refused before it is parsed),
    then the executor's own checks (language, tests for the style, entry point, check code
    that parses), then the cases a HumanEval check code makes.
    """
    check_caps(request, limits)
    check_runnable(request, languages)
    if TestStyle(request.style) is TestStyle.HUMANEVAL:
        n = count_cases(request.check_code)
        if n > limits.max_cases:
            raise _over("test cases (asserts of check)", n, limits.max_cases, "", "max-cases")


def parse_requests(msgs: Sequence[pb.ExecutionRequest], languages: Mapping[str, Language],
                   limits: RequestLimits) -> list[ExecutionRequest]:
    """Converts and validates every request of a call; raises RequestRejected (INVALID_ARGUMENT)."""
    bad = grpc.StatusCode.INVALID_ARGUMENT
    if len(msgs) > limits.max_batch:
        raise RequestRejected(bad, f"{len(msgs)} programs in one call; the limit is {limits.max_batch} "
                                   "(--max-batch): split it")
    seen: dict[str, int] = {}
    requests = []
    for i, msg in enumerate(msgs):
        if msg.id and msg.id in seen:
            raise RequestRejected(bad, f"duplicate id {msg.id!r} (index {seen[msg.id]} and {i}); ids must be "
                                       "unique within a call (or left empty: results come back in order)")
        seen[msg.id] = i
        try:
            request = convert.request_from_proto(msg)
            validate_request(request, languages, limits)
        except InvalidExecutionRequest as exc:
            where = f"request {i}" + (f" (id {msg.id!r})" if msg.id else "")
            if isinstance(exc, UnsupportedLanguage):  # its kind first: clients read it from the details' start
                raise RequestRejected(bad, f"{exc}; {where}") from None
            raise RequestRejected(bad, f"{where}: {exc}") from None
        requests.append(request)
    return requests
