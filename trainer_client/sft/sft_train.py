"""Supervised fine-tuning of a causal LM: the loss on completion tokens only, chat-template aware.

Why: the first rung of post-training. A policy that has never written the answer format gives
GRPO groups of all-zero rewards; SFT on demonstrations teaches the format (and, on the tiny
task, the arithmetic) first. The tiny demo's start checkpoint is made with its encoding and loss
(``examples/tiny/warmup.py``).

    trainer-client sft --model runs/tiny_start --data data/sft/train.jsonl --eval-data data/sft/test.jsonl \\
        --out runs/sft --epochs 2 --lr 1e-3
    # on a GPU node, unchanged but for:  --device cuda --dtype bfloat16

Rows are ``{"prompt", "completion"}`` or ``{"messages"}`` (``chat_data``); ``--packing`` puts
several examples in one row (each attends only to itself). The output directory holds the model
and tokenizer (``save_pretrained``), ``train_config.json``, ``metrics.json`` (summary) and
``metrics.jsonl`` (one line per logged step, mirrored to TensorBoard when it is installed).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer_client.fine_tuning import disable_dropout, optimizer_and_schedule, set_up_run
from trainer_client.offline_options import OfflineTrainingOptions, lora_settings
from trainer_client.sft.chat_data import EncodedExample, encode_example, pack, read_examples
from trainer_client.sft.sft_config import SFTConfig  # noqa: F401 - re-exported
from trainer_client.sft.token_batches import (
    completion_loss,
    forward_logits,
    packed_batch,
    pad_batch,
    token_accuracy,
    token_logprobs,
)
from trainer_client.train.run_logging import RunLogger

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
TRAIN_CONFIG_FILE = "train_config.json"

#: ``on_step(step, model, tokenizer)``: called by the offline trainers after each optimizer step.
StepHook = Callable[[int, Any, Any], None]

ADAPTER_DIR = "adapter"  # inside OUT_DIR, with --lora-r: the adapter alone (OUT_DIR holds the merged model)


@dataclass(frozen=True)
class HeldOut:
    """Completion-token loss and accuracy on held-out examples."""

    loss: float  # mean NLL per completion token
    token_accuracy: float  # argmax == the next completion token
    tokens: int


@dataclass(frozen=True)
class SFTResult:
    out_dir: str
    steps: int
    train_loss: list[float]  # mean loss per epoch
    evals: list[HeldOut]  # before training, then after each epoch (empty without eval data)
    wall_time_s: float
    metrics: dict[str, Any]


# ----------------------------------------------------------------------------- model, data, evaluation


def load_causal_lm(path: str, device: torch.device, gradient_checkpointing: bool = False) -> tuple[Any, Any]:
    """The causal LM (float32, on ``device``) and its tokenizer (a pad token set: eos when it has none);
    ``gradient_checkpointing``: activation checkpointing on (as the RL trainers' ``model.gradient_checkpointing``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer_client.preflight import check_model_path
    from trainer_client.train.models import enable_checkpointing

    path = check_model_path(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
    if gradient_checkpointing:
        enable_checkpointing(model)
    return model, tokenizer


def autocast(device: torch.device, dtype: str):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=dtype == "bfloat16")


@torch.no_grad()
def evaluate(model: Any, examples: Sequence[EncodedExample], pad_id: int, batch_size: int, device: torch.device,
             dtype: str = "float32") -> HeldOut:
    """Held-out completion-token NLL and argmax accuracy (summed over all tokens, not averaged per example)."""
    was_training = model.training
    model.eval()
    nll, right, total = 0.0, 0, 0
    for start in range(0, len(examples), batch_size):
        batch = pad_batch(examples[start:start + batch_size], pad_id, device)
        with autocast(device, dtype):
            logits = forward_logits(model, batch)
        logp, _ = token_logprobs(logits, batch)
        nll -= float(logp.sum())
        r, n = token_accuracy(logits, batch)
        right, total = right + r, total + n
    model.train(was_training)
    return HeldOut(nll / max(1, total), right / max(1, total), total)


def _batches(train: Sequence[EncodedExample], config: SFTConfig, pad_id: int, rng: random.Random,
             device: torch.device) -> list[dict[str, torch.Tensor]]:
    order = list(range(len(train)))
    rng.shuffle(order)
    if config.packing:
        rows = pack([train[i] for i in order], config.max_length)
        rng.shuffle(rows)
        return [packed_batch(rows[s:s + config.batch_size], pad_id, device)
                for s in range(0, len(rows), config.batch_size)]
    return [pad_batch([train[i] for i in order[s:s + config.batch_size]], pad_id, device)
            for s in range(0, len(order), config.batch_size)]


# ----------------------------------------------------------------------------- training


def train_sft(config: SFTConfig, on_step: StepHook | None = None) -> SFTResult:
    """Train, evaluate before and after each epoch, log, and save everything to ``config.out_dir``.

    ``on_step(step, model, tokenizer)``, when given, runs after every optimizer step (e.g. a
    generation-based evaluation, as ``examples/ladder_compare.py`` does); it must leave the model's
    weights and mode as it found them."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    device = set_up_run("sft", config, config.model)
    train_rows = read_examples(config.data)[: config.max_train_examples]
    eval_rows = read_examples(config.eval_data) if config.eval_data else []
    model, tokenizer = load_causal_lm(config.model, device, config.gradient_checkpointing)
    if config.disable_dropout:
        disable_dropout(model)
    model = with_adapters(model, config)
    train = [encode_example(tokenizer, r, config.max_length) for r in train_rows]
    held_out = [encode_example(tokenizer, r, config.max_length) for r in eval_rows]
    logger.info("%d training examples (%d truncated, %d completion tokens), %d held-out", len(train),
                sum(e.truncated for e in train), sum(sum(e.trained) for e in train), len(held_out))
    pad_id = tokenizer.pad_token_id
    rng = random.Random(config.seed)
    rows = len(pack(train, config.max_length)) if config.packing else len(train)  # packing ignores the order
    per_epoch = math.ceil(rows / config.batch_size)
    total_steps = min(per_epoch * config.epochs, config.max_steps or math.inf)
    optimizer, scheduler = optimizer_and_schedule(model, config, int(total_steps))
    run_log = RunLogger(config.out_dir, tensorboard=config.tensorboard)
    evals: list[HeldOut] = []
    if held_out:
        evals.append(evaluate(model, held_out, pad_id, config.eval_batch_size, device, config.dtype))
        run_log.log(0, {"eval/loss": evals[-1].loss, "eval/token_accuracy": evals[-1].token_accuracy})
    step, train_losses = 0, []
    model.train()
    with tqdm(total=int(total_steps), desc="sft", disable=not config.progress, unit="step") as bar:
        for epoch in range(1, config.epochs + 1):
            losses: list[float] = []
            for batch in _batches(train, config, pad_id, rng, device):
                if step >= total_steps:
                    break
                with autocast(device, config.dtype):
                    loss = completion_loss(forward_logits(model, batch), batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm or math.inf)
                optimizer.step()
                scheduler.step()
                step += 1
                losses.append(loss.item())
                bar.update(1)
                if on_step is not None:
                    on_step(step, model, tokenizer)
                if step % config.logging_steps == 0:
                    run_log.log(step, {"loss": losses[-1], "grad_norm": float(grad_norm), "epoch": epoch,
                                       "lr": scheduler.get_last_lr()[0],
                                       "num_tokens": int(batch["trained"].sum())})
            train_losses.append(sum(losses) / max(1, len(losses)))
            if held_out:
                evals.append(evaluate(model, held_out, pad_id, config.eval_batch_size, device, config.dtype))
                run_log.log(step, {"eval/loss": evals[-1].loss, "eval/token_accuracy": evals[-1].token_accuracy,
                                   "epoch": epoch})
                logger.info("epoch %d: train_loss %.4f, eval_loss %.4f, eval_token_accuracy %.4f", epoch,
                            train_losses[-1], evals[-1].loss, evals[-1].token_accuracy)
            if step >= total_steps:
                break
    run_log.close()
    wall = time.perf_counter() - started
    metrics = {"steps": step, "train_loss": train_losses, "wall_time_s": round(wall, 2),
               "num_train_examples": len(train), "num_train_examples_truncated": sum(e.truncated for e in train),
               "base_model": config.model}
    if evals:
        metrics.update(eval_loss=[e.loss for e in evals], eval_token_accuracy=[e.token_accuracy for e in evals],
                       num_eval_tokens=evals[-1].tokens)
    save_run(model, tokenizer, config, Path(config.out_dir), metrics)
    logger.info("saved the fine-tuned model to %s (%.1f s)", config.out_dir, wall)
    return SFTResult(config.out_dir, step, train_losses, evals, wall, metrics)


def with_adapters(model: Any, config: OfflineTrainingOptions) -> Any:
    """``model`` with trainable low-rank adapters (base frozen) when the ``lora_*`` options ask for them."""
    settings = lora_settings(config)
    if settings is None:
        return model
    from trainer_client.train.lora import add_adapters, trainable_parameters

    model = add_adapters(model, settings)
    trained = sum(p.numel() for p in trainable_parameters(model))
    logger.info("LoRA r=%d: %d trainable parameters of %d", settings.r, trained,
                sum(p.numel() for p in model.parameters()))
    return model


def save_run(model: Any, tokenizer: Any, config: Any, out: Path, metrics: dict[str, Any]) -> None:
    """Model and tokenizer (``save_pretrained``), the config and the summary metrics. An adapted model is
    saved merged (a plain checkpoint the next command loads) with its adapter alone in ``out/adapter``."""
    from trainer_client.train.lora import is_adapted, save_merged

    out.mkdir(parents=True, exist_ok=True)
    if is_adapted(model):
        model.save_pretrained(out / ADAPTER_DIR, safe_serialization=True)
        save_merged(model, tokenizer, out)
    else:
        model.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)
    (out / TRAIN_CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
