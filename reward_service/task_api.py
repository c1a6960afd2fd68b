"""What a verifiable task is: the plugin interface every task implements.

A task takes one completion plus its reference data and returns a
:class:`TaskOutcome` (a score with named components). It never raises on model
output: a wrong or missing answer is a scored outcome. It raises
:class:`InvalidReference` only when the *reference* is unusable.

Two ways to write one (see ``examples/word_count_task.py``)::

    class Exact(Task):
        name = "exact"
        description = "1 when the completion equals the reference answer"
        required_reference_fields = ("answer",)

        def score(self, completion, reference, prompt=""):
            return TaskOutcome.binary(completion.strip() == reference["answer"])

    @function_task(name="length", description="shorter is better")
    def length(completion: str, reference: Mapping[str, Any], prompt: str) -> float:
        return 1.0 / (1 + len(completion))
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from reward_core.contract import RolloutStatus, StepScore, TaskInfo


class InvalidReference(ValueError):
    """The reference data lacks fields the task needs, or they are malformed."""


class InvalidTaskOptions(ValueError):
    """A task was configured with options it does not accept."""


class CancelToken(Protocol):
    """What a task may check or hook to stop work nobody waits for any more (a cancelled or
    expired call). ``reward_core.sandbox_contract.Cancellation`` is one."""

    @property
    def cancelled(self) -> bool: ...

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]: ...


_CANCEL_TOKEN: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("reward_cancel_token",
                                                                                   default=None)


def current_cancel_token() -> CancelToken | None:
    """The token of the call whose items are being scored now, for tasks that run in the server
    (``runs_in_server``); None in a verifier worker or outside a call."""
    return _CANCEL_TOKEN.get()


@contextlib.contextmanager
def cancel_token_set(token: CancelToken | None) -> Iterator[None]:
    """Makes ``token`` the current cancel token inside the block (the server's job runner uses it)."""
    reset = _CANCEL_TOKEN.set(token)
    try:
        yield
    finally:
        _CANCEL_TOKEN.reset(reset)


@dataclass(frozen=True)
class TaskInput:
    """One completion to score, with its reference data (what ``score_batch`` receives).

    ``metadata`` is the rollout's opaque caller metadata (``Rollout.metadata`` in the
    contract), passed through unchanged; only ``score_batch`` sees it.
    """

    completion: str
    reference: Mapping[str, Any]
    prompt: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskOutcome:
    """What a task says about one completion.

    ``status`` is OK (scored) or NO_ANSWER (scored, nothing extracted);
    INVALID_REFERENCE when the reference cannot be graded, or ERROR when the
    task's own verifier failed on this item (both unscored: never report a
    failure of ours as a 0). TIMEOUT is set by the server.
    """

    score: float
    status: RolloutStatus = RolloutStatus.OK
    components: Mapping[str, float] = field(default_factory=dict)
    extracted: str = ""
    detail: str = ""
    #: Step-level (process) scores, for tasks with ``produces_steps`` (see StepScore).
    steps: tuple[StepScore, ...] = ()
    #: Why the verdict, in a line or two (the result's ``explanation``): what was extracted, which
    #: rule matched or why nothing did. "" lets the server build one from the fields above
    #: (``reward_service.tasks.explanation.explain_outcome``).
    explanation: str = ""

    @classmethod
    def binary(cls, correct: bool, *, extracted: str = "", detail: str = "", explanation: str = "") -> TaskOutcome:
        return cls(score=1.0 if correct else 0.0, extracted=extracted, detail=detail, explanation=explanation)

    @classmethod
    def no_answer(cls, detail: str = "no answer found", explanation: str = "") -> TaskOutcome:
        return cls(score=0.0, status=RolloutStatus.NO_ANSWER, detail=detail, explanation=explanation)


@dataclass(frozen=True)
class Canary:
    """An adversarial completion a task must not reward (``Task.canaries``): it passes when its
    outcome is unscored or scores at most ``ceiling`` (0, or the task's wrong-answer score)."""

    name: str
    completion: str
    reference: Mapping[str, Any]
    prompt: str = ""
    ceiling: float = 0.0

    def passes(self, outcome: TaskOutcome) -> bool:
        return not outcome.status.scored or outcome.score <= self.ceiling


class Task(abc.ABC):
    """Base class for tasks. Subclasses set the class attributes and implement ``score``.

    Options come from the rewards config (``tasks: {name: {options: {...}}}``)
    as keyword arguments to ``__init__``; a subclass that takes options
    declares them there and raises InvalidTaskOptions on bad values.

    The rollout's caller metadata (``map<string, string>`` in the contract) reaches a
    task through ``score_batch``: each :class:`TaskInput` carries it as ``metadata``.
    ``score`` keeps its three-argument signature; a task that reads metadata overrides
    ``score_item`` (or ``score_batch``). Identical items with different metadata are scored separately.

    ``check_reference`` runs in the server for every rollout: it raises InvalidReference
    for an unusable reference (answered INVALID_REFERENCE); any other exception is a bug
    of the task and answers that rollout ERROR (unscored), never the whole request.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    reference_fields: ClassVar[tuple[str, ...]] = ()
    required_reference_fields: ClassVar[tuple[str, ...]] = ()
    #: Most items of one request the server hands to one ``score_batch`` call
    #: (0: the server's default). A task whose work batches well (a model
    #: forward pass, one remote call) sets it high and overrides ``score_batch``.
    batch_size: ClassVar[int] = 0
    #: A task that waits on something slower than the server's item limit (a
    #: remote model) raises the hard limit for its own jobs to this many seconds.
    time_limit_s: float = 0.0
    #: A task that waits on another service (the sandbox, a reward model) instead of
    #: computing: the server runs its jobs on threads in its own process, all sharing one
    #: executor or channel, instead of in the worker pool (which would multiply the sandbox's
    #: slots by the number of workers). Its own limits (a program's wall time, a call's
    #: deadline) decide its outcomes; no worker is killed for it.
    runs_in_server: ClassVar[bool] = False
    #: Whether outcomes carry step scores (``TaskOutcome.steps``); ListTasks reports it.
    produces_steps: ClassVar[bool] = False
    #: A task that calls another service takes an ``endpoint`` option; this names the field of the
    #: server's ``TaskEndpoints`` (``reward_service.router.rewards_config``) the registry passes as
    #: that option when the task's config gives none ("": the task takes no endpoint).
    endpoint_field: ClassVar[str] = ""
    #: A task that shapes another task's outcome (``reward_service/tasks/shaped_tasks.py``) takes a ``base``
    #: option naming a registered task, this one when the config names none; the registry passes that
    #: task's instance as ``base`` ("": the task takes no base).
    default_base: ClassVar[str] = ""
    #: Why this task declares no canaries (``canaries()``), reported at start-up ("": it declares some,
    #: or none without a reason, which is reported too).
    canary_exemption: ClassVar[str] = ""
    #: A task whose score depends on the other completions of its group (the rollouts of one request
    #: sharing a ``group_id``): the server calls ``score_group`` once every member's outcome is known.
    groupwise: ClassVar[bool] = False
    #: Whether the server may answer a repeated rollout from its reward cache (``router/reward_cache.py``)
    #: instead of verifying it again: True for a deterministic verifier; False for a task whose answer may
    #: change for the same input (it calls a remote model or judge, or depends on wall-clock limits).
    cacheable: ClassVar[bool] = True
    #: Rollout fields the task never reads ("prompt", "metadata"), left out of its cache key (default:
    #: none, so a task that reads the prompt or metadata is never answered for another one).
    cache_ignores: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, **options: Any) -> None:
        if options:
            raise InvalidTaskOptions(f"task {self.name!r} takes no options, got {sorted(options)}")

    @abc.abstractmethod
    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        """Scores one completion. Never raises on model output."""

    def score_batch(self, items: Sequence[TaskInput]) -> list[TaskOutcome]:
        """Scores several completions; one outcome per item, in order.

        The default calls ``score`` per item; an item whose reference is
        unusable gets an INVALID_REFERENCE outcome without failing the others.
        """
        outcomes = []
        for item in items:
            try:
                outcomes.append(self.score_item(item))
            except InvalidReference as exc:
                outcomes.append(TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=str(exc)))
        return outcomes

    def score_item(self, item: TaskInput) -> TaskOutcome:
        """Scores one item of ``score_batch`` (default: ``score``). A task that reads the rollout's
        ``metadata`` overrides this rather than the batch loop."""
        return self.score(item.completion, item.reference, item.prompt)

    def score_group(self, items: Sequence[TaskInput], outcomes: Sequence[TaskOutcome]) -> list[TaskOutcome]:
        """The group stage of a ``groupwise`` task: one group's members and their ``score_batch``
        outcomes in, their final outcomes out (one per member, in order).

        The server passes the scored members only (an unscored one stays unscored and is left out
        of the group), and only the members in the same request. It runs in the server: as the
        request is answered (keep it cheap, and measure what it needs in ``score_batch``, in the
        workers, as components), or, when it waits on another service (``group_stage_waits``: a
        judge), on the server's threads for tasks that run in the server, one group per job, in the
        request's context (its cancel token and client id). Default: unchanged.
        """
        return list(outcomes)

    @property
    def group_stage_waits(self) -> bool:
        """Whether ``score_group`` waits on another service (a judge ranking the group), so the server
        runs it off its event loop. Default: a groupwise task that runs in the server."""
        return self.groupwise and self.runs_in_server

    def explain(self, item: TaskInput, outcome: TaskOutcome) -> Mapping[str, Any]:
        """A longer trace of one verdict for ``reward-service explain`` (``reward_service.tasks.explanation.trace``),
        beside the outcome's own fields: e.g. the gold as the grader reads it, each test's result. Runs
        in the caller's process, never in the server. Default: nothing more than the outcome."""
        return {}

    def self_check(self) -> list[str]:
        """Known-answer checks run once at server start-up; one line per failure (default: none).

        A math-like task grades golds against their own common rewrites and
        known-wrong variants, so a broken configuration is reported before any
        rollout is scored.
        """
        return []

    def canaries(self) -> Sequence[Canary]:
        """Adversarial completions run once at server start-up, after ``self_check``: an empty answer,
        special tokens only, a huge answer, a hedge listing every candidate, the prompt or gold echoed
        (``reward_service.tasks.canaries`` makes the generic ones). Each must stay unscored or score
        at most its ceiling; a failure is logged (``--strict-canaries``: the server refuses to start).
        Default: none, and the registry reports that; ``canary_exemption`` says why a task has none.
        """
        return ()

    def version_inputs(self) -> Sequence[str | os.PathLike[str]]:
        """The data files this task reads (a tokenizer, a word list): their bytes are part of its verifier
        version (``reward_service.router.versioning``), with its code and options. Default: none."""
        return ()

    def check_reference(self, reference: Mapping[str, Any]) -> None:
        """Raises InvalidReference when a required field is missing (cheap; runs in the server)."""
        missing = [f for f in self.required_reference_fields if reference.get(f) in (None, "")]
        if missing:
            raise InvalidReference(
                f"task {self.name!r} needs reference field(s) {missing}; got {sorted(reference)}"
            )

    def info(self, name: str | None = None) -> TaskInfo:
        return TaskInfo(
            name=name or self.name,
            description=self.description,
            reference_fields=tuple(self.reference_fields or self.required_reference_fields),
            required_reference_fields=tuple(self.required_reference_fields),
            kind="task",
            produces_steps=self.produces_steps,
            groupwise=self.groupwise,
        )


class FamilyTask(Task):
    """A family of tasks, one per member, served as ``<prefix>:<member>`` (``rg:leg_counting``).

    Registered under its prefix in the same ``reward_service.tasks`` entry-point group
    (``rg = "reward_service.tasks.reasoning_gym_task:ReasoningGymTask"``); the registry creates
    ``cls(member, **options)`` the first time a member's name is asked for, so a family of a
    hundred members costs nothing until one is used. ``members()`` names them all (ListTasks
    lists each); a name outside it is an unknown task.
    """

    @classmethod
    @abc.abstractmethod
    def members(cls) -> Sequence[str]:
        """Every member name this family serves (cheap: no heavy import)."""


ScoreFn = Callable[[str, Mapping[str, Any], str], "float | TaskOutcome"]


def function_task(
    *,
    name: str,
    description: str = "",
    required_reference_fields: tuple[str, ...] = (),
    reference_fields: tuple[str, ...] = (),
) -> Callable[[ScoreFn], type[Task]]:
    """Turns ``fn(completion, reference, prompt) -> float | TaskOutcome`` into a Task class."""

    def wrap(fn: ScoreFn) -> type[Task]:
        def score(self: Task, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
            value = fn(completion, reference, prompt)
            if isinstance(value, TaskOutcome):
                return value
            return TaskOutcome(score=float(value))

        attrs = {
            "name": name,
            "description": description or (fn.__doc__ or "").strip(),
            "required_reference_fields": tuple(required_reference_fields),
            "reference_fields": tuple(reference_fields),
            "score": score,
            "__module__": fn.__module__,
            "__doc__": fn.__doc__,
        }
        return type(fn.__name__, (Task,), attrs)

    return wrap
