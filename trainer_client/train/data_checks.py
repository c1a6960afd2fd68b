"""The prompts checked against the reward service before step 0.

``read_prompts`` checks each line's shape (JSON, a string ``prompt``, a ``task``); this checks what
only the reward service knows: that it serves each row's task, and that each row's reference has
the fields the task requires (``TaskInfo.required_reference_fields`` from ListTasks). A wrong row
is found before any generation, reported by file and line, instead of a step of unscored
UNKNOWN_TASK / INVALID_REFERENCE results and a "nothing was scored" error.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from reward_core.contract import TaskInfo
from trainer_client.train.rollouts import PromptDataError, PromptRow

#: Problems listed in one error (the rest are counted).
MAX_LISTED = 5
#: Task names listed for an unknown task without a close match.
MAX_TASKS_NAMED = 12


def row_problems(row: PromptRow, tasks: dict[str, TaskInfo], endpoint: str) -> list[str]:
    """What is wrong with ``row`` for the server whose ``tasks`` are given (empty: nothing)."""
    info = tasks.get(row.task)
    if info is None:
        if ":" in row.task and row.task.split(":", 1)[0] not in tasks:
            return []  # a family member (rg:<dataset>): ListTasks names only the configured ones
        return [f"task {row.task!r} is not served by the reward service at {endpoint} ({_known(row.task, tasks)})"]
    missing = [name for name in info.required_reference_fields if name not in row.reference]
    if missing:
        return [f"task {row.task!r} needs reference field(s) {', '.join(missing)}; this reference has "
                f"{', '.join(sorted(row.reference)) or 'none'}"]
    return []


def _known(task: str, tasks: dict[str, TaskInfo]) -> str:
    close = difflib.get_close_matches(task, list(tasks), n=3)
    if close:
        return "did you mean " + " or ".join(repr(name) for name in close) + "?"
    names = sorted(tasks)
    listed = ", ".join(names[:MAX_TASKS_NAMED]) or "none"
    more = f" and {len(names) - MAX_TASKS_NAMED} more" if len(names) > MAX_TASKS_NAMED else ""
    return f"it serves {listed}{more}"


def check_prompts(rows: Sequence[PromptRow], tasks: Sequence[TaskInfo], path: str | Path, endpoint: str) -> None:
    """Raises PromptDataError listing (by ``path:line``) the rows the reward service cannot score."""
    by_name = {t.name: t for t in tasks}
    problems = [f"{path}:{row.line or row.id}: {problem}" for row in rows
                for problem in row_problems(row, by_name, endpoint)]
    if problems:
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise PromptDataError(f"{len(problems)} prompt row(s) the reward service cannot score:\n  "
                              + "\n  ".join(problems[:MAX_LISTED]) + more)
