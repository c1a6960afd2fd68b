"""Our DPO loss equals TRL's ``DPOTrainer.compute_loss`` on the same tiny models and pairs.

TRL's losses are not callable without a trainer, so the trainer is built (policy and a
different reference, conversational rows so TRL applies the same chat template) and its
``compute_loss`` runs on one batch holding every pair; ours takes the same pairs through
``encode_pairs`` / ``sequence_logps`` / ``dpo_losses``. The mean over pairs does not depend on the
order TRL's loader draws them in.
"""

from __future__ import annotations

import pytest
import torch

from examples.tiny import build_tiny_lm, build_tokenizer
from examples.tiny.arithmetic_task import completion_for
from tests.offline_fixtures import split_problems, wrong_completion
from trainer_client.dpo.dpo_loss import PairLogps, dpo_losses, sft_term
from trainer_client.dpo.dpo_train import encode_pairs, sequence_logps
from trainer_client.rm.preference_data import PreferencePair

pytestmark = pytest.mark.slow
N = 8
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def setup():
    tokenizer = build_tokenizer()
    problems, _ = split_problems(N, 1)
    pairs = [PreferencePair(p.prompt, completion_for(p), wrong_completion(p)) for p in problems]
    return tokenizer, build_tiny_lm(tokenizer, "nano", seed=0), build_tiny_lm(tokenizer, "nano", seed=1), pairs


def trl_loss(setup, tmp_path, **options) -> float:
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    tokenizer, model, ref, pairs = setup
    rows = [{"prompt": [{"role": "user", "content": p.prompt}],
             "chosen": [{"role": "assistant", "content": p.chosen}],
             "rejected": [{"role": "assistant", "content": p.rejected}]} for p in pairs]
    args = DPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=N, report_to=[], use_cpu=True,
                     save_strategy="no", **options)
    trainer = DPOTrainer(model=model, ref_model=ref, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    with torch.no_grad():
        return float(trainer.compute_loss(trainer.model, batch))


def our_loss(setup, loss_type: str, beta: float, label_smoothing: float = 0.0, rpo_alpha: float | None = None) -> float:
    tokenizer, model, ref, pairs = setup
    batch = encode_pairs(tokenizer, pairs, 1024).batch(range(N), tokenizer.pad_token_id, CPU)
    with torch.no_grad():
        sums, token_logps, mask = sequence_logps(model, batch, CPU)
        ref_sums = sequence_logps(ref, batch, CPU)[0]
    counts = mask.sum(-1).float()
    loss = dpo_losses(PairLogps(sums[:N], sums[N:], ref_sums[:N], ref_sums[N:]), beta=beta, loss_type=loss_type,
                      label_smoothing=label_smoothing, chosen_tokens=counts[:N], rejected_tokens=counts[N:]).mean()
    if rpo_alpha is not None:
        loss = loss + rpo_alpha * sft_term(token_logps[:N], mask[:N])
    return float(loss)


@pytest.mark.parametrize(("loss_type", "beta", "label_smoothing"), [
    ("sigmoid", 0.1, 0.0), ("sigmoid", 0.5, 0.0), ("hinge", 0.1, 0.0), ("ipo", 0.1, 0.0), ("robust", 0.1, 0.2)])
def test_each_loss_matches_trl(setup, tmp_path, loss_type: str, beta: float, label_smoothing: float) -> None:
    theirs = trl_loss(setup, tmp_path, loss_type=[loss_type], beta=beta, label_smoothing=label_smoothing)
    ours = our_loss(setup, loss_type, beta, label_smoothing)
    assert ours == pytest.approx(theirs, rel=1e-3, abs=1e-3)


def test_rpo_alpha_matches_trl_sft_loss_term(setup, tmp_path) -> None:
    theirs = trl_loss(setup, tmp_path, loss_type=["sigmoid", "sft"], loss_weights=[1.0, 0.5], beta=0.1)
    assert our_loss(setup, "sigmoid", 0.1, rpo_alpha=0.5) == pytest.approx(theirs, rel=1e-3, abs=1e-3)
    assert our_loss(setup, "sigmoid", 0.1) != pytest.approx(theirs, rel=1e-3, abs=1e-3)  # the term matters
