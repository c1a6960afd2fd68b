"""An installable task plugin: reward completions whose word count is within a budget.

Self-contained (it imports only the reward suite), so ``pip install ./examples/word_count_plugin``
works from any directory, and every reward server in that environment then serves the
``word_budget`` task through the entry-point group of ``pyproject.toml`` beside this file::

    [project.entry-points."reward_service.tasks"]
    word_budget = "word_count_plugin:WordCountTask"

Rollouts name it: ``{"id": "1", "task": "word_budget", "completion": "...",
"reference": {"max_words": 20}}``. Test it without a server::

    reward-service score --in rollouts.jsonl --out results.jsonl

(in-process scoring loads installed plugins like a server does; ``--config`` adds variants).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_service.task_api import InvalidReference, InvalidTaskOptions, Task, TaskOutcome


class WordCountTask(Task):
    """1.0 within the budget, then decaying linearly to 0 at twice the budget."""

    name = "word_budget"
    description = "1 if the completion has at most reference.max_words words, decaying to 0 at twice that"
    reference_fields = ("max_words",)

    def __init__(self, default_max_words: int = 100) -> None:
        super().__init__()
        if not isinstance(default_max_words, int) or default_max_words < 1:
            raise InvalidTaskOptions(f"default_max_words must be a positive integer, got {default_max_words!r}")
        self._default = default_max_words

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        budget = reference.get("max_words", self._default)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InvalidReference(f"max_words must be a positive integer, got {budget!r}")
        words = len(completion.split())
        score = 1.0 if words <= budget else max(0.0, 2.0 - words / budget)
        return TaskOutcome(score=score, components={"words": float(words)}, extracted=str(words))
