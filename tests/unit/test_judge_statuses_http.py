"""The judge statuses through the HTTP doors: never a reward, the right HTTP status, the retry hint as Retry-After."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from reward_core.contract import RolloutResult, RolloutStatus, retry_hint  # noqa: E402
from reward_service.http_door.openrlhf import unscored_answer  # noqa: E402


def result(status: RolloutStatus, error: str = "") -> RolloutResult:
    return RolloutResult("r", status, 0.0, {}, "", error, 0.0, "judge_reference")


@pytest.mark.parametrize("status,http", [(RolloutStatus.JUDGE_FAILED, 503), (RolloutStatus.JUDGE_UNPARSEABLE, 500),
                                         (RolloutStatus.JUDGE_RATE_LIMITED, 429)])
def test_a_judge_failure_is_an_http_error_not_a_reward(status: RolloutStatus, http: int) -> None:
    answer = unscored_answer([result(RolloutStatus.OK), result(status, "judge said no")], "judge_reference")
    assert answer is not None and answer.status_code == http


def test_a_rate_limited_judge_passes_its_wait_on_as_retry_after() -> None:
    answer = unscored_answer([result(RolloutStatus.JUDGE_RATE_LIMITED, f"over quota; {retry_hint(7.2)}")], "j")
    assert answer is not None and answer.status_code == 429 and answer.headers["Retry-After"] == "8"
