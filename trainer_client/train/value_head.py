"""The PPO critic: a separate copy of the start model's backbone with a linear value head.

    critic = load_critic("runs/tiny_start", model_config, trainable=True)      # new head, zero-initialised
    values = token_values(critic, prompt_ids, prompt_mask, completion_ids, completion_mask)   # [B, Tc]
    critic.save_pretrained(checkpoint / "critic")                              # reloads with load_critic

Why a separate critic rather than a value head on the policy's own backbone: the value
loss then cannot pull the policy's features around (no value-loss coefficient to tune
against the policy loss), the critic gets its own learning rate and gradient clipping,
and it is the layout of InstructGPT-style PPO as TRL's ``PPOTrainer``, OpenRLHF and verl
run it. It costs one more backbone forward/backward per micro-batch; for the tiny CPU
policy that is small next to generation, and on a GPU the critic may be a smaller model
(``ppo.critic_path``).

Why ``AutoModelForSequenceClassification`` with ``num_labels=1``: it *is* a backbone plus
a linear head (``score``, no bias) on the last hidden state, it loads any causal LM
checkpoint (the head is new, the backbone is the LM's), and ``save_pretrained`` /
``from_pretrained`` round-trip it with the head (safetensors). A real Hugging Face model
on a GPU node therefore works unchanged. A new head starts at zero, so the first values
are 0 instead of noise. Per-token values come from the backbone's hidden states, not from
the class's ``forward`` (which pools one value per sequence).
"""

from __future__ import annotations

import logging

import torch
from transformers import AutoModelForSequenceClassification

from trainer_client.train.config import ModelConfig
from trainer_client.train.logprobs import in_passes, position_ids_from
from trainer_client.train.models import DTYPES, prepare_model

logger = logging.getLogger(__name__)

HEAD = "score"  # the value head's attribute in transformers' *ForSequenceClassification decoders


class CriticLayoutError(ValueError):
    """A checkpoint loaded as a value model has no linear ``score`` head over a base model."""


def value_head_of(critic: torch.nn.Module) -> torch.nn.Linear:
    """The critic's value head, checked to map hidden states to one value."""
    head = getattr(critic, HEAD, None)
    if not isinstance(head, torch.nn.Linear) or head.out_features != 1:
        raise CriticLayoutError(f"{type(critic).__name__} has no linear {HEAD!r} head with one output; load a "
                                "decoder whose *ForSequenceClassification class has one (Llama, Qwen2, Mistral, "
                                "GPT-2, ...) with num_labels=1")
    return head


def load_critic(path: str, config: ModelConfig, trainable: bool) -> torch.nn.Module:
    """A value model from ``path``: a critic checkpoint, or a causal LM (its backbone + a zero value head)."""
    critic, info = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=1, dtype=DTYPES[config.dtype], output_loading_info=True)
    head = value_head_of(critic)
    if any(key.split(".")[0] == HEAD for key in info["missing_keys"]):
        logger.info("critic: backbone from %s, new value head (zero-initialised)", path)
        with torch.no_grad():
            head.weight.zero_()
            if head.bias is not None:
                head.bias.zero_()
    return prepare_model(critic, config, trainable)


def token_values(critic: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                 completion_ids: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """V(s_t) [B, Tc] in float32: the value before each completion token, from the hidden state that predicts it.

    Same input layout, attention mask and position ids as ``completion_logprobs``, so
    ``values[:, t]`` and ``logp[:, t]`` belong to the same state. With grad if grad is on.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention_mask = torch.cat([prompt_mask.long(), completion_mask.long()], dim=1)
    backbone = getattr(critic, critic.base_model_prefix)
    out = backbone(input_ids=input_ids, attention_mask=attention_mask,
                   position_ids=position_ids_from(attention_mask), use_cache=False)
    tc = completion_ids.shape[1]
    hidden = out.last_hidden_state[:, -(tc + 1):-1, :]
    return value_head_of(critic)(hidden).squeeze(-1).float()


@torch.no_grad()
def batched_values(critic: torch.nn.Module, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                   completion_ids: torch.Tensor, completion_mask: torch.Tensor, *,
                   micro_batch_size: int, max_tokens: int = 0) -> torch.Tensor:
    """Gradient-free rollout values [B, Tc], ``micro_batch_size`` rows at a time (and within ``max_tokens``
    padded tokens when > 0; ``logprobs.in_passes``)."""
    was_training = critic.training
    critic.eval()
    values = in_passes(lambda *tensors: token_values(critic, *tensors), prompt_ids, prompt_mask, completion_ids,
                       completion_mask, micro_batch_size=micro_batch_size, max_tokens=max_tokens)
    critic.train(was_training)
    return values
