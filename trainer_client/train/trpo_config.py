"""The ``trpo`` section: the trust region and the solver of the group trainer's TRPO update.

    algorithm: trpo            # grpo.update=trpo, group advantages, token-mean surrogate
    trpo: {max_kl: 0.01}       # delta: the mean per-token KL(pi_old || pi_new) budget of one update

Read only when ``grpo.update`` is ``trpo`` (``train/trpo_update.py``); the defaults are
the usual ones of TRPO implementations (Schulman et al., 2015; Spinning Up, garage).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer_client.train.config import _help


@dataclass(frozen=True)
class TrpoConfig:
    max_kl: float = _help("delta: the most mean KL(pi_old || pi_new) per completion token one update may spend; the "
                          "line search measures it exactly over the vocabulary and refuses larger steps",
                          default=0.01)
    cg_iters: int = _help("conjugate-gradient iterations for the natural-gradient direction F^-1 g (each one "
                          "Fisher-vector product: a forward and a double backward pass)", default=10)
    cg_damping: float = _help("added to the Fisher's diagonal (F + damping I) so CG stays well posed where the "
                              "Fisher is near singular", default=0.1)
    backtrack_coeff: float = _help("line search: each try shrinks the step by this factor", default=0.8)
    backtrack_iters: int = _help("line search: tries before the update is rejected (the policy stays as it was)",
                                 default=10)

    def __post_init__(self) -> None:
        if not self.max_kl > 0:
            raise ValueError(f"trpo.max_kl must be > 0 (typically 0.01), got {self.max_kl}")
        if self.cg_iters < 1 or self.backtrack_iters < 1:
            raise ValueError(f"need trpo.cg_iters >= 1 and trpo.backtrack_iters >= 1; got {self.cg_iters}, "
                             f"{self.backtrack_iters}")
        if self.cg_damping < 0:
            raise ValueError(f"trpo.cg_damping must be >= 0 (typically 0.1), got {self.cg_damping}")
        if not 0 < self.backtrack_coeff < 1:
            raise ValueError(f"trpo.backtrack_coeff must be in (0, 1) (typically 0.8), got {self.backtrack_coeff}")
