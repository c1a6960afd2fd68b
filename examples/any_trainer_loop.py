"""Calling the reward service from any trainer loop: a runnable sketch with a toy policy.

Why: a trainer that is neither ours nor TRL's needs three things from the service: send
each prompt's G completions as a *group*, get one reward per completion back in order,
and mask the completions the service could not score (``None``) instead of reading them
as 0. This file is that loop, small enough to copy, with the model replaced by a toy
policy (a learned distribution over answers per prompt, updated by REINFORCE with GRPO
advantages) so it runs in seconds with no model and its reward visibly rises.

    python examples/any_trainer_loop.py                                  # starts a reward server for the run
    python examples/any_trainer_loop.py --endpoint localhost:50051 --mode async

Two ways to call the service, pick one:

- ``--mode sync``: ``RewardClient.score_groups(groups)`` once per step, after generating;
  the simplest, and the step waits for scoring.
- ``--mode async``: ``AsyncRewardClient`` on an event loop; the step generates in chunks
  (in a worker thread, as a model's ``generate`` would run) and sends each chunk's groups
  the moment they exist, so the service scores them while the next chunk is generated;
  only the time still spent waiting after the last chunk shows up as ``wait``.

One dataset row has no ``answer`` in its reference (a broken row, as real datasets have):
the service answers ``INVALID_REFERENCE`` for its completions, ``rewards`` holds ``None``
there, and those completions get advantage 0 and stay out of their group's baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from trainer_client import AsyncRewardClient, GroupResult, RewardClient

ANSWERS = range(19)  # the toy policy's action space: "#### 0" .. "#### 18"


@dataclass(frozen=True)
class Row:
    prompt: str
    reference: dict


def dataset() -> list[Row]:
    rows = [Row(f"What is {a} + {b}?", {"answer": str(a + b)}) for a, b in ((2, 3), (4, 4), (7, 1), (6, 9),
                                                                          (5, 5), (8, 3), (1, 1))]
    return rows + [Row("What is 3 + 3?", {})]  # broken: no answer, so never scored


class ToyPolicy:
    """Softmax over answers, one logit table per prompt; ``update`` is a REINFORCE step."""

    def __init__(self, seed: int, lr: float = 0.5) -> None:
        self.rng = random.Random(seed)
        self.logits: dict[str, list[float]] = {}
        self.lr = lr

    def probs(self, prompt: str) -> list[float]:
        logits = self.logits.setdefault(prompt, [0.0] * len(ANSWERS))
        top = max(logits)
        weights = [math.exp(x - top) for x in logits]
        return [w / sum(weights) for w in weights]

    def sample(self, prompts: Sequence[str], g: int) -> list[list[str]]:
        """G completions per prompt (a model's ``generate`` goes here)."""
        return [[f"#### {self.rng.choices(ANSWERS, self.probs(p))[0]}" for _ in range(g)] for p in prompts]

    def update(self, prompt: str, completions: Sequence[str], advantages: Sequence[float]) -> None:
        """Gradient of sum(A * log p(answer)) for a softmax: A * (onehot - p)."""
        probs = self.probs(prompt)
        for completion, advantage in zip(completions, advantages):
            answer = int(completion.split()[-1])
            for k in ANSWERS:
                self.logits[prompt][k] += self.lr * advantage * ((k == answer) - probs[k]) / len(completions)


def group_advantages(rewards: Sequence[float | None]) -> list[float]:
    """GRPO advantages over the scored members; unscored (None) members get 0 and no say in the baseline."""
    scored = [r for r in rewards if r is not None]
    if len(scored) < 2:
        return [0.0] * len(rewards)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    return [0.0 if r is None else (r - mean) / (std + 1e-4) for r in rewards]


def to_groups(rows: Sequence[Row], completions: Sequence[Sequence[str]], step: int,
              offset: int = 0) -> list[list[dict]]:
    """One group per prompt; ids unique within the call."""
    return [[{"id": f"s{step}-p{offset + i}-{k}", "task": "gsm8k", "prompt": row.prompt, "completion": c,
              "reference": row.reference} for k, c in enumerate(group)]
            for i, (row, group) in enumerate(zip(rows, completions))]


@dataclass(frozen=True)
class StepRecord:
    step: int
    reward_mean: float  # over scored completions
    unscored: int
    wait_s: float  # time blocked on the reward service


def step_sync(client: RewardClient, policy: ToyPolicy, rows: Sequence[Row], g: int,
              step: int) -> tuple[list[list[str]], list[GroupResult], float]:
    completions = policy.sample([r.prompt for r in rows], g)
    started = time.perf_counter()
    results = client.score_groups(to_groups(rows, completions, step))
    return completions, results, time.perf_counter() - started


async def step_async(client: AsyncRewardClient, policy: ToyPolicy, rows: Sequence[Row], g: int, step: int,
                     chunk: int = 2) -> tuple[list[list[str]], list[GroupResult], float]:
    completions: list[list[str]] = []
    pending = []
    for start in range(0, len(rows), chunk):
        part = rows[start: start + chunk]
        sampled = await asyncio.to_thread(policy.sample, [r.prompt for r in part], g)  # generate off the loop
        pending.append(asyncio.create_task(client.score_groups(to_groups(part, sampled, step, start))))
        completions += sampled
    started = time.perf_counter()
    results = [group for batch in await asyncio.gather(*pending) for group in batch]
    return completions, results, time.perf_counter() - started


def learn(policy: ToyPolicy, rows: Sequence[Row], completions: Sequence[Sequence[str]],
          results: Sequence[GroupResult], step: int, wait_s: float) -> StepRecord:
    rewards = [r for group in results for r in group.rewards]
    for row, group_completions, group in zip(rows, completions, results):
        policy.update(row.prompt, group_completions, group_advantages(group.rewards))
    scored = [r for r in rewards if r is not None]
    return StepRecord(step, sum(scored) / len(scored) if scored else math.nan,
                      sum(r is None for r in rewards), wait_s)


def train(endpoint: str, steps: int = 30, group_size: int = 8, mode: str = "sync", seed: int = 0) -> list[StepRecord]:
    """Runs the loop against ``endpoint``; one record per step."""
    policy, rows = ToyPolicy(seed), dataset()
    if mode == "sync":
        with RewardClient(endpoint, timeout_s=60) as client:
            records = []
            for step in range(steps):
                completions, results, wait_s = step_sync(client, policy, rows, group_size, step)
                records.append(learn(policy, rows, completions, results, step, wait_s))
            return records

    async def run() -> list[StepRecord]:
        async with AsyncRewardClient(endpoint, timeout_s=60) as client:
            records = []
            for step in range(steps):
                completions, results, wait_s = await step_async(client, policy, rows, group_size, step)
                records.append(learn(policy, rows, completions, results, step, wait_s))
            return records

    return asyncio.run(run())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", help="host:port of a running reward service (default: start one)")
    parser.add_argument("--mode", choices=("sync", "async"), default="sync")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.endpoint:
        records = train(args.endpoint, args.steps, args.group_size, args.mode, args.seed)
    else:
        from trainer_client.train.reward_overlap import EmbeddedRewardServer

        with EmbeddedRewardServer("runs/any_trainer_loop/reward_server.log") as server:
            records = train(server.address, args.steps, args.group_size, args.mode, args.seed)
    for r in records:
        print(f"step {r.step:3d}  reward {r.reward_mean:.3f}  unscored {r.unscored:2d}  wait {1000 * r.wait_s:6.1f} ms")
    k = max(1, len(records) // 5)
    first = sum(r.reward_mean for r in records[:k]) / k
    last = sum(r.reward_mean for r in records[-k:]) / k
    print(f"mean reward: first {k} steps {first:.3f} -> last {k} steps {last:.3f}; "
          f"{records[0].unscored} unscored completions masked per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
