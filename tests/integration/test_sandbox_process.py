"""The process backend for real: bubblewrap slots, warm zygotes, every test style, limits, restarts.

One property per test. The hostile-program suite (test_sandbox_hostile.py) covers
attacks exhaustively; the few here pin the harness's own guarantees.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import pytest

from reward_core.sandbox_contract import (
    CaseOutcome,
    ExecutionRequest,
    InvalidExecutionRequest,
    LimitHit,
    Limits,
    OutputCompare,
    Verdict,
)
from reward_core.sandbox_contract import TestCase as Case
from reward_core.sandbox_contract import TestStyle as Style
from sandbox.factory import create_executor

pytestmark = [pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)"),
              pytest.mark.timeout(120)]

FAST = Limits(wall_s=3.0, cpu_s=3.0, memory_mb=256, scratch_mb=16, output_bytes=4096)

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
ADD = "def add(a, b):\n    return a + b\n"
ADD_CHECK = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n" \
            "    assert candidate(10, 5) == 15\n"


@pytest.fixture(scope="module")
def executor():
    ex = create_executor("process", concurrency=2)
    yield ex
    ex.close()


def humaneval(code: str, check: str = ADD_CHECK, entry: str = "add", limits: Limits = FAST, **kw) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.HUMANEVAL, check_code=check, entry_point=entry,
                            limits=limits, **kw)


def stdio(code: str, cases: list[tuple[str, str]], language: str = "python", limits: Limits = FAST,
          **kw) -> ExecutionRequest:
    return ExecutionRequest(code=code, style=Style.STDIO, language=language, limits=limits,
                            cases=[Case(stdin=i, expected_stdout=o) for i, o in cases], **kw)


def sandbox_processes(uids: set[int]) -> list[int]:
    """Host pids running as one of the slot uids: B's and anything they started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                uid = next(line for line in f if line.startswith("Uid:")).split()[1]
        except (OSError, StopIteration):
            continue
        if int(uid) in uids:
            found.append(int(entry))
    return found


def wait_no_sandbox_processes(uids: set[int], timeout_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := sandbox_processes(uids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# -- HUMANEVAL ---------------------------------------------------------------------------------------
def test_slots_report_full_isolation(executor):
    for hello in executor.hellos:
        assert hello["selftest"] == "ok" and hello["namespaces"] and hello["setuid"]


def test_humaneval_correct_solution_is_accepted(executor):
    r = executor.execute(humaneval(ADD, id="ok"))
    assert r.verdict is Verdict.ACCEPTED and r.id == "ok" and r.backend == "process"
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED] * 3 and r.pass_fraction == 1.0


def test_humaneval_wrong_solution_gets_per_case_credit(executor):
    r = executor.execute(humaneval("def add(a, b):\n    return a + b if a > 0 else 99\n"))
    assert r.verdict is Verdict.WRONG_ANSWER
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED, CaseOutcome.PASSED]
    assert r.tests_passed == 2 and "candidate(-1, 1) == 0" in r.tests[1].detail


def test_humaneval_syntax_error_is_a_compile_error(executor):
    r = executor.execute(humaneval("def add(a, b)\n    return a + b\n"))
    assert r.verdict is Verdict.COMPILE_ERROR and "SyntaxError" in r.error
    assert all(t.outcome is not CaseOutcome.PASSED for t in r.tests)


def test_humaneval_exception_in_candidate_is_a_runtime_error(executor):
    r = executor.execute(humaneval("def add(a, b):\n    raise ValueError('nope')\n"))
    assert r.verdict is Verdict.RUNTIME_ERROR and "ValueError" in r.tests[0].detail


def test_humaneval_check_may_use_helpers_defined_by_the_prompt(executor):
    code = "def double(x):\n    return 2 * x\n\ndef quad(x):\n    return double(double(x))\n"
    check = "def check(candidate):\n    assert candidate(3) == double(6)\n"
    assert executor.execute(humaneval(code, check, "quad")).passed


SHIFT_PROMPT = ('import string\n\ndef encode(s):\n    return "".join(chr(ord(c) + 1) for c in s)\n\n'
                'def decode(s):\n    """Invert encode()."""\n')
SHIFT_CHECK = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n" \
              "    assert candidate(encode('xyz')) == 'xyz'\n"


