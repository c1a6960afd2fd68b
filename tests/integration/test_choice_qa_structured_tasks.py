"""The mcqa, QA/string and structured-output tasks through a real reward server, and through the HTTP
door with the peers' own row fields: NeMo Gym's ``mcqa`` rows (options, expected_answer, grading_mode,
template_metadata), ``structured_outputs`` rows (schema_str, schema_type), ``xlam_fc`` rows
(expected_answers, the response's function_call items), and an OpenRLHF JSON label."""

from __future__ import annotations

import json

import httpx
import pytest

from reward_core.contract import Rollout, RolloutStatus
from reward_service.http_door import nemo_gym, openrlhf
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from trainer_client import RewardClient

TASKS = ("mcqa", "exact_match", "f1", "string_similarity", "json_valid", "json_schema", "tool_call")
OPTIONS = [{"A": "Karyotyping"}, {"B": "Polymerase Chain Reaction (PCR)"}, {"C": "Whole-genome sequencing"},
           {"D": "Chromosome painting"}]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
TIME = {"name": "get_time", "arguments": {"tz": "CET"}}


@pytest.fixture(scope="module")
def server():
    server = start_server(workers=1)
    yield server
    server.stop(0)


@pytest.fixture(scope="module")
def door(server):
    with serve_app(server.address, [nemo_gym.routes, openrlhf.routes], timeout_s=60.0) as (url, _):
        yield url


def rollout(i: int, task: str, completion: str, reference: dict, **extra) -> Rollout:
    return Rollout(str(i), task, completion, reference, **extra)


def test_the_tasks_are_registered_with_their_reference_fields(server):
    with RewardClient(server.address, timeout_s=60) as client:
        infos = {t.name: t for t in client.list_tasks()}
    assert set(TASKS) <= set(infos)
    assert "options" in infos["mcqa"].reference_fields and "schema" in infos["json_schema"].reference_fields


def test_a_batch_of_every_task_scores_through_the_server(server):
    cases = [
        (rollout(0, "mcqa", "The answer is (B).", {"options": OPTIONS, "answer": "B"}), RolloutStatus.OK, 1.0),
        (rollout(1, "mcqa", "Answer: A or B", {"options": OPTIONS, "answer": "B"}), RolloutStatus.OK, 0.0),
        (rollout(2, "mcqa", "no idea", {"options": OPTIONS, "answer": "B"}), RolloutStatus.NO_ANSWER, 0.0),
        (rollout(3, "mcqa", "B", {"options": OPTIONS, "answer": "Z"}), RolloutStatus.INVALID_REFERENCE, 0.0),
        (rollout(4, "exact_match", "Answer: the Denver Broncos", {"answers": ["Denver Broncos"]}),
         RolloutStatus.OK, 1.0),
        (rollout(5, "f1", "Denver", {"answers": ["Denver Broncos"]}), RolloutStatus.OK, 2 / 3),
        (rollout(6, "f1", "x", {}), RolloutStatus.INVALID_REFERENCE, 0.0),
        (rollout(7, "string_similarity", "kitten", {"answer": "sitting"}), RolloutStatus.OK, 8 / 13),
        (rollout(8, "json_valid", '```json\n{"a": [1, 2]}\n```', {}), RolloutStatus.OK, 1.0),
        (rollout(9, "json_valid", "{'a': 1}", {}), RolloutStatus.OK, 0.0),
        (rollout(10, "json_schema", '{"name": "Ada", "age": 36}', {"schema": SCHEMA}), RolloutStatus.OK, 1.0),
        (rollout(11, "json_schema", '{"name": "Ada", "age": "36"}', {"schema": SCHEMA}), RolloutStatus.OK, 0.0),
        (rollout(12, "json_schema", "{}", {"schema": {"type": 3}}), RolloutStatus.INVALID_REFERENCE, 0.0),
        (rollout(13, "tool_call", f"<tool_call>{json.dumps(TIME)}</tool_call>", {"tool_calls": [TIME]}),
         RolloutStatus.OK, 1.0),
        (rollout(14, "tool_call", "no call", {"tool_calls": [TIME]}, metadata={"function_calls": json.dumps([TIME])}),
         RolloutStatus.OK, 1.0),
    ]
    with RewardClient(server.address, timeout_s=60) as client:
        results = client.score([case[0] for case in cases])
    got = [(r.id, r.status, round(r.score, 6)) for r in results]
    assert got == [(c[0].id, c[1], round(c[2], 6)) for c in cases], [r.error for r in results]
    assert results[0].extracted == "B" and results[5].components == {"f1": pytest.approx(2 / 3), "exact_match": 0.0}


