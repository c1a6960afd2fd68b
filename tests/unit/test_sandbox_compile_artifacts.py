"""The compile-artifact cache (sandbox/compile_artifacts.py): keys, bounds, integrity, what a compile reports."""

from __future__ import annotations

import base64
import json
import os

import pytest

from reward_core.sandbox_contract import ExecutionRequest
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.compile_artifacts import ArtifactCache, CompiledArtifacts, artifact_key, collected
from sandbox.languages import load_languages
from sandbox.zygote_client import build_wire

TABLE = load_languages(probe=None)


def request(code: str = "int main() {}\n", language: str = "cpp", files: dict | None = None) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, cases=(Case("", ""),),
                            files=files or {})


def key(req: ExecutionRequest, version: str = "g++ 12.2") -> str | None:
    lang = TABLE[req.language]
    return artifact_key(req, build_wire(req, lang).public["language"], lang, version)


def entry(size: int, fill: bytes = b"x", name: str = "main") -> CompiledArtifacts:
    return CompiledArtifacts({name: fill * size}, stdout="", stderr="warning: w")


# -- keys ------------------------------------------------------------------------------------------------
def test_the_same_program_has_the_same_key():
    assert key(request()) == key(request()) is not None


def test_a_different_source_has_another_key():
    assert key(request("int main() { return 0; }\n")) != key(request())


def test_a_different_toolchain_version_has_another_key():
    assert key(request(), "g++ 12.2") != key(request(), "g++ 13.1")


def test_a_different_file_has_another_key():
    assert key(request(files={"a.h": b"#define X 1\n"})) != key(request(files={"a.h": b"#define X 2\n"}))


def test_an_unknown_toolchain_version_is_not_cached():
    assert key(request(), "") is None


def test_an_interpreted_language_is_not_cached():
    assert key(request("print(1)\n", "python")) is None


# -- what a compile step reports ------------------------------------------------------------------------
def report(artifacts: dict[str, bytes], **over) -> dict:
    return {"ok": True, "exit_code": 0, "limit": "", "stdout": "", "stderr": "note",
            "artifacts": {n: base64.b64encode(c).decode() for n, c in artifacts.items()}, **over}


def test_a_successful_compile_with_its_artifacts_is_collected():
    got = collected(report({"main": b"\x7fELF"}), ("main",))
    assert got == CompiledArtifacts({"main": b"\x7fELF"}, "", "note")


def test_a_missing_artifact_is_not_collected():
    assert collected(report({"other": b"x"}), ("main",)) is None


def test_a_glob_needs_at_least_one_match():
    assert collected(report({"Main.class": b"\xca\xfe"}), ("*.class",)) is not None
    assert collected(report({"Main.java": b"x"}), ("*.class",)) is None


def test_a_failed_or_limited_compile_is_not_collected():
    assert collected(report({"main": b"x"}, ok=False, exit_code=1), ("main",)) is None
    assert collected(report({"main": b"x"}, limit="memory"), ("main",)) is None


def test_invalid_base64_is_not_collected():
    bad = report({"main": b"x"})
    bad["artifacts"]["main"] = "not base64!"
    assert collected(bad, ("main",)) is None


# -- the cache on disk ----------------------------------------------------------------------------------
def test_a_stored_entry_comes_back_byte_for_byte(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_bytes=1 << 20)
    art = CompiledArtifacts({"main": bytes(range(256)) * 4, "lib/x.class": b"\xca\xfe"}, "out", "err")
    assert cache.store("k1", art)
    assert cache.lookup("k1") == art and (cache.hits, cache.misses) == (1, 0)


def test_an_unknown_key_is_a_miss(tmp_path):
    cache = ArtifactCache(str(tmp_path))
    assert cache.lookup("nope") is None and cache.misses == 1


def test_the_least_recently_used_entry_is_evicted_past_the_byte_bound(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_bytes=250)
    cache.store("a", entry(100))
    cache.store("b", entry(100))
    cache.lookup("a")                                   # b is now the least recently used
    cache.store("c", entry(100))
    assert cache.lookup("b") is None and cache.lookup("a") is not None and cache.lookup("c") is not None
    assert cache.bytes == 200 and not os.path.exists(tmp_path / "b")


def test_the_entry_bound_evicts_too(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_entries=2)
    for name in "abc":
        cache.store(name, entry(10))
    assert len(cache) == 2 and cache.lookup("a") is None


def test_an_entry_larger_than_the_whole_cache_is_not_kept(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_bytes=50)
    assert not cache.store("big", entry(51)) and len(cache) == 0


def test_a_corrupted_artifact_is_a_miss_and_is_dropped(tmp_path):
    cache = ArtifactCache(str(tmp_path))
    cache.store("k", entry(64))
    blob = tmp_path / "k" / "0.bin"
    blob.write_bytes(b"y" + blob.read_bytes()[1:])
    assert cache.lookup("k") is None and len(cache) == 0 and not (tmp_path / "k").exists()


def test_a_truncated_artifact_is_a_miss(tmp_path):
    cache = ArtifactCache(str(tmp_path))
    cache.store("k", entry(64))
    (tmp_path / "k" / "0.bin").write_bytes(b"x" * 10)
    assert cache.lookup("k") is None


def test_a_garbled_manifest_is_a_miss(tmp_path):
    cache = ArtifactCache(str(tmp_path))
    cache.store("k", entry(64))
    (tmp_path / "k" / "manifest.json").write_text("{not json")
    assert cache.lookup("k") is None


def test_a_manifest_for_another_key_is_a_miss(tmp_path):
    cache = ArtifactCache(str(tmp_path))
    cache.store("k", entry(64))
    cache.store("j", entry(64, b"z"))
    manifest = json.loads((tmp_path / "j" / "manifest.json").read_text())
    (tmp_path / "k" / "manifest.json").write_text(json.dumps(manifest))   # j's (valid) manifest under k
    assert cache.lookup("k") is None


def test_a_given_directory_keeps_its_entries_for_the_next_cache(tmp_path):
    ArtifactCache(str(tmp_path)).store("k", entry(8))
    (tmp_path / ".tmp-half-written").mkdir()
    again = ArtifactCache(str(tmp_path))
    assert again.lookup("k") == entry(8) and not (tmp_path / ".tmp-half-written").exists()


def test_a_private_directory_is_removed_on_close():
    cache = ArtifactCache()
    cache.store("k", entry(8))
    cache.close()
    assert not os.path.exists(cache.directory)


def test_zero_bounds_disable_the_cache(tmp_path):
    cache = ArtifactCache(str(tmp_path), max_entries=0)
    assert not cache.store("k", entry(8)) and cache.lookup("k") is None and cache.misses == 0


def test_negative_bounds_are_refused(tmp_path):
    with pytest.raises(ValueError, match=">= 0"):
        ArtifactCache(str(tmp_path), max_bytes=-1)
