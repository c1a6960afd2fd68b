"""Step scores reach the GRPO and PPO batches: character spans -> tokens -> per-token advantages."""

from __future__ import annotations

import types

import pytest
import torch

from examples.tiny.tokenizer import build_tokenizer
from reward_core.clients import GroupResult
from reward_core.contract import GroupStats, RolloutResult, RolloutStatus, StepScore
from trainer_client.rl import grpo_advantages, process_advantages
from trainer_client.train.collect import StepData
from trainer_client.train.grpo import GrpoTrainer
from trainer_client.train.grpo_config import load_config
from trainer_client.train.rollouts import Rollouts
from trainer_client.train.step_rewards import token_char_ends

TEXTS = ["3*4=12\n12+1=13", "3*4=11\n11+1=12", "3*4=12\n12+1=99"]
STEPS = [
    (StepScore(0, 6, 1.0, label="3*4=12"), StepScore(7, 14, 1.0)),
    (StepScore(0, 6, 0.0), StepScore(7, 14, 1.0)),
    (StepScore(0, 6, 1.0), StepScore(7, 14, 0.0)),
]

# make_batch's counts for a batch whose every member is scored (grpo.min_valid)
ALL_SCORED = {"groups_too_few_scored": 0, "unscored_in_batch": 0, "scored_in_too_few_groups": 0}


class FallbackTokenizer:
    """Not fast: the char ends come from decoding prefixes. Id 0 is special (eos)."""

    all_special_ids = [0]
    vocab = {1: "ab", 2: "c", 3: "de"}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(self.vocab[i] for i in ids if i != 0)


def test_token_char_ends_from_the_fast_tokenizers_offsets_and_eos_adds_nothing():
    tok = build_tokenizer()
    ids = tok("12+3", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert token_char_ends(tok, ids) == [1, 2, 3, 4, 4]


def test_token_char_ends_without_offsets_decode_prefixes():
    assert token_char_ends(FallbackTokenizer(), [1, 2, 0, 3]) == [2, 3, 3, 5]


def _step_data(tok, scores=(1.0, 0.0, 1.0)):
    rows = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in TEXTS]
    width = max(map(len, rows)) + 2
    ids = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r in rows])
    lengths = torch.tensor([len(r) for r in rows])
    mask = torch.arange(width)[None, :] < lengths[:, None]
    prompt = torch.ones(3, 2, dtype=torch.long)
    ro = Rollouts(prompt, torch.ones(3, 2, dtype=torch.bool), ids, mask, lengths, torch.zeros(3, dtype=torch.bool),
                  list(TEXTS), group_size=3)
    results = [RolloutResult(f"r{k}", RolloutStatus.OK, score=s, task="steps", group_id="g", steps=STEPS[k])
               for k, s in enumerate(scores)]
    group = GroupResult("g", results, GroupStats("g", 3, 3, 0.0, 0.0, False))
    return StepData(ro, [], [group], ro, [group], [False], 1)


def _batch(advantage: str, tmp_path):
    tok = build_tokenizer()
    config = load_config(None, ["model.path=m", "data.train=d.jsonl", f"grpo.advantage={advantage}",
                                "sampling.group_size=3"])
    trainer = types.SimpleNamespace(config=config, tokenizer=tok, model=None, ref_model=None, step=0)
    data = _step_data(tok)
    return GrpoTrainer.make_batch(trainer, data), data, tok


def test_outcome_keeps_one_advantage_per_completion(tmp_path):
    (batch, stats), _, _ = _batch("outcome", tmp_path)
    assert batch.advantages.shape == (3,) and stats == {**ALL_SCORED}
    assert torch.allclose(batch.advantages, grpo_advantages(torch.tensor([[1.0, 0.0, 1.0]])).flatten())


def test_process_gives_per_token_advantages_from_the_step_spans(tmp_path):
    (batch, stats), data, tok = _batch("process", tmp_path)
    ends = [token_char_ends(tok, row[: int(n)].tolist()) for row, n in zip(data.rollouts.completion_ids,
                                                                            data.rollouts.lengths)]
    expected = process_advantages(STEPS, ends, [0, 0, 0], batch.completion_ids.shape[1]).advantages
    assert torch.equal(batch.advantages, expected)
    # step rewards [1, 1, 0, 1, 1, 0]: mean 2/3; the first step ends at token 5 ("3*4=12"), the second at 13
    hi, lo = (1 / 3) / (2 ** 0.5 / 3 + 1e-4), (-2 / 3) / (2 ** 0.5 / 3 + 1e-4)
    assert batch.advantages[1, 0].item() == pytest.approx(lo + hi, rel=1e-5)
    assert batch.advantages[1, 6].item() == pytest.approx(hi, rel=1e-5)  # "\n" (between steps): the 2nd
    assert batch.advantages[:, 14:].abs().sum() == 0  # eos and padding: after the last step
    assert stats == {**ALL_SCORED, "process/no_steps": 0, "process/scored_steps": 6}


def test_both_adds_the_outcome_advantage_to_every_token(tmp_path):
    (both, _), _, _ = _batch("both", tmp_path)
    (process, _), _, _ = _batch("process", tmp_path)
    (outcome, _), _, _ = _batch("outcome", tmp_path)
    assert torch.allclose(both.advantages, process.advantages + outcome.advantages[:, None])


def test_leave_one_out_with_step_scores_is_rejected_with_what_to_change():
    with pytest.raises(ValueError, match="grpo.baseline=mean"):
        load_config(None, ["model.path=m", "data.train=d.jsonl", "grpo.advantage=process",
                           "grpo.baseline=leave_one_out"])
