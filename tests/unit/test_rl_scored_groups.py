"""Groups with unscored members (NeMo-RL's rule), against hand-computed values: unscored members never vote
in a group's mean and std, and a group with fewer than ``min_valid`` scored members gives no advantage, is
out of the loss mask, and is counted."""

from __future__ import annotations

import math
import types

import pytest
import torch

from examples.tiny.tokenizer import build_tokenizer
from reward_core.clients import GroupResult
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus, StepScore
from trainer_client.rl import grpo_advantages, process_advantages, scored_groups, zero_variance_groups
from trainer_client.train.collect import StepData
from trainer_client.train.grpo import GrpoTrainer
from trainer_client.train.grpo_config import GrpoConfig, load_config
from trainer_client.train.presets import PRESETS
from trainer_client.train.rollouts import Rollouts

NAN = float("nan")
SQRT2 = math.sqrt(2.0)
GRPO_PRESETS = sorted(name for name, preset in PRESETS.items() if preset.trainer == "grpo")


def adv(rewards, **kwargs) -> list[list[float]]:
    return grpo_advantages(torch.tensor(rewards), eps=0.0, **kwargs).tolist()


def test_unscored_members_take_no_part_in_the_group_mean_and_std():
    # scored [1, 0, 1]: mean 2/3, population std sqrt(2)/3 (the NaN member counted as 0 would give 1/2 and 1/2)
    assert adv([[1.0, 0.0, NAN, 1.0]])[0] == pytest.approx([1 / SQRT2, -SQRT2, 0.0, 1 / SQRT2])


def test_an_unscored_members_placeholder_value_changes_nothing():
    scored = torch.tensor([[True, True, False, True]])
    as_zero = grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), valid_mask=scored)
    as_five = grpo_advantages(torch.tensor([[1.0, 0.0, 5.0, 1.0]]), valid_mask=scored)
    assert torch.equal(as_zero, as_five) and as_zero[0, 2] == 0


def test_mixed_groups_dr_grpo_and_rloo():
    rewards = [[1.0, 0.0, NAN, 1.0]]
    assert adv(rewards, scale="none")[0] == pytest.approx([1 / 3, -2 / 3, 0.0, 1 / 3])  # r - 2/3
    # RLOO: the mean of the other *scored* members: (0 + 1) / 2, (1 + 1) / 2
    assert adv(rewards, scale="none", baseline="leave_one_out")[0] == pytest.approx([0.5, -1.0, 0.0, 0.5])


def test_an_all_unscored_group_gives_zero_and_leaves_the_other_groups_alone():
    rewards = torch.tensor([[NAN, NAN], [1.0, 0.0]])
    assert grpo_advantages(rewards, eps=0.0).tolist() == [[0.0, 0.0], [1.0, -1.0]]
    groups = scored_groups(rewards)
    assert groups.trainable.tolist() == [[False, False], [True, True]]
    assert groups.too_few.tolist() == [True, False] and groups.scored.tolist() == [0, 2]


def test_a_group_with_too_few_scored_members_gives_no_advantage_even_without_a_baseline():
    rewards = [[1.0, NAN, NAN], [1.0, 0.0, 1.0]]
    out = adv(rewards, scale="none", baseline="none")  # REINFORCE: A = r, but only in a group with enough scored
    assert out == [[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]]


def test_too_few_scored_members_are_out_of_the_loss_mask_and_counted():
    groups = scored_groups(torch.tensor([[1.0, NAN, NAN], [1.0, 0.0, NAN]]))
    assert groups.trainable.tolist() == [[False, False, False], [True, True, False]]
    assert groups.too_few.tolist() == [True, False]
    assert int(groups.too_few.sum()) == 1


