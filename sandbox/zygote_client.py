"""Host side of the zygote protocol: requests out, raw reports in, with deadlines.

A backend supplies only a *transport* (a readable + writable byte stream to a
zygote's fd 0/1) and a way to kill the slot; this module does the rest, so
the process and docker backends speak the protocol identically::

    handle = SlotHandle(PipeTransport.from_popen(proc), kill=lambda: proc.kill())
    client = ZygoteClient(handle.transport)
    hello = client.hello(deadline)                      # {"op": "hello", "selftest": "ok", ...}
    report = client.execute(build_wire(request, language), deadline)

Everything received is parsed defensively: an oversized, truncated or
non-JSON frame, EOF, or a missed deadline raises a :class:`ZygoteError`, and
the caller (slot_pool.py) answers SANDBOX_ERROR and restarts the slot. Expected
outputs are never put on the wire (see :func:`build_wire`).
"""

from __future__ import annotations

import base64
import math
import os
import select
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from reward_core.sandbox_contract import ExecutionRequest, InvalidExecutionRequest, TestStyle
from sandbox.languages import Language, resolve_language
from sandbox.runtime import codec, framing, scratch_files
from sandbox.runtime.check_split import CheckCodeError, check_prompt, count_cases

MAX_RESPONSE_BYTES = 256 * 1024 * 1024
HOST_MARGIN_S = 5.0            # A enforces the limits; the host only catches a stuck or dead sandbox


class ZygoteError(Exception):
    """The slot cannot be trusted any more (dead, stuck, or talking nonsense): restart it."""


class ZygoteTimeout(ZygoteError):
    """No complete answer before the host's own deadline."""


class ZygoteDied(ZygoteError):
    """EOF or a broken pipe: the zygote (or its sandbox) is gone."""


class ZygoteProtocolError(ZygoteError):
    """A frame that is oversized, malformed, or not the expected message."""


class Transport(Protocol):
    """A byte stream to one zygote. Both methods honour an absolute ``time.monotonic()`` deadline."""

    def send(self, data: bytes, deadline: float) -> None: ...

    def recv(self, max_bytes: int, deadline: float) -> bytes: ...   # b"" at EOF

    def close(self) -> None: ...


