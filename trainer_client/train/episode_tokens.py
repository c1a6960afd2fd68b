"""An episode as tokens: the prompt, then the policy's turns and the environment's tool turns, in order.

The sequence the loss sees is built by appending token ids, never by re-rendering the whole
conversation: what the policy sampled stays exactly what it sampled (a re-rendered chat may
tokenize an earlier turn differently). Each piece is marked as the policy's (sampled: in the loss,
its log-probs taken) or not (the tool's output and the chat template's framing around it: attended
to, never in the loss). ``episode_rollouts`` lays a batch of episodes out as :class:`Rollouts`,
the prompt left-padded and everything after it as the "completion", with ``policy_mask`` marking
the policy's tokens.

Tool turns are rendered with the tokenizer's chat template: the text the template puts after an
assistant turn's end and before the next assistant turn, for a ``tool`` message (or a ``user``
message with the output in ``<tool_response>`` tags, for templates without a tool role). Without
a chat template, the output in ``<tool_response>`` tags on lines of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from trainer_client.train.rollouts import Rollouts

_TURN_MARK = "@@assistant-turn@@"  # a dummy assistant content, to find where the template's framing starts


def response_text(output: str) -> str:
    """Tool output wrapped as Hermes/Qwen templates show it in a user turn."""
    return f"<tool_response>\n{output}\n</tool_response>"


def render_messages(tokenizer: Any, messages: Sequence[Mapping[str, Any]], templated: bool) -> str:
    """The episode's first messages as the prompt text (generation prompt added when ``templated``)."""
    if templated:
        return tokenizer.apply_chat_template([dict(m) for m in messages], tokenize=False, add_generation_prompt=True)
    return "\n\n".join(str(m.get("content") or "") for m in messages) + "\n"


def tool_turn_text(tokenizer: Any, output: str | Sequence[str], templated: bool, role: str = "tool") -> str:
    """The text between the end of a policy turn (its eos) and the next policy turn, for a tool's ``output``
    (or the outputs of the turn's calls, in order: one ``tool`` message each, or one ``user`` message with
    every response).

    Raises ValueError when the chat template does not put its framing after the assistant turn's eos
    (or has no ``tool`` role and ``role`` is tool): say ``episodes.tool_role=user`` or fix the template.
    """
    outputs = [output] if isinstance(output, str) else list(output)
    responses = "\n".join(response_text(o) for o in outputs)
    if not templated:
        return f"\n{responses}\n"
    messages = [{"role": "tool", "content": o} for o in outputs] if role == "tool" else \
        [{"role": "user", "content": responses}]
    base = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _TURN_MARK}]
    try:
        full = tokenizer.apply_chat_template(base + messages, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # noqa: BLE001 -- a template raises whatever its Jinja code raises
        raise ValueError(f"the chat template cannot render a {role!r} message ({exc}); try "
                         "episodes.tool_role=user") from exc
    end = _TURN_MARK + (tokenizer.eos_token or "")
    at = full.find(end)
    if at < 0:
        raise ValueError("the chat template does not end an assistant turn with the eos token right after its "
                         "content, so tool turns cannot be appended to sampled turns; use a template that does")
    return full[at + len(end):]


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` with no special tokens added (the template's special tokens are in the text)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass
class EpisodeTokens:
    """One episode's tokens: the prompt, then pieces (ids, is the policy's) in order."""

    prompt_ids: list[int]
    pieces: list[tuple[list[int], bool]] = field(default_factory=list)

    def add(self, ids: Sequence[int], policy: bool) -> None:
        if ids:
            self.pieces.append(([int(t) for t in ids], policy))

    @property
    def completion_ids(self) -> list[int]:
        return [t for ids, _ in self.pieces for t in ids]

    @property
    def policy_flags(self) -> list[bool]:
        return [policy for ids, policy in self.pieces for _ in ids]

    @property
    def context(self) -> list[int]:
        """Everything so far: what the next turn is generated from."""
        return self.prompt_ids + self.completion_ids


def episode_rollouts(episodes: Sequence[EpisodeTokens], texts: Sequence[str], truncated: Sequence[bool],
                     group_size: int, pad_id: int, device: torch.device | str = "cpu") -> Rollouts:
    """Episodes (groups contiguous) as :class:`Rollouts`: prompts left-padded, the rest right-padded,
    ``completion_mask`` on every token after the prompt, ``policy_mask`` on the policy's only."""
    n = len(episodes)
    tp = max(1, max((len(e.prompt_ids) for e in episodes), default=1))
    tc = max(1, max((len(e.completion_ids) for e in episodes), default=1))
    prompt_ids = torch.full((n, tp), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, tp), dtype=torch.bool)
    completion_ids = torch.full((n, tc), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((n, tc), dtype=torch.bool)
    policy_mask = torch.zeros((n, tc), dtype=torch.bool)
    for i, episode in enumerate(episodes):
        p, c = episode.prompt_ids, episode.completion_ids
        if p:
            prompt_ids[i, tp - len(p):] = torch.tensor(p)
            prompt_mask[i, tp - len(p):] = True
        if c:
            completion_ids[i, :len(c)] = torch.tensor(c)
            completion_mask[i, :len(c)] = True
            policy_mask[i, :len(c)] = torch.tensor(episode.policy_flags)
    lengths = completion_mask.long().sum(1)
    return Rollouts(prompt_ids.to(device), prompt_mask.to(device), completion_ids.to(device),
                    completion_mask.to(device), lengths.to(device), torch.tensor(list(truncated), dtype=torch.bool,
                                                                                 device=device),
                    list(texts), group_size, policy_mask.to(device))
