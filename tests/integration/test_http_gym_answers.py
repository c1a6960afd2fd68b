"""NeMo Gym's answer-checking servers reply ``extracted_answer`` (the answer read from the response, null
when none): ``math_with_judge``'s ``LibraryJudgeMathVerifyResponse`` and ``mcqa``'s ``MCQAVerifyResponse``
declare it required (``Optional[str]`` with no default). Our ``/verify`` fills it from the outcome's
``extracted`` for rows with an ``expected_answer``."""

from __future__ import annotations

from typing import Any

import httpx
import pydantic
import pytest

from reward_service.http_door import nemo_gym
from tests.http_fixtures import serve_app


class RecordedAnswerResponse(pydantic.BaseModel):
    """The fields both Gym responses add to the verify response: both required, ``extracted_answer`` nullable."""

    reward: float
    expected_answer: str
    extracted_answer: str | None


@pytest.fixture(scope="module")
def door(reward_server):
    with serve_app(reward_server.address, [nemo_gym.routes], timeout_s=60.0) as (url, _):
        yield url


def _row(text: str, **fields: Any) -> dict:
    return {"responses_create_params": {"input": [{"role": "user", "content": "Which one?"}]},
            "response": {"output": [{"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": text}]}]}, **fields}


OPTIONS = [{"A": "red"}, {"B": "blue"}, {"C": "green"}]


@pytest.mark.parametrize(("reward", "row", "reward_value", "extracted"), [
    ("math", _row(r"so \boxed{4}", expected_answer="4"), 1.0, "4"),
    ("math", _row(r"so \boxed{5}", expected_answer="4"), 0.0, "5"),
    ("math", _row("I cannot tell", expected_answer="4"), 0.0, None),
    ("mcqa", _row(r"\boxed{B}", expected_answer="B", options=OPTIONS), 1.0, "B"),
    ("mcqa", _row(r"\boxed{C}", expected_answer="B", options=OPTIONS), 0.0, "C"),
])
def test_the_reply_carries_the_extracted_answer(door, reward, row, reward_value, extracted):
    reply = httpx.post(f"{door}/gym/{reward}/verify", json=row, timeout=60)
    assert reply.status_code == 200, reply.text
    parsed = RecordedAnswerResponse.model_validate(reply.json())
    assert (parsed.reward, parsed.extracted_answer) == (reward_value, extracted)


def test_a_row_without_an_expected_answer_gets_no_extracted_answer(door):
    row = _row("Hello there. Bye.", instruction_id_list=["punctuation:no_comma"], kwargs=[{}])
    reply = httpx.post(f"{door}/gym/ifeval/verify", json=row, timeout=60)
    assert reply.status_code == 200, reply.text
    assert "extracted_answer" not in reply.json() and reply.json()["reward"] == 1.0
