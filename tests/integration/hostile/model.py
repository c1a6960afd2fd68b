"""What a hostile program is, and how it becomes an ExecutionRequest for one test session.

A program is data: source code with ``@@NAME@@`` placeholders that the test fills in
with what only this session knows (where the host's canary files are, which loopback
ports it listens on, the marker its processes carry). Secrets themselves (canary file
contents, the host's secret environment value, the expected values of the oracle
problems) are never written into a program: a program that prints one has read it.

The problems the programs attack:

* ``oracle`` -- unsolvable without the expected values: ``solve(k)`` must return a
  random number the session drew (HUMANEVAL check code, FUNCTION_CALL expected values,
  STDIO expected output). Any pass is a successful attack.
* ``oracle_abs`` -- the same, with HumanEval's usual float idiom
  ``assert abs(candidate(k) - v) < 1e-6``: the check calls a builtin the program may shadow.
* ``helper`` -- HumanEval/38-style: the check calls a helper the *prompt* defines
  (``assert candidate(encode(s)) == s``); the program is prompt + completion.
* ``add`` -- solvable (``a + b``), for attacks that print the right answer and then
  crash, hang or exit non-zero, or answer some calls right and then vanish.
* ``canary`` -- STDIO whose expected output is the content of the host's canary file:
  an escape that prints it would pass.

A program may also bring its own HumanEval check code (``check``): the attacker is then
whoever sends the reference, whose check code the trusted supervisor runs. It must end
in a failing assert (never a pass), and reports an escape in an assert message.
"""

from __future__ import annotations

import enum
import secrets
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from reward_core.sandbox_contract import ExecutionRequest, Limits, TestCase, TestStyle, Verdict


class Category(str, enum.Enum):
    ESCAPE = "escape"
    EXHAUSTION = "exhaustion"
    PERSISTENCE = "persistence"
    GAMING = "gaming"


#: A hostile program may be judged anything but a pass, and never SANDBOX_ERROR: an
#: attack that makes the sandbox fail turns a 0 reward into "unscored" (a trainer masks
#: it), which is itself a way to game the reward.
NOT_A_PASS = frozenset(set(Verdict) - {Verdict.ACCEPTED, Verdict.SANDBOX_ERROR})
TIMEOUT = frozenset({Verdict.TIMEOUT})
KILLED_BY_LIMIT = frozenset({Verdict.TIMEOUT, Verdict.MEMORY_LIMIT, Verdict.OUTPUT_LIMIT, Verdict.RUNTIME_ERROR})


@dataclass(frozen=True)
class HostileProgram:
    name: str
    category: Category
    code: str
    description: str
    style: TestStyle = TestStyle.STDIO
    language: str = "python"
    problem: str = "oracle"                      # oracle | oracle_abs | helper | helper_no_prompt | add | canary
    allowed: frozenset[Verdict] = NOT_A_PASS     # acceptable verdicts (never ACCEPTED)
    #: Another program run right after (several times, so every slot runs it): it must
    #: not find what this one tried to leave behind (it prints the escape marker if so).
    followup: str = ""
    #: Seconds to wait after the run before the host looks (delayed actions).
    settle_s: float = 0.0
    #: Sample the host's MemAvailable during the run (memory balloons across processes).
    watch_memory: bool = False
    limits: Mapping[str, float] = field(default_factory=dict)
    #: Run a benign "victim" execution (on every slot) first: its program and check code carry
    #: a secret this program must not be able to find (other rollouts' code, other checks).
    after_victim: bool = False
    #: A weakness known and accepted for now: the test is an expected failure (strict) with this reason.
    known_gap: str = ""
    #: Prepend PY_PRELUDE (helpers ``_esc``, ``_read``, ``_libc``) to a Python program.
    prelude: bool = True
    #: HUMANEVAL only: hostile check code (placeholders filled, no prelude: it runs in the supervisor,
    #: whose stdout is the host protocol) instead of the problem's; ``code`` is then the candidate.
    check: str = ""

    def __post_init__(self) -> None:
        if Verdict.ACCEPTED in self.allowed or Verdict.SANDBOX_ERROR in self.allowed:
            raise ValueError(f"{self.name}: a hostile program may never be allowed to pass or break the sandbox")
        if self.problem not in ("oracle", "oracle_abs", "helper", "helper_no_prompt", "add", "canary"):
            raise ValueError(f"{self.name}: unknown problem {self.problem!r}")
        if self.check and self.style is not TestStyle.HUMANEVAL:
            raise ValueError(f"{self.name}: hostile check code needs the humaneval style")


