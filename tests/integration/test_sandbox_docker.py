"""The sandbox's Docker backend, for real: a Docker engine, the locally built runner image, warm containers.

The session fixture ``docker_executor`` (tests/docker_fixtures.py) starts dockerd
if none runs and builds the image once per machine; under SANDBOX_REQUIRE_DOCKER=1
(CI) a missing engine fails instead of skipping.
"""

from __future__ import annotations

import textwrap
import time

import pytest

from reward_core.sandbox_contract import (
    CaseOutcome,
    ExecutionRequest,
    Limits,
    Verdict,
)
from reward_core.sandbox_contract import (
    TestCase as Case,
)
from reward_core.sandbox_contract import (
    TestStyle as Style,
)

pytestmark = pytest.mark.docker

ADD = "def add(a, b):\n    return a + b\n"
ADD_CHECK = textwrap.dedent("""\
    def check(candidate):
        assert candidate(2, 3) == 5
        assert candidate(-1, 1) == 0
""")
FAST = Limits(wall_s=5, cpu_s=5)

#: Six children of 100 MB each: every process stays under memory_mb, the program's processes together do not.
CHILDREN_OVER_TOGETHER = """\
import os, time
for _ in range(6):
    if os.fork() == 0:
        hog = bytearray(b"\\x01") * (100 << 20)
        time.sleep(60)
        os._exit(0)
time.sleep(60)
"""
#: Three children of 60 MB and a 20 MB file in the scratch directory: within memory_mb + scratch_mb together.
CHILDREN_WITHIN_TOGETHER = """\
import os
with open("data.bin", "wb") as f:
    f.write(b"x" * (20 << 20))
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        hog = bytearray(b"\\x01") * (60 << 20)
        os._exit(0 if hog[-1] == 1 else 1)
    kids.append(pid)
print(all(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0 for pid in kids))
"""
TOGETHER_LIMITS = Limits(wall_s=20.0, cpu_s=20.0, memory_mb=256, scratch_mb=32, file_size_mb=32, max_processes=32)


def humaneval(code: str, check: str = ADD_CHECK, entry_point: str = "add", **kw) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.HUMANEVAL, check_code=check, entry_point=entry_point,
                            limits=kw.pop("limits", FAST), **kw)


def stdio(code: str, cases: list[tuple[str, str]], language: str = "python", limits: Limits = FAST) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=limits,
                            cases=tuple(Case(stdin=i, expected_stdout=o) for i, o in cases))


def run_probe(executor, code: str, limits: Limits = FAST):
    """A Python program run as STDIO with one case whose expected output is "ok"."""
    return executor.execute(stdio(textwrap.dedent(code), [("", "ok\n")], limits=limits))


# -- the three test styles, both languages ---------------------------------------------------------


def test_humaneval_correct_solution_is_accepted(docker_executor):
    result = docker_executor.execute(humaneval(ADD))
    assert result.verdict is Verdict.ACCEPTED, result
    assert result.backend == "docker"
    assert [t.outcome for t in result.tests] == [CaseOutcome.PASSED, CaseOutcome.PASSED]


def test_humaneval_wrong_solution_is_wrong_answer(docker_executor):
    result = docker_executor.execute(humaneval("def add(a, b):\n    return a - b if a < 0 else a + b\n"))
    assert result.verdict is Verdict.WRONG_ANSWER, result
    assert [t.outcome for t in result.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED]


def test_stdio_python_cases_are_judged_on_the_host(docker_executor):
    code = "a, b = map(int, input().split())\nprint(a + b if a < 100 else 0)\n"
    result = docker_executor.execute(stdio(code, [("2 3\n", "5\n"), ("100 1\n", "101\n")]))
    assert result.verdict is Verdict.WRONG_ANSWER, result
    assert [t.outcome for t in result.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED]


def test_function_call_values_are_compared_on_the_host(docker_executor):
    cases = (Case(args=[2, 3], expected=5), Case(args=[[1, 2], [3]], expected=[1, 2, 3]))
    result = docker_executor.execute(ExecutionRequest(code=ADD, style=Style.FUNCTION_CALL, entry_point="add",
                                                      cases=cases, limits=FAST))
    assert result.verdict is Verdict.ACCEPTED, result


