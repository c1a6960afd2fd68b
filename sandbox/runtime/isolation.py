"""Slot-level isolation facts and cgroup control, set up once when a slot starts.

:class:`SlotInfo` is what both long-lived processes of a slot (the supervisor
A and the template zygote) know: the mode, the slot uid, whether namespaces
are available, the scratch location. :func:`b_config` turns it plus one
execution's limits into the dict B confines itself with (untrusted.confine) --
numbers and configuration only, never request data.

:class:`Cgroups` is A's handle on the slot's cgroup v1 memory and pids
controllers. The template zygote joins them once at start-up, so every B is
*born* inside (moving a task between cgroups costs an RCU grace period,
~1 ms, which per execution would cost more than the fork). A writes the limits
only when they change and reads the OOM-kill / fork-refusal counters only
after an abnormal exit.
"""

from __future__ import annotations

import os

from . import linux

_MB = 1024 * 1024
ZYGOTE_SLACK_MB = 16      # the template zygote lives in the slot's memory cgroup too
ZYGOTE_PIDS = 2           # ... and in its pids cgroup (with a scratch holder for compiled languages)


class Cgroups:
    """cgroup v1 memory + pids control files of this slot (opened once, before the zygote forks)."""

    def __init__(self, memory_dir: str | None, pids_dir: str | None) -> None:
        self.mem = _open_all(memory_dir, {"limit": ("memory.limit_in_bytes", os.O_WRONLY),
                                          "oom": ("memory.oom_control", os.O_RDONLY),
                                          "procs": ("cgroup.procs", os.O_WRONLY)})
        self.pids = _open_all(pids_dir, {"max": ("pids.max", os.O_WRONLY),
                                         "events": ("pids.events", os.O_RDONLY),
                                         "current": ("pids.current", os.O_RDONLY),
                                         "procs": ("cgroup.procs", os.O_WRONLY)})
        self._limits: tuple[int, int] | None = None
        self._counters = self._read_counters()

    def join(self) -> None:
        """Move the calling process (the template zygote) into both cgroups."""
        for d in (self.mem, self.pids):
            if d:
                os.write(d["procs"], b"0")          # cgroup v1: "0" is the writer itself

    def close_all(self) -> None:
        for d in (self.mem, self.pids):
            for fd in d.values():
                os.close(fd)
            d.clear()

    def set_limits(self, memory_mb: int, scratch_mb: int, max_processes: int) -> None:
        """The limits for the next B: its memory plus the tmpfs it may fill; its processes."""
        wanted = ((memory_mb + scratch_mb + ZYGOTE_SLACK_MB) * _MB, max_processes + ZYGOTE_PIDS)
        if wanted == self._limits:
            return
        if self.mem:
            os.pwrite(self.mem["limit"], str(wanted[0]).encode(), 0)
        if self.pids:
            os.pwrite(self.pids["max"], str(wanted[1]).encode(), 0)
        self._limits = wanted

    def tasks(self) -> int | None:
        """How many tasks the slot's pids cgroup holds (the zygote is one), or None without it."""
        if not self.pids:
            return None
        try:
            return int(os.pread(self.pids["current"], 64, 0))
        except (OSError, ValueError):
            return None

    def _read_counters(self) -> tuple[int, int]:
        return (_field(self.mem.get("oom"), b"oom_kill"), _field(self.pids.get("events"), b"max"))

    def limit_events(self) -> tuple[bool, bool]:
        """(an OOM kill happened, a fork was refused) since the last call."""
        now = self._read_counters()
        before, self._counters = self._counters, now
        return now[0] > before[0], now[1] > before[1]

    @property
    def enabled(self) -> dict:
        return {"cgroup_memory": bool(self.mem), "cgroup_pids": bool(self.pids)}


def _open_all(directory: str | None, files: dict) -> dict[str, int]:
    fds: dict[str, int] = {}
    if not directory:
        return fds
    try:
        for key, (name, flags) in files.items():
            fds[key] = os.open(os.path.join(directory, name), flags | os.O_CLOEXEC)
    except OSError:
        for fd in fds.values():
            os.close(fd)
        return {}
    return fds