def test_min_valid_three_drops_a_group_of_two_scored():
    rewards = [[1.0, 0.0, NAN], [1.0, 0.0, 0.0]]
    # group 2: mean 1/3, std sqrt(2)/3 -> (2/3) / (sqrt(2)/3) = sqrt(2), (-1/3) / (sqrt(2)/3) = -1/sqrt(2)
    out = adv(rewards, min_valid=3)
    assert out[0] == [0.0, 0.0, 0.0]
    assert out[1] == pytest.approx([SQRT2, -1 / SQRT2, -1 / SQRT2])
    assert scored_groups(torch.tensor(rewards), min_valid=3).too_few.tolist() == [True, False]


def test_min_valid_one_lets_a_lone_scored_member_count():
    rewards = torch.tensor([[1.0, NAN, NAN]])
    assert grpo_advantages(rewards, scale="none", baseline="none", min_valid=1).tolist() == [[1.0, 0.0, 0.0]]
    # with a baseline a lone member has nothing to be relative to: 0, but it stays in the loss
    assert grpo_advantages(rewards, min_valid=1).tolist() == [[0.0, 0.0, 0.0]]
    groups = scored_groups(rewards, min_valid=1)
    assert groups.trainable.tolist() == [[True, False, False]] and groups.too_few.tolist() == [False]


def test_a_too_few_group_does_not_vote_in_the_batch_std():
    rewards = [[1.0, 0.0], [5.0, NAN]]
    # batch std over the trainable rewards [1, 0] only: 0.5
    assert adv(rewards, scale="batch") == [[1.0, -1.0], [0.0, 0.0]]
    # min_valid=1: [1, 0, 5] vote, population std sqrt(14/3)
    assert adv(rewards, scale="batch", min_valid=1)[0] == pytest.approx([0.5 / math.sqrt(14 / 3),
                                                                          -0.5 / math.sqrt(14 / 3)])


def test_group_ids_form_the_groups_as_rows_do():
    out = grpo_advantages(torch.tensor([1.0, 7.0, 0.0, NAN, 1.0]), ["a", "b", "a", "b", "a"], eps=0.0)
    assert out.tolist() == pytest.approx([1 / SQRT2, 0.0, -SQRT2, 0.0, 1 / SQRT2])
    assert scored_groups(torch.tensor([1.0, 7.0, 0.0, NAN, 1.0]), ["a", "b", "a", "b", "a"]).too_few.tolist() == \
        [False, True]


def test_dynamic_sampling_drops_groups_with_too_few_scored():
    rewards = torch.tensor([[1.0, 0.0, NAN], [1.0, 0.0, 0.0]])
    assert zero_variance_groups(rewards).tolist() == [False, False]
    assert zero_variance_groups(rewards, min_valid=3).tolist() == [True, False]


def test_process_advantages_follow_the_same_rule():
    steps = [(StepScore(0, 1, 1.0), StepScore(1, 2, 0.0)), ()]
    ends = [[1, 2], [1]]
    alone = process_advantages(steps, ends, [0, 0], 2, eps=0.0, valid_mask=[True, False])
    assert alone.advantages.tolist() == [[0.0, 0.0], [0.0, 0.0]] and alone.scored_steps == 0
    # min_valid=1: the two steps [1, 0] (mean 1/2, std 1/2) normalise to [1, -1]; token 0 sums both
    counted = process_advantages(steps, ends, [0, 0], 2, eps=0.0, valid_mask=[True, False], min_valid=1)
    assert counted.advantages.tolist() == [[0.0, -1.0], [0.0, 0.0]] and counted.scored_steps == 2


@pytest.mark.parametrize("min_valid", [0, -1, 1.5, True])
def test_min_valid_below_one_or_not_an_integer_is_refused(min_valid):
    with pytest.raises(ValueError, match="min_valid"):
        grpo_advantages(torch.tensor([[1.0, 0.0]]), min_valid=min_valid)
    with pytest.raises(ValueError, match="grpo.min_valid"):
        GrpoConfig(min_valid=min_valid)


