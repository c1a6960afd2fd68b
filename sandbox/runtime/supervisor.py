"""Process A: the slot's trusted supervisor. Host protocol in, raw reports out.

A is long-lived (one per slot), non-dumpable, outside every B's PID namespace,
and confined before it reads any request (isolation.confine_supervisor): its
own mount, network, IPC, UTS and cgroup namespaces, an unprivileged uid of its
own with only CAP_KILL, no fork, no writable cgroup descriptor -- it runs the
reference's check code, which is trusted for the verdict, not with the host.
It never runs the program's code and never forks it: B's come from the
template zygote (zygote.py), whose memory holds no request data, so nothing A
reads -- check code, other rollouts' programs and results -- can end up in a
B's address space.

Host protocol on fds 0/1 (framing.py): A writes one ``hello`` frame (isolation
features + a self-test), then per execution reads one ``execute`` frame and,
for HumanEval, one ``secret`` frame holding the check code (and the trusted
prompt, if any), and writes one
report frame. The report is raw facts -- what B returned or printed, how it
ended, which limit it hit; verdicts are decided on the host
(sandbox/verdict.py), except the HumanEval asserts, which A evaluates itself
on values it rebuilt from plain data (harness.py).
"""

from __future__ import annotations

import binascii
import functools
import os
import signal
import socket
import sys
import time
import traceback

from . import check_split, codec, framing, harness, scratch_files
from .cgroups import Cgroups, ProgramMemory
from .child import Child, Deadline, ForkClient, ZygoteGone, spawn
from .isolation import SlotInfo, b_config

COMPILE_MEMORY_MB = 2048         # floor for compilers (cc1plus maps a lot of address space)
CLEANUP_GRACE_S = 1.0

_plan = functools.lru_cache(maxsize=256)(check_split.plan_check)   # A is long-lived: compile each check once
_prompt = functools.lru_cache(maxsize=256)(check_split.compile_prompt)   # and each trusted prompt


