"""A result answered from the reward cache without a RolloutResult holds what the RolloutResult would."""

import json
import math

import pytest

from reward_core.contract import Rollout, RolloutStatus, StepScore
from reward_service.router.reward_cache import decode_outcome, encode_outcome, stored_result_fields
from reward_service.router.scoring import cached_result_fields, result_from_outcome
from reward_service.router.worker_job import ItemOutcome
from reward_service.task_api import TaskOutcome

ROLLOUT = Rollout(id="r1", task="gsm8k", completion="#### 72", reference={"answer": "72"}, group_id="g")
OUTCOMES = [
    TaskOutcome(1.0, components={"gsm8k": 1.0}, extracted="72", detail="matched"),
    TaskOutcome(1.0),  # no components: the task's name and score
    TaskOutcome(0.0, RolloutStatus.NO_ANSWER, detail="nothing after ####"),
    TaskOutcome(0.5, components={"a": 1.0, "b": 0.0}, extracted="ответ 😀",
                steps=(StepScore(0, 3, 1.0, True, "ok"), StepScore(3, 9, 0.0, False)), explanation="own words"),
    TaskOutcome(1, extracted="x" * 1000),  # an integer score, a long answer
]


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("version", ["", "0123456789abcdef"])
def test_the_fields_are_the_result_line_beyond_the_rollout_in_the_same_order(outcome, version):
    line = result_from_outcome(ROLLOUT, ItemOutcome(outcome, 0.0), True, version).to_dict()
    for name in ("id", "task", "group_id"):
        del line[name]
    fields = cached_result_fields(outcome, ROLLOUT.task, version)
    assert fields == line and list(fields) == list(line)
    assert [type(v) for v in fields.values()] == [type(v) for v in line.values()]


@pytest.mark.parametrize("outcome", [TaskOutcome(0.0, RolloutStatus.ERROR, detail="boom"),
                                     TaskOutcome(math.nan), TaskOutcome(math.inf)])
def test_an_outcome_the_cache_never_keeps_is_not_answered(outcome):
    assert cached_result_fields(outcome, "gsm8k", "v") is None


STORED = [encode_outcome(outcome) for outcome in OUTCOMES] + [
    encode_outcome(TaskOutcome(1.0, extracted="72", explanation="own  words\n\n  on two lines " + "z" * 500)),
    encode_outcome(TaskOutcome(0.0, RolloutStatus.NO_ANSWER, detail="none", explanation="said so")),
    encode_outcome(TaskOutcome(1.0, components={}, explanation="empty components")),
    encode_outcome(TaskOutcome(0.0, RolloutStatus.ERROR, detail="boom", explanation="unscored")),
    encode_outcome(TaskOutcome(math.nan, explanation="not finite")),
    '{"score":1.0,"status":1,"components":{},"extracted":"","detail":"","steps":[],"explanation":"x"}',  # a field short
    '{"score":1.0,"status":99,"components":{},"extracted":"","detail":"","steps":[],"explanation":"x","x":1}',
    '{"score":1.0,"status":1.0,"components":[["a",1.0]],"extracted":"","detail":"","steps":null,"explanation":"x"}',
    "not json",
]


@pytest.mark.parametrize("text", STORED)
@pytest.mark.parametrize("version", ["", "0123456789abcdef"])
def test_fields_read_straight_from_the_file_are_those_of_the_decoded_outcome(text, version):
    outcome = decode_outcome(text)
    fields = cached_result_fields(outcome, "gsm8k", version) if outcome is not None else None
    found = stored_result_fields(text, "gsm8k", version)
    assert found == ((fields, outcome.status) if fields is not None else None)
    if found is not None:
        assert list(found[0]) == list(fields) and json.dumps(found[0]) == json.dumps(fields)
