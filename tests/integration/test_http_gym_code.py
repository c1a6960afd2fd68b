"""NeMo Gym ``code_gen`` rows on the door's Gym routes: real door, real reward server, real sandbox.

The cases are those of NVIDIA-NeMo/Gym ``resources_servers/code_gen/tests/test_app.py`` (squares on
stdin, a wrong answer, no code block, a syntax error, a runtime error, a request without
``response``) plus LiveCodeBench function-call rows (``fn_name``, a LeetCode ``Solution`` whose
annotations need LiveCodeBench's imports). Replies are checked against ``CompCodingVerifyResponse``
as recorded below (nemo-gym needs Python >= 3.13.14 and cannot be installed here).
"""

from __future__ import annotations

from typing import Any

import httpx
import pydantic
import pytest

from reward_core.contract import Rollout
from reward_service.http_door import gym_code_gen, nemo_gym
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from sandbox import load_languages
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from tests.language_programs import require_language
from trainer_client import RewardClient

SQUARES = {"inputs": ["2\n", "5\n"], "outputs": ["4", "25"]}
SQUARE = "```python\nn=int(input())\nprint(n*n)\n```"
TWO_SUM_TESTS = {"inputs": ["[2, 7, 11, 15]\n9", "[3, 2, 4]\n6"], "outputs": ["[0, 1]", "[1, 2]"], "fn_name": "twoSum"}
TWO_SUM = ("```python\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
           "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
           "                return [seen[target - x], i]\n            seen[x] = i\n```")


class RecordedResponse(pydantic.BaseModel):
    """NeMoGymResponse (openai ``Response``): these fields are required."""

    id: str
    created_at: float
    model: str
    object: str
    output: list[dict[str, Any]]
    parallel_tool_calls: bool
    tool_choice: Any
    tools: list[Any]


class RecordedCompCodingVerifyResponse(pydantic.BaseModel):
    """resources_servers/code_gen/app.py ``CompCodingVerifyResponse`` (BaseVerifyResponse plus its fields)."""

    responses_create_params: dict[str, Any]
    response: RecordedResponse
    reward: float
    verifier_metadata: dict[str, Any] | None = None
    extracted_model_output: str | None = None
    extracted_model_code: str | None = None
    result: list[int | bool] | None = None
    metadata: dict[str, Any] | None = None
    unit_tests_time_taken: float | None = None
    reasoning_format_violation_rate: float = 0.0
    difficulty: str | None = None


