"""Groups for a groupwise reward (``TaskInfo.groupwise``: ``kimi_length``) through the peers' doors.

A groupwise task scores each completion against the other completions of its prompt, so its rollouts
need a ``group_id`` shared by the group, and the group in one request. Each peer's call says how much
of a group it holds:

- **OpenRLHF** repeats each prompt ``n_samples_per_prompt`` times, consecutively and with its label,
  and posts the rows of a micro-batch together (``query``/``prompts``/``labels``): a group is the rows
  of one call with the same prompt and label (:func:`prompt_groups`). openrlhf 0.11's
  ``SingleTurnAgentExecutor`` posts one sample per call, so each group there has one member: a
  groupwise reward is refused then (:func:`lone_rows_refusal`), never answered with the 0 a group of
  one would get.
- **slime** (``remote_rm``) posts one sample per call with ``prompt``/``response``/``label`` only (no
  group index), and **NeMo Gym** verifies one row per call: neither call holds a group, so a groupwise
  reward is refused with that reason (:func:`no_group_refusal`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import grpc
from starlette.responses import Response

from reward_core.contract import Rollout
from reward_service.http_door.door import FrontDoor
from reward_service.http_door.errors import bad_request
from reward_service.http_door.upstream import upstream_error


async def is_groupwise(door: FrontDoor, reward: str) -> bool:
    """Whether the reward server's task (or composite) ``reward`` is groupwise (False when unknown)."""
    try:
        info = (await door.up.tasks_by_name()).get(reward)
    except grpc.RpcError as exc:  # gRPC's own or a client's typed error: same code() and details()
        raise upstream_error(exc) from None
    return info is not None and info.groupwise


def prompt_groups(rollouts: Sequence[Rollout]) -> list[Rollout]:
    """``rollouts`` with OpenRLHF's groups: rows of the call with the same prompt and reference share a
    ``group_id`` (the index of the group's first row)."""
    first: dict[tuple[str, str], int] = {}
    grouped = []
    for i, rollout in enumerate(rollouts):
        key = (rollout.prompt, json.dumps(rollout.reference, sort_keys=True, default=str))
        grouped.append(dataclasses.replace(rollout, group_id=f"g{first.setdefault(key, i)}"))
    return grouped


def without_lone_groups(rollouts: Sequence[Rollout]) -> list[Rollout]:
    """``rollouts`` with the group id of each row alone in its group cleared: a group of one says nothing
    (its statistics are one score), and the reward server would count it as a group, zero-variance
    (OpenRLHF's one-sample calls: every row)."""
    sizes: dict[str, int] = {}
    for rollout in rollouts:
        sizes[rollout.group_id] = sizes.get(rollout.group_id, 0) + 1
    return [dataclasses.replace(r, group_id="") if r.group_id and sizes[r.group_id] == 1 else r for r in rollouts]


def lone_rows_refusal(rollouts: Sequence[Rollout], reward: str) -> Response | None:
    """A 400 when a row of a groupwise ``reward``'s OpenRLHF call is alone in its group (None otherwise)."""
    sizes: dict[str, int] = {}
    for rollout in rollouts:
        sizes[rollout.group_id] = sizes.get(rollout.group_id, 0) + 1
    lone = [i for i, r in enumerate(rollouts) if sizes[r.group_id] == 1]
    if not lone:
        return None
    rows = ", ".join(str(i) for i in lone[:5]) + (f" and {len(lone) - 5} more" if len(lone) > 5 else "")
    return bad_request(
        f"reward {reward!r} scores each completion against its group, and an OpenRLHF group is the rows of "
        f"one call with the same prompt and label: row(s) {rows} have no other row of their prompt in this "
        "call, and a group of one has no reward to give. Send a prompt's n_samples_per_prompt samples in one "
        "call (openrlhf 0.11+ posts one sample per call: use a per-sample reward there, or our trainer / the "
        "gRPC API with group_id)")


def no_group_refusal(reward: str, peer: str, why: str) -> Response:
    """A 400 saying that ``peer``'s call cannot carry a group for the groupwise ``reward``, and ``why``."""
    return bad_request(f"reward {reward!r} scores each completion against its group (the other completions "
                       f"of its prompt), and a {peer} call holds no group: {why}. Use a per-sample reward "
                       "here, or score groups through /v1/score or the gRPC API with a group_id")
