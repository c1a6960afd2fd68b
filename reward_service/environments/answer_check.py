"""Verifying an episode's answer with a registered task, off the event loop.

:class:`AnswerVerifier` is what the session manager needs; :class:`ScorerVerifier` is the one it
uses: the reward router's :class:`~reward_service.router.scoring.Scorer`, so an answer is
verified exactly as a single rollout of that task is (the same registry and configured variants,
in supervised worker processes with a hard per-item limit, the reward cache, the verifier version),
and CPU-heavy verification (sympy) never runs on the event loop.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from reward_core.contract import Rollout, RolloutStatus
from reward_service.router.scoring import PendingBatch, QueueFullError, Scorer


@dataclass(frozen=True)
class AnswerCheck:
    """A verification: ``reward`` is the task's score when ``scored``; else ``error`` says why not (ours)."""

    status: RolloutStatus
    reward: float | None
    components: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    error: str = ""
    verifier_version: str = ""

    @property
    def scored(self) -> bool:
        return self.status.scored


class AnswerVerifier(Protocol):
    """Verifies a completion against a reference with a registered task."""

    def has_task(self, task: str) -> bool:
        """Whether ``task`` is registered here."""
        ...

    async def verify(self, task: str, completion: str, reference: Mapping[str, Any], prompt: str = "",
                     client_id: str = "") -> AnswerCheck:
        """The task's verdict (never raises for the completion; unscored statuses for our failures)."""
        ...


class ScorerVerifier:
    """An :class:`AnswerVerifier` on a :class:`Scorer` (which its creator owns and closes)."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self._ids = itertools.count()

    def has_task(self, task: str) -> bool:
        return task in self.scorer.registry

    async def verify(self, task: str, completion: str, reference: Mapping[str, Any], prompt: str = "",
                     client_id: str = "") -> AnswerCheck:
        rollout = Rollout(id=f"episode-{next(self._ids)}", task=task, completion=completion,
                          reference=dict(reference), prompt=prompt)
        try:
            batch = self.scorer.submit([rollout], request_id=rollout.id, client_id=client_id)
        except QueueFullError as exc:
            return AnswerCheck(RolloutStatus.UNAVAILABLE, None, error=f"the verifiers are busy: {exc}")
        loop = asyncio.get_running_loop()
        done: asyncio.Future[PendingBatch] = loop.create_future()

        def resolve(finished: PendingBatch) -> None:  # on a pool thread
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(finished))

        batch.add_done_callback(resolve)
        try:
            await done
        except asyncio.CancelledError:
            batch.cancel()
            raise
        result = batch.result().results[0]
        if not result.scored:
            return AnswerCheck(result.status, None, detail=result.explanation,
                               error=result.error or result.explanation or result.status.name,
                               verifier_version=result.verifier_version)
        return AnswerCheck(result.status, result.score, dict(result.components),
                           result.explanation or result.extracted, verifier_version=result.verifier_version)
