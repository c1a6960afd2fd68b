"""The trainer's episode loop against a real server: ``reward-service serve --serve-environments`` on loopback,
reached through the environment client, with the tiny char-level tokenizer's chat template.

The policy here is scripted (it writes given text as token ids), so what the loop sends, what the
server answers and how the tokens are laid out can be checked exactly; ``test_grpo_episodes``
trains the real tiny model on the same server kind.
"""

from __future__ import annotations

import re

import pytest
import torch

from examples.tiny import build_tokenizer
from reward_core.clients.environment import BlockingEnvironmentClient
from reward_core.episode_contract import EpisodeStatus
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.hosting import create_server
from reward_service.router.config import ScorerConfig, ServerConfig
from trainer_client.rl import grpo_advantages, scored_groups
from trainer_client.train.collect import batch_rewards
from trainer_client.train.episode_step import group_results, specs_for
from trainer_client.train.episode_tokens import episode_rollouts
from trainer_client.train.episodes import TurnSample, run_episodes
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.prompts import PromptRow
from trainer_client.train.tool_calls import format_tool_call

CONFIG = EpisodesConfig(environment="arithmetic_tools", max_turns=4, tool_role="user", tool_prompt="names")


@pytest.fixture(scope="module")
def server():
    # Three sessions at once: the fourth episode of a group of four waits, then is REFUSED.
    small = EnvironmentsConfig(calculator_workers=1, verify_workers=1, sandbox_concurrency=1, max_sessions=3,
                               queue_timeout_s=0.2)
    server = create_server(ServerConfig(port=0, serve_environments=True, scorer=ScorerConfig(workers=1),
                                        environments=small))
    yield server
    server.stop(1.0)


@pytest.fixture(scope="module")
def host(server):
    with BlockingEnvironmentClient(server.address, timeout_s=60) as client:
        yield client


class ScriptedPolicy:
    """Turn 1: the calculator on the row's product, plus ``offsets[j]`` for the j-th of identical contexts
    (so members of a group differ); turn 2: submit what the calculator answered. Records every turn."""

    def __init__(self, tokenizer, offsets=(0, 1, 2, 3)) -> None:
        self.tokenizer, self.offsets = tokenizer, offsets
        self.turns: list[str] = []

    def write(self, text: str) -> TurnSample:
        self.turns.append(text)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        return TurnSample(ids, text)

    def __call__(self, contexts):
        out, seen = [], {}
        for context in contexts:
            text = self.tokenizer.decode(context, skip_special_tokens=False)
            answers = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", text, re.DOTALL)
            if answers:
                out.append(self.write(format_tool_call("submit_answer", {"answer": answers[-1].strip()})))
                continue
            j = seen[text] = seen.get(text, -1) + 1
            a, b = re.search(r"What is (\d+) \* (\d+)\?", text).groups()
            out.append(self.write(format_tool_call("calculator", {"expression": f"{a} * {b} + {self.offsets[j]}"})))
        return out


def test_an_episode_calls_the_calculator_submits_and_is_rewarded(host):
    tokenizer = build_tokenizer()
    policy = ScriptedPolicy(tokenizer)
    (record,) = run_episodes(policy, tokenizer, host, specs_for([PromptRow("r", "", {"index": 0}, "x")], CONFIG, 1),
                             CONFIG, templated=True)
    assert record.status is EpisodeStatus.FINISHED and record.reward == 1.0
    assert (record.turns, record.tool_calls, record.malformed_calls) == (2, 2, 0)
    assert host.session_ids == []  # closed


def test_the_loss_mask_covers_exactly_the_policys_tokens(host):
    tokenizer = build_tokenizer()
    policy = ScriptedPolicy(tokenizer)
    (record,) = run_episodes(policy, tokenizer, host, specs_for([PromptRow("r", "", {"index": 1}, "x")], CONFIG, 1),
                             CONFIG, templated=True)
    ro = episode_rollouts([record.tokens], ["t"], [False], 1, tokenizer.pad_token_id)
    ids, policy_mask = ro.completion_ids[0], ro.policy_mask[0]
    assert ro.completion_mask[0].all()
    eos = tokenizer.eos_token
    assert tokenizer.decode(ids[policy_mask], skip_special_tokens=False) == "".join(t + eos for t in policy.turns)
    tool_part = tokenizer.decode(ids[~policy_mask], skip_special_tokens=False)
    a, b = re.search(r"What is (\d+) \* (\d+)\?", tokenizer.decode(ro.prompt_ids[0])).groups()
    assert tool_part == f"<|user|><tool_response>\n{int(a) * int(b)}\n</tool_response><|assistant|>"
    # the tool turn sits between the two policy turns
    first = len(tokenizer(policy.turns[0], add_special_tokens=False)["input_ids"]) + 1
    assert policy_mask[:first].all() and not policy_mask[first] and policy_mask[-1]