@dataclass(frozen=True)
class Session:
    """What one test session made up on the host (paths, ports, secrets)."""

    token: str                 # random hex; in the names of every file/process a program leaves
    canary_tmp: str            # /tmp/hostile-canary-<token>/secret.txt
    canary_repo: str           # <repo>/.hostile-canary-<token>
    canary_home: str           # $HOME/.hostile-canary-<token>
    repo: str
    home: str
    tcp_port: int              # listener on 127.0.0.1
    tcp_any_port: int          # listener on 0.0.0.0 (the docker bridge, eth0)
    tcp6_port: int             # listener on ::1
    udp_port: int              # datagram socket on 0.0.0.0
    abstract_name: str         # abstract unix socket "\0<name>" in the host's network namespace
    env_name: str              # environment variable set on the host before the executor starts
    host_ips: tuple[str, ...]  # the host's own addresses (eth0, docker0, ...)
    oracle: Mapping[int, int]  # expected values of the oracle problem: never rendered into code
    canary_secret: str         # content of canary_tmp: never rendered into code
    victim_secret: str = field(default_factory=lambda: secrets.token_hex(8))  # only in the victim's request

    @property
    def mark(self) -> str:
        """Process marker (<= 15 chars, fits a comm name): hostile processes carry it."""
        return "hst" + self.token[:10]

    @property
    def ipc_key(self) -> int:
        return int(self.token[:7], 16)

    @property
    def placeholders(self) -> dict[str, str]:
        return {
            "TOKEN": self.token, "MARK": self.mark, "IPC_KEY": str(self.ipc_key),
            "CANARY_TMP": self.canary_tmp, "CANARY_REPO": self.canary_repo, "CANARY_HOME": self.canary_home,
            "CANARY_DIR": self.canary_tmp.rsplit("/", 1)[0], "REPO": self.repo, "HOME": self.home,
            "TCP_PORT": str(self.tcp_port), "TCP_ANY_PORT": str(self.tcp_any_port), "TCP6_PORT": str(self.tcp6_port),
            "UDP_PORT": str(self.udp_port), "ABSTRACT": self.abstract_name, "ENV_NAME": self.env_name,
            "HOST_IPS": repr(list(self.host_ips)),
        }


def new_oracle() -> dict[int, int]:
    return {k: secrets.randbelow(900_000_000) + 100_000_000 for k in (1, 2, 3)}