def test_trusted_prompt_helpers_are_the_ones_the_check_calls(executor):
    cheat = SHIFT_PROMPT + "    return s\n\ndef encode(s):\n    return s\n"   # encode() made the identity
    r = executor.execute(humaneval(cheat, SHIFT_CHECK, "decode", prompt=SHIFT_PROMPT))
    assert r.verdict is Verdict.WRONG_ANSWER and r.tests_passed == 0


def test_a_correct_completion_passes_with_the_trusted_prompt(executor):
    solution = SHIFT_PROMPT + "    return ''.join(chr(ord(c) - 1) for c in s)\n"
    assert executor.execute(humaneval(solution, SHIFT_CHECK, "decode", prompt=SHIFT_PROMPT)).passed


def test_the_trusted_prompt_never_replaces_the_candidate(executor):
    stub_only = SHIFT_PROMPT + "    return 'stub'\n"   # the prompt's decode() (returns None) must not be called
    r = executor.execute(humaneval(stub_only, "def check(candidate):\n    assert decode('b') == 'stub'\n"
                                   "    assert candidate('b') == 'stub'\n", "decode", prompt=SHIFT_PROMPT))
    assert r.passed


def test_a_failing_trusted_prompt_fails_every_case(executor):
    prompt = "import no_such_module_here\n\ndef add(a, b):\n    \"\"\"Add.\"\"\"\n"
    r = executor.execute(humaneval(ADD, prompt=prompt))
    assert r.verdict is not Verdict.ACCEPTED and r.tests_passed == 0 and r.tests_total == 3
    assert "prompt failed" in r.tests[0].detail


def test_a_prompt_that_does_not_compile_is_an_invalid_request(executor):
    with pytest.raises(InvalidExecutionRequest, match="prompt does not compile"):
        executor.execute(humaneval(ADD, prompt="def add(a, b):\n"))


def test_captured_stdout_is_returned(executor):
    r = executor.execute(humaneval("print('hello from B')\n" + ADD))
    assert r.passed and r.stdout == "hello from B\n"


# -- forgeries: none may pass ------------------------------------------------------------------------
@pytest.mark.parametrize("code", [
    "import sys\nsys.exit(0)\n" + ADD,
    "import os\nos._exit(0)\n" + ADD,
    "def add(a, b):\n    raise SystemExit(0)\n",
    "import os\ndef add(a, b):\n    os._exit(0)\n",
    "print('{\"status\": \"ok\", \"cases\": [{\"status\": \"passed\"}]}')\nprint('ALL TESTS PASSED')\n"
    "def add(a, b):\n    return None\n",
    "import sys, os\nos.close(1)\nos.close(2)\nsys.stdout = None\ndef add(a, b):\n    return 0\n",
    "class Eq:\n    def __eq__(self, o):\n        return True\n    __hash__ = object.__hash__\n"
    "def add(a, b):\n    return Eq()\n",
    "class I(int):\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return I(0)\n",
    "import builtins\nclass E(Exception):\n    pass\nbuiltins.AssertionError = E\ndef add(a, b):\n    return 0\n",
    "import gc, sys\ndef add(a, b):\n    for o in gc.get_objects():\n        if isinstance(o, str) and 'assert' in o:\n"
    "            return 'found'\n    return 0\n",
    "import os, signal\nos.kill(os.getppid() or 1, signal.SIGKILL)\ndef add(a, b):\n    return 0\n",
    "import time\nprint('PASS')\ndef add(a, b):\n    time.sleep(30)\n",
])
def test_forgery_is_never_a_pass(executor, code):
    r = executor.execute(humaneval(code))
    assert not r.passed and r.verdict is not Verdict.SANDBOX_ERROR, r


def test_check_code_never_reaches_the_program(executor):
    code = ("import gc, os\n"
            "def add(a, b):\n"
            "    seen = [o for o in gc.get_objects() if isinstance(o, str) and 'SECRET_MARKER' in o]\n"
            "    hits = []\n"
            "    needle = ('SECRET' + '_MARKER').encode()\n"
            # /opt/python: the interpreter. A file named like the check, anywhere we write, or one holding
            # its text, anywhere the program can read (/etc holds the toolchains' files: content only).
            "    for top in ('/scratch', '/tmp', '/opt/sandbox', '/etc', '/dev/shm', '/'):\n"
            "        for root, dirs, files in os.walk(top):\n"
            "            for f in files:\n"
            "                p = os.path.join(root, f)\n"
            "                if 'check' in f and top != '/etc':\n"
            "                    hits.append(p)\n"
            "                try:\n"
            "                    if not os.path.islink(p) and os.path.getsize(p) < (1 << 20):\n"
            "                        with open(p, 'rb') as fh:\n"
            "                            if needle in fh.read():\n"
            "                                hits.append(p)\n"
            "                except OSError:\n"
            "                    pass\n"
            "            if top == '/':\n"
            "                break\n"
            "    return [len(seen), hits]\n")
    check = "def check(candidate):\n    SECRET_MARKER = 1\n    assert candidate(1, 2) == [0, []]\n"
    assert executor.execute(humaneval(code, check)).passed


