"""What every judge task shares: its options, the one call that asks the judge and reads the verdict,
and how a failure becomes an unscored outcome.

A judge task (``judge_reference``, ``judge_rubric``, ``judge_pairwise``, ``judge_group``) runs in the
server (``runs_in_server``: one client per judge endpoint, shared by every task and caller, with its
limits and verdict cache; ``reward_service.judges``) and is never answered from the reward cache (the
judge's verdict cache answers a repeated judgement instead). Options, common to all four::

    tasks:
      judge_reference:
        options:
          judge: grader              # a judge under the rewards config's `judges:`, or its settings inline
          template: {max_tokens: 4}  # override any template field, or name another template file
          constrained: true          # send the template's closed set of verdicts as guided choices
          timeout_s: 60              # ONE deadline per verification: every call and retry of it
          temperature: 0.0
          seed: 0

A judge that fails (timeout, connection, 5xx after retries) answers JUDGE_FAILED, a rate limit
JUDGE_RATE_LIMITED, a reply the template's parser cannot read JUDGE_UNPARSEABLE: all unscored, never
0. An empty answer (or only whitespace or chat special tokens) is NO_ANSWER (0) without a call.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar

from reward_service.judges import JudgeCall, JudgeEndpoint, JudgeError, JudgeFailureKind, judge_client
from reward_service.judges.judge_metrics import judge_metrics
from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskOutcome, current_cancel_token
from reward_service.tasks.canaries import SPECIAL_TOKENS_ONLY
from reward_service.tasks.options import bool_option, int_option, number_option
from reward_service.verifiers.judging import (
    InvalidTemplate,
    JudgeTemplate,
    UnparseableVerdict,
    Verdict,
    load_template,
)
from reward_service.verifiers.math.special_tokens import strip_special_tokens

T = TypeVar("T")

#: Seconds added to ``timeout_s`` for the server's hard limit on a judge task's job.
LIMIT_MARGIN_S = 5.0
NO_JUDGE = ("task {task!r} has no judge: set tasks.{task}.options.judge to the name of a judge under the "
            "rewards config's 'judges:' (or to its settings: base_url, model, ...)")


def blank(text: str) -> bool:
    """Nothing to judge: empty, whitespace, or chat special tokens only."""
    return not strip_special_tokens(text).strip()


def _endpoint(task: str, judge: Any, endpoint: Any) -> JudgeEndpoint | None:
    if judge is not None and endpoint is not None:
        raise InvalidTaskOptions(f"task {task!r}: give 'judge' or 'endpoint', not both (they are one option)")
    value = judge if judge is not None else endpoint
    if value is None or value == "":
        return None
    if isinstance(value, str):
        raise InvalidTaskOptions(f"task {task!r}: no judge named {value!r} under the rewards config's 'judges:' "
                                 "(define it there, or give its settings here: base_url, model, ...)")
    try:
        return JudgeEndpoint.from_options(value)
    except (ValueError, TypeError) as exc:
        raise InvalidTaskOptions(f"task {task!r}: option 'judge': {exc}") from None


class JudgeTask(Task):
    """Base of the judge tasks: options, the judge call, failures as unscored outcomes (module docstring)."""

    runs_in_server = True  # one client per judge endpoint for the whole server (limits, verdict cache)
    cacheable = False  # a verdict cache sits under it; the reward cache would hide a judge swap
    batch_size = 64
    #: The shipped template this task uses unless its ``template`` option says otherwise.
    template_name: ClassVar[str] = ""
    #: The placeholders this task fills (a template may use any of them).
    template_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, judge: Any = None, template: Any = None, constrained: bool = True, timeout_s: float = 60.0,
                 temperature: float = 0.0, seed: int | None = 0, parallel: int = 0, endpoint: Any = None) -> None:
        super().__init__()
        self.endpoint = _endpoint(self.name, judge, endpoint)
        try:
            self.template: JudgeTemplate = load_template(self.template_name, template, fields=self.template_fields)
        except InvalidTemplate as exc:
            raise InvalidTaskOptions(f"task {self.name!r}: option 'template': {exc}") from None
        self.constrained = bool_option(self.name, "constrained", constrained)
        self.timeout_s = number_option(self.name, "timeout_s", timeout_s)
        if self.timeout_s <= 0:
            raise InvalidTaskOptions(f"task {self.name!r}: option 'timeout_s' must be > 0, got {timeout_s!r}")
        self.time_limit_s = self.timeout_s + LIMIT_MARGIN_S
        self.temperature = number_option(self.name, "temperature", temperature)
        self.seed = None if seed is None else int_option(self.name, "seed", seed, 0)
        self.parallel = int_option(self.name, "parallel", parallel, 0) or \
            (self.endpoint.max_concurrency if self.endpoint else 1)
        self._parser = self.template.verdict_parser
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    # -- the judge ----------------------------------------------------------------------------------
    @property
    def judge_label(self) -> str:
        """The judge's name in metrics ("" without a judge)."""
        return self.endpoint.label if self.endpoint else ""

    def judge_call(self, fields: Mapping[str, str]) -> JudgeCall:
        """The call for one judgement: the template rendered, its verdicts as guided choices if constrained."""
        return JudgeCall(messages=self.template.render(fields), temperature=self.temperature,
                         max_tokens=self.template.max_tokens, seed=self.seed,
                         choices=self.template.choices if self.constrained else (),
                         template_version=self.template.version)

    def ask(self, fields: Mapping[str, str], deadline: float) -> Verdict:
        """One judgement, by ``deadline`` (``time.monotonic()``); raises JudgeError, never returns a default."""
        if self.endpoint is None:
            raise JudgeError(JudgeFailureKind.FAILED, NO_JUDGE.format(task=self.name))
        token = current_cancel_token()
        if token is not None and token.cancelled:
            raise JudgeError(JudgeFailureKind.FAILED, "the call was cancelled: nobody waits for this verdict")
        reply = judge_client(self.endpoint).complete(self.judge_call(fields), deadline_s=deadline - time.monotonic(),
                                                     accept=self._readable)
        try:
            return self._parser.parse(reply.text)
        except UnparseableVerdict as exc:
            judge_metrics().record_unparseable(self.judge_label)
            raise JudgeError(JudgeFailureKind.UNPARSEABLE, f"judge {self.judge_label}: {exc}") from None

    def _readable(self, text: str) -> bool:
        """Whether the parser reads a verdict in ``text`` (an unreadable reply is not cached)."""
        try:
            self._parser.parse(text)
        except UnparseableVerdict:
            return False
        return True

    def run_all(self, jobs: Sequence[Callable[[], T]]) -> list[T | JudgeError]:
        """Runs ``jobs`` at once (up to ``parallel``), each in a copy of the caller's context (its request's
        client id and cancel token); a job's JudgeError is its result."""
        if len(jobs) <= 1:
            return [_catch(job) for job in jobs]
        pool = self._pool()
        futures: list[Future] = [pool.submit(contextvars.copy_context().run, _catch, job) for job in jobs]
        return [f.result() for f in futures]

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix=f"judge-{self.name}")
            return self._executor

    def close(self) -> None:
        """Stops this task's threads (the scorer calls it at shutdown); the shared judge clients stay."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    # -- outcomes -----------------------------------------------------------------------------------
    def deadline(self) -> float:
        """The deadline of a verification starting now."""
        return time.monotonic() + self.timeout_s

    @staticmethod
    def failed(exc: JudgeError) -> TaskOutcome:
        """An unscored outcome for a judgement that could not be made (never a 0)."""
        return TaskOutcome(0.0, exc.status, detail=exc.detail())

    def scored(self, completion: str, score: float, components: Mapping[str, float], detail: str = "",
               explanation: str = "") -> TaskOutcome:
        """A judged outcome: records its length and reward for the judge's length-reward correlation and
        adds the judge's running bias figures to its components."""
        if self.endpoint is not None:
            judge_metrics().record_length_reward(self.judge_label, len(completion), score)
        return TaskOutcome(score, components={**components, **self.bias_components()}, detail=detail,
                           explanation=explanation)

    def bias_components(self) -> dict[str, float]:
        """The judge's running figures (those defined so far): ``judge_flip_rate``, ``judge_order_agreement``,
        ``judge_length_reward_corr``."""
        if self.endpoint is None:
            return {}
        stats = judge_metrics().bias(self.judge_label)
        figures = {"judge_flip_rate": stats.flip_rate, "judge_order_agreement": stats.order_agreement,
                   "judge_length_reward_corr": stats.length_reward_correlation}
        return {k: v for k, v in figures.items() if math.isfinite(v)}

    # -- checks -------------------------------------------------------------------------------------
    def version_inputs(self) -> tuple[str, ...]:
        return (self.template.source,) if self.template.source else ()

    def self_check(self) -> list[str]:
        """The template renders with every field this task fills, and each of its verdicts (guided choices)
        reads as a verdict: a template override whose parser cannot read its own choices is caught here."""
        problems = []
        try:
            self.template.render({f: f"<{f}>" for f in self.template_fields})
        except (KeyError, ValueError) as exc:
            problems.append(f"template {self.template.source or '(inline)'} does not render: {exc}")
        for choice in self.template.choices:
            try:
                self._parser.parse(choice)
            except UnparseableVerdict as exc:
                problems.append(f"the template's verdict {choice!r} does not parse: {exc}")
        return problems

    def canaries(self) -> list[Canary]:
        """Blank answers, answered NO_ANSWER without asking the judge (the rest is the judge's call)."""
        reference = self.canary_reference()
        return [Canary(name, text, reference, "What is 2 + 2?")
                for name, text in (("empty answer", ""), ("whitespace only", " \n\t "),
                                   ("special tokens only", SPECIAL_TOKENS_ONLY))]

    def canary_reference(self) -> Mapping[str, Any]:
        """A reference this task accepts, for its canaries."""
        return {"answer": "4"}

    @staticmethod
    def blank_outcome() -> TaskOutcome:
        return TaskOutcome.no_answer("the answer is empty: nothing to judge (no judge call made)")


def _catch(job: Callable[[], T]) -> T | JudgeError:
    try:
        return job()
    except JudgeError as exc:
        return exc


def first_failure(results: Sequence[object]) -> JudgeError | None:
    """The first JudgeError among ``results`` (None when every judgement was made)."""
    return next((r for r in results if isinstance(r, JudgeError)), None)
