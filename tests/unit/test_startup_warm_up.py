"""The start-up checks first compute every task's version hash, so the first ListTasks hashes nothing."""

from __future__ import annotations

import logging

import pytest

from reward_service.router import versioning
from reward_service.router.registry import build_registry, start_checks
from reward_service.router.rewards_config import RewardsConfig
from reward_service.router.startup_checks import SelfCheckReport, StartupChecks


def test_after_the_start_up_run_listing_the_tasks_reads_no_source() -> None:
    registry = build_registry(RewardsConfig())
    checks = start_checks(registry, SelfCheckReport({}))
    try:
        assert checks.wait(timeout=600)
    finally:
        checks.stop()
    before = versioning._file_facts.cache_info()
    infos = registry.infos()
    after = versioning._file_facts.cache_info()
    assert after.misses == before.misses, "infos() hashed a source file the warm-up should have hashed"
    assert all(info.verifier_version for info in infos)


def test_the_warm_up_runs_before_the_self_checks_and_its_failure_is_only_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    order: list[str] = []

    class Task:
        def self_check(self) -> list[str]:
            order.append("self_check")
            return []

    def warm() -> None:
        order.append("warm")
        raise RuntimeError("cannot hash")

    report = SelfCheckReport({})
    with caplog.at_level(logging.WARNING):
        StartupChecks(["t"], lambda name: Task(), report, canaries=False, warm=warm).run()
    assert order == ["warm", "self_check"]
    assert report.self_checks_done.is_set() and not report.failures
    assert "warming up" in caplog.text and "cannot hash" in caplog.text
