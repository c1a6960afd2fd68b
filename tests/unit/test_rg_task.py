"""The rg:<dataset> family: extraction, reference shapes, unscored cases, options, registry resolution."""

from __future__ import annotations

import subprocess
import sys

import pytest
from reasoning_gym.utils import extract_answer as their_extract

from reward_core.contract import RolloutStatus
from reward_service.router.registry import TaskLoadError, TaskRegistry, UnknownTask, build_registry
from reward_service.router.rewards_config import RewardsConfig
from reward_service.task_api import InvalidReference, InvalidTaskOptions, TaskInput
from reward_service.tasks import reasoning_gym_entries as entries
from reward_service.tasks.reasoning_gym_data import make_rows
from reward_service.tasks.reasoning_gym_task import ReasoningGymTask


def entry_of(dataset: str, seed: int = 0, index: int = 0) -> dict:
    return list(make_rows(f"rg:{dataset}", index + 1, seed))[index]["reference"]["entry"]


def answer(text: str) -> str:
    return f"<think>let me count</think>\n<answer>{text}</answer>"


def one(task: ReasoningGymTask, completion: str, reference: dict):
    """Scores as the server's worker does (an InvalidReference becomes that status)."""
    return task.score_batch([TaskInput(completion, reference)])[0]


@pytest.fixture(scope="module")
def legs():
    return ReasoningGymTask("leg_counting")


@pytest.fixture(scope="module")
def leg_entry():
    return entry_of("leg_counting")


# --- extraction ---------------------------------------------------------------------------------------------

EXTRACTION_CASES = [
    "<answer>42</answer>",
    "<answer> 42 </answer>",
    "<answer>\n  42\n</answer>",
    "<think>maybe <answer>1</answer></think> so <answer>2</answer>",
    "no tags at all",
    "<answer></answer>",
    "<answer>unclosed",
    "<answer>multi\nline\nanswer</answer> trailing",
]


@pytest.mark.parametrize("completion", EXTRACTION_CASES)
def test_extraction_agrees_with_reasoning_gyms_own(completion):
    assert entries.extract_answer(completion) == their_extract(completion)


def test_the_last_answer_tag_wins():
    assert entries.extract_answer("<answer>1</answer> no, <answer>2</answer>") == "2"


def test_another_tag_name_is_an_option():
    assert entries.extract_answer("<final>7</final><answer>8</answer>", tag="final") == "7"


def test_without_a_tag_the_whole_completion_after_thinking_is_the_answer():
    assert entries.extract_answer("<think>hmm</think>\n 12 ", tag="") == "12"
    assert entries.extract_answer("12", tag="", fallback_to_completion=False) == "12"
    assert entries.extract_answer("  ", tag="") is None


def test_fallback_to_completion_applies_only_when_no_tag_is_found():
    assert entries.extract_answer("<think>x</think> 12", fallback_to_completion=True) == "12"
    assert entries.extract_answer("<answer>3</answer> 12", fallback_to_completion=True) == "3"
    assert entries.extract_answer("<think>x</think> 12") is None


# --- scores -------------------------------------------------------------------------------------------------

def test_the_gold_in_answer_tags_scores_one(legs, leg_entry):
    outcome = one(legs, answer(leg_entry["answer"]), {"entry": leg_entry})
    assert (outcome.status, outcome.score, outcome.extracted) == (RolloutStatus.OK, 1.0, leg_entry["answer"])


def test_a_wrong_answer_is_a_scored_zero(legs, leg_entry):
    outcome = one(legs, answer("-1"), {"entry": leg_entry})
    assert (outcome.status, outcome.score) == (RolloutStatus.OK, 0.0)


def test_no_answer_tag_is_no_answer_scored_zero(legs, leg_entry):
    outcome = one(legs, leg_entry["answer"], {"entry": leg_entry})
    assert (outcome.status, outcome.score) == (RolloutStatus.NO_ANSWER, 0.0)
    assert outcome.status.scored


def spelled_partly(entry: dict) -> str:
    """A spell_backward answer right but for its last letter: that dataset's own partial credit."""
    return entry["answer"][:-1] + ("z" if entry["answer"][-1] != "z" else "y")


