"""examples/any_trainer_loop.py against a real reward server: both call styles learn and mask unscored rows."""

from __future__ import annotations

import statistics

import pytest

from examples import any_trainer_loop

GROUP = 8


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_toy_loop_learns_from_the_service(reward_server, mode):
    records = any_trainer_loop.train(reward_server.address, steps=30, group_size=GROUP, mode=mode, seed=0)
    first = statistics.fmean(r.reward_mean for r in records[:5])
    last = statistics.fmean(r.reward_mean for r in records[-5:])
    assert last - first > 0.3, (first, last)


def test_the_broken_row_is_masked_every_step(reward_server):
    records = any_trainer_loop.train(reward_server.address, steps=3, group_size=GROUP, mode="sync")
    assert [r.unscored for r in records] == [GROUP] * 3


def test_unscored_completions_get_advantage_zero_and_no_say_in_the_baseline():
    assert any_trainer_loop.group_advantages([1.0, None, 0.0]) == pytest.approx([1.0, 0.0, -1.0], abs=1e-3)


def test_main_prints_the_run(reward_server, capsys):
    assert any_trainer_loop.main(["--endpoint", reward_server.address, "--steps", "3", "--mode", "async"]) == 0
    out = capsys.readouterr().out
    assert "step   2" in out and "unscored completions masked per step" in out
