"""Where a task's work runs: a group stage that waits on a judge runs off the event loop
(``Task.group_stage_waits``); a composite runs in the server only when every component does."""

from __future__ import annotations

from reward_service.router.composite import CompositeTask
from reward_service.tasks.gsm8k_task import Gsm8kTask
from reward_service.tasks.judge_group import JudgeGroupTask
from reward_service.tasks.judge_pointwise import JudgeReferenceTask, JudgeRubricTask
from reward_service.tasks.shaped_tasks import KimiLengthTask


def composite(*tasks) -> CompositeTask:
    return CompositeTask("c", {t.name: (t, 1.0) for t in tasks})


def test_judge_groups_stage_waits_and_kimi_lengths_does_not():
    assert JudgeGroupTask().group_stage_waits
    assert not KimiLengthTask(Gsm8kTask()).group_stage_waits
    assert not Gsm8kTask().group_stage_waits


def test_a_composite_of_judges_runs_in_the_server():
    assert composite(JudgeReferenceTask(), JudgeRubricTask()).runs_in_server


def test_a_composite_with_a_worker_component_stays_in_the_workers():
    mixed = composite(Gsm8kTask(), JudgeReferenceTask())
    assert not mixed.runs_in_server and not mixed.group_stage_waits


def test_a_composite_with_a_judge_group_ranks_off_the_loop_wherever_it_runs():
    assert composite(Gsm8kTask(), JudgeGroupTask()).group_stage_waits
    assert composite(JudgeReferenceTask(), JudgeGroupTask()).group_stage_waits
