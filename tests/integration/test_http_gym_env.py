"""NeMo Gym's multi-turn resources server at the HTTP door (``gym_env.py``), over loopback.

NeMo Gym needs Python >= 3.13 and cannot be installed here, so each call is made as Gym's own agents
make it, read from its source:

- ``responses_api_agents/simple_agent/app.py`` (``SimpleAgent.run``/``responses``): ``/seed_session``
  with ``body.model_dump()`` (the row), each ``function_call`` as ``POST /<name>`` with
  ``json.loads(arguments)`` and only the cookies of the previous answer (aiohttp's
  ``response.cookies``), then ``/verify`` with ``row | {"response": <response, all output items>}``;
- ``responses_api_agents/gymnasium_agent/app.py``: ``/reset`` with the row, ``/step`` with
  ``row | {"response": <this turn's response>}``, ``info.tool_outputs`` as function_call_output items,
  ``/close`` with ``{}`` when ``info.supports_explicit_close``;
- ``nemo_gym/base_resources_server.py``: ``ResourcesSeedSessionRequest``/``ResourcesCloseSessionRequest``,
  ``BaseVerifyResponse`` (``reward``, ``mask_sample``, ``failure_kind``, ``failure_reason``);
  ``resources_servers/gymnasium/__init__.py``: ``EnvResetResponse``/``EnvStepResponse``.

The scripted host (``tests/scripted_episode_host.py``) checks each protocol property on its own; the
last tests run whole episodes on the real session manager (``arithmetic_tools``: calculator, sandbox
verifier) and check no session is left.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pydantic
import pytest

from reward_service.http_door import gym_env
from reward_service.http_door.app import create_app
from reward_service.http_door.door import DoorConfig
from reward_service.http_door.upstream import UpstreamConfig
from tests.http_fixtures import serve_door_config
from tests.scripted_episode_host import ScriptedHost
from tests.session_manager_door import door_on_session_manager


class RecordedResetResponse(pydantic.BaseModel):
    """``EnvResetResponse``."""

    observation: str | None = None
    info: dict = {}


class RecordedStepResponse(pydantic.BaseModel):
    """``EnvStepResponse``."""

    observation: str | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict = {}


class RecordedVerifyResponse(pydantic.BaseModel):
    """``BaseVerifyResponse`` (its ``responses_create_params`` and ``response`` are the row's, echoed)."""

    model_config = pydantic.ConfigDict(extra="allow")
    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    reward: float
    mask_sample: bool = False
    failure_kind: str | None = None
    failure_reason: str | None = None


def gym_row(question: str, answer: str) -> dict[str, Any]:
    """A dataset row as Gym's ``BaseRunRequest.model_dump()`` sends it."""
    return {"responses_create_params": {"input": [{"role": "user", "content": question}]}, "expected_answer": answer}


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id,
            "id": f"fc_{call_id}", "status": "completed"}


def message(text: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "text": text}]}


