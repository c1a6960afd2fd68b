"""``rescore``'s questions to the engine's reward cache: per rollout (or per row of a results file), the fields of
its result line when the cache holds its outcome, with no request queued and no result object built.

``Scorer.answer_from_cache``, ``answer_rows``, ``rows_plan`` and ``scan_rows`` call these with the engine's task
registry, its reward cache and its policy (``answerable``: a task's verifier version and ignored fields when the
cache may answer it outright, else None).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from reward_core.contract import Rollout
from reward_service.router.cache_answers import cached_result_fields
from reward_service.router.registry import TaskRegistry
from reward_service.router.reward_cache import RewardCache, key_function, row_key_function
from reward_service.router.rows_from_cache import RangeScan, scan_rows
from reward_service.task_api import Task


class Policy(Protocol):
    """What these read of a task's cache policy (``scoring._CachePolicy``)."""

    @property
    def version(self) -> str: ...

    @property
    def ignores(self) -> frozenset[str]: ...


#: A task's policy when the cache may answer its rollouts outright (a known, cached task, no group stage), or None.
Answerable = Callable[[str], Policy | None]
#: A task not looked at yet.
_UNSEEN: Any = object()


def answer_from_cache(registry: TaskRegistry, cache: RewardCache | None, answerable: Answerable,
                      rollouts: Sequence[Rollout]) -> list[dict[str, Any] | None]:
    """Per rollout, the fields of its result line when the reward cache answers it, as ``Scorer.submit`` would
    answer it (see :func:`cached_result_fields`); None where a rollout must be scored (its task is unknown, not
    cached or groupwise, rejects the reference, or no outcome is stored). Queues nothing.

    For ``rescore``: a file of rollouts answered from the cache with no request and no result objects.
    """
    answers: list[dict[str, Any] | None] = [None] * len(rollouts)
    if cache is None or cache.empty:
        return answers
    # task -> (its policy, its reference check, its key function), or None when the cache may not answer it
    checks: dict[str, tuple[Policy, Callable[[Mapping[str, Any]], None], Callable[[Rollout], bytes]] | None] = {}
    asked: list[int] = []
    keys: list[bytes] = []
    ask, add_key = asked.append, keys.append
    for i, rollout in enumerate(rollouts):
        task = rollout.task
        check = checks.get(task, _UNSEEN)
        if check is _UNSEEN:
            policy = answerable(task)
            check = checks[task] = (policy, registry.get(task).check_reference,
                                    key_function(task, policy.version, policy.ignores)) if policy else None
        if check is None:
            continue
        try:  # as Scorer._precheck: the cache answers only the rollouts it lets through to their task
            check[1](rollout.reference)
        except Exception:  # noqa: BLE001 -- submit answers it: INVALID_REFERENCE, or ERROR for a task's bug
            continue
        ask(i)
        add_key(check[2](rollout))
    for i, outcome in zip(asked, cache.get_many(keys)):
        if outcome is not None:
            task = rollouts[i].task
            answers[i] = cached_result_fields(outcome, task, checks[task][0].version)  # type: ignore[index]
    return answers


def answer_rows(registry: TaskRegistry, cache: RewardCache | None, answerable: Answerable,
                rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[dict[str, Any] | None]:
    """``answer_from_cache`` of rollouts without a prompt or metadata, each given as its (task, completion,
    reference): the same answers, without a Rollout per row (``rescore`` reads 100,000s of such lines)."""
    answers: list[dict[str, Any] | None] = [None] * len(rows)
    if cache is None or cache.empty:
        return answers
    checks: dict[str, tuple[str, Callable[[Mapping[str, Any]], None],
                            Callable[[str, Mapping[str, Any]], bytes]] | None] = {}
    asked: list[int] = []
    keys: list[bytes] = []
    ask, add_key = asked.append, keys.append
    for i, (task, completion, reference) in enumerate(rows):
        check = checks.get(task, _UNSEEN)
        if check is _UNSEEN:
            policy = answerable(task)
            check = checks[task] = (policy.version, registry.get(task).check_reference,
                                    row_key_function(task, policy.version)) if policy else None
        if check is None:
            continue
        try:  # as answer_from_cache
            check[1](reference)
        except Exception:  # noqa: BLE001 -- submit answers it: INVALID_REFERENCE, or ERROR for a task's bug
            continue
        ask(i)
        add_key(check[2](completion, reference))
    for i, outcome in zip(asked, cache.get_many(keys)):
        if outcome is not None:
            task = rows[i][0]
            answers[i] = cached_result_fields(outcome, task, checks[task][0])  # type: ignore[index]
    return answers


def rows_plan(registry: TaskRegistry, cache: RewardCache | None, answerable: Answerable,
              tasks: Iterable[str]) -> tuple[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """What answering rows from the reward cache's SQLite file outside this process takes (``rescore``'s worker
    processes): the file ("" when there is none), and for each of ``tasks`` the cache may answer outright whose
    reference check is the plain one (its required fields present), (its verifier version, those fields). A row
    of any other task is left to ``answer_rows``."""
    if cache is None or not cache.path:
        return "", {}
    plan = {}
    for task in tasks:
        policy = answerable(task)
        if policy is not None:
            verifier = registry.get(task)
            if type(verifier).check_reference is Task.check_reference:
                plan[task] = (policy.version, tuple(verifier.required_reference_fields))
    return cache.path, plan


def scan_file_rows(registry: TaskRegistry, cache: RewardCache | None, answerable: Answerable, path: str,
                   default_task: str, parts: int, out_dir: str) -> list[RangeScan] | None:
    """``rescore``'s lines answered from the reward cache's SQLite file by ``parts`` worker processes, one byte
    range each (``rows_from_cache``); None where there is no file, or nothing they could answer."""
    if cache is None or not cache.path:
        return None
    scans = scan_rows(path, default_task, parts, out_dir, cache.path,
                      lambda tasks: rows_plan(registry, cache, answerable, tasks)[1])
    if scans:
        cache.count_hits(sum(len(scan.ids) for scan in scans))
    return scans
