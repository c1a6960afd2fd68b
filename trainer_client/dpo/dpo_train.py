"""Direct preference optimization of a causal LM on offline pairs, against a frozen reference.

Why: the rung between SFT and RL. With fixed preference pairs (the same JSONL the reward model is
trained on) DPO needs neither a reward model nor sampling: the policy's log-ratio to a frozen
copy of itself is the implicit reward, trained to rank chosen over rejected.

    trainer-client make-prefs --out-dir data/prefs --n-train 4000 --n-test 1000 --seed 0
    trainer-client dpo --model runs/sft --data data/prefs/train.jsonl --eval-data data/prefs/test.jsonl \\
        --out runs/dpo [--loss-type ipo --beta 0.1 --rpo-alpha 1.0 --precompute-ref-log-probs]
    # on a GPU node, unchanged but for:  --device cuda --dtype bfloat16

Names and defaults follow TRL's ``DPOConfig`` (``beta`` 0.1, ``loss_type`` sigmoid, ``label_smoothing``
0, ``learning_rate`` 1e-6, ``max_length`` 1024, ``precompute_ref_log_probs``); the losses are
``dpo_loss``. Prompt and completions are rendered as SFT renders them (``sft.chat_data``: the chat
template when the tokenizer has one, else ``prompt + completion + eos``); a pair's chosen and
rejected rows go through one forward pass together. The reference is a frozen copy of the start
model (or ``--ref-model``); with ``--precompute-ref-log-probs`` its log-probs are computed once
before training and the reference is dropped. The output directory is SFT's: model, tokenizer,
``train_config.json``, ``metrics.json``, ``metrics.jsonl`` (+ TensorBoard).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer_client.dpo.dpo_config import DPOConfig  # noqa: F401 - re-exported
from trainer_client.dpo.dpo_loss import PairLogps, dpo_losses, reward_metrics, sft_term
from trainer_client.fine_tuning import disable_dropout, optimizer_and_schedule, set_up_run
from trainer_client.rm.preference_data import PreferencePair, read_preferences
from trainer_client.sft.chat_data import ChatExample, EncodedExample, encode_example
from trainer_client.sft.sft_train import StepHook, autocast, load_causal_lm, save_run, with_adapters
from trainer_client.sft.token_batches import forward_logits, pad_batch, token_logprobs
from trainer_client.train.run_logging import RunLogger

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EncodedPairs:
    chosen: list[EncodedExample]
    rejected: list[EncodedExample]

    def __len__(self) -> int:
        return len(self.chosen)

    def batch(self, idx: Sequence[int], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
        """One right-padded batch: the chosen rows of ``idx``, then their rejected rows."""
        return pad_batch([self.chosen[i] for i in idx] + [self.rejected[i] for i in idx], pad_id, device)


@dataclass(frozen=True)
class HeldOutPairs:
    """The policy against the reference on held-out pairs."""

    loss: float
    reward_accuracy: float  # chosen reward strictly above rejected
    reward_margin: float  # mean beta * (chosen log-ratio - rejected log-ratio)
    logp_margins: list[float]  # per pair: log pi(chosen) - log pi(rejected)


@dataclass(frozen=True)
class DPOResult:
    out_dir: str
    steps: int
    train_loss: list[float]
    evals: list[HeldOutPairs]  # before training, then after each epoch (empty without eval data)
    wall_time_s: float
    metrics: dict[str, Any]


def encode_pairs(tokenizer: Any, pairs: Sequence[PreferencePair], max_length: int) -> EncodedPairs:
    """Each pair's (prompt, chosen) and (prompt, rejected) as SFT encodes a prompt/completion row."""
    return EncodedPairs(
        [encode_example(tokenizer, ChatExample(prompt=p.prompt, completion=p.chosen), max_length) for p in pairs],
        [encode_example(tokenizer, ChatExample(prompt=p.prompt, completion=p.rejected), max_length) for p in pairs])