def test_partial_credit_is_reasoning_gyms_own_score():
    import reasoning_gym

    entry = entry_of("spell_backward")
    theirs = reasoning_gym.get_score_answer_fn("spell_backward")(spelled_partly(entry), entry)
    assert 0 < theirs < 1
    assert one(ReasoningGymTask("spell_backward"), answer(spelled_partly(entry)), {"entry": entry}).score == theirs


def test_containing_the_gold_earns_nothing(legs, leg_entry):
    import reasoning_gym

    longer = leg_entry["answer"] + "0"  # the default scorer pays len(gold)/len(answer): "80" for the gold 8
    assert 0 < reasoning_gym.get_score_answer_fn("leg_counting")(longer, leg_entry) < 1
    outcome = one(legs, answer(longer), {"entry": leg_entry})
    assert (outcome.status, outcome.score) == (RolloutStatus.OK, 0.0) and "not paid" in outcome.detail


def test_partial_credit_off_scores_only_a_full_score():
    entry = entry_of("spell_backward")
    binary = ReasoningGymTask("spell_backward", partial_credit=False)
    outcome = one(binary, answer(spelled_partly(entry)), {"entry": entry})
    assert outcome.score == 0.0 and "score_answer 0." in outcome.detail
    assert one(binary, answer(entry["answer"]), {"entry": entry}).score == 1.0


def test_a_raising_score_answer_is_error_unscored_with_the_reason():
    # prime_factorization's score_answer parses the answer with int(): a word raises ValueError.
    outcome = one(ReasoningGymTask("prime_factorization"), answer("seven"), {"entry": entry_of("prime_factorization")})
    assert outcome.status == RolloutStatus.ERROR and not outcome.status.scored
    assert "score_answer raised ValueError" in outcome.detail and outcome.extracted == "seven"


def test_a_score_answer_returning_no_number_is_error(monkeypatch, legs, leg_entry):
    scorer = legs._scorer({})
    monkeypatch.setattr(scorer, "score_answer", lambda answer, entry: "yes")
    outcome = one(legs, answer("1"), {"entry": leg_entry})
    assert outcome.status == RolloutStatus.ERROR and "not a score" in outcome.detail


def test_without_reasoning_gym_installed_scoring_is_error_not_zero(monkeypatch, leg_entry):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # import fails
    outcome = one(ReasoningGymTask("leg_counting"), answer("1"), {"entry": leg_entry})
    assert outcome.status == RolloutStatus.ERROR and "pip install 'reward-suite[rg]'" in outcome.detail


# --- reference shapes -------------------------------------------------------------------------------------

def test_the_entry_flattened_into_the_reference_is_accepted(legs, leg_entry):
    assert one(legs, answer(leg_entry["answer"]), dict(leg_entry)).score == 1.0


def test_a_bare_gold_is_enough_where_score_answer_reads_only_the_answer(legs, leg_entry):
    assert one(legs, answer(leg_entry["answer"]), {"answer": leg_entry["answer"]}).score == 1.0
    assert one(legs, answer(leg_entry["answer"]), {"answer": int(leg_entry["answer"])}).score == 1.0


def test_a_bare_gold_where_the_metadata_is_needed_is_invalid_reference():
    sudoku = ReasoningGymTask("sudoku")
    gold = entry_of("sudoku")["answer"]
    with pytest.raises(InvalidReference, match="whole entry"):
        sudoku.check_reference({"answer": gold})
    assert one(sudoku, answer(gold), {"answer": gold}).status == RolloutStatus.INVALID_REFERENCE


def test_arc_grids_survive_json(monkeypatch):
    entry = entry_of("arc_agi")  # JSON: the tuple grids of the metadata arrived as lists
    assert isinstance(entry["metadata"]["output"], list)
    assert one(ReasoningGymTask("arc_agi"), answer(entry["answer"]), {"entry": entry}).score == 1.0


def test_a_goldless_dataset_accepts_an_entry_without_answer():
    entry = entry_of("graph_color")
    assert entry["answer"] is None
    ReasoningGymTask("graph_color").check_reference({"entry": entry})


