"""The ifeval task through a real reward server on loopback, and through the HTTP door with the
rows NeMo Gym's instruction_following server and OpenRLHF/slime (Tulu 3 RLVR-IFeval labels) send."""

from __future__ import annotations

import json

import httpx
import pytest

from reward_core.contract import RolloutStatus
from reward_service.http_door import nemo_gym
from reward_service.http_door import openrlhf as door_openrlhf
from reward_service.router.rewards_config import RewardsConfig
from tests.http_fixtures import serve_app
from tests.integration.conftest import start_server
from trainer_client import RewardClient

REWARDS = RewardsConfig.from_dict({"tasks": {"ifeval_loose": {"task": "ifeval", "options": {"mode": "loose"}},
                     "ifeval_fraction": {"task": "ifeval", "options": {"aggregation": "fraction"}}}})
TWO = {"instruction_id_list": ["punctuation:no_comma", "length_constraints:number_sentences"],
       "kwargs": [{}, {"num_sentences": 2, "relation": "at least", "num_words": None}], "prompt": "Write."}


@pytest.fixture(scope="module")
def server():
    server = start_server(item_timeout_s=30.0, max_item_timeout_s=60.0, rewards=REWARDS)
    yield server
    server.stop(0)


@pytest.fixture
def client(server):
    with RewardClient(server.address, timeout_s=90) as c:
        yield c


def rollout(i, task, completion, reference=TWO):
    return {"id": str(i), "task": task, "completion": completion, "reference": reference}


def test_ifeval_scores_and_components_over_grpc(client):
    results = client.score([rollout(0, "ifeval", "Dr. Smith left. He slept."),
                            rollout(1, "ifeval", "One sentence, with a comma.")])
    assert [r.score for r in results] == [1.0, 0.0]
    assert dict(results[1].components) == {"0:punctuation:no_comma": 0.0,
                                           "1:length_constraints:number_sentences": 0.0}


def test_configured_variants_score_loose_and_fraction(client):
    results = client.score([rollout(0, "ifeval_fraction", "Hello, there. Bye."),
                            rollout(1, "ifeval_loose", 'Here you go:\n"Quoted."',
                                    {"instruction_id_list": ["startend:quotation"], "kwargs": [{}]})])
    assert [r.score for r in results] == [0.5, 1.0]


def test_unknown_instruction_is_unscored_invalid_reference(client):
    [result] = client.score([rollout(0, "ifeval", "x", {"instruction_id_list": ["nope:x"], "kwargs": [{}]})])
    assert result.status == RolloutStatus.INVALID_REFERENCE and not result.scored


def test_blank_completion_is_no_answer(client):
    [result] = client.score([rollout(0, "ifeval", "  ")])
    assert result.status == RolloutStatus.NO_ANSWER and result.score == 0.0


def gym_row(text: str, **fields) -> dict:
    """A verify body of Gym's instruction_following server: the dataset row plus the response."""
    return {"responses_create_params": {"input": [{"role": "user", "content": "Write a title and no commas."}]},
            "response": {"id": "r", "created_at": 0.0, "model": "m", "object": "response", "parallel_tool_calls": True,
                         "tool_choice": "auto", "tools": [],
                         "output": [{"id": "msg", "type": "message", "role": "assistant", "status": "completed",
                                     "content": [{"type": "output_text", "annotations": [], "text": text}]}]},
            "id": 7, "prompt": "Write a title and no commas.", **fields}


@pytest.fixture(scope="module")
def door(server):
    with serve_app(server.address, [nemo_gym.routes, door_openrlhf.routes], timeout_s=90.0) as (url, _):
        yield url


def test_gym_row_binary_and_fraction_as_gyms_own_tests(door):
    ids, kwargs = ["detectable_format:title", "punctuation:no_comma"], [{}, {}]
    text = "<<My Great Title>>\n\n with a comma here, okay."
    binary = httpx.post(f"{door}/gym/ifeval/verify", timeout=90,
                        json=gym_row(text, instruction_id_list=ids, kwargs=kwargs)).json()
    fraction = httpx.post(f"{door}/gym/ifeval/verify", timeout=90,
                          json=gym_row(text, instruction_id_list=ids, kwargs=kwargs, grading_mode="fraction")).json()
    assert binary["reward"] == 0.0 and fraction["reward"] == 0.5
    assert fraction["reward_components"] == {"0:detectable_format:title": 1.0, "1:punctuation:no_comma": 0.0}


def test_gym_verifier_metadata_row(door):
    body = gym_row("<<My Title>>\n\nThis is the content of my response.",
                   verifier_metadata={"instruction_id_list": ["detectable_format:title"], "kwargs": [{}],
                                      "prompt": "Write the entire response with a title."})
    assert httpx.post(f"{door}/gym/ifeval/verify", json=body, timeout=90).json()["reward"] == 1.0


def test_openrlhf_tulu_labels(door):
    labels = [json.dumps({"func_name": "validate_lowercase", "N": None, "quantifier": None}),
              json.dumps({"func_name": "verify_paragraph_count", "N": 2, "quantifier": None}),
              "[{'instruction_id': ['punctuation:no_comma'], 'kwargs': [None]}]"]
    queries = ["Q: all lower here", "Q: A\n* * *\nB", "Q: yes, a comma"]
    reply = httpx.post(f"{door}/openrlhf/ifeval", timeout=90,
                       json={"query": queries, "prompts": ["Q: "] * 3, "labels": labels})
    assert reply.status_code == 200, reply.text
    assert reply.json()["rewards"] == [1.0, 1.0, 0.0]
