"""``python -m sandbox exec|batch`` as a user runs them: real subprocesses, real process backend."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import reward_core.sandbox_contract as ex
from sandbox.remote_executor import RemoteExecutor
from sandbox.submissions import build_request

CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
ADD = "def add(a, b):\n    return a + b\n"


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sandbox", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def files(tmp_path: Path):
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


def test_exec_with_check_code_prints_a_passing_result(files):
    proc = run_cli("exec", "--code", files("sol.py", ADD), "--tests", files("check.py", CHECK),
                   "--entry-point", "add", "--timeout", "5")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["passed"], result["verdict"], result["tests_passed"], result["tests_total"]) == \
        (True, "accepted", 2, 2)


def test_exec_with_stdio_cases_reports_a_wrong_answer_and_exits_1(files):
    cases = [{"stdin": "1 2\n", "expected_stdout": "3\n"}, {"stdin": "2 2\n", "expected_stdout": "4\n"}]
    proc = run_cli("exec", "--code", files("sol.py", "a, b = map(int, input().split())\nprint(a * b)\n"),
                   "--tests", files("cases.json", json.dumps(cases)), "--lang", "python")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["passed"], result["verdict"], result["tests_passed"], result["tests_total"]) == \
        (False, "wrong_answer", 1, 2)
    assert [t["outcome"] for t in result["tests"]] == ["failed", "passed"]


def test_exec_with_function_call_cases(files):
    cases = [{"args": [[3, 1, 2]], "expected": [1, 2, 3]}, {"args": [[]], "expected": []}]
    proc = run_cli("exec", "--code", files("sol.py", "def srt(xs):\n    return sorted(xs)\n"),
                   "--tests", files("cases.json", json.dumps(cases)), "--entry-point", "srt")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tests_passed"] == 2


def test_exec_without_an_entry_point_for_check_code_exits_2_saying_why(files):
    proc = run_cli("exec", "--code", files("sol.py", ADD), "--tests", files("check.py", CHECK))
    assert proc.returncode == 2 and "--entry-point" in proc.stderr and proc.stdout == ""


def test_batch_writes_one_line_out_per_line_in_in_order(tmp_path):
    lines = [
        json.dumps({"id": "HumanEval/0", "code": ADD, "tests": CHECK, "entry_point": "add"}),
        json.dumps({"id": "HumanEval/1", "code": "def add(a, b):\n    return a - b\n", "tests": CHECK,
                    "entry_point": "add"}),
        '{"id": "broken", "code": ',
        json.dumps({"id": "stdio", "code": "print(int(input()) * 2)",
                    "tests": [{"stdin": "4\n", "expected_stdout": "8\n"}]}),
        json.dumps({"code": "x", "tests": CHECK}),
        json.dumps({"id": "loop", "code": "def add(a, b):\n    while True:\n        pass\n", "tests": CHECK,
                    "entry_point": "add"}),
    ]
    raw = ("\n".join(lines) + "\n").encode() + b'{"id": "bytes\xff", "code": "print(1)", "tests": []}\n'
    (tmp_path / "in.jsonl").write_bytes(raw)
    out = tmp_path / "results.jsonl"
    proc = run_cli("batch", "--in", str(tmp_path / "in.jsonl"), "--out", str(out), "--workers", "2", "--timeout", "2")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["HumanEval/0", "HumanEval/1", 3, "stdio", 5, "loop", "bytes\ufffd"]
    assert [r["verdict"] for r in records] == ["accepted", "wrong_answer", "invalid_request", "accepted",
                                               "invalid_request", "timeout", "invalid_request"]
    assert [r["passed"] for r in records] == [True, False, False, True, False, False, False]
    assert "line 3: invalid JSON" in records[2]["error"] and "entry point" in records[4]["error"]
    assert all({"tests_passed", "tests_total"} <= set(r) for r in records)
    assert "7 submissions" in proc.stderr and "100%" in proc.stderr  # summary and progress bar


def test_serve_runs_on_its_own_and_stops_cleanly_on_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "sandbox", "serve", "--port", "0", "--workers", "1",
                             "--grace-s", "1"], stderr=subprocess.PIPE, text=True)
    try:
        address = None
        for line in proc.stderr:
            match = re.search(r"listening on (\S+):", line)
            if match:
                address = match.group(1)
                break
        assert address, "the server never said where it listens"
        remote = RemoteExecutor(address, call_timeout_s=60)
        try:
            result = remote.execute(build_request(ADD, CHECK, entry_point="add"))
        finally:
            remote.close()
        assert result.verdict is ex.Verdict.ACCEPTED
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
