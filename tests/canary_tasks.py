"""Task plugins for the canary tests, loaded by import path (also into real server workers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, Task, TaskOutcome
from reward_service.tasks.canaries import generic_canaries, hedge_canaries, joined

ROW = {"answer": "72"}


class HedgeLover(Task):
    """Pays 1 to any completion that contains the gold: every hedge passes."""

    name = "hedge_lover"
    required_reference_fields = ("answer",)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(bool(completion) and str(reference["answer"]) in completion)

    def canaries(self) -> list[Canary]:
        return [*generic_canaries(ROW), *hedge_canaries(ROW, "72", ["70", "71"], [("'or' list", joined("{}", " or "))])]


class RaisingOnCanary(Task):
    """Raises on model output it does not expect (a verifier bug a canary finds)."""

    name = "raising_on_canary"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        if not completion:
            raise IndexError("empty completion")
        return TaskOutcome.binary(False)

    def canaries(self) -> list[Canary]:
        return generic_canaries({})


class SlowCanaries(Task):
    """Takes 50 ms a completion: a canary run over its budget."""

    name = "slow_canaries"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        time.sleep(0.05)
        return TaskOutcome.binary(False)

    def canaries(self) -> list[Canary]:
        return [Canary(f"canary {i}", "x", {}) for i in range(5)]


class NoCanaries(Task):
    """A plugin that declares none."""

    name = "no_canaries"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(False)


class HeldSelfCheck(Task):
    """A self-check that waits for ``RELEASE`` (set by the test), then reports one failure: shows that a
    server serves before its tasks' self-checks are done, and reports them once they are."""

    name = "held_self_check"
    RELEASE = threading.Event()

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(False)

    def self_check(self) -> list[str]:
        if not self.RELEASE.wait(120):
            return ["never released by the test"]
        return ["known case 1 graded wrong"]

    def canaries(self) -> list[Canary]:
        return generic_canaries({})
