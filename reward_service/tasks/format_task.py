"""The ``format`` task: 1 when the completion matches a regular expression, else 0."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import generic_canaries

#: ``<think>…</think><answer>…</answer>``, the answer not blank (an empty ``<answer></answer>`` answers nothing).
THINK_ANSWER_PATTERN = r"^\s*<think>.*?</think>\s*<answer>\s*(?!</answer>)\S.*?</answer>\s*$"


class FormatTask(Task):
    """Format reward: the whole completion must match ``pattern`` (DOTALL by default).

    The default asks for ``<think>...</think><answer>...</answer>``, as in
    DeepSeek-R1-style training. Configure another pattern per variant::

        tasks:
          boxed_format: {task: format, options: {pattern: '.*\\\\boxed\\{.+\\}.*'}}
    """

    name = "format"
    description = ("1 if the completion matches the format regex "
                   "(default <think>...</think><answer>...</answer>), else 0")

    def __init__(self, pattern: str = THINK_ANSWER_PATTERN, dotall: bool = True, ignore_case: bool = False) -> None:
        super().__init__()
        flags = (re.DOTALL if dotall else 0) | (re.IGNORECASE if ignore_case else 0)
        try:
            self._regex = re.compile(pattern, flags)
        except re.error as exc:
            raise InvalidTaskOptions(f"format pattern {pattern!r} is not a valid regex: {exc}") from None
        self._pattern = pattern

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        match = self._regex.fullmatch(completion)
        return TaskOutcome.binary(match is not None, detail="" if match else "format mismatch")

    def canaries(self) -> list[Canary]:
        return [*generic_canaries({}), Canary("the tags with nothing in them", "<think></think><answer></answer>", {}),
                Canary("the tags around blanks", "<think>\n \n</think>\n<answer>\n \n</answer>", {})]
