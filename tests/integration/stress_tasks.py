"""Tasks that misbehave on purpose, loaded into real server workers by import path."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Mapping, Sequence
from typing import Any

from reward_service.task_api import Task, TaskInput, TaskOutcome


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
    cacheable = False  # tests send it to keep workers busy: a repeat must take its time again

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


class BadCheckTask(Task):
    """A buggy plugin: ``check_reference`` raises KeyError when the reference lacks 'key'."""

    name = "bad_check"
    description = "test task: check_reference raises KeyError without reference.key"

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        _ = reference["key"]  # the bug under test: a KeyError, not InvalidReference

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome.binary(True)


class MetadataTask(Task):
    """Scores 1 and reports the rollout metadata it was given (as sorted JSON) in ``extracted``."""

    name = "metadata"
    description = "test task: echoes TaskInput.metadata"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        return [TaskOutcome.binary(True, extracted=json.dumps(dict(item.metadata), sort_keys=True))
                for item in items]
