"""Every language of sandbox/languages.toml's "core" and "all" sets, for real, on the process backend.

Per language (programs in tests/language_programs.py, shared with the docker backend's tests):
a program reading stdin passes two cases under limits that fit Python (the language's floors
must keep its runtime alive: a JVM's or Go's threads, R's descriptors, rustc's memory); a
compile error is COMPILE_ERROR with the compiler's message; a failing program is
RUNTIME_ERROR; an endless loop is TIMEOUT; a test-framework mode passes a passing test file
(exit 0) and fails a failing one (non-zero exit, RUNTIME_ERROR). A language whose toolchain
is missing here is skipped (failed under SANDBOX_REQUIRE_LANGUAGES=1, as in CI).

One executor for the module; each language's requests go in one batch (two slots at once)
the first time one of its tests asks, and its tests read their own result.
"""

from __future__ import annotations

import shutil

import pytest

from reward_core.sandbox_contract import (
    CaseOutcome,
    ExecutionRequest,
    ExecutionResult,
    Limits,
    UnsupportedLanguage,
    Verdict,
)
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor
from sandbox.languages import BUILTIN_LANGUAGES, languages_in_set
from tests.language_programs import (
    COMPILE_ERROR,
    DOUBLE,
    ENDLESS,
    FIXED_OUTPUT,
    RUNTIME_ERROR,
    TEST_FILES,
    require_language,
)

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(180)]

#: Limits that fit a Python program: the languages' floors (languages.toml) must lift them.
PYTHON_FIT = Limits(wall_s=30.0, cpu_s=30.0, memory_mb=64, max_processes=4, open_files=16, scratch_mb=8)
#: An endless loop must end as TIMEOUT on these.
SHORT = Limits(wall_s=1.0, cpu_s=1.0)
#: A test framework's run (a JVM with the JUnit console launcher scanning the class path, jest under node):
#: its CPU time, threads included, grows with the machine's contention; these tests check verdicts, not speed.
FRAMEWORK = Limits(wall_s=60.0, cpu_s=30.0)
#: JVM languages: seconds per run (a JVM start, scalac or kotlinc), so `make test-fast` leaves them out.
JVM = frozenset({"java", "junit", "scala", "kotlin_script"})
ALL = [lang.name for lang in languages_in_set("all")]


def params(names) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in JVM else n for n in names]


def stdio(code: str, language: str, cases: list[tuple[str, str]], limits: Limits = Limits()) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=limits,
                            cases=tuple(Case(stdin=i, expected_stdout=o) for i, o in cases))


def requests_for(language: str) -> dict[str, ExecutionRequest]:
    """Every request the tests make of one language, by what they test."""
    out = {}
    if language in DOUBLE:
        out["double"] = stdio(DOUBLE[language], language, [("21\n", "42\n"), ("-5\n", "-10\n")], PYTHON_FIT)
    if language in COMPILE_ERROR:
        out["compile_error"] = stdio(COMPILE_ERROR[language][0], language, [("", "")])
    if language in RUNTIME_ERROR:
        out["runtime_error"] = stdio(RUNTIME_ERROR[language], language, [("", "")])
    if language in ENDLESS:
        out["endless"] = stdio(ENDLESS[language], language, [("", "")], SHORT)
    if language in TEST_FILES:
        passing, failing = TEST_FILES[language]
        out["tests_pass"] = stdio(passing, language, [("", "")], FRAMEWORK)
        out["tests_fail"] = stdio(failing, language, [("", "")], FRAMEWORK)
    if language in FIXED_OUTPUT:
        out["fixed_output"] = stdio(FIXED_OUTPUT[language][0], language, [("", FIXED_OUTPUT[language][1])],
                                    PYTHON_FIT)
    return out


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def results(executor):
    """``results(language, what)``: the result of that request, the language's batch run once."""
    done: dict[str, dict[str, ExecutionResult]] = {}

    def get(language: str, what: str) -> ExecutionResult:
        require_language(executor.languages, language)
        if language not in done:
            reqs = requests_for(language)
            done[language] = dict(zip(reqs, executor.execute_batch(list(reqs.values()))))
        return done[language][what]

    return get


def show(r: ExecutionResult) -> str:
    return f"{r.verdict.value} exit={r.exit_code} signal={r.signal} error={r.error[:500]!r} stderr={r.stderr[-500:]!r}"


# -- the tables cover every language ---------------------------------------------------------------------
def test_the_programs_cover_every_language_of_the_all_set():
    for name in ALL:
        lang = BUILTIN_LANGUAGES[name]
        assert name in ENDLESS, name
        assert name in DOUBLE or name in TEST_FILES or name in FIXED_OUTPUT, name
        assert name in RUNTIME_ERROR or name in TEST_FILES, name
        if lang.compiled:
            assert name in COMPILE_ERROR, name
        assert (name in TEST_FILES) == (lang.test_framework or name == "verilog"), name
    assert {"python", "cpp", "c", "bash"} <= set(ALL)


# -- per language ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("language", params(DOUBLE))
def test_a_stdin_program_passes_under_limits_that_fit_python(results, language):
    r = results(language, "double")
    assert r.verdict is Verdict.ACCEPTED, show(r)
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED] * 2
    assert r.stderr == ""                  # no runtime's warning either (kotlinc's -noverify one)


@pytest.mark.parametrize("language", params(COMPILE_ERROR))
def test_a_compile_error_is_compile_error_with_the_compilers_message(results, language):
    r = results(language, "compile_error")
    assert r.verdict is Verdict.COMPILE_ERROR, show(r)
    assert COMPILE_ERROR[language][1] in r.error, show(r)
    assert [t.outcome for t in r.tests] == [CaseOutcome.NOT_RUN]


@pytest.mark.parametrize("language", params(RUNTIME_ERROR))
def test_a_failing_program_is_a_runtime_error(results, language):
    r = results(language, "runtime_error")
    assert r.verdict is Verdict.RUNTIME_ERROR, show(r)
    assert r.exit_code not in (0, None) or r.signal is not None, show(r)


@pytest.mark.parametrize("language", params(ENDLESS))
def test_an_endless_loop_times_out(results, language):
    r = results(language, "endless")
    assert r.verdict is Verdict.TIMEOUT, show(r)


@pytest.mark.parametrize("language", params(TEST_FILES))
def test_a_passing_test_file_exits_zero(results, language):
    r = results(language, "tests_pass")
    # The framework's report is the output; only the exit status matters (the expected stdout is a
    # placeholder, so the verdict is ACCEPTED or WRONG_ANSWER, never a failure of the run).
    assert r.exit_code == 0 and r.verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER), show(r)


@pytest.mark.parametrize("language", params(TEST_FILES))
def test_a_failing_test_file_is_a_runtime_error(results, language):
    r = results(language, "tests_fail")
    assert r.verdict is Verdict.RUNTIME_ERROR and r.exit_code not in (0, None), show(r)


@pytest.mark.parametrize("language", params(FIXED_OUTPUT))
def test_a_program_without_stdin_prints_its_answer(results, language):
    r = results(language, "fixed_output")
    assert r.verdict is Verdict.ACCEPTED, show(r)


def test_a_known_language_without_its_toolchain_is_unsupported_not_a_score(executor):
    missing = [name for name in ("julia", "swift", "lean", "cuda") if name in executor.languages.unavailable]
    if not missing:
        pytest.skip("every optional toolchain is installed here")
    with pytest.raises(UnsupportedLanguage, match=f"UNSUPPORTED_LANGUAGE: language '{missing[0]}'"):
        executor.execute(stdio("x", missing[0], [("", "")]))
