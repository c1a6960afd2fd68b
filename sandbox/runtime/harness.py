"""The trusted side of HUMANEVAL and FUNCTION_CALL tests, running in A.

HUMANEVAL: the dataset's ``check`` code runs *here*, in A, never in B. The
candidate (and every other top-level callable of the program) is a
:class:`Proxy`: calling it sends plain-data arguments to B, B calls the real
function and sends back the return value in the codec, and A rebuilds it from
fresh built-in objects. Therefore nothing B does -- ``sys.exit``, monkeypatching
``AssertionError`` or builtins, overriding ``__eq__``, walking frames or ``gc``,
printing fake markers -- can change how A's asserts evaluate: B's memory holds
neither the check code nor A's objects (A reads the check code only after B
was forked; see supervisor.py).

An exception raised by B's function is re-raised here as the same *built-in*
exception class (so ``try: candidate(x) except ValueError`` checks work), and
as RuntimeError for anything else. B dying or the deadline passing raise
:class:`CandidateDied` / :class:`child.Deadline`, both BaseException, so a
``try/except Exception`` in check code cannot turn them into a pass; and a
per-step record of those events makes the step fail even if check code
swallows them with a bare ``except:``.
"""

from __future__ import annotations

import builtins
import collections
import signal
import sys
import time
from types import CodeType
from typing import Any

from . import codec, framing
from .check_split import CheckPlan
from .child import Child, Deadline


class CandidateDied(BaseException):
    """B is gone (exited, crashed, was killed, or broke the protocol)."""


class ProtocolError(BaseException):
    """B sent something that is not a valid reply."""


def _rebuild(reply: dict) -> Exception:
    name = reply.get("exc_type")
    detail = str(reply.get("detail", ""))[:2000]
    cls = getattr(builtins, name, None) if type(name) is str and reply.get("builtin") is True else None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(detail)
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs 5 arguments
            pass
    return RuntimeError(f"{name}: {detail}")


class Remote:
    """A's end of the call channel, with the execution's deadline.

    Calls are answered in order. Pipelining: :meth:`prefetch` sends the calls the check is
    certain to make (check_split.CheckPlan.prefetch; every FUNCTION_CALL case) before it runs,
    so B answers them back to back instead of waiting for a round trip each; a call the check
    then makes consumes the next queued reply if it is that very call (same function, same
    encoded arguments). If the check diverges, the queued replies are read and dropped first.
    """

    def __init__(self, child: Child, deadline: float) -> None:
        self.child = child
        self.deadline = deadline
        self.dead = ""                 # why B is unusable ("" while it is fine)
        self.events: list[str] = []    # what happened during the current step
        self.queued: collections.deque[str] = collections.deque()   # keys of calls sent ahead

    @staticmethod
    def _frame(name: str, args_enc: Any, kwargs_enc: Any) -> tuple[str, bytes]:
        frame = framing.pack({"op": "call", "fn": name, "args": args_enc, "kwargs": kwargs_enc})
        return frame[framing.HEADER.size:].decode("utf-8", "surrogatepass"), frame

    def prefetch(self, calls: list[tuple[str, Any, Any]], max_bytes: int = 1 << 20) -> None:
        """Send these (name, encoded args, encoded kwargs) calls ahead, up to max_bytes in all."""
        frames, keys, size = [], [], 0
        for name, args_enc, kwargs_enc in calls:
            key, frame = self._frame(name, args_enc, kwargs_enc)
            size += len(frame)
            if size > max_bytes:
                break
            frames.append(frame)
            keys.append(key)
        if not frames or self.dead:
            return
        try:
            if self.child.send_bytes(b"".join(frames), self.deadline):
                self.queued.extend(keys)
        except Deadline:
            self.dead = "time limit exceeded"

    def call_raw(self, name: str, args_enc: Any, kwargs_enc: Any) -> dict:
        """Send one call (or use the queued one), return B's reply frame. Raises CandidateDied, Deadline."""
        if self.dead:
            raise CandidateDied(self.dead)
        key, frame = self._frame(name, args_enc, kwargs_enc)
        try:
            if self.queued and self.queued[0] == key:
                self.queued.popleft()
                ok = True
            else:
                while self.queued and self.child.recv(self.deadline) is not None:   # diverged: drop them
                    self.queued.popleft()
                self.queued.clear()
                ok = self.child.send_bytes(frame, self.deadline)
            reply = self.child.recv(self.deadline) if ok else None
        except Deadline:
            self.dead = "time limit exceeded"
            self.events.append("timeout")
            raise
        except ValueError as exc:         # FrameError: garbage on the channel
            reply = None
            self.child.kill("protocol")
            self.dead = f"program broke the call protocol ({exc})"
        if reply is None or reply.get("op") not in ("return", "raised", "unserializable"):
            if reply is not None:
                self.child.kill("protocol")
            self.dead = self.dead or ("program broke the call protocol" if reply is not None
                                      else death_reason(self.child))
            self.events.append("died")
            raise CandidateDied(self.dead)
        return reply

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        try:
            args_enc, kwargs_enc = codec.encode(list(args)), codec.encode(dict(kwargs))
        except codec.Unserializable as exc:
            raise TypeError(f"check code passed a non-plain-data argument to {name}: {exc}") from None
        reply = self.call_raw(name, args_enc, kwargs_enc)
        op = reply["op"]
        if op == "return":
            try:
                return codec.decode(reply.get("value"))
            except codec.CodecError as exc:
                self.events.append("died")
                self.child.kill("protocol")
                self.dead = f"malformed return value ({exc})"
                raise CandidateDied(self.dead) from None
        if op == "unserializable":
            self.events.append("unserializable")
            raise TypeError(f"{name} returned a value that is not plain data: {str(reply.get('type'))[:200]}")
        self.events.append(f"raised:{reply.get('exc_type')}")
        raise _rebuild(reply)


