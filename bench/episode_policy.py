"""The episode benchmark's and soak's scripted policy: three tool calls whose right reward is known.

``arithmetic_tools`` asks for the product of two numbers. The policy calls ``calculator`` for the
product, ``calculator`` again to check it (``product // b``), and ``submit_answer`` with the product
-- or, for a seeded share of rows, with the product plus one, so that a reward of 0 is expected there
and a verifier that scored everything 1 would show. Every episode is judged against what it should
have scored: right, *silently wrong* (a scored reward that disagrees), a typed failure, or hung.

For the soak the first call can be ``python`` instead (``math_tools`` with our own row of the same
shape), so that the sandbox is in the path of every episode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

OPERANDS = re.compile(r"(\d+) \* (\d+)")
INTEGER = re.compile(r"-?\d+")


@dataclass(frozen=True)
class Step:
    """One tool call's answer as a driver reports it (``tool_ms``: the host's own time for the call)."""

    output: str
    reward: float | None
    finished: bool
    tool_ms: float = 0.0


class EpisodeHandle(Protocol):
    """One open episode as a driver exposes it."""

    prompt: str

    async def call(self, name: str, arguments: dict[str, Any]) -> Step:
        """Runs one tool call; raises for a typed failure (the driver's :func:`ending` names it)."""
        ...


@dataclass
class Played:
    """What one episode did: the ending's label, and each call as (tool, round trip ms, host ms, expression)."""

    ending: str = "no ending"
    calls: list[tuple[str, float, float, str]] = field(default_factory=list)
    tool_output_wrong: bool = False


def wrong_on_purpose(index: int, share: float) -> bool:
    """Whether row ``index`` gets a wrong answer submitted (a fixed, spread-out share of the rows)."""
    return (index * 7919) % 1000 < round(share * 1000)


def operands(prompt: str) -> tuple[int, int]:
    """The two factors a product prompt names (ValueError when it names none)."""
    found = OPERANDS.search(prompt)
    if found is None:
        raise ValueError(f"no 'a * b' in the prompt {prompt[:120]!r}")
    return int(found.group(1)), int(found.group(2))


def product_row(a: int, b: int) -> dict[str, Any]:
    """A ``math_tools`` row of the benchmark's shape (the soak's, so that ``python`` is offered)."""
    return {"prompt": f"What is {a} * {b}?", "answer": str(a * b)}


async def play(episode: EpisodeHandle, wrong: bool, first_tool: str, clock: Any, python_sleep_s: float = 0.0) -> Played:
    """Plays the three calls (see the module docstring); the ending is ``right``, ``REWARD WRONG ...``
    (a scored reward that disagrees with the expected one) or ``not finished`` (no final reward).
    ``python_sleep_s``: the ``python`` program sleeps this long first (an episode still running when a fault
    comes)."""
    played = Played()
    a, b = operands(episode.prompt)
    nap = f"import time; time.sleep({python_sleep_s!r}); " if python_sleep_s else ""
    first = ("python", {"code": f"{nap}print({a} * {b})"}) if first_tool == "python" else \
        ("calculator", {"expression": f"{a} * {b}"})

    async def call(name: str, arguments: dict[str, Any]) -> Step:
        start = clock()
        step = await episode.call(name, arguments)
        played.calls.append((name, (clock() - start) * 1000.0, step.tool_ms, arguments.get("expression", "")))
        return step

    step = await call(*first)
    found = INTEGER.search(step.output)
    product = int(found.group(0)) if found else None
    played.tool_output_wrong = product != a * b
    await call("calculator", {"expression": f"({product if product is not None else a * b}) // {b}"})
    answer = (product if product is not None else a * b) + (1 if wrong else 0)
    step = await call("submit_answer", {"answer": str(answer)})
    if not step.finished or step.reward is None:
        played.ending = "not finished after submit_answer"
        return played
    expected = 1.0 if answer == a * b else 0.0
    played.ending = "right" if step.reward == expected else f"REWARD WRONG: {step.reward} for expected {expected}"
    return played
