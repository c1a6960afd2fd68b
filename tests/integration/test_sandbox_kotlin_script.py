"""``kotlin_script`` is compiled once and run per case (languages.toml): each program gives what ``kotlinc -script``
gives it, run on the host as the reference -- stdout, exit status, and stderr's first line (an uncaught
exception's trace from the script's frames, exit 3; ``exitProcess``'s own status; output without a final newline,
on stderr, from functions, lambdas and classes of the script, which compile to classes of their own); a compile
error is kotlinc's message, exit 1 in both. The cases of one request run the compiled class."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from reward_core.sandbox_contract import CaseOutcome, ExecutionRequest, Limits, Verdict
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor
from sandbox.languages import BUILTIN_LANGUAGES
from tests.language_programs import require_language

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.slow, pytest.mark.timeout(300)]

LIMITS = Limits(wall_s=60.0, cpu_s=60.0, compile_wall_s=60.0)
#: (name, program, stdin)
PROGRAMS = [
    ("stdin", "val n = readLine()!!.trim().toInt()\nprintln(n * 2)\nprintln(args.size)\n", "21\n"),
    ("no_final_newline", "print(\"a\")\nSystem.err.print(\"b\")\nprint(\"c\")\n", ""),
    ("uncaught", "fun f(x: Int): Int = if (x == 0) throw IllegalStateException(\"deep\") else f(x - 1)\n"
                 "println(\"before\")\nf(3)\n", ""),
    ("cause", "try { error(\"inner\") } catch (e: Exception) { throw RuntimeException(\"outer\", e) }\n", ""),
    ("exit_status", "println(\"bye\")\nkotlin.system.exitProcess(7)\n", ""),
    ("classes_and_lambdas", "data class P(val a: Int, val b: String)\nobject Counter { var n = 0 }\n"
                            "val xs = listOf(3, 1, 2).map { P(it, \"v$it\") }.sortedBy { it.a }\n"
                            "xs.forEach { Counter.n += it.a }\nprintln(xs)\nprintln(Counter.n)\n", ""),
    ("compile_error", "val x: Int = \"s\"\nprintln(x)\n", ""),
]


def reference(program: str, stdin: str, tmp_path) -> tuple[str, int, str]:
    """(stdout, exit status, stderr's first line) of ``kotlinc -script`` on the host."""
    workdir = tmp_path / f"ref{abs(hash(program))}"
    workdir.mkdir()
    (workdir / "main.kts").write_text(program, encoding="utf-8")
    env = {**os.environ, **BUILTIN_LANGUAGES["kotlin_script"].env}
    proc = subprocess.run(["kotlinc", "-script", "main.kts"], input=stdin, capture_output=True, text=True,
                          cwd=workdir, env=env, timeout=240)
    return proc.stdout, proc.returncode, (proc.stderr.splitlines() or [""])[0]


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


def test_every_program_gives_what_kotlinc_script_gives(executor, tmp_path):
    require_language(executor.languages, "kotlin_script")
    if shutil.which("kotlinc") is None:
        pytest.skip("kotlinc is not on this host's PATH (the reference)")
    requests = [ExecutionRequest(code=program, style=Style.STDIO, language="kotlin_script", limits=LIMITS,
                                 cases=(Case(stdin=stdin, expected_stdout=""),)) for _, program, stdin in PROGRAMS]
    with ThreadPoolExecutor(2) as pool:
        expected = list(pool.map(lambda p: reference(p[1], p[2], tmp_path), PROGRAMS))
    results = executor.execute_batch(requests)
    for (name, _, _), (stdout, status, stderr_head), result in zip(PROGRAMS, expected, results):
        if name == "compile_error":
            assert status == 1 and result.verdict is Verdict.COMPILE_ERROR, (name, result)
            assert result.compile is not None and result.compile.exit_code == 1
            assert "type mismatch" in stderr_head and "type mismatch" in result.error, (stderr_head, result.error)
            continue
        assert result.stdout == stdout, (name, result.stdout, stdout)
        assert (result.exit_code or 0) == status, (name, result.exit_code, status, result.stderr)
        assert (result.stderr.splitlines() or [""])[0] == stderr_head, (name, result.stderr, stderr_head)


def test_the_cases_of_a_submission_run_the_compiled_script(executor):
    require_language(executor.languages, "kotlin_script")
    # each case reads its number and says whether it runs as the compiled class (kotlinc -script leaves none)
    program = "val n = readLine()!!.trim().toLong()\nprintln(n * n)\nprintln(java.io.File(\"Main.class\").exists())\n"
    cases = tuple(Case(stdin=f"{n}\n", expected_stdout=f"{n * n}\ntrue\n") for n in range(1, 7))
    result = executor.execute(ExecutionRequest(code=program, style=Style.STDIO, language="kotlin_script",
                                               limits=LIMITS, cases=cases))
    assert result.verdict is Verdict.ACCEPTED, result
    assert [t.outcome for t in result.tests] == [CaseOutcome.PASSED] * len(cases)
    assert result.compile is not None and result.compile.exit_code == 0