def death_reason(child: Child) -> str:
    if child.killed_for == "output":
        return "output limit exceeded"
    child.reap()
    if child.signal is not None:
        return f"program was killed by signal {child.signal}"
    return f"program exited with status {child.exit_code}"


class Proxy:
    """Stands in, in A, for a callable of the program that lives in B."""

    def __init__(self, remote: Remote, name: str) -> None:
        self._remote = remote
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._remote.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<sandboxed {self.__name__}>"


def _namespace(remote: Remote, names: Any) -> dict:
    """The check code's globals: the program's top-level names, as proxies or plain values.

    A name the program defines is exposed only if it cannot change what the check's own
    expressions mean: never a builtin (a program-defined ``abs`` or ``isinstance`` would
    otherwise be called by ``assert abs(candidate(x) - v) < 1e-6``), and a module only
    under its own name and only if A imported it itself. Names the check code defines
    override these anyway (setup runs after).
    """
    ns: dict[str, Any] = {"__name__": "__check__", "__builtins__": builtins}
    if type(names) is not dict:
        return ns
    for name, desc in list(names.items())[:10000]:
        if type(name) is not str or not name.isidentifier() or type(desc) is not dict or hasattr(builtins, name):
            continue
        if desc.get("callable") is True:
            ns[name] = Proxy(remote, name)
        elif type(desc.get("module")) is str:
            module = sys.modules.get(desc["module"])
            if module is not None and desc["module"].rpartition(".")[2] == name:
                ns[name] = module
        elif "value" in desc:
            try:
                ns[name] = codec.decode(desc["value"])
            except codec.CodecError:
                pass
    return ns


def _alarm(_signum, _frame):
    raise Deadline()


def run_check(plan: CheckPlan, names: Any, entry_point: str, remote: Remote,
              prompt: CodeType | None = None) -> list[dict]:
    """Run the check steps; one outcome dict per case, in order (missing ones are timeouts).

    ``prompt``: the dataset's prompt (trusted, compiled), run here before the check's setup, so
    the names it defines -- helpers the check calls, like HumanEval/38's ``encode_cyclic`` --
    are the dataset's and not the program's (which may have redefined them). The entry point's
    (top-level) name stays the candidate's proxy: the prompt only holds its stub.
    """
    ns = _namespace(remote, names)
    cases: list[dict] = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, max(remote.deadline - time.monotonic(), 0.001))
            _run_steps(plan, ns, entry_point, remote, cases, prompt)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Deadline:                  # the alarm fired outside a step: the remaining cases time out
        pass
    finally:
        signal.signal(signal.SIGALRM, old)
    while len(cases) < plan.n_cases:
        cases.append({"status": "timeout", "detail": "time limit exceeded", "wall_s": 0.0})
    return cases[:plan.n_cases]


