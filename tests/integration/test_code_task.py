"""The ``code`` task inside a real reward server: in-process executor and a remote sandbox endpoint."""

from __future__ import annotations

import os

import pytest

from reward_core.contract import RolloutStatus
from reward_service.router.rewards_config import CompositeSpec, RewardsConfig, TaskSpec
from tests.integration.conftest import start_server
from trainer_client import RewardClient

PROMPT = 'def add(a: int, b: int) -> int:\n    """Returns a + b."""\n'
CHECK = ("def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(0, 0) == 0\n"
         "    assert candidate(2, 2) == 4\n    assert candidate(-1, 1) == 0\n")
REFERENCE = {"tests": CHECK, "entry_point": "add"}
RIGHT = "    return a + b\n"
MOSTLY_RIGHT = "    return a + b if a != b else 0\n"   # fails only candidate(2, 2) == 4: 3 of 4
WRONG = "    return a - b\n"


@pytest.fixture(scope="module")
def reward_server(sandbox_server):
    rewards = RewardsConfig(
        tasks=(TaskSpec("code", "code", {"timeout_s": 3.0, "concurrency": 2}),
               TaskSpec("code_fraction", "code", {"reward": "fraction", "timeout_s": 3.0, "concurrency": 2}),
               TaskSpec("code_remote", "code", {"endpoint": sandbox_server.address, "timeout_s": 3.0}),
               TaskSpec("code_down", "code", {"endpoint": "127.0.0.1:1"})),
        rewards=(CompositeSpec("code_down_with_format", {"code_down": 1.0, "format": 0.1}),),
    )
    server = start_server(workers=1, rewards=rewards)
    yield server
    server.stop(0)


def rollout(rid: str, task: str, completion: str, reference=None, prompt: str = PROMPT) -> dict:
    return {"id": rid, "task": task, "prompt": prompt, "completion": completion,
            "reference": REFERENCE if reference is None else reference}


def score(server, rollouts):
    with RewardClient(server.address, timeout_s=180) as client:
        return client.score(rollouts)


def test_correct_code_scores_1_and_wrong_code_scores_0(reward_server):
    right, wrong, fenced = score(reward_server, [
        rollout("right", "code", RIGHT), rollout("wrong", "code", WRONG),
        rollout("fenced", "code", "Here you go:\n```python\ndef add(a, b):\n    return b + a\n```\n")])
    assert (right.status, right.score) == (RolloutStatus.OK, 1.0)
    assert (wrong.status, wrong.score, wrong.scored) == (RolloutStatus.OK, 0.0, True)
    assert (fenced.status, fenced.score) == (RolloutStatus.OK, 1.0)
    assert wrong.extracted == "wrong_answer (1/4 tests)"


def test_code_that_hangs_or_crashes_is_a_scored_zero_not_a_timeout_status(reward_server):
    hang, crash = score(reward_server, [rollout("hang", "code", "    while True:\n        pass\n"),
                                        rollout("crash", "code", "    import os\n    os._exit(3)\n")])
    assert (hang.status, hang.score) == (RolloutStatus.OK, 0.0) and hang.extracted.startswith("timeout")
    assert (crash.status, crash.score) == (RolloutStatus.OK, 0.0)


def test_code_runs_on_one_shared_executor_in_the_server_and_no_worker_is_killed(reward_server):
    """Programs run on the server's one executor (not one per worker), and a looping program's
    timeout is a verdict from the sandbox: no verifier worker does the work or is replaced."""
    from reward_service.tasks import code_task

    before = reward_server.scorer.pool.stats()
    results = score(reward_server, [rollout(f"r{i}", "code", RIGHT if i % 2 else "    while True:\n        pass\n")
                                    for i in range(4)])
    assert [(r.status, r.score) for r in results] == [(RolloutStatus.OK, float(i % 2)) for i in range(4)]
    after = reward_server.scorer.pool.stats()
    assert (after.completed, after.restarts, after.timeouts) == (before.completed, before.restarts, before.timeouts)
    local = [key for key, (pid, _, _) in code_task._EXECUTORS.items() if pid == os.getpid() and key[0] == "process"]
    assert len(local) == 1  # "code" and "code_fraction" share one executor: same settings


def test_fraction_reward_is_the_share_of_tests_passed(reward_server):
    [most] = score(reward_server, [rollout("most", "code_fraction", MOSTLY_RIGHT)])
    assert (most.status, most.score) == (RolloutStatus.OK, 0.75)


def test_stdio_and_function_call_references(reward_server):
    stdio_ref = {"cases": [{"stdin": "3\n", "expected_stdout": "9\n"}, {"stdin": "4\n", "expected_stdout": "16\n"}]}
    call_ref = {"cases": [{"args": [3], "expected": 9}], "entry_point": "sq"}
    stdio, call = score(reward_server, [
        rollout("stdio", "code", "```python\nn = int(input())\nprint(n * n)\n```", stdio_ref, prompt="chat"),
        rollout("call", "code", "def sq(x):\n    return x * x\n", call_ref, prompt="chat")])
    assert (stdio.status, stdio.score) == (RolloutStatus.OK, 1.0)
    assert (call.status, call.score) == (RolloutStatus.OK, 1.0)


