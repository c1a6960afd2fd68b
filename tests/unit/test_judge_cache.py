"""The verdict cache: what its key covers, LRU in memory, and a SQLite file shared by processes."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from reward_service.judges import JudgeCall, JudgeEndpoint, JudgeReply, VerdictCache, verdict_key

ENDPOINT = JudgeEndpoint(base_url="http://127.0.0.1:9/v1", model="judge-a")
CALL = JudgeCall(messages=({"role": "user", "content": "Is 2+2=4? yes or no"},), choices=("yes", "no"),
                 template_version="t1")


@pytest.mark.parametrize("change", [
    {"temperature": 0.5}, {"max_tokens": 65}, {"seed": 1}, {"choices": ("no", "yes")}, {"template_version": "t2"},
    {"messages": ({"role": "user", "content": "Is 2+2=5? yes or no"},)},
    {"messages": ({"role": "system", "content": "Is 2+2=4? yes or no"},)},
])
def test_every_input_of_the_verdict_changes_the_key(change: dict) -> None:
    assert verdict_key(ENDPOINT, dataclasses.replace(CALL, **change)) != verdict_key(ENDPOINT, CALL)


@pytest.mark.parametrize("change", [{"model": "judge-b"}, {"base_url": "http://127.0.0.1:10/v1"},
                                    {"api": "responses"}])
def test_the_judge_itself_changes_the_key(change: dict) -> None:
    assert verdict_key(dataclasses.replace(ENDPOINT, **change), CALL) != verdict_key(ENDPOINT, CALL)


@pytest.mark.parametrize("change", [{"max_concurrency": 1}, {"requests_per_minute": 5.0}, {"max_retries": 0},
                                    {"name": "other"}, {"api_key_env": "KEY"}, {"cache": "off"},
                                    {"base_url": "http://127.0.0.1:9/v1/"}])
def test_how_the_call_is_made_does_not_change_the_key(change: dict) -> None:
    assert verdict_key(dataclasses.replace(ENDPOINT, **change), CALL) == verdict_key(ENDPOINT, CALL)


def test_message_boundaries_are_part_of_the_key() -> None:
    one = JudgeCall(messages=({"role": "user", "content": "ab"}, {"role": "user", "content": "c"}))
    two = JudgeCall(messages=({"role": "user", "content": "a"}, {"role": "user", "content": "bc"}))
    assert verdict_key(ENDPOINT, one) != verdict_key(ENDPOINT, two)


def test_a_hit_returns_the_reply_marked_cached_and_counts() -> None:
    cache = VerdictCache(10)
    assert cache.get("k") is None
    cache.put("k", JudgeReply("yes", False, 12, 1))
    assert cache.get("k") == JudgeReply("yes", True, 12, 1)
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.stores, stats.entries) == (1, 1, 1, 1)


def test_memory_drops_the_least_recently_used() -> None:
    cache = VerdictCache(2)
    cache.put("a", JudgeReply("A", False))
    cache.put("b", JudgeReply("B", False))
    cache.get("a")  # a is now newer than b
    cache.put("c", JudgeReply("C", False))
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None


def test_the_sqlite_file_keeps_what_memory_dropped(tmp_path: Path) -> None:
    cache = VerdictCache(1, tmp_path / "v.db")
    cache.put("a", JudgeReply("A", False, 3, 1))
    cache.put("b", JudgeReply("B", False))
    assert cache.get("a") == JudgeReply("A", True, 3, 1)


def test_another_process_reads_and_writes_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    cache = VerdictCache(100, path)
    cache.put("mine", JudgeReply("yes", False))
    code = ("import sys\nfrom reward_service.judges import VerdictCache, JudgeReply\n"
            f"c = VerdictCache(100, {str(path)!r})\n"
            "got = c.get('mine')\nc.put('theirs', JudgeReply('no', False, 7, 2))\n"
            "print(got.text if got else 'MISSING')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "yes"
    assert cache.get("theirs") == JudgeReply("no", True, 7, 2)


@pytest.mark.parametrize("spec,kind", [("memory", VerdictCache), ("off", type(None))])
def test_cache_specs(spec: str, kind: type) -> None:
    assert isinstance(VerdictCache.from_spec(spec), kind)


def test_a_sqlite_spec_uses_the_path(tmp_path: Path) -> None:
    cache = VerdictCache.from_spec(f"sqlite:{tmp_path / 'x.db'}")
    assert cache is not None and cache.path == tmp_path / "x.db" and (tmp_path / "x.db").exists()


def test_a_bad_cache_spec_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="sqlite:PATH"):
        JudgeEndpoint(base_url="http://x/v1", model="m", cache="redis://x")


def test_sampled_calls_without_a_seed_are_not_deterministic() -> None:
    assert not dataclasses.replace(CALL, temperature=0.7, seed=None).deterministic
    assert dataclasses.replace(CALL, temperature=0.7, seed=3).deterministic
    assert dataclasses.replace(CALL, temperature=0.0, seed=None).deterministic


def test_processes_writing_the_file_at_once_lose_no_verdict(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    VerdictCache(10, path)  # creates the table before the writers start
    code = ("import sys\nfrom reward_service.judges import VerdictCache, JudgeReply\n"
            f"c = VerdictCache(10, {str(path)!r})\n"
            "for i in range(300):\n    c.put(f'{sys.argv[1]}-{i}', JudgeReply(str(i), False))\n")
    writers = [subprocess.Popen([sys.executable, "-c", code, name]) for name in ("a", "b", "c")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    reader = VerdictCache(10, path)
    missing = [f"{n}-{i}" for n in "abc" for i in range(300) if reader.get(f"{n}-{i}") != JudgeReply(str(i), True)]
    assert missing == []