def _run_steps(plan: CheckPlan, ns: dict, entry_point: str, remote: Remote, cases: list,
               prompt: CodeType | None) -> None:
    pending = ""                      # a failed setup step fails the next case (fail closed)
    failed = _run_prompt(prompt, ns, entry_point) if prompt is not None else ""
    if failed:                        # some helpers may still be the program's: no case can pass
        cases.extend({"status": "error", "detail": failed, "wall_s": 0.0} for _ in range(plan.n_cases))
        return
    try:
        exec(plan.setup, ns)
    except Deadline:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - trusted code, but report, don't crash A
        pending = f"check setup failed: {_describe(exc)}"
    ns[plan.param] = Proxy(remote, entry_point)
    for step in plan.steps:
        outcome = _run_step(step, ns, remote)
        if outcome["status"] == "timeout":
            cases.append(outcome)
            return
        if not step.is_case:
            if outcome["status"] != "passed" and not pending:
                pending = outcome["detail"] or outcome["status"]
            continue
        if pending and outcome["status"] == "passed":
            outcome = {**outcome, "status": "error", "detail": pending}
        pending = ""
        cases.append(outcome)
    if pending and cases:
        cases[-1] = {**cases[-1], "status": "error", "detail": pending}


def _run_prompt(prompt: CodeType, ns: dict, entry_point: str) -> str:
    """Runs the trusted prompt in the check's namespace; returns why it failed ("" if it did not)."""
    head = entry_point.partition(".")[0]
    candidate = ns.get(head)
    try:
        exec(prompt, ns)
    except Deadline:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - trusted code, but report, don't crash A
        return f"prompt failed: {_describe(exc)}"
    finally:
        if candidate is not None:                # the prompt only defined the entry point's stub:
            ns[head] = candidate                 # the name stays the program's
        else:
            ns.pop(head, None)
    return ""


def _run_step(step, ns: dict, remote: Remote) -> dict:
    remote.events = []
    t0 = time.monotonic()
    status, detail = "passed", ""
    try:
        exec(step.code, ns)
    except AssertionError as exc:
        status, detail = "failed", f"{step.source}" + (f": {_text(exc)}" if _text(exc) else "")
    except CandidateDied as exc:
        status, detail = "error", str(exc)
    except Deadline:
        remote.events.append("timeout")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the candidate's (re-raised) or check code's error
        status, detail = "error", _describe(exc)
    if "timeout" in remote.events:
        status, detail = "timeout", "time limit exceeded"
    elif "died" in remote.events and status == "passed":
        status, detail = "error", remote.dead
    elif status == "passed" and any(e.startswith("raised:") or e == "unserializable" for e in remote.events):
        pass   # the check expected (and caught) an exception: that is a pass
    result = {"status": status, "detail": detail[:2000], "wall_s": round(time.monotonic() - t0, 6)}
    raised = [e[7:] for e in remote.events if e.startswith("raised:")]
    if status == "error" and raised:
        result["exc_type"] = raised[-1]
    return result


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:500]
    except Exception:  # noqa: BLE001
        return ""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_text(exc)}".rstrip(": ")


def run_function_calls(cases: list, entry_point: str, remote: Remote) -> list[dict]:
    """FUNCTION_CALL: send each case's (already encoded) args; report B's raw reply per case."""
    remote.prefetch([(entry_point, c.get("args", []), c.get("kwargs", {"dict": []})) for c in cases])
    out: list[dict] = []
    for case in cases:
        if remote.dead:
            status = "timeout" if "timeout" in remote.events else "error"
            out.append({"status": status, "detail": remote.dead, "wall_s": 0.0})
            continue
        t0 = time.monotonic()
        remote.events = []
        try:
            reply = remote.call_raw(entry_point, case.get("args", []), case.get("kwargs", {"dict": []}))
        except Deadline:
            out.append({"status": "timeout", "detail": "time limit exceeded",
                        "wall_s": round(time.monotonic() - t0, 6)})
            continue
        except CandidateDied as exc:
            out.append({"status": "error", "detail": str(exc), "wall_s": round(time.monotonic() - t0, 6)})
            continue
        wall = round(time.monotonic() - t0, 6)
        if reply["op"] == "return":
            try:
                codec.decode(reply.get("value"))           # validate here; the host decodes again
                out.append({"status": "returned", "value": reply.get("value"), "wall_s": wall})
            except codec.CodecError as exc:
                out.append({"status": "error", "detail": f"malformed return value ({exc})", "wall_s": wall})
        elif reply["op"] == "unserializable":
            out.append({"status": "error", "detail": f"returned a value that is not plain data: "
                        f"{str(reply.get('type'))[:200]}", "wall_s": wall})
        else:
            out.append({"status": "error", "exc_type": str(reply.get("exc_type"))[:200],
                        "detail": f"{str(reply.get('exc_type'))[:200]}: {str(reply.get('detail'))[:2000]}",
                        "wall_s": wall})
    return out
