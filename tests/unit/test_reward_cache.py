"""The reward cache: content-addressed, bounded, scored outcomes only, shareable through SQLite."""

import sqlite3

import pytest

from reward_core.contract import Rollout, RolloutStatus, StepScore
from reward_service.router.reward_cache import (
    RewardCache,
    cache_key,
    decode_outcome,
    encode_outcome,
    key_function,
    row_key_function,
)
from reward_service.task_api import TaskOutcome

ROLLOUT = Rollout(id="a", task="gsm8k", completion="#### 72", reference={"answer": "72"}, prompt="p",
                  metadata={"k": "v"})
RIGHT = TaskOutcome(1.0, components={"gsm8k": 1.0}, extracted="72", detail="d", explanation="why")


def key(i: int, version: str = "v1") -> bytes:
    return cache_key(Rollout(id=str(i), task="gsm8k", completion=f"#### {i}", reference={"answer": "1"}), version)


def test_an_outcome_survives_encoding_with_its_steps():
    outcome = TaskOutcome(0.5, RolloutStatus.NO_ANSWER, {"a": 0.5}, "x", "detail",
                          (StepScore(0, 3, 1.0, True, "ok"), StepScore(3, 9, 0.0, False)), "because")
    assert decode_outcome(encode_outcome(outcome)) == outcome


def test_a_stored_outcome_is_found_by_the_same_rollout_with_another_id():
    cache = RewardCache()
    cache.put(cache_key(ROLLOUT, "v1"), RIGHT)
    same_content = Rollout(id="other", task="gsm8k", completion="#### 72", reference={"answer": "72"}, prompt="p",
                           metadata={"k": "v"}, group_id="g")
    assert cache.get(cache_key(same_content, "v1")) == RIGHT
    assert cache.stats().hits == 1


def test_another_verifier_version_misses():
    cache = RewardCache()
    cache.put(cache_key(ROLLOUT, "v1"), RIGHT)
    assert cache.get(cache_key(ROLLOUT, "v2")) is None
    assert cache.stats().misses == 1


@pytest.mark.parametrize("change", [{"completion": "#### 73"}, {"reference": {"answer": "73"}}, {"prompt": "q"},
                                    {"metadata": {"k": "w"}}, {"task": "math"}])
def test_any_input_the_task_reads_is_part_of_the_key(change):
    changed = Rollout(**{**ROLLOUT.__dict__, **change})
    assert cache_key(changed, "v1") != cache_key(ROLLOUT, "v1")


def test_a_task_that_ignores_the_prompt_and_metadata_shares_entries_across_them():
    other = Rollout(**{**ROLLOUT.__dict__, "prompt": "another", "metadata": {}})
    ignores = frozenset({"prompt", "metadata"})
    assert cache_key(other, "v1", ignores) == cache_key(ROLLOUT, "v1", ignores)


@pytest.mark.parametrize("status", [RolloutStatus.TIMEOUT, RolloutStatus.ERROR, RolloutStatus.UNAVAILABLE,
                                    RolloutStatus.INVALID_REFERENCE])
def test_unscored_outcomes_are_never_cached(status):
    cache = RewardCache()
    assert not cache.put(key(1), TaskOutcome(0.0, status, detail="failed"))
    assert cache.get(key(1)) is None
    assert cache.stats().entries == 0


def test_a_non_finite_score_is_never_cached():
    cache = RewardCache()
    assert not cache.put(key(1), TaskOutcome(float("nan")))
    assert cache.stats().entries == 0


def test_the_least_recently_used_entry_goes_past_the_entry_bound():
    cache = RewardCache(max_entries=2)
    cache.put(key(1), RIGHT)
    cache.put(key(2), RIGHT)
    assert cache.get(key(1)) == RIGHT  # 1 is now more recent than 2
    cache.put(key(3), RIGHT)
    assert cache.get(key(2)) is None
    assert cache.get(key(1)) == RIGHT and cache.get(key(3)) == RIGHT
    assert cache.stats().entries == 2 and cache.stats().evictions == 1


def test_the_byte_bound_holds():
    one = len(encode_outcome(RIGHT)) + 200
    cache = RewardCache(max_entries=1000, max_bytes=3 * one)
    for i in range(10):
        cache.put(key(i), RIGHT)
    stats = cache.stats()
    assert stats.entries == 3 and stats.bytes <= 3 * one
    assert cache.get(key(9)) == RIGHT and cache.get(key(0)) is None


def test_two_caches_share_one_sqlite_file(tmp_path):
    path = tmp_path / "cache.sqlite"
    first, second = RewardCache(path=path), RewardCache(path=path)
    try:
        first.put(cache_key(ROLLOUT, "v1"), RIGHT)
        first.flush()
        assert second.get(cache_key(ROLLOUT, "v1")) == RIGHT
        assert second.get(cache_key(ROLLOUT, "v2")) is None
        assert second.stats().hits == 1 and second.stats().misses == 1
    finally:
        first.close()
        second.close()


