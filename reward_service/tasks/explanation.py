"""Why a verdict: the short explanation every result carries, and the full trace of one rollout.

A task may write its own explanation (``TaskOutcome.explanation``: what it extracted, which rule
matched or why nothing did, which test failed); otherwise :func:`explain_outcome` builds one from
the outcome's status, score, extracted answer and detail. An unscored rollout says why
(:func:`explain_unscored`), a verifier that raised names the exception's type and message
(:func:`explain_exception`; its traceback goes to the server log, never into a result). Every
explanation is capped to one or two lines of at most :data:`MAX_CHARS` characters.

:func:`trace` is what ``reward-service explain`` prints: one rollout scored in-process, with the
task's longer ``Task.explain`` trace.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Mapping
from typing import Any

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidReference, Task, TaskInput, TaskOutcome

#: The most characters of an explanation (longer ones end with an ellipsis).
MAX_CHARS = 300
#: The most characters of one quoted value (an extracted answer, a gold, a test's output).
QUOTE_CHARS = 60
ELLIPSIS = "…"


def cap(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` on at most two lines (the first line break kept, runs of whitespace made one space),
    cut to ``limit`` characters with an ellipsis."""
    # Remembered (short texts only, so the memo stays small): an outcome answered from the reward cache
    # is explained again with the same text on every hit.
    return _cap_remembered(text, limit) if len(text) <= 2 * MAX_CHARS else _cap(text, limit)


@functools.lru_cache(maxsize=4096)
def _cap_remembered(text: str, limit: int) -> str:
    return _cap(text, limit)


def _cap(text: str, limit: int) -> str:
    first, _, rest = text.strip().partition("\n")
    lines = [" ".join(part.split()) for part in (first, rest)]
    text = "\n".join(line for line in lines if line)
    return text if len(text) <= limit else text[:limit - len(ELLIPSIS)].rstrip() + ELLIPSIS


def quote(value: str, limit: int = QUOTE_CHARS) -> str:
    """A value in single quotes for an explanation, cut to ``limit`` characters; line breaks and tabs
    show as ``\\n`` and ``\\t`` (backslashes stay single: ``'\\frac{1}{2}'`` reads as LaTeX)."""
    shown = value[:limit].replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f"'{shown}'" + (ELLIPSIS if len(value) > limit else "")


def explain_outcome(outcome: TaskOutcome) -> str:
    """The task's own explanation, or one built from the outcome's fields."""
    if outcome.explanation:
        return cap(outcome.explanation)
    detail = outcome.detail.strip()
    if not outcome.status.scored:
        return explain_unscored(outcome.status, detail or "the task gave no reason")
    parts = [f"score {outcome.score:g}"]
    if outcome.status == RolloutStatus.NO_ANSWER:
        parts = [f"no answer ({detail or 'nothing extracted'}); score {outcome.score:g}"]
    else:
        if outcome.extracted:
            parts.append(f"extracted {quote(outcome.extracted)}")
        if detail:
            parts.append(detail)
        elif len(outcome.components) > 1:
            shown = ", ".join(f"{name} {value:g}" for name, value in list(outcome.components.items())[:4])
            parts.append(f"components: {shown}")
    return cap("; ".join(parts))


def explain_unscored(status: RolloutStatus, reason: str) -> str:
    """Why a rollout is unscored (its status is not a verdict on the completion)."""
    return cap(f"unscored ({status.name}): {reason}")


def explain_exception(exc_type: str, message: str, task: str = "") -> str:
    """A verifier that raised: the exception's type and message, never its traceback."""
    who = f"task {task!r}" if task else "the verifier"
    return cap(f"unscored (ERROR): {who} raised {exc_type}: {message}" if message else
               f"unscored (ERROR): {who} raised {exc_type}")


def trace(task: Task, item: TaskInput, *, task_name: str = "") -> dict[str, Any]:
    """One rollout scored in this process, with everything known about its verdict: the task,
    status, score, components, extracted answer, explanation, detail and the task's own trace
    (``Task.explain``). A task that raises is reported (type, message), not re-raised."""
    name = task_name or task.name
    out: dict[str, Any] = {"task": name}
    try:
        task.check_reference(item.reference)
        outcome = task.score_batch([item])[0]
    except InvalidReference as exc:
        outcome = TaskOutcome(0.0, RolloutStatus.INVALID_REFERENCE, detail=str(exc))
    except Exception as exc:  # noqa: BLE001 -- the trace reports a crashing task, as the server would
        return {**out, "status": RolloutStatus.ERROR.name, "scored": False, "score": 0.0,
                "explanation": explain_exception(type(exc).__name__, str(exc), name),
                "traceback": traceback.format_exc()}
    out.update(status=outcome.status.name, scored=outcome.status.scored, score=outcome.score,
               components=dict(outcome.components) or ({name: outcome.score} if outcome.status.scored else {}),
               extracted=outcome.extracted,
               explanation=explain_outcome(outcome), detail=outcome.detail)
    if outcome.steps:
        out["steps"] = [step.to_dict() for step in outcome.steps]
    extra = task.explain(item, outcome)
    if extra:
        out["trace"] = dict(extra) if isinstance(extra, Mapping) else extra
    return out