@pytest.mark.parametrize("reference, fragment", [
    ({"entry": "leg_counting"}, "must be an object"),
    ({"entry": {"question": "q", "metadata": {}}}, "gold 'answer'"),
    ({}, "gold 'answer'"),
    ({"entry": {"answer": ["500"]}}, "must be a string"),
    ({"entry": {"answer": True}}, "must be a string"),
    ({"entry": {"answer": "5", "metadata": "none"}}, "'metadata' must be an object"),
    ({"entry": {"answer": "5", "metadata": {"source_dataset": "gcd"}}}, "score it as 'rg:gcd'"),
    ({"entry": {"answer": "5", "metadata": {"dataset_config": [1]}}}, "dataset_config must be an object"),
])
def test_an_unusable_reference_is_invalid_reference(legs, reference, fragment):
    with pytest.raises(InvalidReference, match=fragment):
        legs.check_reference(reference)
    outcome = one(legs, answer("5"), reference)
    assert outcome.status == RolloutStatus.INVALID_REFERENCE and not outcome.status.scored


def test_an_entry_of_another_reasoning_gym_version_is_invalid_reference(legs, leg_entry):
    old = {**leg_entry, "metadata": {**leg_entry["metadata"], "reasoning_gym_version": "0.1.3"}}
    outcome = one(legs, answer(leg_entry["answer"]), {"entry": old})
    assert outcome.status == RolloutStatus.INVALID_REFERENCE
    assert "reasoning-gym 0.1.3" in outcome.detail and entries.PINNED_VERSION in outcome.detail


def test_an_entry_without_a_version_stamp_is_accepted(legs, leg_entry):
    meta = {k: v for k, v in leg_entry["metadata"].items() if k != "reasoning_gym_version"}
    assert one(legs, answer(leg_entry["answer"]), {"entry": {**leg_entry, "metadata": meta}}).score == 1.0


def test_make_data_writes_fractions_in_metadata_as_text():
    rows = list(make_rows("rg:gsm_symbolic", 8, 0))  # entry 7 of seed 0 has a Fraction among its variables
    assert rows[7]["reference"]["entry"]["metadata"]["variables"]["serving_fraction"] == "2"  # Fraction(2, 1)
    task = ReasoningGymTask("gsm_symbolic")
    assert [one(task, answer(r["reference"]["entry"]["answer"]), r["reference"]).score for r in rows] == [1.0] * 8


def test_make_data_stamps_the_installed_version():
    assert entry_of("gcd")["metadata"]["reasoning_gym_version"] == entries.installed_version() == "0.1.25"


def test_an_entry_made_with_a_config_is_scored_under_that_config():
    # decimal_arithmetic's tolerance is 10**-max_num_decimal_places of its config (default 3).
    config = {"min_num_decimal_places": 1, "max_num_decimal_places": 1}
    entry = list(make_rows("rg:decimal_arithmetic", 1, 0, config))[0]["reference"]["entry"]
    assert entry["metadata"]["dataset_config"] == config
    task = ReasoningGymTask("decimal_arithmetic")
    near = str(float(entry["answer"]) + 0.04)  # inside 10**-1, outside the default 10**-3
    assert one(task, answer(near), {"entry": entry}).score == 1.0
    default = {**entry, "metadata": {k: v for k, v in entry["metadata"].items() if k != "dataset_config"}}
    assert one(task, answer(near), {"entry": default}).score == 0.0


def test_a_config_the_dataset_rejects_is_invalid_reference(legs, leg_entry):
    bad = {**leg_entry, "metadata": {**leg_entry["metadata"], "dataset_config": {"no_such_field": 1}}}
    outcome = one(legs, answer(leg_entry["answer"]), {"entry": bad})
    assert outcome.status == RolloutStatus.INVALID_REFERENCE and "no_such_field" in outcome.detail


# --- options and self-check ---------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [
    {"dataset": "no_such_dataset"},
    {"dataset": "composite"},
    {"dataset": "gcd", "answer_tag": "<answer>"},
    {"dataset": "gcd", "partial_credit": "no"},
    {"dataset": "gcd", "fallback_to_completion": 1},
])
def test_bad_options_are_refused(options):
    with pytest.raises(InvalidTaskOptions):
        ReasoningGymTask(**options)


def test_the_self_check_passes_with_the_pinned_version_installed(legs):
    assert legs.self_check() == []


def test_the_self_check_names_a_version_off_the_pin(monkeypatch, legs):
    monkeypatch.setattr("reward_service.tasks.reasoning_gym_task.installed_version", lambda: "0.2.0")
    assert legs.self_check() == [f"reasoning-gym 0.2.0 is installed; this suite is pinned to {entries.PINNED_VERSION}"]