class PipeTransport:
    """A transport over two file descriptors (a child's stdin/stdout; the same fd twice for a socket)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)

    @classmethod
    def from_popen(cls, proc: Any) -> PipeTransport:
        """For ``subprocess.Popen(..., stdin=PIPE, stdout=PIPE)``: writes go to stdin, reads from stdout."""
        return cls(proc.stdout.fileno(), proc.stdin.fileno())

    def _wait(self, fd: int, event: int, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ZygoteTimeout("host deadline passed")
        poller = select.poll()
        poller.register(fd, event | select.POLLHUP | select.POLLERR)
        if not poller.poll(math.ceil(remaining * 1000)):
            raise ZygoteTimeout("host deadline passed")

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.write_fd, view):]
            except BlockingIOError:
                self._wait(self.write_fd, select.POLLOUT, deadline)
            except (BrokenPipeError, ConnectionError, ValueError, OSError) as exc:
                raise ZygoteDied(f"cannot write to the zygote: {exc}") from None

    def recv(self, max_bytes: int, deadline: float) -> bytes:
        while True:
            try:
                return os.read(self.read_fd, max_bytes)
            except BlockingIOError:
                self._wait(self.read_fd, select.POLLIN, deadline)
            except (ConnectionError, ValueError, OSError) as exc:
                raise ZygoteDied(f"cannot read from the zygote: {exc}") from None

    def close(self) -> None:
        pass   # the fds belong to whoever created them (e.g. the Popen object)


@dataclass
class SlotHandle:
    """One started sandbox: its transport, how to kill it (idempotent), and what it is."""

    transport: Transport
    kill: Callable[[], None]
    description: str = ""
    extra: dict = field(default_factory=dict)
    #: Hook added for the docker backend: False once the sandbox ended between executions (a container
    #: the zygote left after a failed sweep, or one killed from outside), so the pool replaces it
    #: *before* the next execution instead of answering that one SANDBOX_ERROR. None: not checked.
    alive: Callable[[], bool] | None = None
    #: Hook added for the docker backend: called with each request just before it is sent, to apply
    #: what only the host can set (the container's memory cgroup for this request's limits).
    #: Raises ZygoteError if the slot is unusable. None: nothing to do.
    prepare: Callable[[Any], None] | None = None
    #: Cancellation: kills the sandbox *now*, from another thread than the one reading its transport,
    #: without touching the transport (whose read then ends: ZygoteDied), so a cancelled call's program
    #: and everything it started die at once; the pool then kills and replaces the slot as for any dead
    #: one. None: ``kill`` is used instead.
    interrupt: Callable[[], None] | None = None


@dataclass(frozen=True)
class WireRequest:
    """What crosses into the sandbox: the public frame, the secret frame (HumanEval check, prompt) if any."""

    public: dict
    secret: dict | None
    n_cases: int
    host_timeout_s: float

    def frames(self) -> bytes:
        data = framing.pack(self.public)
        return data + framing.pack(self.secret) if self.secret is not None else data


class ZygoteClient:
    """Speaks to one zygote over a transport; one call at a time (the slot pool guarantees that)."""

    def __init__(self, transport: Transport, max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.transport = transport
        self.reader = framing.FrameReader(max_response_bytes)

    def _read_frame(self, deadline: float) -> dict:
        while True:
            try:
                frame = self.reader.pop()
            except framing.FrameError as exc:
                raise ZygoteProtocolError(str(exc)) from None
            if frame is not None:
                return frame
            data = self.transport.recv(1 << 20, deadline)
            if not data:
                raise ZygoteDied("the zygote closed its output (it died or was killed)")
            try:
                self.reader.feed(data)
            except framing.FrameError as exc:
                raise ZygoteProtocolError(str(exc)) from None

    def hello(self, deadline: float) -> dict:
        """The zygote's start-up frame. ZygoteProtocolError if it is not a hello."""
        frame = self._read_frame(deadline)
        if frame.get("op") != "hello":
            raise ZygoteProtocolError(f"expected a hello frame, got {str(frame)[:200]}")
        return frame

    def ping(self, deadline: float) -> None:
        self.transport.send(framing.pack({"op": "ping"}), deadline)
        if self._read_frame(deadline).get("op") != "pong":
            raise ZygoteProtocolError("expected pong")

    def execute(self, wire: WireRequest, deadline: float) -> dict:
        """Send one request, return the raw report (a dict; verdict.py validates its contents)."""
        if self.reader.pending:
            raise ZygoteProtocolError("unsolicited bytes from the zygote")
        self.transport.send(wire.frames(), deadline)
        report = self._read_frame(deadline)
        if report.get("v") != 1 or report.get("status") not in ("ok", "harness_error"):
            raise ZygoteProtocolError(f"not a report: {str(report)[:200]}")
        return report


# -- building the wire request ---------------------------------------------------------------------
def validate_request(request: ExecutionRequest, languages: Mapping[str, Language] | None = None) -> Language:
    """The request's language, or InvalidExecutionRequest saying what to fix. Runs nothing."""
    if not isinstance(request, ExecutionRequest):
        raise InvalidExecutionRequest(f"expected an ExecutionRequest, got {type(request).__name__}")
    language = resolve_language(request.language, languages)
    style = TestStyle(request.style)
    if not isinstance(request.code, str):
        raise InvalidExecutionRequest("code must be a string")
    if style in (TestStyle.HUMANEVAL, TestStyle.FUNCTION_CALL):
        harness = style is TestStyle.FUNCTION_CALL and bool(language.call_harness)   # sandbox/call_harness.py
        if not language.fast_path_python and not harness:
            needs = "a Python language" if style is TestStyle.HUMANEVAL else "Python or a language with a call_harness"
            raise InvalidExecutionRequest(f"{style.value} tests need {needs}, not {language.name!r}")
        if not request.entry_point:
            raise InvalidExecutionRequest(f"{style.value} tests need an entry_point")
    if not isinstance(request.prompt, str):
        raise InvalidExecutionRequest("prompt must be a string")
    if request.prompt and style is not TestStyle.HUMANEVAL:
        raise InvalidExecutionRequest(f"prompt applies to humaneval tests only, not {style.value}")
    if style is TestStyle.HUMANEVAL:
        try:
            count_cases(request.check_code)
            if request.prompt:
                check_prompt(request.prompt)
        except CheckCodeError as exc:
            raise InvalidExecutionRequest(str(exc)) from None
    elif not request.cases:
        raise InvalidExecutionRequest(f"{style.value} tests need at least one case")
    if style is TestStyle.STDIO and any(c.expected_stdout is None for c in request.cases):
        raise InvalidExecutionRequest("every stdio case needs expected_stdout")
    if style is not TestStyle.STDIO and (request.files or request.fetch_files or request.args):
        raise InvalidExecutionRequest(f"files, fetch_files and args apply to stdio tests only, not {style.value}")
    return language