# Helpers every Python program may use. "ESC" + "APED:" is assembled at run time so the
# marker never appears in source (a traceback quoting a source line cannot fake it).
PY_PRELUDE = textwrap.dedent('''\
    import ctypes, errno, os, signal, socket, sys, time
    _LIBC = []
    def _libc():
        if not _LIBC:
            try:
                _LIBC.append(ctypes.CDLL(None, use_errno=True))
            except Exception:
                _LIBC.append(None)
        return _LIBC[0]
    def _esc(what):
        try:
            print("ESC" + "APED:" + str(what), flush=True)
        except Exception:
            pass
    def _read(path, n=1 << 16):
        """Up to n bytes of a file; None if unreadable. Non-blocking: a pipe or FIFO must not hang us."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except Exception:
            return None
        try:
            out = b""
            while len(out) < n:
                chunk = os.read(fd, n - len(out))
                if not chunk:
                    break
                out += chunk
            return out
        except Exception:
            return out or None
        finally:
            os.close(fd)
    def _show(label, data):
        if data:
            try:
                print(label, data.decode("utf-8", "replace") if isinstance(data, bytes) else data, flush=True)
            except Exception:
                pass
    def _run(argv, timeout=1.0, stdin=b""):
        """(status, output) of argv, like subprocess.run but with os only (any module may be missing)."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(w, 1)
                os.dup2(w, 2)
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        os.close(w)
        out, deadline = b"", time.monotonic() + timeout
        os.set_blocking(r, False)
        while time.monotonic() < deadline:
            try:
                chunk = os.read(r, 65536)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            if not chunk:
                break
            out += chunk[: max(0, 65536 - len(out))]
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
        os.close(r)
        return status, out
    def _glob(pattern_dir, prefix="", suffix=""):
        try:
            return [os.path.join(pattern_dir, n) for n in sorted(os.listdir(pattern_dir))
                    if n.startswith(prefix) and n.endswith(suffix)]
        except OSError:
            return []
    def _tcp(host, port, timeout=0.3):
        """A connected TCP socket. No socket.create_connection/getaddrinfo on str: they need the idna codec."""
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect((host, port))
        except BaseException:
            s.close()
            raise
        return s
    def _set_comm(name):
        try:
            _libc().prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)   # PR_SET_NAME
        except Exception:
            pass
''')

#: Shared by the gaming programs that hunt for the check's expected values.
PY_ORACLE_HUNTER = textwrap.dedent(r'''
    import re as _re
    _ORACLE = {}
    _PAT = _re.compile(rb"candidate\(\s*(-?\d+)\s*\)\s*==\s*(-?\d+)")
    def _learn(blob):
        if not blob:
            return
        if isinstance(blob, str):
            blob = blob.encode("utf-8", "replace")
        for k, v in _PAT.findall(blob):
            _ORACLE[int(k)] = int(v)
    def solve(x):
        if _ORACLE:
            print("found expected values:", _ORACLE, flush=True)
        return _ORACLE.get(x, 0)
''')


def join(*parts: str) -> str:
    """Concatenate code snippets written at different indentations."""
    return "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)


def oracle_check_code(oracle: Mapping[int, int]) -> str:
    lines = ["def check(candidate):"] + [f"    assert candidate({k}) == {v}" for k, v in sorted(oracle.items())]
    return "\n".join(lines) + "\n"


def oracle_abs_check_code(oracle: Mapping[int, int]) -> str:
    asserts = [f"    assert abs(candidate({k}) - {v}) < 1e-6" for k, v in sorted(oracle.items())]
    lines = ["def check(candidate):"] + asserts
    return "\n".join(lines) + "\n"


def helper_check_code(oracle: Mapping[int, int]) -> str:
    asserts = [f"    assert candidate(encode('s{v}')) == 's{v}'" for _, v in sorted(oracle.items())]
    lines = ["def check(candidate):"] + asserts
    return "\n".join(lines) + "\n"


#: The "prompt" of the helper problem: what the dataset gives; a completion follows it.
HELPER_PROMPT = textwrap.dedent("""\
    def encode(s: str) -> str:
        return "".join(chr(ord(c) + 1) for c in s)


    def solve(s: str) -> str:
        \"\"\"Invert encode().\"\"\"
""")


ADD_CHECK = textwrap.dedent("""\
    def check(candidate):
        assert candidate(2, 3) == 5
        assert candidate(10, 20) == 30
        assert candidate(1234, 8765) == 9999
""")

#: A correct program the sandbox must still pass after every hostile one.
CONTROL = ExecutionRequest(code="def add(a, b):\n    return a + b\n", style=TestStyle.HUMANEVAL,
                           check_code=ADD_CHECK, entry_point="add", id="control")


