"""Registration self-check: a math-like task must recognise its own golds at start-up."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from reward_service.router.registry import TaskRegistry, log_self_check
from reward_service.task_api import Task, TaskOutcome
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.math_task import MathTask


@pytest.mark.parametrize("task", [MathTask(), MathTask(strict=True), Gsm8kTask(), Gsm8kTask(strict=True)])
def test_the_builtin_math_tasks_pass_their_self_check(task: Task) -> None:
    assert task.self_check() == []


class _AlwaysRight(MathTask):
    name = "always_right"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(True)


class _RaisingCheck(Task):
    name = "raising_check"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(False)

    def self_check(self) -> list[str]:
        raise KeyError("answer")


def test_a_task_that_accepts_wrong_answers_fails_its_self_check() -> None:
    failures = _AlwaysRight().self_check()
    assert failures and all("not rejected" in line for line in failures)


def test_failing_tasks_are_logged_at_start_up(caplog: pytest.LogCaptureFixture) -> None:
    registry = TaskRegistry()
    registry.register_class(MathTask)
    registry.register_class(_AlwaysRight)
    registry.register_class(_RaisingCheck)
    with caplog.at_level(logging.ERROR, logger="reward_service.router.registry"):
        failures = log_self_check(registry, canaries=False).failures
    assert sorted(failures) == ["always_right", "raising_check"]
    assert "KeyError" in failures["raising_check"][0]
    assert sum("failed its self-check" in r.getMessage() for r in caplog.records) == 2
