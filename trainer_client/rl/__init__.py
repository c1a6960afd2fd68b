"""The pure math of GRPO/PPO training: advantages, GAE, KL estimators, losses, masking.

Plain functions, torch tensors in and out, no I/O and no model code. Conventions:

- Token tensors are [B, T] (one row per completion, completion tokens only or with the
  prompt masked out); a mask is bool, True on tokens that count. Padding may hold
  anything, NaN included: it is selected away, never multiplied by 0.
- Rewards are one per completion, [B] (or [num_groups, G]); an unscored completion is NaN
  (``reward_mask_from`` turns the client's None into NaN + a False mask), gets advantage
  0, and must also get an all-False row in the loss mask. Never substitute 0 for it.
- Losses are minimised; ``logp`` carries the gradient, everything else (old log-probs,
  advantages, returns, old values) is treated as a constant.

A GRPO step, sketched:

    rewards, scored = reward_mask_from(client_rewards)
    adv = grpo_advantages(rewards, group_ids, valid_mask=scored)            # [B] (groups with < 2 scored: 0)
    # or per token from step scores (DeepSeekMath process supervision):
    # adv = process_advantages(steps, token_char_ends, group_ids, T, valid_mask=scored).advantages  # [B, T]
    mask = token_mask & scored_groups(rewards, group_ids, valid_mask=scored).trainable[:, None]
    loss, stats = clipped_policy_loss(logp, old_logp, adv, mask, eps_high=0.28)
    loss = loss + kl_loss(kl_estimate(logp, ref_logp, "k3"), mask, beta)
"""

from trainer_client.rl.advantages import ScoredGroups, group_index, grpo_advantages, scored_groups, zero_variance_groups
from trainer_client.rl.gae import gae_advantages, whiten_advantages
from trainer_client.rl.kl import kl_estimate, kl_k1, kl_k2, kl_k3
from trainer_client.rl.losses import (
    clipped_policy_loss,
    entropy_bonus,
    entropy_from_logits,
    kl_loss,
    kl_penalty_in_reward,
    value_loss,
)
from trainer_client.rl.masking import (
    aggregate_loss,
    masked_count,
    masked_mean,
    masked_sum,
    masked_var,
    reward_mask_from,
    whiten,
)
from trainer_client.rl.overlong import overlong_filter_mask, overlong_penalty, truncated_from_lengths
from trainer_client.rl.process_advantages import (
    ProcessAdvantages,
    process_advantages,
    step_end_tokens,
    step_token_rewards,
)
from trainer_client.rl.value_stats import explained_variance

__all__ = [
    "aggregate_loss", "clipped_policy_loss", "entropy_bonus", "entropy_from_logits", "explained_variance",
    "gae_advantages", "group_index", "grpo_advantages", "kl_estimate", "kl_k1", "kl_k2", "kl_k3",
    "kl_loss", "kl_penalty_in_reward", "masked_count", "masked_mean", "masked_sum", "masked_var",
    "overlong_filter_mask", "overlong_penalty", "ProcessAdvantages", "process_advantages", "reward_mask_from",
    "ScoredGroups", "scored_groups",
    "step_end_tokens", "step_token_rewards", "truncated_from_lengths",
    "value_loss", "whiten", "whiten_advantages", "zero_variance_groups",
]
