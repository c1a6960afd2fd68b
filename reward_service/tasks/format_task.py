"""The ``format`` task: 1 when the completion matches a regular expression, else 0."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import generic_canaries
from reward_service.tasks.explanation import quote

#: ``<think>…</think><answer>…</answer>``, the answer not blank (an empty ``<answer></answer>`` answers nothing).
THINK_ANSWER_PATTERN = r"^\s*<think>.*?</think>\s*<answer>\s*(?!</answer>)\S.*?</answer>\s*$"
THINK_ANSWER_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


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
        return TaskOutcome.binary(match is not None, detail="" if match else "format mismatch",
                                  explanation=self.explain_match(completion, match is not None))

    def explain_match(self, completion: str, matched: bool) -> str:
        """Which format was (not) met; for the default pattern, which tag is missing or repeated."""
        if self._pattern != THINK_ANSWER_PATTERN:
            return (f"{'matches' if matched else 'does not match'} the format regex {quote(self._pattern, 80)}")
        if matched:
            return "matches <think>...</think> then a non-blank <answer>...</answer>"
        counts = {tag: completion.count(tag) for tag in THINK_ANSWER_TAGS}
        missing = [tag for tag, n in counts.items() if n == 0]
        if missing:
            return f"format mismatch: missing {', '.join(missing)}"
        return ("format mismatch: the tags are there but out of order, repeated, around a blank answer, "
                "or with text outside them")

    def canaries(self) -> list[Canary]:
        return [*generic_canaries({}), Canary("the tags with nothing in them", "<think></think><answer></answer>", {}),
                Canary("the tags around blanks", "<think>\n \n</think>\n<answer>\n \n</answer>", {})]
