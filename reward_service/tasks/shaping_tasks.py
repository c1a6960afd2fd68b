"""Shaping rewards that need only the completion: ``repetition_penalty``, ``tag_count``,
``soft_overlong``. Each is a task of its own, used as a component of a composite reward::

    rewards:
      math_shaped:
        components: {math: 1.0, repetition_penalty: 1.0, soft_overlong: 1.0}

Definitions and their sources (open-r1, TRL, DAPO): ``docs/tasks.md``, "Shaping rewards".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reward_service.task_api import Canary, InvalidTaskOptions, Task, TaskOutcome
from reward_service.tasks.canaries import HUGE_CHARS, generic_canaries, huge_text
from reward_service.tasks.explanation import quote
from reward_service.tasks.options import int_option, number_option, strings_option
from reward_service.tasks.text_length import TextLength
from reward_service.verifiers.shaping import R1_TAGS, repetition_penalty, soft_overlong, tag_count, words


class RepetitionPenaltyTask(Task):
    """``(1 - distinct n-grams / n-grams) * max_penalty`` over lower-cased words (open-r1), or over
    token ids when ``tokenizer`` names a tokenizer file (TRL)."""

    name = "repetition_penalty"
    description = ("n-gram repetition penalty in [max_penalty, 0]: (1 - distinct/total n-grams) * max_penalty, "
                   "over words (or tokens with a tokenizer)")

    def __init__(self, ngram_size: int = 3, max_penalty: float = -1.0, tokenizer: str = "") -> None:
        super().__init__()
        self._ngram_size = int_option(self.name, "ngram_size", ngram_size, 1)
        self._max_penalty = number_option(self.name, "max_penalty", max_penalty)
        if self._max_penalty > 0:
            raise InvalidTaskOptions(f"task {self.name!r}: max_penalty {max_penalty} must not be positive")
        self._length = TextLength(tokenizer)

    def version_inputs(self) -> tuple[str, ...]:
        return self._length.version_inputs()  # the tokenizer file counts in the verifier version

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        units: Sequence[Any] = self._length.token_ids(completion) if self._length.has_tokenizer else words(completion)
        return TaskOutcome(repetition_penalty(units, self._ngram_size, self._max_penalty))

    def canaries(self) -> list[Canary]:
        """A penalty (at most 0) rewards nothing; passing means a degenerate, repetitive completion takes
        at least 90% of the full penalty (and blank ones no reward)."""
        floor = 0.9 * self._max_penalty
        *blank, huge = generic_canaries({})
        return [*blank, dataclasses.replace(huge, ceiling=floor),
                Canary("one phrase repeated", "The answer is 72. " * 50, {}, ceiling=floor)]


def explain_tag_count(completion: str, tags: Sequence[str], value: float) -> str:
    """Which tags occur exactly once (each earns its share), and which are missing or repeated."""
    counts = {tag: completion.count(tag) for tag in tags}
    once = [quote(t) for t, n in counts.items() if n == 1]
    missing = [quote(t) for t, n in counts.items() if n == 0]
    repeated = [f"{quote(t)} x{n}" for t, n in counts.items() if n > 1]
    parts = [f"{len(once)}/{len(tags)} tags exactly once ({value:g})"]
    parts += [f"{label}: {', '.join(items)}" for label, items in (("missing", missing), ("repeated", repeated))
              if items]
    return "; ".join(parts)


class TagCountTask(Task):
    """open-r1's ``tag_count_reward``: 0.25 for each of ``<think>\\n``, ``\\n</think>\\n``,
    ``\\n<answer>\\n``, ``\\n</answer>`` that occurs exactly once (``tags`` replaces the four)."""

    name = "tag_count"
    description = ("share of the format tags (<think>\\n, \\n</think>\\n, \\n<answer>\\n, \\n</answer>) "
                   "found exactly once")

    def __init__(self, tags: Sequence[str] = R1_TAGS) -> None:
        super().__init__()
        self._tags = strings_option(self.name, "tags", tags)

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        value = tag_count(completion, self._tags)
        return TaskOutcome(value, explanation=explain_tag_count(completion, self._tags, value))

    def canaries(self) -> list[Canary]:
        """Tags alone earn this reward by definition (open-r1's): no canary with bare tags."""
        return [*generic_canaries({}), Canary("every tag repeated", "".join(self._tags) * 1000, {})]


class SoftOverlongTask(Task):
    """DAPO's soft overlong punishment: 0 up to ``max_completion_len - soft_punish_cache``, linear
    to -1 at ``max_completion_len``, -1 beyond. Lengths in tokens with ``tokenizer``, else in
    characters (the defaults are DAPO's token budget: 16384 + a 4096 cache)."""

    name = "soft_overlong"
    description = ("DAPO soft overlong punishment in [-1, 0]: 0 up to max_completion_len - soft_punish_cache, "
                   "linear to -1 at max_completion_len (characters, or tokens with a tokenizer)")

    def __init__(self, max_completion_len: int = 20480, soft_punish_cache: int = 4096, tokenizer: str = "") -> None:
        super().__init__()
        self._max_len = int_option(self.name, "max_completion_len", max_completion_len, 1)
        self._cache = int_option(self.name, "soft_punish_cache", soft_punish_cache, 0)
        if self._cache > self._max_len:
            raise InvalidTaskOptions(f"task {self.name!r}: soft_punish_cache ({soft_punish_cache}) must not "
                                     f"exceed max_completion_len ({max_completion_len})")
        self._length = TextLength(tokenizer)

    def version_inputs(self) -> tuple[str, ...]:
        return self._length.version_inputs()  # the tokenizer file counts in the verifier version

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        length = self._length(completion)
        return TaskOutcome(soft_overlong(length, self._max_len, self._cache),
                           detail=f"length {length} {self._length.unit}")

    def canaries(self) -> list[Canary]:
        """A penalty (at most 0) rewards nothing; passing means the huge completion (the server's whole
        completion limit) takes the full penalty, when it is at least ``max_completion_len`` long."""
        *blank, huge = generic_canaries({})
        if self._length(huge_text()) < self._max_len:
            return blank  # max_completion_len lies beyond what a rollout may carry: nothing huge to punish
        return [*blank, dataclasses.replace(huge, name=f"huge answer ({HUGE_CHARS:,} chars): the full penalty",
                                            ceiling=-1.0)]