# -- FUNCTION_CALL -----------------------------------------------------------------------------------
def test_function_call_per_case_outcomes(executor):
    req = ExecutionRequest(code="def f(xs, k=1):\n    return [x * k for x in xs] if xs else None\n",
                           style=Style.FUNCTION_CALL, entry_point="f", limits=FAST,
                           cases=[Case(args=[[1, 2]], kwargs={"k": 3}, expected=[3, 6]),
                                  Case(args=[[]], expected=[]),
                                  Case(args=[[1]], expected=[1])])
    r = executor.execute(req)
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED, CaseOutcome.PASSED]
    assert r.verdict is Verdict.WRONG_ANSWER and "expected [], got None" in r.tests[1].detail


def test_function_call_tuples_match_lists_and_floats_use_tolerance(executor):
    req = ExecutionRequest(code="def f(x):\n    return (x / 3, x)\n", style=Style.FUNCTION_CALL,
                           entry_point="f", limits=FAST, compare=OutputCompare(float_tolerance=1e-6),
                           cases=[Case(args=[1], expected=[0.333333333, 1])])
    assert executor.execute(req).passed


def test_function_call_leetcode_solution_class(executor):
    code = "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n"
    req = ExecutionRequest(code=code, style=Style.FUNCTION_CALL, entry_point="twoSum", limits=FAST,
                           cases=[Case(args=[[2, 7], 9], expected=[0, 1])])
    assert executor.execute(req).passed


# -- STDIO -------------------------------------------------------------------------------------------
SUM = "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))\n"


def test_stdio_python_partial_credit(executor):
    r = executor.execute(stdio(SUM, [("1 2\n", "3\n"), ("5 5", "11"), ("0\r\n", "0")]))
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.FAILED, CaseOutcome.PASSED]
    assert r.verdict is Verdict.WRONG_ANSWER and r.pass_fraction == pytest.approx(2 / 3)


def test_stdio_python_nonzero_exit_is_a_runtime_error(executor):
    r = executor.execute(stdio("import sys\nprint(1)\nsys.exit(3)\n", [("", "1")]))
    assert r.verdict is Verdict.RUNTIME_ERROR and r.exit_code == 3


def test_stdio_python_syntax_error_is_a_compile_error(executor):
    r = executor.execute(stdio("print(1\n", [("", "1"), ("", "1")]))
    assert r.verdict is Verdict.COMPILE_ERROR and "SyntaxError" in r.error
    assert [t.outcome for t in r.tests] == [CaseOutcome.NOT_RUN] * 2


CPP_SUM = "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;return 0;}\n"


def test_cpp_stdio_is_compiled_once_and_run_per_case(executor):
    r = executor.execute(stdio(CPP_SUM, [("1 2", "3"), ("40 2", "42"), ("1 1", "3")], language="cpp"))
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.FAILED]


def test_cpp_compile_error(executor):
    r = executor.execute(stdio("int main( { return 0; }\n", [("", "")], language="cpp"))
    assert r.verdict is Verdict.COMPILE_ERROR and "error" in r.error


#: What a bash program leaves in its slot: its source file only (the zygote unlinks it without the
#: sweep's fork), or more, or something else in the source's place (the full sweep removes it).
LEFTOVERS = {"the source only": "echo ok",
             "a file beside the source": "echo x > beside.txt; echo ok",
             "a directory in the source's place": "rm main.sh; mkdir main.sh; echo ok",
             "a link in the source's place": "rm main.sh; ln -s /etc/hostname main.sh; echo ok",
             "a file in /dev/shm": "echo x > /dev/shm/left; echo ok"}


@pytest.fixture(scope="module")
def one_slot():
    ex = create_executor("process", concurrency=1)
    yield ex
    ex.close()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("code", list(LEFTOVERS.values()), ids=list(LEFTOVERS))