def test_cpp_program_is_compiled_with_gpp_and_run_per_case(docker_executor):
    code = "#include <iostream>\nint main(){long a,b; std::cin>>a>>b; std::cout<<a*b<<\"\\n\";}\n"
    result = docker_executor.execute(stdio(code, [("6 7\n", "42\n"), ("3 3\n", "9\n")], language="cpp",
                                           limits=Limits(wall_s=20, cpu_s=10, compile_wall_s=60)))
    assert result.verdict is Verdict.ACCEPTED, result


def test_cpp_that_does_not_compile_is_a_compile_error(docker_executor):
    result = docker_executor.execute(stdio("int main( {", [("", "")], language="cpp",
                                           limits=Limits(wall_s=20, compile_wall_s=60)))
    assert result.verdict is Verdict.COMPILE_ERROR, result


# -- isolation inside the container ----------------------------------------------------------------


def test_code_has_no_network(docker_executor):
    result = run_probe(docker_executor, """\
        import socket
        names = [n for _, n in socket.if_nameindex()]
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            print("connected")
        except OSError:
            print("ok" if names == ["lo"] else f"interfaces {names}")
    """)
    assert result.verdict is Verdict.ACCEPTED, result


def test_root_filesystem_is_read_only(docker_executor):
    result = run_probe(docker_executor, """\
        import errno
        bad = []
        for path in ("/usr/bin/x", "/etc/x", "/opt/sandbox/runtime/x.py", "/var/tmp/x", "/x"):
            try:
                open(path, "w").close()
                bad.append(path)
            except OSError:
                pass
        print("ok" if not bad else f"wrote {bad}")
    """)
    assert result.verdict is Verdict.ACCEPTED, result


def test_code_runs_as_an_unprivileged_uid_without_capabilities(docker_executor):
    result = run_probe(docker_executor, """\
        import os
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
        caps = {k: int(status[k], 16) for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")}
        nnp = status["NoNewPrivs"].strip()
        ok = os.getuid() != 0 and os.geteuid() != 0 and os.getgid() != 0 and not any(
            caps[k] for k in ("CapEff", "CapPrm", "CapAmb")) and nnp == "1"
        print("ok" if ok else f"uid {os.getuid()} caps {caps} nnp {nnp}")
    """)
    assert result.verdict is Verdict.ACCEPTED, result


def test_scratch_directory_is_writable_and_executable(docker_executor):
    result = run_probe(docker_executor, """\
        import os, stat, subprocess
        with open("tool.sh", "w") as f:
            f.write("#!/bin/sh\\necho ok\\n")
        os.chmod("tool.sh", 0o700)
        print(subprocess.run(["./tool.sh"], capture_output=True, text=True).stdout.strip())
    """)
    assert result.verdict is Verdict.ACCEPTED, result


def test_memory_limit_stops_a_large_allocation(docker_executor):
    code = "def add(a, b):\n    x = bytearray(1 << 31)\n    return a + b\n"
    result = docker_executor.execute(humaneval(code, limits=Limits(wall_s=5, memory_mb=256)))
    assert result.verdict in (Verdict.MEMORY_LIMIT, Verdict.RUNTIME_ERROR), result


def test_a_programs_processes_are_held_to_its_memory_limit_together(docker_executor):
    # The container's cgroup also holds the supervisor, the zygote, the fork servers and a slack (hundreds
    # of MB over memory_mb): the supervisor itself holds the program's processes to memory_mb + scratch_mb.
    result = docker_executor.execute(stdio(CHILDREN_OVER_TOGETHER, [("", "")], limits=TOGETHER_LIMITS))
    assert result.verdict is Verdict.MEMORY_LIMIT, result


def test_a_program_within_its_memory_limit_across_processes_is_accepted(docker_executor):
    result = docker_executor.execute(stdio(CHILDREN_WITHIN_TOGETHER, [("", "True\n")], limits=TOGETHER_LIMITS))
    assert result.verdict is Verdict.ACCEPTED, result


# -- containers: reuse, replacement, clean-up ------------------------------------------------------


def test_many_executions_reuse_the_same_few_containers(docker_executor):
    before = docker_executor.containers_started
    results = docker_executor.execute_batch([humaneval(ADD, id=str(i)) for i in range(24)])
    assert [r.verdict for r in results] == [Verdict.ACCEPTED] * 24
    assert docker_executor.containers_started == before
    assert len(docker_executor.container_ids()) == 2