def sequence_logps(model: Any, batch: dict[str, torch.Tensor], device: torch.device,
                   dtype: str = "float32") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(summed completion log-probs [2N], per-token log-probs [2N, T-1], completion mask [2N, T-1])."""
    with autocast(device, dtype):
        logits = forward_logits(model, batch)
    logp, mask = token_logprobs(logits, batch)
    return logp.sum(-1), logp, mask


@torch.no_grad()
def pair_logps(model: Any, pairs: EncodedPairs, pad_id: int, batch_size: int, device: torch.device,
                    dtype: str = "float32") -> tuple[torch.Tensor, torch.Tensor]:
    """Summed completion log-probs (chosen [N], rejected [N]) of every pair under ``model``, on the CPU."""
    was_training = model.training
    model.eval()
    chosen, rejected = [], []
    for start in range(0, len(pairs), batch_size):
        idx = list(range(start, min(start + batch_size, len(pairs))))
        sums = sequence_logps(model, pairs.batch(idx, pad_id, device), device, dtype)[0].cpu()
        chosen.append(sums[: len(idx)])
        rejected.append(sums[len(idx):])
    model.train(was_training)
    return torch.cat(chosen), torch.cat(rejected)


def evaluate(model: Any, pairs: EncodedPairs, ref: tuple[torch.Tensor, torch.Tensor], config: DPOConfig,
             pad_id: int, device: torch.device) -> HeldOutPairs:
    """Loss, reward accuracy and margin of the policy on held-out pairs (reference log-probs given)."""
    chosen, rejected = pair_logps(model, pairs, pad_id, config.eval_batch_size, device, config.dtype)
    logps = PairLogps(chosen, rejected, ref[0], ref[1])
    tokens = torch.tensor([sum(e.trained) for e in pairs.chosen + pairs.rejected], dtype=torch.float32)
    loss = dpo_losses(logps, beta=config.beta, loss_type=config.loss_type, label_smoothing=config.label_smoothing,
                      chosen_tokens=tokens[: len(pairs)], rejected_tokens=tokens[len(pairs):]).mean()
    m = reward_metrics(logps, config.beta)
    return HeldOutPairs(float(loss), m["rewards/accuracies"], m["rewards/margins"], (chosen - rejected).tolist())


def dpo_update(model: Any, ref_model: Any | None, batch: dict[str, torch.Tensor],
               ref_sums: tuple[torch.Tensor, torch.Tensor] | None, config: DPOConfig, optimizer: torch.optim.Optimizer,
               scheduler: Any, device: torch.device) -> dict[str, float]:
    """One optimizer step on one batch of pairs; returns the step's loss and reward metrics.

    The reference log-probs come from ``ref_sums`` (precomputed, chosen and rejected) or from
    a no-grad forward of ``ref_model`` on the same batch.
    """
    n = batch["input_ids"].shape[0] // 2
    sums, token_logps, mask = sequence_logps(model, batch, device, config.dtype)
    if ref_sums is None:
        with torch.no_grad(), reference_of(model, ref_model) as reference:
            ref = sequence_logps(reference, batch, device, config.dtype)[0]
        ref_sums = (ref[:n], ref[n:])
    logps = PairLogps(sums[:n], sums[n:], ref_sums[0].to(device), ref_sums[1].to(device))
    counts = mask.sum(-1).float()
    loss = dpo_losses(logps, beta=config.beta, loss_type=config.loss_type, label_smoothing=config.label_smoothing,
                      chosen_tokens=counts[:n], rejected_tokens=counts[n:]).mean()
    if config.rpo_alpha is not None:
        loss = loss + config.rpo_alpha * sft_term(token_logps[:n], mask[:n])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm or math.inf)
    optimizer.step()
    scheduler.step()
    return {"loss": loss.item(), "grad_norm": float(grad_norm), **reward_metrics(logps, config.beta)}


@contextlib.contextmanager
def reference_of(model: Any, ref_model: Any | None) -> Iterator[Any]:
    """The reference to run: ``ref_model``, or (LoRA, no separate reference) ``model`` with its adapters off."""
    if ref_model is not None:
        yield ref_model
        return
    from trainer_client.train.lora import adapters_disabled

    with adapters_disabled(model) as base:
        yield base


def load_reference(config: DPOConfig, model: Any, device: torch.device) -> Any | None:
    """The frozen reference: ``config.ref_model``, or a copy of the start ``model`` (in eval mode, no grads);
    None for an adapted ``model`` without ``ref_model``: its base (adapters off) is the reference, no copy."""
    from trainer_client.train.lora import is_adapted

    if config.ref_model is None and is_adapted(model):
        return None
    ref = load_causal_lm(config.ref_model, device)[0] if config.ref_model else copy.deepcopy(model)
    if config.disable_dropout:
        disable_dropout(ref)
    ref.eval()
    ref.requires_grad_(False)
    return ref


def train_dpo(config: DPOConfig, on_step: StepHook | None = None) -> DPOResult:
    """Train, evaluate before training and after each epoch, log, and save to ``config.out_dir``.

    ``on_step(step, model, tokenizer)``, when given, runs after every optimizer step (``train_sft``'s hook)."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    device = set_up_run("dpo", config, config.model)
    train_pairs = read_preferences(config.data)[: config.max_train_pairs]
    eval_pairs = read_preferences(config.eval_data) if config.eval_data else []
    model, tokenizer = load_causal_lm(config.model, device, config.gradient_checkpointing)
    if config.disable_dropout:
        disable_dropout(model)
    model = with_adapters(model, config)
    pad_id = tokenizer.pad_token_id
    train = encode_pairs(tokenizer, train_pairs, config.max_length)
    held_out = encode_pairs(tokenizer, eval_pairs, config.max_length) if eval_pairs else None
    ref_model = load_reference(config, model, device)
    with reference_of(model, ref_model) as reference:
        held_ref = pair_logps(reference, held_out, pad_id, config.eval_batch_size, device, config.dtype) \
            if held_out else None
        train_ref = pair_logps(reference, train, pad_id, config.eval_batch_size, device, config.dtype) \
            if config.precompute_ref_log_probs else None
    if train_ref is not None:
        ref_model = None  # the log-probs are all it was needed for
    logger.info("%d training pairs, %d held-out, loss %s (beta %g, label_smoothing %g, rpo_alpha %s)", len(train),
                len(eval_pairs), config.loss_type, config.beta, config.label_smoothing, config.rpo_alpha)

    total_steps = min(math.ceil(len(train) / config.batch_size) * config.epochs, config.max_steps or math.inf)
    optimizer, scheduler = optimizer_and_schedule(model, config, int(total_steps))
    run_log = RunLogger(config.out_dir, tensorboard=config.tensorboard)
    evals: list[HeldOutPairs] = []

    def log_eval(step: int, epoch: int) -> None:
        evals.append(evaluate(model, held_out, held_ref, config, pad_id, device))
        e = evals[-1]
        margin = sum(e.logp_margins) / len(e.logp_margins)
        run_log.log(step, {"eval/loss": e.loss, "eval/rewards/accuracies": e.reward_accuracy,
                           "eval/rewards/margins": e.reward_margin, "eval/logps/margin": margin, "epoch": epoch})
        logger.info("epoch %d: eval loss %.4f, reward accuracy %.4f, reward margin %.4f", epoch, e.loss,
                    e.reward_accuracy, e.reward_margin)

    if held_out:
        log_eval(0, 0)
    rng = random.Random(config.seed)
    step, train_losses = 0, []
    model.train()
    with tqdm(total=int(total_steps), desc="dpo", disable=not config.progress, unit="step") as bar:
        for epoch in range(1, config.epochs + 1):
            order = list(range(len(train)))
            rng.shuffle(order)
            losses = []
            for s in range(0, len(order), config.batch_size):
                if step >= total_steps:
                    break
                idx = order[s:s + config.batch_size]
                tick = time.perf_counter()
                ref_sums = (train_ref[0][idx], train_ref[1][idx]) if train_ref is not None else None
                stats = dpo_update(model, ref_model, train.batch(idx, pad_id, device), ref_sums, config, optimizer,
                                   scheduler, device)
                step += 1
                losses.append(stats["loss"])
                bar.update(1)
                if on_step is not None:
                    on_step(step, model, tokenizer)
                if step % config.logging_steps == 0:
                    run_log.log(step, {**stats, "epoch": epoch, "lr": scheduler.get_last_lr()[0],
                                       "time/step_s": time.perf_counter() - tick})
            train_losses.append(sum(losses) / max(1, len(losses)))
            if held_out:
                log_eval(step, epoch)
            if step >= total_steps:
                break
    run_log.close()
    wall = time.perf_counter() - started
    metrics: dict[str, Any] = {"steps": step, "train_loss": train_losses, "wall_time_s": round(wall, 2),
                               "num_train_pairs": len(train), "base_model": config.model,
                               "num_train_pairs_truncated": sum(c.truncated or r.truncated
                                                                for c, r in zip(train.chosen, train.rejected))}
    if evals:
        metrics.update(eval_loss=[e.loss for e in evals], eval_reward_accuracy=[e.reward_accuracy for e in evals],
                       eval_reward_margin=[e.reward_margin for e in evals],
                       eval_logp_margin=[sum(e.logp_margins) / len(e.logp_margins) for e in evals])
    save_run(model, tokenizer, config, Path(config.out_dir), metrics)
    logger.info("saved the DPO-trained model to %s (%.1f s)", config.out_dir, wall)
    return DPOResult(config.out_dir, step, train_losses, evals, wall, metrics)
