"""Episode rows from the run's data (``episodes.rows_from: data``), their specs, the settings that go with
them and ``run.eval_every``, and the held-out summary of episodes."""

from __future__ import annotations

import json

import pytest

from reward_core.episode_contract import EpisodeOutcome, EpisodeSpec, EpisodeStatus
from trainer_client.errors import PromptDataError
from trainer_client.train.config import DataConfig
from trainer_client.train.episode_step import data_rows, episode_row, episode_rows, eval_summary, specs_for
from trainer_client.train.episode_tokens import EpisodeTokens
from trainer_client.train.episodes import EpisodeRecord
from trainer_client.train.episodes_config import EpisodesConfig
from trainer_client.train.grpo_config import load_config

ENV = EpisodesConfig(environment="arithmetic_tools", rows_from="data", seed=3)
GSM8K = DataConfig(train="x", prompt_key="question", reference_key="answer")


def write(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_data_rows_are_read_with_the_data_keys_and_sent_as_prompt_and_reference(tmp_path):
    path = write(tmp_path / "t.jsonl", [{"question": "What is 2 * 3?", "answer": "6", "task": "gsm8k"},
                                        {"messages": [{"role": "user", "content": "What is 4 * 4?"}],
                                         "answer": {"answer": "16"}}])
    first, second = data_rows(ENV, GSM8K, path)
    assert first.task == second.task == "arithmetic_tools"  # the environment's task verifies, not the row's
    assert episode_row(first) == {"prompt": "What is 2 * 3?", "reference": {"answer": "6"}}
    assert episode_row(second) == {"prompt": [{"role": "user", "content": "What is 4 * 4?"}],
                                   "reference": {"answer": "16"}}
    assert specs_for([first], ENV, 2) == [EpisodeSpec("arithmetic_tools", row=episode_row(first), seed=3)] * 2


def test_split_rows_are_opened_by_index():
    (row,) = episode_rows(EpisodesConfig(environment="arithmetic_tools", split="test", rows=1))
    assert episode_row(row) is None
    assert specs_for([row], ENV, 1, split="test") == [EpisodeSpec("arithmetic_tools", split="test", index=0, seed=3)]


@pytest.mark.parametrize(("row", "message"), [
    ({"question": "What is 2 * 2?", "solution": "4"}, r"t\.jsonl:2: no 'answer' column \(data.reference_key\)"),
    ({"prompt": "What is 2 * 2?", "answer": "4"}, r"t\.jsonl:2: no 'question' column \(data.prompt_key\)"),
    ({"question": "  ", "answer": "4"}, r"t\.jsonl:2: the prompt \('question'\) is empty"),
])
def test_a_bad_data_row_is_named_by_file_and_line(tmp_path, row, message):
    path = write(tmp_path / "t.jsonl", [{"question": "What is 1 * 1?", "answer": "1"}, row])
    with pytest.raises(PromptDataError, match=message):
        data_rows(ENV, GSM8K, path)


def test_rows_from_data_needs_data_train_and_a_known_source():
    base = ["model.path=m", "episodes.environment=arithmetic_tools"]
    with pytest.raises(ValueError, match="data.train is required"):
        load_config(None, [*base, "episodes.rows_from=data"])
    with pytest.raises(ValueError, match="episodes.rows_from must be one of"):
        load_config(None, [*base, "episodes.rows_from=file"])
    assert load_config(None, [*base, "episodes.rows_from=data", "data.train=t.jsonl"]).episodes.rows_from == "data"


def test_eval_every_on_episodes_needs_no_eval_data_but_one_episode_per_row():
    base = ["model.path=m", "episodes.environment=arithmetic_tools", "run.eval_every=5"]
    assert load_config(None, base).run.eval_every == 5
    with pytest.raises(ValueError, match="one episode per held-out row"):
        load_config(None, [*base, "run.eval_n=2", "run.eval_temperature=1.0"])


def record(reward: float | None, status: EpisodeStatus, tools: list[str], malformed: int = 0) -> EpisodeRecord:
    return EpisodeRecord(EpisodeSpec("e"), EpisodeTokens([1]), EpisodeOutcome("s", status, reward),
                         turns=len(tools) + 1, tool_calls=len(tools), tools_called=tools, malformed_calls=malformed)


def test_eval_summary_counts_success_over_every_episode_and_unscored_apart():
    records = [record(1.0, EpisodeStatus.FINISHED, ["calculator", "submit_answer"]),
               record(0.0, EpisodeStatus.FINISHED, ["submit_answer"], malformed=1),
               record(None, EpisodeStatus.TOOL_FAILED, ["calculator"]),
               record(1.0, EpisodeStatus.FINISHED, [])]
    s = eval_summary(records)
    assert (s["episodes"], s["samples"], s["scored"], s["unscored"], s["unscored_rate"]) == (4, 4, 3, 1, 0.25)
    assert s["success"] == 0.5 and s["accuracy"] == pytest.approx(2 / 3) and s["reward_mean"] == pytest.approx(2 / 3)
    assert s["tool_calls_mean"] == 1.0 and s["tool_use_frac"] == 0.5 and s["turns_mean"] == 2.0
    assert s["malformed_calls"] == 1
    assert eval_summary([])["success"] == 0.0 and eval_summary([])["reward_mean"] is None