def response(*items: dict[str, Any]) -> dict[str, Any]:
    """A ``NeMoGymResponse`` (the openai ``Response`` fields Gym requires)."""
    return {"id": "resp_1", "created_at": 1.0, "model": "policy", "object": "response", "output": list(items),
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def serve(host: ScriptedHost, root: str = ""):
    """The door with the Gym environment routes (``root``: instead, that environment at the root, as
    ``--nemo-gym-environment`` serves it)."""
    config = DoorConfig(UpstreamConfig("127.0.0.1:1"), nemo_gym_environment=root)
    return serve_door_config(config, [] if root else [gym_env.routes], episodes=host)


@pytest.fixture()
def door():
    host = ScriptedHost()
    with serve(host) as (url, _):
        yield f"{url}/gym-env/arith", host


def simple_agent(base: str, row: dict[str, Any], turns: list[list[dict[str, Any]]], verify_query: str = ""
                 ) -> tuple[httpx.Response, list[httpx.Response]]:
    """``SimpleAgent.run``: seed, each turn's function calls (cookies of the last answer only), verify."""
    seeded = httpx.post(f"{base}/seed_session", json=row)
    assert seeded.status_code == 200, seeded.text
    cookies, outputs, tool_answers = seeded.cookies, [], []
    for items in turns:
        outputs.extend(items)
        for item in items:
            if item["type"] == "function_call":
                answer = httpx.post(f"{base}/{item['name']}", json=json.loads(item["arguments"]), cookies=cookies)
                cookies = answer.cookies
                tool_answers.append(answer)
                outputs.append({"type": "function_call_output", "call_id": item["call_id"], "output": answer.text})
    verified = httpx.post(f"{base}/verify{verify_query}", json=row | {"response": response(*outputs)},
                          cookies=cookies)
    return verified, tool_answers


def test_a_tool_episode_is_rewarded_by_its_submitted_answer(door):
    base, host = door
    verified, answers = simple_agent(base, gym_row("What is 2 + 7?", "9"), [
        [call("add", {"a": 2, "b": 7}, "c1")], [call("submit_answer", {"answer": "9"}, "c2")]])
    assert [a.json() for a in answers] == [{"output": "9", "reward": None, "done": False},
                                           {"output": "submitted", "reward": 1.0, "done": True}]
    reply = RecordedVerifyResponse.model_validate(verified.json())
    assert (reply.reward, reply.mask_sample, verified.json()["reward_components"]) == (1.0, False, {"accuracy": 1.0})
    assert host.closed == ["ep-0"] and not host.open_ids


def test_a_call_after_the_episode_ended_is_a_conflict_and_the_reward_stands(door):
    base, _ = door
    verified, answers = simple_agent(base, gym_row("What is 2 + 7?", "9"), [
        [call("submit_answer", {"answer": "9"}, "c1"), call("add", {"a": 1, "b": 1}, "c2")]])
    assert answers[1].status_code == 409 and "failure_kind" not in answers[1].json()
    assert verified.json()["reward"] == 1.0


def test_a_wrong_submission_is_a_scored_zero(door):
    base, _ = door
    verified, _ = simple_agent(base, gym_row("What is 2 + 7?", "9"), [[call("submit_answer", {"answer": "8"}, "c")]])
    assert verified.status_code == 200 and verified.json()["reward"] == 0.0


def test_a_tool_failure_is_an_http_error_never_reward_zero(door):
    base, host = door
    verified, [answer] = simple_agent(base, gym_row("q", "9"), [[call("flaky", {}, "c")]])
    assert answer.status_code == 500 and answer.json()["failure_kind"] == "environment_server_failed"
    assert verified.status_code == 500 and "reward" not in verified.json()
    assert verified.json()["episode_status"] == "TOOL_FAILED" and host.closed == ["ep-0"]


def test_a_tool_failure_masks_the_row_when_asked(door):
    base, _ = door
    verified, _ = simple_agent(base, gym_row("q", "9"), [[call("flaky", {}, "c")]], "?unscored=mask")
    reply = RecordedVerifyResponse.model_validate(verified.json())
    assert (verified.status_code, reply.mask_sample, reply.failure_kind) == (200, True, "environment_server_failed")
    assert reply.failure_reason.startswith("episode unscored (TOOL_FAILED)")


def test_verify_without_a_session_scores_the_trajectory(door):
    base, host = door
    items = [call("add", {"a": 2, "b": 7}, "c1"), {"type": "function_call_output", "call_id": "c1", "output": "9"},
             message("The answer is 9")]
    verified = httpx.post(f"{base}/verify", json=gym_row("What is 2 + 7?", "9") | {"response": response(*items)})
    assert verified.json()["reward"] == 1.0 and not host.open_ids and not host.closed


def test_an_unscorable_trajectory_is_an_error(door):
    base, _ = door
    verified = httpx.post(f"{base}/verify", json=gym_row("q", "9") | {"response": response(message("UNSCORABLE"))})
    assert verified.status_code == 500 and verified.json()["episode_status"] == "ERROR"


def test_a_tool_call_without_a_session_is_refused_as_session_lost(door):
    base, host = door
    answer = httpx.post(f"{base}/add", json={"a": 1, "b": 2})
    assert answer.status_code == 503 and answer.json()["failure_kind"] == "session_lost"
    assert host.calls["add"] == 0


def test_the_session_header_carries_a_session_too(door):
    base, _ = door
    seeded = httpx.post(f"{base}/seed_session", json=gym_row("q", "9"))
    answer = httpx.post(f"{base}/add", json={"a": 1, "b": 2},
                        headers={"X-Reward-Session-Id": seeded.headers["X-Reward-Session-Id"]})
    assert answer.json()["output"] == "3"


def test_every_answer_sets_the_session_cookie(door):
    base, _ = door
    seeded = httpx.post(f"{base}/seed_session", json=gym_row("q", "9"))
    first = httpx.post(f"{base}/add", json={"a": 1, "b": 2}, cookies=seeded.cookies)
    second = httpx.post(f"{base}/add", json={"a": 3, "b": 4}, cookies=first.cookies)
    assert second.json()["output"] == "7" and dict(second.cookies) == dict(seeded.cookies)


def test_a_resources_session_is_seeded_once_and_stays_closed(door):
    base, host = door
    body = {"resources_session_id": "rs-1", "episode_id": {"rollout_id": "r", "attempt": 1}, "task_id": "t",
            "task_data": gym_row("q", "9")}
    first, again = httpx.post(f"{base}/seed_session", json=body), httpx.post(f"{base}/seed_session", json=body)
    assert first.json() == again.json() == {"resources_session_id": "rs-1"}
    assert dict(first.cookies) == dict(again.cookies) and host.open_ids == {"ep-0"}
    closing = {"resources_session_id": "rs-1", "episode_id": body["episode_id"]}
    closed = httpx.post(f"{base}/close_session", json=closing)
    late = httpx.post(f"{base}/seed_session", json=body)
    assert closed.json() == {"resources_session_id": "rs-1"} and host.closed == ["ep-0"]
    assert late.status_code == 499 and not host.open_ids


def test_an_admission_refusal_is_429_with_retry_after():
    with serve(ScriptedHost(refuse_s=2.5)) as (url, _):
        seeded = httpx.post(f"{url}/gym-env/arith/seed_session", json=gym_row("q", "9"))
    assert (seeded.status_code, seeded.headers["Retry-After"]) == (429, "3")
    assert seeded.json()["episode_status"] == "REFUSED"


def gymnasium_agent(base: str, row: dict[str, Any], turns: list[list[dict[str, Any]]]
                    ) -> tuple[RecordedResetResponse, list[RecordedStepResponse], list[dict[str, Any]]]:
    """``GymnasiumAgent.run``: reset, one step per turn until terminated, then ``/close``."""
    reset = httpx.post(f"{base}/reset", json=row)
    assert reset.status_code == 200, reset.text
    cookies, steps, outputs = dict(reset.cookies), [], []
    data = RecordedResetResponse.model_validate(reset.json())
    for items in turns:
        step = httpx.post(f"{base}/step", json=row | {"response": response(*items)}, cookies=cookies)
        assert step.status_code == 200, step.text
        cookies.update(step.cookies)
        steps.append(RecordedStepResponse.model_validate(step.json()))
        outputs.extend(steps[-1].info.get("tool_outputs", []))
        if steps[-1].terminated or steps[-1].truncated:
            break
    if data.info.get("supports_explicit_close"):
        assert httpx.post(f"{base}/close", json={}, cookies=cookies).status_code == 200
    return data, steps, outputs


def test_a_gymnasium_episode_steps_through_tool_calls(door):
    base, host = door
    reset, steps, outputs = gymnasium_agent(base, gym_row("What is 2 + 7?", "9"), [
        [call("add", {"a": 2, "b": 7}, "c1")], [message("so"), call("submit_answer", {"answer": "9"}, "c2")]])
    assert reset.observation is None and [t["name"] for t in reset.info["tools"]][:2] == ["add", "submit_answer"]
    assert [(s.reward, s.terminated) for s in steps] == [(0.0, False), (1.0, True)]
    assert outputs == [{"call_id": "c1", "output": "9"}, {"call_id": "c2", "output": "submitted"}]
    assert steps[-1].info["episode_status"] == "FINISHED" and host.closed == ["ep-0"]


def test_a_gymnasium_tool_failure_is_an_http_error(door):
    base, _ = door
    row = gym_row("q", "9")
    reset = httpx.post(f"{base}/reset", json=row)
    step = httpx.post(f"{base}/step", json=row | {"response": response(call("flaky", {}, "c"))}, cookies=reset.cookies)
    assert step.status_code == 500 and step.json()["failure_kind"] == "environment_server_failed"


def test_the_tools_are_listed_as_responses_function_tools(door):
    base, _ = door
    tools = httpx.get(f"{base}/tools").json()["tools"]
    assert tools[0] == {"type": "function", "name": "add", "description": "adds two integers", "strict": False,
                        "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                                        "b": {"type": "integer"}},
                                       "required": ["a", "b"], "additionalProperties": False}}


