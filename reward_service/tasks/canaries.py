"""Canaries: adversarial completions a task must never reward, run once at server start-up.

A task declares its own (``Task.canaries()``), built on the references of its self-check; this
module makes the ones every task shares: an empty or blank answer, chat special tokens only, a
huge answer (the server's whole completion limit of filler text), and hedges that list every
candidate with the gold among them (in the middle and last, so neither a "first answer wins" nor a
"last answer wins" reader lets one through). Each canary must come back unscored or at most its
``ceiling`` (0, or the task's wrong-answer score; see ``reward_service.task_api.Canary``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from reward_service.task_api import Canary

#: A huge completion: within the reward server's default ``--max-completion-chars`` (1,000,000), with room
#: for the prefix a task over a base task puts before the base's canaries.
HUGE_CHARS = 999_000
SPECIAL_TOKENS_ONLY = "<|endoftext|><|im_end|>"
FILLER = "All work and no play makes Jack a dull boy. "

#: Renders a list of candidate answers as one completion ("The answer is 1 or 2 or 3.").
Render = Callable[[Sequence[str]], str]


@functools.lru_cache(maxsize=4)
def huge_text(filler: str = FILLER, chars: int = HUGE_CHARS) -> str:
    """``filler`` repeated to exactly ``chars`` characters."""
    return (filler * (chars // len(filler) + 1))[:chars]


def generic_canaries(reference: Mapping[str, Any], *, prompt: str = "", ceiling: float = 0.0,
                     huge: str | None = None) -> list[Canary]:
    """The canaries every task runs: empty, blank, special tokens only, and a huge answer (``huge``, by
    default :data:`HUGE_CHARS` of filler prose; a task whose filler could be right passes its own)."""
    cases = [("empty answer", ""), ("whitespace only", " \n\t \n"), ("special tokens only", SPECIAL_TOKENS_ONLY),
             (f"huge answer ({HUGE_CHARS:,} chars)", huge_text() if huge is None else huge)]
    return [Canary(name, text, reference, prompt, ceiling) for name, text in cases]


def candidate_orders(gold: str, others: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The candidate lists a hedge is made of: every candidate with the gold in the middle, and the
    gold last (at least two others, none equal to the gold)."""
    others = [o for o in dict.fromkeys(others) if o != gold]
    if len(others) < 2:
        raise ValueError(f"a hedge needs at least two candidates besides the gold {gold!r}, got {others}")
    middle = len(others) // 2
    return [("gold in the middle", others[:middle] + [gold] + others[middle:]), ("gold last", others + [gold])]


def hedge_canaries(reference: Mapping[str, Any], gold: str, others: Sequence[str],
                   forms: Iterable[tuple[str, Render]], *, prompt: str = "", ceiling: float = 0.0) -> list[Canary]:
    """One canary per form and candidate order: ``render(candidates)`` lists them all as the answer."""
    return [Canary(f"hedge: {form} ({order})", render(candidates), reference, prompt, ceiling)
            for form, render in forms for order, candidates in candidate_orders(gold, others)]


def joined(template: str, separator: str) -> Render:
    """A render that joins the candidates with ``separator`` into ``template``'s ``{}``."""
    return lambda candidates: template.format(separator.join(candidates))


def each(template: str, separator: str = " ") -> Render:
    """A render that puts every candidate in its own ``template`` (``"\\\\boxed{{{}}}"``), joined."""
    return lambda candidates: separator.join(template.format(c) for c in candidates)


def wrapped(canaries: Iterable[Canary], transform: Callable[[str], str], *, suffix: str = "",
            ceiling: float | None = None) -> list[Canary]:
    """``canaries`` with each completion transformed (and named with ``suffix``; ``ceiling`` replaces
    theirs): how a task over a base task runs the base's canaries through itself."""
    return [dataclasses.replace(c, name=c.name + suffix, completion=transform(c.completion),
                                ceiling=c.ceiling if ceiling is None else ceiling) for c in canaries]
