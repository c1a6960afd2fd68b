"""Every adapter of the front door, in the order their routes are matched."""

from __future__ import annotations

from reward_service.http_door import classify, json_score, nemo_gym, openrlhf, sandbox_fusion, slime
from reward_service.http_door.door import RouteFactory

ALL_ADAPTERS: list[RouteFactory] = [
    json_score.routes,
    nemo_gym.routes,
    sandbox_fusion.routes,
    openrlhf.routes,
    slime.routes,
    classify.routes,
]
