"""The scoring engine: rollouts in, one result per rollout out, verified in worker processes.

Used by the gRPC servicer and by ``reward-service score`` in-process, so both
score exactly the same way. Per request, identical (task, completion,
reference, prompt, metadata) items are verified once; across requests, the reward cache
(``reward_cache.py``) answers a repeated rollout of a deterministic task before anything is
queued, keyed by its task's verifier version (``versioning.py``, stamped on every result). The
rollouts of a groupwise task are then shaped per group (``group_stage.py``): when the request's
results are built, or, for a stage that waits on a judge, on the in-server threads before the
request is done (never on the server's event loop).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import CancelledError, Executor, Future, ThreadPoolExecutor
from typing import Any

from reward_core.contract import (
    Rollout,
    RolloutResult,
    RolloutStatus,
    ScoreBatchResult,
    TaskInfo,
    group_stats,
)
from reward_core.log_context import request_context
from reward_core.sandbox_contract import Cancellation
from reward_service.pool.fair_queue import AdmissionRefused, FairQueue
from reward_service.pool.worker_pool import (
    ItemTimeout,
    JobError,
    PoolClosed,
    PoolConfig,
    PoolError,
    WorkerCrashed,
    WorkerPool,
)
from reward_service.router import cache_rows
from reward_service.router.cache_answers import cached_result_fields as cached_result_fields  # (re-exported)
from reward_service.router.cache_answers import stored_answer
from reward_service.router.config import ScorerConfig
from reward_service.router.group_stage import Group, find_groups, shape_group, shape_groups
from reward_service.router.registry import TaskRegistry, build_registry, start_checks
from reward_service.router.reward_cache import RewardCache, cache_key
from reward_service.router.rows_from_cache import RangeScan
from reward_service.router.startup_checks import SelfCheckReport
from reward_service.router.worker_job import ItemOutcome, ScoreItem, init_worker, score_items
from reward_service.task_api import InvalidReference, Task, TaskInput, TaskOutcome, cancel_token_set
from reward_service.tasks.explanation import explain_exception, explain_outcome, explain_unscored

logger = logging.getLogger(__name__)

# A job of several items should take about this share of the item time limit.
JOB_SHARE_OF_LIMIT = 0.05

# Imported in the fork server so every (re)started worker begins warm.
PRELOAD_MODULES = ("sympy", "reward_service.router.worker_job", "reward_service.verifiers.math",
                   # the instruction-following tasks' language tools (nltk takes seconds to import)
                   "nltk.tokenize.punkt", "nltk.tokenize.destructive", "langdetect.detector_factory",
                   # rescore's workers (forked from the same server) answering rows from the cache file
                   "reward_service.router.rows_from_cache")


class QueueFullError(RuntimeError):
    """The engine cannot take more items now; the caller should back off ``retry_after_ms``."""

    def __init__(self, message: str, retry_after_ms: int, limit_name: str) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms
        self.limit_name = limit_name

#: A retry hint is at least this and at most MAX_RETRY_HINT_MS.
MIN_RETRY_HINT_MS = 100
MAX_RETRY_HINT_MS = 30_000

#: Pool jobs at once per worker (the rest waits in the fair queue, per client).
JOBS_IN_POOL_PER_WORKER = 2

#: Why a member of a group whose (waiting) group stage did not run is answered UNAVAILABLE.
GROUP_NOT_RANKED = "its group was not ranked: the server is shutting down; send the group again (any replica)"


JobEntry = tuple[ScoreItem, Future]


@dataclasses.dataclass(frozen=True)
class _CachePolicy:
    """One task's verifier version, whether its outcomes go through the reward cache, and the rollout
    fields it never reads (``Task.cache_ignores``)."""

    version: str
    cached: bool
    ignores: frozenset[str]
    groupwise: bool


def _store_outcome(cache: RewardCache, key: bytes, task: str, version: str, fut: Future) -> None:  # a done callback
    """Stores a verified item's outcome (the cache keeps scored ones only), with its result line's fields for a
    task the cache answers outright (no group stage; ``stored_answer``)."""
    if fut.cancelled() or fut.exception(timeout=0) is not None:
        return
    outcome = fut.result(timeout=0).outcome
    cache.put(key, outcome, stored_answer(outcome, task, version) if task and cache.path else None)


class PendingBatch:
    """A submitted request: its results become available when every item is done (and every group whose
    stage waits on a judge is ranked, on the group runner's threads)."""

    def __init__(self, request_id: str, rollouts: Sequence[Rollout], timeout_s: float, client_id: str = "",
                 task_of: Callable[[str], Task] | None = None, group_runner: Executor | None = None) -> None:
        self.request_id = request_id
        self._task_of = task_of  # for the group stage; None: the request has no groupwise task
        # Runs the group stages that wait (Task.group_stage_waits: a judge), one job per group, before the
        # batch is done: never on the event loop that answers the call. None: they run in result().
        self._group_runner = group_runner
        self._shaped: dict[int, ItemOutcome] = {}  # what the group runner shaped, by rollout index
        self._groups_left = 0
        self.client_id = client_id
        self.cancelled = False
        self._rollouts = list(rollouts)
        self._timeout_s = timeout_s
        self.timeout_s = timeout_s
        self._start = time.perf_counter()
        self._ready: dict[int, RolloutResult] = {}
        self._slot_future: dict[int, tuple[Future, bool]] = {}
        self._item_futures: list[Future] = []
        self._jobs: list[Future] = []
        self._lock = threading.Lock()
        self._remaining = 0
        self._done = threading.Event()
        self._callbacks: list[Callable[[PendingBatch], None]] = []
        self.cancellation = Cancellation()  # stops the running work of tasks that run in the server
        #: Task -> its verifier version, stamped on each of its results.
        self.versions: dict[str, str] = {}

    def _arm(self) -> None:
        """Starts counting completions (after every item future exists)."""
        self._remaining = len(self._item_futures)
        if not self._item_futures:
            self._items_done()
        for fut in self._item_futures:
            fut.add_done_callback(self._one_done)

    def _one_done(self, _: Future) -> None:
        with self._lock:
            self._remaining -= 1
            last = self._remaining == 0
        if last:
            self._items_done()

    def _items_done(self) -> None:
        """Every item is verified: the batch is done, or once its group runner has shaped every group."""
        runner = self._group_runner
        groups = self._find_groups() if runner is not None and not self.cancelled else []
        if runner is None or not groups:
            self._finish()
            return
        self._groups_left = len(groups)
        for group in groups:
            try:
                job = runner.submit(self._shape_one, group)
            except RuntimeError:  # the server is shutting down: result() answers the group UNAVAILABLE
                self._group_done()
                continue
            job.add_done_callback(lambda done: self._group_done() if done.cancelled() else None)

    def _shape_one(self, group: Group) -> None:
        """One group's stage, in the request's context (its cancel token and client id), as in-server jobs."""
        try:
            if not self.cancelled and self._task_of is not None:
                with cancel_token_set(self.cancellation), request_context(self.request_id, self.client_id):
                    shaped = shape_group(group, self._rollouts, self._verified(), self._task_of)
                with self._lock:
                    self._shaped.update(shaped)
        except Exception:  # a bug of ours (a task's own failure is its group's ERROR): the group stays unranked
            logger.exception("request %r: the group stage of group %r (task %r) failed", self.request_id,
                             group.group_id, group.task_name)
        finally:
            self._group_done()

    def _group_done(self) -> None:
        with self._lock:
            self._groups_left -= 1
            last = self._groups_left == 0
        if last:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, fn: Callable[[PendingBatch], None]) -> None:
        """Calls ``fn(self)`` once the batch is done (at once if already done)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(fn)
                return
        fn(self)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def cancel(self) -> None:
        """Drops jobs not yet dispatched to a worker (running ones finish or time out), and stops
        the running programs of tasks that run in the server (the code task's sandbox programs)."""
        self.cancelled = True
        for job in list(self._jobs):
            job.cancel()
        self.cancellation.cancel()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self, unfinished: str = "") -> ScoreBatchResult:
        """All results in request order; call after ``wait()`` returned True.

        With ``unfinished`` (a reason), it may be called earlier: what is verified is
        delivered and every rollout still pending is answered UNAVAILABLE (retryable) with
        that reason -- how a server going away hands back a call within its grace period.
        """
        shaped, unranked = self._group_stage()
        results = []
        for i, rollout in enumerate(self._rollouts):
            if i in self._ready:
                results.append(self._ready[i])
                continue
            fut, first = self._slot_future[i]
            if unfinished and (not fut.done() or isinstance(fut.exception(timeout=0), CancelledError)):
                results.append(unscored(rollout, RolloutStatus.UNAVAILABLE, unfinished))
            elif i in unranked:
                results.append(unscored(rollout, RolloutStatus.UNAVAILABLE, unfinished or GROUP_NOT_RANKED))
            elif i in shaped:
                results.append(result_from_outcome(rollout, shaped[i], first, self.versions.get(rollout.task, "")))
            else:
                results.append(result_from_future(rollout, fut, first, self._timeout_s,
                                                  self.versions.get(rollout.task, "")))
        results = [_stamped(r, self.versions.get(r.task, "")) for r in results]
        elapsed = (time.perf_counter() - self._start) * 1000.0
        return ScoreBatchResult(self.request_id, results, group_stats(results), elapsed)

    def rollout_ids(self, fut: Future) -> list[str]:
        """The ids of the rollouts one item future answers (identical rollouts share one)."""
        return [self._rollouts[i].id for i, (slot, _) in self._slot_future.items() if slot is fut]

    def _verified(self) -> dict[int, ItemOutcome]:
        """The outcomes verified so far, by rollout index."""
        return {i: fut.result(timeout=0) for i, (fut, _) in self._slot_future.items()
                if fut.done() and not fut.cancelled() and fut.exception(timeout=0) is None}

    def _find_groups(self) -> list[Group]:
        """The groups whose stage the group runner runs: those of a task whose stage waits."""
        task_of = self._task_of
        if task_of is None:
            return []
        return [g for g in find_groups(self._rollouts, self._verified(), task_of)
                if task_of(g.task_name).group_stage_waits]

    def _group_stage(self) -> tuple[dict[int, ItemOutcome], set[int]]:
        """The outcomes of the groupwise rollouts verified so far, shaped per group (see ``group_stage``),
        and the members of the groups whose stage waits and did not run (answered UNAVAILABLE): a call
        handed back early, or a server shutting down. A stage that waits never runs here, on the loop."""
        if self._task_of is None:
            return {}, set()
        if self._group_runner is None:
            return shape_groups(self._rollouts, self._verified(), self._task_of), set()
        with self._lock:
            shaped = dict(self._shaped)
        verified = self._verified()
        unranked: set[int] = set()
        for group in find_groups(self._rollouts, verified, self._task_of):
            if self._task_of(group.task_name).group_stage_waits:
                unranked.update(i for i in group.members if i not in shaped)
            else:
                shaped.update(shape_group(group, self._rollouts, verified, self._task_of))
        return shaped, unranked


