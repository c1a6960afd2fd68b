"""The router's group stage: groupwise rollouts of one request shaped per (task, group_id), scored
members only, a failing stage answered ERROR for its group."""

from __future__ import annotations

import math

from reward_core.contract import Rollout, RolloutStatus
from reward_service.router.group_stage import shape_groups
from reward_service.router.worker_job import ItemOutcome
from reward_service.task_api import Task, TaskOutcome


class Rank(Task):
    """Groupwise: each scored member's score becomes its rank by completion length in its group."""

    name = "rank"
    groupwise = True

    def score(self, completion, reference, prompt=""):
        return TaskOutcome(math.nan)

    def score_group(self, items, outcomes):
        order = sorted(range(len(items)), key=lambda i: len(items[i].completion))
        return [TaskOutcome(float(order.index(i))) for i in range(len(items))]


class Broken(Rank):
    name = "broken"

    def score_group(self, items, outcomes):
        raise ZeroDivisionError("oops")


class Short(Rank):
    name = "short"

    def score_group(self, items, outcomes):
        return []


class Plain(Task):
    name = "plain"

    def score(self, completion, reference, prompt=""):
        return TaskOutcome(1.0)


TASKS = {t.name: t for t in (Rank(), Broken(), Short(), Plain())}


def _shape(rows):
    """rows: (task, group_id, completion, status) -> shaped scores by index (None: not shaped)."""
    rollouts = [Rollout(str(i), task, completion, group_id=gid) for i, (task, gid, completion, _) in enumerate(rows)]
    outcomes = {i: ItemOutcome(TaskOutcome(math.nan, status), 1.0) for i, (*_, status) in enumerate(rows)}
    shaped = shape_groups(rollouts, outcomes, TASKS.__getitem__)
    return [shaped[i].outcome if i in shaped else None for i in range(len(rows))]


OK = RolloutStatus.OK


def test_each_group_is_shaped_on_its_own():
    out = _shape([("rank", "g1", "ccc", OK), ("rank", "g2", "a", OK), ("rank", "g1", "a", OK),
                  ("rank", "g2", "bb", OK)])
    assert [o.score for o in out] == [1.0, 0.0, 0.0, 1.0]


def test_the_same_group_id_under_two_tasks_is_two_groups():
    out = _shape([("rank", "g", "ccc", OK), ("broken", "g", "a", OK)])
    assert out[0].score == 0.0 and out[1].status == RolloutStatus.ERROR


def test_unscored_members_are_left_out_and_stay_unscored():
    out = _shape([("rank", "g", "ccc", OK), ("rank", "g", "a", RolloutStatus.TIMEOUT), ("rank", "g", "bb", OK)])
    assert out[1] is None and [out[0].score, out[2].score] == [1.0, 0.0]


def test_a_no_answer_member_takes_part():
    out = _shape([("rank", "g", "ccc", RolloutStatus.NO_ANSWER), ("rank", "g", "a", OK)])
    assert [o.score for o in out] == [1.0, 0.0]


def test_a_failing_group_stage_answers_its_members_error():
    [out] = _shape([("broken", "g", "a", OK)])
    assert out.status == RolloutStatus.ERROR and "ZeroDivisionError: oops" in out.detail


def test_a_group_stage_that_drops_members_answers_them_error():
    [out] = _shape([("short", "g", "a", OK)])
    assert out.status == RolloutStatus.ERROR and "0 outcomes for 1 members" in out.detail


def test_tasks_that_are_not_groupwise_and_rollouts_without_a_group_are_untouched():
    assert _shape([("plain", "g", "a", OK), ("rank", "", "a", OK)]) == [None, None]