def test_no_code_is_no_answer_and_a_bad_reference_is_invalid_reference(reward_server):
    empty, bad, unknown = score(reward_server, [
        rollout("empty", "code", "   "),
        rollout("bad", "code", RIGHT, {"answer": "3"}),
        rollout("lang", "code", RIGHT, {**REFERENCE, "language": "cobol"})])
    assert (empty.status, empty.score, empty.scored) == (RolloutStatus.NO_ANSWER, 0.0, True)
    assert bad.status == RolloutStatus.INVALID_REFERENCE and bad.reward is None
    assert unknown.status == RolloutStatus.INVALID_REFERENCE and "cobol" in unknown.error


def test_a_remote_sandbox_endpoint_scores_the_same(reward_server):
    right, wrong = score(reward_server, [rollout("r", "code_remote", RIGHT), rollout("w", "code_remote", WRONG)])
    assert (right.status, right.score) == (RolloutStatus.OK, 1.0)
    assert (wrong.status, wrong.score) == (RolloutStatus.OK, 0.0)


def test_a_sandbox_failure_is_an_unscored_error_never_zero(reward_server):
    results = score(reward_server, [rollout("d1", "code_down", RIGHT), rollout("d2", "code_down", WRONG)])
    for r in results:
        assert r.status == RolloutStatus.ERROR and not r.scored and r.reward is None
        assert "127.0.0.1:1" in r.error and "sandbox" in r.error


def test_a_sandbox_failure_inside_a_composite_is_still_an_error(reward_server):
    [r] = score(reward_server, [rollout("c", "code_down_with_format", RIGHT)])
    assert r.status == RolloutStatus.ERROR and r.reward is None


def test_a_cancelled_call_kills_its_running_programs(reward_server):
    """A call's end reaches the sandbox: the program of a cancelled call is killed, not left to run to
    its 3 s x tests wall limit or its 60 s sleep (found on the host by its slot uid; the wait is a hang
    guard). An expired deadline takes the same path (the handler is cancelled either way)."""
    import grpc

    from reward.v1 import reward_pb2 as pb
    from reward.v1 import reward_pb2_grpc
    from reward_service.tasks import code_task
    from tests.integration.test_sandbox_cancel import wait_until

    sleeper = pb.Rollout(id="sleeper", task="code", prompt=PROMPT, completion="    import time\n    time.sleep(60)\n",
                         reference=REFERENCE)
    with grpc.insecure_channel(reward_server.address) as channel:
        stub = reward_pb2_grpc.RewardServiceStub(channel)
        [executor] = [ex for key, (pid, ex, _) in code_task._EXECUTORS.items()
                      if pid == os.getpid() and key[0] == "process"] or [None]
        if executor is None:  # not started yet by an earlier test: start it with one program
            score(reward_server, [rollout("warm", "code", RIGHT)])
            [executor] = [ex for key, (pid, ex, _) in code_task._EXECUTORS.items()
                          if pid == os.getpid() and key[0] == "process"]
        uids = {str(h["uid"]) for h in executor.hellos}

        def programs() -> list[int]:
            found = []
            for entry in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{entry}/status") as f:
                        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
                except OSError:
                    continue
                if status.get("Uid", "").split()[:1] and status["Uid"].split()[0] in uids \
                        and status.get("State", "").split()[:1] not in (["Z"], ["X"]):
                    found.append(int(entry))
            return found

        call = stub.Score.future(pb.ScoreRequest(request_id="expiring", rollouts=[sleeper]), timeout=60)
        assert wait_until(lambda: bool(programs())), "the program never started"
        call.cancel()
        with pytest.raises(grpc.FutureCancelledError):
            call.result()
        assert wait_until(lambda: not programs()), f"programs still running after the call ended: {programs()}"
        right = score(reward_server, [rollout("after", "code", RIGHT)])
        assert right[0].score == 1.0  # the executor replaced the interrupted slot and keeps serving


def test_the_reward_server_serves_its_code_sandbox_as_a_sandbox_service(reward_server):
    """SandboxFusion-style clients (the HTTP front door's /run_code) use the code task's own slots."""
    import grpc

    from reward.v1 import sandbox_pb2 as spb
    from reward.v1 import sandbox_pb2_grpc

    with grpc.insecure_channel(reward_server.address) as channel:
        stub = sandbox_pb2_grpc.SandboxServiceStub(channel)
        right = stub.Execute(spb.ExecutionRequest(id="r", code="print(int(input()) * 2)", style=spb.TEST_STYLE_STDIO,
                                                  cases=[spb.TestCase(stdin="21\n", expected_stdout="42")]), timeout=60)
        wrong = stub.Execute(spb.ExecutionRequest(id="w", code="print(0)", style=spb.TEST_STYLE_STDIO,
                                                  cases=[spb.TestCase(stdin="21\n", expected_stdout="42")]), timeout=60)
    assert right.verdict == spb.VERDICT_ACCEPTED
    assert wrong.verdict == spb.VERDICT_WRONG_ANSWER
