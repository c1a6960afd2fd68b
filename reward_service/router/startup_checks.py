"""A server's start-up checks of its tasks, once, in a background thread: a warm-up (every task's version
hash, which the first ListTasks would otherwise compute), every task's ``self_check()`` (known-answer
cases), then every task's canaries (``canary_check.py``).

Start-up does not wait for them (ifeval's self-check alone imports nltk, seconds): the server serves at
once and each task's findings go into one :class:`SelfCheckReport` as they come, logged as before
(an error per failed self-check, a warning per rewarded canary). ``wait`` blocks until all are done,
which ``--strict-canaries`` does before serving.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence

from reward_core.contract import TaskChecks
from reward_service.router.canary_check import (
    CANARY_BUDGET_S,
    CanaryReport,
    CanaryResult,
    log_canary_report,
    run_canaries,
)
from reward_service.task_api import Task

logger = logging.getLogger(__name__)

#: What a task's ``self_check`` may raise and still be reported as a failure rather than propagated.
SELF_CHECK_ERRORS = (ValueError, TypeError, KeyError, ArithmeticError, AttributeError, RuntimeError,
                     ImportError, LookupError)


@dataclasses.dataclass(frozen=True)
class SelfCheckReport:
    """What the start-up checks found: self-check failures (task -> lines) and every task's canary run.

    Both dicts fill in as each task's check ends (in a server, in the background): a task absent from
    ``failures`` passed or is not checked yet (``self_checks_done`` says which).
    """

    failures: dict[str, list[str]]
    #: Task -> its canary run, filled in as each task's run ends.
    canaries: dict[str, CanaryReport] = dataclasses.field(default_factory=dict)
    #: Set once every task's self-check has run.
    self_checks_done: threading.Event = dataclasses.field(default_factory=threading.Event)

    @property
    def canary_failures(self) -> dict[str, tuple[CanaryResult, ...]]:
        """The tasks that rewarded a canary, and those canaries."""
        return {name: report.failures for name, report in list(self.canaries.items()) if report.failures}

    def of(self, name: str) -> TaskChecks:
        """Task ``name``'s checks so far, as ListTasks reports them (``done`` once its canaries have run)."""
        failures = tuple(self.failures.get(name, ()))
        canaries = self.canaries.get(name)
        if canaries is None:
            return TaskChecks(self_check_failures=failures)
        failed = canaries.failures
        return TaskChecks(True, failures, len(canaries.results) + len(canaries.over_budget),
                          len(canaries.results) - len(failed), len(failed), tuple(r.canary for r in failed),
                          canaries.skipped)


def self_check_task(name: str, task: Task) -> list[str]:
    """Runs ``task.self_check()``; one line per failure (one that raises is itself a failure)."""
    try:
        return list(task.self_check())
    except SELF_CHECK_ERRORS as exc:
        return [f"self_check raised {type(exc).__name__}: {exc}"]


def log_self_check_failure(name: str, lines: Sequence[str]) -> None:
    """Logs a task's failed self-check (an error: its rewards are not trustworthy)."""
    logger.error("task %r failed its self-check (%d problems); its rewards are not trustworthy: %s",
                 name, len(lines), "; ".join(lines[:5]))


class StartupChecks:
    """The self-checks, then (``canaries``) the canaries, of ``names`` (tasks from ``get``), run once in a
    background thread; each task's findings go into ``report`` (and the log) as they are done. ``wait``
    blocks until all are; ``stop`` ends the run after the check in progress (a server closing first)."""

    def __init__(self, names: Sequence[str], get: Callable[[str], Task], report: SelfCheckReport,
                 canaries: bool = True, budget_s: float = CANARY_BUDGET_S,
                 warm: Callable[[], object] | None = None) -> None:
        self.report = report
        self._names, self._get, self._canaries, self._budget_s = list(names), get, canaries, budget_s
        self._warm = warm
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="startup-checks", daemon=True)

    @property
    def names(self) -> frozenset[str]:
        """The tasks this run checks (those registered when it began)."""
        return frozenset(self._names)

    def start(self) -> StartupChecks:
        self._thread.start()
        return self

    def run(self) -> StartupChecks:
        """Runs the checks in the calling thread (a CLI or a test that wants them done)."""
        self._run()
        return self

    def _run(self) -> None:
        try:
            self._warm_up()
            self._self_checks()
            if self._canaries:
                self._canary_runs()
        finally:
            self.report.self_checks_done.set()
            self._done.set()

    def _warm_up(self) -> None:
        """``warm`` first (a server: every task's version hash, seconds of hashing, so that the first
        ListTasks answers from memory); a failure here is logged, the one who asks next meets it again."""
        if self._warm is None or self._stop.is_set():
            return
        try:
            self._warm()
        except Exception:  # noqa: BLE001 -- a warm-up only; ListTasks computes and reports it itself
            logger.warning("warming up before the start-up checks failed", exc_info=True)

    def _self_checks(self) -> None:
        for name in self._names:
            if self._stop.is_set():
                return
            lines = self_check_task(name, self._get(name))
            if lines:
                self.report.failures[name] = lines
                log_self_check_failure(name, lines)
        self.report.self_checks_done.set()
        logger.info("self-checks: %d tasks checked, %d failed", len(self._names),
                    sum(1 for n in self._names if n in self.report.failures))

    def _canary_runs(self) -> None:
        for name in self._names:
            if self._stop.is_set():
                return
            canary_report = run_canaries(name, self._get(name), self._budget_s, self._stop)
            self.report.canaries[name] = canary_report
            log_canary_report(canary_report)
        ran = [r for r in self.report.canaries.values() if r.results]
        logger.info("canaries: %d tasks checked, %d rewarded one", len(ran), sum(1 for r in ran if r.failures))

    def wait(self, timeout: float | None = None) -> bool:
        """Whether every check has run (or the run stopped) within ``timeout`` seconds."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