class Scorer:
    """Owns the task registry and the worker pool. Create it before any gRPC server.

    Unique items of one task go to workers in jobs of several items (sized so a
    job takes a small share of the item limit; a task may set ``batch_size``).
    A job that times out, crashes or fails is retried item by item, so only
    the item at fault is answered TIMEOUT or ERROR.
    """

    def __init__(self, config: ScorerConfig) -> None:
        self.config = config
        self.registry: TaskRegistry = build_registry(config.rewards, endpoints=config.endpoints,
                                                     strict_plugins=config.strict_plugins)
        # A plugin that failed to load is reported like a failed self-check.
        self.self_check_report = SelfCheckReport({p: [r] for p, r in self.registry.plugin_failures.items()})
        self.self_check_failures = self.self_check_report.failures
        pool_config = PoolConfig(
            num_workers=config.workers,
            item_timeout_s=config.item_timeout_s,
            max_queue=config.max_queue,
            memory_limit_mb=config.memory_limit_mb,
            preload_modules=PRELOAD_MODULES,
        )
        self.pool = WorkerPool(score_items, pool_config, initializer=init_worker,
                               initargs=(config.rewards, config.endpoints))
        self.queue = FairQueue(self.pool.submit, window=JOBS_IN_POOL_PER_WORKER * config.workers,
                               max_items=config.max_queue, max_client_items=config.max_client_queue)
        self._in_server = ThreadPoolExecutor(max_workers=config.io_threads, thread_name_prefix="io-task")
        self._item_ms: dict[str, float] = {}
        #: Repeated rollouts of deterministic tasks are answered from here (None: --reward-cache-entries 0).
        self.cache = RewardCache(config.reward_cache_entries, config.reward_cache_mb * 2**20,
                                 config.reward_cache or None, config.reward_cache_disk_entries) \
            if config.reward_cache_entries else None
        self._policies: dict[str, _CachePolicy] = {}
        # The tasks' self-checks, then their canaries, in the background once the workers are up (not
        # competing with their start): they fill self_check_report as each task's are done.
        self.startup_checks = start_checks(self.registry, self.self_check_report)

    def list_tasks(self) -> list[TaskInfo]:
        """Every task's info, with what its start-up checks found so far (the tasks they check)."""
        checked = self.startup_checks.names
        return [dataclasses.replace(info, checks=self.self_check_report.of(info.name)) if info.name in checked
                else info for info in self.registry.infos()]

    def submit(self, rollouts: Sequence[Rollout], request_id: str = "", item_timeout_s: float = 0.0,
               client_id: str = "", invalid: Mapping[int, str] | None = None) -> PendingBatch:
        """Queues every rollout in ``client_id``'s queue; raises QueueFullError, queueing nothing, when
        the items would pass the server's or the client's pending limit. ``invalid`` (index -> why):
        rollouts answered INVALID_ROLLOUT at once, never verified."""
        invalid = invalid or {}
        timeout = item_timeout_s or self.config.item_timeout_s
        tasks = {r.task for r in rollouts}
        groupwise = any(task in self.registry and self.registry.get(task).groupwise for task in tasks)
        waits = any(task in self.registry and self.registry.get(task).group_stage_waits for task in tasks)
        batch = PendingBatch(request_id, rollouts, timeout, client_id, self.registry.get if groupwise else None,
                             self._in_server if waits else None)
        unique: dict[tuple, Future] = {}
        by_task: dict[str, list[JobEntry]] = {}
        queued = 0
        for i, rollout in enumerate(rollouts):
            early = unscored(rollout, RolloutStatus.INVALID_ROLLOUT, invalid[i]) if i in invalid else \
                self._precheck(rollout, request_id)
            if early is not None:
                batch._ready[i] = early
                if rollout.task in self.registry:
                    batch.versions[rollout.task] = self._policy(rollout.task).version
                continue
            key = rollout.dedup_key()
            first = key not in unique
            policy = self._policy(rollout.task)
            batch.versions[rollout.task] = policy.version
            if first:
                outcome, cache_at = self._cache_lookup(rollout, policy, key)
                if outcome is not None and not policy.groupwise:  # answered from the cache: nothing to verify
                    batch._ready[i] = result_from_outcome(rollout, ItemOutcome(outcome, 0.0), True, policy.version)
                    continue
                unique[key] = Future()
                if outcome is not None:  # a groupwise task's cached outcome still goes through its group stage
                    unique[key].set_result(ItemOutcome(outcome, 0.0))
                else:
                    if cache_at is not None and self.cache is not None:
                        unique[key].add_done_callback(functools.partial(
                            _store_outcome, self.cache, cache_at, "" if policy.groupwise else rollout.task,
                            policy.version))
                    item = ScoreItem(rollout.task, TaskInput(rollout.completion, rollout.reference, rollout.prompt,
                                                             rollout.metadata))
                    by_task.setdefault(rollout.task, []).append((item, unique[key]))
                    queued += 1
            batch._slot_future[i] = (unique[key], first)
        batch._item_futures = list(unique.values())
        try:
            self.queue.reserve(client_id, queued)
        except AdmissionRefused as exc:
            raise QueueFullError(f"{exc} (retry in about {self.retry_after_ms()} ms)", self.retry_after_ms(),
                                 exc.limit_name) from None
        for task, entries in by_task.items():
            size = self._job_size(task)
            limit = max(timeout, self.registry.get(task).time_limit_s)
            for start in range(0, len(entries), size):
                self._submit_job(batch, entries[start:start + size], limit)
        batch._arm()
        return batch

    def _policy(self, task: str) -> _CachePolicy:
        """The task's verifier version and whether (and by which fields) its outcomes are cached."""
        policy = self._policies.get(task)
        if policy is None:
            try:
                cached = self.cache is not None and self.registry.cacheable(task)
                policy = _CachePolicy(self.registry.version(task), cached,
                                      frozenset(self.registry.get(task).cache_ignores),
                                      bool(self.registry.get(task).groupwise))
            except (OSError, ValueError, TypeError) as exc:  # e.g. a data file it names cannot be read
                logger.warning("task %r: no verifier version (%s); its results are unstamped and never cached",
                               task, exc)
                policy = _CachePolicy("", False, frozenset(), False)
            self._policies[task] = policy
        return policy

    def _cache_lookup(self, rollout: Rollout, policy: _CachePolicy,
                      dedup_key: tuple) -> tuple[TaskOutcome | None, bytes | None]:
        """(the cached outcome or None, the rollout's cache key or None when its task is not cached)."""
        if not policy.cached or self.cache is None:
            return None, None
        key = cache_key(rollout, policy.version, policy.ignores, dedup_key)
        return self.cache.get(key), key

    def answer_from_cache(self, rollouts: Sequence[Rollout]) -> list[dict[str, Any] | None]:
        """Per rollout, the fields of its result line when the reward cache answers it, else None (queues
        nothing; ``cache_rows.answer_from_cache``)."""
        return cache_rows.answer_from_cache(self.registry, self.cache, self._answerable, rollouts)

    def answer_rows(self, rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[dict[str, Any] | None]:
        """The same for rows (task, completion, reference) of rollouts without a prompt or metadata."""
        return cache_rows.answer_rows(self.registry, self.cache, self._answerable, rows)

    def rows_plan(self, tasks: Iterable[str]) -> tuple[str, dict[str, tuple[str, tuple[str, ...]]]]:
        """The cache file and what rescore's worker processes may answer from it (``cache_rows.rows_plan``)."""
        return cache_rows.rows_plan(self.registry, self.cache, self._answerable, tasks)

    def scan_rows(self, path: str, default_task: str, parts: int, out_dir: str) -> list[RangeScan] | None:
        """``rescore``'s lines answered from the cache file by ``parts`` worker processes (``cache_rows``)."""
        return cache_rows.scan_file_rows(self.registry, self.cache, self._answerable, path, default_task, parts,
                                         out_dir)

    def _answerable(self, task: str) -> _CachePolicy | None:
        """The task's cache policy when the cache may answer its rollouts outright (a known, cached task
        without a group stage), else None."""
        if task not in self.registry:
            return None
        policy = self._policy(task)
        return policy if policy.cached and not policy.groupwise else None

    def retry_after_ms(self) -> int:
        """A client's back-off hint: about the time the workers need for what is pending now."""
        per_item_ms = max(self._item_ms.values(), default=1.0)
        estimate = self.queue.pending_items() * per_item_ms / self.config.workers
        return int(min(MAX_RETRY_HINT_MS, max(MIN_RETRY_HINT_MS, estimate)))

    def score(self, rollouts: Sequence[Rollout], request_id: str = "", item_timeout_s: float = 0.0) -> ScoreBatchResult:
        """Blocking convenience: submit and wait for every result."""
        batch = self.submit(rollouts, request_id, item_timeout_s)
        batch.wait()
        return batch.result()

    def _job_size(self, task: str) -> int:
        """Items per job: the task's own batch size, else what fits in a small share of the limit."""
        declared = self.registry.get(task).batch_size
        if declared:
            return declared
        estimate_ms = self._item_ms.get(task)
        if estimate_ms is None:
            return self.config.job_size
        budget_ms = self.config.item_timeout_s * 1000.0 * JOB_SHARE_OF_LIMIT
        return max(1, min(self.config.job_size, int(budget_ms / max(estimate_ms, 1e-3))))

    def _submit_job(self, batch: PendingBatch, entries: list[JobEntry], timeout: float, attempt: int = 0) -> None:
        items = [item for item, _ in entries]
        if self.registry.get(items[0].task).runs_in_server:
            job = self._in_server.submit(self._score_here, items, batch.cancellation, batch.request_id,
                                         batch.client_id)
            job.add_done_callback(lambda _: self.queue.release(batch.client_id, len(items)))
        else:
            job = self.queue.submit(batch.client_id, items, timeout, len(entries))
        batch._jobs.append(job)
        job.add_done_callback(lambda done: self._job_done(batch, entries, timeout, done, attempt))

    def _job_done(self, batch: PendingBatch, entries: list[JobEntry], timeout: float, job: Future,
                  attempt: int) -> None:
        """Resolves the job's item futures, or retries after a failure: the items of a failed job
        of several items one by one (which one was at fault is unknown), and an item whose worker
        crashed once more; an item that fails alone again is answered ERROR (or TIMEOUT)."""
        try:
            outcomes: list[ItemOutcome] = job.result(timeout=0)
        except (ItemTimeout, WorkerCrashed, JobError) as exc:
            retry = len(entries) > 1 or (isinstance(exc, WorkerCrashed) and attempt == 0)
            if retry and not batch.cancelled:
                if isinstance(exc, WorkerCrashed):
                    logger.warning("request %r: a worker crashed on a job of %d %s item(s) (%s); retrying them "
                                   "one by one", batch.request_id, len(entries), entries[0][0].task, exc)
                for entry in entries:
                    self._retry_alone(batch, entry, timeout)
                return
            error: BaseException = exc
        except (PoolError, CancelledError) as exc:
            error = exc if isinstance(exc, PoolError) else CancelledError()
        else:
            task = entries[0][0].task
            item_ms = outcomes[0].elapsed_ms if outcomes else 0.0
            self._item_ms[task] = 0.8 * self._item_ms.get(task, item_ms) + 0.2 * item_ms
            for (_, fut), outcome in zip(entries, outcomes):
                fut.set_result(outcome)
            return
        for _, fut in entries:
            log_item_failure(batch, entries[0][0].task, fut, error)
            fut.set_exception(error)

    def _score_here(self, items: list[ScoreItem], cancellation: Cancellation, request_id: str = "",
                    client_id: str = "") -> list[ItemOutcome]:
        """Scores a job of a task that runs in the server (see ``Task.runs_in_server``), in its request's
        context (a judge task shares its endpoint fairly by the client id: ``current_client_id()``).

        Failures are reported like a worker's (JobError), so the retry rules are the same.
        """
        task = self.registry.get(items[0].task)
        start = time.perf_counter()
        try:
            with cancel_token_set(cancellation), request_context(request_id, client_id):
                outcomes = task.score_batch([item.input for item in items])
        except Exception as exc:  # noqa: BLE001 -- a task's failure fails its job, as in a worker
            raise JobError(type(exc).__name__, str(exc), traceback.format_exc()) from exc
        if len(outcomes) != len(items):
            raise JobError("RuntimeError",
                           f"task {task.name!r} returned {len(outcomes)} outcomes for {len(items)} items")
        per_item_ms = (time.perf_counter() - start) * 1000.0 / len(items)
        return [ItemOutcome(outcome, per_item_ms) for outcome in outcomes]

    def _retry_alone(self, batch: PendingBatch, entry: JobEntry, timeout: float) -> None:
        self.queue.force_reserve(batch.client_id, 1)  # a retry is never refused admission
        self._submit_job(batch, [entry], timeout, attempt=1)

    def _precheck(self, rollout: Rollout, request_id: str = "") -> RolloutResult | None:
        """Answers at once what needs no worker: unknown task, missing reference fields, and a
        ``check_reference`` that fails (a task bug: ERROR, unscored) rather than rejecting the reference."""
        if rollout.task not in self.registry:
            return unscored(rollout, RolloutStatus.UNKNOWN_TASK, self.registry.unknown_message(rollout.task))
        try:
            self.registry.get(rollout.task).check_reference(rollout.reference)
        except InvalidReference as exc:
            return unscored(rollout, RolloutStatus.INVALID_REFERENCE, str(exc))
        except Exception as exc:  # noqa: BLE001 -- a task plugin's bug fails its rollout, not the request
            logger.warning("request %r: task %r: check_reference raised on rollout %r", request_id, rollout.task,
                           rollout.id, exc_info=exc)
            return unscored(rollout, RolloutStatus.ERROR,
                            f"task {rollout.task!r} failed checking the reference: {type(exc).__name__}: {exc}",
                            explanation=explain_exception(type(exc).__name__, str(exc), rollout.task))
        if not rollout.group_id and self.registry.get(rollout.task).groupwise:
            return unscored(rollout, RolloutStatus.INVALID_REFERENCE,
                            f"task {rollout.task!r} scores each completion against its group: give the rollout "
                            "a group_id (the completions of one prompt share one) and send the group in one request")
        return None

    def drop_queued(self) -> int:
        """Cancels every job no worker has taken yet (shutdown); returns how many."""
        return self.queue.drop_queued()

    def close(self) -> None:
        self.startup_checks.stop()
        self.queue.drop_queued()
        self._in_server.shutdown(wait=False, cancel_futures=True)
        for name in self.registry.names():
            task = self.registry.get(name)
            if task.runs_in_server and callable(getattr(task, "close", None)):
                task.close()  # the shared executor or channel of this process
        self.pool.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stamped(result: RolloutResult, version: str) -> RolloutResult:
    """``result`` with its task's verifier version (most are built with it already)."""
    return dataclasses.replace(result, verifier_version=version) if version != result.verifier_version else result


def unscored(rollout: Rollout, status: RolloutStatus, error: str, elapsed_ms: float = 0.0, *,
             explanation: str = "") -> RolloutResult:
    """An unscored result; its explanation says why (default: from ``error``)."""
    return RolloutResult(rollout.id, status, 0.0, {}, "", error, elapsed_ms, rollout.task, rollout.group_id,
                         explanation=explanation or explain_unscored(status, error))


def log_item_failure(batch: PendingBatch, task: str, fut: Future, error: BaseException) -> None:
    """Logs an item that failed for good, naming the request and its rollouts: a task that raised with
    the traceback its worker sent (the result names only the exception), a worker that crashed twice."""
    if not isinstance(error, (JobError, WorkerCrashed)):
        return
    ids = ", ".join(repr(rid) for rid in batch.rollout_ids(fut)) or "(none)"
    with request_context(batch.request_id, batch.client_id):
        if isinstance(error, JobError):
            logger.error("request %r, rollout %s: task %r raised %s: %s\n%s", batch.request_id, ids, task,
                         error.exc_type, error.message, error.remote_traceback.rstrip() or "(no traceback)")
        else:
            logger.error("request %r, rollout %s: the worker verifying it (task %r) crashed twice: %s",
                         batch.request_id, ids, task, error)


def result_from_future(rollout: Rollout, fut: Future, first: bool, timeout_s: float,
                       version: str = "") -> RolloutResult:
    """Maps a finished pool future to the rollout's result; failures become unscored statuses."""
    try:
        item: ItemOutcome = fut.result(timeout=0)
    except ItemTimeout as exc:
        limit = exc.timeout_s or timeout_s
        return unscored(rollout, RolloutStatus.TIMEOUT,
                        f"verifier exceeded the {limit:g}s item limit; its worker was replaced",
                        limit * 1000.0 if first else 0.0)
    except WorkerCrashed as exc:
        return unscored(rollout, RolloutStatus.ERROR, f"verifier worker crashed: {exc}")
    except JobError as exc:
        return unscored(rollout, RolloutStatus.ERROR, f"verifier failed: {exc}",
                        explanation=explain_exception(exc.exc_type, exc.message, rollout.task))
    except PoolClosed:
        return unscored(rollout, RolloutStatus.UNAVAILABLE, "server is shutting down; item not verified: send it again")
    except CancelledError:
        return unscored(rollout, RolloutStatus.ERROR, "cancelled before verification")
    except PoolError as exc:
        return unscored(rollout, RolloutStatus.ERROR, f"verification pool error: {exc}")
    return result_from_outcome(rollout, item, first, version)


def result_from_outcome(rollout: Rollout, item: ItemOutcome, first: bool, version: str = "") -> RolloutResult:
    """A verified (and, for a groupwise task, group-shaped) outcome as the rollout's result."""
    outcome = item.outcome
    elapsed = item.elapsed_ms if first else 0.0
    if not outcome.status.scored:
        return unscored(rollout, outcome.status, outcome.detail, elapsed, explanation=explain_outcome(outcome))
    if not math.isfinite(outcome.score):
        return unscored(rollout, RolloutStatus.ERROR, f"task returned a non-finite score {outcome.score}", elapsed)
    components = dict(outcome.components) or {rollout.task: outcome.score}
    error = outcome.detail if outcome.status == RolloutStatus.NO_ANSWER else ""
    return RolloutResult(rollout.id, outcome.status, outcome.score, components, outcome.extracted,
                         error, elapsed, rollout.task, rollout.group_id, tuple(outcome.steps),
                         explain_outcome(outcome), version)
