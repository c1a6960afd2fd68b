"""The process backend (default): bubblewrap sandboxes with warm zygotes; no Docker needed.

Why bubblewrap and not raw namespaces from our own code: bwrap (Debian's
``bubblewrap``) is a small, audited tool that builds the *slot* -- an empty
tmpfs root with read-only binds of exactly what programs need (``/usr`` and the
``/lib*`` links, the Python prefix, the runtime, a few ``/etc`` files; never
``/`` wholesale, so ``/root``, ``/work``, ``/tmp``, ``/home`` do not exist
inside), /proc and /dev, new PID, network (loopback only, no route out), IPC,
UTS and cgroup namespaces, a cleared environment, a new session (no TIOCSTI
into our terminal), a read-only root, and death with its parent -- the fiddly,
security-critical part, done by a tool made for it rather than by ~200 lines of
ctypes of ours. It is paid once per slot (a few ms), never per execution:
inside, the template zygote forks a B per execution, and the per-execution
isolation (a new IPC namespace, rlimits, the drop to the slot uid, the sweep
afterwards) is a handful of syscalls (sandbox/runtime/).

As root (what tests and the service run as), no user namespace is created: the
zygote keeps just the capabilities listed in ``CAPS``, the supervisor only
CAP_KILL, and B runs as the slot's own uid with none. As a normal user, bwrap
adds a user namespace (uid 0 inside, the same caps), B keeps that uid but drops
every capability and is PID 1 of its own PID namespace, and there are no
cgroups, so no process-count limit beyond the wall clock (logged once).

cgroup v1: when ``/sys/fs/cgroup/{memory,pids}`` are writable, each slot gets
``reward-sandbox/<pid>-<n>/slot-<i>`` in both, bound into its sandbox; the
template zygote joins them once, so every B is born inside, and the supervisor
sets the memory/pids limits when an execution's limits change; otherwise
rlimits alone apply (logged once).
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from sandbox.execution import ExecutionRequest, ExecutionResult, SandboxUnavailable
from sandbox.languages import Language
from sandbox.slot_pool import SlotPool
from sandbox.zygote_client import PipeTransport, SlotHandle

log = logging.getLogger(__name__)

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
RUNTIME_IN_SANDBOX = "/opt/sandbox/runtime"
SCRATCH = "/scratch"
# The zygote's: SYS_ADMIN (unshare, mounts), SETUID/SETGID/SETPCAP (become the slot uid, empty the
# bounding set), KILL, DAC_OVERRIDE/FOWNER (the sweep removes what B left in scratch and /dev/shm),
# SYS_RESOURCE (prlimit on a B that may already have dropped to the slot uid).
# A keeps only KILL; B none.
CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
        "CAP_SYS_RESOURCE")
PRIVATE_PROC = "/run/sandbox/proc"     # A's full /proc, in a root-only directory (B gets hidepid=2)
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "reward-sandbox"
_seq = itertools.count()
_noted: set[str] = set()


@dataclass(frozen=True)
class ProcessSandboxConfig:
    """Knobs of the process backend (``create_executor("process", **options)``)."""

    bwrap: str = "bwrap"                 # path or name of the bubblewrap binary
    python: str = ""                     # interpreter inside the sandbox; default: this one's base interpreter
    #: slot i runs programs as uid/gid base_uid + i. 0: a random block per executor, because
    #: RLIMIT_NPROC counts a uid's processes host-wide, so two executors must not share uids.
    base_uid: int = 0
    cgroups: bool = True                 # use cgroup v1 memory/pids when writable
    extra_ro_binds: tuple[str, ...] = ()  # more host paths to expose read-only (e.g. a site-packages dir)
    start_timeout_s: float = 60.0


def _note_once(key: str, msg: str, *args: object) -> None:
    if key not in _noted:
        _noted.add(key)
        log.warning(msg, *args)


def sandbox_python(configured: str = "") -> str:
    """The real interpreter binary (not a venv shim): it runs with -I -S, so site-packages never matter."""
    return os.path.realpath(configured or sys.executable)


class SlotCgroups:
    """The per-slot cgroup directories of one executor; created on start, removed on close."""

    def __init__(self, size: int, enabled: bool) -> None:
        self.dirs: list[dict[str, Path]] = [{} for _ in range(size)]
        self.group = f"{os.getpid()}-{next(_seq)}"
        if not enabled:
            return
        for controller in ("memory", "pids"):
            base = CGROUP_ROOT / controller
            if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
                _note_once(f"cg-{controller}", "cgroup v1 %s controller not writable at %s: rlimits only",
                           controller, base)
                continue
            try:
                _remove_stale(base / CGROUP_PARENT)
                for i in range(size):
                    d = base / CGROUP_PARENT / self.group / f"slot-{i}"
                    d.mkdir(parents=True, exist_ok=True)
                    self.dirs[i][controller] = d
            except OSError as exc:
                _note_once(f"cg-{controller}-mk", "cannot create %s cgroups (%s): rlimits only", controller, exc)
                for slot in self.dirs:
                    slot.pop(controller, None)

    def remove(self) -> None:
        for slot in self.dirs:
            for d in slot.values():
                _rmdir(d)
        for controller in ("memory", "pids"):
            _rmdir(CGROUP_ROOT / controller / CGROUP_PARENT / self.group)


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()
    except OSError:
        pass


def _remove_stale(parent: Path) -> None:
    """cgroups left by executors of processes that no longer exist."""
    if not parent.is_dir():
        return
    for group in parent.iterdir():
        pid = group.name.split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            for slot in group.glob("slot-*"):
                _rmdir(slot)
            _rmdir(group)


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


def bwrap_command(config: ProcessSandboxConfig, slot: int, cgroup_dirs: Mapping[str, Path],
                  as_root: bool) -> list[str]:
    """The bubblewrap command line that starts slot ``slot``'s zygote."""
    python = sandbox_python(config.python)
    cmd = [config.bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
           "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not as_root:
        cmd += ["--unshare-user", "--uid", "0", "--gid", "0"]
    cmd += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HOME", SCRATCH, "--setenv", "TMPDIR", SCRATCH, "--cap-drop", "ALL"]
    for cap in CAPS:
        cmd += ["--cap-add", cap]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            cmd += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            cmd += ["--ro-bind", d, d]
    for f in ETC_FILES:
        cmd += ["--ro-bind-try", f, f]
    prefixes = {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(python))}
    made: set[str] = set()
    for p in sorted(prefixes) + [os.path.realpath(p) for p in config.extra_ro_binds]:
        if p.startswith("/usr/") or p == "/usr":
            continue
        for parent in _ancestors(p):          # e.g. /root: traversable inside, nothing else of it exists
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", parent]
        cmd += ["--ro-bind", p, p]
    cmd += ["--ro-bind", str(RUNTIME_DIR), RUNTIME_IN_SANDBOX, "--proc", "/proc", "--dev", "/dev",
            "--dir", SCRATCH, "--symlink", SCRATCH, "/tmp", "--perms", "0700", "--dir", os.path.dirname(PRIVATE_PROC),
            "--dir", PRIVATE_PROC]
    zygote_args = ["--mode", "process", "--slot-uid", str(config.base_uid + slot), "--scratch", SCRATCH,
                   "--private-proc", PRIVATE_PROC]
    for controller, d in cgroup_dirs.items():
        inside = f"/sys/fs/cgroup/{controller}"
        cmd += ["--bind", str(d), inside]
        zygote_args += [f"--cgroup-{controller}", inside]
    if not as_root:
        zygote_args.append("--no-setuid")
    cmd += ["--remount-ro", "/", "--chdir", "/", "--", python, "-I", "-S", "-B",
            f"{RUNTIME_IN_SANDBOX}/zygote.py"] + zygote_args
    return cmd


