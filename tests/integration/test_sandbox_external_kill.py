"""A program SIGKILLed from outside its sandbox (the host's OOM killer, an operator) is our failure:
an unscored SANDBOX_ERROR, never a 0. Limits that end in a SIGKILL (wall time, memory) stay verdicts."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import pytest

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
              pytest.mark.timeout(120)]

SLEEPER = "import time\ntime.sleep(30)\nprint(3)\n"
HANG_GUARD_S = 20.0


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=1)
    yield ex
    ex.close()


def stdio(code: str, limits: Limits = Limits(wall_s=25.0, cpu_s=25.0)) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, limits=limits, cases=[Case(stdin="", expected_stdout="3")])


def program_pids(uids: set[int]) -> list[int]:
    """Host pids running as one of the slot uids (the programs)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        uid = next((line.split()[1] for line in status.splitlines() if line.startswith("Uid:")), "")
        state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "")
        if uid.isdigit() and int(uid) in uids and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def run_in_background(executor, request: ExecutionRequest) -> tuple[threading.Thread, list[ExecutionResult]]:
    out: list[ExecutionResult] = []
    thread = threading.Thread(target=lambda: out.append(executor.execute(request)), daemon=True)
    thread.start()
    return thread, out


def test_a_correct_program_sigkilled_from_outside_is_an_unscored_sandbox_error(executor):
    uids = {h["uid"] for h in executor.hellos}
    thread, out = run_in_background(executor, stdio(SLEEPER))
    deadline = time.monotonic() + HANG_GUARD_S
    while not (pids := program_pids(uids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pids, "the program never started"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)          # what the OOM killer or an operator does
    thread.join(timeout=60)
    (result,) = out
    assert result.verdict is Verdict.SANDBOX_ERROR and not result.verdict.is_verdict_on_code
    assert "killed from outside" in result.error


@pytest.mark.parametrize("kill", ["os.kill(os.getpid(), signal.SIGKILL)", "os.killpg(os.getpgrp(), signal.SIGKILL)",
                                  "signal.raise_signal(signal.SIGKILL)"])
def test_a_program_cannot_sigkill_itself_to_dodge_its_zero(executor, kill):
    code = f"import os, signal\nprint(3, flush=True)\ntry:\n    {kill}\nexcept PermissionError:\n    print('refused')\n"
    result = executor.execute(stdio(code))
    assert result.verdict is Verdict.WRONG_ANSWER and "refused" in result.stdout      # scored: a 0, not unscored


def test_a_program_may_still_terminate_its_own_children(executor):
    code = ("import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "p.terminate()\np.wait()\nprint(3)\n")
    assert executor.execute(stdio(code)).verdict is Verdict.ACCEPTED


def test_the_wall_limit_kill_is_still_a_timeout(executor):
    result = executor.execute(stdio(SLEEPER, Limits(wall_s=1.0, cpu_s=1.0)))
    assert result.verdict is Verdict.TIMEOUT


def test_a_cgroup_oom_kill_is_still_a_memory_verdict(executor):
    result = executor.execute(stdio("x = bytearray(400 * 1024 * 1024)\nprint(3)\n", Limits(memory_mb=128)))
    assert result.verdict is Verdict.MEMORY_LIMIT