def gym_row(text: str, **fields) -> dict:
    """A verify body as NeMo Gym's simple_agent sends it: the dataset row plus the response."""
    output = [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "annotations": [], "text": text}]}] if text else []
    return {"responses_create_params": {"input": [{"role": "user", "content": "Which test?"}]},
            "response": {"id": "resp_1", "created_at": 0.0, "model": "policy", "object": "response",
                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "output": output},
            "agent_ref": {"type": "responses_api_agents", "name": "mcqa_simple_agent"}, **fields}


def verify(door: str, reward: str, body: dict) -> httpx.Response:
    return httpx.post(f"{door}/gym/{reward}/verify", json=body, timeout=60)


@pytest.mark.parametrize("text,fields,reward", [
    ("Let me think.\n\\boxed{B}", {"grading_mode": "strict_single_letter_boxed"}, 1.0),
    ("The answer is B", {"grading_mode": "strict_single_letter_boxed"}, 0.0),
    ("\\boxed{Polymerase Chain Reaction (PCR)}", {"grading_mode": "lenient_boxed"}, 1.0),
    ("Answer: b", {"grading_mode": "lenient_answer_colon"}, 1.0),
    ("Option Selected: B", {"template_metadata": {"output_regex": "Option Selected:\\s*([A-Za-z])\\s*",
                                                  "template_id": "mcqa_generated_027"}}, 1.0),
    ("**Final Answer:** (B)", {}, 1.0),
])
def test_gym_mcqa_rows_score_as_their_grading_mode_says(door, text, fields, reward):
    body = gym_row(text, options=OPTIONS, expected_answer="B", uuid="3c26f339", metadata={"source": "x"}, **fields)
    reply = verify(door, "mcqa", body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["reward"] == reward and reply.json()["expected_answer"] == "B"


def test_a_gym_mcqa_row_with_a_gold_outside_its_options_is_a_400_not_a_reward(door):
    reply = verify(door, "mcqa", gym_row("\\boxed{B}", options=OPTIONS, expected_answer="F"))
    assert reply.status_code == 400 and "INVALID_REFERENCE" in reply.json()["message"]


def test_gym_structured_outputs_rows_score_with_their_schema_str(door):
    fields = {"schema_str": json.dumps(SCHEMA), "schema_type": "json"}
    good = verify(door, "json_schema", gym_row('{"name": "Ada", "age": 36}', **fields))
    bad = verify(door, "json_schema", gym_row('{"name": "Ada", "age": "old"}', **fields))
    assert (good.json()["reward"], bad.json()["reward"]) == (1.0, 0.0)
    assert good.json()["reward_components"] == {"valid_json": 1.0, "conforms": 1.0}
    unsupported = verify(door, "json_schema", gym_row("<a/>", schema_str="{}", schema_type="xml"))
    assert unsupported.status_code == 400


def test_gym_xlam_rows_score_the_responses_function_call_items(door):
    body = gym_row("", expected_answers=[TIME, {"name": "get_weather", "arguments": {"city": "Paris"}}])
    body["response"]["output"] = [
        {"type": "function_call", "call_id": "c1", "id": "fc_1", "name": "get_weather",
         "arguments": '{"city": "Paris"}', "status": "completed"},
        {"type": "function_call", "call_id": "c2", "id": "fc_2", "name": "get_time", "arguments": '{"tz": "CET"}',
         "status": "completed"}]
    assert verify(door, "tool_call", body).json()["reward"] == 1.0
    body["response"]["output"].pop()
    assert verify(door, "tool_call", body).json()["reward"] == 0.0


def test_gym_qa_rows_score_f1_against_expected_answer(door):
    reply = verify(door, "f1", gym_row("Final answer: Denver", expected_answer="Denver Broncos"))
    assert reply.json()["reward"] == pytest.approx(2 / 3)


def test_an_openrlhf_json_label_carries_the_mcqa_row(door):
    label = json.dumps({"options": OPTIONS, "answer": "B"})
    body = {"query": ["Q? The answer is (B)."], "prompts": ["Q? "], "labels": [label]}
    reply = httpx.post(f"{door}/openrlhf/mcqa", json=body, timeout=60)
    assert reply.status_code == 200 and reply.json()["rewards"] == [1.0]
