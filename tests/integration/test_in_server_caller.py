"""A task that runs in the server scores inside its request's context: it sees the caller's client id
(what a judge task shares its endpoint by, ``JudgeClient.complete(caller="")``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_core.log_context import current_client_id
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from reward_service.task_api import Task, TaskOutcome
from tests.integration.conftest import start_server
from trainer_client import RewardClient


class ClientIdTask(Task):
    """Scores 1 and reports, as its extracted answer, the client id it ran under."""

    name = "client_id_probe"
    runs_in_server = True
    cacheable = False
    canary_exemption = "a probe of the request context, not a verifier"

    def score(self, completion: str, reference: Mapping[str, Any], prompt: str = "") -> TaskOutcome:
        return TaskOutcome(1.0, extracted=current_client_id())


def test_an_in_server_task_sees_the_callers_client_id() -> None:
    rewards = RewardsConfig(tasks=(TaskSpec("probe", f"{__name__}:ClientIdTask"),), load_entry_points=False)
    server = start_server(workers=1, rewards=rewards)
    try:
        seen = {}
        for who in ("trainer-a", "trainer-b"):
            with RewardClient(server.address, timeout_s=60, client_id=who) as client:
                [result] = client.score([{"id": "1", "task": "probe", "completion": "x"}])
            seen[who] = result.extracted
        assert seen == {"trainer-a": "trainer-a", "trainer-b": "trainer-b"}
    finally:
        server.stop(0)
