"""Preference JSONL I/O (errors name file:line) and the synthetic generator's guarantees."""

from __future__ import annotations

import json

import pytest

from trainer_client.rm.preference_data import (
    KIND_WEIGHTS,
    PreferenceDataError,
    PreferencePair,
    generate_pairs,
    read_preferences,
    split_spec,
    write_preferences,
    write_splits,
)
from trainer_client.rm.preference_templates import TEMPLATES


def write_lines(path, *lines: str):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pairs_round_trip_with_margin_and_meta(tmp_path):
    pairs = [PreferencePair("p", "c", "r"), PreferencePair("p2", "c2", "r2", margin=1.5, meta={"kind": "x"})]
    write_preferences(tmp_path / "a.jsonl", pairs)
    assert read_preferences(tmp_path / "a.jsonl") == pairs


def test_blank_lines_are_skipped(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", json.dumps({"prompt": "p", "chosen": "c", "rejected": "r"}), "", "  ")
    assert len(read_preferences(path)) == 1


def test_invalid_json_names_file_and_line(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", json.dumps({"prompt": "p", "chosen": "c", "rejected": "r"}), "{oops")
    with pytest.raises(PreferenceDataError, match=r"a\.jsonl:2: not valid JSON"):
        read_preferences(path)


def test_missing_field_names_file_line_and_field(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", json.dumps({"prompt": "p", "chosen": "c"}))
    with pytest.raises(PreferenceDataError, match=r"a\.jsonl:1: missing field\(s\) \['rejected'\]"):
        read_preferences(path)


def test_non_string_completion_is_rejected(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", json.dumps({"prompt": "p", "chosen": 3, "rejected": "r"}))
    with pytest.raises(PreferenceDataError, match=r":1: field 'chosen' must be a string"):
        read_preferences(path)


def test_non_numeric_margin_is_rejected(tmp_path):
    path = write_lines(tmp_path / "a.jsonl",
                       json.dumps({"prompt": "p", "chosen": "c", "rejected": "r", "margin": "big"}))
    with pytest.raises(PreferenceDataError, match="margin"):
        read_preferences(path)


def test_empty_file_is_an_error(tmp_path):
    with pytest.raises(PreferenceDataError, match="empty"):
        read_preferences(write_lines(tmp_path / "a.jsonl", ""))


def test_generator_is_deterministic_for_a_seed():
    assert generate_pairs(50, seed=3, split="train") == generate_pairs(50, seed=3, split="train")


def test_generator_differs_across_seeds():
    assert generate_pairs(20, seed=1, split="train") != generate_pairs(20, seed=2, split="train")


def test_chosen_always_differs_from_rejected_and_ends_with_the_answer_line():
    for pair in generate_pairs(500, seed=0, split="train"):
        assert pair.chosen != pair.rejected
        assert pair.chosen.rsplit("\n", 1)[-1].startswith("Answer: ")


def test_test_split_uses_only_held_out_templates():
    train = {p.meta["template"] for p in generate_pairs(1000, seed=0, split="train")}
    test = {p.meta["template"] for p in generate_pairs(1000, seed=0, split="test")}
    assert train and test and not train & test
    assert test == {t.name for t in TEMPLATES if t.held_out}


def test_every_family_has_train_and_held_out_templates():
    families = {t.family for t in TEMPLATES}
    assert len(families) == 5
    for family in families:
        assert {t.held_out for t in TEMPLATES if t.family == family} == {True, False}


def test_number_ranges_of_the_splits_are_disjoint():
    (_lo_train, hi_train), (lo_test, _hi_test) = split_spec("train").numbers, split_spec("test").numbers
    assert hi_train < lo_test


def test_every_rejected_kind_occurs():
    kinds = {p.kind for p in generate_pairs(2000, seed=0, split="train")}
    assert kinds == set(KIND_WEIGHTS)


def test_off_by_one_answer_keeps_the_steps_and_changes_the_answer_by_one():
    pair = next(p for p in generate_pairs(200, seed=0, split="train") if p.kind == "off_by_one_answer")
    chosen_steps, chosen_answer = pair.chosen.rsplit("\nAnswer: ", 1)
    rejected_steps, rejected_answer = pair.rejected.rsplit("\nAnswer: ", 1)
    assert chosen_steps == rejected_steps
    assert abs(float(chosen_answer) - float(rejected_answer)) == 1


def test_write_splits_writes_train_and_test_files(tmp_path):
    paths = write_splits(tmp_path, n_train=30, n_test=10, seed=0)
    assert len(read_preferences(paths["train"])) == 30
    assert len(read_preferences(paths["test"])) == 10
