"""Tasks that misbehave on purpose, loaded into real server workers by import path."""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Mapping

from reward_service.task_api import Task, TaskOutcome


class HangTask(Task):
    """Spins forever (a stuck verifier) when the completion says 'hang'; else scores 1."""

    name = "hang"
    description = "test task: busy-loops on 'hang'"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        while completion == "hang":
            pass
        return TaskOutcome.binary(True, extracted=completion)


class CrashTask(Task):
    """Kills its own worker process (a segfault/OOM stand-in) when the completion says 'crash'."""

    name = "crash"
    description = "test task: SIGKILLs its worker on 'crash'"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        if completion == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        return TaskOutcome.binary(True, extracted=completion)


class SleepTask(Task):
    """Sleeps reference['seconds'], then scores 1: a slow but well-behaved verifier."""

    name = "sleep"
    description = "test task: sleeps reference.seconds"
    required_reference_fields = ("seconds",)
    batch_size = 1  # each item is slow: one per job

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        time.sleep(float(reference["seconds"]))
        return TaskOutcome.binary(True)


class RaiseTask(Task):
    """A buggy verifier: raises on 'raise', scores 1 otherwise."""

    name = "raise"
    description = "test task: raises RuntimeError on 'raise'"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        if completion == "raise":
            raise RuntimeError("verifier bug")
        return TaskOutcome.binary(True)