def test_routes_are_served_under_the_rollout_prefix(door):
    base, _ = door
    seeded = httpx.post(f"{base}/ng-rollout/4-2/seed_session", json=gym_row("q", "9"))
    answer = httpx.post(f"{base}/ng-rollout/4-2/add", json={"a": 1, "b": 1}, cookies=seeded.cookies)
    assert answer.json()["output"] == "2"


def test_root_routes_serve_one_environment_where_stock_gym_calls():
    host = ScriptedHost()
    with serve(host, root="arith") as (url, _):
        verified, _ = simple_agent(url, gym_row("What is 1 + 7?", "8"), [[call("submit_answer", {"answer": "8"}, "c")]])
    assert verified.json()["reward"] == 1.0


def test_a_root_environment_and_a_root_reward_exclude_each_other():
    config = DoorConfig(UpstreamConfig("127.0.0.1:1"), nemo_gym_reward="math", nemo_gym_environment="arith")
    with pytest.raises(ValueError, match="give one"):
        create_app(config, [])


@pytest.fixture(scope="module")
def real_door():
    with door_on_session_manager([gym_env.routes]) as (url, _, manager):
        yield f"{url}/gym-env/arithmetic_tools", manager


def test_a_real_episode_uses_the_calculator_and_is_verified(real_door):
    base, manager = real_door
    verified, answers = simple_agent(base, gym_row("What is 12345 * 67890?", "838102050"), [
        [call("calculator", {"expression": "12345 * 67890"}, "c1")],
        [call("submit_answer", {"answer": "838102050"}, "c2")]])
    assert "838102050" in answers[0].json()["output"]
    assert verified.json()["reward"] == 1.0 and manager.session_count() == 0


