"""A stored outcome as the fields of its result line: what the reward cache answers a re-score with.

Its own module, light to import: ``rescore``'s worker processes answer lines from the SQLite file with it,
without the engine (``router/rows_from_cache.py``).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import orjson

import reward_core.contract
import reward_service.tasks.explanation
from reward_core.contract import RolloutStatus
from reward_service.task_api import TaskOutcome
from reward_service.tasks.explanation import explain_outcome


def _answer_format() -> bytes:
    """What the fields of a stored answer depend on beyond the outcome, its task and version (both in its key):
    the code that makes them (this module, the explanations, the contract's names) and the JSON writer."""
    digest = hashlib.sha256(orjson.__version__.encode())
    for module in (__file__, reward_service.tasks.explanation.__file__, reward_core.contract.__file__):
        digest.update(Path(module).read_bytes())
    return b"answer/" + digest.hexdigest()[:16].encode() + b"\t"


#: The start of an answer made by this code (``stored_answer``): one made by other code is not used.
ANSWER_PREFIX = _answer_format()


def cached_result_fields(outcome: TaskOutcome, task: str, version: str) -> dict[str, Any] | None:
    """What ``result_from_outcome(rollout, ItemOutcome(outcome, 0.0), True, version).to_dict()`` holds beyond
    the rollout's id, task and group id (in that order), for a stored outcome: scored, finite (the cache keeps
    no other; None for one that is not). Built without a RolloutResult: a re-score answers 100,000s of them."""
    if not outcome.status.scored or not math.isfinite(outcome.score):
        return None
    fields = {"score": outcome.score, "status": outcome.status.name, "scored": True,
              "components": dict(outcome.components) or {task: outcome.score}, "extracted": outcome.extracted,
              "error": outcome.detail if outcome.status == RolloutStatus.NO_ANSWER else "",
              "explanation": explain_outcome(outcome), "elapsed_ms": 0.0}
    if outcome.steps:
        fields["steps"] = [step.to_dict() for step in outcome.steps]
    if version:
        fields["verifier_version"] = version
    return fields


def stored_answer(outcome: TaskOutcome, task: str, version: str) -> bytes | None:
    """``cached_result_fields`` as JSON, after ``ANSWER_PREFIX``: kept beside the outcome in the reward cache's
    file, so a re-score writes a line from it without decoding the outcome (None: nothing to keep)."""
    fields = cached_result_fields(outcome, task, version)
    if fields is None:
        return None
    try:
        return ANSWER_PREFIX + orjson.dumps(fields)
    except TypeError:  # (an integer past 64 bits: the outcome is decoded when it is asked for)
        return None
