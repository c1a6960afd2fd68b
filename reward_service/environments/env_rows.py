"""Resolving what an episode or a trajectory names: the environment, its task row, and the prompt's text.

A row is given, or picked by ``split`` and ``index`` from the environment's rows (index -1: one picked
by the seed). What cannot be resolved is the client's error (EpisodeSpecError); an environment that
raises making its row, or whose task this server does not register, is ours (EpisodeError ERROR).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reward_core.episode_contract import EpisodeError, EpisodeSpecError, EpisodeStatus
from reward_service.environments.answer_check import AnswerVerifier
from reward_service.environments.env_api import Environment, InvalidRow, check_index
from reward_service.environments.env_registry import EnvironmentRegistry, UnknownEnvironment


def resolve_row(environments: EnvironmentRegistry, verifier: AnswerVerifier, name: str,
                row: Mapping[str, Any] | None, split: str, index: int,
                seed: int) -> tuple[Environment, Mapping[str, Any], int]:
    """The environment, the row (given, or ``split``/``index`` of its rows; index -1: one picked by the
    seed) and the index; EpisodeSpecError for what cannot be resolved."""
    try:
        env = environments.get(name)
    except UnknownEnvironment as exc:
        raise EpisodeSpecError(exc.args[0]) from None
    if not verifier.has_task(env.task):
        raise EpisodeError(EpisodeStatus.ERROR, f"environment {name!r} is verified by task {env.task!r}, "
                                                "which this server does not register")
    if row is not None:
        return env, row, -1
    split = split or "train"
    size = env.splits().get(split, 0)
    if index < 0 and size:
        index = seed % size
    try:
        check_index(env, split, index)
        return env, env.row(split, index, seed), index
    except InvalidRow as exc:
        raise EpisodeSpecError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug
        raise EpisodeError(EpisodeStatus.ERROR, f"environment {name!r} failed to make row {index} of "
                                                f"{split!r}: {type(exc).__name__}: {exc}") from exc


def prompt_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """The prompt as the task sees it: the user messages' text."""
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
