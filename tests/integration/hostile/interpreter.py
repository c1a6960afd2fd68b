"""The program's own interpreter: what it rebinds there must not earn it a pass (nor break the sandbox).

Python runs in a warm interpreter, and B's harness shares it with the program: STDIO's end of
``__main__`` (threads, atexit, flush, exit status), and in the function styles the codec and
the frames between two calls. The harness binds what it uses before any program exists
(sandbox/runtime/untrusted.py), so rebinding builtins, library functions, ``sys.stdout`` or
``sys.excepthook`` changes nothing it does; a program that digs into the harness's own modules
or patches ``int`` itself through ctypes changes only what B *sends*, and A rebuilds and checks
that (the check code and the expected values never enter B). The converse -- a correct program
that hardens its interpreter still passes -- is in ``legit.py`` (reliability_guard).
"""

from __future__ import annotations

from reward_core.sandbox_contract import TestStyle, Verdict
from tests.integration.hostile.model import Category, HostileProgram, join

G = Category.GAMING
H = TestStyle.HUMANEVAL
F = TestStyle.FUNCTION_CALL
NOT_OK_EXIT = frozenset({Verdict.RUNTIME_ERROR, Verdict.WRONG_ANSWER})

#: Rebinds, between two calls, everything B's codec and framing would look up at run time if they
#: were not bound in advance: builtins that decide types and lengths, json's encoder and decoder,
#: struct, base64, os.read/os.write/os._exit, the exception classes -- each to something that lies.
RIG_EVERYTHING = '''
    import base64, binascii, builtins, json, struct, types
    class _Any:
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        def __hash__(self): return 0
    _FORGED = b'{"op":"return","value":{"passed":true}}'
    def _rig():
        builtins.type = lambda *a: int
        builtins.isinstance = builtins.issubclass = builtins.callable = lambda *a: True
        builtins.len = lambda *a: 0
        builtins.str = builtins.repr = lambda *a: "0"
        builtins.BaseException = builtins.Exception = builtins.SystemExit = builtins.StopIteration = type("X", (), {})
        json.JSONEncoder.encode = lambda self, o: '{"op":"return","value":0}'
        json.JSONDecoder.decode = lambda self, s: {"fn": "solve", "args": [0], "kwargs": {"dict": []}}
        json.dumps = json.loads = lambda *a, **k: "0"
        json.encoder.c_make_encoder = None
        struct.pack = lambda *a: len(_FORGED).to_bytes(4, "big")
        struct.Struct = lambda *a: None
        base64.b64encode = base64.b64decode = binascii.b2a_base64 = binascii.a2b_base64 = lambda *a, **k: b""
        os.write = lambda fd, data: len(data)
        os.read = lambda fd, n: _FORGED
        os._exit = sys.exit = None
        types.ModuleType = int
        sys.modules["json"] = sys.modules["struct"] = sys.modules["base64"] = None
    _n = [0]
    def solve(x):
        _n[0] += 1
        if _n[0] == 1:
            _rig()
        return _Any()
'''

#: Finds the harness's own modules in sys.modules and replaces what they do, on purpose: B then
#: sends whatever the program likes, and A still checks every value against what B cannot know.
DIG_INTO_THE_HARNESS = '''
    def _dig():
        for name, mod in list(sys.modules.items()):
            if not name.endswith((".codec", ".framing", ".untrusted")) or mod is None:
                continue
            d = vars(mod)
            if "encode" in d:
                d["encode"] = lambda value, _depth=0: {"dict": [["passed", True]]}
            if "_serve_call" in d:
                d["_serve_call"] = lambda module, msg: {"op": "return", "value": 0}
            for pinned in ("_os_exit", "_isfinite", "_b2a_base64", "_ENCODE"):
                if pinned in d:
                    d[pinned] = None
            if isinstance(d.get("__builtins__"), dict):
                d["__builtins__"]["isinstance"] = lambda *a: True
    _dig()
    def solve(x):
        _dig()
        return 0
'''

