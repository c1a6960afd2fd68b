"""What a reward-model server answers: the dataclasses of ``RewardModelService`` (reward_model.proto).

The clients (:mod:`reward_core.clients.reward_model`) convert the service's messages into these,
so callers (the ``rm`` and ``prm`` tasks, the HTTP door's ``/classify``) never touch protobuf.
Results come back in request order, one per item.
"""

from __future__ import annotations

from dataclasses import dataclass


class RewardModelReplyError(RuntimeError):
    """The server's answer does not match the request (results missing or out of order)."""


@dataclass(frozen=True)
class PairScore:
    """The reward model's output for one (prompt, completion) pair."""

    score: float              # the model's raw output
    normalized_score: float   # (score - mean) / std over the checkpoint's training set
    truncated: bool           # the pair was cut to the model's max length (see RewardModelInfo.truncation)
    num_tokens: int           # tokens the model saw, after truncation


@dataclass(frozen=True)
class ScoreReply:
    """One ``Score`` call's answer: a result per pair, in request order."""

    results: tuple[PairScore, ...]
    checkpoint: str           # the checkpoint that produced these scores


@dataclass(frozen=True)
class StepScores:
    """A process reward model's output for one completion's steps, one entry per step."""

    step_scores: tuple[float, ...]  # P(step is correct), meaningful only where ``scored``
    scored: tuple[bool, ...]        # False: the step was cut off by the model's max length (never a 0)
    num_tokens: int


@dataclass(frozen=True)
class ScoreStepsReply:
    """One ``ScoreSteps`` call's answer: a result per item, in request order."""

    results: tuple[StepScores, ...]
    checkpoint: str


@dataclass(frozen=True)
class RewardModelInfo:
    """The checkpoint a server holds and its settings (``Info``)."""

    checkpoint: str
    max_length: int
    truncation: str           # how over-long pairs are cut, e.g. "prompt_left"
    device: str
    dtype: str
    reward_mean: float
    reward_std: float
    max_batch_tokens: int
    max_wait_ms: float


@dataclass(frozen=True)
class ReloadReply:
    """What a ``Reload`` swapped in, and how long loading took."""

    checkpoint: str
    previous_checkpoint: str
    load_seconds: float
