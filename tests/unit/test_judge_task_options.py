"""Judge task options are checked when the task is built, and the self-check catches a template whose
parser cannot read its own verdicts (no judge needed)."""

from __future__ import annotations

import pytest

from reward_core.contract import RolloutStatus
from reward_service.task_api import InvalidTaskOptions, TaskInput
from reward_service.tasks.judge_group import JudgeGroupTask
from reward_service.tasks.judge_pairwise import JudgePairwiseTask
from reward_service.tasks.judge_pointwise import JudgeReferenceTask, JudgeRubricTask

JUDGE = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "name": "j"}


@pytest.mark.parametrize("options, message", [
    ({"judge": "grader"}, "no judge named 'grader'"),
    ({"judge": {"model": "m"}}, "base_url"),
    ({"judge": JUDGE, "endpoint": JUDGE}, "not both"),
    ({"template": {"user": "Is $answer right?"}}, "unknown placeholders"),
    ({"timeout_s": 0}, "timeout_s"),
    ({"constrained": "yes"}, "constrained"),
])
def test_bad_options_are_refused_saying_which(options, message):
    with pytest.raises(InvalidTaskOptions, match=message):
        JudgeReferenceTask(**options)


def test_group_and_pairwise_options():
    with pytest.raises(InvalidTaskOptions, match="schedule"):
        JudgeGroupTask(schedule="swiss")
    with pytest.raises(InvalidTaskOptions, match="both_orders"):
        JudgePairwiseTask(both_orders=1)


def test_self_check_reports_verdicts_the_parser_cannot_read():
    task = JudgeRubricTask(template={"parser": {"kind": "score", "choice_format": "{n} points"}})
    problems = task.self_check()
    assert len(problems) == 11 and "'0 points' does not parse" in problems[0]
    assert JudgeRubricTask().self_check() == []


def test_without_a_judge_a_rollout_is_judge_failed_and_a_blank_one_no_answer():
    task = JudgeReferenceTask()
    failed, blank = task.score_batch([TaskInput("42", {"answer": "42"}, "q"), TaskInput(" ", {"answer": "42"}, "q")])
    assert failed.status == RolloutStatus.JUDGE_FAILED and "has no judge" in failed.detail
    assert blank.status == RolloutStatus.NO_ANSWER and blank.score == 0.0


def test_the_template_version_is_the_calls_template_version_and_a_version_input():
    task = JudgeReferenceTask(judge=JUDGE)
    call = task.judge_call({"prompt": "q", "gold": "4", "completion": "4"})
    assert call.template_version == task.template.version and call.choices == ("yes", "no")
    assert task.version_inputs() == (task.template.source,)
    assert JudgeReferenceTask(judge=JUDGE, constrained=False).judge_call(
        {"prompt": "q", "gold": "4", "completion": "4"}).choices == ()
