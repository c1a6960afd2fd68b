"""Every adapter of the front door, in the order their routes are matched."""

from __future__ import annotations

from reward_service.http_door import (
    classify,
    gym_env,
    json_score,
    nemo_gym,
    openenv_door,
    openrlhf,
    ors,
    sandbox_fusion,
    slime,
)
from reward_service.http_door.door import RouteFactory

ALL_ADAPTERS: list[RouteFactory] = [
    json_score.routes,
    nemo_gym.routes,
    sandbox_fusion.routes,
    openrlhf.routes,
    slime.routes,
    classify.routes,
    gym_env.routes,
    openenv_door.routes,
    ors.routes,  # last: its /{env}/... routes are matched after every fixed path
]
