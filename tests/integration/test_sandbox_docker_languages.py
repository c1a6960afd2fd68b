"""Every language of the runner image, for real, on the docker backend: the same spec and the same
programs as the process backend (tests/integration/test_sandbox_languages.py, whose requests this
module reuses; programs in tests/language_programs.py).

The image is the one of ``SANDBOX_LANGUAGES`` (default core; CI builds and tests ``all``). Per
language: a program reading stdin passes two cases under limits that fit Python (the language's
floors must keep its runtime alive in a container too: there RLIMIT_AS and the container's memory
cgroup, not a cgroup of the program's own, bound it), as the slot's unprivileged uid on the
container's read-only root with tmpfs /tmp and /scratch (go's build cache, mono's ~/.mono,
racket's addon directory all go to the scratch directory); a compile error is COMPILE_ERROR with
the compiler's message; a failing program RUNTIME_ERROR; an endless loop TIMEOUT; a test-framework
mode passes a passing test file and fails a failing one. A language missing from the image is
skipped (failed under SANDBOX_REQUIRE_LANGUAGES=1, as in CI) and answers UNSUPPORTED_LANGUAGE
naming the image and its set.

One executor (two warm containers) for the module; each language's requests go in one batch the
first time one of its tests asks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, UnsupportedLanguage
from sandbox.docker_image import LANGUAGES_LABEL, BaseRecipe, image_languages
from sandbox.languages import BUILTIN_LANGUAGES
from tests.integration.test_sandbox_languages import (  # noqa: F401 - collected here, on the docker backend
    requests_for,
    stdio,
    test_a_compile_error_is_compile_error_with_the_compilers_message,
    test_a_failing_program_is_a_runtime_error,
    test_a_failing_test_file_is_a_runtime_error,
    test_a_passing_test_file_exits_zero,
    test_a_program_without_stdin_prints_its_answer,
    test_a_stdin_program_passes_under_limits_that_fit_python,
    test_an_endless_loop_times_out,
)
from tests.language_programs import (
    DOUBLE,
    FIXED_OUTPUT,
    TEST_FILES,
    require_language,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def slower(request: ExecutionRequest) -> ExecutionRequest:
    """A container has one CPU (DockerConfig.cpus): a runtime's start-up threads (a JVM's, Jest's
    ~6 s on Debian's node 18) take longer than on the host, so the time limits are generous here
    (the verdicts, not the times, are what these tests check)."""
    limits = request.limits
    return replace(request, limits=replace(limits, wall_s=max(limits.wall_s, 60.0), cpu_s=max(limits.cpu_s, 60.0)))


@pytest.fixture(scope="module")
def executor(docker_runner_image):
    from sandbox.factory import create_executor

    ex = create_executor(backend="docker", concurrency=2, image=docker_runner_image)
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def results(executor):
    """``results(language, what)``: the result of that request, the language's batch run once."""
    done: dict[str, dict[str, ExecutionResult]] = {}

    def get(language: str, what: str) -> ExecutionResult:
        require_language(executor.languages, language)
        if language not in done:
            reqs = {what: slower(req) if what != "endless" else req for what, req in requests_for(language).items()}
            done[language] = dict(zip(reqs, executor.execute_batch(list(reqs.values()))))
        return done[language][what]

    return get


# -- what the image has -----------------------------------------------------------------------------------
def test_the_image_records_its_languages_with_their_versions(executor):
    import docker

    record = image_languages(docker.from_env(), executor.image)
    assert record is not None, f"{executor.image} has no {LANGUAGES_LABEL} label"
    assert record["set"] == BaseRecipe.for_languages().languages
    assert {"python", "cpp", "c", "bash"} <= set(record["languages"])
    assert record["languages"]["python"].startswith("Python 3.")
    assert executor.language_versions()["cpp"].startswith("g++")
    assert set(executor.language_versions()) == {lang.name for lang in executor.languages.available()}


def test_a_language_the_image_lacks_is_unsupported_naming_the_image_and_its_set(executor):
    reason = executor.languages.unavailable["julia"]            # in no image: Debian has no julia package
    assert executor.image in reason and "SANDBOX_LANGUAGES=" in reason, reason
    with pytest.raises(UnsupportedLanguage, match="UNSUPPORTED_LANGUAGE: language 'julia'.*runner image"):
        executor.execute(stdio("println(1)", "julia", [("", "1\n")]))


# -- per language: the process backend's tests, collected here with this module's ``results`` ----------
def test_results_come_from_the_docker_backend(results):
    assert results("python", "double").backend == "docker"


def test_every_language_with_a_package_is_covered_here():
    for name, lang in BUILTIN_LANGUAGES.items():
        if lang.packages:
            assert name in DOUBLE or name in TEST_FILES or name in FIXED_OUTPUT, name
