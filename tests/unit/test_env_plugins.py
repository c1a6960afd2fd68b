"""Environment plugins: built-in rows are seeded and checkable, the registry checks what it registers."""

import pytest

from reward_service.environments.builtin_envs import ArithmeticTools, ArithmeticToolsShort, MathTools, operand_split
from reward_service.environments.env_api import Environment, EnvironmentLoadError, InvalidRow, PluginTool
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.env_registry import UnknownEnvironment, build_environment_registry


def test_arithmetic_rows_are_products_of_5_to_7_digit_numbers():
    env = ArithmeticTools()
    for index in range(50):
        row = env.row("train", index, seed=0)
        a, b = row["operands"]
        assert 10_000 <= a < 10_000_000 and 10_000 <= b < 10_000_000
        assert row["reference"]["answer"] == str(a * b) and row["prompt"] == f"What is {a} * {b}?"


def test_arithmetic_tools_short_rows_are_6_digit_products_of_3_digit_numbers():
    env = ArithmeticToolsShort()
    for index in range(100):
        row = env.row("test", index, seed=0)
        a, b = row["operands"]
        assert 100 <= a < 1000 and 100 <= b < 1000 and 100_000 <= a * b
        assert row["reference"]["answer"] == str(a * b) and row["prompt"] == f"What is {a} * {b}?"


class TwoDigitProducts(ArithmeticTools):
    name = "two_digit_products"
    digits = (2, 2)  # 4,095 unordered pairs: 500 rows per split drawn independently would share ~60


def test_no_operand_pair_is_in_both_splits_in_either_order():
    env = TwoDigitProducts()
    pairs = {split: {tuple(sorted(env.row(split, i, seed)["operands"])) for i in range(250) for seed in (0, 1)}
             for split in ("train", "test")}
    assert not pairs["train"] & pairs["test"]
    assert all(operand_split(a, b) == operand_split(b, a) == split for split in pairs for a, b in pairs[split])


@pytest.mark.parametrize(("digits", "product_digits"), [((1, 3), None), ((4, 3), None), ((3, 3), (4, 6)),
                                                       ((3, 3), (6, 7)), ((3, 3), (6, 5))])
def test_arithmetic_digit_ranges_must_be_possible(digits, product_digits):
    env = type("Bad", (ArithmeticTools,), {"name": "bad", "digits": digits, "product_digits": product_digits})()
    with pytest.raises(EnvironmentLoadError, match="digits"):
        env.check()


@pytest.mark.parametrize("env", [ArithmeticTools(), ArithmeticToolsShort(), MathTools()], ids=lambda e: e.name)
def test_rows_depend_on_split_seed_and_index_only(env):
    assert env.row("train", 3, 7) == env.row("train", 3, 7)
    assert env.row("train", 3, 7) != env.row("test", 3, 7)
    assert env.row("train", 3, 7) != env.row("train", 3, 8)
    assert set(env.splits()) == {"train", "test"}


@pytest.mark.parametrize(("split", "index"), [("dev", 0), ("test", 1000), ("train", -1)])
def test_a_row_outside_the_splits_is_invalid(split, index):
    with pytest.raises(InvalidRow):
        ArithmeticTools().row(split, index, 0)


def test_math_tools_reads_math_and_gsm8k_style_rows():
    env = MathTools()
    row = {"question": "2+2?", "answer": 4}
    assert env.prompt(row)[-1] == {"role": "user", "content": "2+2?"} and env.reference(row) == {"answer": "4"}
    with pytest.raises(InvalidRow):
        env.reference({"question": "2+2?"})


class _Bad(Environment):
    name = "bad"

    def splits(self):
        return {"train": 1}

    def row(self, split, index, seed):
        return {}


def test_the_registry_refuses_unknown_built_in_tools_and_clashing_plugin_tools():
    registry = build_environment_registry(load_entry_points=False)
    unknown = _Bad()
    unknown.tools = ("shell",)
    with pytest.raises(EnvironmentLoadError, match="unknown built-in tool"):
        registry.add(unknown)
    clash = _Bad()
    clash.plugin_tools = lambda: (PluginTool("python", lambda a, c: ""),)
    with pytest.raises(EnvironmentLoadError, match="clash"):
        registry.add(clash)


def test_the_built_ins_are_registered_and_an_unknown_name_says_which_are():
    registry = build_environment_registry(load_entry_points=True)
    assert {"arithmetic_tools", "arithmetic_tools_short", "math_tools"} <= set(registry.names())
    with pytest.raises(UnknownEnvironment, match="arithmetic_tools"):
        registry.get("nope")


@pytest.mark.parametrize("change", [{"max_sessions": 0}, {"queue_timeout_s": float("inf")},
                                    {"episode_deadline_s": 7200.0}, {"program_timeout_s": 60.0}])
def test_a_bad_config_says_which_flag_to_fix(change):
    with pytest.raises(ValueError, match="environments: "):
        EnvironmentsConfig(**change)
