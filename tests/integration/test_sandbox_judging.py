"""Judging per test case with the process backend for real: checkers, per-case results, the compile-failure cache.

One property per test; no wall-clock assertions (time limits only stop programs).
"""

from __future__ import annotations

import shutil

import pytest

from reward_core.sandbox_contract import (
    HEAD_CHARS,
    CaseOutcome,
    ExecutionRequest,
    Limits,
    OutputCompare,
    Verdict,
)
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor, create_remote_executor
from sandbox.languages import load_languages
from sandbox.server import SandboxServerConfig, create_server
from sandbox.submissions import result_to_dict
from tests.language_programs import require_language

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(180)]

FAST = Limits(wall_s=5.0, cpu_s=5.0, memory_mb=256, scratch_mb=16, output_bytes=4096)

# Prints 0..n-1 in reverse: a permutation of the expected "0 1 ... n-1".
REVERSED = "n = int(input())\nprint(*reversed(range(n)))\n"
PERMUTATION_CASES = [Case(stdin="3\n", expected_stdout="0 1 2\n"), Case(stdin="5\n", expected_stdout="0 1 2 3 4\n")]

PY_CHECKER = """import sys
inp, out, ans = (open(p).read() for p in sys.argv[1:4])
n = int(inp)
if sorted(out.split()) != sorted(ans.split()) or len(out.split()) != n:
    print("not a permutation of the answer", file=sys.stderr)
    sys.exit(1)
print("ok", file=sys.stderr)
"""

CPP_CHECKER = r"""#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>
static std::vector<std::string> words(const char* path) {
    std::ifstream f(path);
    return {std::istream_iterator<std::string>(f), std::istream_iterator<std::string>()};
}
int main(int argc, char** argv) {
    if (argc < 4) { std::cerr << "usage: checker input output answer"; return 3; }
    auto out = words(argv[2]), ans = words(argv[3]);
    std::sort(out.begin(), out.end());
    std::sort(ans.begin(), ans.end());
    if (out != ans) { std::cerr << "wrong answer: not a permutation"; return 1; }
    std::cerr << "ok";
    return 0;
}
"""


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


def stdio(code: str, cases: list[Case], language: str = "python", limits: Limits = FAST,
          compare: OutputCompare | None = None) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=limits, cases=cases,
                            compare=compare or OutputCompare())


# -- checkers --------------------------------------------------------------------------------------------
def test_a_python_checker_accepts_a_permuted_answer(executor):
    r = executor.execute(stdio(REVERSED, PERMUTATION_CASES, compare=OutputCompare(mode="checker",
                                                                                   checker_code=PY_CHECKER)))
    assert r.verdict is Verdict.ACCEPTED, r.error
    assert [t.verdict for t in r.tests] == [Verdict.ACCEPTED, Verdict.ACCEPTED]


def test_a_python_checker_rejects_with_its_message(executor):
    r = executor.execute(stdio("input()\nprint(7)\n", PERMUTATION_CASES[:1],
                               compare=OutputCompare(mode="checker", checker_code=PY_CHECKER)))
    assert r.verdict is Verdict.WRONG_ANSWER
    assert r.tests[0].outcome is CaseOutcome.FAILED and "not a permutation" in r.tests[0].detail


def test_without_a_checker_the_permutation_is_a_wrong_answer(executor):
    r = executor.execute(stdio(REVERSED, PERMUTATION_CASES))
    assert r.verdict is Verdict.WRONG_ANSWER


def test_a_cpp_checker_accepts_a_permuted_answer(executor):
    require_language(load_languages(), "cpp")
    compare = OutputCompare(mode="checker", checker_code=CPP_CHECKER, checker_language="cpp")
    r = executor.execute(stdio(REVERSED, PERMUTATION_CASES, compare=compare))
    assert r.verdict is Verdict.ACCEPTED, r.error
    wrong = executor.execute(stdio("input()\nprint(1, 1, 1)\n", PERMUTATION_CASES[:1], compare=compare))
    assert wrong.verdict is Verdict.WRONG_ANSWER and "not a permutation" in wrong.tests[0].detail


