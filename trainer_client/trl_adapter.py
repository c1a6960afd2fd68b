"""The reward service as a TRL ``GRPOTrainer`` reward function: any trainer, our endpoint.

Why: TRL (and trainers that copy its contract) take reward *callables*; this one sends a
whole generation batch to the reward service in one scoring request and hands back one
reward per completion, so the same verifiers, tasks and composites score TRL's runs and
ours. TRL is not imported here (it is an optional extra: ``pip install -e '.[trl]'``).

    from trl import GRPOConfig, GRPOTrainer
    from trainer_client.trl_adapter import RewardServiceReward

    reward = RewardServiceReward("localhost:50051", task="gsm8k", reference="reference", group_size=8)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=reward, train_dataset=ds,
                          args=GRPOConfig(num_generations=8, ...))

The contract (``GRPOTrainer._calculate_rewards`` in TRL 1.16): the function is called once
per generation batch with ``prompts``, ``completions`` (strings, or message lists for
conversational data), ``completion_ids`` and every other dataset column as a keyword
argument (one value per completion), plus ``trainer_state``, ``log_extra`` and
``log_metric``. It returns one value per completion; TRL logs it as
``rewards/<__name__>/mean``. The task comes from ``task=`` (every row) or from a dataset
column (``task_column``, default ``"task"``); the reference from one column holding a
dict or the bare gold answer (``reference="reference"``), or from several columns
gathered into a dict (``reference=("answer", "tolerance")``). Consecutive completions of
one prompt (TRL repeats each prompt ``num_generations`` times in a row) are sent as one
group, at most ``group_size`` long, so the server's group statistics apply. For
conversational data the text scored (and the prompt sent) is the last message's content.

Unscored rollouts (TIMEOUT, ERROR, UNKNOWN_TASK, INVALID_REFERENCE, or a call that failed
as a whole) are never returned as 0. With ``unscored="mask"`` (default) such a completion
gets ``None``; with ``unscored="drop_group"`` every completion of a group holding an
unscored one gets ``None`` (the group gives no signal rather than a baseline from its
partial scores). What TRL 1.16 does with ``None`` (read in ``grpo_trainer.py``): it becomes
NaN; rewards of several functions are combined with ``nansum``, so a ``None`` from this
function alone leaves the row with the other functions' rewards (this one is skipped, not
counted as 0); a row for which *every* function returned ``None`` is "unscorable": its
reward stays NaN, it is left out of the group mean and std (``nanmean``/``nanstd``) and
its advantage is set to 0, so it moves the policy only through the KL term (``beta > 0``);
``rewards/<name>/mean`` is a ``nanmean`` over scored rows. When nothing at all in a call
was scored the adapter raises ``NothingScoredError`` (the service or the task setup is
broken; the same rule as our trainer), unless ``fail_when_nothing_scored=False``.

Through ``log_metric`` each call also logs ``<name>/unscored_frac``,
``<name>/zero_variance_frac`` (groups whose scored rewards are all equal) and
``<name>/score_s`` (seconds the call took). Step scores (a task with ``produces_steps``, e.g.
``steps``) pass through: ``last_results[i].steps``, ``<name>/step_score_mean`` and a
``<name>_steps`` column in TRL's completion log (``log_extra``).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc

from reward_core.clients import ClientError, RewardClient, ServerUnavailable
from reward_core.contract import RolloutResult, RolloutStatus, group_stats

logger = logging.getLogger(__name__)

UNSCORED_POLICIES = ("mask", "drop_group")
# Keyword arguments TRL adds besides the dataset columns; never read as a column.
_TRL_EXTRAS = ("trainer_state", "log_extra", "log_metric", "environments", "completion_ids")


class NothingScoredError(RuntimeError):
    """No completion of a whole call was scored: the reward service or the task setup is broken."""


def message_text(value: Any) -> str:
    """A prompt or completion as text: a string as is; a message list -> its last message's text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and isinstance(value[-1], Mapping):
        content = value[-1].get("content", "")
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    raise ValueError(f"expected a string or a list of chat messages, got {type(value).__name__}")


def group_indices(prompts: Sequence[Any], group_size: int | None) -> list[int]:
    """Group index per row: runs of equal consecutive prompts, cut every ``group_size`` rows."""
    out: list[int] = []
    group, run = -1, 0
    for i, prompt in enumerate(prompts):
        if i == 0 or prompt != prompts[i - 1] or (group_size and run == group_size):
            group, run = group + 1, 0
        out.append(group)
        run += 1
    return out


def rewards_for(results: Sequence[RolloutResult], groups: Sequence[int], unscored: str) -> list[float | None]:
    """Per-row rewards under the ``unscored`` policy: ``None`` for unscored rows (or their whole group)."""
    rewards = [r.reward for r in results]
    if unscored == "drop_group":
        broken = {g for g, r in zip(groups, rewards) if r is None}
        rewards = [None if g in broken else r for g, r in zip(groups, rewards)]
    return rewards


