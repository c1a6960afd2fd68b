"""Processes for `bench/bench_journeys.py`: CLIs run with a hard timeout, servers on loopback ports
picked at run time (stopped and reaped, their process groups too), and the table's rows.

Every child starts in its own session, so a timeout or the end of the bench kills what it spawned
(a server's worker processes included) and a hang shows up as a ``timeout`` row, never as a stuck bench.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from reward_core.ports import free_port

BIN = Path(sys.executable).parent
PROGRESS = re.compile(r"\d+%\||it/s\]|rollout/s\]|step/s\]")


@dataclasses.dataclass
class Row:
    """One journey's line of the table."""

    journey: str
    ran: str
    seconds: float | None          # to the first clear message; None: not reached
    exit: str                      # the exit status, "timeout", or what stands for it (an exception's type)
    message: str
    bound_s: float | None = None   # the bound, where it names one
    note: str = ""

    def verdict(self) -> str:
        if self.seconds is None:
            return "TIMEOUT"
        if self.bound_s is None:
            return "-"
        return "within bound" if self.seconds <= self.bound_s else "over bound"


@dataclasses.dataclass
class Ran:
    """A finished (or killed) command."""

    wall_s: float
    returncode: int | None        # None: killed at the hard timeout
    out: str
    err: str

    @property
    def exit(self) -> str:
        return "timeout" if self.returncode is None else str(self.returncode)

    @property
    def seconds(self) -> float | None:
        return None if self.returncode is None else self.wall_s


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group (it was started in a session of its own) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run(argv: list[str], *, timeout_s: float, cwd: Path, env: dict[str, str] | None = None,
        stdin: str | None = None) -> Ran:
    """Runs ``argv`` to its end, or kills it (and its children) at ``timeout_s``."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
        return Ran(time.monotonic() - start, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return Ran(time.monotonic() - start, None, out, err)


def clear_lines(text: str, n: int = 2, prefer: str = "error") -> str:
    """``n`` lines of ``text`` that say something (progress bars dropped), from the first one naming
    ``prefer`` when there is one (a log line before the error is not the message)."""
    lines = [ln.strip() for chunk in text.splitlines() for ln in chunk.split("\r")]
    lines = [ln for ln in lines if ln and not PROGRESS.search(ln)]
    first = next((i for i, ln in enumerate(lines) if prefer and prefer in ln.lower()), 0)
    return " / ".join(lines[first:first + n])


class Servers:
    """Reward servers and HTTP doors started by the bench; ``close`` stops every one still running."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.procs: list[subprocess.Popen] = []

    def spawn(self, name: str, argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 - the child writes it until it exits
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def reward_server(self, name: str, *flags: str, cwd: Path, env: dict[str, str] | None = None,
                      timeout_s: float = 120.0) -> tuple[subprocess.Popen, str, float]:
        """``reward-service serve`` on a free port: (process, address, seconds to health SERVING)."""
        port = free_port()
        start = time.monotonic()
        proc = self.spawn(name, [str(BIN / "reward-service"), "serve", "--port", str(port), *flags], cwd=cwd, env=env)
        address = f"127.0.0.1:{port}"
        wait_serving(proc, address, timeout_s, self.log, name)
        return proc, address, time.monotonic() - start

    def http_door(self, upstream: str, *, cwd: Path, extra: tuple[str, ...] = (), name: str = "door",
                  timeout_s: float = 60.0) -> str:
        """``reward-service serve-http`` onto ``upstream``; its base URL once /healthz answers."""
        port = free_port()
        proc = self.spawn(name, [str(BIN / "reward-service"), "serve-http", "--upstream", upstream,
                                 "--port", str(port), *extra], cwd=cwd)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    return url
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP door did not answer: {self.log(name)[-2000:]}")
            time.sleep(0.1)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc)  # and whatever the server left behind in its group


def health(address: str, service: str = "", timeout_s: float = 1.0) -> int | None:
    """The health status of ``service`` (None: no answer)."""
    with grpc.insecure_channel(address) as channel:
        try:
            return health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s).status
        except grpc.RpcError:
            return None


def wait_serving(proc: subprocess.Popen, address: str, timeout_s: float, log, name: str) -> None:
    deadline = time.monotonic() + timeout_s
    while health(address) != health_pb2.HealthCheckResponse.SERVING:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"server {name} not SERVING (exit {proc.poll()}): {log(name)[-2000:]}")
        time.sleep(0.05)


def wait_not_serving(address: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while health(address, timeout_s=0.5) == health_pb2.HealthCheckResponse.SERVING and time.monotonic() < deadline:
        time.sleep(0.02)


def markdown_table(rows: list[Row]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    head = ["journey", "what the user ran", "s to message", "exit", "first line(s) of the message", "bound",
            "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        seconds = "-" if r.seconds is None else f"{r.seconds:.2f}"
        bound = "-" if r.bound_s is None else f"<= {r.bound_s:g} s"
        message = r.message + (f" ({r.note})" if r.note else "")
        lines.append("| " + " | ".join(cell(c) for c in (r.journey, f"`{r.ran}`", seconds, r.exit, message, bound,
                                                           r.verdict())) + " |")
    return "\n".join(lines)
