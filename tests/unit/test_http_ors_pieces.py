"""The ORS door's pure pieces: SSE framing and chunking, message conversion, task specs, the session sweep."""

from __future__ import annotations

import asyncio

import pytest

from reward_core.episode_contract import EnvironmentInfo, EpisodeStatus, TrajectoryScore
from reward_service.http_door import ors_shapes as ors
from reward_service.http_door.ors_messages import BadMessages, chat_to_ors, flatten, ors_to_chat
from reward_service.http_door.ors_sessions import OrsError, OrsSessions
from reward_service.http_door.resumable import ResumableTasks
from reward_service.http_door.sse import chunk_data, frame
from tests.scripted_episode_host import ScriptedHost

INFO = EnvironmentInfo("arith", splits={"train": 5, "test": 2})


def test_a_frame_carries_each_line_of_its_data_on_its_own_data_line():
    assert frame("end", "a\nb") == b"event: end\r\ndata: a\r\ndata: b\r\n\r\n"
    assert frame("end", "") == b"event: end\r\ndata: \r\n\r\n"


@pytest.mark.parametrize("text", ["", "x", "a" * 10, "ab " * 40, "a" + " " * 30 + "b" * 9, '{"t": "x y z"}' * 7])
def test_chunks_join_to_the_text_and_never_start_with_whitespace(text):
    pieces = chunk_data(text, 8)
    assert "".join(pieces) == text
    assert all(not p[:1].isspace() for p in pieces[1:])
    if " " * 8 not in text:  # a piece is longer only to carry a whitespace run longer than a piece
        assert all(len(p) <= 8 for p in pieces)


def test_a_cut_before_a_space_moves_back():
    assert chunk_data("abcd efgh", 4) == ["abc", "d ef", "gh"]


def test_chat_messages_become_ors_turns_with_tool_results_in_user_turns():
    chat = [{"role": "system", "content": "s"},
            {"role": "assistant", "content": "", "reasoning_content": "hmm",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1"}]
    turns = chat_to_ors(chat)
    assert [t["role"] for t in turns] == ["system", "assistant", "user"]
    assert [b["type"] for b in turns[1]["blocks"]] == ["reasoning", "tool_call"]
    assert turns[1]["blocks"][1]["input"] == {"a": 1}
    assert turns[2]["blocks"][0]["type"] == "tool_result" and turns[2]["blocks"][0]["tool_call_id"] == "c1"
    assert ors_to_chat(turns) == [{"role": "system", "content": "s"},
                                  {"role": "assistant", "content": "", "reasoning_content": "hmm",
                                   "tool_calls": [{"id": "c1", "type": "function",
                                                   "function": {"name": "add", "arguments": '{"a": 1}'}}]},
                                  {"role": "tool", "tool_call_id": "c1", "content": "1"}]


def test_one_plain_user_turn_is_the_prompt_verbatim():
    assert flatten(chat_to_ors([{"role": "user", "content": "q"}])) == [{"text": "q", "detail": None, "type": "text"}]


def test_a_tool_call_in_a_user_turn_is_refused():
    with pytest.raises(BadMessages):
        ors_to_chat([{"role": "user", "blocks": [{"type": "tool_call", "id": "x", "name": "n", "input": {}}]}])


def test_a_task_spec_names_a_row_and_anything_else_is_a_row():
    assert ors.episode_spec(INFO, {"split": "train", "index": -1}).index == 4
    assert ors.episode_spec(INFO, {"prompt": "p", "reference": {"answer": "1"}}).row == {
        "prompt": "p", "reference": {"answer": "1"}}
    with pytest.raises(OrsError) as outside:
        ors.episode_spec(INFO, {"split": "test", "index": 2})
    assert outside.value.status == 400 and outside.value.detail == "Invalid index"


def test_an_unscored_candidate_is_never_a_reward():
    scores = [TrajectoryScore("0", EpisodeStatus.FINISHED, 0.0), TrajectoryScore("1", EpisodeStatus.TOOL_FAILED,
                                                                                  error="sandbox gone")]
    with pytest.raises(ors.CallFailed, match="candidate 1: TOOL_FAILED: sandbox gone"):
        ors.group_scores(scores)
    assert ors.group_scores(scores[:1])["scores"][0]["reward"] == 0.0


def test_sessions_not_seen_for_the_ttl_are_closed():
    async def scenario():
        host = ScriptedHost()
        sessions = OrsSessions(host, ttl_s=100)
        old = await sessions.open("old", ors.episode_spec(INFO, {"split": "train", "index": 0}))
        fresh = await sessions.open("fresh", ors.episode_spec(INFO, {"split": "train", "index": 1}))
        fresh.last_seen = old.last_seen + 60
        swept = await sessions.sweep(now=old.last_seen + 101)
        return swept, host.closed, len(sessions)

    assert asyncio.run(scenario()) == (["old"], ["ep-0"], 1)


def test_a_run_is_readable_only_by_its_owner_and_forgotten_after_the_linger():
    async def scenario():
        tasks = ResumableTasks(linger_s=0)

        async def work():
            return "done"

        task_id = tasks.start("s1", work())
        assert tasks.get("s2", task_id) is None
        assert await tasks.get("s1", task_id) == "done"
        for _ in range(3):
            await asyncio.sleep(0)
        return len(tasks)

    assert asyncio.run(scenario()) == 0
