"""Group-relative advantages (GRPO and its variants) from one scalar reward per completion.

Each prompt is sampled G times; a completion's advantage is its reward against the other
completions of the same prompt (its *group*):

    A_i = (r_i - b_g) / s

- b_g: the group mean (GRPO, ``baseline="mean"``), the mean of the other members
  (``baseline="leave_one_out"``, RLOO: b_i = (sum_g r - r_i) / (n_g - 1); Ahmadian et al.,
  2024, arXiv:2402.14740), or nothing (``baseline="none"``, REINFORCE: A_i = r_i / s, and
  a zero-variance group keeps its rewards: without a baseline they are the signal).
- s: ``"group"``: population std of the group + eps (GRPO, Shao et al., 2024,
  arXiv:2402.03300; TRL ``GRPOTrainer``); ``"batch"``: population std of all valid rewards
  in the batch + eps (group mean, batch std: "Lite PPO", Liu et al., 2025,
  arXiv:2508.08221); ``"none"``: 1 (Dr. GRPO, Liu et al., 2025, arXiv:2503.20783).

Unscored completions (``valid_mask`` False, or a NaN reward) take no part in any statistic
and get advantage 0; the caller must also drop them from the loss mask. A group with fewer
than ``min_valid`` scored members (default 2) gives no advantage at all: every member gets 0,
none takes part in a batch statistic, and ``scored_groups`` marks its members untrainable
(out of the loss mask) and counts such groups (NeMo-RL's rule). Groups whose valid rewards
are all equal (or that have fewer than two) carry no signal: their advantages are exactly 0,
and ``zero_variance_groups`` finds them for DAPO's dynamic sampling (Yu et al., 2025,
arXiv:2503.14476).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, NamedTuple

import torch

from trainer_client.rl.masking import masked_var

Scale = Literal["group", "batch", "none"]
Baseline = Literal["mean", "leave_one_out", "none"]
GroupIds = torch.Tensor | Sequence[Hashable]


class _GroupMoments(NamedTuple):
    count: torch.Tensor  # [K] valid members per group
    total: torch.Tensor  # [K] sum of valid rewards
    mean: torch.Tensor  # [K]
    std: torch.Tensor  # [K] population std
    zero_var: torch.Tensor  # [K] bool: all valid rewards equal, or fewer than two


class ScoredGroups(NamedTuple):
    """Which completions a step trains on, by the scored-members rule (``scored_groups``)."""

    trainable: torch.Tensor  # bool, rewards' shape: scored, in a group with >= min_valid scored members
    too_few: torch.Tensor  # bool [K]: groups with fewer than min_valid scored members (no advantage)
    scored: torch.Tensor  # long [K]: scored members per group


def group_index(group_ids: GroupIds, device: torch.device | str | None = None) -> tuple[torch.Tensor, int]:
    """Maps arbitrary group ids (ints, strings, ...) to 0..K-1 in order of first appearance.

    Returns (index [B] long, K). Per-group outputs of this module follow this order.
    """
    keys = group_ids.tolist() if isinstance(group_ids, torch.Tensor) else list(group_ids)
    first: dict[Hashable, int] = {}
    index = [first.setdefault(k, len(first)) for k in keys]
    return torch.tensor(index, dtype=torch.long, device=device), len(first)


def _flatten(rewards: torch.Tensor, group_ids: GroupIds | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """-> (rewards [B] float, group index [B], number of groups)."""
    r = rewards if rewards.is_floating_point() else rewards.float()
    if r.dim() == 2:
        if group_ids is not None:
            raise ValueError("rewards shaped [num_groups, G] already define the groups; drop group_ids")
        k, g = r.shape
        index = torch.arange(k, device=r.device).repeat_interleave(g)
        return r.reshape(-1), index, k
    if r.dim() != 1 or group_ids is None:
        raise ValueError("pass rewards [B] with group_ids [B], or rewards shaped [num_groups, G]; "
                         f"got rewards of shape {tuple(r.shape)} and group_ids={group_ids is not None}")
    index, k = group_index(group_ids, device=r.device)
    if index.numel() != r.numel():
        raise ValueError(f"group_ids has {index.numel()} entries but rewards has {r.numel()}")
    return r, index, k


def _valid(r: torch.Tensor, valid_mask: torch.Tensor | None) -> torch.Tensor:
    if torch.isinf(r).any():
        raise ValueError("rewards contain inf; an unscored completion must be NaN or masked")
    valid = ~torch.isnan(r)
    if valid_mask is not None:
        valid = valid & valid_mask.reshape(-1).to(device=r.device, dtype=torch.bool)
    return valid


def _check_min_valid(min_valid: int) -> None:
    if isinstance(min_valid, bool) or not isinstance(min_valid, int) or min_valid < 1:
        raise ValueError(f"min_valid must be an integer >= 1 (scored members a group needs), got {min_valid!r}")


def _enough_scored(index: torch.Tensor, k: int, valid: torch.Tensor, min_valid: int) -> tuple[torch.Tensor, ...]:
    """-> (trainable [B]: valid and in a group with >= min_valid valid members, too_few [K], count [K])."""
    count = torch.zeros(k, dtype=torch.long, device=index.device).index_add(0, index, valid.long())
    too_few = count < min_valid
    return valid & ~too_few[index], too_few, count


def scored_groups(rewards: torch.Tensor, group_ids: GroupIds | None = None, *,
                  valid_mask: torch.Tensor | None = None, min_valid: int = 2) -> ScoredGroups:
    """The completions to train on: scored ones in groups with at least ``min_valid`` scored members.

    The loss mask is ``token_mask & trainable[:, None]``: an unscored completion, and every member of a
    group with too few scored members, is out of the loss. Groups follow ``group_index`` (or the rows of
    a [num_groups, G] input).
    """
    _check_min_valid(min_valid)
    r, index, k = _flatten(rewards.detach(), group_ids)
    trainable, too_few, count = _enough_scored(index, k, _valid(r, valid_mask), min_valid)
    return ScoredGroups(trainable.reshape(rewards.shape), too_few, count)


def _moments(r: torch.Tensor, index: torch.Tensor, k: int, valid: torch.Tensor) -> _GroupMoments:
    """Per-group count, sum, mean, population std and zero-variance flag over valid members."""
    zeros = torch.zeros(k, dtype=r.dtype, device=r.device)
    r0 = torch.where(valid, r, torch.zeros_like(r))
    count = zeros.index_add(0, index, valid.to(r.dtype))
    total = zeros.index_add(0, index, r0)
    mean = total / count.clamp(min=1)
    dev = torch.where(valid, r - mean[index], torch.zeros_like(r))
    std = (zeros.index_add(0, index, dev**2) / count.clamp(min=1)).sqrt()
    inf = torch.full_like(r, float("inf"))
    gmax = torch.full_like(zeros, -float("inf")).scatter_reduce(0, index, torch.where(valid, r, -inf), "amax")
    gmin = torch.full_like(zeros, float("inf")).scatter_reduce(0, index, torch.where(valid, r, inf), "amin")
    return _GroupMoments(count, total, mean, std, zero_var=~(gmax > gmin))


def grpo_advantages(rewards: torch.Tensor, group_ids: GroupIds | None = None, *, scale: Scale = "group",
                    leave_one_out: bool = False, eps: float = 1e-4,
                    valid_mask: torch.Tensor | None = None, baseline: Baseline | None = None,
                    min_valid: int = 2) -> torch.Tensor:
    """A_i = (r_i - baseline_i) / (std + eps), one advantage per completion, same shape as rewards.

    rewards: [B] with ``group_ids`` [B] (tensor or any hashables, e.g. the reward client's
    group id strings), or [num_groups, G] with ``group_ids`` None. ``valid_mask`` (same
    shape, bool) marks scored completions; NaN rewards are unscored too. See the module
    docstring for ``scale`` and ``baseline`` (``leave_one_out=True`` is
    ``baseline="leave_one_out"``). With the leave-one-out baseline and ``scale="group"``
    the RLOO difference is divided by the group's population std. A group with fewer than
    ``min_valid`` scored members gets 0 everywhere and takes no part in the batch std (see
    ``scored_groups`` for the matching loss mask); ``min_valid=1`` lets a lone scored member count.
    Advantages are constants (no gradient flows to rewards).
    """
    _check_min_valid(min_valid)
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    if baseline is None:
        baseline = "leave_one_out" if leave_one_out else "mean"
    elif leave_one_out and baseline != "leave_one_out":
        raise ValueError(f"leave_one_out=True contradicts baseline={baseline!r}")
    if baseline not in ("mean", "leave_one_out", "none"):
        raise ValueError(f"baseline must be 'mean', 'leave_one_out' or 'none', got {baseline!r}")
    r, index, k = _flatten(rewards.detach(), group_ids)
    valid, _, _ = _enough_scored(index, k, _valid(r, valid_mask), min_valid)
    m = _moments(r, index, k, valid)
    r0 = torch.where(valid, r, torch.zeros_like(r))
    if baseline == "leave_one_out":
        adv = r0 - (m.total[index] - r0) / (m.count[index] - 1).clamp(min=1)
    elif baseline == "mean":
        adv = r0 - m.mean[index]
    else:
        adv = r0
    if scale == "group":
        adv = adv / (m.std[index] + eps)
    elif scale == "batch":
        adv = adv / (masked_var(r, valid).sqrt() + eps)
    keep = valid if baseline == "none" else valid & ~m.zero_var[index]
    adv = torch.where(keep, adv, torch.zeros_like(adv))
    return adv.reshape(rewards.shape)


def zero_variance_groups(rewards: torch.Tensor, group_ids: GroupIds | None = None, *,
                         valid_mask: torch.Tensor | None = None, min_valid: int = 2) -> torch.Tensor:
    """bool [num_groups]: True where a group's valid rewards are all equal (or < 2 valid), or it has
    fewer than ``min_valid`` valid members.

    Such groups get zero advantage everywhere; DAPO's dynamic sampling drops them and
    samples more prompts. Groups are rows of a [num_groups, G] input, or ``group_ids`` in
    order of first appearance (``group_index``); per completion: ``flags[group_index(ids)[0]]``.
    """
    _check_min_valid(min_valid)
    r, index, k = _flatten(rewards.detach(), group_ids)
    valid = _valid(r, valid_mask)
    _, too_few, _ = _enough_scored(index, k, valid, min_valid)
    return _moments(r, index, k, valid).zero_var | too_few
