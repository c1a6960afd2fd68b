"""The KL reference: the frozen start policy whose log-probs the KL term measures the policy against.

    reference = load_reference(config.model, policy)
    ref_logp = reference.logprobs(prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=1.0,
                                  micro_batch_size=16)

Full fine-tuning keeps a second, frozen copy of the start model. Under LoRA the base weights
never change, so the reference is the policy itself with its adapters switched off: no second
copy in memory.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from trainer_client.train.config import ModelConfig
from trainer_client.train.logprobs import batched_logprobs
from trainer_client.train.models import load_policy


class KLReference:
    """Reference log-probs from ``model``; with ``adapters_off``, ``model`` is the LoRA policy run as its base."""

    def __init__(self, model: Any, adapters_off: bool = False) -> None:
        self.model = model
        self.adapters_off = adapters_off

    def logprobs(self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor,
                 completion_mask: torch.Tensor, *, temperature: float, micro_batch_size: int,
                 max_tokens: int = 0) -> torch.Tensor:
        """Gradient-free reference log-probs [B, Tc] (``logprobs.batched_logprobs``)."""
        if self.adapters_off:
            from trainer_client.train.lora import adapters_disabled

            context: Any = adapters_disabled(self.model)
        else:
            context = contextlib.nullcontext(self.model)
        with context as model:
            return batched_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                                    temperature=temperature, micro_batch_size=micro_batch_size, max_tokens=max_tokens)


def load_reference(config: ModelConfig, policy: Any) -> KLReference:
    """The start model at ``model.path``, frozen; under ``model.lora``, ``policy`` with its adapters disabled."""
    if config.lora is not None:
        return KLReference(policy, adapters_off=True)
    return KLReference(load_policy(config.path, config, trainable=False))
