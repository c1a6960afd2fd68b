"""A failure of ours is never a 0: math task statuses for bad golds and verifier failures."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, TaskInput
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.math_task import MathTask
from reward_service.verifiers.math import math_equal


def test_a_verifier_exception_is_an_unscored_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> bool:
        raise TypeError("internal bug")

    monkeypatch.setattr(math_equal, "structures_match", broken)
    outcome = MathTask().score("\\boxed{(1, 2)}", {"answer": "(1, 3)"})
    assert outcome.status == RolloutStatus.ERROR and not outcome.status.scored


@pytest.mark.parametrize("gold", ["", "   ", "$ $"])
def test_an_empty_gold_is_an_invalid_reference(gold: str) -> None:
    outcome = MathTask().score_batch([TaskInput("\\boxed{3}", {"answer": gold})])[0]
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


def test_a_non_numeric_gsm8k_gold_is_an_invalid_reference() -> None:
    outcome = Gsm8kTask().score("#### 12", {"answer": "twelve apples and a pear"})
    assert outcome.status == RolloutStatus.INVALID_REFERENCE


def test_a_non_numeric_gsm8k_answer_is_still_a_scored_zero() -> None:
    outcome = Gsm8kTask().score("#### many", {"answer": "12"})
    assert outcome.status.scored and outcome.score == 0.0


def test_a_missing_answer_raises_invalid_reference() -> None:
    with pytest.raises(InvalidReference):
        MathTask().score("\\boxed{3}", {})