def test_the_sqlite_file_outlives_the_cache_and_keeps_its_row_bound(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = RewardCache(path=path, max_disk_entries=5)
    for i in range(12):
        cache.put(key(i), RIGHT)
    cache.close()
    reopened = RewardCache(path=path, max_disk_entries=5)
    try:
        found = [i for i in range(12) if reopened.get(key(i)) is not None]
        assert found == list(range(7, 12))
    finally:
        reopened.close()


def test_get_many_answers_each_key_in_order_from_memory_and_the_file(tmp_path):
    path = tmp_path / "cache.sqlite"
    writer = RewardCache(path=path)
    writer.put(key(1), RIGHT)
    writer.put(key(3), TaskOutcome(0.0, RolloutStatus.NO_ANSWER, detail="nothing"))
    writer.close()
    reader = RewardCache(path=path)
    try:
        reader.put(key(2), RIGHT)  # in memory only
        keys = [key(i) for i in range(5)]
        assert reader.get_many(keys) == [None, RIGHT, RIGHT, TaskOutcome(0.0, RolloutStatus.NO_ANSWER,
                                                                         detail="nothing"), None]
        assert (reader.stats().hits, reader.stats().misses) == (3, 2)
        assert reader.get(key(1)) == RIGHT and reader.stats().entries == 3  # the file's answers now in memory
    finally:
        reader.close()


def test_an_empty_cache_says_so_until_an_outcome_is_stored(tmp_path):
    memory, on_disk = RewardCache(), RewardCache(path=tmp_path / "cache.sqlite")
    try:
        assert memory.empty and on_disk.empty
        memory.put(key(1), RIGHT)
        on_disk.put(key(1), RIGHT)
        on_disk.flush()
        assert not memory.empty and not on_disk.empty
    finally:
        on_disk.close()


def test_a_stored_integer_past_64_bits_reads_back_exact():
    outcome = TaskOutcome(2**70, components={"a": 2**70})
    assert decode_outcome(encode_outcome(outcome)) == outcome
    assert type(decode_outcome(encode_outcome(outcome)).score) is int


KEYED = [  # (rollout, fields its task ignores, its key as the code before key_function wrote it): a file filled then
    # must still answer (the keys must not drift without a new KEY_FORMAT)
    (Rollout("e", "gsm8k", "#### 72", {"answer": "72"}, group_id="g0"), frozenset(),
     "68c2a1c0f4a71d7c03436f4a60ab365fb2de4ae5687c123b2a07aef30c009473"),
    (Rollout("a", "math", "x é \ud800", {"answer": "1", "b": [1, None, float("nan")]}, "p", {"k": "v"}, "g"),
     frozenset(), "6b96a27282c3aa1b50faa1abc8a85b2993020e3a170e49d0d2e7ba238eb5c89b"),
    (Rollout("a", "math", "x é \ud800", {"answer": "1", "b": [1, None, float("nan")]}, "p", {"k": "v"}, "g"),
     frozenset({"prompt"}), "f2a2bc4ca15055498616ea38c68ca88498d96819f73fefa9715dc62bccbf77d6"),
    (Rollout("c", "m", "y", {"answer": 10**20}, "", {"z": "1", "a": "2"}), frozenset({"prompt", "metadata"}),
     "5cfc053946030edf6cd9b179bb0bddd7ccfe46678400e2554cc8b408b1a52786"),
    (Rollout("d", "math", "😀", {"answer": "null"}), frozenset(),
     "f5e1f8eced4fb2b983f5c1facecfd96868586e1cfb2623bf411da1130329ba79"),
]


@pytest.mark.parametrize(("rollout", "ignores", "digest"), KEYED)
def test_keys_are_the_ones_stored_files_hold(rollout, ignores, digest):
    assert cache_key(rollout, "v1", ignores).hex() == digest
    assert cache_key(rollout, "v1", ignores, rollout.dedup_key()).hex() == digest
    assert key_function(rollout.task, "v1", ignores)(rollout).hex() == digest
    if not rollout.prompt and not rollout.metadata:  # (rescore keys such rows from their fields alone)
        assert row_key_function(rollout.task, "v1")(rollout.completion, rollout.reference).hex() == digest


def test_a_file_of_an_earlier_build_is_read_and_gets_answers_beside_new_outcomes(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:  # the table as builds before stored answers made it
        conn.execute("CREATE TABLE rewards (key BLOB PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO rewards VALUES (?, ?)", (b"k" * 32, encode_outcome(TaskOutcome(1.0))))
    conn.close()
    cache = RewardCache(path=path)
    assert cache.get(b"k" * 32) == TaskOutcome(1.0)
    cache.put(b"n" * 32, TaskOutcome(0.0, extracted="5"), b"answer/x\t{}")
    cache.close()
    with sqlite3.connect(path) as conn:
        rows = dict(conn.execute("SELECT key, answer FROM rewards"))
    conn.close()
    assert rows == {b"k" * 32: None, b"n" * 32: b"answer/x\t{}"}
    RewardCache(path=path).close()  # (opened again: the column is there already)
