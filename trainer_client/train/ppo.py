"""PPO training: sample completions, score them through the reward service, update policy and critic.

Why: PPO with a learned critic next to GRPO, on the same rollouts, reward service,
checkpoints and logs, so the two can be compared on one task and one budget.

    trainer-client ppo --config configs/demo_ppo.yaml --run-dir runs/ppo_demo
    trainer-client ppo --config configs/demo_ppo.yaml --set ppo.kl_coef=0.05 --set model.device=cuda
    trainer-client plot runs/ppo_demo

One step: draw ``prompts_per_step`` prompts and sample ``group_size`` completions each,
scored while the next prompts are generated (GRPO's ``collect_step``; PPO keeps every
group); rollout log-probs, reference log-probs (``kl_coef > 0``) and critic values; the
score on each completion's last token (``ppo.advantage: outcome``), each step score on
its step's last token (``process``) or both, minus the per-token KL when it is in the
reward -> GAE -> whitened advantages (``targets``); ``ppo_epochs`` passes of clipped policy and
value losses (``ppo_update``); one metrics line. Unscored completions are masked out of
everything and counted (``unscored``), never read as reward 0. A checkpoint (policy,
critic in ``critic/``, the optimizer of both, RNGs, prompt position) every
``save_every`` steps and at the end; with ``run.resume`` a rerun continues exactly.
With ``model.lora`` the policy trains adapters (its KL reference is the base with them off);
the critic stays a full model (``ppo.critic_path`` may name a smaller one).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer_client.rl import explained_variance, kl_estimate, masked_mean, step_token_rewards
from trainer_client.train import checkpointing
from trainer_client.train.collect import StepData, batch_rewards, collect_step
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.loop import RunSummary, raise_if_nothing_scored, restore_or_seed, run_training
from trainer_client.train.lora import trainable_parameters
from trainer_client.train.models import linear_warmup, load_tokenizer, load_trainable_policy, merged_writer, start_dir
from trainer_client.train.ppo_config import PpoTrainerConfig, to_yaml
from trainer_client.train.ppo_targets import ppo_targets
from trainer_client.train.ppo_update import PpoBatch, ppo_update
from trainer_client.train.reference import load_reference
from trainer_client.train.reward_overlap import OverlappedScorer
from trainer_client.train.rollout_log import completion_advantages, step_records
from trainer_client.train.rollouts import PromptSampler, read_prompts, uses_chat_template
from trainer_client.train.run_configs import keep_config
from trainer_client.train.run_logging import RunLogger
from trainer_client.train.step_metrics import rollout_metrics
from trainer_client.train.step_rewards import batch_steps, batch_token_char_ends
from trainer_client.train.value_head import batched_values, load_critic
from trainer_client.train.wandb_log import check_wandb, open_wandb

logger = logging.getLogger(__name__)

CRITIC_DIR = "critic"  # the critic's save_pretrained directory inside a checkpoint
UPDATE_KEYS = ("loss", "policy_loss", "value_loss", "clip_frac", "value_clip_frac", "approx_kl", "ratio_mean",
               "entropy", "grad_norm", "critic_grad_norm")


@dataclass(frozen=True)
class _KeepEveryGroup:
    """PPO trains on every sampled group: no dynamic sampling (see ``collect.GroupFiltering``)."""

    dynamic_sampling: bool = False
    max_sampling_rounds: int = 1
    min_valid: int = 2  # for the zero_variance_frac metric only: PPO's critic, not the group, is its baseline


class PpoTrainer:
    """Owns policy, critic, reference, optimizer, sampler and logger of one run; ``train()`` runs it."""

    def __init__(self, config: PpoTrainerConfig) -> None:
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
        critic_from = self.checkpoint / CRITIC_DIR if self.checkpoint else config.ppo.critic_path or config.model.path
        self.critic = load_critic(str(critic_from), config.model, trainable=True)
        self.ref_model = load_reference(config.model, self.model) if config.ppo.kl_coef else None
        o = config.optim
        self.optimizer = torch.optim.AdamW(
            [{"params": trainable_parameters(self.model)},
             {"params": list(self.critic.parameters()), "lr": config.ppo.critic_lr or o.lr}],
            lr=o.lr, betas=(o.adam_beta1, o.adam_beta2), weight_decay=o.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, linear_warmup(o.warmup_steps))
        data = config.data
        self.sampler = PromptSampler(read_prompts(data.train, data.task, prompt_key=data.prompt_key,
                                                  reference_key=data.reference_key), config.run.seed, data.shuffle)
        self.step = restore_or_seed(self.checkpoint, self.optimizer, self.scheduler, self.sampler, config.run.seed)
        self.run_logger = RunLogger(self.run_dir, config.run.tensorboard,
                                    resume_step=self.step if self.checkpoint is not None else None,
                                    rollouts_max_mb=config.run.rollouts_max_mb if config.run.rollouts_sample else None,
                                    wandb_run=open_wandb(self.run_dir, config.run.wandb_project, config.run.wandb_name,
                                                         dataclasses.asdict(config)) if config.run.wandb else None)
        self.run_logger.log_config(to_yaml(config))

    def train(self) -> RunSummary:
        return run_training(self, "ppo", lambda m: {"reward": f"{m['reward_mean'] or 0:.3f}",
                                                    "vloss": f"{m.get('value_loss') or 0:.4f}"})

    def save(self) -> None:
        write_merged = merged_writer(self.model, self.tokenizer, self.config.model)

        def write_critic(directory: Path) -> None:
            self.critic.save_pretrained(directory / CRITIC_DIR, safe_serialization=True)
            if write_merged is not None:
                write_merged(directory)

        checkpointing.save_checkpoint(self.run_dir, self.step, self.model, self.tokenizer, self.optimizer,
                                      self.scheduler, {"sampler": self.sampler.state_dict()},
                                      keep=self.config.run.keep_checkpoints, write_extra=write_critic)

    def train_step(self, scorer: OverlappedScorer) -> dict[str, Any]:
        cfg = self.config
        t0 = time.perf_counter()
        data = collect_step(self.model, self.tokenizer, self.sampler, scorer, cfg.sampling, _KeepEveryGroup(),
                            self.step, chat_template=cfg.data.chat_template)
        metrics = rollout_metrics(data)
        if cfg.sampling.group_size == 1:
            metrics["zero_variance_frac"] = None  # a group of one has no variance to speak of
        raise_if_nothing_scored(metrics, self.step, cfg.data.train)
        t1 = time.perf_counter()
        batch, batch_stats = self.make_batch(data)
        metrics.update(batch_stats)
        if cfg.run.rollouts_sample:
            advantages = completion_advantages(batch.advantages, batch.loss_mask)
            self.run_logger.log_rollouts(step_records(self.step + 1, data, cfg.run.rollouts_sample, advantages))
        t2 = time.perf_counter()
        stats = {}
        if batch.loss_mask.any():
            stats = ppo_update(self.model, self.critic, self.optimizer, batch, cfg.ppo,
                               temperature=cfg.sampling.temperature, norm_len=cfg.sampling.max_new_tokens,
                               max_grad_norm=cfg.optim.max_grad_norm, seed=cfg.run.seed, step=self.step)
        metrics["lr"] = self.scheduler.get_last_lr()[0]
        self.scheduler.step()
        t3 = time.perf_counter()
        for key in UPDATE_KEYS:
            metrics[key] = stats.get(key)
        metrics["time/logprobs_s"] = t2 - t1
        metrics["time/train_s"] = t3 - t2
        metrics["time/step_s"] = t3 - t0
        return metrics

    def make_batch(self, data: StepData) -> tuple[PpoBatch, dict[str, float | None]]:
        """Rollout log-probs, reference log-probs and values; rewards -> GAE targets; batch stats."""
        cfg, ro = self.config, data.rollouts
        p, device = cfg.ppo, ro.completion_ids.device
        rewards, scored = batch_rewards(data.results)
        rewards, scored = rewards.to(device), scored.to(device)
        loss_mask = ro.completion_mask & scored[:, None]
        tensors = (ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask)
        passes = {"micro_batch_size": p.micro_batch_size, "max_tokens": p.max_tokens_per_micro_batch}
        temp = cfg.sampling.temperature
        self.model.eval()
        old_logp = batched_logprobs(self.model, *tensors, temperature=temp, **passes)
        ref_logp = None if self.ref_model is None else self.ref_model.logprobs(*tensors, temperature=temp, **passes)
        old_values = batched_values(self.critic, *tensors, **passes)
        kl = None if ref_logp is None else kl_estimate(old_logp, ref_logp, p.kl_estimator)
        step_rewards, process_stats = None, {}
        if p.advantage in ("process", "both"):
            steps = batch_steps(data.results)
            step_rewards = step_token_rewards(steps, batch_token_char_ends(self.tokenizer, ro.completion_ids,
                                                                           ro.lengths), ro.completion_ids.shape[1])
            missing = sum(1 for row_steps, ok in zip(steps, scored.tolist()) if ok and not row_steps)
            if missing:
                logger.warning("step %d: %d scored completion(s) came back without step scores (is the task a "
                               "step-scoring one?)", self.step, missing)
            process_stats = {"process/no_steps": missing,
                             "process/scored_steps": sum(s.scored for row in steps for s in row)}
        targets = ppo_targets(rewards, loss_mask, old_values, gamma=p.gamma, lam=p.lam,
                              kl=kl if p.kl_in_reward else None, kl_coef=p.kl_coef, whiten=p.whiten_advantages,
                              step_rewards=None if step_rewards is None else step_rewards.to(device),
                              outcome=p.advantage != "process")
        stats = {**process_stats,
            "kl": None if kl is None else float(masked_mean(kl, loss_mask)),
            "value_mean": float(masked_mean(old_values, loss_mask)),
            "return_mean": float(masked_mean(targets.returns, loss_mask)),
            "explained_variance": float(explained_variance(old_values, targets.returns, loss_mask)),
        }
        batch = PpoBatch(*tensors, loss_mask, targets.advantages, targets.returns, old_logp, old_values,
                         ref_logp if not p.kl_in_reward else None)
        return batch, stats


def train_ppo(config: PpoTrainerConfig) -> RunSummary:
    """Builds a trainer for ``config`` and runs it to ``run.steps`` (or ``run.max_time_s``)."""
    return PpoTrainer(config).train()