def _field(fd: int | None, key: bytes) -> int:
    if fd is None:
        return 0
    try:
        data = os.pread(fd, 4096, 0)
    except OSError:
        return 0
    for line in data.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


class SlotInfo:
    """Static facts about this slot, shared by A and the template zygote."""

    def __init__(self, mode: str, slot_uid: int | None, scratch: str) -> None:
        self.mode = mode
        self.uid = slot_uid                  # None: cannot change uid (user namespace): drop caps only
        self.owner = 0 if slot_uid is None else slot_uid
        self.scratch = scratch
        self.namespaces = mode == "process" or probe_namespaces()
        # Only without a uid of its own is B the init of a PID namespace of its own: PID 1 ignores
        # the default action of signals it sends itself (a program that prints the right answer and
        # then raises SIGSEGV would exit 0). With a uid, the slot uid's processes *are* B's tree, and
        # a sweep (kill(-1) as that uid) ends whatever B left behind.
        self.pid_ns_per_b = self.namespaces and slot_uid is None
        # With namespaces and a uid of its own, B needs no mount namespace per execution (tearing one
        # down waits for an RCU grace period, ~1 ms): scratch, /dev/shm and a hidepid=2 /proc are set
        # up once per slot (setup_slot_mounts), swept and checked empty after every execution.
        self.shared_scratch = self.namespaces and slot_uid is not None
        self.proc = "/proc"                  # A's full view of the slot's processes (see setup_slot_mounts)
        self.scratch_mb = DEFAULT_SCRATCH_MB
        self.pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC) if self.namespaces else None

    def describe(self) -> dict:
        return {"mode": self.mode, "namespaces": self.namespaces, "setuid": self.uid is not None,
                "uid": self.uid, "pid_ns_per_b": self.pid_ns_per_b, "shared_scratch": self.shared_scratch,
                "private_proc": self.proc != "/proc"}


def setup_slot_mounts(slot: SlotInfo, private_proc: str) -> None:
    """Once, in the zygote before the split (shared-scratch mode): the slot's scratch, /dev/shm, /proc.

    /proc becomes a fresh instance with hidepid=2, so B sees only its own uid's processes; the
    full instance stays reachable for A at ``private_proc`` (inside a root-only 0700 directory
    that bwrap created, so B cannot reach it).
    """
    if private_proc and os.path.isdir(private_proc):
        linux.mount("/proc", private_proc, None, linux.MS_BIND | linux.MS_REC)
        linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, "hidepid=2")
        slot.proc = private_proc
    for path, flags in _SCRATCH_MOUNTS.items():
        linux.mount("tmpfs", path if path != "scratch" else slot.scratch, "tmpfs", flags,
                    f"size={slot.scratch_mb}m,nr_inodes=16384,mode=1777")


def resize_slot_mounts(slot: SlotInfo, scratch_mb: int) -> None:
    """In the zygote, when an execution asks for another scratch size."""
    for path, flags in _SCRATCH_MOUNTS.items():
        linux.mount(None, path if path != "scratch" else slot.scratch, None, flags | linux.MS_REMOUNT,
                    f"size={int(scratch_mb)}m")
    slot.scratch_mb = int(scratch_mb)


DEFAULT_SCRATCH_MB = 64
_SCRATCH_MOUNTS = {"scratch": linux.MS_NOSUID | linux.MS_NODEV,
                   "/dev/shm": linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC}


def b_config(slot: SlotInfo, limits: dict, **extra: object) -> dict:
    """What B needs to confine itself: the slot's facts and this execution's limits."""
    cfg = {"namespaces": slot.namespaces, "pid1": slot.pid_ns_per_b, "uid": slot.uid, "owner": slot.owner,
           "scratch": slot.scratch,
           "scratch_mb": int(limits["scratch_mb"]), "rlimit_nproc": slot.uid is not None,
           "limits": {k: limits[k] for k in ("cpu_s", "memory_mb", "max_processes", "file_size_mb", "open_files")}}
    cfg.update(extra)
    return cfg


def probe_namespaces() -> bool:
    """Can we create the namespaces B needs (container mode: only with CAP_SYS_ADMIN)?"""
    pid = os.fork()
    if pid == 0:
        try:
            linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