def test_a_real_trajectory_is_scored_by_its_submitted_answer(real_door):
    base, manager = real_door
    items = [call("calculator", {"expression": "21 * 2"}, "c1"),
             {"type": "function_call_output", "call_id": "c1", "output": "42"},
             call("submit_answer", {"answer": "42"}, "c2"),
             {"type": "function_call_output", "call_id": "c2", "output": "submitted"}]
    right = httpx.post(f"{base}/verify", json=gym_row("What is 21 * 2?", "42") | {"response": response(*items)})
    wrong = httpx.post(f"{base}/verify", json=gym_row("What is 21 * 2?", "43") | {"response": response(*items)})
    assert (right.json()["reward"], wrong.json()["reward"]) == (1.0, 0.0) and manager.session_count() == 0


def test_a_real_unknown_tool_is_answered_to_the_model(real_door):
    base, manager = real_door
    verified, [answer] = simple_agent(base, gym_row("What is 2 * 3?", "6"), [[call("teleport", {}, "c1")],
                                                                            [message("\\boxed{6}")]])
    assert answer.status_code == 200 and "teleport" in answer.json()["output"]
    assert verified.json()["reward"] == 1.0 and manager.session_count() == 0


def test_a_real_gymnasium_episode_ends_on_the_final_text(real_door):
    base, manager = real_door
    _, steps, outputs = gymnasium_agent(base, gym_row("What is 111 * 3?", "333"), [
        [call("calculator", {"expression": "111 * 3"}, "c1")], [message("The answer is \\boxed{333}.")]])
    assert [s.terminated for s in steps] == [False, True] and "333" in outputs[0]["output"]
    assert steps[-1].reward == 1.0 and steps[-1].info["final_reward"] == 1.0
    assert manager.session_count() == 0

