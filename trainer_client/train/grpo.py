"""GRPO training: sample groups, score them through the reward service, update the policy.

Why: the loop that turns the reward service's verdicts into a better policy, on any
``transformers`` causal LM, from a CPU demo to one GPU.

    trainer-client grpo --config configs/demo_grpo.yaml --run-dir runs/grpo_demo
    trainer-client grpo --config configs/demo_grpo.yaml --set grpo.beta=0.04 --set model.device=cuda
    trainer-client plot runs/grpo_demo

One step: draw ``prompts_per_step`` prompts, sample G completions each (scored while the
next prompts are generated; see ``collect``), rewards -> group-relative advantages
(unscored -> advantage 0 and out of the loss, as is every member of a group with fewer than
``grpo.min_valid`` scored members): one per completion from the outcome
score (``grpo.advantage: outcome``), per token from the step scores (``process``,
DeepSeekMath's process supervision; ``rl.process_advantages``) or their sum (``both``);
old and reference log-probs, ``ppo_epochs`` passes of the clipped surrogate (+ beta * KL)
(see ``grpo_update``; with ``grpo.update: trpo`` one trust-region step instead, see
``trpo_update``), one metrics line. Which member of the family runs (REINFORCE,
RLOO, GRPO, Dr. GRPO, DAPO) is the ``grpo`` section's values, usually set by
``algorithm: NAME`` (``presets``). A checkpoint
every ``save_every`` steps and at the end; with ``run.resume`` a rerun continues from
the newest checkpoint exactly where the interrupted run would have been.

With ``episodes.environment`` the groups are multi-turn episodes with tool calls instead
(``episodes``, ``episode_step``): the same advantages and update, the loss on the policy's
tokens only (``Rollouts.policy_mask``: tool output is not the policy's); the rows are the
environment's split's, or data.train's (``episodes.rows_from: data``), and ``run.eval_every``
runs held-out episodes (``episode_eval``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import torch

from reward_core.clients.environment import BlockingEnvironmentClient
from trainer_client.rl import (
    grpo_advantages,
    overlong_filter_mask,
    overlong_penalty,
    process_advantages,
    scored_groups,
)
from trainer_client.train import checkpointing
from trainer_client.train.collect import StepData, batch_rewards, collect_step
from trainer_client.train.episode_eval import EpisodePeriodicEval
from trainer_client.train.episode_step import (
    check_row,
    check_served,
    collect_episodes,
    data_rows,
    episode_metrics,
    episode_rows,
)
from trainer_client.train.episodes import ModelTurns
from trainer_client.train.grpo_config import GrpoTrainerConfig, to_yaml
from trainer_client.train.grpo_update import TrainBatch, grpo_update, single_pass
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.loop import (
    NothingScoredError,
    RunSummary,
    raise_if_nothing_scored,
    restore_or_seed,
    run_training,
)
from trainer_client.train.lora import trainable_parameters
from trainer_client.train.models import linear_warmup, load_tokenizer, load_trainable_policy, merged_writer, start_dir
from trainer_client.train.reference import load_reference
from trainer_client.train.reward_overlap import OverlappedScorer
from trainer_client.train.rollout_log import completion_advantages, step_records
from trainer_client.train.rollouts import PromptSampler, read_prompts, uses_chat_template
from trainer_client.train.run_configs import keep_config
from trainer_client.train.run_logging import RunLogger
from trainer_client.train.step_metrics import rollout_metrics
from trainer_client.train.step_rewards import batch_steps, batch_token_char_ends
from trainer_client.train.trpo_update import trpo_update
from trainer_client.train.wandb_log import check_wandb, open_wandb

logger = logging.getLogger(__name__)

__all__ = ["GrpoTrainer", "NothingScoredError", "RunSummary", "train_grpo"]


class GrpoTrainer:
    """Owns the model, optimizer, sampler and logger of one run; ``train()`` runs it."""

    def __init__(self, config: GrpoTrainerConfig) -> None:
        self.config = config
        if config.model.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("model.device=cuda but torch sees no CUDA device; use --set model.device=cpu")
        if config.model.threads:
            torch.set_num_threads(config.model.threads)
        self.run_dir = config.run.dir
        self.checkpoint = checkpointing.latest_checkpoint(self.run_dir) if config.run.resume else None
        if config.run.wandb:  # before any model loads: a missing package, or a resume with another
            check_wandb()      # config (run_configs), is refused at once
        keep_config(self.run_dir, to_yaml(config), self.checkpoint, config.run.allow_config_change)
        self.tokenizer = load_tokenizer(start_dir(config.model, self.checkpoint))
        uses_chat_template(self.tokenizer, config.data.chat_template)  # data.chat_template=true needs one: say so now
        self.model = load_trainable_policy(config.model, self.checkpoint)
        self.ref_model = load_reference(config.model, self.model) if config.grpo.beta > 0 else None
        o = config.optim
        self.optimizer = torch.optim.AdamW(trainable_parameters(self.model), lr=o.lr,
                                           betas=(o.adam_beta1, o.adam_beta2), weight_decay=o.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, linear_warmup(o.warmup_steps))
        data = config.data
        rows = episode_rows(config.episodes, data) if config.episodes.enabled else \
            read_prompts(data.train, data.task, prompt_key=data.prompt_key, reference_key=data.reference_key)
        self.sampler = PromptSampler(rows, config.run.seed, data.shuffle)
        self.host: BlockingEnvironmentClient | None = None  # episodes: opened at the first step
        self.step = restore_or_seed(self.checkpoint, self.optimizer, self.scheduler, self.sampler, config.run.seed)
        self.run_logger = RunLogger(self.run_dir, config.run.tensorboard,
                                    resume_step=self.step if self.checkpoint is not None else None,
                                    rollouts_max_mb=config.run.rollouts_max_mb if config.run.rollouts_sample else None,
                                    wandb_run=open_wandb(self.run_dir, config.run.wandb_project, config.run.wandb_name,
                                                         dataclasses.asdict(config)) if config.run.wandb else None)
        self.run_logger.log_config(to_yaml(config))

    def train(self) -> RunSummary:
        episodes = self.config.episodes.enabled
        extra: dict[str, Any] = {"evaluator": lambda c: EpisodePeriodicEval.from_config(c, self.environment_host)} \
            if episodes else {}
        try:
            return run_training(self, "grpo", lambda m: {"reward": f"{m['reward_mean'] or 0:.3f}",
                                                         "kl": f"{m.get('kl') or 0:.4f}"},
                                serve_environments=episodes and not self.config.episodes.endpoint,
                                check_tasks=not episodes, **extra)
        finally:
            if self.host is not None:
                self.host.close_client()
                self.host = None

    def environment_host(self, scorer: OverlappedScorer) -> BlockingEnvironmentClient:
        """The environment service's client (episodes.endpoint, else the embedded server's), checked once at the
        first step, before any episode: the environment and its splits, and that it reads the first row of
        data.train and of run.eval_data (rows_from: data; a row it refuses is named)."""
        if self.host is None:
            cfg = self.config
            episodes, run = cfg.episodes, cfg.run
            self.host = BlockingEnvironmentClient(episodes.endpoint or scorer.endpoint, timeout_s=episodes.timeout_s,
                                                  client_id=f"trainer:{self.run_dir}")
            check_served(episodes, self.host, eval_split=bool(run.eval_every and not run.eval_data))
            if episodes.rows_from == "data":
                check_row(episodes, self.host, self.sampler.rows[0], cfg.data.train)
            if run.eval_every and run.eval_data:
                check_row(episodes, self.host, data_rows(episodes, cfg.data, run.eval_data)[0], run.eval_data)
        return self.host

    def collect(self, scorer: OverlappedScorer) -> tuple[StepData, dict[str, Any]]:
        """One step's rollouts: single completions scored by the reward service, or episodes."""
        cfg = self.config
        if not cfg.episodes.enabled:
            data = collect_step(self.model, self.tokenizer, self.sampler, scorer, cfg.sampling, cfg.grpo, self.step,
                                chat_template=cfg.data.chat_template)
            return data, {}
        templated = uses_chat_template(self.tokenizer, cfg.data.chat_template)
        turns = ModelTurns(self.model, self.tokenizer, cfg.sampling, tool_call_format=cfg.episodes.tool_call_format)
        data, records = collect_episodes(turns, self.tokenizer, self.sampler, self.environment_host(scorer),
                                         cfg.sampling, cfg.episodes, self.step, templated, cfg.grpo.min_valid,
                                         path=cfg.data.train if cfg.episodes.rows_from == "data" else "")
        return data, episode_metrics(records)

    def save(self) -> None:
        checkpointing.save_checkpoint(self.run_dir, self.step, self.model, self.tokenizer, self.optimizer,
                                      self.scheduler, {"sampler": self.sampler.state_dict()},
                                      keep=self.config.run.keep_checkpoints,
                                      write_extra=merged_writer(self.model, self.tokenizer, self.config.model))

    def train_step(self, scorer: OverlappedScorer) -> dict[str, Any]:
        cfg = self.config
        t0 = time.perf_counter()
        data, episode_stats = self.collect(scorer)
        metrics = rollout_metrics(data)
        metrics.update(episode_stats)
        raise_if_nothing_scored(metrics, self.step, cfg.data.train or f"environment {cfg.episodes.environment}")
        t1 = time.perf_counter()
        batch, batch_stats = self.make_batch(data) if data.results else (None, {})
        metrics.update(batch_stats)
        if cfg.run.rollouts_sample:
            advantages = None if batch is None else completion_advantages(batch.advantages, batch.loss_mask)
            self.run_logger.log_rollouts(step_records(self.step + 1, data, cfg.run.rollouts_sample, advantages))
        t2 = time.perf_counter()
        stats = {}
        if batch is not None and batch.loss_mask.any() and cfg.grpo.update == "trpo":
            stats = trpo_update(self.model, batch, cfg.grpo, cfg.trpo, temperature=cfg.sampling.temperature,
                                norm_len=cfg.sampling.max_new_tokens)
        elif batch is not None and batch.loss_mask.any():
            stats = grpo_update(self.model, self.optimizer, batch, cfg.grpo, temperature=cfg.sampling.temperature,
                                norm_len=cfg.sampling.max_new_tokens, max_grad_norm=cfg.optim.max_grad_norm,
                                seed=cfg.run.seed, step=self.step)
        metrics["lr"] = self.scheduler.get_last_lr()[0]
        if cfg.grpo.update != "trpo":  # TRPO takes no optimizer step, so no learning-rate step either
            self.scheduler.step()
        t3 = time.perf_counter()
        for key in ("loss", "policy_loss", "kl", "clip_frac", "approx_kl", "ratio_mean", "entropy", "grad_norm"):
            metrics[key] = stats.get(key)
        metrics.update({k: v for k, v in stats.items() if k.startswith("trpo/")})
        metrics["time/logprobs_s"] = t2 - t1
        metrics["time/train_s"] = t3 - t2
        metrics["time/step_s"] = t3 - t0
        return metrics

    def make_batch(self, data: StepData) -> tuple[TrainBatch, dict[str, Any]]:
        """Rewards -> advantages ([N], or [N, Tc] with step scores) and the loss mask; old and reference log-probs."""
        cfg, ro = self.config, data.rollouts
        device = ro.completion_ids.device
        rewards, scored = batch_rewards(data.results)
        rewards, scored = rewards.to(device), scored.to(device)
        if cfg.grpo.overlong_penalty:
            rewards = rewards + overlong_penalty(ro.lengths, cfg.sampling.max_new_tokens,
                                                 cfg.grpo.overlong_cache_len, cfg.grpo.overlong_penalty)
        group_ids = torch.arange(ro.num_groups, device=device).repeat_interleave(ro.group_size)
        min_valid = cfg.grpo.min_valid
        groups = scored_groups(rewards, group_ids, valid_mask=scored, min_valid=min_valid)
        stats: dict[str, Any] = {"groups_too_few_scored": int(groups.too_few.sum()),
                                 "unscored_in_batch": int((~scored).sum()),
                                 "scored_in_too_few_groups": int((scored & ~groups.trainable).sum())}
        advantages = torch.zeros_like(rewards)
        if cfg.grpo.advantage in ("outcome", "both"):
            advantages = grpo_advantages(rewards, group_ids, scale=cfg.grpo.advantage_scale,
                                         baseline=cfg.grpo.baseline, valid_mask=scored, min_valid=min_valid)
        if cfg.grpo.advantage in ("process", "both"):
            # Episodes' steps are spans of completion tokens (per-turn rewards); single turns' are character spans.
            ends = [list(range(1, int(n) + 1)) for n in ro.lengths] if cfg.episodes.enabled else \
                batch_token_char_ends(self.tokenizer, ro.completion_ids, ro.lengths)
            process = process_advantages(
                batch_steps(data.results), ends,
                group_ids.tolist(), ro.completion_ids.shape[1], scale=cfg.grpo.advantage_scale,
                baseline=cfg.grpo.baseline, valid_mask=scored.tolist(), min_valid=min_valid)
            missing = int(process.no_steps.sum())
            if missing:
                logger.warning("step %d: %d scored completion(s) came back without step scores: process advantage 0 "
                               "(is the task a step-scoring one?)", self.step, missing)
            stats.update({"process/no_steps": missing, "process/scored_steps": process.scored_steps})
            advantages = advantages[:, None] + process.advantages.to(device)
        # The policy's tokens only (episodes: not the tool output); unscored, and groups with too few scored: out.
        loss_mask = ro.loss_tokens & groups.trainable[:, None]
        if cfg.grpo.overlong_filter:
            loss_mask = overlong_filter_mask(loss_mask, ro.truncated)
        tensors = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
        passes = {"temperature": cfg.sampling.temperature, "micro_batch_size": cfg.grpo.micro_batch_size,
                  "max_tokens": cfg.grpo.max_tokens_per_micro_batch}
        old_logp = None
        if not single_pass(cfg.grpo, len(ro.texts)):
            self.model.eval()
            old_logp = batched_logprobs(self.model, *tensors, **passes)
        ref_logp = None
        if self.ref_model is not None:
            ref_logp = self.ref_model.logprobs(*tensors, **passes)
        batch = TrainBatch(ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, loss_mask,
                           advantages, old_logp, ref_logp)
        return batch, stats


def train_grpo(config: GrpoTrainerConfig) -> RunSummary:
    """Builds a trainer for ``config`` and runs it to ``run.steps`` (or ``run.max_time_s``)."""
    return GrpoTrainer(config).train()
