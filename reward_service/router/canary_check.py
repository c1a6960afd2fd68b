"""Runs a task's canaries (``Task.canaries``) at start-up and says which it rewarded.

Each canary is scored as the server scores a rollout: ``check_reference``, then ``score_batch`` (and,
for a groupwise task, ``score_group`` on a group of one); an unscored outcome or a non-finite score
(both answered unscored by the server) passes, a score above the canary's ceiling fails, and so
does an exception (verifiers never raise on model output) or a rejected reference (the canary
checks nothing). Canaries run in the server process (``startup_checks.StartupChecks``: in a background
thread, so start-up does not wait for them unless ``--strict-canaries`` must): a task that calls another
service (``runs_in_server``, an ``endpoint``) is skipped, saying so, and a task's remaining canaries
are skipped once its run passes ``budget_s``.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from reward_core.contract import RolloutStatus
from reward_service.task_api import Canary, InvalidReference, Task, TaskInput, TaskOutcome

logger = logging.getLogger(__name__)

#: Seconds one task's canaries may take before the rest of them are skipped.
CANARY_BUDGET_S = 10.0


class CanaryFailure(ValueError):
    """A task rewarded one of its canaries and the server was told to refuse to start (``--strict-canaries``)."""


@dataclass(frozen=True)
class CanaryResult:
    """One canary's outcome: ``status`` is the rollout status the server would answer (or ``RAISED``)."""

    canary: str
    passed: bool
    score: float
    status: str
    ceiling: float
    detail: str = ""
    elapsed_s: float = 0.0

    def describe(self) -> str:
        if self.status == "RAISED" or self.status == RolloutStatus.INVALID_REFERENCE.name:
            return f"{self.canary!r}: {self.detail}"
        return f"{self.canary!r} scored {self.score:g} (ceiling {self.ceiling:g}; {self.detail or self.status})"


@dataclass(frozen=True)
class CanaryReport:
    """One task's canary run: its results, or why none ran (``skipped``); ``over_budget`` canaries were
    not run because the run took longer than its budget."""

    task: str
    results: tuple[CanaryResult, ...] = ()
    skipped: str = ""
    over_budget: tuple[str, ...] = ()

    @property
    def failures(self) -> tuple[CanaryResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    @property
    def passed(self) -> bool:
        return not self.failures


def skip_reason(task: Task) -> str:
    """Why ``task``'s canaries are not run here ("" when they are)."""
    if task.runs_in_server:
        return "runs in the server, calling another service (sandbox or model): its canaries are not run at start-up"
    if task.endpoint_field:
        return "calls another service (its endpoint): its canaries are not run at start-up"
    return ""


def run_canaries(name: str, task: Task, budget_s: float = CANARY_BUDGET_S,
                 stop: threading.Event | None = None) -> CanaryReport:
    """Runs ``task``'s canaries (see the module docstring); ``stop`` set ends the run between two."""
    reason = skip_reason(task)
    if reason:
        return CanaryReport(name, skipped=reason)
    try:
        canaries = list(task.canaries())
    except Exception as exc:  # noqa: BLE001 -- a plugin's broken declaration is reported, never fatal here
        return CanaryReport(name, (CanaryResult("canaries()", False, math.nan, "RAISED", 0.0,
                                                f"canaries() raised {type(exc).__name__}: {exc}"),))
    if not canaries:
        return CanaryReport(name, skipped=task.canary_exemption or "declares no canaries")
    start = time.perf_counter()
    results = []
    for i, canary in enumerate(canaries):
        if stop is not None and stop.is_set():
            break
        if time.perf_counter() - start > budget_s:
            return CanaryReport(name, tuple(results), over_budget=tuple(c.name for c in canaries[i:]))
        results.append(_run_one(task, canary))
    return CanaryReport(name, tuple(results))


def _run_one(task: Task, canary: Canary) -> CanaryResult:
    start = time.perf_counter()
    try:
        outcome = _score(task, canary)
    except InvalidReference as exc:
        outcome = TaskOutcome(math.nan, RolloutStatus.INVALID_REFERENCE, detail=str(exc))
    except Exception as exc:  # noqa: BLE001 -- a verifier that raises on model output is what a canary finds
        return CanaryResult(canary.name, False, math.nan, "RAISED", canary.ceiling,
                            f"raised {type(exc).__name__}: {str(exc)[:200]}", time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    if outcome.status == RolloutStatus.INVALID_REFERENCE:
        return CanaryResult(canary.name, False, math.nan, outcome.status.name, canary.ceiling,
                            f"the canary's reference was rejected, so it checks nothing: {outcome.detail[:200]}",
                            elapsed)
    scored = outcome.status.scored and math.isfinite(outcome.score)
    status = outcome.status.name if scored or not outcome.status.scored else RolloutStatus.ERROR.name
    passed = not scored or outcome.score <= canary.ceiling
    return CanaryResult(canary.name, passed, outcome.score, status, canary.ceiling,
                        (outcome.extracted and f"extracted {outcome.extracted[:80]!r}") or outcome.detail[:120],
                        elapsed)


def _score(task: Task, canary: Canary) -> TaskOutcome:
    """The canary's outcome as the server would reach it (a groupwise task: a group of one)."""
    task.check_reference(canary.reference)
    item = TaskInput(canary.completion, canary.reference, canary.prompt)
    outcomes = task.score_batch([item])
    if len(outcomes) != 1:
        raise RuntimeError(f"score_batch returned {len(outcomes)} outcomes for 1 item")
    if task.groupwise and outcomes[0].status.scored:
        outcomes = task.score_group([item], outcomes)
    return outcomes[0]


def log_canary_report(report: CanaryReport) -> None:
    """Logs what a task's canary run found: a warning per canary it rewarded, and why any were not run."""
    for result in report.failures:
        logger.warning("task %r failed canary %s: an adversarial completion it must not reward",
                       report.task, result.describe())
    if report.skipped:
        logger.info("task %r: no canaries run: %s", report.task, report.skipped)
    if report.over_budget:
        logger.warning("task %r: %d canaries not run (its canaries took over %gs): %s", report.task,
                       len(report.over_budget), CANARY_BUDGET_S, ", ".join(report.over_budget))


def failure_message(reports: dict[str, CanaryReport]) -> str:
    """Why a server with ``--strict-canaries`` refuses to start: each task and the canaries it rewarded."""
    lines = [f"{name}: " + "; ".join(r.describe() for r in report.failures)
             for name, report in sorted(reports.items()) if report.failures]
    return ("tasks rewarded adversarial completions (canaries) at start-up, and --strict-canaries refuses to "
            "start: " + " | ".join(lines) + ". Fix the task or its options, or start without --strict-canaries "
            "(each failure is then logged as a warning)")
