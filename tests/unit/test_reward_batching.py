"""Client-side chunking and merging: order kept, groups never split."""

import pytest

from reward_core.clients.batching import as_groups, as_rollouts, merge_batches, plan_chunks
from reward_core.contract import Rollout, RolloutResult, RolloutStatus, ScoreBatchResult


def rollouts(n, group_size=0):
    return [Rollout(str(i), "t", "x", group_id=f"g{i // group_size}" if group_size else "") for i in range(n)]


def test_chunks_respect_the_rollout_limit_and_keep_order():
    chunks = plan_chunks(rollouts(10), max_rollouts=3, max_bytes=10**9)
    assert [len(c) for c in chunks] == [3, 3, 3, 1]
    assert [r.id for c in chunks for r in c] == [str(i) for i in range(10)]


def test_a_group_is_never_split_across_chunks():
    chunks = plan_chunks(rollouts(12, group_size=4), max_rollouts=6, max_bytes=10**9)
    assert [len(c) for c in chunks] == [4, 4, 4]


def test_a_group_larger_than_the_limit_travels_alone():
    chunks = plan_chunks(rollouts(10, group_size=5), max_rollouts=3, max_bytes=10**9)
    assert [len(c) for c in chunks] == [5, 5]


def test_chunks_respect_the_byte_budget():
    big = [Rollout(str(i), "t", "x" * 1000) for i in range(4)]
    assert [len(c) for c in plan_chunks(big, max_rollouts=100, max_bytes=2500)] == [2, 2]


def test_duplicate_ids_are_rejected_before_sending():
    with pytest.raises(ValueError, match="duplicate"):
        as_rollouts([{"id": "a", "task": "t", "completion": ""}, {"id": "a", "task": "t", "completion": ""}])


def test_groups_get_generated_ids_unless_they_have_one():
    flat = as_groups([[{"id": "a", "task": "t", "completion": ""}],
                      [{"id": "b", "task": "t", "completion": "", "group_id": "mine"}]])
    assert [r.group_id for r in flat] == ["g0", "mine"]


def test_merged_batches_recompute_group_stats_across_chunks():
    a = ScoreBatchResult("x/0", [RolloutResult("1", RolloutStatus.OK, 1.0, group_id="g")], [])
    b = ScoreBatchResult("x/1", [RolloutResult("2", RolloutStatus.OK, 0.0, group_id="g")], [])
    merged = merge_batches("x", [a, b])
    assert [r.id for r in merged.results] == ["1", "2"]
    assert merged.groups[0].mean == 0.5 and merged.groups[0].size == 2
