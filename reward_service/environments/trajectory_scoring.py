"""Scoring a finished conversation without running it: its final answer verified, its turns rewarded.

The trajectory names its environment and row (given, or a split and index); the answer is read from
the messages (``trajectory.py``) and verified within ``deadline_s`` by the environment's task, as a
submitted answer would be. Nothing is run again. Every failure is an unscored ERROR, never a 0.
"""

from __future__ import annotations

import asyncio

from reward_core.episode_contract import EpisodeSpecError, EpisodeStatus, Trajectory, TrajectoryScore
from reward_service.environments.answer_check import AnswerVerifier
from reward_service.environments.env_api import InvalidRow
from reward_service.environments.env_registry import EnvironmentRegistry
from reward_service.environments.env_rows import prompt_text, resolve_row
from reward_service.environments.trajectory import TrajectoryError, read_trajectory, turn_rewards


async def score_trajectory(environments: EnvironmentRegistry, verifier: AnswerVerifier, trajectory: Trajectory,
                           deadline_s: float) -> TrajectoryScore:
    """The trajectory's score; EpisodeSpecError when it names no row, or one that cannot be resolved."""
    row = trajectory.row or None
    if row is None and not trajectory.split:
        raise EpisodeSpecError("a trajectory needs its row, or the split and index of one")
    env, row, _ = resolve_row(environments, verifier, trajectory.environment, row, trajectory.split,
                              trajectory.index, trajectory.seed)
    try:
        reference, prompt = env.reference(row), prompt_text(env.prompt(row))
        read = read_trajectory(trajectory.messages)
    except (InvalidRow, TrajectoryError) as exc:
        return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"cannot score this trajectory: {exc}")
    except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
        return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"environment {env.name!r} raised "
                                                                         f"{type(exc).__name__}: {exc}")
    completion = env.completion(read.submitted[1]) if read.submitted else read.final_text
    try:
        check = await asyncio.wait_for(verifier.verify(env.task, completion, reference, prompt), deadline_s)
    except asyncio.TimeoutError:
        return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR,
                               error=f"verification took longer than {deadline_s:g} s")
    if not check.scored or check.reward is None:
        return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"verification failed: {check.error}")
    try:
        rewards = turn_rewards(read, lambda call, output: env.step_reward(call, output, row), check.reward)
    except Exception as exc:  # noqa: BLE001 - the environment's own code raised: its bug, unscored
        return TrajectoryScore(trajectory.id, EpisodeStatus.ERROR, error=f"step_reward of {env.name!r} raised "
                                                                         f"{type(exc).__name__}: {exc}")
    return TrajectoryScore(trajectory.id, EpisodeStatus.FINISHED, check.reward, rewards,
                           dict(check.components), check.detail)