def test_a_timeout_is_killed_inside_and_the_container_is_reused(docker_executor):
    before = docker_executor.containers_started
    hang = humaneval("def add(a, b):\n    while True:\n        pass\n", limits=Limits(wall_s=1, cpu_s=5))
    started = time.monotonic()
    result = docker_executor.execute(hang)
    assert result.verdict is Verdict.TIMEOUT, result
    assert time.monotonic() - started < 10
    after = docker_executor.execute_batch([humaneval(ADD, id=str(i)) for i in range(4)])
    assert [r.verdict for r in after] == [Verdict.ACCEPTED] * 4
    assert docker_executor.containers_started == before      # the supervisor killed it: no container replaced


def test_leftover_files_and_processes_do_not_reach_the_next_execution(docker_executor):
    leave = run_probe(docker_executor, """\
        import os, subprocess
        open("/tmp/left-by-previous", "w").write("x")
        open("/dev/shm/left-by-previous", "w").write("x")
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        print("ok")
    """)
    assert leave.verdict is Verdict.ACCEPTED, leave
    for _ in range(4):   # every container of the pool
        look = run_probe(docker_executor, """\
            import os
            found = [p for p in ("/tmp/left-by-previous", "/dev/shm/left-by-previous") if os.path.exists(p)]
            sleepers = [p for p in os.listdir("/proc")
                        if p.isdigit() and b"sleep" in open(f"/proc/{p}/cmdline", "rb").read()]
            print("ok" if not found and not sleepers else f"found {found} sleepers {sleepers}")
        """)
        assert look.verdict is Verdict.ACCEPTED, look


def test_a_container_killed_between_executions_is_replaced_before_the_next_one(docker_executor):
    import docker

    client = docker.from_env()
    old = docker_executor.container_ids()
    for container_id in old:
        client.containers.get(container_id).kill()
    _wait_until_gone(client, old)
    results = docker_executor.execute_batch([humaneval(ADD, id=str(i)) for i in range(6)])
    assert [r.verdict for r in results] == [Verdict.ACCEPTED] * 6, results
    assert not set(old) & set(docker_executor.container_ids())


def _wait_until_gone(client, ids, timeout_s: float = 15.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [c.id for c in client.containers.list(all=True) if c.id in ids]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def test_an_unresponsive_container_is_replaced_at_the_host_deadline(docker_runner_image):
    import docker

    from sandbox.factory import create_executor

    executor = create_executor(backend="docker", concurrency=1, image=docker_runner_image)
    try:
        assert executor.execute(humaneval(ADD)).verdict is Verdict.ACCEPTED
        (container_id,) = executor.container_ids()
        docker.from_env().containers.get(container_id).pause()   # the zygote and A freeze: only the host can notice
        started = time.monotonic()
        result = executor.execute(humaneval(ADD, limits=Limits(wall_s=1, compile_wall_s=1)))
        assert result.verdict is Verdict.SANDBOX_ERROR, result
        assert time.monotonic() - started < 15
        assert executor.execute(humaneval(ADD)).verdict is Verdict.ACCEPTED
        assert executor.container_ids() != [container_id]
    finally:
        executor.close()


def test_close_removes_every_container(docker_runner_image):
    import docker

    from sandbox.factory import create_executor

    executor = create_executor(backend="docker", concurrency=2, image=docker_runner_image)
    assert executor.execute(humaneval(ADD)).verdict is Verdict.ACCEPTED
    ids = executor.container_ids()
    executor.close()
    assert not _wait_until_gone(docker.from_env(), ids)


def test_files_in_fetch_files_out_and_args_in_a_container(docker_executor):
    """Container mode has no shared scratch: a compiled program's steps share a holder's directory."""
    code = ('#include <fstream>\n#include <iostream>\nint main(int n, char** v) { std::ifstream f("in.txt");'
            ' long x; f >> x; std::cout << x * 2 << " " << v[1] << std::endl; std::ofstream("out.txt") << "made"; }\n')
    request = ExecutionRequest(code=code, style=Style.STDIO, language="cpp", limits=Limits(wall_s=20, cpu_s=20),
                               cases=(Case(stdin="", expected_stdout="42 arg\n"),) * 2, files={"in.txt": b"21"},
                               fetch_files=("out.txt",), args=("arg",))
    result = docker_executor.execute(request)
    assert result.verdict is Verdict.ACCEPTED, result.error
    assert result.files == {"out.txt": b"made"} and result.compile.exit_code == 0
