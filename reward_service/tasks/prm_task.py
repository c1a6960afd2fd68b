"""The ``prm`` task: step scores from a learned process reward model (``serve-rm`` with a PRM).

The completion is split into steps as the ``steps`` task splits it (a configured separator,
numbered steps, or lines; :mod:`reward_service.verifiers.process.step_split`); one
``ScoreSteps`` call per job (the core's :class:`~reward_core.clients.RewardModelClient`) sends the
steps' texts to the reward-model server, which returns
P(step is correct) for each. Each step comes back as a ``StepScore`` with its character span;
a step the model's max length cut off is unscored (never a 0). The rollout's score aggregates
the scored steps: ``min`` (the default: a chain is as good as its weakest step), ``mean`` or
``last``.

    tasks:
      prm: {options: {endpoint: "prm-host:50052", aggregate: min}}

or the server's ``--prm-endpoint`` (``REWARD_SERVICE_PRM_ENDPOINT``), the default ``endpoint``.

A completion with no steps is NO_ANSWER; a server failure, or every step cut off, is ERROR
(unscored).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import grpc

from reward_core.channel_config import ChannelConfig
from reward_core.channel_security import ClientSecurity
from reward_core.clients import RewardModelClient
from reward_core.contract import RolloutStatus, StepScore
from reward_core.rm_contract import RewardModelReplyError, StepScores
from reward_service.task_api import InvalidTaskOptions, Task, TaskInput, TaskOutcome
from reward_service.verifiers.process import split_steps

#: The server setting that gives this task its default endpoint (flag and environment variable).
ENDPOINT_SETTING = "--prm-endpoint (REWARD_SERVICE_PRM_ENDPOINT)"
AGGREGATES = {"min": min, "mean": lambda xs: sum(xs) / len(xs), "last": lambda xs: xs[-1]}


class ProcessRewardModelUnavailable(RuntimeError):
    """The PRM could not score: no endpoint, or the server failed (the rollout is ERROR, unscored)."""


class ProcessRewardModelTask(Task):
    """Step scores from a PRM served by ``reward-service serve-rm`` (see the module docstring)."""

    name = "prm"
    description = "a learned process reward model's P(correct) per reasoning step; score = min (or mean, last) of them"
    runs_in_server = True  # one channel to the PRM for the whole server
    cacheable = False  # the model behind the endpoint may change: never answered from the reward cache
    produces_steps = True
    batch_size = 32
    endpoint_field = "prm_endpoint"

    def __init__(self, endpoint: str | None = "", aggregate: str = "min", separator: str = "",
                 timeout_s: float = 30.0) -> None:
        super().__init__()
        endpoint = "" if endpoint is None else endpoint
        if not isinstance(endpoint, str):
            raise InvalidTaskOptions(f"prm endpoint must be a 'host:port' string, got {endpoint!r}")
        if aggregate not in AGGREGATES:
            raise InvalidTaskOptions(f"prm aggregate must be one of {sorted(AGGREGATES)}, got {aggregate!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < math.inf:
            raise InvalidTaskOptions(f"prm timeout_s must be a positive number of seconds, got {timeout_s!r}")
        self.endpoint = endpoint.strip()
        self.aggregate = aggregate
        self.separator = separator or None
        self.timeout_s = float(timeout_s)
        self.time_limit_s = self.timeout_s + 5.0
        self._lock = threading.Lock()
        self._client: RewardModelClient | None = None

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return self.score_batch([TaskInput(completion, reference, prompt)])[0]

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        """One ScoreSteps call for the batch; raises ProcessRewardModelUnavailable when it fails."""
        split = [split_steps(item.completion, self.separator) for item in items]
        asked = [i for i, steps in enumerate(split) if steps]
        results: dict[int, StepScores] = {}
        if asked:
            try:
                reply = self._rm().score_steps([(items[i].prompt, [step.text for step in split[i]]) for i in asked])
            except grpc.RpcError as exc:
                raise ProcessRewardModelUnavailable(
                    f"process reward model at {self.endpoint} failed: {exc.code().name}: {exc.details()}") from None
            except RewardModelReplyError as exc:
                raise ProcessRewardModelUnavailable(str(exc)) from None
            results = dict(zip(asked, reply.results))
        return [self._outcome(steps, results.get(i)) for i, steps in enumerate(split)]

    def _outcome(self, steps: list, result: StepScores | None) -> TaskOutcome:
        if not steps:
            return TaskOutcome.no_answer("the completion has no steps")
        if result is None or len(result.step_scores) != len(steps):
            raise ProcessRewardModelUnavailable(f"process reward model at {self.endpoint} answered no or a "
                                                f"wrong number of step scores for an item of {len(steps)} steps")
        scored = [StepScore(step.start, step.end, value, ok, "scored" if ok else "truncated")
                  for step, value, ok in zip(steps, result.step_scores, result.scored)]
        values = [s.score for s in scored if s.scored]
        if not values:
            return TaskOutcome(0.0, RolloutStatus.ERROR, detail=f"every step was cut off by the model's max length "
                                                                f"({result.num_tokens} tokens)", steps=tuple(scored))
        value = AGGREGATES[self.aggregate](values)
        return TaskOutcome(value, components={"prm": value, f"prm_{self.aggregate}": value}, steps=tuple(scored))

    def _rm(self) -> RewardModelClient:
        """The client, opened on first use (no channel exists before the worker pool forks)."""
        if not self.endpoint:
            raise ProcessRewardModelUnavailable(
                f"task {self.name!r} has no endpoint: set tasks.prm.options.endpoint or the server's "
                f"{ENDPOINT_SETTING} to the host:port of a `reward-service serve-rm --checkpoint "
                "<train-prm checkpoint>` server")
        with self._lock:
            if self._client is None:
                channel = ChannelConfig(max_attempts=3, max_backoff_s=1.0, wait_for_ready=False,
                                        security=ClientSecurity.from_env())
                self._client = RewardModelClient(self.endpoint, timeout_s=self.timeout_s, channel=channel,
                                                     connect_timeout_s=None)
            return self._client
