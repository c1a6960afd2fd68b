"""The policy-gradient family by name: presets over the same trainer code.

    algorithm: dapo          # one line of the YAML config (or --set algorithm=dapo)

A preset is a set of config values, section by section. It is applied *under* the
config: every value the YAML file or a ``--set`` names explicitly wins over the
preset's, and every key a preset leaves alone keeps its field default. So

    algorithm: dr_grpo
    grpo: {beta: 0.04}       # Dr. GRPO's advantages and loss, with a KL term after all

is Dr. GRPO with a KL penalty. No ``algorithm`` line (or ``algorithm: null``) means no
preset: the field defaults, as before presets existed. ``trainer-client grpo
--help-config`` prints this table.

What each one is, on this code:

- ``reinforce`` (Williams, 1992): A_i = r_i. No baseline, no scaling; the loss is the
  summed token log-likelihood times the reward (``seq_sum_norm``: a constant divisor).
- ``rloo`` REINFORCE with the leave-one-out baseline (Ahmadian et al., 2024,
  arXiv:2402.14740): A_i = r_i - mean of the other group members, no std scaling.
- ``grpo`` (Shao et al., 2024, arXiv:2402.03300): group mean and std, per-sequence mean
  loss, clip 0.2, KL (k3) to the start policy with beta 0.04.
- ``dr_grpo`` (Liu et al., 2025, arXiv:2503.20783): GRPO without the std division and
  without the per-sequence length normalisation (sum over tokens / a constant); no KL.
- ``dapo`` (Yu et al., 2025, arXiv:2503.14476): clip-higher (0.2 / 0.28), token-level
  loss, dynamic sampling of zero-variance groups, soft overlong punishment; no KL.
- ``trpo`` (Schulman et al., 2015, arXiv:1502.05477): GRPO's group advantages with no
  clip and no optimizer: one natural-gradient step per batch (conjugate gradient on
  Fisher-vector products) inside a KL trust region, enforced by a backtracking line search
  on the measured KL (the ``trpo`` section: max_kl, cg_iters, cg_damping, backtrack_*).
- ``ppo`` (Schulman et al., 2017; Ouyang et al., 2022): a critic, GAE, whitened
  advantages, clipped policy and value losses; runs with ``trainer-client ppo``.

Single-pass presets (``ppo_epochs: 1``, one mini-batch) never move the policy before the
loss is taken, so the ratio is 1 and the clip is inactive: REINFORCE and RLOO are the
plain policy gradient there, as they should be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    trainer: str  # "grpo" (the group trainer) or "ppo" (the critic trainer)
    summary: str
    values: Mapping[str, Mapping[str, Any]]  # section -> key -> value


_SINGLE_PASS = {"ppo_epochs": 1, "mini_batch_size": 0}

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("reinforce", "grpo", "REINFORCE: A = r, no baseline, no scaling, summed log-likelihood loss",
           {"grpo": {"baseline": "none", "advantage_scale": "none", "loss_agg": "seq_sum_norm", "beta": 0.0,
                     "dynamic_sampling": False, **_SINGLE_PASS}}),
    Preset("rloo", "grpo", "REINFORCE with a leave-one-out baseline (RLOO): A = r - mean(others), no std",
           {"grpo": {"baseline": "leave_one_out", "advantage_scale": "none", "loss_agg": "seq_sum_norm",
                     "beta": 0.0, "dynamic_sampling": False, **_SINGLE_PASS}}),
    Preset("grpo", "grpo", "GRPO (DeepSeekMath): group mean/std, per-sequence mean loss, clip 0.2, KL k3 0.04",
           {"grpo": {"baseline": "mean", "advantage_scale": "group", "loss_agg": "sequence", "eps_low": 0.2,
                     "eps_high": 0.2, "beta": 0.04, "kl_estimator": "k3", "dynamic_sampling": False}}),
    Preset("dr_grpo", "grpo", "Dr. GRPO: no std division, no length normalisation (sum / max_new_tokens), no KL",
           {"grpo": {"baseline": "mean", "advantage_scale": "none", "loss_agg": "seq_sum_norm", "eps_low": 0.2,
                     "eps_high": 0.2, "beta": 0.0, "dynamic_sampling": False}}),
    Preset("dapo", "grpo", "DAPO: clip-higher 0.2/0.28, token-level loss, dynamic sampling, overlong shaping, no KL",
           {"grpo": {"baseline": "mean", "advantage_scale": "group", "loss_agg": "token", "eps_low": 0.2,
                     "eps_high": 0.28, "beta": 0.0, "dynamic_sampling": True, "overlong_penalty": 1.0}}),
    Preset("trpo", "grpo", "TRPO: group mean/std advantages, token-mean surrogate, one natural-gradient step per "
           "batch in a KL trust region (trpo.max_kl 0.01), no clip, no KL term",
           {"grpo": {"update": "trpo", "baseline": "mean", "advantage_scale": "group", "loss_agg": "token",
                     "beta": 0.0, "entropy_coef": 0.0, "dynamic_sampling": False, **_SINGLE_PASS}}),
    Preset("ppo", "ppo", "PPO: critic + GAE, whitened advantages, clip 0.2, value clip 0.2, KL in the reward",
           {"ppo": {"eps_low": 0.2, "eps_high": 0.2, "value_clip": 0.2, "whiten_advantages": True,
                    "kl_in_reward": True, "kl_estimator": "k1"}}),
)}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {sorted(PRESETS)} "
                         "(or leave it out for the field defaults)") from None


def apply_preset(tree: Mapping[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """The config tree with the preset's values filled in *under* the explicit ones (a new dict), and
    the ``section.key`` names whose explicit value differs from the preset's (the caller says so)."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tree.items()}
    overridden = []
    for section, values in get_preset(name).values.items():
        explicit = out.get(section) or {}
        if not isinstance(explicit, Mapping):
            continue  # config_from_dict reports the malformed section
        overridden += [f"{section}.{k}={explicit[k]!r} (preset: {v!r})" for k, v in values.items()
                       if k in explicit and explicit[k] != v]
        out[section] = {**values, **explicit}
    return out, overridden


def describe_presets() -> str:
    """One block per preset: its trainer, summary and the values it sets (for ``--help-config``)."""
    lines = ["algorithm presets (top-level `algorithm: NAME`; explicit config values override the preset's):"]
    for p in PRESETS.values():
        sets = ", ".join(f"{section}.{k}={v!r}" for section, values in p.values.items() for k, v in values.items())
        lines.append(f"  {p.name} [trainer-client {p.trainer}]  -- {p.summary}; sets {sets}")
    return "\n".join(lines)