def test_unscored_episodes_never_vote_in_the_group_baseline(host):
    tokenizer = build_tokenizer()
    rows = [PromptRow("r", "", {"index": 2}, "x")]
    records = run_episodes(ScriptedPolicy(tokenizer), tokenizer, host, specs_for(rows, CONFIG, 4), CONFIG,
                           templated=True)
    statuses = sorted(r.status.name for r in records)
    assert statuses == ["FINISHED", "FINISHED", "FINISHED", "REFUSED"]
    refused = next(i for i, r in enumerate(records) if r.status is EpisodeStatus.REFUSED)
    assert sorted(r.reward for r in records if r.reward is not None) == [0.0, 0.0, 1.0]
    rewards, scored = batch_rewards(group_results(records, 4, "t"))
    assert scored.tolist() == [i != refused for i in range(4)]
    advantages = grpo_advantages(rewards, torch.zeros(4, dtype=torch.long), valid_mask=scored, scale="none")
    expected = [0.0 if i == refused else records[i].reward - 1 / 3 for i in range(4)]
    assert advantages.tolist() == pytest.approx(expected)
    ro = episode_rollouts([r.tokens for r in records], [""] * 4, [False] * 4, 4, tokenizer.pad_token_id)
    loss_mask = ro.loss_tokens & scored_groups(rewards, torch.zeros(4, dtype=torch.long), valid_mask=scored,
                                               min_valid=2).trainable[:, None]
    assert not loss_mask[refused].any() and all(loss_mask[i].any() for i in range(4) if i != refused)
    assert host.session_ids == []


class AddingPolicy:
    """The j-th of the first contexts calls ``add`` j times (written into its calls' ``a``), then answers 5."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __call__(self, contexts):
        out, seen = [], 0
        for context in contexts:
            text = self.tokenizer.decode(context, skip_special_tokens=False)
            done = text.count("<tool_response>")
            if not done:
                seen += 1
            calls = seen if not done else int(re.search(r'"a": (\d+)', text).group(1))
            line = format_tool_call("add", {"a": calls, "b": 0}) if done < calls else "5"
            ids = self.tokenizer(line, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            out.append(TurnSample(ids, line))
        return out


def test_per_turn_rewards_become_steps_over_the_turns_that_earned_them():
    from tests.integration.episode_hosts import ScriptedHost, serving
    from trainer_client.rl import process_advantages

    tokenizer = build_tokenizer()
    config = EpisodesConfig(environment="adder", max_turns=4, tool_role="user", tool_prompt="none")
    with serving(ScriptedHost()) as server, BlockingEnvironmentClient(server.address, timeout_s=60) as client:
        records = run_episodes(AddingPolicy(tokenizer), tokenizer, client,
                               specs_for([PromptRow("r", "", {"index": 0}, "x")], config, 2), config, templated=True)
    assert [r.tool_calls for r in records] == [1, 2] and all(r.reward == 1.0 for r in records)
    turn = len(tokenizer(format_tool_call("add", {"a": 1, "b": 0}), add_special_tokens=False)["input_ids"]) + 1
    assert [(s.start, s.end, s.score) for s in records[0].steps] == [(0, turn, 0.1)]
    ro = episode_rollouts([r.tokens for r in records], ["", ""], [False, False], 2, tokenizer.pad_token_id)
    ends = [list(range(1, int(n) + 1)) for n in ro.lengths]
    adv = process_advantages([r.steps for r in records], ends, [0, 0], ro.completion_ids.shape[1], scale="none",
                             baseline="none").advantages
    # each token gets the sum of the rewards of the steps ending at or after it: 0.1 per later call
    assert adv[0, :turn].tolist() == pytest.approx([0.1] * turn) and not adv[0, turn:].any()
    second = records[1].steps[1]
    assert adv[1, :turn].tolist() == pytest.approx([0.2] * turn)
    assert adv[1, second.start:second.end].tolist() == pytest.approx([0.1] * (second.end - second.start))
    assert not adv[1, second.end:].any()
