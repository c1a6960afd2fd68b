"""Explanations through a real server on loopback: every result carries one (gRPC and the HTTP door's
``/v1/score``), and a task that raises is answered ERROR naming the exception while its traceback,
sent over from the worker process, goes to the server log with the request and rollout ids."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from reward_core import convert
from reward_core.contract import Rollout, RolloutStatus
from reward_service.cli import main
from tests.http_fixtures import running_door

ROLLOUTS = [
    Rollout("r-bug", "raise", "raise"),
    Rollout("r-fine", "raise", "fine"),
    Rollout("m-right", "math", "so \\boxed{2}", {"answer": "2"}),
    Rollout("m-wrong", "gsm8k", "#### 5", {"answer": "4"}),
    Rollout("m-none", "math", "I give up.", {"answer": "2"}),
    Rollout("c-mix", "math_with_format", "\\boxed{2}", {"answer": "2"}),
    Rollout("u-task", "nope", "x"),
]


@pytest.fixture
def scored(stub, caplog):
    caplog.set_level(logging.INFO, logger="reward_service.router.scoring")
    reply = stub.Score(convert.score_request_to_proto(ROLLOUTS, request_id="req-explain-7"), timeout=60)
    return {r.id: r for r in convert.batch_from_proto(reply).results}


def test_a_raising_task_is_error_naming_the_exception_not_the_traceback(scored):
    result = scored["r-bug"]
    assert result.status == RolloutStatus.ERROR and not result.scored
    assert result.explanation == "unscored (ERROR): task 'raise' raised RuntimeError: verifier bug"
    assert "Traceback" not in result.explanation and "Traceback" not in result.error
    assert scored["r-fine"].status == RolloutStatus.OK and scored["r-fine"].explanation == "score 1"


def test_the_traceback_is_logged_with_the_request_and_rollout_ids(scored, caplog):
    records = [r for r in caplog.get_records("setup")   # logged while the fixture scored the request
               if r.name == "reward_service.router.scoring" and r.levelno == logging.ERROR]
    logged = [r.getMessage() for r in records if "'r-bug'" in r.getMessage()]
    assert len(logged) == 1, [r.getMessage() for r in records]
    message = logged[0]
    assert "request 'req-explain-7'" in message and "rollout 'r-bug'" in message
    assert "RuntimeError: verifier bug" in message
    assert "Traceback (most recent call last)" in message and "stress_tasks.py" in message  # from the worker
    assert "'r-fine'" not in message


def test_scored_results_explain_right_wrong_and_missing_answers(scored):
    assert scored["m-right"].explanation == "extracted '2' from \\boxed{}; equals gold '2' as a string"
    assert scored["m-wrong"].explanation == "extracted '5' after '####'; does not equal gold '4'"
    assert scored["m-none"].status == RolloutStatus.NO_ANSWER
    assert scored["m-none"].explanation.startswith("no answer: no \\boxed{}")


def test_a_composite_explains_each_part(scored):
    text = scored["c-mix"].explanation
    assert text.startswith("score 1 = math (1x): extracted '2' from \\boxed{}")
    assert "format (0.2x): format mismatch: missing <think>" in text


def test_an_unscored_status_says_why(scored):
    assert scored["u-task"].status == RolloutStatus.UNKNOWN_TASK
    assert scored["u-task"].explanation.startswith("unscored (UNKNOWN_TASK): unknown task 'nope'")


def test_the_http_door_returns_the_explanation(reward_server):
    rollouts = [{"id": "a", "task": "gsm8k", "completion": "#### 5", "reference": {"answer": "4"}},
                {"id": "b", "task": "raise", "completion": "raise"}]
    with running_door(reward_server.address) as url:
        small = httpx.post(f"{url}/v1/score", json={"requestId": "h1", "rollouts": rollouts}, timeout=60)
        direct = httpx.post(f"{url}/v1/score", json={"requestId": "h2", "itemTimeoutS": 5, "rollouts": rollouts},
                            timeout=60)
    for reply in (small, direct):   # merged by the door's micro-batcher, and sent upstream as it is
        assert reply.status_code == 200, reply.text
        results = {r["id"]: r for r in reply.json()["results"]}
        assert results["a"]["explanation"] == "extracted '5' after '####'; does not equal gold '4'"
        assert results["b"]["explanation"] == "unscored (ERROR): task 'raise' raised RuntimeError: verifier bug"


def test_explain_cli_runs_the_code_in_the_sandbox_and_shows_the_failing_test(capsys):
    reference = json.dumps({"cases": [{"stdin": "1 2\n", "expected_stdout": "3\n"},
                                      {"stdin": "2 2\n", "expected_stdout": "4\n"}]})
    completion = "```python\na, b = map(int, input().split())\nprint(a * b)\n```"
    assert main(["explain", "--task", "code", "--completion", completion, "--reference", reference, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "OK" and report["score"] == 0.0
    assert report["explanation"] == ("wrong_answer: 1/2 tests passed; first failure, test 0: "
                                     "line 1: expected '3', got '2'")
    assert [t["outcome"] for t in report["trace"]["tests"]] == ["failed", "passed"]
    assert report["trace"]["code"] == "a, b = map(int, input().split())\nprint(a * b)\n"


def test_a_worker_that_dies_twice_is_logged_with_the_request_and_rollout_ids(stub, caplog):
    caplog.set_level(logging.INFO, logger="reward_service.router.scoring")
    request = convert.score_request_to_proto([Rollout("k-1", "crash", "crash")], request_id="req-crash-3")
    result = convert.batch_from_proto(stub.Score(request, timeout=60)).results[0]
    assert result.status == RolloutStatus.ERROR and result.explanation.startswith("unscored (ERROR): verifier worker")
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and "'k-1'" in r.getMessage()]
    assert len(logged) == 1 and "request 'req-crash-3'" in logged[0] and "crashed twice" in logged[0]
