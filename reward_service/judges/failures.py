"""How a judge call fails: a typed error, and the unscored rollout status each kind becomes.

A judge that could not be asked, or whose answer could not be read, never yields a reward of 0:
the task answers the rollout with :func:`status_of` the error's kind, and its reason.
"""

from __future__ import annotations

import enum

from reward_core.contract import RolloutStatus, retry_hint


class JudgeFailureKind(enum.Enum):
    """Why a judgement is missing."""

    #: Timeout, connection error, 5xx after retries, or the verification's deadline spent.
    FAILED = "judge_failed"
    #: The judge answered, but the task's parser could not read a verdict (raised by the task).
    UNPARSEABLE = "judge_unparseable"
    #: 429 after retries, or this server's own quota for the endpoint was exceeded.
    RATE_LIMITED = "judge_rate_limited"


_STATUS = {
    JudgeFailureKind.FAILED: RolloutStatus.JUDGE_FAILED,
    JudgeFailureKind.UNPARSEABLE: RolloutStatus.JUDGE_UNPARSEABLE,
    JudgeFailureKind.RATE_LIMITED: RolloutStatus.JUDGE_RATE_LIMITED,
}


def status_of(kind: JudgeFailureKind) -> RolloutStatus:
    """The (unscored) rollout status a failure of ``kind`` is answered with."""
    return _STATUS[kind]


class JudgeError(Exception):
    """A judgement that could not be made; ``kind`` says which way, ``reason`` says why in words.

    ``retry_after_s`` is set for RATE_LIMITED when the wait is known (the endpoint's ``Retry-After``,
    or when this server's quota frees up).
    """

    def __init__(self, kind: JudgeFailureKind, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retry_after_s = retry_after_s

    @property
    def status(self) -> RolloutStatus:
        """The rollout status this failure is answered with (see :func:`status_of`)."""
        return status_of(self.kind)

    def detail(self) -> str:
        """The reason, with the retry hint when there is one (a rollout's ``error``)."""
        if self.retry_after_s is None:
            return self.reason
        return f"{self.reason}; {retry_hint(self.retry_after_s)}"

    def __repr__(self) -> str:
        return f"JudgeError({self.kind.name}, {self.reason!r}, retry_after_s={self.retry_after_s})"
