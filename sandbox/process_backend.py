"""The process backend (default): bubblewrap sandboxes with warm zygotes; no Docker needed.

Why bubblewrap and not raw namespaces from our own code: bwrap (Debian's
``bubblewrap``) is a small, audited tool that builds the *slot* -- an empty
tmpfs root with read-only binds of exactly what programs need (``/usr`` and the
``/lib*`` links, the Python prefix at the neutral ``/opt/python``, a few ``/etc``
files; never ``/`` wholesale, so ``/root``, ``/work``, ``/tmp``, ``/home`` do not
exist inside), the runtime *copied* into it (``/opt/sandbox/runtime``: no bind,
so not even /proc/self/mountinfo names the checkout), /proc and /dev, new PID,
network (loopback only, no route out), IPC and UTS namespaces, a cleared
environment, a new session (no TIOCSTI into our terminal), a read-only root,
and death with its parent -- the fiddly,
security-critical part, done by a tool made for it rather than by ~200 lines of
ctypes of ours. It is paid once per slot (a few ms), never per execution:
inside, the template zygote forks a B per execution, and the per-execution
isolation (a new IPC namespace, rlimits, the drop to the slot uid, the sweep
afterwards) is a handful of syscalls (sandbox/runtime/).

As root (what tests and the service run as), no user namespace is created: the
zygote keeps just the capabilities listed in ``CAPS``, the supervisor runs as a
uid of its own with only CAP_KILL, and B runs as the slot's own uid with none.
Nothing in the slot may create a user namespace (a seccomp filter installed by
the zygote, sandbox/runtime/seccomp.py). As a normal user, bwrap adds a user
namespace (uid 0 inside, the same caps; the same seccomp filter), B keeps that
uid but drops every capability and is PID 1 of its own PID namespace, and there
are no cgroups, so no process-count limit beyond the wall clock (logged once).

cgroups (sandbox/slot_cgroups.py; v2 where the host has it, v1 otherwise): each
slot gets a ``supervisor`` and a ``programs`` cgroup for memory and pids; the
memory limit of the programs is the execution's memory limit, and RLIMIT_AS only
a loose backstop. Without writable cgroups, rlimits alone apply (logged once).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reward_core.sandbox_contract import (
    Cancellation,
    ExecutionRequest,
    ExecutionResult,
    InvalidExecutionRequest,
    SandboxUnavailable,
)
from sandbox import loopback_names
from sandbox.compile_artifacts import DEFAULT_ENTRIES as ARTIFACT_ENTRIES
from sandbox.compile_artifacts import DEFAULT_MAX_MB as ARTIFACT_MAX_MB
from sandbox.compile_artifacts import ArtifactCache
from sandbox.languages import Language, host_version, load_languages, started_fork_servers
from sandbox.runtime_build import built_helpers
from sandbox.slot_cgroups import IN_SANDBOX as CGROUP_IN_SANDBOX
from sandbox.slot_cgroups import SlotCgroups
from sandbox.slot_pool import SlotPool
from sandbox.zygote_client import PipeTransport, SlotHandle

log = logging.getLogger(__name__)

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
RUNTIME_IN_SANDBOX = "/opt/sandbox/runtime"
PYTHON_IN_SANDBOX = "/opt/python"       # the interpreter's prefix, when it is not under /usr
SCRATCH = "/scratch"
# The zygote's: SYS_ADMIN (unshare, mounts), SETUID/SETGID/SETPCAP (become the slot uid, empty the
# bounding set), KILL, DAC_OVERRIDE/FOWNER (the sweep removes what B left in scratch and /dev/shm),
# SYS_RESOURCE (prlimit on a B that may already have dropped to the slot uid).
# A keeps only KILL; B none.
CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
        "CAP_SYS_RESOURCE")
PRIVATE_PROC = "/run/sandbox/proc"     # A's full /proc, in a root-only directory (B gets hidepid=2)
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
#: Supervisor uid = base_uid + this + slot (slot uid = base_uid + slot): a uid of its own, never B's.
SUPERVISOR_UID_OFFSET = 512
_noted: set[str] = set()


@dataclass(frozen=True)
class ProcessSandboxConfig:
    """Knobs of the process backend (``create_executor("process", **options)``)."""

    bwrap: str = "bwrap"                 # path or name of the bubblewrap binary
    python: str = ""                     # interpreter inside the sandbox; default: this one's base interpreter
    #: slot i runs programs as uid/gid base_uid + i. 0: a random block per executor, because
    #: RLIMIT_NPROC counts a uid's processes host-wide, so two executors must not share uids.
    base_uid: int = 0
    cgroups: bool = True                 # per-slot memory/pids cgroups (v2, or v1) when writable
    extra_ro_binds: tuple[str, ...] = ()  # more host paths to expose read-only (e.g. a site-packages dir)
    start_timeout_s: float = 60.0
    #: The most an execution may ask for memory_mb / scratch_mb and max_processes (a request above is
    #: refused); also what the zygote grants the supervisor at most, whatever its check code asks.
    max_memory_mb: int = 4096
    max_processes: int = 1024
    #: The supervisor's own memory cgroup (it decodes what programs return and runs the check code).
    supervisor_memory_mb: int = 1024
    #: Successful compiles kept on the host (sandbox/compile_artifacts.py): a directory ("" : a private
    #: temporary one, removed on close), its bounds (0 MB or 0 entries: no caching).
    compile_cache_dir: str = ""
    compile_cache_mb: int = ARTIFACT_MAX_MB
    compile_cache_entries: int = ARTIFACT_ENTRIES
    #: The languages whose fork servers each slot starts (languages.toml ``fork_server``). None: every
    #: one not marked ``fork_server_opt_in`` (ruby, php, R, nodejs); "default" in the tuple stands for those.
    fork_servers: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("max_memory_mb", "max_processes", "supervisor_memory_mb"):
            if not int(getattr(self, name)) > 0:
                raise ValueError(f"ProcessSandboxConfig.{name} must be > 0, got {getattr(self, name)!r}")


def _note_once(key: str, msg: str, *args: object) -> None:
    if key not in _noted:
        _noted.add(key)
        log.warning(msg, *args)


def sandbox_python(configured: str = "") -> str:
    """The real interpreter binary (not a venv shim): it runs with -I -S, so site-packages never matter."""
    return os.path.realpath(configured or sys.executable)


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


def _interpreter(python: str) -> tuple[str, str, str]:
    """(host prefix to bind or "", the interpreter's path inside, its library dir inside or "")."""
    prefix = os.path.dirname(os.path.dirname(python))
    if prefix == "/usr" or prefix.startswith("/usr/"):
        return "", python, ""
    inside = PYTHON_IN_SANDBOX + python[len(prefix):]
    # A shared-library build finds libpython through an absolute RUNPATH under the host prefix.
    has_lib = any(n.startswith("libpython") for n in _listdir(os.path.join(prefix, "lib")))
    return prefix, inside, PYTHON_IN_SANDBOX + "/lib" if has_lib else ""


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def runtime_files() -> list[Path]:
    """The runtime's modules and fork-server scripts, copied into every slot (never bound: a bind names its
    host path)."""
    return sorted([*RUNTIME_DIR.glob("*.py"), *RUNTIME_DIR.glob("*.rb"), *RUNTIME_DIR.glob("*.php"),
                   *RUNTIME_DIR.glob("*.R"), *RUNTIME_DIR.glob("*.rkt"), *RUNTIME_DIR.glob("*.js")])


def etc_written_fds() -> list[tuple[int, str]]:
    """(open fd at offset 0, path inside) of each file loopback_names writes into the sandbox's /etc, in
    memory: bwrap copies them in."""
    fds = []
    for name, text in loopback_names.ETC_FILES.items():
        fd = os.memfd_create(f"sandbox-etc-{name}", os.MFD_CLOEXEC)
        os.write(fd, text.encode())
        os.lseek(fd, 0, os.SEEK_SET)
        fds.append((fd, f"/etc/{name}"))
    return fds


def _filesystem(config: ProcessSandboxConfig, prefix: str, runtime_fds: Sequence[tuple[int, str]],
                etc_fds: Sequence[tuple[int, str]] = ()) -> list[str]:
    """bwrap arguments for the sandbox's read-only root: system files, the interpreter, the runtime."""
    cmd = ["--perms", "0755", "--dir", "/opt",              # else bwrap makes it 0700: B imports from /opt/python
           "--perms", "0700", "--dir", "/opt/sandbox",      # the runtime: root's (A imports before it drops)
           "--ro-bind", "/usr", "/usr"]
    for d in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            cmd += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            cmd += ["--ro-bind", d, d]
    cmd += ["--perms", "0755", "--dir", "/etc"]       # else bwrap makes it 0700: the slot uid could not
    for f in ETC_FILES:                               # follow /etc/alternatives (javac, cc, libblas)
        cmd += ["--ro-bind-try", f, f]
    for fd, path in etc_fds:
        cmd += ["--perms", "0444", "--file", str(fd), path]
    if prefix:
        cmd += ["--ro-bind", prefix, PYTHON_IN_SANDBOX]
    made: set[str] = set()
    for p in [os.path.realpath(p) for p in config.extra_ro_binds]:
        if p == "/usr" or p.startswith("/usr/"):
            continue
        for parent in _ancestors(p):
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", parent]
        cmd += ["--ro-bind", p, p]
    cmd += ["--perms", "0700", "--dir", RUNTIME_IN_SANDBOX]
    for fd, name in runtime_fds:
        cmd += ["--perms", "0444", "--file", str(fd), f"{RUNTIME_IN_SANDBOX}/{name}"]
    return cmd + ["--proc", "/proc", "--dev", "/dev", "--dir", SCRATCH, "--symlink", SCRATCH, "/tmp",
                  "--perms", "0700", "--dir", os.path.dirname(PRIVATE_PROC), "--dir", PRIVATE_PROC]


def bwrap_command(config: ProcessSandboxConfig, slot: int, cgroup_binds: Sequence[tuple[str, str]],
                  as_root: bool, runtime_fds: Sequence[tuple[int, str]] = (),
                  fork_servers: Mapping[str, Sequence[str]] | None = None,
                  etc_fds: Sequence[tuple[int, str]] = ()) -> list[str]:
    """The bubblewrap command line that starts slot ``slot``'s zygote.

    ``runtime_fds``: (open fd, file name) of each runtime module, copied into the sandbox (bwrap
    reads them: the caller passes the fds to bwrap). ``cgroup_binds``: (host dir, inside path).
    ``fork_servers``: language name -> its fork server's argv (languages.toml ``fork_server``): the
    zygote starts only these, never an argv the supervisor sends (fork_servers.py). ``etc_fds``: (open fd,
    path inside) of the files written into /etc (etc_written_fds).
    """
    prefix, python, libdir = _interpreter(sandbox_python(config.python))
    cmd = [config.bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
           "--unshare-uts", "--hostname", loopback_names.HOSTNAME]
    if not as_root:
        # Not --disable-userns: it leaves the zygote in a nested user namespace that owns none of the
        # sandbox's mounts. The zygote's seccomp filter refuses user namespaces in both modes.
        cmd += ["--unshare-user", "--uid", "0", "--gid", "0"]
    cmd += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HOME", SCRATCH, "--setenv", "TMPDIR", SCRATCH, "--cap-drop", "ALL"]
    if libdir:
        cmd += ["--setenv", "LD_LIBRARY_PATH", libdir]       # the zygote clears it: B's programs never see it
    for cap in CAPS:
        cmd += ["--cap-add", cap]
    cmd += _filesystem(config, prefix, runtime_fds, etc_fds)
    zygote_args = ["--mode", "process", "--slot-uid", str(config.base_uid + slot),
                   "--supervisor-uid", str(config.base_uid + SUPERVISOR_UID_OFFSET + slot), "--scratch", SCRATCH,
                   "--private-proc", PRIVATE_PROC, "--max-memory-mb", str(config.max_memory_mb),
                   "--max-processes", str(config.max_processes)]
    for host_dir, inside in cgroup_binds:      # the zygote opens what it needs, then unmounts them
        cmd += ["--bind", host_dir, inside]
    if cgroup_binds:
        zygote_args += ["--cgroup", CGROUP_IN_SANDBOX]
    if not as_root:
        zygote_args.append("--no-setuid")
    elif fork_servers:
        zygote_args += ["--fork-servers", json.dumps({name: [a.replace("{runtime}", RUNTIME_IN_SANDBOX) for a in argv]
                                                      for name, argv in fork_servers.items()})]
    return cmd + ["--remount-ro", "/", "--chdir", "/", "--", python, "-I", "-S", "-B",
                  f"{RUNTIME_IN_SANDBOX}/zygote.py"] + zygote_args


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


def _interrupt_slot(proc: subprocess.Popen) -> list[int]:
    """SIGKILL the sandbox's init (which takes its whole PID namespace down: the program, everything it
    started, the supervisor and the zygote) and bwrap. Touches no fd, so another thread may be reading
    the slot's stdout (it reads EOF). The init's pids, for :func:`_kill_slot` to wait on."""
    inner = _children(proc.pid) if proc.poll() is None else []
    for pid in inner:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    if proc.poll() is None:
        proc.kill()
    return inner


def _kill_slot(proc: subprocess.Popen, timeout_s: float = 5.0) -> None:
    """SIGKILL the sandbox's init (which takes its whole PID namespace down) and bwrap; wait for both."""
    inner = _interrupt_slot(proc)
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
        if not 0 < concurrency <= SUPERVISOR_UID_OFFSET:
            raise ValueError(f"concurrency must be between 1 and {SUPERVISOR_UID_OFFSET}, got {concurrency}")
        base_uid = self.config.base_uid or _random_uid_block(concurrency)
        # Toolchain files outside /usr (a JDK's /etc/java-17-openjdk, /etc/R, /etc/mono), read-only.
        table = load_languages() if languages is None else languages
        lang_paths = tuple(sorted({p for lang in table.values() for p in lang.paths if os.path.exists(p)}))
        self.config = ProcessSandboxConfig(**{**self.config.__dict__, "bwrap": bwrap, "base_uid": base_uid,
                                              "extra_ro_binds": (*self.config.extra_ro_binds, *lang_paths)})
        self.as_root = os.geteuid() == 0
        if not self.as_root:
            _note_once("nonroot", "process sandbox without root: user namespace, no per-slot uid, no cgroups; "
                       "process counts are bounded only by the wall-clock limit")
        self.cgroups = SlotCgroups(concurrency, self.config.cgroups and self.as_root,
                                   supervisor_memory_mb=self.config.supervisor_memory_mb,
                                   max_memory_mb=self.config.max_memory_mb, max_processes=self.config.max_processes)
        try:
            self.languages = table
            self.fork_servers = started_fork_servers(table, self.config.fork_servers)
            # C helpers of the fork servers (R's), built once per process; fork servers run as root only.
            self.runtime = [*runtime_files(), *(built_helpers() if self.as_root and self.fork_servers else ())]
            artifacts = ArtifactCache(self.config.compile_cache_dir or None, self.config.compile_cache_mb << 20,
                                      self.config.compile_cache_entries)
            self.pool = SlotPool(concurrency, self._start_slot, backend=self.name, languages=table,
                                 start_timeout_s=self.config.start_timeout_s, artifact_cache=artifacts,
                                 toolchain_version=lambda lang: host_version(lang.version) if lang.version else "")
        except BaseException:
            self.cgroups.remove()
            raise

    def _start_slot(self, index: int) -> SlotHandle:
        fds = [(os.open(f, os.O_RDONLY | os.O_CLOEXEC), f.name) for f in self.runtime]
        etc = etc_written_fds()
        try:
            cmd = bwrap_command(self.config, index, self.cgroups.binds(index), self.as_root, fds, self.fork_servers,
                                etc)
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    close_fds=True, pass_fds=[fd for fd, _ in fds + etc], start_new_session=False)
        finally:
            for fd, _ in fds + etc:
                os.close(fd)
        threading.Thread(target=_forward_stderr, args=(proc, index), name=f"sandbox-slot-{index}-stderr",
                         daemon=True).start()

        def kill() -> None:
            _kill_slot(proc)

        def interrupt() -> None:
            _interrupt_slot(proc)

        return SlotHandle(PipeTransport.from_popen(proc), kill, description=f"bwrap pid {proc.pid}",
                          extra={"pid": proc.pid}, alive=lambda: proc.poll() is None,
                          interrupt=interrupt)

    @property
    def hellos(self) -> list[dict]:
        return self.pool.hellos

    @property
    def compile_cache(self):
        """Compile failures answered without starting a compiler (hits, misses): sandbox/compile_cache.py."""
        return self.pool.compile_cache

    @property
    def artifact_cache(self) -> ArtifactCache | None:
        """Successful compiles answered without a compiler (hits, misses, bytes): sandbox/compile_artifacts.py."""
        return self.pool.artifact_cache

    def _within_caps(self, request: ExecutionRequest) -> None:
        limits = getattr(request, "limits", None)
        for name, cap, option in (("memory_mb", self.config.max_memory_mb, "max_memory_mb"),
                                  ("scratch_mb", self.config.max_memory_mb, "max_memory_mb"),
                                  ("max_processes", self.config.max_processes, "max_processes")):
            value = getattr(limits, name, 0)
            if isinstance(value, (int, float)) and value > cap:
                raise InvalidExecutionRequest(f"limit {name}={value} is above this sandbox's {option} ({cap}); "
                                              f"raise it with create_executor('process', {option}=...)")

    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult:
        self._within_caps(request)
        return self.pool.execute(request, cancel)

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        for request in requests:
            self._within_caps(request)
        return self.pool.execute_batch(requests)

    def close(self) -> None:
        self.pool.close()
        self.cgroups.remove()

    def __enter__(self) -> ProcessExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
