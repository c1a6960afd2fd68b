"""Multi-turn rollouts: the policy talks to an environment, calling tools, until the episode ends.

    with BlockingEnvironmentClient(endpoint) as host:
        turns = ModelTurns(model, tokenizer, sampling)
        records = run_episodes(turns, tokenizer, host, specs, episodes_config, templated=True)

Every episode of the batch advances in lockstep: one ``generate`` call writes the next turn of
every running episode (``ModelTurns``; any ``TurnPolicy`` will do, e.g. a scripted one in tests).
A turn with a tool call (``tool_calls``) is sent to the environment and its output appended as a
tool turn (not the policy's tokens: ``episode_tokens``); a turn without one is the final message
(the episode is finished with it); a turn's calls run in order and their outputs make one tool turn
(a call that ends the episode stops there); submitting the answer ends the episode with its verification;
an episode still running after ``max_turns`` turns is finished with its last turn. A malformed
call is answered with the parse error as tool output (the policy's mistake, not ours). A typed
failure (the session refused, lost, past its deadline, a tool failed on the server's side) ends the
episode *unscored*: its reward is None, never 0; a row the environment refuses (``EpisodeSpecError``)
is kept in ``EpisodeRecord.spec_error``, for the caller to stop on. Sessions are always closed.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import torch

from reward_core.clients.environment import BlockingEnvironmentClient
from reward_core.contract import StepScore
from reward_core.episode_contract import (
    EpisodeError,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStatus,
    ToolCall,
)
from trainer_client.train.config import SamplingConfig
from trainer_client.train.episode_tokens import EpisodeTokens, encode, render_messages, tool_turn_text
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.rollouts import completion_lengths, eos_ids_of
from trainer_client.train.tool_calls import ParsedCall, parse_tool_calls, stop_strings, with_tools_prompt

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class TurnSample:
    """One sampled turn: its token ids (eos included when it ended with one) and text."""

    ids: list[int]
    text: str
    ended: bool = True  # ended by eos (else by a stop string or the token budget)
    truncated: bool = False  # ran into the token budget


class TurnPolicy(Protocol):
    """Writes the next turn of each context (token ids of everything so far)."""

    def __call__(self, contexts: Sequence[Sequence[int]]) -> list[TurnSample]: ...


class ModelTurns:
    """A causal LM's turns: the contexts left-padded, one ``generate`` call, each turn cut at its end.

    A turn ends at an eos token, at a stop string (``sampling.stop_strings`` and, for ``hermes``, the tool
    call's closing tag: ``tool_calls.stop_strings``), or after ``sampling.max_new_tokens`` tokens.
    ``greedy`` decodes greedily (evaluation).
    """

    def __init__(self, model: Any, tokenizer: Any, sampling: SamplingConfig, greedy: bool = False,
                 tool_call_format: str = "hermes") -> None:
        self.model, self.tokenizer, self.sampling, self.greedy = model, tokenizer, sampling, greedy
        self.eos_ids = eos_ids_of(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        self.stop_strings = list(dict.fromkeys([*sampling.stop_strings, *stop_strings(tool_call_format)]))

    @torch.no_grad()
    def __call__(self, contexts: Sequence[Sequence[int]]) -> list[TurnSample]:
        if not contexts:
            return []
        device = next(self.model.parameters()).device
        width = max(len(c) for c in contexts)
        ids = torch.full((len(contexts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(contexts), width), dtype=torch.long)
        for i, c in enumerate(contexts):
            ids[i, width - len(c):] = torch.tensor(list(c), dtype=torch.long)
            mask[i, width - len(c):] = 1
        s = self.sampling
        decoding = ({"do_sample": False, "temperature": None, "top_p": None, "top_k": None} if self.greedy else
                    {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k})
        was_training = self.model.training
        self.model.eval()
        out = self.model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **decoding,
                                  max_new_tokens=s.max_new_tokens, eos_token_id=self.eos_ids, pad_token_id=self.pad_id,
                                  stop_strings=self.stop_strings or None, tokenizer=self.tokenizer, use_cache=True)
        self.model.train(was_training)
        new = out[:, width:]
        lengths, ended = completion_lengths(new, self.eos_ids, self.pad_id)
        samples = []
        stop = self.stop_strings or None
        for row, n, eos in zip(new, lengths.tolist(), ended.tolist()):
            turn = row[:n].tolist()
            text = self.tokenizer.decode(turn, skip_special_tokens=True)
            stopped = stop is not None and any(text.endswith(end) for end in stop)
            samples.append(TurnSample(turn, text, ended=bool(eos), truncated=not eos and not stopped
                                      and n >= s.max_new_tokens))
        return samples


@dataclass
class EpisodeRecord:
    """One episode as run: its tokens, what happened, how it ended."""

    spec: EpisodeSpec
    tokens: EpisodeTokens
    outcome: EpisodeOutcome | None = None
    session_id: str = ""
    turns: int = 0
    tool_calls: int = 0
    tools_called: list[str] = field(default_factory=list)  # names, in call order (answered or not)
    malformed_calls: int = 0
    truncated: bool = False  # its last turn ran into the token budget
    steps: list[StepScore] = field(default_factory=list)  # per-turn rewards, spans in completion tokens
    last_text: str = ""
    spec_error: str = ""  # the environment refused the spec (EpisodeSpecError): the caller's mistake

    @property
    def running(self) -> bool:
        return self.outcome is None

    @property
    def status(self) -> EpisodeStatus:
        return EpisodeStatus.RUNNING if self.outcome is None else self.outcome.status

    @property
    def reward(self) -> float | None:
        """The final reward, None when the episode is unscored (a typed failure)."""
        return self.outcome.reward if self.outcome is not None and self.outcome.status.scored else None


def _parallel(pool: concurrent.futures.Executor, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return list(pool.map(fn, items))


def _failed(record: EpisodeRecord, exc: EpisodeError) -> None:
    record.outcome = EpisodeOutcome(record.session_id, exc.status, error=str(exc), turns=record.turns)


class _Runner:
    """The calls of one batch of episodes on ``host``, concurrent across episodes."""

    def __init__(self, host: BlockingEnvironmentClient, tokenizer: Any, config: EpisodesConfig, templated: bool,
                 pool: concurrent.futures.Executor) -> None:
        self.host, self.tokenizer, self.config, self.templated, self.pool = host, tokenizer, config, templated, pool
        eos = tokenizer.eos_token_id
        self.eos_ids = [eos] if eos is not None else []

    def open(self, record: EpisodeRecord) -> None:
        try:
            start = self.host.open(record.spec)
        except EpisodeError as exc:
            if isinstance(exc, EpisodeSpecError):
                record.spec_error = str(exc)
            _failed(record, exc)
            return
        record.session_id = start.session_id
        messages = with_tools_prompt(start.messages, start.tools, self.config.tool_prompt,
                                     self.config.tool_call_format)
        text = render_messages(self.tokenizer, messages, self.templated)
        record.tokens.prompt_ids = list(self.tokenizer(text, add_special_tokens=not self.templated)["input_ids"])

    def finish(self, record: EpisodeRecord) -> None:
        try:
            record.outcome = self.host.finish(record.session_id, record.last_text)
        except EpisodeError as exc:
            _failed(record, exc)

    def calls(self, item: tuple[EpisodeRecord, list[ParsedCall], int]) -> None:
        """The calls of one turn, in order: outputs (a malformed call's: its error) make one tool turn; the
        rewards of the turn's calls add up to its step reward; a call that ends the episode stops there."""
        record, parsed, turn = item
        outputs: list[str] = []
        reward: float | None = None
        for k, call in enumerate(parsed):
            if call.error:
                record.malformed_calls += 1
                outputs.append(f"error: {call.error}")
                continue
            record.tools_called.append(call.name)
            try:
                result = self.host.call_tool(record.session_id, ToolCall(call.name, call.arguments,
                                                                         f"call-{turn}-{k}"))
            except EpisodeError as exc:
                _failed(record, exc)
                return
            record.tool_calls += 1
            if result.reward is not None:
                reward = (reward or 0.0) + float(result.reward)
            if result.finished or result.status.ended:
                self.step_reward(record, reward)
                record.outcome = result.outcome or EpisodeOutcome(record.session_id, result.status,
                                                                  error=result.error, turns=record.turns)
                return
            outputs.append(result.output)
        self.step_reward(record, reward)
        self.tool_turn(record, outputs)

    def step_reward(self, record: EpisodeRecord, reward: float | None) -> None:
        """The last turn's reward as a step over its tokens (none: no step)."""
        if reward is not None:
            end = len(record.tokens.completion_ids)
            start = end - len(record.tokens.pieces[-1][0]) if record.tokens.pieces else 0
            record.steps.append(StepScore(start, end, reward))

    def tool_turn(self, record: EpisodeRecord, outputs: Sequence[str]) -> None:
        cap = self.config.max_tool_output_chars
        outputs = [o[:cap] + f"\n[output cut at {cap} characters]" if len(o) > cap else o for o in outputs]
        pieces = record.tokens.pieces
        if self.templated and pieces and not (pieces[-1][0] and pieces[-1][0][-1] in self.eos_ids):
            record.tokens.add(self.eos_ids, policy=False)  # the template's turn end the policy did not write
        text = tool_turn_text(self.tokenizer, outputs, self.templated, self.config.tool_role)
        record.tokens.add(encode(self.tokenizer, text), policy=False)

    def close(self, record: EpisodeRecord) -> None:
        if record.session_id:
            try:
                self.host.close(record.session_id)
            except EpisodeError:
                pass  # closing is idempotent; a lost session holds nothing


def run_episodes(policy: TurnPolicy, tokenizer: Any, host: BlockingEnvironmentClient, specs: Sequence[EpisodeSpec],
                 config: EpisodesConfig, templated: bool, concurrency: int = 32) -> list[EpisodeRecord]:
    """Runs one episode per spec to its end (see the module docstring); records in the specs' order."""
    fallback = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
    records = [EpisodeRecord(spec, EpisodeTokens([])) for spec in specs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(specs)))) as pool:
        runner = _Runner(host, tokenizer, config, templated, pool)
        try:
            _parallel(pool, runner.open, records)
            for turn in range(config.max_turns):
                active = [r for r in records if r.running]
                if not active:
                    break
                samples = policy([r.tokens.context for r in active])
                calls, finals = [], []
                for record, sample in zip(active, samples):
                    record.tokens.add(sample.ids, policy=True)
                    record.turns += 1
                    record.last_text, record.truncated = sample.text, sample.truncated
                    parsed = parse_tool_calls(sample.text, config.tool_call_format)
                    if parsed:
                        calls.append((record, parsed, turn))
                    else:
                        finals.append(record)
                _parallel(pool, runner.calls, calls)
                _parallel(pool, runner.finish, finals)
            _parallel(pool, runner.finish, [r for r in records if r.running])  # out of turns
        finally:
            _parallel(pool, runner.close, records)
    for record in records:
        if not record.tokens.prompt_ids:  # never opened: one attended token keeps the row's forward pass finite
            record.tokens.prompt_ids = [fallback]
    return records