def test_nothing_of_a_bash_execution_reaches_the_next_one(one_slot, code):
    first = one_slot.execute(stdio(code, [("", "ok")], language="bash"))
    assert first.verdict is Verdict.ACCEPTED, first.error
    listing = one_slot.execute(stdio("import os\nprint(sorted(os.listdir('.')), sorted(os.listdir('/dev/shm')))",
                                     [("", "[] []")]))
    assert listing.verdict is Verdict.ACCEPTED, (listing.stdout, listing.error)


# -- limits ------------------------------------------------------------------------------------------
SPAWNER = """
import os, time
for _ in range(4):
    if os.fork() == 0:
        os.setsid()
        while True:
            time.sleep(0.1)
while True:
    pass
"""


def test_timeout_kills_the_whole_process_tree(executor):
    t0 = time.monotonic()
    r = executor.execute(stdio(SPAWNER, [("", "")], limits=Limits(wall_s=1.0, cpu_s=5.0)))
    assert r.verdict is Verdict.TIMEOUT and r.limit_hit is LimitHit.WALL_TIME
    assert time.monotonic() - t0 < 5.0
    assert wait_no_sandbox_processes({h["uid"] for h in executor.hellos}) == []


#: clone(CLONE_PARENT | SIGCHLD): the child would be the template zygote's (B's parent), which reaps only
#: the B's it forked -- a zombie of the slot uid for the slot's life, in the programs' pids cgroup.
CLONE_PARENT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
clone, exit_ = {"x86_64": (56, 60), "aarch64": (220, 93)}[os.uname().machine]
pid = libc.syscall(clone, 0x8000 | 17, 0, 0, 0, 0)
if pid == 0:
    libc.syscall(exit_, 0)
