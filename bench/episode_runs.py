"""Running many scripted episodes at a fixed concurrency, and tallying how each ended and what each call cost.

Every episode has a watchdog (``episode_timeout_s``): one that has not ended by then is counted
``HUNG`` (and cancelled), so a run always ends and a wedged path shows as a number.
"""

from __future__ import annotations

import asyncio
import collections
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from episode_paths import Served, ending
from episode_policy import play, product_row, wrong_on_purpose

from reward_core.episode_contract import EpisodeSpec

#: Endings that are a failure of ours reported with its type (unscored, never a reward).
TYPED = {"TOOL_FAILED", "SANDBOX_FAILED", "SESSION_LOST", "DEADLINE_EXCEEDED", "CLOSED", "ERROR", "REFUSED"}


@dataclass
class Tally:
    """How the episodes ended, and per call: (tool, round trip ms, host ms, calculator expression)."""

    endings: collections.Counter[str] = field(default_factory=collections.Counter)
    calls: list[tuple[str, float, float, str]] = field(default_factory=list)
    tool_outputs_wrong: int = 0

    @property
    def episodes(self) -> int:
        return sum(self.endings.values())

    def untyped(self) -> dict[str, int]:
        """Endings that are neither right, nor a typed failure: silently wrong rewards, untyped errors, hangs."""
        return {k: n for k, n in self.endings.items() if k != "right" and k not in TYPED}


@dataclass(frozen=True)
class Workload:
    """Which episodes to run: the environment, its split, the share answered wrong on purpose, the first tool."""

    environment: str = "arithmetic_tools"
    split: str = "train"
    wrong_share: float = 0.1
    first_tool: str = "calculator"  # or "python" (math_tools with rows of our own: the sandbox in the path)
    episode_timeout_s: float = 300.0
    python_sleep_s: float = 0.0  # the python program sleeps first (the soak's SIGTERM phase: episodes mid-call)

    def spec(self, index: int) -> EpisodeSpec:
        if self.first_tool == "python":
            a, b = 10_000 + (index * 7_919) % 90_000, 100_000 + (index * 104_729) % 900_000
            return EpisodeSpec(self.environment, row=product_row(a, b), seed=index)
        return EpisodeSpec(self.environment, split=self.split, index=index, seed=0)


async def run_one(served: Served, workload: Workload, index: int, tally: Tally) -> str:
    """One episode, start to close, under the watchdog; returns (and tallies) its ending."""
    async def episode() -> str:
        async with served.open(workload.spec(index)) as handle:
            played = await play(handle, wrong_on_purpose(index, workload.wrong_share), workload.first_tool,
                                time.perf_counter, workload.python_sleep_s)
        tally.calls.extend(played.calls)
        tally.tool_outputs_wrong += played.tool_output_wrong
        return played.ending

    try:
        label = await asyncio.wait_for(episode(), workload.episode_timeout_s)
    except asyncio.TimeoutError:
        label = f"HUNG (no ending within {workload.episode_timeout_s:g} s)"
    except Exception as exc:  # noqa: BLE001 - every ending is counted, by kind
        label = ending(exc)
    tally.endings[label] += 1
    return label


async def run_many(served: Served, workload: Workload, indexes: Iterable[int], concurrency: int,
                   tally: Tally | None = None, stop: Callable[[], bool] = lambda: False) -> tuple[Tally, float]:
    """Runs the episodes ``indexes`` with ``concurrency`` at once (until ``stop()``); returns the tally and
    the wall time."""
    tally = tally or Tally()
    queue = collections.deque(indexes)

    async def worker() -> None:
        while queue and not stop():
            await run_one(served, workload, queue.popleft(), tally)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return tally, time.perf_counter() - start


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (inclusive method); NaN for no values."""
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]