def row(text: str, unit_tests: dict | None = None, **metadata: Any) -> dict:
    """A verify body as Gym's simple_agent sends a code_gen row: the row plus the model's response."""
    return {
        "responses_create_params": {"input": [{"role": "user", "content": "Read n and print n^2."}],
                                    "temperature": 0, "parallel_tool_calls": False},
        "response": {"id": "resp_1", "created_at": 0.0, "model": "dummy", "object": "response",
                     "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
                     "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                                 "content": [{"type": "output_text", "annotations": [], "text": text}]}]},
        "verifier_metadata": {"unit_tests": SQUARES if unit_tests is None else unit_tests, **metadata},
        "_ng_task_index": 0, "_ng_rollout_index": 0,
    }


@pytest.fixture(scope="module")
def reward_server():
    rewards = RewardsConfig(tasks=(TaskSpec("code", "code", {"timeout_s": 5.0, "concurrency": 2}),
                                   TaskSpec("code_down", "code", {"endpoint": "127.0.0.1:1"})))
    server = start_server(workers=1, rewards=rewards, item_timeout_s=60.0)
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(reward_server):
    with serve_app(reward_server.address, [nemo_gym.routes], timeout_s=120.0) as (url, _):
        yield url


def verify(door: str, body: dict, reward: str = "code", query: str = "") -> httpx.Response:
    return httpx.post(f"{door}/gym/{reward}/verify{query}", json=body, timeout=120)


def reward_of(door: str, body: dict, reward: str = "code") -> float:
    reply = verify(door, body, reward)
    assert reply.status_code == 200, reply.text
    return RecordedCompCodingVerifyResponse.model_validate(reply.json()).reward


def test_a_correct_stdin_solution_scores_1_in_gyms_reply_shape(door):
    body = row(SQUARE, difficulty="easy")
    reply = verify(door, body)
    parsed = RecordedCompCodingVerifyResponse.model_validate(reply.json())
    assert (parsed.reward, parsed.result, parsed.difficulty) == (1.0, [True, True], "easy")
    assert parsed.extracted_model_code == "n=int(input())\nprint(n*n)" and parsed.extracted_model_output == SQUARE
    assert parsed.unit_tests_time_taken is not None and parsed.reasoning_format_violation_rate == 0.0
    assert {k: v for k, v in reply.json().items() if k in body} == body  # the row is echoed as sent


def test_a_wrong_stdin_solution_scores_0_with_lcbs_error_code(door):
    reply = verify(door, row("```python\nn=int(input())\nprint(n+1)\n```", {"inputs": ["3\n"], "outputs": ["9"]}))
    parsed = RecordedCompCodingVerifyResponse.model_validate(reply.json())
    assert (parsed.reward, parsed.result) == (0.0, [-2])
    assert parsed.metadata["error_code"] == -2 and parsed.metadata["error_message"] == "Wrong Answer"


def test_a_leetcode_solution_method_scores_1_with_lcbs_imports(door):
    assert reward_of(door, row(TWO_SUM, TWO_SUM_TESTS)) == 1.0  # List[int] needs LiveCodeBench's imports


def test_a_wrong_function_call_solution_scores_0(door):
    wrong = TWO_SUM.replace("return [seen[target - x], i]", "return [i, seen[target - x]]")
    reply = verify(door, row(wrong, TWO_SUM_TESTS))
    assert reply.json()["reward"] == 0.0 and reply.json()["metadata"]["error_code"] == -2


def test_a_top_level_function_is_called_too(door):
    tests = {"inputs": ['"abc"\n2', '"xy"\n0'], "outputs": ['"abcabc"', '""'], "fn_name": "repeat"}
    assert reward_of(door, row("```python\ndef repeat(s, k):\n    return s * k\n```", tests)) == 1.0
    assert reward_of(door, row("```python\ndef repeat(s, k):\n    return s\n```", tests)) == 0.0


def test_numbers_match_within_lcbs_1e_6_and_spacing_does_not_matter(door):
    thirds = {"inputs": ["1 3\n"], "outputs": ["0.333333"]}
    assert reward_of(door, row("```python\na, b = map(int, input().split())\nprint(' ', a / b)\n```", thirds)) == 1.0
    assert reward_of(door, row("```python\nprint(0.3334)\n```", thirds)) == 0.0
    halves = {"inputs": ["1\n2"], "outputs": ["0.5"], "fn_name": "div"}
    assert reward_of(door, row("```python\ndef div(a, b):\n    return a / b + 1e-9\n```", halves)) == 1.0


def test_no_code_block_is_0_with_the_output_and_no_extracted_code(door):
    reply = verify(door, row("n=int(input())\nprint(n*n)"))
    parsed = RecordedCompCodingVerifyResponse.model_validate(reply.json())
    assert (parsed.reward, parsed.extracted_model_code, parsed.result) == (0.0, None, None)
    assert parsed.extracted_model_output == "n=int(input())\nprint(n*n)"


def test_a_blank_response_is_0(door):
    parsed = RecordedCompCodingVerifyResponse.model_validate(verify(door, row("  ")).json())
    assert (parsed.reward, parsed.extracted_model_output) == (0.0, None)


def test_a_syntax_error_and_a_runtime_error_score_0(door):
    syntax = verify(door, row("```python\nprint('hello'  # Missing closing parenthesis\n```",
                              {"inputs": ["\n"], "outputs": ["hello"]})).json()
    assert (syntax["reward"], syntax["result"]) == (0.0, [-4])
    assert syntax["metadata"]["verdict"] == "compile_error (0/1 tests)"
    runtime = verify(door, row("```python\nn=int(input())\nprint(n/0)\n```", {"inputs": ["5\n"], "outputs": ["error"]}))
    assert runtime.json()["reward"] == 0.0 and runtime.json()["metadata"]["error_message"] == "Runtime Error"


def test_a_reasoning_format_violation_scores_gyms_default_penalty(door):
    reply = verify(door, row("</think>\n" + SQUARE)).json()
    assert (reply["reward"], reply["reasoning_format_violation_rate"], reply["result"]) == (0.0, 1.0, [True, True])


def test_rewards_equal_grpc_score(door, reward_server):
    bodies = [row(SQUARE), row("```python\nprint(4)\n```"), row(TWO_SUM, TWO_SUM_TESTS)]
    replies = [verify(door, b).json() for b in bodies]
    jobs = [gym_code_gen.rollout_of("code", b, nemo_gym.completion_text(b["response"]), "Read n and print n^2.")
            for b in bodies]
    with RewardClient(reward_server.address, timeout_s=120) as client:
        results = client.score([Rollout(str(i), "code", j.rollout.completion, j.rollout.reference, j.rollout.prompt)
                                for i, j in enumerate(jobs)])
    assert [(r["reward"], r["reward_components"]) for r in replies] == [(x.score, dict(x.components)) for x in results]
    assert [r["reward"] for r in replies] == [1.0, 0.0, 1.0]


def test_a_cpp_row_runs_in_the_language_it_names(door):
    require_language(load_languages(), "cpp")
    cpp = "```cpp\n#include <iostream>\nint main() { long n; std::cin >> n; std::cout << n * n << std::endl; }\n```"
    assert reward_of(door, row(cpp, language="cpp")) == 1.0
    assert reward_of(door, row(cpp.replace("n * n", "n + n"), language="cpp")) == 0.0


def test_a_sandbox_outage_is_an_error_status_never_a_reward(door):
    reply = verify(door, row(SQUARE), reward="code_down")
    assert reply.status_code == 500 and "ERROR" in reply.json()["message"] and "reward" not in reply.json()
    masked = verify(door, row(SQUARE), reward="code_down", query="?unscored=mask").json()
    assert masked["mask_sample"] is True and masked["failure_kind"] == "verifier_error"


def test_requests_gyms_validation_rejects_are_422(door):
    no_response = {k: v for k, v in row(SQUARE).items() if k != "response"}
    assert verify(door, no_response).status_code == 422
    bad_inputs = verify(door, row(SQUARE, {"inputs": "2", "outputs": ["4"]}))
    assert bad_inputs.status_code == 422 and "inputs must be a list of strings" in bad_inputs.json()["message"]
    not_json_args = verify(door, row(TWO_SUM, {**TWO_SUM_TESTS, "inputs": ["[2, 7]\nnine", "[1]\n1"]}))
    assert not_json_args.status_code == 422 and "not JSON" in not_json_args.json()["message"]


def test_rows_without_tests_are_refused_not_rewarded(door):
    reply = verify(door, row(SQUARE, {"inputs": [], "outputs": []}))  # Gym: all([]) is reward 1.0
    assert reply.status_code == 400 and "INVALID_REFERENCE" in reply.json()["message"]


def test_gyms_server_name_code_gen_is_served_by_the_code_task(door, reward_server):
    assert reward_of(door, row(SQUARE), reward="code_gen") == 1.0
    with serve_app(reward_server.address, [nemo_gym.root_routes("code_gen")], timeout_s=120.0) as (url, _):
        reply = httpx.post(f"{url}/verify", json=row(TWO_SUM, TWO_SUM_TESTS), timeout=120)
        assert reply.status_code == 200 and reply.json()["reward"] == 1.0