def victim_request(session: Session, base_limits: Limits) -> ExecutionRequest:
    """A correct execution whose program and check code hold secrets another execution must not see."""
    code = f"VICTIM_NOTE = 'VICTIM-CODE-{session.victim_secret}'\n" + CONTROL.code
    check = ADD_CHECK + f"    assert candidate(0, 0) == 0, 'VICTIM-CHECK-{session.victim_secret}'\n"
    return ExecutionRequest(code=code, style=TestStyle.HUMANEVAL, check_code=check, entry_point="add",
                            id="victim", limits=base_limits)


def fill(code: str, session: Session) -> str:
    for key, value in session.placeholders.items():
        code = code.replace(f"@@{key}@@", value)
    if "@@" in code:
        raise ValueError(f"unfilled placeholder in: {code[code.index('@@') - 40:code.index('@@') + 40]!r}")
    return code


def source(program: HostileProgram, session: Session, code: str | None = None) -> str:
    body = textwrap.dedent(program.code if code is None else code)
    if program.language == "python" and program.prelude:
        body = PY_PRELUDE + body
    return fill(body, session)


def to_request(program: HostileProgram, session: Session, base_limits: Limits) -> ExecutionRequest:
    """The ExecutionRequest that runs ``program`` against its problem in ``style``."""
    limits = replace(base_limits, **program.limits) if program.limits else base_limits
    code = source(program, session)
    common = dict(code=code, style=program.style, language=program.language, id=program.name, limits=limits)
    if program.style is TestStyle.HUMANEVAL:
        if program.check:
            return ExecutionRequest(check_code=fill(textwrap.dedent(program.check), session),
                                    entry_point="add", **common)
        if program.problem == "add":
            return ExecutionRequest(check_code=ADD_CHECK, entry_point="add", **common)
        if program.problem in ("helper", "helper_no_prompt"):   # the dataset's prompt sent as trusted, or not
            prompt = HELPER_PROMPT if program.problem == "helper" else ""
            return ExecutionRequest(check_code=helper_check_code(session.oracle), entry_point="solve",
                                    prompt=prompt, **{**common, "code": HELPER_PROMPT + code})
        if program.problem == "oracle_abs":
            return ExecutionRequest(check_code=oracle_abs_check_code(session.oracle), entry_point="solve", **common)
        return ExecutionRequest(check_code=oracle_check_code(session.oracle), entry_point="solve", **common)
    if program.style is TestStyle.FUNCTION_CALL:
        if program.problem == "add":
            cases = (TestCase(args=[2, 3], expected=5), TestCase(args=[10, 20], expected=30))
            return ExecutionRequest(entry_point="add", cases=cases, **common)
        cases = tuple(TestCase(args=[k], expected=v) for k, v in sorted(session.oracle.items()))
        return ExecutionRequest(entry_point="solve", cases=cases, **common)
    if program.problem == "add":
        cases = (TestCase(stdin="2 3\n", expected_stdout="5\n"), TestCase(stdin="10 20\n", expected_stdout="30\n"))
    elif program.problem == "canary":
        cases = (TestCase(stdin="", expected_stdout=session.canary_secret + "\n"),)
    else:
        cases = tuple(TestCase(stdin=f"{k}\n", expected_stdout=f"{v}\n") for k, v in sorted(session.oracle.items()))
    return ExecutionRequest(cases=cases, **common)


def followup_request(program: HostileProgram, session: Session, base_limits: Limits) -> ExecutionRequest:
    """The probe run after ``program``: a Python STDIO program that prints the escape marker on a find."""
    return ExecutionRequest(code=PY_PRELUDE + fill(textwrap.dedent(program.followup), session),
                            style=TestStyle.STDIO, id=program.name + "/followup", limits=base_limits,
                            cases=(TestCase(stdin="", expected_stdout="clean\n"),))
