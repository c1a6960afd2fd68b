"""ORS's shapes from and to the episode contract, as pure functions (the routes are in ``ors.py``).

Shapes of openreward 0.1.167 (``environments/types.py``): ``ListToolsOutput``, ``RunToolOutput``
(``RunToolSuccess``/``RunToolError``), ``ScoreGroupOutput``; task specs are ours (``{"split", "index"}``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from reward_core.episode_contract import EnvironmentInfo, EpisodeSpec, EpisodeStatus, ToolResult, TrajectoryScore
from reward_service.http_door.ors_messages import text_block
from reward_service.http_door.ors_sessions import OrsError, OrsSession
from reward_service.http_door.sse import chunk_data

#: Block types accepted in ``score_group`` candidates (advertised as ``message_block_types``).
MESSAGE_BLOCK_TYPES = ["text", "image", "reasoning", "tool_call", "tool_result"]
#: Keys of the task specs this door lists (any other spec is a row).
TASK_SPEC_KEYS = frozenset({"split", "index", "seed"})


class CallFailed(Exception):
    """Streamed work failed on our side: answered as an SSE ``error`` event (never as a reward)."""


def split_type(name: str) -> str:
    """ORS's split type: train/validation/test by name, any other split counts as validation."""
    return name if name in ("train", "validation", "test") else "validation"


def task_spec(split: str, index: int) -> dict[str, Any]:
    """The ORS task spec of one row (the row itself, with its reference, stays on the server)."""
    return {"split": split, "index": index}


def row_index(index: int, size: int) -> int:
    """A row index as Python indexes a list (negative from the end); 400 outside the split."""
    if not -size <= index < size:
        raise OrsError(400, "Invalid index")
    return index % size


def episode_spec(info: EnvironmentInfo, spec: Mapping[str, Any], client_id: str = "") -> EpisodeSpec:
    """What to open for an ORS task spec: one of our ``{split, index[, seed]}`` specs, else a row."""
    if {"split", "index"} <= set(spec) <= TASK_SPEC_KEYS:
        split, index, seed = spec["split"], spec["index"], spec.get("seed", 0)
        if not isinstance(split, str) or split not in info.splits:
            raise OrsError(400, "Invalid split")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(seed, int):
            raise OrsError(422, "a task spec's index and seed must be integers")
        return EpisodeSpec(info.name, split=split, index=row_index(index, info.splits[split]), seed=seed,
                           client_id=client_id)
    return EpisodeSpec(info.name, row=dict(spec), client_id=client_id)


def tools_output(tools: Any) -> dict[str, Any]:
    """ORS's ``ListToolsOutput`` for our tool specs (no terminal tool; group scoring supported)."""
    return {"tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                      for t in tools],
            "terminal_tool": None, "supports_score_group": True, "message_block_types": MESSAGE_BLOCK_TYPES}


def tool_error(reason: str, error: str) -> dict[str, Any]:
    """ORS's ``RunToolError``: a call that was not run (the caller's to fix, the session lives)."""
    return {"ok": False, "error": error, "reason": reason}


def tool_output(session: OrsSession, result: ToolResult) -> dict[str, Any]:
    """ORS's ``RunToolSuccess`` for a tool's answer; :class:`CallFailed` for an unscored one."""
    if not result.status.scored and result.status is not EpisodeStatus.RUNNING:
        session.ended = result.status
        raise CallFailed(f"{result.status.name}: {result.error or result.output}")
    outcome = result.outcome
    metadata: dict[str, Any] = {**result.metadata, "call_id": result.call_id, "elapsed_ms": result.elapsed_ms}
    reward = result.reward
    if result.finished:
        session.ended = outcome.status if outcome is not None else EpisodeStatus.FINISHED
        if outcome is not None:
            if not outcome.status.scored:
                raise CallFailed(f"{outcome.status.name}: {outcome.error or outcome.detail}")
            metadata["step_reward"], reward = result.reward, outcome.reward
            metadata["outcome"] = {"status": outcome.status.name, "reward": outcome.reward,
                                   "components": dict(outcome.components), "detail": outcome.detail,
                                   "step_rewards": list(outcome.step_rewards), "turns": outcome.turns}
    return {"ok": True, "output": {"blocks": [text_block(result.output)], "metadata": metadata,
                                   "reward": reward, "finished": result.finished}}


def group_scores(scores: list[TrajectoryScore]) -> dict[str, Any]:
    """ORS's ``ScoreGroupOutput``; :class:`CallFailed` naming every unscored candidate."""
    failed = [f"candidate {i}: {s.status.name}: {s.error or s.detail}" for i, s in enumerate(scores)
              if not s.status.scored or s.reward is None]
    if failed:
        raise CallFailed("unscored (no reward, not 0): " + "; ".join(failed))
    return {"scores": [{"reward": s.reward, "metadata": {
        "status": s.status.name, "components": dict(s.components), "detail": s.detail,
        "turn_rewards": {str(k): v for k, v in s.turn_rewards.items()}}} for s in scores]}


async def result_events(task_id: str, run: asyncio.Task[str] | None, chunk_chars: int
                        ) -> AsyncIterator[tuple[str, str]]:
    """The SSE events of one run: ``task_id``, then its result in chunks ending with ``end``, or ``error``."""
    if run is None:
        yield "error", "unknown task_id"
        return
    yield "task_id", task_id
    try:
        text = await asyncio.shield(run)
    except CallFailed as exc:
        yield "error", str(exc)
        return
    except asyncio.CancelledError:
        if not run.cancelled():
            raise  # this stream was cancelled (its client left): the run goes on
        yield "error", "the call was cancelled: the server is stopping"
        return
    except Exception as exc:  # noqa: BLE001 - a bug of ours or the host's: an error event, not a reward
        yield "error", f"ERROR: {type(exc).__name__}: {exc}"
        return
    pieces = chunk_data(text, chunk_chars)
    for piece in pieces[:-1]:
        yield "chunk", piece
    yield "end", pieces[-1]
