"""OpenRLHF's groups at the front door: rows of one call with the same prompt and label, and no group
sent upstream for a row alone in its group."""

from __future__ import annotations

from reward_core.contract import Rollout
from reward_service.http_door.groups import prompt_groups, without_lone_groups


def _row(i: int, prompt: str, answer: str) -> Rollout:
    return Rollout(str(i), "gsm8k", f"#### {answer}", {"answer": answer}, prompt)


def test_rows_with_the_same_prompt_and_label_share_a_group():
    rows = prompt_groups([_row(0, "p", "4"), _row(1, "q", "4"), _row(2, "p", "4"), _row(3, "p", "5")])
    assert [r.group_id for r in rows] == ["g0", "g1", "g0", "g3"]


def test_a_row_alone_in_its_group_goes_without_one():
    rows = without_lone_groups(prompt_groups([_row(0, "p", "4"), _row(1, "q", "4"), _row(2, "p", "4")]))
    assert [r.group_id for r in rows] == ["g0", "", "g0"]
    assert [(r.id, r.prompt, r.reference) for r in rows] == [("0", "p", {"answer": "4"}), ("1", "q", {"answer": "4"}),
                                                             ("2", "p", {"answer": "4"})]


def test_a_one_sample_call_sends_no_group():
    [row] = without_lone_groups(prompt_groups([_row(0, "p", "4")]))
    assert row.group_id == ""
