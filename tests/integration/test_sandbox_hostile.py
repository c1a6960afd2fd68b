"""Hostile programs against every sandbox backend: none may pass, none may leave a trace on the host.

The programs are data (``tests/integration/hostile/``): escape, exhaustion, persistence
and harness gaming, in Python and C++ in all three test styles, and in Java, Go, Rust,
JavaScript and bash (``hostile/languages.py``: skipped where the toolchain is missing, a
failure under SANDBOX_REQUIRE_LANGUAGES=1). For each one, on each
backend, the test checks that

* the verdict is not a pass, is one the program may get (a limit verdict for
  exhaustion), and is never SANDBOX_ERROR (that would turn a 0 into "unscored");
* the run ended within its wall limit plus the host's margin, and (exhaustion) a correct
  program run at the same time in the other slot still passed;
* nothing the host keeps secret came back (canary file contents, the secret in the
  host's environment, lines of its root-only files, the check's expected values in the
  program's own output), and the program did not report an escape;
* nothing leaked (``HostProbe.leaks``): canary files intact, no token-named file on the
  host, no contact with the host's listeners, no process carrying the session marker,
  the test's process tree, memory, disk and descriptors as before, no IPC leftovers;
* a follow-up run (on every slot) finds nothing the program tried to leave behind, and a
  program run after another execution finds nothing of that execution's code or check;
* the sandbox still passes a correct program afterwards.

Positive controls run a few of the programs as plain host processes: the probe must
catch them, so a clean sandboxed run means something. Negative controls
(``hostile/legit.py``) are correct programs a defence must not fail -- e.g. 4 threads
and 200 MB under a 256 MB limit, which an address-space limit used as the memory
limit fails.

The process backend always runs; the docker backend needs the ``docker_executor``
fixture (marked ``docker``).
"""

from __future__ import annotations

import collections
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from reward_core.sandbox_contract import ExecutionResult, Executor, Limits, Verdict
from reward_core.sandbox_contract import TestStyle as Style
from tests.integration.hostile import LEGIT_PROGRAMS, PROGRAMS, Category, HostileProgram, legit
from tests.integration.hostile.host_probe import HostProbe, MemoryWatch
from tests.integration.hostile.model import CONTROL, TIMEOUT, followup_request, source, to_request, victim_request
from tests.language_programs import require_language

pytestmark = pytest.mark.timeout(120)

LIMITS = Limits(wall_s=2.0, cpu_s=2.0, memory_mb=256, max_processes=32, file_size_mb=16, scratch_mb=32,
                open_files=64, output_bytes=65536, compile_wall_s=20.0)
#: A hang guard, not a speed check: a program whose wall limit is not enforced runs until pytest's own
#: timeout, far past this. The margin is wide because on a loaded 2-core machine a correct run of an
#: exhaustion program (with its neighbour) has taken 9 s against a 2 s limit; speed is benchmarked.
HOST_MARGIN_FACTOR = 2.0
HOST_MARGIN_S = 20.0
#: How far MemAvailable may dip while a memory balloon runs: its memory limit, twice, and slack. The
#: limit is the request's raised to its language's floor (min_memory_mb: a JVM, Go, rustc get 512 MB).
PEAK_MEMORY_SLACK_MB = 256
SLOTS = 2
#: Languages every sandbox runs (the core set); the others' programs need their toolchain.
CORE_LANGUAGES = ("python", "cpp")
#: The languages with attacks of their own, each in every category (hostile/languages.py).
ATTACKED_LANGUAGES = ("java", "go", "rust", "nodejs", "bash", "ruby", "php", "R", "racket")
#: A hostile program that dies of one of these never ran its attack: the test would prove nothing.
BROKEN_PROGRAM = ("ModuleNotFoundError", "ImportError", "SyntaxError", "IndentationError", "NameError")


def _ids(program: HostileProgram) -> str:
    return f"{program.category.value}-{program.name}"


def _params() -> list:
    # Programs that must run into the wall limit take seconds each: mark them slow.
    params = []
    for p in PROGRAMS:
        marks = [pytest.mark.slow] if p.allowed == TIMEOUT else []
        if p.known_gap:
            marks.append(pytest.mark.xfail(strict=True, reason="known gap: " + p.known_gap))
        params.append(pytest.param(p, id=_ids(p), marks=marks))
    return params


