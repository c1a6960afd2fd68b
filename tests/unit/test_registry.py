"""Task registry: entry points, config variants, composites, function tasks."""

import pytest

from reward_service.router.registry import TaskLoadError, TaskRegistry, UnknownTask, build_registry
from reward_service.router.rewards_config import RewardsConfig, RewardsConfigError
from reward_service.task_api import InvalidReference, Task, TaskOutcome, function_task


def test_builtin_tasks_are_discovered_through_entry_points():
    assert {"math", "gsm8k", "format"} <= set(build_registry(RewardsConfig()).names())


def test_unknown_task_lookup_names_the_registered_ones():
    with pytest.raises(UnknownTask, match="gsm8k"):
        build_registry(RewardsConfig()).get("nope")


def test_composite_reward_from_yaml_is_a_weighted_sum():
    config = RewardsConfig.from_dict({"rewards": {"mf": {"components": {"math": 1.0, "format": 0.5}}}})
    task = build_registry(config).get("mf")
    outcome = task.score("<think>x</think><answer>\\boxed{3}</answer>", {"answer": "3"})
    assert outcome.score == 1.5 and outcome.components == {"math": 1.0, "format": 1.0}
    assert task.score("\\boxed{2}", {"answer": "3"}).score == 0.0


def test_task_variant_gets_its_options():
    config = RewardsConfig.from_dict({"tasks": {"strict": {"task": "math", "options": {"strict": True}}}})
    registry = build_registry(config)
    assert registry.get("strict").score("The answer is 3", {"answer": "3"}).score == 0.0
    assert registry.get("math").score("The answer is 3", {"answer": "3"}).score == 1.0


def test_task_loaded_by_import_path():
    config = RewardsConfig.from_dict({"tasks": {"wc": {"task": "examples.word_count_task:WordCountTask"}}})
    assert "wc" in build_registry(config)


def test_bad_task_options_fail_at_load_with_the_task_name():
    config = RewardsConfig.from_dict({"tasks": {"m": {"task": "math", "options": {"strictt": True}}}})
    with pytest.raises(TaskLoadError, match="'m'"):
        build_registry(config)


def test_composite_with_an_unknown_component_fails_at_load():
    config = RewardsConfig.from_dict({"rewards": {"x": {"components": {"nope": 1}}}})
    with pytest.raises(TaskLoadError, match="nope"):
        build_registry(config)


@pytest.mark.parametrize("data, fragment", [
    ({"reward": {}}, "unknown top-level"),
    ({"rewards": {"x": {"components": {"math": "heavy"}}}}, "must be a number"),
    ({"rewards": {"x": {}}}, "needs 'components'"),
])
def test_malformed_rewards_config_says_what_to_fix(data, fragment):
    with pytest.raises(RewardsConfigError, match=fragment):
        RewardsConfig.from_dict(data)


def test_function_task_wraps_a_plain_function():
    @function_task(name="short", description="shorter is better")
    def short(completion, reference, prompt):
        return 1.0 / (1 + len(completion))

    registry = TaskRegistry()
    registry.register_class(short)
    assert registry.get("short").score("abc", {}) == TaskOutcome(0.25)
    assert registry.infos()[0].description == "shorter is better"


def test_missing_required_reference_field_is_invalid_reference():
    class Needs(Task):
        name = "needs"
        required_reference_fields = ("answer",)

        def score(self, completion, reference, prompt=""):
            return TaskOutcome(1.0)

    with pytest.raises(InvalidReference, match="answer"):
        Needs().check_reference({})


def test_tasks_that_call_a_service_take_the_servers_endpoints_unless_their_options_name_one():
    from reward_service.router.rewards_config import TaskEndpoints, TaskSpec

    endpoints = TaskEndpoints(sandbox_endpoint="sandbox:50053", rm_endpoint="rm:50052", prm_endpoint="prm:50052")
    config = RewardsConfig(tasks=(TaskSpec("rm_other", "rm", {"endpoint": "other:1"}),
                                  TaskSpec("rm_none", "rm", {"endpoint": ""}),
                                  TaskSpec("rm_null", "rm", {"endpoint": None})))
    registry = build_registry(config, endpoints=endpoints)
    assert [registry.get(n).endpoint for n in ("code", "rm", "prm")] == ["sandbox:50053", "rm:50052", "prm:50052"]
    assert [registry.get(n).endpoint for n in ("rm_other", "rm_none", "rm_null")] == ["other:1", "", "rm:50052"]
    assert build_registry(RewardsConfig()).get("rm").endpoint == ""  # no server setting: no endpoint


def test_the_serve_command_reads_the_endpoints_from_the_variables_containers_set(monkeypatch):
    from reward_service.cli import _server_config, build_parser

    monkeypatch.setenv("REWARD_SERVICE_SANDBOX_ENDPOINT", "dns:///sandbox:50053")  # docker-compose.yml, deploy/k8s
    monkeypatch.setenv("REWARD_SERVICE_RM_ENDPOINT", "dns:///rm:50052")
    monkeypatch.setenv("REWARD_SERVICE_PRM_ENDPOINT", "prm:50052")
    endpoints = _server_config(build_parser().parse_args(["serve"])).scorer.endpoints
    assert (endpoints.sandbox_endpoint, endpoints.rm_endpoint, endpoints.prm_endpoint) == (
        "dns:///sandbox:50053", "dns:///rm:50052", "prm:50052")
