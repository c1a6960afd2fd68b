"""Starting the tools' machinery: the sandbox executor, the calculator's worker pool, the answer verifier
(the reward router's Scorer) and a thread pool, with one function that closes what was started."""

from __future__ import annotations

import concurrent.futures
import logging
import os
from collections.abc import Callable

from reward_service.environments.answer_check import AnswerVerifier, ScorerVerifier
from reward_service.environments.calculator import evaluate_job
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.tool_runner import ToolRunner
from reward_service.pool.worker_pool import PoolConfig, WorkerPool
from reward_service.router.config import ScorerConfig
from reward_service.router.scoring import Scorer
from sandbox import Executor, create_executor, create_remote_executor

logger = logging.getLogger(__name__)

#: Address-space limit of a calculator worker (sympy needs room; a runaway power is stopped by time first).
CALCULATOR_MEMORY_MB = 2048
#: Threads per sandbox slot for the blocking calls (programs, plugin tools).
THREADS_PER_SLOT = 4


def start_tools(config: EnvironmentsConfig, executor: Executor | None = None,
                verifier: AnswerVerifier | None = None) -> tuple[ToolRunner, Callable[[], None]]:
    """The tool runner and a function that closes what this started (not ``executor``/``verifier`` when
    given): the config's local sandbox or ``sandbox_endpoint``, the calculator pool, a Scorer with the
    default task registry. Whatever started is closed again if a later part fails to start."""
    closers: list[Callable[[], None]] = []
    slots = config.sandbox_concurrency or _cpus()
    try:
        if executor is None:
            executor = create_remote_executor(config.sandbox_endpoint, call_timeout_s=config.tool_deadline_s) \
                if config.sandbox_endpoint else create_executor(config.sandbox_backend, concurrency=slots)
            closers.append(executor.close)
        calculator = WorkerPool(evaluate_job, PoolConfig(num_workers=config.calculator_workers,
                                                         item_timeout_s=config.calculator_timeout_s,
                                                         memory_limit_mb=CALCULATOR_MEMORY_MB,
                                                         preload_modules=("sympy",), name="calculator"))
        closers.append(lambda: calculator.close(grace_s=0.0))
        if verifier is None:
            scorer = Scorer(ScorerConfig(workers=config.verify_workers, item_timeout_s=config.verify_timeout_s))
            closers.append(scorer.close)
            verifier = ScorerVerifier(scorer)
        threads = concurrent.futures.ThreadPoolExecutor(max_workers=THREADS_PER_SLOT * slots,
                                                        thread_name_prefix="episode-tool")
        closers.append(lambda: threads.shutdown(wait=False, cancel_futures=True))
    except Exception:
        close_all(closers)
        raise
    return ToolRunner(config, executor, calculator, verifier, threads), lambda: close_all(closers)


def close_all(closers: list[Callable[[], None]]) -> None:
    """Runs each closer, last started first; one that fails is logged and the rest still run."""
    for close in reversed(closers):
        try:
            close()
        except Exception:  # noqa: BLE001 - close the rest
            logger.exception("closing the session manager's machinery failed")


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