def _log(msg: str) -> None:
    try:
        os.write(2, f"supervisor: {msg}\n".encode())
    except OSError:
        pass


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class Supervisor:
    def __init__(self, slot: SlotInfo, cgroups: Cgroups, forks: ForkClient) -> None:
        self.slot, self.cgroups, self.forks = slot, cgroups, forks
        self.cleanup = None if slot.pid_ns_per_b else self._after_b
        self.known_pids = {1, os.getpid()}          # + the zygote's (serve): never B's
        # The sizes of the empty scratch and /dev/shm (a tmpfs directory's size counts its entries), taken
        # only while both are seen empty: a fork server starting beside us (R's) has a temporary directory
        # in the scratch for a moment, and a baseline taken then made a later one-file leftover look clean.
        self.empty_sizes: list[int] | None = self._empty_sizes() if slot.shared_scratch else []
        self.dirty = ""             # set by _cleanup (container mode): serve() ends the slot after the report
        self._limits: tuple[int, int, int] | None = None

    # -- per execution ---------------------------------------------------------------------------
    def execute(self, req: dict) -> dict:
        """One request -> one report. ZygoteGone propagates (the slot is dead)."""
        t0 = time.monotonic()
        secret = framing.read_frame(0) if req.get("has_secret") else None   # consumed first, whatever happens
        try:
            if self.slot.shared_scratch and int(req["limits"]["scratch_mb"]) != self.slot.scratch_mb:
                self.forks.request({"op": "resize", "scratch_mb": int(req["limits"]["scratch_mb"])}, expect="resized")
                self.slot.scratch_mb = int(req["limits"]["scratch_mb"])
            try:
                report = _STYLES[req["style"]](self, req, secret)
            finally:
                if self.slot.shared_scratch:
                    self._sweep_slot(_source_written(req))
        except (ZygoteGone, framing.FrameError):
            raise
        except Exception as exc:  # noqa: BLE001 - a harness bug becomes a harness_error report, not a dead slot
            _log("execution failed:\n" + traceback.format_exc())
            return {"v": 1, "status": "harness_error", "error": f"supervisor: {type(exc).__name__}: {exc}"}
        report.update(v=1, status="ok", harness_s=round(time.monotonic() - t0, 6))
        return report

    def _set_limits(self, memory_mb: int, limits: dict) -> None:
        """The programs' cgroup limits for the next B: set by the zygote (A holds no writable cgroup fd)."""
        wanted = (int(memory_mb), int(limits["scratch_mb"]), int(limits["max_processes"]))
        if wanted == self._limits or not self.cgroups.manages_programs:
            return
        self.forks.request({"op": "limits", "memory_mb": wanted[0], "scratch_mb": wanted[1],
                            "max_processes": wanted[2]}, expect="limits")
        self._limits = wanted

    def _spawn(self, forks: ForkClient, role: str, cfg: dict, limits: dict, **kw) -> Child:
        cap = int(limits["output_bytes"])
        watch = self.slot.memory_cgroup and not self.cgroups.manages_programs     # container mode: see _over_memory
        memory_kb = int(cfg.get("memory_mb") or cfg["limits"]["memory_mb"]) * 1024 if watch else 0
        # B's processes together may hold memory_mb + scratch_mb: the process backend's programs cgroup is
        # that limit (an OOM kill in it ends the program); in container mode the container's limit also
        # counts A, the zygote and a slack, so A watches the program's share itself.
        memory = ProgramMemory(self.cgroups, (memory_kb + int(limits["scratch_mb"]) * 1024) * 1024 if watch else 0)
        max_frame = kw.pop("max_frame", max(16 << 20, 4 * cap))
        return spawn(forks, role, cfg, cap=cap, max_frame=max_frame, cleanup=self.cleanup, memory_kb=memory_kb,
                     memory=memory, **kw)

    def _after_b(self, pid: int) -> None:
        """B is dead; did it leave processes behind? Then sweep the slot uid (kill(-1) as that uid).

        With namespaces B's scratch, /dev/shm and IPC died with its mount/IPC namespaces, so
        only processes can outlive it: A kills them itself (it holds CAP_KILL and needs no
        fork, which a fork bomb filling the pids cgroup would refuse). Without namespaces
        (container mode) the zygote's sweep also removes files and IPC objects, afterwards.
        """
        survivors = self._kill_strays()
        if not self.slot.namespaces:
            self._cleanup(pid, os.path.join(self.slot.scratch, str(pid)))
        elif survivors:
            self.dirty = f"processes of the slot uid survived: {survivors[:5]}"

    def _sweep_slot(self, source_file: str = "") -> None:
        """After an execution (shared-scratch mode): the slot must be as B found it, or be retired.

        Usually scratch and /dev/shm are empty and no process is left: three directory listings.
        When only the source file B was told to write (``source_file``: every language but
        Python's fast path) is left and no process of the slot uid is, the zygote unlinks it
        without a fork (op ``unlink``). Otherwise the zygote's sweep (container_sweep.py) kills
        and removes what the slot uid left, and A checks the result itself.
        """
        def leftovers() -> list:
            return os.listdir(self.slot.scratch) + os.listdir("/dev/shm") + self._strays()

        def clean() -> bool:                         # a tmpfs directory's size counts its entries
            if self.empty_sizes is None:
                self.empty_sizes = self._empty_sizes()
                return self.empty_sizes is not None
            return [os.stat(d).st_size for d in (self.slot.scratch, "/dev/shm")] == self.empty_sizes

        if clean():
            return
        if source_file and not self._strays():
            self.forks.request({"op": "unlink", "name": source_file}, expect="unlinked")
            if clean():
                return
        if leftovers():
            self._cleanup(0, "")
            left = leftovers()
            if left:
                self.dirty = f"the sweep left {left[:5]}"

    def _empty_sizes(self) -> list[int] | None:
        """The sizes of scratch and /dev/shm if both are empty before and after they are read, else None."""
        dirs = (self.slot.scratch, "/dev/shm")
        if any(os.listdir(d) for d in dirs):
            return None
        sizes = [os.stat(d).st_size for d in dirs]
        return None if any(os.listdir(d) for d in dirs) else sizes

    def _strays(self) -> list[int]:
        """Processes of the slot uid, zombies included (see :func:`_has_uid`). Cheap in the common
        case: the pids cgroup (which counts a zombie until it is reaped) then counts only the
        zygote, or the slot's PID namespace holds only bwrap's init, A and the zygote."""
        if self.cgroups.tasks() == 1:
            return []
        proc = self.slot.proc
        unknown = [int(n) for n in os.listdir(proc) if n.isdigit() and int(n) not in self.known_pids]
        return [pid for pid in unknown if _has_uid(proc, pid, self.slot.uid)]

    def _kill_strays(self, budget_s: float = 2.0) -> list[int]:
        """SIGKILL every process of the slot uid until none is left, not even a zombie; the survivors if any.

        A killed process is gone only once its parent reaped it: the slot's init (bwrap's, or
        docker-init), which reaps any child and adopts every orphan -- no process of the slot can
        make the zygote or a fork server its parent (seccomp.py refuses CLONE_PARENT). A zombie
        left here would be seen by the next execution (and counted in the pids cgroup)."""
        deadline = time.monotonic() + budget_s
        while True:
            pids = self._strays()
            if not pids or time.monotonic() > deadline:
                return pids
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)   # only the slot's processes live in this PID namespace
                except ProcessLookupError:
                    pass
            time.sleep(0.001)

    def _cleanup(self, pid: int, directory: str = "") -> None:
        reply, _ = self.forks.request({"op": "cleanup", "dir": directory or os.path.join(self.slot.scratch, str(pid))},
                                      expect="cleaned")
        if reply.get("dirty"):      # docker backend: something of the slot uid survived the sweep
            self.dirty = str(reply["dirty"])

    def _process_info(self, child: Child, limits: dict) -> dict:
        """How B ended and which limit (if any) ended it."""
        sig = child.signal
        _oom, forks_refused = self.cgroups.limit_events()     # read every time: counts since the last B
        forks_refused = forks_refused and (sig is not None or bool(child.exit_code))
        # An OOM kill of any of the program's processes since B started (a child's too, B exiting 0 after).
        oom = child.memory is not None and child.memory.oom_killed()
        cpu_limit = max(1, -(-float(limits["cpu_s"]) // 1))
        if child.killed_for == "wall_time" and sig == signal.SIGKILL:     # not if B died on its own first
            limit = "wall_time"
        elif child.killed_for == "output" or child.out_over or child.err_over:
            limit = "output"
        elif oom or child.killed_for == "memory" or _memory_error(child) or self._over_memory(child, limits):
            limit = "memory"
        elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and not child.killed_for
                                       and child.cpu_s >= 0.5 * cpu_limit):   # hard limit; rusage under-reads
            limit = "cpu_time"
        elif sig == signal.SIGXFSZ:
            limit = "file_size"
        elif forks_refused:
            limit = "processes"
        else:
            limit = ""
        # A SIGKILL that A did not send (killed_for is empty) and that no limit explains (the cgroup's OOM
        # counter, the CPU rlimit, the RSS watch above): the host's OOM killer or an operator killed B. Not
        # a verdict on the code: the host answers SANDBOX_ERROR (verdict.py). The program cannot send
        # SIGKILL itself (B's seccomp filter, seccomp.install_program_filter).
        outside = sig == signal.SIGKILL and not child.killed_for and not limit
        return {"exit_code": child.exit_code, "signal": sig, "wall_s": round(child.wall_s, 6),
                "cpu_s": round(child.cpu_s, 6), "max_rss_kb": child.max_rss_kb, "limit": limit,
                "killed_outside": outside}

    def _over_memory(self, child: Child, limits: dict) -> bool:
        """Container mode: the container's cgroup also holds A and a slack, so it alone is loose: B is
        killed when its resident set passes memory_mb (Child.memory_kb), and a process of the program
        whose peak RSS passed it between two looks exceeded the limit all the same (process mode: the
        programs' own cgroup is the limit)."""
        return not self.cgroups.manages_programs and self.slot.memory_cgroup \
            and child.max_rss_kb > int(limits["memory_mb"]) * 1024

    # -- HUMANEVAL and FUNCTION_CALL: one B serves every call ----------------------------------------
    def functions(self, req: dict, secret: dict | None) -> dict:
        limits = req["limits"]
        deadline = time.monotonic() + float(limits["wall_s"])
        plan = _plan(str((secret or {}).get("check_code", ""))) if req["style"] == "humaneval" else None
        n = plan.n_cases if plan is not None else len(req.get("cases", []))
        self._set_limits(int(limits["memory_mb"]), limits)
        child = self._spawn(self.forks, "functions", b_config(self.slot, limits), limits, stdin_data=None,
                            channel=True)
        remote = harness.Remote(child, deadline)
        try:
            child.send_code(req["code"], deadline)
            load = _load(child, remote)
        except Deadline:
            remote.dead = "time limit exceeded"
            load = {"ok": False, "phase": "exec", "timed_out": True, "detail": "time limit exceeded while loading"}
        if load["ok"]:
            names = load.pop("names")
            if plan is not None:
                remote.prefetch([(req.get("entry_point", ""), codec.encode(list(a)), codec.encode(dict(k)))
                                 for a, k in plan.prefetch])
                prompt = str((secret or {}).get("prompt", ""))
                cases = harness.run_check(plan, names, req.get("entry_point", ""), remote,
                                          _prompt(prompt) if prompt else None)
            else:
                cases = harness.run_function_calls(req.get("cases", []), req.get("entry_point", ""), remote)
        else:
            status = "timeout" if load.get("timed_out") else "error"
            cases = [{"status": status, "detail": f"program failed to load: {load['detail']}", "wall_s": 0.0}] * n
        if any(c["status"] == "timeout" for c in cases) or child.killed_for:
            child.finish(deadline)
        else:                                    # B exits on EOF; one that lingers is killed, not blamed
            child.finish(max(deadline, time.monotonic() + CLEANUP_GRACE_S))
            if child.killed_for == "wall_time":
                child.killed_for = "cleanup"
        info = self._process_info(child, limits)
        if not info["limit"] and any(c.get("exc_type") == "MemoryError" for c in cases):
            info["limit"] = "memory"
        return {"load": load, "cases": cases, "process": info, **_output(child)}

    # -- STDIO: one fresh B per case -------------------------------------------------------------
    def stdio(self, req: dict, secret: dict | None) -> dict:
        lang = req["language"]
        if not lang.get("compile") and not req.get("fetch_files"):
            return self._run_cases(self.forks, req, None)       # each B may have a scratch dir of its own
        if req.get("precompiled") is not None and not req.get("fetch_files"):
            return self._run_cases(self.forks, req, _cached_compile())   # every case's B writes the artifacts
        if self.slot.shared_scratch:            # the slot's scratch holds the binary (and the files) between steps
            return self._steps(self.forks, req)
        reply, fds = self.forks.request({"op": "holder", "scratch_mb": int(req["limits"]["scratch_mb"])},
                                        expect="holder")
        holder = ForkClient(socket.socket(fileno=fds[0]))
        self.forks.ignored.add(int(reply["pid"]))
        try:
            return self._steps(holder, req)
        finally:
            holder.close()                       # the holder exits, its mount namespace and tmpfs go with it
            if not self.slot.namespaces:
                self._cleanup(0, os.path.join(self.slot.scratch, f"h{reply['pid']}"))

    def _steps(self, forks: ForkClient, req: dict) -> dict:
        """Compile (if the language has a step), run the cases, fetch the files: one scratch dir for all.

        A compile the host answered from its cache (``precompiled``) is not run: each case's B writes
        its artifacts. ``collect_artifacts``: after a successful compile and before any case, a fresh B
        reads the artifacts back for the host's cache (compile_artifacts.py), so nothing the program
        does at run time can reach them."""
        if req.get("precompiled") is not None:
            compiled = _cached_compile()
        else:
            compiled = self._compile(forks, req) if req["language"].get("compile") else None
            if compiled is not None and compiled["ok"] and req.get("collect_artifacts"):
                compiled["artifacts"] = self._fetch(forks, req, [str(n) for n in req["collect_artifacts"]],
                                                    globs=True)
        if compiled is not None and not compiled["ok"]:
            report = {"compile": compiled, "cases": [{"status": "not_run"} for _ in req.get("cases", [])],
                      "process": None, "stdout": "", "stderr": ""}
        else:
            report = self._run_cases(forks, req, compiled)
        if req.get("fetch_files"):
            report["files"] = self._fetch(forks, req)
        return report

    def _compile(self, forks: ForkClient, req: dict) -> dict:
        limits, lang = req["limits"], req["language"]
        memory_mb = max(int(limits["memory_mb"]), COMPILE_MEMORY_MB)
        self._set_limits(memory_mb, limits)
        lim = {**limits, "memory_mb": memory_mb, "cpu_s": max(float(limits["cpu_s"]), float(limits["compile_wall_s"]))}
        extras = _extras(req, with_args=False)
        cfg = b_config(self.slot, lim, memory_mb=memory_mb, argv=list(lang["compile"]), write_source=True,
                       source_file=lang["source_file"], env=lang.get("env") or {},
                       address_space_mb=int(lang.get("address_space_mb") or 0), extras=extras is not None)
        deadline = time.monotonic() + float(limits["compile_wall_s"])
        child = self._spawn(forks, "command", cfg, limits, stdin_data=None, channel=True)
        try:
            if child.send_code(req["code"], deadline) and extras is not None:
                child.send_bytes(extras, deadline)
        except Deadline:
            pass
        child.finish(deadline)
        info = self._process_info(child, lim)
        return {"ok": info["exit_code"] == 0 and not info["limit"], "timed_out": info["limit"] == "wall_time",
                **info, "stdout": _text(child.out), "stderr": _text(child.err)}

    def _fetch(self, forks: ForkClient, req: dict, names: list[str] | None = None, globs: bool = False) -> dict:
        """The files the request asked for (or ``names``; ``globs``: top-level globs allowed), read by a
        fresh B in the program's scratch dir (scratch_files.py).

        Whatever that B does (dies, stalls, answers garbage) only means fewer files."""
        limits = req["limits"]
        names = [str(n) for n in req.get("fetch_files") or []] if names is None else names
        each, total = int(limits["file_size_mb"]) << 20, scratch_files.FETCH_BYTES_CAP
        memory_mb = max(int(limits["memory_mb"]), scratch_files.FETCH_MEMORY_MB)
        self._set_limits(memory_mb, limits)
        lim = {**limits, "memory_mb": memory_mb, "cpu_s": scratch_files.FETCH_WALL_S}
        cfg = b_config(self.slot, lim, memory_mb=memory_mb, fetch_each=each, fetch_total=total, fetch_globs=globs)
        deadline = time.monotonic() + scratch_files.FETCH_WALL_S
        child = self._spawn(forks, "fetch", cfg, limits, stdin_data=None, channel=True,
                            max_frame=total * 4 // 3 + (1 << 20) + 300 * len(names))
        files: dict = {}
        try:
            body = "\0".join(names).encode("utf-8", "surrogatepass")
            if child.send_bytes(framing.HEADER.pack(len(body)) + body, deadline):
                files = scratch_files.checked_fetch(child.recv(deadline), names, each, total, globs=globs)
        except (Deadline, ValueError):
            pass
        child.finish(deadline)
        return files

    def _run_cases(self, forks: ForkClient, req: dict, compiled: dict | None) -> dict:
        limits, lang, cases_in = req["limits"], req["language"], req.get("cases", [])
        report: dict = {"compile": compiled, "cases": [], "process": None, "stdout": "", "stderr": ""}
        self._set_limits(int(limits["memory_mb"]), limits)
        fast = bool(lang.get("fast_path")) and compiled is None
        artifacts = _artifacts(req)                    # a cached compile: every case's B writes its output
        needs_code = compiled is None or artifacts is not None
        extras = _extras(req, with_args=True)          # every case's B writes the files anew (scratch_files.py)
        if fast:
            role, cfg = "python_main", b_config(self.slot, limits, source_file=lang["source_file"],
                                                extras=extras is not None)
        else:
            cfg = b_config(self.slot, limits, argv=list(lang["run"]), write_source=needs_code,
                           source_file=lang["source_file"], env=lang.get("env") or {},
                           address_space_mb=int(lang.get("address_space_mb") or 0), extras=extras is not None,
                           artifacts=artifacts is not None,
                           fork_server=str(lang.get("name", "")) if lang.get("fork_server") else "")
            role = "command"
        deadline = time.monotonic() + float(limits["wall_s"])
        for case in cases_in:
            if time.monotonic() >= deadline:
                report["cases"].append({"status": "timeout"})
                continue
            child = self._spawn(forks, role, cfg, limits, stdin_data=str(case.get("stdin", "")).encode("utf-8"),
                                channel=needs_code or extras is not None)
            try:
                sent = child.send_code(req["code"], deadline) if needs_code else True
                if sent and extras is not None:
                    sent = child.send_bytes(extras, deadline)
                if sent and artifacts is not None:
                    child.send_bytes(artifacts, deadline)
                if fast and _python_syntax_error(child, deadline, report):
                    report["cases"] += [{"status": "not_run"}] * (len(cases_in) - len(report["cases"]))
                    return report
            except Deadline:
                pass
            child.finish(deadline)
            info = self._process_info(child, limits)
            report["cases"].append({"status": "timeout" if info["limit"] == "wall_time" else "exited",
                                    **info, **_output(child)})
            report["process"] = info
        return report


_STYLES = {"humaneval": Supervisor.functions, "function_call": Supervisor.functions, "stdio": Supervisor.stdio}


def _has_uid(proc: str, pid: int, uid: int | None) -> bool:
    """Is ``pid`` a process with ``uid`` among its real/effective/saved/fs uids, whatever its state?

    Zombies count: one is gone only once reaped, and until then the next execution sees it. And
    "Z" is also the state /proc gives a process whose main thread exited while another thread
    runs on (its other threads are not listed): skipping "Z" let such a process outlive the sweep.
    """
    try:
        with open(f"{proc}/{pid}/status", "rb") as f:
            status = f.read(4096)
    except OSError:
        return False                                # gone meanwhile
    for line in status.splitlines():
        if line.startswith(b"Uid:"):
            return str(uid).encode() in line[4:].split()
    return False


def _source_written(req: dict) -> str:
    """The file name B writes the program's source to (STDIO, every language but Python's fast path), or ""."""
    lang = req.get("language") or {}
    return "" if req.get("style") != "stdio" or lang.get("fast_path") else str(lang.get("source_file") or "")


def _extras(req: dict, with_args: bool) -> bytes | None:
    """The frame of the request's files (and run arguments) for a B, or None when there are none."""
    files = [(str(name), binascii.a2b_base64(str(text))) for name, text in (req.get("files") or {}).items()]
    args = [str(a) for a in req.get("args") or []] if with_args else []
    if not files and not args:
        return None
    body = scratch_files.pack_extras(files, args)
    return framing.HEADER.pack(len(body)) + body


def _artifacts(req: dict) -> bytes | None:
    """The frame of a cached compile's artifacts (``precompiled``: name -> base64), or None."""
    pre = req.get("precompiled")
    if pre is None:
        return None
    body = scratch_files.pack_extras([(str(n), binascii.a2b_base64(str(t))) for n, t in pre.items()], [])
    return framing.HEADER.pack(len(body)) + body


def _cached_compile() -> dict:
    """The compile step of a request the host answered from its compile-artifact cache: not run here
    (the host puts back the first compile's output)."""
    return {"ok": True, "cached": True, "exit_code": 0, "signal": None, "timed_out": False, "limit": "",
            "wall_s": 0.0, "cpu_s": 0.0, "max_rss_kb": 0, "killed_outside": False, "stdout": "", "stderr": ""}


def _memory_error(child: Child) -> bool:
    tail = bytes(child.err[-400:])
    return b"\nMemoryError" in b"\n" + tail or b"std::bad_alloc" in tail


def _output(child: Child) -> dict:
    return {"stdout": _text(child.out), "stderr": _text(child.err),
            "stdout_truncated": child.out_over, "stderr_truncated": child.err_over}


def _load(child: Child, remote: harness.Remote) -> dict:
    """B's first message: ready (with its names) or why loading the program failed. Raises Deadline."""
    try:
        first = child.recv(remote.deadline)
    except ValueError as exc:                    # FrameError
        first = {"op": "?", "detail": str(exc)}
    if first is None:
        remote.dead = harness.death_reason(child)
        return {"ok": False, "phase": "exec", "exc_type": "", "detail": remote.dead}
    if first.get("op") == "ready":
        return {"ok": True, "names": first.get("names")}
    if first.get("op") == "load_error":
        remote.dead = "program failed to load"
        exc_type = str(first.get("exc_type", ""))[:200]
        return {"ok": False, "phase": "compile" if first.get("phase") == "compile" else "exec",
                "exc_type": exc_type, "detail": f"{exc_type}: {str(first.get('detail', ''))[:2000]}"}
    child.kill("protocol")
    remote.dead = "program broke the call protocol"
    return {"ok": False, "phase": "exec", "exc_type": "", "detail": remote.dead}


def _python_syntax_error(child: Child, deadline: float, report: dict) -> bool:
    """B compiles before running anything, then closes its channel; a message means a syntax error."""
    try:
        msg = child.recv(deadline)
    except ValueError:
        return False
    if msg is None or msg.get("op") != "compile_error":
        return False
    child.finish(deadline)
    report["compile"] = {"ok": False, "exit_code": 1, "signal": None, "timed_out": False, "limit": "",
                         "wall_s": round(child.wall_s, 6), "stderr": str(msg.get("traceback", ""))[:65536]}
    return True


_SELFTEST = {"op": "execute", "style": "function_call", "code": "def f(x):\n    return x + 1\n", "entry_point": "f",
             "cases": [{"args": [41], "kwargs": {"dict": []}}],
             "language": {"name": "python", "source_file": "main.py", "compile": [], "run": [], "fast_path": True},
             "limits": {"wall_s": 10, "cpu_s": 10, "memory_mb": 512, "max_processes": 32, "file_size_mb": 1,
                        "scratch_mb": 8, "open_files": 64, "output_bytes": 4096, "compile_wall_s": 10}}


def serve(slot: SlotInfo, cgroups: Cgroups, zsock: socket.socket, zygote_pid: int) -> int:
    """A's main loop (see the module docstring). Returns the process exit status."""
    sup = Supervisor(slot, cgroups, ForkClient(zsock))
    sup.known_pids.add(zygote_pid)
    try:
        report = sup.execute(dict(_SELFTEST))
        case = (report.get("cases") or [{}])[0]
        selftest = "ok" if case.get("value") == 42 else str(report.get("error") or report.get("stderr")
                                                            or case.get("detail") or report)[:2000]
    except ZygoteGone as exc:
        selftest = f"the template zygote died: {exc}"
    hello = {"op": "hello", "v": 1, "pid": os.getpid(), "python": sys.version.split()[0], "selftest": selftest,
             **slot.describe(), **cgroups.enabled}
    framing.write_all(1, framing.pack(hello))
    while True:
        try:
            req = framing.read_frame(0)
        except (framing.FrameError, OSError) as exc:
            _log(f"bad request stream ({exc}); exiting")
            return 1
        if req is None:
            return 0
        if req.get("op") == "ping":
            framing.write_all(1, framing.pack({"op": "pong"}))
            continue
        if req.get("op") != "execute":
            framing.write_all(1, framing.pack({"v": 1, "status": "harness_error", "error": "unknown op"}))
            continue
        try:
            report = sup.execute(req)
        except (ZygoteGone, framing.FrameError) as exc:
            framing.write_all(1, framing.pack({"v": 1, "status": "harness_error", "error": f"slot broken: {exc}"}))
            _log(f"exiting: {exc}")
            return 1
        if sup.dirty:
            report["retire"] = sup.dirty[:2000]     # tells the host to replace this slot now
        framing.write_all(1, framing.pack(report))
        if sup.dirty:               # container mode: fail closed, the host replaces this container
            _log(f"exiting: the slot is dirty after the sweep: {sup.dirty}")
            return 3
