"""GRPO training: sample groups, score them through the reward service, update the policy.

Why: the loop that turns the reward service's verdicts into a better policy, on any
``transformers`` causal LM, from a CPU demo to one GPU.

    trainer-client grpo --config configs/demo_grpo.yaml --run-dir runs/grpo_demo
    trainer-client grpo --config configs/demo_grpo.yaml --set grpo.beta=0.04 --set model.device=cuda
    trainer-client plot runs/grpo_demo

One step: draw ``prompts_per_step`` prompts, sample G completions each (scored while the
next prompts are generated; see ``collect``), rewards -> GRPO advantages (unscored ->
advantage 0 and out of the loss), old and reference log-probs, ``ppo_epochs`` passes of
the clipped surrogate (+ beta * KL) (see ``update``), one metrics line. A checkpoint
every ``save_every`` steps and at the end; with ``run.resume`` a rerun continues from
the newest checkpoint exactly where the interrupted run would have been.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer_client.grpo import checkpointing
from trainer_client.grpo.collect import StepData, batch_rewards, collect_step
from trainer_client.grpo.config import ModelConfig, TrainerConfig, to_yaml
from trainer_client.grpo.logprobs import batched_logprobs
from trainer_client.grpo.reward_overlap import OverlappedScorer, open_scorer
from trainer_client.grpo.rollouts import PromptSampler, read_prompts
from trainer_client.grpo.run_logging import RunLogger
from trainer_client.grpo.step_metrics import rollout_metrics
from trainer_client.grpo.update import TrainBatch, grpo_update, single_pass
from trainer_client.rl import grpo_advantages, overlong_filter_mask, overlong_penalty

logger = logging.getLogger(__name__)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


class NothingScoredError(RuntimeError):
    """A whole step came back unscored: the reward service or the task setup is broken."""


@dataclass(frozen=True)
class RunSummary:
    run_dir: str
    start_step: int
    end_step: int
    wall_time_s: float
    first_rewards: list[float | None]
    last_rewards: list[float | None]


def load_tokenizer(path: str) -> Any:
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(path: str, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[config.dtype])
    return prepare_model(model, config, trainable)


def prepare_model(model: torch.nn.Module, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    """Device, no dropout, and train mode (+ gradient checkpointing) or frozen eval mode."""
    model.to(config.device)
    for module in model.modules():  # old, new and reference log-probs must see the same network
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    if trainable:
        if config.gradient_checkpointing:
            model.gradient_checkpointing_enable()
        model.train()
    else:
        model.eval()
        model.requires_grad_(False)
    return model


def linear_warmup(warmup_steps: int):
    return lambda s: min(1.0, (s + 1) / warmup_steps) if warmup_steps else 1.0


class GrpoTrainer:
    """Owns the model, optimizer, sampler and logger of one run; ``train()`` runs it."""

    def __init__(self, config: TrainerConfig) -> None:
        self.config = config
        if config.model.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("model.device=cuda but torch sees no CUDA device; use --set model.device=cpu")
        if config.model.threads:
            torch.set_num_threads(config.model.threads)
        self.run_dir = config.run.dir
        self.checkpoint = checkpointing.latest_checkpoint(self.run_dir) if config.run.resume else None
        self.tokenizer = load_tokenizer(str(self.checkpoint or config.model.path))
        self.model = load_policy(str(self.checkpoint or config.model.path), config.model, trainable=True)
        self.ref_model = load_policy(config.model.path, config.model, trainable=False) if config.grpo.beta > 0 else None
        o = config.optim
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=o.lr, betas=(o.adam_beta1, o.adam_beta2),
                                           weight_decay=o.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, linear_warmup(o.warmup_steps))
        self.sampler = PromptSampler(read_prompts(config.data.train, config.data.task), config.run.seed,
                                     config.data.shuffle)
        self.step = 0
        if self.checkpoint is not None:
            state = checkpointing.load_training_state(self.checkpoint, self.optimizer, self.scheduler)
            self.step = int(state["step"])
            self.sampler.load_state_dict(state["sampler"])
            checkpointing.restore_rng(self.checkpoint)  # last: loading models may draw random numbers
            logger.info("resuming from %s at step %d", self.checkpoint, self.step)
        else:
            random.seed(config.run.seed)
            np.random.seed(config.run.seed)
            torch.manual_seed(config.run.seed)
        self.run_logger = RunLogger(self.run_dir, config.run.tensorboard,
                                    resume_step=self.step if self.checkpoint is not None else None)
        self.run_logger.log_config(to_yaml(config))

    def train(self) -> RunSummary:
        run = self.config.run
        started = time.perf_counter()
        start_step = self.step
        rewards: list[float | None] = []
        bar = tqdm(total=run.steps, initial=self.step, disable=not run.progress, desc="grpo", unit="step")
        try:
            with open_scorer(self.config.reward, self.run_dir) as scorer:
                while self.step < run.steps:
                    metrics = self.train_step(scorer)
                    self.step += 1
                    self.run_logger.log(self.step, metrics)
                    rewards.append(metrics["reward_mean"])
                    bar.update(1)
                    bar.set_postfix(reward=f"{metrics['reward_mean'] or 0:.3f}", kl=f"{metrics.get('kl') or 0:.4f}")
                    out_of_time = run.max_time_s and time.perf_counter() - started >= run.max_time_s
                    if (run.save_every and self.step % run.save_every == 0) or self.step == run.steps or out_of_time:
                        self.save()
                    if out_of_time:
                        logger.info("stopping at step %d: run.max_time_s=%s reached", self.step, run.max_time_s)
                        break
        finally:
            bar.close()
            self.run_logger.close()
        k = max(1, min(5, len(rewards) // 4))
        return RunSummary(self.run_dir, start_step, self.step, time.perf_counter() - started, rewards[:k], rewards[-k:])

    def save(self) -> None:
        checkpointing.save_checkpoint(self.run_dir, self.step, self.model, self.tokenizer, self.optimizer,
                                      self.scheduler, {"sampler": self.sampler.state_dict()},
                                      keep=self.config.run.keep_checkpoints)

    def train_step(self, scorer: OverlappedScorer) -> dict[str, Any]:
        cfg = self.config
        t0 = time.perf_counter()
        data = collect_step(self.model, self.tokenizer, self.sampler, scorer, cfg.sampling, cfg.grpo, self.step)
        metrics = rollout_metrics(data)
        if metrics["reward_mean"] is None:
            raise NothingScoredError(f"step {self.step}: no completion was scored ({metrics['unscored']} unscored: "
                                     f"{ {k: v for k, v in metrics.items() if k.startswith('unscored/')} }); "
                                     f"check the tasks in {cfg.data.train} and the reward server log")
        t1 = time.perf_counter()
        batch = self.make_batch(data) if data.results else None
        t2 = time.perf_counter()
        stats = {}
        if batch is not None and batch.loss_mask.any():
            stats = grpo_update(self.model, self.optimizer, batch, cfg.grpo, temperature=cfg.sampling.temperature,
                                norm_len=cfg.sampling.max_new_tokens, max_grad_norm=cfg.optim.max_grad_norm,
                                seed=cfg.run.seed, step=self.step)
        metrics["lr"] = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        t3 = time.perf_counter()
        for key in ("loss", "policy_loss", "kl", "clip_frac", "approx_kl", "ratio_mean", "entropy", "grad_norm"):
            metrics[key] = stats.get(key)
        metrics["time/logprobs_s"] = t2 - t1
        metrics["time/train_s"] = t3 - t2
        metrics["time/step_s"] = t3 - t0
        return metrics

    def make_batch(self, data: StepData) -> TrainBatch:
        """Rewards -> advantages and the loss mask; old and reference log-probs."""
        cfg, ro = self.config, data.rollouts
        device = ro.completion_ids.device
        rewards, scored = batch_rewards(data.results)
        rewards, scored = rewards.to(device), scored.to(device)
        if cfg.grpo.overlong_penalty:
            rewards = rewards + overlong_penalty(ro.lengths, cfg.sampling.max_new_tokens,
                                                 cfg.grpo.overlong_cache_len, cfg.grpo.overlong_penalty)
        group_ids = torch.arange(ro.num_groups, device=device).repeat_interleave(ro.group_size)
        advantages = grpo_advantages(rewards, group_ids, scale=cfg.grpo.advantage_scale,
                                     leave_one_out=cfg.grpo.leave_one_out, valid_mask=scored)
        loss_mask = ro.completion_mask & scored[:, None]
        if cfg.grpo.overlong_filter:
            loss_mask = overlong_filter_mask(loss_mask, ro.truncated)
        mb, temp = cfg.grpo.micro_batch_size, cfg.sampling.temperature
        old_logp = None
        if not single_pass(cfg.grpo, len(ro.texts)):
            self.model.eval()
            old_logp = batched_logprobs(self.model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids,
                                        ro.completion_mask, temperature=temp, micro_batch_size=mb)
        ref_logp = None
        if self.ref_model is not None:
            ref_logp = batched_logprobs(self.ref_model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids,
                                        ro.completion_mask, temperature=temp, micro_batch_size=mb)
        return TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, loss_mask, advantages,
                          old_logp, ref_logp)


def train_grpo(config: TrainerConfig) -> RunSummary:
    """Builds a trainer for ``config`` and runs it to ``run.steps`` (or ``run.max_time_s``)."""
    return GrpoTrainer(config).train()
