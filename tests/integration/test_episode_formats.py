"""The episode loop in every tool-call format, several calls in one turn, and rows sent by the caller, against
a real ``reward-service serve --serve-environments`` on loopback (``arithmetic_tools``) through the
environment client; the policy is scripted so what it writes is known exactly."""

from __future__ import annotations

import re

import pytest

from examples.tiny import build_tokenizer
from reward_core.clients.environment import BlockingEnvironmentClient
from reward_core.episode_contract import EpisodeSpec, EpisodeStatus
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.hosting import create_server
from reward_service.router.config import ScorerConfig, ServerConfig
from trainer_client.errors import PromptDataError
from trainer_client.train.config import DataConfig
from trainer_client.train.episode_step import check_row, data_rows, raise_refused_rows, specs_for
from trainer_client.train.episodes import TurnSample, run_episodes
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.prompts import PromptRow
from trainer_client.train.tool_calls import TOOL_CALL_FORMATS, format_tool_calls

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def host():
    small = EnvironmentsConfig(calculator_workers=1, verify_workers=1, sandbox_concurrency=1, max_sessions=4)
    server = create_server(ServerConfig(port=0, serve_environments=True, scorer=ScorerConfig(workers=1),
                                        environments=small))
    try:
        with BlockingEnvironmentClient(server.address, timeout_s=60) as client:
            yield client
    finally:
        server.stop(1.0)


class TwoCallsThenSubmit:
    """Turn 1: two calculator calls in one turn (the product, then the product plus one); turn 2: submit the
    first answer. Writes in ``fmt``; records every turn's text."""

    def __init__(self, tokenizer, fmt: str) -> None:
        self.tokenizer, self.fmt = tokenizer, fmt
        self.turns: list[str] = []

    def write(self, calls) -> TurnSample:
        text = format_tool_calls(calls, self.fmt)
        self.turns.append(text)
        return TurnSample(self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id],
                          text)

    def __call__(self, contexts):
        out = []
        for context in contexts:
            text = self.tokenizer.decode(context, skip_special_tokens=False)
            answers = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", text, re.DOTALL)
            if answers:
                out.append(self.write([("submit_answer", {"answer": answers[0].strip()})]))
                continue
            a, b = re.search(r"What is (\d+) \* (\d+)\?", text).groups()
            out.append(self.write([("calculator", {"expression": f"{a} * {b}"}),
                                   ("calculator", {"expression": f"{a} * {b} + 1"})]))
        return out


@pytest.mark.parametrize("fmt", TOOL_CALL_FORMATS)
def test_every_call_of_a_turn_is_answered_in_order_in_each_format(host, fmt):
    tokenizer = build_tokenizer()
    config = EpisodesConfig(environment="arithmetic_tools", max_turns=3, tool_role="user", tool_prompt="names",
                            tool_call_format=fmt)
    policy = TwoCallsThenSubmit(tokenizer, fmt)
    row = PromptRow("mine", "What is 12 * 34?", {"answer": "408"}, "arithmetic_tools", line=1)
    (record,) = run_episodes(policy, tokenizer, host, specs_for([row], config, 1), config, templated=True)
    assert record.status is EpisodeStatus.FINISHED and record.reward == 1.0
    assert (record.turns, record.tool_calls, record.malformed_calls) == (2, 3, 0)
    assert record.tools_called == ["calculator", "calculator", "submit_answer"]
    (tool_turn,) = [tokenizer.decode(ids, skip_special_tokens=False) for ids, mine in record.tokens.pieces
                    if not mine]  # one tool turn with both outputs
    assert re.findall(r"<tool_response>\n(\d+)\n</tool_response>", tool_turn) == ["408", "409"]
    assert host.session_ids == []


def test_a_row_the_environment_refuses_is_named_not_trained_as_unscored(host, tmp_path):
    tokenizer = build_tokenizer()
    config = EpisodesConfig(environment="arithmetic_tools", max_turns=1, tool_role="user")
    rows = [PromptRow("ok", "What is 2 * 3?", {"answer": "6"}, "arithmetic_tools", line=1),
            PromptRow("bad", "What is 2 * 4?", {"answer": "8"}, "arithmetic_tools", line=2)]
    specs = specs_for(rows, config, 2)
    specs[2:] = [EpisodeSpec("arithmetic_tools", row={"reference": {"answer": "8"}})] * 2  # no prompt: refused
    records = run_episodes(TwoCallsThenSubmit(tokenizer, "hermes"), tokenizer, host, specs, config, templated=True)
    assert [bool(r.spec_error) for r in records] == [False, False, True, True]
    with pytest.raises(PromptDataError, match=r"rows\.jsonl:2: environment 'arithmetic_tools' refuses this row"):
        raise_refused_rows(records, rows, 2, "rows.jsonl")
    assert host.session_ids == []


def test_check_row_opens_and_closes_one_episode_of_a_data_row(host, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "What is 3 * 3?"}], "answer": "9"}\n')
    config = EpisodesConfig(environment="arithmetic_tools", rows_from="data")
    (row,) = data_rows(config, DataConfig(train=str(path), reference_key="answer"), str(path))
    check_row(config, host, row, str(path))
    assert host.session_ids == []
    with pytest.raises(PromptDataError, match="rows.jsonl:1: environment 'nope' refuses this row"):
        check_row(EpisodesConfig(environment="nope"), host, row, str(path))