@pytest.fixture(scope="module")
def probe() -> Iterator[HostProbe]:
    p = HostProbe()
    yield p
    p.close()


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def executor(request: pytest.FixtureRequest, probe: HostProbe) -> Iterator[Executor]:
    # ``probe`` first: the secret is in the environment before any sandbox process starts.
    if request.param == "process":
        from sandbox.factory import create_executor

        # every fork server, the opt-in one too (racket's): the attacks reach what a user can enable
        ex = create_executor(backend="process", concurrency=SLOTS, fork_servers=("default", "racket"))
        try:
            _warm(ex)
            yield ex
        finally:
            ex.close()
    else:
        ex = request.getfixturevalue("docker_executor")
        import docker

        probe.docker_client = docker.from_env()
        _warm(ex)
        try:
            yield ex
        finally:
            probe.docker_client.close()
            probe.docker_client = None


def _warm(ex: Executor) -> None:
    """Start every slot before the first snapshot, so a lazily started slot is not counted as a leak."""
    results = ex.execute_batch([CONTROL] * SLOTS)
    assert all(r.passed for r in results), [(r.verdict, r.error) for r in results]


def _describe(program: HostileProgram, result: ExecutionResult, elapsed: float) -> str:
    return (f"{program.name} ({program.category.value}, {program.language}, {program.style.value}): "
            f"{program.description}\n  verdict={result.verdict.value} limit_hit={result.limit_hit.value!r} "
            f"exit={result.exit_code} signal={result.signal} wall={result.wall_s:.2f}s host={elapsed:.2f}s "
            f"backend={result.backend}\n  error={result.error[:300]!r}\n  stdout={result.stdout[:400]!r}\n"
            f"  stderr={result.stderr[:300]!r}")


def _time_budget(program: HostileProgram, limits: Limits) -> float:
    compile_s = limits.compile_wall_s if program.language != "python" else 0.0
    return HOST_MARGIN_FACTOR * (limits.wall_s + compile_s) + HOST_MARGIN_S


def _memory_mb(executor: Executor, program: HostileProgram, limits: Limits) -> int:
    """The memory limit the program runs under: the request's, or its language's floor if higher."""
    language = getattr(executor, "languages", {}).get(program.language)
    return max(int(limits.memory_mb), getattr(language, "min_memory_mb", 0))


def _run(executor: Executor, program: HostileProgram, request) -> tuple[ExecutionResult, list[str], float]:
    """Run the program (an exhaustion one with a correct program beside it in the other slot)."""
    watch = MemoryWatch() if program.watch_memory else contextlib.nullcontext()
    problems: list[str] = []
    started = time.monotonic()
    with watch:
        if program.category is Category.EXHAUSTION:
            # One slot's exhaustion must not starve another.
            result, neighbor = executor.execute_batch([request, CONTROL])
            if not neighbor.passed:
                problems.append(f"a correct program running beside it failed: {neighbor.verdict.value} "
                                f"{neighbor.error[:200]!r}")
        else:
            result = executor.execute(request)
    elapsed = time.monotonic() - started
    memory_mb = _memory_mb(executor, program, request.limits)
    if isinstance(watch, MemoryWatch) and watch.start_mb - watch.lowest_mb > 2 * memory_mb + PEAK_MEMORY_SLACK_MB:
        problems.append(f"host MemAvailable dipped by {watch.start_mb - watch.lowest_mb:.0f} MB during the run "
                        f"(limit {memory_mb} MB)")
    if elapsed > _time_budget(program, request.limits):
        problems.append(f"took {elapsed:.1f}s, over the {_time_budget(program, request.limits):.1f}s budget")
    return result, problems, elapsed


def _judged_problems(program: HostileProgram, result: ExecutionResult, probe: HostProbe) -> list[str]:
    problems = []
    if result.passed:
        problems.append("the hostile program PASSED")
    if result.verdict not in program.allowed:
        problems.append(f"verdict {result.verdict.value} is not one of {sorted(v.value for v in program.allowed)}")
    problems += probe.secrets_in(result, expected_is_canary=program.problem == "canary")
    broken = [e for e in BROKEN_PROGRAM if e in result.stderr + result.error]
    if broken:
        problems.append(f"the program itself broke ({', '.join(broken)}), so its attack never ran")
    return problems


