"""Canaries: the adversarial completions every task runs at start-up, and what the registry does with them."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from reward_core.contract import RolloutStatus
from reward_service.router.canary_check import run_canaries
from reward_service.router.registry import TaskRegistry, build_registry, log_self_check
from reward_service.router.rewards_config import RewardsConfig
from reward_service.task_api import TaskOutcome
from reward_service.tasks.canaries import HUGE_CHARS, candidate_orders, generic_canaries
from reward_service.tasks.math_task import MathTask
from reward_service.tasks.reasoning_gym_entries import BROKEN_SCORERS, DATASETS
from reward_service.tasks.reasoning_gym_task import ReasoningGymTask
from tests.canary_tasks import HedgeLover, NoCanaries, RaisingOnCanary, SlowCanaries

ROOT = Path(__file__).resolve().parents[2]

#: The shipped rewards config, and variants whose options change what a canary may score.
VARIANTS = {
    "tool_call_fraction": {"task": "tool_call", "options": {"reward": "fraction"}},
    "steps_process": {"task": "steps", "options": {"outcome_weight": 0.0, "process_weight": 1.0}},
    "steps_math": {"task": "steps", "options": {"outcome": "math", "process_weight": 0.5}},
    "math_no_fallback": {"task": "math", "options": {"last_number_fallback": False}},
    "math_dapo_after_think": {"task": "reasoning_accuracy", "options": {"base": "math_dapo"}},
    "cosine_gsm8k": {"task": "cosine_scaled", "options": {"base": "gsm8k"}},
    "exact_case": {"task": "exact_match", "options": {"case_sensitive": True}},
    "similarity_indel": {"task": "string_similarity", "options": {"algorithm": "indel"}},
    "json_object": {"task": "json_valid", "options": {"top_level": "object"}},
    "mcqa_boxed": {"task": "mcqa", "options": {"grading_mode": "strict_single_letter_boxed"}},
    "mcqa_lenient_boxed": {"task": "mcqa", "options": {"grading_mode": "lenient_boxed"}},
    "mcqa_colon": {"task": "mcqa", "options": {"grading_mode": "lenient_answer_colon"}},
    "mcqa_colon_md": {"task": "mcqa", "options": {"grading_mode": "lenient_answer_colon_md"}},
    "ifeval_after_think": {"task": "ifeval", "options": {"after_think": True}},
    "overlong_short": {"task": "soft_overlong", "options": {"max_completion_len": 4096, "soft_punish_cache": 1024}},
    "repetition_words": {"task": "repetition_penalty", "options": {"ngram_size": 1, "max_penalty": -0.5}},
    "rg:leg_counting": {},
}


def _shipped_with_variants() -> RewardsConfig:
    shipped = RewardsConfig.from_yaml(ROOT / "configs" / "rewards.yaml")
    variants = RewardsConfig.from_dict({"tasks": VARIANTS})
    return RewardsConfig(tasks=shipped.tasks + variants.tasks, rewards=shipped.rewards)


REGISTRY = build_registry(_shipped_with_variants())


def _registry(*classes) -> TaskRegistry:
    registry = TaskRegistry()
    for cls in classes:
        registry.register_class(cls)
    return registry


def test_a_task_that_rewards_a_canary_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reward_service.router.canary_check"):
        report = log_self_check(_registry(HedgeLover, MathTask))
    assert list(report.canary_failures) == ["hedge_lover"]
    assert [r.canary for r in report.canary_failures["hedge_lover"]] == [
        "hedge: 'or' list (gold in the middle)", "hedge: 'or' list (gold last)"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'hedge_lover'" in m and "hedge: 'or' list (gold last)" in m and "scored 1" in m for m in warnings)
    assert report.canaries["math"].results and report.canaries["math"].passed


def test_a_verifier_that_raises_on_a_canary_fails_it() -> None:
    report = run_canaries("raising_on_canary", RaisingOnCanary())
    (failure,) = report.failures
    assert failure.canary == "empty answer" and failure.status == "RAISED" and "IndexError" in failure.detail


def test_a_task_without_canaries_says_why() -> None:
    registry = build_registry(RewardsConfig.from_dict({"rewards": {"both": {"components": {"math": 1, "format": 1}}}}))
    registry.register_class(NoCanaries)
    report = log_self_check(registry)
    assert "runs in the server" in report.canaries["code"].skipped
    assert "runs in the server" in report.canaries["rm"].skipped
    assert "composite" in report.canaries["both"].skipped
    assert "groupwise" in report.canaries["kimi_length"].skipped
    assert report.canaries["no_canaries"].skipped == "declares no canaries"


def test_a_canary_run_stops_at_its_budget() -> None:
    report = run_canaries("slow_canaries", SlowCanaries(), budget_s=0.01)
    assert len(report.results) < 5 and report.over_budget and report.passed


def test_an_unscored_outcome_passes_and_a_score_over_the_ceiling_fails() -> None:
    (empty, *_), unscored = generic_canaries({}), TaskOutcome(5.0, RolloutStatus.ERROR)
    assert empty.passes(unscored) and empty.passes(TaskOutcome(0.0)) and not empty.passes(TaskOutcome(0.01))


def test_generic_canaries_fit_the_servers_completion_limit_and_hedges_put_the_gold_last() -> None:
    assert max(len(c.completion) for c in generic_canaries({})) == HUGE_CHARS <= 1_000_000
    assert [c[-1] for _, c in candidate_orders("72", ["70", "71", "73"])] == ["73", "72"]


@pytest.mark.parametrize("name", REGISTRY.checked_names())
def test_every_builtin_task_passes_its_canaries(name: str) -> None:
    # No time budget here: this checks verdicts, and a slow machine must not skip canaries.
    report = run_canaries(name, REGISTRY.get(name), budget_s=math.inf)
    if report.skipped:
        assert report.skipped != "declares no canaries", f"{name}: a built-in task declares canaries or says why not"
        return
    assert report.passed, "\n".join(r.describe() for r in report.failures)


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_rg_dataset_passes_its_canaries_without_partial_credit(dataset: str) -> None:
    # With partial credit (the default) a dataset's own score_answer pays what it pays: docs/tasks.md lists
    # the datasets whose partial credit reaches a hedge or an echo.
    report = run_canaries(f"rg:{dataset}", ReasoningGymTask(dataset, partial_credit=False), budget_s=math.inf)
    if report.failures and dataset in BROKEN_SCORERS:
        pytest.xfail(BROKEN_SCORERS[dataset])
    assert report.results and report.passed, "\n".join(r.describe() for r in report.failures)
