"""Names the RL configs check (``grpo.loss_agg``, ``ppo.loss_agg``) before torch loads; the math that uses
them is ``trainer_client.rl.masking``, which imports torch (and so does the ``rl`` package)."""

from __future__ import annotations

from typing import Literal

AggMode = Literal["token", "sequence", "seq_sum_norm"]
AGG_MODES: tuple[str, ...] = ("token", "sequence", "seq_sum_norm")