def _aftermath(executor: Executor, program: HostileProgram, probe: HostProbe) -> list[str]:
    """Follow-up runs on every slot, then a correct program on every slot."""
    problems = []
    if program.followup:
        follow = followup_request(program, probe.session, LIMITS)
        for fr in executor.execute_batch([follow] * SLOTS) + [executor.execute(follow)]:
            if not fr.passed:
                problems.append(f"follow-up run found leftovers or failed: {fr.verdict.value} "
                                f"{fr.stdout[:300]!r} {fr.error[:200]!r}")
            problems += [f"follow-up: {p}" for p in probe.secrets_in(fr)]
    for control in executor.execute_batch([CONTROL] * SLOTS):
        if not control.passed:
            problems.append(f"a correct program fails afterwards: {control.verdict.value} {control.error[:200]!r}")
    return problems


@pytest.mark.parametrize("program", _params())
def test_hostile_program_neither_passes_nor_leaks(executor: Executor, probe: HostProbe,
                                                  program: HostileProgram) -> None:
    if program.language not in CORE_LANGUAGES:
        require_language(executor.languages, program.language)
    request = to_request(program, probe.session, LIMITS)
    if program.after_victim:
        victims = executor.execute_batch([victim_request(probe.session, LIMITS)] * SLOTS)
        assert all(v.passed for v in victims), [(v.verdict, v.error) for v in victims]
    before, listener_mark = probe.snapshot(), probe.listener_mark()

    result, problems, elapsed = _run(executor, program, request)
    problems += _judged_problems(program, result, probe)
    if program.settle_s:
        time.sleep(program.settle_s)
    problems += _aftermath(executor, program, probe)
    problems += probe.leaks(before, listener_mark)

    assert not problems, _describe(program, result, elapsed) + "\n  - " + "\n  - ".join(problems)


@pytest.mark.parametrize("program", LEGIT_PROGRAMS, ids=lambda p: p.name)
def test_a_correct_program_passes(executor: Executor, probe: HostProbe, program: legit.LegitProgram) -> None:
    """The defences must not fail a correct solution (a 0 for a right answer is a wrong reward)."""
    if program.language not in CORE_LANGUAGES:
        require_language(executor.languages, program.language)
    result = executor.execute(legit.to_request(program, LIMITS))
    assert result.passed, (f"{program.name}: {program.description}\n  verdict={result.verdict.value} "
                           f"limit_hit={result.limit_hit.value!r} peak={result.peak_memory_mb:.0f} MB "
                           f"wall={result.wall_s:.2f}s\n  error={result.error[:300]!r}\n  "
                           f"stdout={result.stdout[:300]!r}\n  stderr={result.stderr[:600]!r}")


#: Harmless outside a sandbox (they only read the bait, print the environment, dial the test's listener).
UNSANDBOXED_CONTROLS = ("read_canary_files", "env_secret", "network_tcp_to_host")


@pytest.mark.parametrize("name", UNSANDBOXED_CONTROLS)
def test_the_probe_sees_what_an_unsandboxed_run_leaks(probe: HostProbe, name: str, tmp_path) -> None:
    """Positive control: the same program run as a plain host process is caught, so a clean run means something."""
    program = next(p for p in PROGRAMS if p.name == name)
    mark = probe.listener_mark()
    proc = subprocess.run([sys.executable, "-I", "-c", source(program, probe.session)], capture_output=True,
                          text=True, timeout=30, cwd=tmp_path)
    seen = probe.secrets_in(ExecutionResult(id=name, verdict=Verdict.WRONG_ANSWER, stdout=proc.stdout,
                                            stderr=proc.stderr))
    seen += probe.listeners.since(mark)
    assert seen, f"{name} leaked nothing even without a sandbox: {proc.stdout[:300]!r} {proc.stderr[:300]!r}"


def test_the_suite_covers_every_attack_class() -> None:
    by_category = collections.Counter(p.category for p in PROGRAMS)
    assert len(PROGRAMS) >= 40
    assert all(by_category[c] >= 8 for c in Category), by_category
    assert {p.language for p in PROGRAMS} == {*CORE_LANGUAGES, *ATTACKED_LANGUAGES}
    for language in ATTACKED_LANGUAGES:
        assert {p.category for p in PROGRAMS if p.language == language} == set(Category), language
    assert {p.language for p in LEGIT_PROGRAMS} >= {"java", "go", "rust"}
    assert {p.style for p in PROGRAMS} == set(Style)
    assert not any(Verdict.ACCEPTED in p.allowed or Verdict.SANDBOX_ERROR in p.allowed for p in PROGRAMS)