def test_without_reasoning_gym_the_self_check_passes(monkeypatch, legs):
    monkeypatch.setattr("reward_service.tasks.reasoning_gym_task.installed_version", lambda: None)
    assert legs.self_check() == []  # the extra is optional; each rollout says what to install


def test_the_start_up_self_check_checks_a_family_once(monkeypatch):
    registry = build_registry(RewardsConfig())
    assert not [name for name in registry.self_check() if name.startswith("rg:")]
    monkeypatch.setattr("reward_service.tasks.reasoning_gym_task.installed_version", lambda: "0.2.0")
    assert [name for name in registry.self_check() if name.startswith("rg:")] == ["rg:ab"]


def test_a_broken_scorer_is_named_in_its_description():
    assert "BROKEN" in ReasoningGymTask("game_of_life_halting").info().description
    assert "BROKEN" not in ReasoningGymTask("gcd").info().description


# --- the registry's families -----------------------------------------------------------------------------

def test_every_dataset_is_a_registered_task_name():
    registry = build_registry(RewardsConfig())
    assert {f"rg:{d}" for d in entries.DATASETS} <= set(registry.names())
    assert "rg:leg_counting" in registry and "rg:nope" not in registry and "rg" not in registry


def test_a_member_is_made_once_on_first_use():
    registry = build_registry(RewardsConfig())
    task = registry.get("rg:gcd")
    assert isinstance(task, ReasoningGymTask) and task.dataset == "gcd" and registry.get("rg:gcd") is task


def test_an_unknown_member_is_an_unknown_task_with_a_short_message():
    with pytest.raises(UnknownTask, match=r"rg:<member> \(105 members") as info:
        build_registry(RewardsConfig()).get("rg:nope")
    assert len(str(info.value)) < 600


def test_a_configured_variant_of_a_member_gets_its_options():
    config = RewardsConfig.from_dict({"tasks": {
        "spell_binary": {"task": "rg:spell_backward", "options": {"partial_credit": False}},
        "rg:gcd": {"options": {"answer_tag": "final"}}}})
    registry = build_registry(config)
    entry = entry_of("spell_backward")
    partial = answer(spelled_partly(entry))
    assert registry.get("spell_binary").score(partial, {"entry": entry}).score == 0.0
    assert 0 < registry.get("rg:spell_backward").score(partial, {"entry": entry}).score < 1
    assert registry.get("rg:gcd").score("<final>3</final>", {"answer": "3"}).score == 1.0


def test_a_bad_option_of_a_member_fails_at_load():
    config = RewardsConfig.from_dict({"tasks": {"x": {"task": "rg:gcd", "options": {"partial": True}}}})
    with pytest.raises(TaskLoadError, match="'x'"):
        build_registry(config)


def test_a_composite_may_use_a_member(leg_entry):
    config = RewardsConfig.from_dict({"rewards": {"legs_fmt": {"components": {"rg:leg_counting": 1.0,
                                                                            "format": 0.5}}}})
    outcome = build_registry(config).get("legs_fmt").score(answer(leg_entry["answer"]), {"entry": leg_entry})
    assert outcome.score == 1.5


def test_list_tasks_describes_each_member_without_importing_reasoning_gym():
    code = ("import sys\nfrom reward_service.router.registry import build_registry\n"
            "from reward_service.router.rewards_config import RewardsConfig\n"
            "infos = {i.name: i for i in build_registry(RewardsConfig()).infos()}\n"
            "print(len([n for n in infos if n.startswith('rg:')]), 'reasoning_gym' in sys.modules)\n"
            "print(infos['rg:gcd'].description)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    counts, description = out.stdout.splitlines()
    assert counts == f"{len(entries.DATASETS)} False"
    assert description.startswith("reasoning-gym gcd: the last <answer>...</answer>")


def test_a_family_registered_by_hand_serves_its_members():
    registry = TaskRegistry()
    registry.register_family(ReasoningGymTask, "gym")
    assert registry.get("gym:gcd").score(answer("6"), {"answer": "6"}).score == 1.0
    with pytest.raises(TaskLoadError, match="without ':'"):
        registry.register_family(ReasoningGymTask, "a:b")
