"""Short runs of `make bench-episodes` and `make soak-episodes` against a real environment server.

They assert what must hold whatever the timing: every episode completed with the reward it should have
(10% answered wrong on purpose, so a verifier that scored everything 1 fails), nothing left open, and
under faults (sandbox processes and verification workers SIGKILLed, clients dropping mid-call, SIGTERM
mid-episode) every episode ended with an answer or a typed failure and no process outlived the server
(the soak's exit status). No timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str) -> tuple[int, str]:
    run = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                         timeout=600)
    return run.returncode, run.stdout + run.stderr


def test_episodes_through_grpc_all_complete_with_the_right_reward_and_leave_nothing_open():
    code, output = _run("bench_episodes.py", "--via", "grpc", "--episodes", "40", "--concurrency", "8",
                        "--warmup", "8")
    done = re.search(r"^completed with the right reward: (\d+) ", output, re.MULTILINE)
    assert done and int(done.group(1)) == 40, output
    assert re.search(r"^left after the run: open sessions 0, episodes never ended 0, door sessions 0, ", output,
                     re.MULTILINE), output
    assert code == 0, output


def test_episodes_under_faults_end_with_an_answer_or_a_typed_failure_and_leave_nothing_running():
    code, output = _run("soak_episodes.py", "--seconds", "10", "--concurrency", "4", "--seed", "1")
    assert re.search(r"^faults: \d+ episodes", output, re.MULTILINE), output
    assert "neither an answer nor a typed failure" not in output, output
    assert code == 0 and "PASSED" in output, output
