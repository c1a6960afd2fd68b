"""Successful compiles cached across executions (sandbox/compile_artifacts.py), process backend for real.

A second identical submission runs no compiler (``CompileResult.cached``, the cache's counters); a
different source, file or toolchain version compiles again; a corrupted entry compiles again and is
judged as before; a program that replaces its own binary at run time does not change what is cached.
No wall-clock assertions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from reward_core.sandbox_contract import ExecutionRequest, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor, create_remote_executor
from sandbox.languages import load_languages
from sandbox.server import SandboxServerConfig, create_server
from tests.language_programs import require_language

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(240)]

LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=256, scratch_mb=32, output_bytes=4096)
ADD = "#include <cstdio>\nint main() { int a, b; std::scanf(\"%d %d\", &a, &b); std::printf(\"%d\\n\", a + b); }\n"
CASES = [Case("1 2\n", "3\n"), Case("40 2\n", "42\n")]

# Prints "original", then replaces its own binary with a script that prints "hacked".
REPLACES_ITSELF = r"""#include <cstdio>
#include <unistd.h>
int main() {
    std::puts("original");
    std::fflush(stdout);
    unlink("main");
    FILE* f = std::fopen("main", "w");
    if (f) { std::fputs("#!/bin/sh\necho hacked\n", f); std::fclose(f); }
    return 0;
}
"""


def stdio(code: str, cases: list[Case] = CASES, language: str = "cpp", files: dict | None = None) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=LIMITS, cases=cases,
                            files=files or {})


@pytest.fixture(scope="module")
def executor():
    require_language(load_languages(), "cpp")
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


def test_a_second_identical_submission_runs_no_compiler(executor):
    cache = executor.artifact_cache
    request = stdio(ADD + "// unique 1\n")
    first = executor.execute(request)
    hits, misses = cache.hits, cache.misses
    second = executor.execute(request)
    assert first.verdict is second.verdict is Verdict.ACCEPTED, (first.error, second.error)
    assert not first.compile.cached and second.compile.cached and second.compile.wall_s == 0.0
    assert second.compile.exit_code == 0 and (cache.hits, cache.misses) == (hits + 1, misses)


def test_a_cached_compile_reports_the_first_compilers_warnings(executor):
    request = stdio("#pragma GCC warning \"from the first compile\"\n" + ADD)
    first, second = executor.execute(request), executor.execute(request)
    assert second.compile.cached and "from the first compile" in first.compile.stderr
    assert second.compile.stderr == first.compile.stderr and second.verdict is Verdict.ACCEPTED


def test_a_different_source_compiles_again(executor):
    cache = executor.artifact_cache
    executor.execute(stdio(ADD + "// unique 2\n"))
    misses = cache.misses
    other = executor.execute(stdio(ADD + "// unique 3\n"))
    assert not other.compile.cached and other.verdict is Verdict.ACCEPTED and cache.misses == misses + 1


def test_a_different_file_compiles_again(executor):
    code = "#include <cstdio>\n#include \"k.h\"\nint main() { std::printf(\"%d\\n\", K); }\n"
    first = executor.execute(stdio(code, [Case("", "1\n")], files={"k.h": b"#define K 1\n"}))
    other = executor.execute(stdio(code, [Case("", "2\n")], files={"k.h": b"#define K 2\n"}))
    assert first.verdict is other.verdict is Verdict.ACCEPTED and not other.compile.cached


def test_a_corrupted_entry_compiles_again_with_the_right_verdict(executor):
    cache = executor.artifact_cache
    request = stdio(ADD + "// unique 4\n")
    executor.execute(request)
    for blob in Path(cache.directory).glob("*/0.bin"):
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF                   # a flipped byte in every cached binary
        blob.write_bytes(bytes(data))
    again = executor.execute(request)
    assert not again.compile.cached and again.verdict is Verdict.ACCEPTED
    assert executor.execute(request).compile.cached      # stored afresh


def test_a_program_that_replaces_its_binary_does_not_change_the_cached_one(executor):
    request = stdio(REPLACES_ITSELF, [Case("", "original\n")])
    first = executor.execute(request)
    second = executor.execute(request)
    assert first.verdict is Verdict.ACCEPTED, first.error
    assert second.compile.cached and second.verdict is Verdict.ACCEPTED, second.tests[0].stdout_head
    blobs = list(Path(executor.artifact_cache.directory).glob("*/0.bin"))
    assert blobs and all(blob.read_bytes().startswith(b"\x7fELF") for blob in blobs)   # binaries, not the script


def test_every_case_of_a_cached_submission_gets_the_compiled_binary(executor):
    """A case that replaced ./main cannot hand the next case its script: each case writes the artifacts."""
    request = stdio(REPLACES_ITSELF, [Case("", "original\n")] * 3)
    executor.execute(request)
    cached = executor.execute(request)
    assert cached.compile.cached
    assert [t.verdict for t in cached.tests] == [Verdict.ACCEPTED] * 3


def test_a_cached_compile_still_fetches_the_files_the_program_wrote(executor):
    code = "#include <cstdio>\nint main() { std::FILE* f = std::fopen(\"out.txt\", \"w\"); std::fputs(\"42\", f); " \
           "std::fclose(f); std::puts(\"ok\"); }\n"
    request = ExecutionRequest(code=code, style=Style.STDIO, language="cpp", limits=LIMITS,
                               cases=[Case("", "ok\n")], fetch_files=("out.txt",))
    first, second = executor.execute(request), executor.execute(request)
    assert second.compile.cached and first.verdict is second.verdict is Verdict.ACCEPTED, second.error
    assert first.files == second.files == {"out.txt": b"42"}


def _table_with_version(tmp_path, version: str) -> object:
    path = tmp_path / f"langs-{version}.yaml"
    path.write_text(yaml.safe_dump({"cpp": {"source_file": "main.cpp", "artifacts": ["main"],
                                            "compile": ["g++", "-O2", "-o", "main", "main.cpp"], "run": ["./main"],
                                            "version": ["sh", "-c", f"echo g++ {version}"]}}))
    return load_languages(path)


def test_a_cache_directory_outlives_its_executor_but_not_a_toolchain_upgrade(tmp_path):
    require_language(load_languages(), "cpp")
    cache_dir = str(tmp_path / "compiled")
    request = stdio(ADD + "// unique 5\n")
    runs = []
    for version in ("12.2", "12.2", "13.1"):
        with create_executor("process", concurrency=1, languages=_table_with_version(tmp_path, version),
                             compile_cache_dir=cache_dir) as ex:
            result = ex.execute(request)
            runs.append((result.verdict, result.compile.cached))
    assert runs == [(Verdict.ACCEPTED, False), (Verdict.ACCEPTED, True), (Verdict.ACCEPTED, False)]


def test_java_class_files_are_cached_by_glob(executor):
    require_language(load_languages(), "java")
    code = ("public class Main {\n  static class Helper { int twice(int x) { return 2 * x; } }\n"
            "  public static void main(String[] a) { System.out.println(new Helper().twice(21)); }\n}\n")
    request = stdio(code, [Case("", "42\n")], language="java")
    first, second = executor.execute(request), executor.execute(request)
    assert first.verdict is second.verdict is Verdict.ACCEPTED, (first.error, second.error)
    assert second.compile.cached


def test_a_bounded_cache_evicts_the_oldest_compile(tmp_path):
    require_language(load_languages(), "cpp")
    with create_executor("process", concurrency=1, compile_cache_entries=1) as ex:
        a, b = stdio(ADD + "// evict a\n"), stdio(ADD + "// evict b\n")
        ex.execute(a)
        ex.execute(b)                                   # evicts a
        assert not ex.execute(a).compile.cached and len(ex.artifact_cache) == 1


def test_the_sandbox_servers_metrics_count_artifact_cache_hits_over_grpc(tmp_path):
    require_language(load_languages(), "cpp")
    server = create_server(SandboxServerConfig(port=0, workers=1, grace_s=0.0, compile_cache_dir=str(tmp_path)))
    remote = create_remote_executor(server.address)
    try:
        request = stdio(ADD + "// unique grpc\n")
        first, second = remote.execute(request), remote.execute(request)
        assert first.verdict is second.verdict is Verdict.ACCEPTED
        assert second.compile.cached and not first.compile.cached      # the flag crossed the wire
        registry = server.servicer.metrics.registry
        assert registry.get_sample_value("sandbox_compile_artifact_cache_lookups_total", {"result": "hit"}) == 1
        assert registry.get_sample_value("sandbox_compile_artifact_cache_lookups_total", {"result": "miss"}) == 1
        assert registry.get_sample_value("sandbox_compile_artifact_cache_entries") == 1
        assert len(list(tmp_path.glob("*/manifest.json"))) == 1       # --compile-cache-dir is where they live
    finally:
        remote.close()
        server.stop(0)


@pytest.mark.docker
def test_the_docker_backend_caches_successful_compiles(docker_executor):
    request = stdio(ADD + "// unique docker\n")
    first, second = docker_executor.execute(request), docker_executor.execute(request)
    assert first.verdict is second.verdict is Verdict.ACCEPTED, (first.error, second.error)
    assert second.compile.cached and not first.compile.cached
