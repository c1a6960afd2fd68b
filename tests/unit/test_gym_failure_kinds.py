"""The NeMo Gym door's answer for an unscored row (``nemo_gym.verify_reply``): Gym 0.7's failure vocabulary
(``nemo_gym/failure_kinds.py``), and a judge failure shaped as Gym's ``judge_failsafe`` row."""

from __future__ import annotations

import json

import pytest

from reward_core.contract import RolloutResult, RolloutStatus
from reward_service.http_door.nemo_gym import verify_reply

ROW = {"responses_create_params": {"input": "q"}, "response": {"output": []}, "expected_answer": "4",
       "instance_config": {"seed": 3}}


def answer(status: RolloutStatus, policy: str | None, error: str = "boom") -> tuple[int, dict]:
    reply = verify_reply(ROW, RolloutResult("0", status, error=error, task="t"), policy)  # type: ignore[arg-type]
    return reply.status_code, json.loads(bytes(reply.body))


@pytest.mark.parametrize("status, kind, sidecar", [(RolloutStatus.JUDGE_FAILED, "judge_failed", "judge_failed"),
                                                   (RolloutStatus.JUDGE_RATE_LIMITED, "judge_failed", "judge_failed"),
                                                   (RolloutStatus.JUDGE_UNPARSEABLE, "judge_unparseable",
                                                    "judge_invalid")])
def test_a_judge_failure_is_gyms_judge_failsafe_row_by_default(status, kind, sidecar):
    code, body = answer(status, None)
    assert code == 200 and body["reward"] == 0.0 and body["mask_sample"] is True
    assert body["failure_kind"] == kind and body["_ng_failure_class"] == sidecar
    assert body["failure_reason"] == body["_ng_failure_judge_error"] == f"rollout unscored ({status.name}): boom"
    assert body["instance_config"] == {"seed": 3, "mask_sample": True} and body["expected_answer"] == "4"


@pytest.mark.parametrize("status, code, kind", [(RolloutStatus.ERROR, 500, "verifier_error"),
                                                (RolloutStatus.TIMEOUT, 504, "verifier_error"),
                                                (RolloutStatus.UNAVAILABLE, 503, "shutdown"),
                                                (RolloutStatus.JUDGE_FAILED, 503, "judge_failed")])
def test_an_http_error_names_the_failure_kind(status, code, kind):
    for policy in ((None, "error") if status != RolloutStatus.JUDGE_FAILED else ("error",)):
        got, body = answer(status, policy)
        assert got == code and body["failure_kind"] == kind and "reward" not in body and "mask_sample" not in body


def test_mask_policy_masks_verifier_failures_without_the_judge_sidecar_keys():
    code, body = answer(RolloutStatus.TIMEOUT, "mask")
    assert code == 200 and body["mask_sample"] is True and body["failure_kind"] == "verifier_error"
    assert "_ng_failure_class" not in body


@pytest.mark.parametrize("status", [RolloutStatus.INVALID_REFERENCE, RolloutStatus.UNKNOWN_TASK,
                                    RolloutStatus.INVALID_ROLLOUT])
def test_a_data_failure_is_never_masked(status):
    code, body = answer(status, "mask")
    assert 400 <= code < 500 and "mask_sample" not in body and "failure_kind" not in body


def test_a_long_reason_is_cut_to_gyms_2000_characters():
    _, body = answer(RolloutStatus.JUDGE_FAILED, None, error="x" * 5000)
    assert len(body["failure_reason"]) == 2000


def test_a_rate_limit_hint_becomes_retry_after_on_the_error():
    reply = verify_reply(ROW, RolloutResult("0", RolloutStatus.JUDGE_RATE_LIMITED, error="quota; retry after 2.5 s"),
                         "error")
    assert reply.status_code == 429 and reply.headers["retry-after"] == "3"
