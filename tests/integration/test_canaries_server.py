"""A server's start-up checks: ``--strict-canaries`` refuses to start on a task that rewards a canary;
without it the server serves at once, runs its tasks' self-checks and canaries in the background, and
reports them (log, ListTasks over gRPC and the HTTP door's ``/v1/tasks``)."""

from __future__ import annotations

import httpx
import pytest

from reward_core.clients.reward import RewardClient
from reward_core.contract import Rollout, TaskChecks
from reward_service.cli import main
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from tests.canary_tasks import HeldSelfCheck
from tests.http_fixtures import running_door
from tests.integration.conftest import start_server

HEDGE_LOVER = TaskSpec("hedge_lover", "tests.canary_tasks:HedgeLover")
HELD = TaskSpec("held_self_check", "tests.canary_tasks:HeldSelfCheck")


def test_strict_canaries_refuses_to_start(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rewards.yaml"
    config.write_text("tasks:\n  hedge_lover: {task: 'tests.canary_tasks:HedgeLover'}\n")
    code = main(["serve", "--port", "0", "--workers", "1", "--grace-s", "0", "--strict-canaries",
                 "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert "--strict-canaries refuses to start" in err and "hedge_lover" in err and "(gold last)" in err


def test_without_strict_canaries_the_server_serves_and_reports_them() -> None:
    server = start_server(workers=1, rewards=RewardsConfig(tasks=(HEDGE_LOVER,)))
    try:
        scorer = server.scorer
        assert scorer.startup_checks.wait(120)
        assert "hedge_lover" in scorer.self_check_report.canary_failures
        assert scorer.self_check_report.canaries["gsm8k"].passed
        result = scorer.score([Rollout("r", "hedge_lover", "72 or 73", {"answer": "72"})]).results[0]
        assert result.scored and result.score == 1.0  # reported, not refused: the task still scores
    finally:
        server.stop(0)



def test_the_server_serves_before_its_self_checks_end_and_lists_what_the_checks_found() -> None:
    HeldSelfCheck.RELEASE.clear()
    server = start_server(workers=1, rewards=RewardsConfig(tasks=(HEDGE_LOVER, HELD)))
    try:
        with RewardClient(server.address, timeout_s=60) as client:
            # Serving while held_self_check's self-check still waits: no task's checks are done yet.
            before = {t.name: t.checks for t in client.list_tasks()}
            assert before["held_self_check"] == TaskChecks() and before["gsm8k"] == TaskChecks()
            assert client.score([Rollout("r", "gsm8k", "#### 72", {"answer": "72"})])[0].score == 1.0
            HeldSelfCheck.RELEASE.set()
            assert server.scorer.startup_checks.wait(120)
            after = {t.name: t.checks for t in client.list_tasks()}
        assert server.scorer.self_check_failures["held_self_check"] == ["known case 1 graded wrong"]
        held = after["held_self_check"]
        assert held.done and held.self_check_failures == ("known case 1 graded wrong",)
        assert held.canaries_declared == held.canaries_passed > 0 and held.canaries_failed == 0
        hedge = after["hedge_lover"]
        assert hedge.done and hedge.canaries_failed == len(hedge.failed_canaries) > 0
        assert hedge.canaries_passed + hedge.canaries_failed == hedge.canaries_declared
        assert any("(gold last)" in name for name in hedge.failed_canaries)
        assert after["gsm8k"].done and after["gsm8k"].canaries_failed == 0 and not after["gsm8k"].self_check_failures
        with running_door(server.address) as door:
            listed = {t["name"]: t for t in httpx.get(f"{door}/v1/tasks", timeout=60).json()["tasks"]}
        assert listed["hedge_lover"]["checks"]["canariesFailed"] == hedge.canaries_failed
        assert listed["held_self_check"]["checks"]["selfCheckFailures"] == ["known case 1 graded wrong"]
    finally:
        HeldSelfCheck.RELEASE.set()
        server.stop(0)