def prompt_compiles(prompt: str) -> bool:
    """Whether ``prompt`` compiles on its own, as a HUMANEVAL request's trusted ``prompt`` must
    (see :func:`validate_request`). Cached, like the check code's parse."""
    try:
        check_prompt(prompt)
    except CheckCodeError:
        return False
    return True


def _encode_case(case: Any, style: TestStyle) -> dict:
    if style is TestStyle.STDIO:
        return {"stdin": str(case.stdin)}
    if not isinstance(case.args, (list, tuple)) or not isinstance(case.kwargs, dict):
        raise InvalidExecutionRequest("function_call args must be a list and kwargs a dict")
    try:
        return {"args": codec.encode(list(case.args)), "kwargs": codec.encode(dict(case.kwargs))}
    except codec.Unserializable as exc:
        raise InvalidExecutionRequest(f"function_call args must be JSON values: {exc}") from None


def build_wire(request: ExecutionRequest, language: Language) -> WireRequest:
    """The frames for one request. Expected outputs stay here: only inputs are sent."""
    style = TestStyle(request.style)
    lim = request.limits
    limits = {name: getattr(lim, name) for name in ("wall_s", "cpu_s", "memory_mb", "max_processes", "file_size_mb",
                                                    "scratch_mb", "open_files", "output_bytes", "compile_wall_s")}
    # A runtime's own floor (a JVM's threads and heap): limits that only fit Python would kill it.
    limits["memory_mb"] = max(int(limits["memory_mb"]), language.min_memory_mb)
    limits["max_processes"] = max(int(limits["max_processes"]), language.min_processes)
    limits["open_files"] = max(int(limits["open_files"]), language.min_open_files)
    source_file, compile_argv, run_argv = language.for_code(request.code)
    cases = [_encode_case(c, style) for c in request.cases] if style is not TestStyle.HUMANEVAL else []
    n_cases = count_cases(request.check_code) if style is TestStyle.HUMANEVAL else len(cases)
    public = {"op": "execute", "id": request.id, "style": style.value, "code": request.code,
              "entry_point": request.entry_point, "cases": cases, "n_cases": n_cases, "limits": limits,
              "language": {"name": language.name, "source_file": source_file,
                           "compile": list(compile_argv), "run": list(run_argv),
                           "fast_path": language.fast_path_python, "env": dict(language.env),
                           "address_space_mb": language.address_space_mb,
                           "fork_server": bool(language.fork_server)},
              "has_secret": style is TestStyle.HUMANEVAL}
    if request.files or request.fetch_files or request.args:   # to B over its channel (runtime/scratch_files.py)
        public["files"] = {name: base64.b64encode(bytes(content)).decode("ascii")
                           for name, content in request.files.items()}
        public["fetch_files"] = [str(name) for name in request.fetch_files]
        public["args"] = [str(arg) for arg in request.args]
    secret = {"op": "secret", "check_code": request.check_code, "prompt": request.prompt} \
        if style is TestStyle.HUMANEVAL else None
    timeout = lim.wall_s + (lim.compile_wall_s if language.compile else 0.0) + HOST_MARGIN_S + 0.05 * n_cases
    if request.fetch_files:
        timeout += scratch_files.FETCH_WALL_S
    return WireRequest(public=public, secret=secret, n_cases=n_cases, host_timeout_s=timeout)
