"""Every reasoning-gym dataset through rg:<dataset>: its own entries score 1 with their gold and 0
with a wrong answer, and the tables of ``reasoning_gym_entries`` are the installed package's facts.

Entries come from ``make_rows`` (what ``reward-service make-data`` writes: JSON, stamped), a few
per dataset, so the whole sweep takes seconds.
"""

from __future__ import annotations

import functools
import json

import pytest
import reasoning_gym
from reasoning_gym.factory import DATASETS as THEIR_DATASETS

from reward_core.contract import RolloutStatus
from reward_service.task_api import TaskInput
from reward_service.tasks.reasoning_gym_data import make_rows
from reward_service.tasks.reasoning_gym_entries import (
    BROKEN_SCORERS,
    DATASETS,
    GOLDLESS,
    NEEDS_METADATA,
    PINNED_VERSION,
    installed_version,
)
from reward_service.tasks.reasoning_gym_task import ReasoningGymTask

PER_DATASET = 3
SEED = 1
JUNK = "\u2603 not an answer \u2603"
#: A right answer of the goldless datasets whose metadata carries one (boxnet and rush_hour carry none).
EXAMPLE_SOLUTIONS = {
    "graph_color": lambda meta: json.dumps(meta["possible_answer"]),
    "propositional_logic": lambda meta: meta["example_answer"],
    "rubiks_cube": lambda meta: meta["example_correct_answer"],
}


@functools.cache
def entries(dataset: str) -> tuple[dict, ...]:
    return tuple(row["reference"]["entry"] for row in make_rows(f"rg:{dataset}", PER_DATASET, SEED))


def wrong_answer(dataset: str, entry: dict) -> str:
    """Another entry's gold (well-formed, but for another question), else junk."""
    others = [e["answer"] for e in entries(dataset) if e["answer"] not in (None, entry["answer"])]
    return others[0] if others else JUNK


def score(task: ReasoningGymTask, answer_text: str, reference: dict):
    return task.score_batch([TaskInput(f"<think>...</think>\n<answer>{answer_text}</answer>", reference)])[0]


def test_the_installed_reasoning_gym_is_the_pinned_one():
    assert installed_version() == PINNED_VERSION


def test_the_family_lists_every_dataset_but_the_mixing_one():
    assert set(DATASETS) == set(THEIR_DATASETS) - {"composite"}
    assert list(DATASETS) == sorted(DATASETS)


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_gold_answer_scores_one(dataset):
    """The gold, or for a goldless dataset the example solution its metadata carries."""
    if dataset in GOLDLESS and dataset not in EXAMPLE_SOLUTIONS:
        pytest.skip("no gold and no example solution in the entry: score_answer checks a proposed plan")
    right = EXAMPLE_SOLUTIONS.get(dataset, lambda meta: None)
    task = ReasoningGymTask(dataset)
    outcomes = [score(task, right(entry["metadata"]) or entry["answer"], {"entry": entry})
                for entry in entries(dataset)]
    assert [(o.status, o.score) for o in outcomes] == [(RolloutStatus.OK, 1.0)] * PER_DATASET, outcomes


@pytest.mark.parametrize("dataset", DATASETS)
def test_a_wrong_answer_scores_zero(dataset):
    if dataset in BROKEN_SCORERS:
        pytest.xfail(BROKEN_SCORERS[dataset])
    binary, partial = ReasoningGymTask(dataset, partial_credit=False), ReasoningGymTask(dataset)
    for entry in entries(dataset):
        wrong = wrong_answer(dataset, entry)
        outcome = score(binary, wrong, {"entry": entry})
        assert (outcome.status, outcome.score) == (RolloutStatus.OK, 0.0), (wrong, outcome)
        assert score(partial, wrong, {"entry": entry}).score < 1.0  # reasoning-gym's partial credit, if any


@pytest.mark.parametrize("dataset", DATASETS)
def test_goldless_lists_exactly_the_datasets_without_a_gold(dataset):
    assert all(e["answer"] is None for e in entries(dataset)) == (dataset in GOLDLESS)


@pytest.mark.parametrize("dataset", DATASETS)
def test_needs_metadata_lists_exactly_the_datasets_a_bare_gold_cannot_score(dataset):
    """Outside the table, a bare gold scores 1 through the task; inside, reasoning-gym itself
    cannot score it from the answer alone (it raises or scores the gold below 1)."""
    golds = [e["answer"] for e in entries(dataset)]
    if dataset in NEEDS_METADATA:
        if dataset in GOLDLESS:
            return
        theirs = reasoning_gym.get_score_answer_fn(dataset)

        def bare_score(gold):
            try:
                return theirs(gold, {"question": "", "answer": gold, "metadata": {}})
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                return None

        assert any(bare_score(g) != 1.0 for g in golds), f"{dataset} scores a bare gold: drop it from NEEDS_METADATA"
    else:
        task = ReasoningGymTask(dataset)
        assert [score(task, g, {"answer": g}).score for g in golds] == [1.0] * PER_DATASET