class RewardServiceReward:
    """A ``reward_funcs`` callable for TRL's ``GRPOTrainer`` (and any trainer with that contract).

    Thread-safe; picklable (the gRPC channel is opened lazily, per process).
    """

    def __init__(self, endpoint: str, *, task: str | None = None, task_column: str = "task",
                 reference: str | Sequence[str] = "reference", group_size: int | None = None,
                 name: str = "reward_service", unscored: str = "mask", fail_when_nothing_scored: bool = True,
                 send_prompt: bool = True, timeout_s: float = 120.0, item_timeout_s: float = 0.0,
                 chunk_size: int = 4096) -> None:
        if unscored not in UNSCORED_POLICIES:
            raise ValueError(f"unscored must be one of {UNSCORED_POLICIES}, got {unscored!r}")
        if group_size is not None and group_size < 1:
            raise ValueError(f"group_size must be >= 1 (TRL's num_generations) or None, got {group_size}")
        if not reference:
            raise ValueError("reference must name a dataset column, or a list of columns")
        self.endpoint = endpoint
        self.task = task
        self.task_column = task_column
        self.reference = reference
        self.group_size = group_size
        self.__name__ = name  # TRL names the reward's metrics after it
        self.unscored = unscored
        self.fail_when_nothing_scored = fail_when_nothing_scored
        self.send_prompt = send_prompt
        self.timeout_s = timeout_s
        self.item_timeout_s = item_timeout_s
        self.chunk_size = chunk_size
        self.calls = 0
        self.last_results: list[RolloutResult] = []
        self._client: RewardClient | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_client", "_lock", "_ids")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client, self._lock, self._ids = None, threading.Lock(), itertools.count()

    @property
    def client(self) -> RewardClient:
        with self._lock:
            if self._client is None:
                self._client = RewardClient(self.endpoint, timeout_s=self.timeout_s, chunk_size=self.chunk_size,
                                            item_timeout_s=self.item_timeout_s)
            return self._client

    def _column(self, kwargs: Mapping[str, Any], name: str, n: int) -> list[Any]:
        if name not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRL_EXTRAS)
            raise ValueError(f"reward {self.__name__!r}: no dataset column {name!r} (columns: {columns}); "
                             f"set task=/task_column= and reference= to match the dataset")
        values = list(kwargs[name])
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
        return values

    def rollouts(self, prompts: Sequence[Any], completions: Sequence[Any],
                 **kwargs: Any) -> tuple[list[dict], list[int]]:
        """The reward-service rollouts of one call (one dict per completion) and each row's group index."""
        n = len(completions)
        if len(prompts) != n:
            raise ValueError(f"got {len(prompts)} prompts for {n} completions")
        tasks = [self.task] * n if self.task else self._column(kwargs, self.task_column, n)
        if isinstance(self.reference, str):
            references = self._column(kwargs, self.reference, n)
        else:
            columns = {c: self._column(kwargs, c, n) for c in self.reference}
            references = [{c: columns[c][i] for c in self.reference} for i in range(n)]
        prompt_texts = [message_text(p) for p in prompts]
        groups = group_indices(prompt_texts, self.group_size)
        call = f"{uuid.uuid4().hex[:8]}-{next(self._ids)}"
        rollouts = [{"id": f"{call}-{i}", "group_id": f"{call}-g{groups[i]}", "task": tasks[i],
                     "completion": message_text(completions[i]), "reference": references[i],
                     "prompt": prompt_texts[i] if self.send_prompt else ""} for i in range(n)]
        return rollouts, groups

    def score(self, rollouts: list[dict]) -> list[RolloutResult]:
        """Results in input order; a call that fails as a whole (the server went away, an RPC error)
        comes back as every rollout unscored. An endpoint that never answered raises EndpointUnreachable
        at the first call: a run pointed at the wrong address stops at once, saying why."""
        try:
            return self.client.score(rollouts)
        except (grpc.RpcError, ServerUnavailable) as exc:
            details = str(exc) if isinstance(exc, ClientError) else exc.details()
            code = exc.code() if isinstance(exc, grpc.RpcError) else "UNAVAILABLE"
            logger.warning("reward %r: scoring %d completions failed as a whole (%s: %s); they count as unscored",
                           self.__name__, len(rollouts), code, details)
            return [RolloutResult(r["id"], RolloutStatus.ERROR, error=f"request failed: {details}",
                                  task=r["task"], group_id=r["group_id"]) for r in rollouts]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        started = time.perf_counter()
        rollouts, groups = self.rollouts(prompts, completions, **kwargs)
        results = self.score(rollouts)
        rewards = rewards_for(results, groups, self.unscored)
        self.calls += 1
        self.last_results = results
        unscored = sum(r is None for r in rewards)
        if unscored == len(rewards) and rewards and self.fail_when_nothing_scored:
            statuses = sorted({f"{r.status.name}: {r.error}" for r in results})[:3]
            raise NothingScoredError(f"reward {self.__name__!r}: none of {len(rewards)} completions was scored "
                                     f"({statuses}); check the tasks, the references and the reward server log")
        self._log(kwargs, results, unscored / max(1, len(rewards)), time.perf_counter() - started)
        return rewards

    def _log(self, kwargs: Mapping[str, Any], results: Sequence[RolloutResult], unscored_frac: float,
             seconds: float) -> None:
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        log_extra: Callable[[str, list], None] | None = kwargs.get("log_extra")
        if log_metric is not None:
            log_metric(f"{self.__name__}/unscored_frac", unscored_frac)
            stats = [g for g in group_stats(list(results)) if g.scored]
            if stats:
                log_metric(f"{self.__name__}/zero_variance_frac", sum(g.zero_variance for g in stats) / len(stats))
            log_metric(f"{self.__name__}/score_s", seconds)
        if log_extra is not None:
            log_extra(f"{self.__name__}_status", [r.status.name for r in results])
        if any(r.steps for r in results):  # a process task: its step scores pass through
            scored = [step.score for r in results for step in r.steps if step.scored]
            if log_metric is not None and scored:
                log_metric(f"{self.__name__}/step_score_mean", sum(scored) / len(scored))
            if log_extra is not None:
                log_extra(f"{self.__name__}_steps", [[step.to_dict() for step in r.steps] for r in results])

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> RewardServiceReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