def _forward_stderr(proc: subprocess.Popen, slot: int) -> None:
    zlog = logging.getLogger("sandbox.zygote")
    for line in iter(proc.stderr.readline, b""):
        zlog.warning("slot %d: %s", slot, line.decode("utf-8", "replace").rstrip())
    proc.stderr.close()


def _random_uid_block(size: int) -> int:
    """A base for ``size`` uids that no account uses: 100000 + a random multiple of 1024, below 2^31."""
    return 100_000 + 1024 * (int.from_bytes(os.urandom(4), "little") % 2_000_000)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def _gone(pid: int) -> bool:
    """Exited (zombie or reaped). A PID-namespace init turns zombie only after all its processes died."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _kill_slot(proc: subprocess.Popen, timeout_s: float = 5.0) -> None:
    """SIGKILL the sandbox's init (which takes its whole PID namespace down) and bwrap; wait for both."""
    inner = _children(proc.pid) if proc.poll() is None else []
    for pid in inner:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    if proc.poll() is None:
        proc.kill()
    for f in (proc.stdin, proc.stdout):
        try:
            f.close()
        except OSError:
            pass
    proc.wait()
    deadline = time.monotonic() + timeout_s
    while inner and time.monotonic() < deadline:
        inner = [p for p in inner if not _gone(p)]
        if inner:
            time.sleep(0.005)


class ProcessExecutor:
    """Executor over ``concurrency`` bubblewrap slots. Thread-safe; never raises on hostile code."""

    name = "process"

    def __init__(self, concurrency: int = 2, languages: Mapping[str, Language] | None = None,
                 **options: object) -> None:
        self.config = ProcessSandboxConfig(**options)   # TypeError names an unknown option
        bwrap = shutil.which(self.config.bwrap)
        if bwrap is None:
            raise SandboxUnavailable(f"bubblewrap ({self.config.bwrap!r}) not found: install Debian's "
                                     "'bubblewrap' package, or use backend='docker'")
        base_uid = self.config.base_uid or _random_uid_block(concurrency)
        self.config = ProcessSandboxConfig(**{**self.config.__dict__, "bwrap": bwrap, "base_uid": base_uid})
        self.as_root = os.geteuid() == 0
        if not self.as_root:
            _note_once("nonroot", "process sandbox without root: user namespace, no per-slot uid, no cgroups; "
                       "process counts are bounded only by the wall-clock limit")
        self.cgroups = SlotCgroups(concurrency, self.config.cgroups and self.as_root)
        try:
            self.pool = SlotPool(concurrency, self._start_slot, backend=self.name, languages=languages,
                                 start_timeout_s=self.config.start_timeout_s)
        except BaseException:
            self.cgroups.remove()
            raise

    def _start_slot(self, index: int) -> SlotHandle:
        cmd = bwrap_command(self.config, index, self.cgroups.dirs[index], self.as_root)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                close_fds=True, start_new_session=False)
        threading.Thread(target=_forward_stderr, args=(proc, index), name=f"sandbox-slot-{index}-stderr",
                         daemon=True).start()

        def kill() -> None:
            _kill_slot(proc)

        return SlotHandle(PipeTransport.from_popen(proc), kill, description=f"bwrap pid {proc.pid}",
                          extra={"pid": proc.pid}, alive=lambda: proc.poll() is None)

    @property
    def hellos(self) -> list[dict]:
        return self.pool.hellos

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        return self.pool.execute(request)

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        return self.pool.execute_batch(requests)

    def close(self) -> None:
        self.pool.close()
        self.cgroups.remove()

    def __enter__(self) -> "ProcessExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