print(pid, os.strerror(ctypes.get_errno()) if pid < 0 else "")
"""


def test_a_program_cannot_give_the_zygote_a_child(executor):
    r = executor.execute(stdio(CLONE_PARENT, [("", "-1 Operation not permitted")]))
    assert r.verdict is Verdict.ACCEPTED, (r.stdout, r.error)


def test_cpu_limit(executor):
    r = executor.execute(stdio("while True:\n    pass\n", [("", "")], limits=Limits(wall_s=5.0, cpu_s=1.0)))
    assert r.verdict is Verdict.TIMEOUT and r.limit_hit is LimitHit.CPU_TIME


def test_memory_limit(executor):
    r = executor.execute(stdio("x = bytearray(400 * 1024 * 1024)\nprint(len(x))\n", [("", "")],
                               limits=Limits(memory_mb=128)))
    assert r.verdict is Verdict.MEMORY_LIMIT and r.limit_hit is LimitHit.MEMORY


def test_a_programs_processes_are_held_to_its_memory_limit_together(executor):
    r = executor.execute(stdio(CHILDREN_OVER_TOGETHER, [("", "")], limits=TOGETHER_LIMITS))
    assert r.verdict is Verdict.MEMORY_LIMIT, r


def test_a_program_within_its_memory_limit_across_processes_is_accepted(executor):
    r = executor.execute(stdio(CHILDREN_WITHIN_TOGETHER, [("", "True\n")], limits=TOGETHER_LIMITS))
    assert r.verdict is Verdict.ACCEPTED, r

def test_memory_limit_in_a_humaneval_candidate(executor):
    r = executor.execute(humaneval("def add(a, b):\n    return len(bytearray(900 << 20))\n",
                                   limits=Limits(memory_mb=128)))
    assert r.verdict is Verdict.MEMORY_LIMIT


def test_output_is_capped(executor):
    r = executor.execute(stdio("while True:\n    print('x' * 100)\n", [("", "")]))
    assert r.verdict is Verdict.OUTPUT_LIMIT and r.limit_hit is LimitHit.OUTPUT
    assert len(r.stdout) <= FAST.output_bytes


def test_no_network(executor):
    code = ("import socket\n"
            "def add(a, b):\n"
            "    try:\n"
            "        socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
            "        return 'connected'\n"
            "    except OSError:\n"
            "        return a + b\n")
    assert executor.execute(humaneval(code)).passed


def test_host_files_and_environment_are_invisible(executor, tmp_path, monkeypatch):
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret")
    monkeypatch.setenv("REWARD_TEST_SECRET", "s3cret")
    code = ("import json, os\n"
            f"paths = ['/work', '/home', '/etc/shadow', '/etc/passwd', {str(canary)!r}, {str(tmp_path)!r}]\n"
            "print(json.dumps({'seen': [p for p in paths if os.path.exists(p)], 'env': sorted(os.environ),\n"
            "                  'root': sorted(os.listdir('/root')) if os.path.isdir('/root') else [],\n"
            "                  'uid': os.getuid(), 'procs': [p for p in os.listdir('/proc') if p.isdigit()]}))\n")
    r = executor.execute(stdio(code, [("", "")]))
    import json
    seen = json.loads(r.stdout)
    assert seen["seen"] == [] and seen["env"] == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]
    assert seen["root"] in ([], [".pyenv"]) and seen["uid"] in {h["uid"] for h in executor.hellos}
    assert len(seen["procs"]) == 1  # only itself: A, the zygote, bwrap are hidden


# -- concurrency and recovery ------------------------------------------------------------------------
def test_batch_results_come_back_in_order(executor):
    reqs = [humaneval(ADD if i % 3 else "def add(a, b):\n    return 0\n", id=str(i)) for i in range(30)]
    results = executor.execute_batch(reqs)
    assert [r.id for r in results] == [str(i) for i in range(30)]
    assert [r.passed for r in results] == [bool(i % 3) for i in range(30)]


def test_many_threads_share_the_slots(executor):
    out: dict[int, bool] = {}

    def work(i: int) -> None:
        out[i] = executor.execute(humaneval(ADD, id=str(i))).passed

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: True for i in range(16)}


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def test_a_killed_slot_answers_sandbox_error_and_is_restarted():
    ex = create_executor("process", concurrency=1)
    try:
        bwrap_pid = ex.pool._slots[0].handle.extra["pid"]
        timer = threading.Timer(0.5, os.kill, (bwrap_pid, signal.SIGKILL))
        timer.start()
        r = ex.execute(humaneval("import time\ntime.sleep(2)\n" + ADD))
        timer.join()
        assert r.verdict is Verdict.SANDBOX_ERROR and not r.verdict.is_verdict_on_code
        assert ex.execute(humaneval(ADD)).passed
        assert ex.pool.stats.restarts == 1
    finally:
        ex.close()


def test_a_dead_template_zygote_is_detected_and_replaced():
    ex = create_executor("process", concurrency=1)
    try:
        init = _children(ex.pool._slots[0].handle.extra["pid"])[0]
        supervisor = _children(init)[0]
        zygote = _children(supervisor)[0]
        os.kill(zygote, signal.SIGKILL)
        time.sleep(0.2)
        assert ex.execute(humaneval(ADD)).verdict is Verdict.SANDBOX_ERROR
        assert ex.execute(humaneval(ADD)).passed
    finally:
        ex.close()


# -- pipelined calls keep per-case semantics ---------------------------------------------------------
def test_a_hanging_call_times_out_only_from_that_case_on(executor):
    code = "import time\ndef add(a, b):\n    if a == 10:\n        time.sleep(60)\n    return a + b\n"
    r = executor.execute(humaneval(code, limits=Limits(wall_s=1.5, cpu_s=3)))
    assert [t.outcome for t in r.tests] == [CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.TIMEOUT]
    assert r.verdict is Verdict.TIMEOUT


def test_calls_run_in_check_order_even_when_the_check_diverges_from_the_literal_calls(executor):
    code = "seen = []\ndef f(x):\n    seen.append(x)\n    return list(seen)\n"
    check = ("def check(candidate):\n"
             "    assert candidate(1) == [1]\n"
             "    y = 5\n"
             "    assert candidate(y) == [1, 5]\n"          # not a literal: pipelining stops here
             "    assert candidate(2) == [1, 5, 2]\n")
    assert executor.execute(humaneval(code, check, "f")).passed


def test_a_stuck_slot_hits_the_host_deadline_and_is_replaced(monkeypatch):
    """The host's own deadline, with a fake zygote that says hello and then never answers."""
    import subprocess
    import sys

    from sandbox import zygote_client
    from sandbox.runtime import framing
    from sandbox.slot_pool import SlotPool

    hello = framing.pack({"op": "hello", "selftest": "ok"})
    script = f"import os, sys, time\nos.write(1, {hello!r})\ntime.sleep(600)\n"
    procs: list[subprocess.Popen] = []

    def start(index: int) -> zygote_client.SlotHandle:
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        procs.append(proc)
        return zygote_client.SlotHandle(zygote_client.PipeTransport.from_popen(proc), proc.kill)

    monkeypatch.setattr(zygote_client, "HOST_MARGIN_S", 0.5)
    pool = SlotPool(1, start, backend="fake")
    try:
        t0 = time.monotonic()
        r = pool.execute(humaneval(ADD, limits=Limits(wall_s=0.5)))
        assert r.verdict is Verdict.SANDBOX_ERROR and "deadline" in r.error
        assert time.monotonic() - t0 < 3.0
        assert pool.stats.restarts == 1
        procs[0].wait(timeout=5)                      # the stuck slot was killed
    finally:
        pool.close()
        for p in procs:
            p.kill()