@pytest.mark.parametrize("checker", [
    "import sys\nraise RuntimeError('checker bug')\n",          # an uncaught exception: not a "wrong answer"
    "import os\nos.abort()\n",                                  # killed by a signal
    "import sys\nsys.exit(3)\n",                                # testlib's _fail
    "def broken(:\n",                                           # does not even parse
])
def test_a_failing_checker_is_unscored_never_a_verdict_on_the_code(executor, checker):
    r = executor.execute(stdio(REVERSED, PERMUTATION_CASES, compare=OutputCompare(mode="checker",
                                                                                   checker_code=checker)))
    assert r.verdict is Verdict.SANDBOX_ERROR and not r.verdict.is_verdict_on_code
    assert r.error.startswith("checker failed")
    assert all(t.verdict is Verdict.SANDBOX_ERROR for t in r.tests)


def test_a_case_the_program_failed_is_not_sent_to_the_checker(executor):
    r = executor.execute(stdio("raise SystemExit(4)\n", PERMUTATION_CASES[:1],
                               compare=OutputCompare(mode="checker", checker_code="import os\nos.abort()\n")))
    assert r.verdict is Verdict.RUNTIME_ERROR      # the crashing checker never ran: nothing to judge


# -- per-case results ------------------------------------------------------------------------------------
def test_each_case_has_its_own_verdict_memory_and_output_heads(executor):
    code = "import sys\nx = input()\nprint('out', x)\nprint('err', x, file=sys.stderr)\n" \
           "if x == 'boom':\n    raise ValueError(x)\n"
    cases = [Case(stdin="a\n", expected_stdout="out a\n"), Case(stdin="b\n", expected_stdout="out c\n"),
             Case(stdin="boom\n", expected_stdout="out boom\n")]
    r = executor.execute(stdio(code, cases))
    assert [t.verdict for t in r.tests] == [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR]
    assert [t.stdout_head for t in r.tests] == ["out a\n", "out b\n", "out boom\n"]
    assert r.tests[0].stderr_head == "err a\n" and "ValueError: boom" in r.tests[2].stderr_head
    assert all(t.peak_memory_mb > 0 for t in r.tests)
    record = result_to_dict(r)["tests"][1]
    assert record["verdict"] == "wrong_answer" and record["stdout_head"] == "out b\n"


def test_a_timed_out_case_keeps_its_partial_output(executor):
    r = executor.execute(stdio("print('partial', flush=True)\nwhile True:\n    pass\n", [Case("", "done\n")],
                               limits=Limits(wall_s=1.0, cpu_s=5.0, output_bytes=4096)))
    assert r.verdict is Verdict.TIMEOUT and r.tests[0].verdict is Verdict.TIMEOUT
    assert r.tests[0].stdout_head == "partial\n" and r.stdout == "partial\n"


def test_a_case_over_its_memory_limit_says_so(executor):
    r = executor.execute(stdio("print('before', flush=True)\nx = bytearray(400 << 20)\n", [Case("", "")],
                               limits=Limits(memory_mb=128)))
    assert r.tests[0].verdict is Verdict.MEMORY_LIMIT and r.verdict is Verdict.MEMORY_LIMIT


def test_a_case_over_its_output_limit_says_so_and_keeps_a_head(executor):
    r = executor.execute(stdio("while True:\n    print('x' * 100)\n", [Case("", "")]))
    assert r.tests[0].verdict is Verdict.OUTPUT_LIMIT
    assert r.tests[0].stdout_head.startswith("x" * 100) and len(r.tests[0].stdout_head) == HEAD_CHARS


