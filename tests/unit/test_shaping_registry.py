"""Tasks over a base task in the registry: which base, in what order, and the errors that name the fix."""

from __future__ import annotations

import pytest

from reward_service.router.registry import TaskLoadError, TaskRegistry, build_registry
from reward_service.router.rewards_config import RewardsConfig
from reward_service.tasks.math_task import MathTask
from reward_service.tasks.shaped_tasks import CosineScaledTask

BOXED = r"\boxed{3}"


def _registry(tasks: dict) -> TaskRegistry:
    return build_registry(RewardsConfig.from_dict({"tasks": tasks}))


def test_the_shaping_tasks_are_registered_with_math_as_their_base():
    registry = build_registry(RewardsConfig())
    assert {"repetition_penalty", "tag_count", "soft_overlong", "cosine_scaled", "reasoning_accuracy",
            "kimi_length"} <= set(registry.names())
    assert registry.get("cosine_scaled").score(BOXED, {"answer": "3"}).components["correct"] == 1.0


def test_a_reconfigured_base_reaches_the_default_shaping_task():
    registry = _registry({"math": {"options": {"strict": True}}})
    assert registry.get("cosine_scaled").score("The answer is 3", {"answer": "3"}).components["correct"] == 0.0


def test_a_variant_can_shape_a_variant_defined_below_it():
    registry = _registry({
        "cos_think": {"task": "cosine_scaled", "options": {"base": "think_strict", "max_len": 10}},
        "think_strict": {"task": "reasoning_accuracy", "options": {"base": "math_strict"}},
        "math_strict": {"task": "math", "options": {"strict": True}},
    })
    outcome = registry.get("cos_think").score("<think>3</think>The answer is 3", {"answer": "3"})
    assert outcome.components["correct"] == 0.0  # strict math takes no "The answer is" after </think>
    assert registry.get("cos_think").score(r"<think>x</think>\boxed{3}", {"answer": "3"}).components["correct"] == 1.0


def test_an_unknown_base_fails_at_load_naming_it():
    with pytest.raises(TaskLoadError, match="'nope' is not registered"):
        _registry({"c": {"task": "cosine_scaled", "options": {"base": "nope"}}})


def test_bases_in_a_cycle_fail_at_load():
    with pytest.raises(TaskLoadError, match="cycle"):
        _registry({"a": {"task": "cosine_scaled", "options": {"base": "b"}},
                   "b": {"task": "cosine_scaled", "options": {"base": "a"}}})


def test_a_task_cannot_be_its_own_base():
    with pytest.raises(TaskLoadError, match="own base"):
        _registry({"c": {"task": "cosine_scaled", "options": {"base": "c"}}})


def test_a_base_that_is_not_a_name_is_refused():
    with pytest.raises(TaskLoadError, match="option 'base'"):
        _registry({"c": {"task": "cosine_scaled", "options": {"base": 3}}})


def test_bad_shaping_options_fail_at_load_with_the_task_name():
    with pytest.raises(TaskLoadError, match="'c'"):
        _registry({"c": {"task": "cosine_scaled", "options": {"max_len": 0}}})


def test_a_plain_variant_named_like_a_shaping_task_is_kept():
    registry = _registry({"cosine_scaled": {"task": "math"}})
    assert isinstance(registry.get("cosine_scaled"), MathTask)


def test_registering_a_shaping_class_after_its_base_builds_it_at_once():
    registry = TaskRegistry()
    registry.register_class(MathTask)
    registry.register_class(CosineScaledTask)
    assert "cosine_scaled" in registry


def test_a_composite_can_take_a_shaping_task_as_a_component():
    registry = build_registry(RewardsConfig.from_dict(
        {"rewards": {"r": {"components": {"cosine_scaled": 1.0, "repetition_penalty": 1.0}}}}))
    assert registry.get("r").score(BOXED, {"answer": "3"}).components["repetition_penalty"] == 0.0


def test_the_shipped_rewards_config_loads():
    registry = build_registry(RewardsConfig.from_yaml("configs/rewards.yaml"))
    assert registry.get("math_kimi_length").groupwise and not registry.get("r1_shaped").groupwise