# -- files in, files out, run arguments, the compile step (SandboxFusion's files/fetch_files/args) ---

READ_THEN_SPOIL = "import os\nprint(open('in.txt').read())\nos.remove('in.txt')\nopen('junk', 'w').write('x')\n"
CPP_READ_THEN_SPOIL = ('#include <cstdio>\n#include <fstream>\n#include <iostream>\n'
                       'int main() { std::ifstream f("in.txt"); std::string s; f >> s; std::cout << s << std::endl;'
                       ' std::remove("in.txt"); }\n')


@pytest.mark.parametrize(("language", "code"), [("python", READ_THEN_SPOIL), ("cpp", CPP_READ_THEN_SPOIL)])
def test_every_case_sees_the_request_files_fresh(executor, language, code):
    result = executor.execute(stdio(code, [("", "data\n")] * 3, language, limits=Limits(wall_s=20, cpu_s=20),
                                    files={"in.txt": b"data"}))
    assert result.verdict is Verdict.ACCEPTED, result.error


def test_the_compile_step_sees_the_files_and_reports_its_own_output(executor):
    code = '#include <iostream>\n#include "lib/twice.h"\n#warning from the compiler\n' \
           'int main() { std::cout << twice(21) << std::endl; }\n'
    result = executor.execute(stdio(code, [("", "42\n")], "cpp", limits=Limits(wall_s=20, cpu_s=20),
                                    files={"lib/twice.h": b"int twice(int x) { return 2 * x; }\n"}))
    assert result.verdict is Verdict.ACCEPTED, result.error
    assert result.compile.exit_code == 0 and "from the compiler" in result.compile.stderr and result.compile.ok


def test_fetched_files_are_read_after_the_last_case(executor):
    code = "open('log.txt', 'a').write(input() + '\\n')\nprint('ok')"
    result = executor.execute(stdio(code, [("1", "ok\n"), ("2", "ok\n"), ("3", "ok\n")],
                                    fetch_files=("log.txt", "absent.txt")))
    assert result.verdict is Verdict.ACCEPTED and result.files == {"log.txt": b"1\n2\n3\n"}


def test_args_reach_the_program_and_not_the_compiler(executor):
    code = '#include <iostream>\nint main(int n, char** v) { for (int i = 1; i < n; i++) std::cout << v[i] << "|"; }\n'
    result = executor.execute(stdio(code, [("", "-o|x y|")], "cpp", limits=Limits(wall_s=20, cpu_s=20),
                                    args=("-o", "x y")))
    assert result.verdict is Verdict.ACCEPTED, result.error


def test_a_fifo_or_directory_left_for_fetching_means_no_file_not_a_stall(executor):
    code = "import os\nos.mkfifo('out.txt')\nos.mkdir('d')\nprint('ok')"
    result = executor.execute(stdio(code, [("", "ok\n")], fetch_files=("out.txt", "d")))
    assert result.verdict is Verdict.ACCEPTED and result.files == {}


def test_a_timed_out_case_keeps_its_partial_output(executor):
    result = executor.execute(stdio("print('partial', flush=True)\nwhile True:\n    pass", [("", "x\n")],
                                    limits=Limits(wall_s=1, cpu_s=1)))
    assert result.verdict is Verdict.TIMEOUT and result.stdout == "partial\n" and result.exit_code is None


def test_files_fetch_files_and_args_are_for_stdio_tests_only(executor):
    with pytest.raises(InvalidExecutionRequest, match="stdio tests only"):
        executor.execute(humaneval(ADD, files={"a.txt": b"1"}))