def test_min_valid_defaults_to_two_and_can_be_set():
    base = ["model.path=m", "data.train=d.jsonl"]
    assert load_config(None, base).grpo.min_valid == 2
    assert load_config(None, [*base, "grpo.min_valid=3"]).grpo.min_valid == 3


@pytest.mark.parametrize("algorithm", GRPO_PRESETS)
def test_every_group_preset_follows_the_rule(algorithm):
    grpo = load_config(None, ["model.path=m", "data.train=d.jsonl", f"algorithm={algorithm}"]).grpo
    assert grpo.min_valid == 2
    rewards = torch.tensor([[1.0, NAN, NAN, NAN], [1.0, 0.0, NAN, 1.0]])
    out = grpo_advantages(rewards, scale=grpo.advantage_scale, baseline=grpo.baseline, min_valid=grpo.min_valid)
    assert out[0].tolist() == [0.0, 0.0, 0.0, 0.0] and out[1, 2] == 0  # too few; unscored
    assert out[1, 0] > out[1, 1]  # the mixed group still teaches: the right answer above the wrong one
    masked = grpo_advantages(torch.tensor([[1.0, 0.0, 9.0, 1.0]]), scale=grpo.advantage_scale,
                             baseline=grpo.baseline, valid_mask=torch.tensor([[True, True, False, True]]))
    assert torch.equal(masked, out[1:])  # the unscored member's value never votes


def _trainer_batch(statuses: list[RolloutStatus], scores: list[float]):
    """``GrpoTrainer.make_batch`` on one group of three character-level completions (no model: outcome only)."""
    tok = build_tokenizer()
    texts = ["12", "13", "14"]
    rows = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in texts]
    width = max(map(len, rows))
    ids = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r in rows])
    lengths = torch.tensor([len(r) for r in rows])
    mask = torch.arange(width)[None, :] < lengths[:, None]
    ro = Rollouts(torch.ones(3, 2, dtype=torch.long), torch.ones(3, 2, dtype=torch.bool), ids, mask, lengths,
                  torch.zeros(3, dtype=torch.bool), texts, group_size=3)
    results = [RolloutResult(f"r{k}", status, score=score, task="t", group_id="g")
               for k, (status, score) in enumerate(zip(statuses, scores))]
    group = GroupResult("g", results, GroupStats("g", 3, 3, 0.0, 0.0, False))
    data = StepData(ro, [], [group], ro, [group], [False], 1)
    config = load_config(None, ["model.path=m", "data.train=d.jsonl", "sampling.group_size=3"])
    trainer = types.SimpleNamespace(config=config, tokenizer=tok, model=None, ref_model=None, step=0)
    return GrpoTrainer.make_batch(trainer, data)


def test_the_trainer_masks_an_unscored_member_out_of_the_loss_with_advantage_zero():
    ok, timeout = RolloutStatus.OK, RolloutStatus.TIMEOUT
    batch, stats = _trainer_batch([ok, timeout, ok], [1.0, 0.0, 0.0])
    assert batch.advantages[1] == 0 and not batch.loss_mask[1].any()
    assert batch.loss_mask[0].any() and batch.loss_mask[2].any()
    assert batch.advantages[0].item() == pytest.approx(0.5 / 0.5001)  # scored [1, 0]: mean 1/2, std 1/2
    assert stats["unscored_in_batch"] == 1 and stats["groups_too_few_scored"] == 0


def test_the_trainer_masks_and_counts_a_group_with_too_few_scored():
    ok, timeout, error = RolloutStatus.OK, RolloutStatus.TIMEOUT, RolloutStatus.ERROR
    batch, stats = _trainer_batch([ok, timeout, error], [1.0, 0.0, 0.0])
    assert batch.advantages.tolist() == [0.0, 0.0, 0.0] and not batch.loss_mask.any()
    assert stats == {"groups_too_few_scored": 1, "unscored_in_batch": 2, "scored_in_too_few_groups": 1}
