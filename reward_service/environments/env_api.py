"""What an environment is: the plugin interface every environment implements.

An environment names the tools it offers (built-in ones by name, and its own as
:class:`PluginTool`: a function with a JSON schema), gives the prompt for a task row, names the
registered task (``reward_service.tasks``) that verifies the submitted answer, and serves rows
per split, generated from a seed or read from data. Per-step rewards are optional
(``step_reward``). Registered through the ``reward_service.environments`` entry-point group::

    class Capitals(Environment):
        name = "capitals"
        description = "name the capital; a lookup tool helps"
        tools = ("submit_answer",)
        task = "exact_match"

        def splits(self):
            return {"train": 100, "test": 20}

        def row(self, split, index, seed):
            country, capital = DATA[split][index]
            return {"prompt": f"What is the capital of {country}?", "reference": {"answer": capital}}

        def plugin_tools(self):
            return (PluginTool("lookup", lookup, "looks a country up", {"type": "object", ...}),)

A row is a mapping with ``prompt`` (text or chat messages) and ``reference`` (what the task
reads; never shown to the policy). Rows a caller sends (``EpisodeSpec.row``) have that shape too.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reward_core.episode_contract import ToolCall, ToolSpec
from reward_service.environments.tool_specs import BUILTIN_TOOLS, builtin_spec


class InvalidRow(ValueError):
    """A task row is unusable (no prompt, no reference, an index outside its split): fix the caller."""


class EnvironmentLoadError(RuntimeError):
    """An environment plugin could not be loaded or is malformed; the message names it."""


@dataclass(frozen=True)
class ToolContext:
    """What a plugin tool sees besides its arguments: the session's row, seed and a seeded generator."""

    session_id: str
    row: Mapping[str, Any]
    seed: int
    rng: random.Random


@dataclass(frozen=True)
class PluginTool:
    """A tool an environment declares: ``function(arguments, context) -> str`` (the output the policy
    sees) with its arguments' JSON schema. It runs on a thread under the per-call deadline; an
    exception it raises is the environment's bug: the call answers ERROR (unscored)."""

    name: str
    function: Callable[[Mapping[str, Any], ToolContext], str]
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


class Environment(abc.ABC):
    """Base class of environments. Subclasses set the class attributes and implement ``splits`` and ``row``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Built-in tools offered (a subset of BUILTIN_TOOLS), besides ``plugin_tools()``.
    tools: ClassVar[tuple[str, ...]] = ("submit_answer",)
    #: The registered task that verifies the answer (``reward_service.tasks`` entry point or configured name).
    task: ClassVar[str] = "math"
    #: Most tool calls in one episode (0: no limit besides the deadline); past it the episode is verified
    #: as it stands (no answer submitted: a scored 0).
    max_turns: ClassVar[int] = 0
    #: Bumped when rows, prompts or rewards change, so stored episodes can be told apart.
    version: ClassVar[str] = "1"
    #: The system message of every prompt ("" for none).
    system_prompt: ClassVar[str] = ""

    @abc.abstractmethod
    def splits(self) -> Mapping[str, int]:
        """Split name -> number of rows (cheap: rows are made on demand by ``row``)."""

    @abc.abstractmethod
    def row(self, split: str, index: int, seed: int) -> Mapping[str, Any]:
        """Row ``index`` of ``split`` (the same for the same seed); raises InvalidRow outside the split."""

    def plugin_tools(self) -> Sequence[PluginTool]:
        """The environment's own tools (default: none)."""
        return ()

    def prompt(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The episode's first messages: the system prompt, then the row's prompt (text or chat messages)."""
        prompt = row.get("prompt")
        if isinstance(prompt, str) and prompt:
            messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        elif isinstance(prompt, Sequence) and prompt and all(isinstance(m, Mapping) for m in prompt):
            messages = [dict(m) for m in prompt]
        else:
            raise InvalidRow(f"environment {self.name!r}: a row needs a 'prompt' (text or chat messages)")
        if self.system_prompt and messages[0].get("role") != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def reference(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """What the task verifies against (default: the row's ``reference``)."""
        reference = row.get("reference")
        if not isinstance(reference, Mapping):
            raise InvalidRow(f"environment {self.name!r}: a row needs a 'reference' object for task {self.task!r}")
        return reference

    def completion(self, answer: str) -> str:
        """The completion the task scores for a submitted answer (default: the answer, boxed, as the
        math tasks read it); override for a task that reads something else."""
        return f"\\boxed{{{answer}}}"

    def step_reward(self, call: ToolCall, output: str, row: Mapping[str, Any]) -> float | None:
        """A per-step reward for a tool call other than ``submit_answer`` (default: none)."""
        return None

    def tool_specs(self) -> list[ToolSpec]:
        """Every tool offered: the built-in ones named in ``tools``, then the plugin tools."""
        return [builtin_spec(name) for name in self.tools] + [tool.spec for tool in self.plugin_tools()]

    def check(self) -> None:
        """Raises EnvironmentLoadError when the class is malformed (run when it is registered)."""
        if not self.name:
            raise EnvironmentLoadError(f"environment class {type(self).__qualname__} has no name")
        unknown = [t for t in self.tools if t not in BUILTIN_TOOLS]
        if unknown:
            raise EnvironmentLoadError(f"environment {self.name!r}: unknown built-in tool(s) {unknown}; "
                                       f"built-in: {list(BUILTIN_TOOLS)} (declare others as plugin_tools)")
        names = [t.name for t in self.plugin_tools()]
        clashes = sorted({n for n in names if n in BUILTIN_TOOLS or names.count(n) > 1})
        if clashes:
            raise EnvironmentLoadError(f"environment {self.name!r}: plugin tool name(s) {clashes} clash with a "
                                       "built-in tool or with each other")


def check_index(env: Environment, split: str, index: int) -> None:
    """Raises InvalidRow for a split the environment lacks or an index outside it (the manager checks
    before it asks for a row; ``row`` may call it too)."""
    sizes = env.splits()
    if split not in sizes:
        raise InvalidRow(f"environment {env.name!r} has no split {split!r}; splits: {sorted(sizes)}")
    if not 0 <= index < sizes[split]:
        raise InvalidRow(f"environment {env.name!r}: index {index} is outside split {split!r} "
                         f"(0..{sizes[split] - 1})")


def seeded_rng(*parts: object) -> random.Random:
    """A generator seeded from ``parts`` (environment, split, seed, index): the same row for the same parts."""
    return random.Random(":".join(str(p) for p in parts))