# -- compile failures: cached ----------------------------------------------------------------------------
def test_a_repeated_python_syntax_error_is_answered_from_the_cache(executor):
    cache = executor.compile_cache
    request = stdio("print(int(input() * 2)\n# unique 1\n", [Case("1\n", "2\n")])
    first = executor.execute(request)
    hits = cache.hits
    second = executor.execute(request)
    assert first.verdict is second.verdict is Verdict.COMPILE_ERROR
    assert cache.hits == hits + 1 and second.error == first.error
    assert [t.verdict for t in second.tests] == [Verdict.COMPILE_ERROR]


def test_a_repeated_cpp_compile_error_does_not_compile_again(executor):
    require_language(load_languages(), "cpp")
    cache = executor.compile_cache
    request = stdio("int main() { return undefined_name; }\n", [Case("", "")], language="cpp")
    first = executor.execute(request)
    hits, misses = cache.hits, cache.misses
    second = executor.execute(request)
    assert first.verdict is second.verdict is Verdict.COMPILE_ERROR and "undefined_name" in second.error
    assert (cache.hits, cache.misses) == (hits + 1, misses)
    other = executor.execute(stdio("int main() { return other_name; }\n", [Case("", "")], language="cpp"))
    assert other.verdict is Verdict.COMPILE_ERROR and (cache.hits, cache.misses) == (hits + 1, misses + 1)


def test_a_program_that_compiles_is_not_cached(executor):
    cache = executor.compile_cache
    request = stdio("print(int(input()) * 2)\n", [Case("2\n", "4\n")])
    executor.execute(request)
    hits = cache.hits
    assert executor.execute(request).verdict is Verdict.ACCEPTED and cache.hits == hits


def test_the_sandbox_servers_metrics_count_compile_cache_hits_over_grpc():
    server = create_server(SandboxServerConfig(port=0, workers=1, grace_s=0.0))
    remote = create_remote_executor(server.address)
    try:
        request = stdio("print(int(input() * 2)\n# unique 2\n", [Case("1\n", "2\n")])
        first, second = remote.execute(request), remote.execute(request)
        assert first.verdict is second.verdict is Verdict.COMPILE_ERROR
        assert second.tests[0].verdict is Verdict.COMPILE_ERROR          # the per-case verdict crossed the wire
        registry = server.servicer.metrics.registry
        assert registry.get_sample_value("sandbox_compile_cache_lookups_total", {"result": "hit"}) == 1
        assert registry.get_sample_value("sandbox_compile_cache_lookups_total", {"result": "miss"}) == 1
    finally:
        remote.close()
        server.stop(0)


def test_output_that_crashes_a_working_checker_is_a_wrong_answer_not_unscored(executor):
    # A naive checker: int() of whatever the program printed. It accepts the expected answer, so a crash
    # on the program's output is that output's fault (else garbage output would dodge its 0).
    naive = ("import sys\nout = int(open(sys.argv[2]).read())\n"
             "sys.exit(0 if out == int(open(sys.argv[3]).read()) else 1)\n")
    r = executor.execute(stdio("print('garbage')\n", [Case("", "3\n")],
                               compare=OutputCompare(mode="checker", checker_code=naive)))
    assert r.verdict is Verdict.WRONG_ANSWER and r.tests[0].verdict is Verdict.WRONG_ANSWER
    assert "accepts the expected answer" in r.tests[0].detail and "ValueError" in r.tests[0].detail


@pytest.mark.docker
def test_the_docker_backend_runs_checkers_and_caches_compile_failures(docker_executor):
    ok = docker_executor.execute(stdio(REVERSED, PERMUTATION_CASES,
                                       compare=OutputCompare(mode="checker", checker_code=PY_CHECKER)))
    assert ok.verdict is Verdict.ACCEPTED, ok.error
    request = stdio("print(int(input() * 2)\n# unique docker\n", [Case("1\n", "2\n")])
    docker_executor.execute(request)
    hits = docker_executor.compile_cache.hits
    assert docker_executor.execute(request).verdict is Verdict.COMPILE_ERROR
    assert docker_executor.compile_cache.hits == hits + 1
