"""Dynamic batching: the pure batch planner, and the batcher thread with a fake model."""

from __future__ import annotations

import threading
import time

import pytest

from reward_core.rm_inputs import EncodedPair
from reward_service.rm.dynamic_batcher import (
    BatcherClosed,
    BatcherConfig,
    DynamicBatcher,
    ForwardPassError,
    QueueFull,
    padded_tokens,
    plan_batches,
)


def pair(length: int, token: int = 7) -> EncodedPair:
    return EncodedPair([token] * length, [1] * length, None, False)


class FakeModel:
    """Scores a pair by its first token id; records every batch's lengths."""

    def __init__(self, fail_when_longer_than: int | None = None, delay_s: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.fail_when_longer_than = fail_when_longer_than
        self.delay_s = delay_s

    def forward(self, pairs):
        lengths = [len(p.input_ids) for p in pairs]
        self.batches.append(lengths)
        time.sleep(self.delay_s)
        if self.fail_when_longer_than is not None and max(lengths) > self.fail_when_longer_than:
            raise RuntimeError("CUDA out of memory (simulated)")
        return [float(p.input_ids[0]) for p in pairs]


class RecordingObserver:
    """Records what the batcher reports: (items, padded tokens) per forward pass, and dropped pairs."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int]] = []
        self.dropped = 0

    def batch_run(self, items: int, padded_tokens: int) -> None:
        self.batches.append((items, padded_tokens))

    def items_dropped(self, count: int) -> None:
        self.dropped += count


@pytest.fixture
def make_batcher():
    made: list[DynamicBatcher] = []

    def make(observer=None, **overrides) -> DynamicBatcher:
        settings = dict(max_batch_tokens=1000, max_wait_ms=50.0)
        settings.update(overrides)
        made.append(DynamicBatcher(BatcherConfig(**settings), observer=observer))
        return made[-1]

    yield make
    for b in made:
        b.close()


def test_padded_tokens_counts_every_row_at_the_longest_length():
    assert padded_tokens([3, 5, 2]) == 15
    assert padded_tokens([]) == 0


def test_plan_sorts_longest_first_and_packs_within_the_budget():
    assert plan_batches([2, 10, 3, 9], max_batch_tokens=20) == [[1, 3], [2, 0]]


def test_plan_puts_everything_in_one_batch_when_it_fits():
    assert plan_batches([4, 4, 4], max_batch_tokens=12) == [[0, 1, 2]]


def test_plan_runs_an_item_longer_than_the_budget_alone():
    assert plan_batches([50, 3, 3], max_batch_tokens=10) == [[0], [1, 2]]


def test_plan_keeps_input_order_among_equal_lengths():
    assert plan_batches([5, 5, 5, 5], max_batch_tokens=10) == [[0, 1], [2, 3]]


def test_plan_never_exceeds_the_budget_for_multi_item_batches():
    lengths = [(i * 37) % 61 + 1 for i in range(200)]
    batches = plan_batches(lengths, max_batch_tokens=256)
    assert sorted(i for b in batches for i in b) == list(range(200))
    assert all(padded_tokens([lengths[i] for i in b]) <= 256 for b in batches if len(b) > 1)


def test_sorting_pads_less_than_arrival_order():
    lengths = [2, 30, 3, 29, 2, 31, 4, 28]
    sorted_cost = sum(padded_tokens([lengths[i] for i in b]) for b in plan_batches(lengths, 64))
    arrival_cost = sum(padded_tokens(lengths[k:k + 2]) for k in range(0, len(lengths), 2))
    assert sorted_cost < arrival_cost


def test_plan_starts_a_new_batch_when_padding_would_exceed_its_share():
    # [10, 9] pads 1 of 20; adding 2 would pad 1 + 8 of 30 (30%) > 25%.
    assert plan_batches([10, 9, 2, 2], max_batch_tokens=100, max_padding=0.25) == [[0, 1], [2, 3]]
    assert plan_batches([10, 9, 2, 2], max_batch_tokens=100) == [[0, 1, 2, 3]]


def test_plan_with_zero_padding_groups_only_equal_lengths():
    assert plan_batches([3, 5, 3, 5, 4], max_batch_tokens=100, max_padding=0.0) == [[1, 3], [4], [0, 2]]


def test_plan_rejects_a_non_positive_budget():
    with pytest.raises(ValueError, match="max_batch_tokens"):
        plan_batches([1], 0)


def test_concurrent_requests_are_merged_into_one_forward_pass(make_batcher):
    batcher, model = make_batcher(max_wait_ms=200.0), FakeModel()
    pending = [batcher.submit(model, [pair(5, token=i)]) for i in range(8)]
    assert [p.result(5) for p in pending] == [[float(i)] for i in range(8)]
    assert model.batches == [[5] * 8]
    assert batcher.stats().batches == 1 and batcher.stats().items == 8 and batcher.stats().requests == 8


def test_a_full_token_budget_runs_without_waiting_for_the_deadline(make_batcher):
    batcher, model = make_batcher(max_batch_tokens=20, max_wait_ms=10_000.0), FakeModel()
    start = time.monotonic()
    assert batcher.submit(model, [pair(5)] * 4).result(5) == [7.0] * 4
    assert time.monotonic() - start < 5


def test_a_request_is_split_across_batches_and_scores_stay_in_order(make_batcher):
    batcher, model = make_batcher(max_batch_tokens=10, max_padding=1.0), FakeModel()
    pairs = [pair(n, token=n) for n in (2, 9, 3, 8, 1)]
    assert batcher.submit(model, pairs).result(5) == [2.0, 9.0, 3.0, 8.0, 1.0]
    assert model.batches == [[9], [8], [3, 2, 1]]
    stats = batcher.stats()
    assert (stats.batches, stats.padded_tokens, stats.real_tokens) == (3, 9 + 8 + 9, 23)


def test_per_request_mode_never_merges_requests(make_batcher):
    batcher, model = make_batcher(no_batching=True), FakeModel(delay_s=0.05)
    pending = [batcher.submit(model, [pair(3), pair(4)]) for _ in range(4)]
    for p in pending:
        p.result(5)
    assert model.batches == [[4, 3]] * 4


def test_requests_for_different_models_never_share_a_batch(make_batcher):
    batcher, old, new = make_batcher(max_wait_ms=100.0), FakeModel(), FakeModel()
    a, b = batcher.submit(old, [pair(3)]), batcher.submit(new, [pair(4)])
    assert (a.result(5), b.result(5)) == ([7.0], [7.0])
    assert old.batches == [[3]] and new.batches == [[4]]


def test_a_failing_forward_pass_fails_only_the_requests_in_that_batch(make_batcher):
    batcher, model = make_batcher(max_batch_tokens=40, max_wait_ms=100.0), FakeModel(fail_when_longer_than=20)
    bad = batcher.submit(model, [pair(30)])
    good = batcher.submit(model, [pair(5), pair(6)])
    with pytest.raises(ForwardPassError, match="out of memory"):
        bad.result(5)
    assert good.result(5) == [7.0, 7.0]
    assert batcher.stats().failed_batches == 1
    assert batcher.submit(model, [pair(3)]).result(5) == [7.0]  # the thread survived


def test_a_cancelled_request_is_not_run(make_batcher):
    batcher, model = make_batcher(max_wait_ms=300.0), FakeModel()
    dropped = batcher.submit(model, [pair(9)])
    dropped.cancel()
    assert batcher.submit(model, [pair(3)]).result(5) == [7.0]
    assert model.batches == [[3]]


def test_a_paused_batcher_queues_but_runs_nothing_until_resumed(make_batcher):
    batcher, model = make_batcher(max_wait_ms=0.0), FakeModel()
    batcher.pause()
    pending = batcher.submit(model, [pair(3), pair(4)])
    with pytest.raises(TimeoutError):
        pending.result(0.2)
    assert model.batches == [] and batcher.queued_items() == 2
    batcher.resume()
    assert pending.result(5) == [7.0, 7.0]
    assert batcher.queued_items() == 0


def test_a_request_cancelled_while_queued_is_dropped_at_once_and_never_run(make_batcher):
    observer = RecordingObserver()
    batcher, model = make_batcher(observer, max_wait_ms=0.0), FakeModel()
    batcher.pause()
    dropped = batcher.submit(model, [pair(9), pair(8), pair(7)])
    kept = batcher.submit(model, [pair(3)])
    dropped.cancel()
    assert batcher.queued_items() == 1  # the cancelled pairs no longer count as waiting
    deadline = time.monotonic() + 30
    while batcher.stats().dropped_items < 3 and time.monotonic() < deadline:  # dropped while still paused
        time.sleep(0.01)
    assert observer.dropped == 3 and batcher.stats().queued_items == 1
    batcher.resume()
    assert kept.result(5) == [7.0]
    assert model.batches == [[3]] and observer.batches == [(1, 3)]


def test_the_observer_hears_of_a_forward_pass_before_its_scores_are_returned(make_batcher):
    observer = RecordingObserver()
    batcher, model = make_batcher(observer, max_batch_tokens=10, max_padding=1.0), FakeModel()
    assert batcher.submit(model, [pair(4), pair(6), pair(2)]).result(5) == [7.0] * 3
    assert observer.batches == [(1, 6), (2, 8)] and observer.dropped == 0


def test_cancel_after_the_scores_are_in_changes_nothing(make_batcher):
    batcher, model = make_batcher(max_wait_ms=0.0), FakeModel()
    pending = batcher.submit(model, [pair(2)])
    assert pending.result(5) == [7.0]
    pending.cancel()
    assert pending.result(0) == [7.0] and batcher.stats().dropped_items == 0


def test_close_counts_the_pairs_it_fails_as_dropped(make_batcher):
    observer = RecordingObserver()
    batcher, model = make_batcher(observer), FakeModel()
    batcher.pause()
    pending = batcher.submit(model, [pair(2), pair(3)])
    batcher.close()
    with pytest.raises(BatcherClosed):
        pending.result(5)
    assert observer.dropped == 2 and model.batches == []


def test_queue_limit_is_enforced(make_batcher):
    batcher, model = make_batcher(max_queue_items=3, max_wait_ms=2000.0), FakeModel()
    batcher.submit(model, [pair(2)] * 2)
    with pytest.raises(QueueFull, match=r"holds 2 pairs and this request adds 2; the limit is 3 \(--max-queue-items\)"):
        batcher.submit(model, [pair(2)] * 2)


def test_close_fails_waiting_requests(make_batcher):
    batcher, model = make_batcher(max_wait_ms=30_000.0), FakeModel()
    pending = batcher.submit(model, [pair(2)])
    threading.Timer(0.05, batcher.close).start()
    with pytest.raises(BatcherClosed):
        pending.result(5)
    with pytest.raises(BatcherClosed):
        batcher.submit(model, [pair(2)])


@pytest.mark.parametrize("bad", [dict(max_batch_tokens=0), dict(max_wait_ms=-1.0), dict(max_queue_items=0),
                                 dict(max_padding=1.5)])
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        BatcherConfig(**bad)