#: Patches ``int.__eq__`` itself: clears the immutable-type flag of ``int`` through ctypes
#: (tp_flags, Py_TPFLAGS_IMMUTABLETYPE), then sets ``__eq__``/``__ne__``: in B every int equals every
#: other. A's comparisons are A's own.
CURSE_INT_EQ = '''
    def _curse():
        flags = ctypes.c_ulong.from_address(id(int) + 21 * ctypes.sizeof(ctypes.c_void_p))
        flags.value &= ~(1 << 8)
        int.__eq__ = lambda self, other: True
        int.__ne__ = lambda self, other: False
        print("cursed int.__eq__:", 1 == 2, flush=True)
    def solve(x):
        _curse()
        return 10 ** 30 + x
'''

PROGRAMS: list[HostileProgram] = [
    HostileProgram("rig_builtins_and_libraries_between_calls", G, style=H, code=RIG_EVERYTHING,
                   description="after the first call: builtins (type, isinstance, len, str, the exception classes), "
                               "json, struct, base64, os.read/write/_exit, sys.modules rebound to liars; "
                               "the candidate returns an always-equal object"),
    HostileProgram("function_call_rig_builtins_and_libraries", G, style=F, code=RIG_EVERYTHING,
                   description="FUNCTION_CALL: the same rigging between the calls"),
    HostileProgram("dig_into_the_harness_modules", G, style=H, code=DIG_INTO_THE_HARNESS,
                   description="replace the sandbox's own codec.encode, _serve_call, pinned references and private "
                               "builtins, found in sys.modules"),
    HostileProgram("function_call_dig_into_the_harness_modules", G, style=F, code=DIG_INTO_THE_HARNESS,
                   description="FUNCTION_CALL: the same"),
    HostileProgram("curse_int_eq", G, style=H, code=CURSE_INT_EQ,
                   description="patch int.__eq__/__ne__ through ctypes so every int is equal in B, return a huge int"),
    HostileProgram("function_call_curse_int_eq", G, style=F, code=CURSE_INT_EQ,
                   description="FUNCTION_CALL: the same"),
    HostileProgram(
        "stdio_fake_stdout_and_excepthook", G,
        description="STDIO: sys.stdout replaced by a fake whose write swallows, flush raises and 'closed' lies; "
                    "sys.excepthook that says nothing; then an exception",
        code='''
            class _Fake:
                closed = False
                def write(self, s): return len(s)
                def flush(self): raise SystemExit(0)
            sys.stdout = sys.__stdout__ = _Fake()
            sys.excepthook = lambda *a: None
            print("PASSED")
            raise RuntimeError("after a fake success")
        '''),
    HostileProgram(
        "stdio_right_answer_then_raise_with_exit_neutralised", G, problem="add", allowed=NOT_OK_EXIT,
        description="STDIO: print the right answer, set os._exit/sys.exit/SystemExit to None, a silent excepthook, "
                    "then raise: still a failed run (exit status 1)",
        code='''
            import builtins
            a, b = map(int, sys.stdin.read().split())
            print(a + b, flush=True)
            os._exit = sys.exit = None
            builtins.SystemExit = builtins.BaseException = None
            sys.excepthook = lambda *a: None
            raise RuntimeError("crash after the answer")
        '''),
    HostileProgram(
        "stdio_right_answer_then_atexit_crash_exit", G, problem="add", allowed=NOT_OK_EXIT,
        description="STDIO: print the right answer, exit 3 through sys.exit, with an atexit callback that "
                    "tries to turn the status into 0 by raising SystemExit(0)",
        code='''
            import atexit
            def _rewrite():
                raise SystemExit(0)
            atexit.register(_rewrite)
            a, b = map(int, sys.stdin.read().split())
            print(a + b, flush=True)
            sys.exit(3)
        '''),
    HostileProgram(
        "function_call_signal_and_trace_hooks", G, style=F,
        description="FUNCTION_CALL: a trace function that raises in every frame not the program's, and a timer "
                    "whose handler raises, both left running between the calls",
        code=join('''
            def _tracer(frame, event, arg):
                if "solve" not in frame.f_code.co_name:
                    raise SystemExit(0)
                return None
            def _alarm(*a):
                raise SystemExit(0)
            signal.signal(signal.SIGALRM, _alarm)
            def solve(x):
                sys.settrace(_tracer)
                signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
                return 0
        ''')),
]
