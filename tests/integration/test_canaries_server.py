"""A server's canaries at start-up: ``--strict-canaries`` refuses to start on a task that rewards one;
without it the server serves and reports them."""

from __future__ import annotations

import pytest

from reward_core.contract import Rollout
from reward_service.cli import main
from reward_service.router.rewards_config import RewardsConfig, TaskSpec
from tests.integration.conftest import start_server

HEDGE_LOVER = TaskSpec("hedge_lover", "tests.canary_tasks:HedgeLover")


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
        assert scorer.canary_run.wait(120)
        assert "hedge_lover" in scorer.self_check_report.canary_failures
        assert scorer.self_check_report.canaries["gsm8k"].passed
        result = scorer.score([Rollout("r", "hedge_lover", "72 or 73", {"answer": "72"})]).results[0]
        assert result.scored and result.score == 1.0  # reported, not refused: the task still scores
    finally:
        server.stop(0)

