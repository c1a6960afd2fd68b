"""Slot-level isolation, set up once when a slot starts: facts, mounts, A's confinement.

:class:`SlotInfo` is what both long-lived processes of a slot (the supervisor
A and the template zygote) know: the mode, the slot and supervisor uids, whether
namespaces are available, whether a cgroup bounds the programs' memory, the
scratch location. :func:`b_config` turns it plus one execution's limits into
the dict B confines itself with (untrusted.confine) -- numbers and
configuration only, never request data. The zygote takes the slot's facts from
its own SlotInfo, never from A's message (:func:`slot_fields`).

:func:`confine_supervisor`: A is trusted for verdicts (it runs the reference's
check code), not with the host. It gets namespaces of its own and runs as an
unprivileged uid of its own with only CAP_KILL, RLIMIT_NPROC 1 and no writable
cgroup descriptor (cgroups.py), so check code can neither fork nor touch a
cgroup nor act as root.
"""

from __future__ import annotations

import os
import resource

from . import linux

#: A's namespaces of its own (process backend): a mount namespace with the full /proc, an empty
#: network, its own IPC and UTS, and a cgroup namespace rooted at its own cgroup.
SUPERVISOR_NAMESPACES = (linux.CLONE_NEWNS | linux.CLONE_NEWCGROUP | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
                         | linux.CLONE_NEWNET)


class SlotInfo:
    """Static facts about this slot, shared by A and the template zygote."""

    def __init__(self, mode: str, slot_uid: int | None, scratch: str, supervisor_uid: int | None = None,
                 memory_cgroup: bool = False) -> None:
        self.mode = mode
        self.uid = slot_uid                  # None: cannot change uid (user namespace): drop caps only
        self.owner = 0 if slot_uid is None else slot_uid
        self.supervisor_uid = supervisor_uid if slot_uid is not None else None
        # A cgroup bounds the memory of B (and of whatever B starts): RLIMIT_AS, which counts address
        # space (per-thread malloc arenas and stacks) rather than memory, is then only a loose backstop.
        self.memory_cgroup = memory_cgroup
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
        self.caps = (4096, 1024)             # (memory MB, processes): the most the zygote grants A (set by main)
        self.userns_blocked = False          # the seccomp filter is installed (set by main)
        self.fork_servers: dict[str, list[str]] = {}   # language -> its fork server's argv, from the host (main)
        self.pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC) if self.namespaces else None

    def describe(self) -> dict:
        return {"mode": self.mode, "namespaces": self.namespaces, "setuid": self.uid is not None,
                "uid": self.uid, "supervisor_uid": self.supervisor_uid, "pid_ns_per_b": self.pid_ns_per_b,
                "shared_scratch": self.shared_scratch, "memory_cgroup": self.memory_cgroup,
                "userns_blocked": self.userns_blocked}


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


def slot_fields(slot: SlotInfo) -> dict:
    """The security-relevant part of B's configuration: the zygote's own facts, whatever A sent."""
    return {"namespaces": slot.namespaces, "pid1": slot.pid_ns_per_b, "uid": slot.uid, "owner": slot.owner,
            "scratch": slot.scratch, "rlimit_nproc": slot.uid is not None, "memory_cgroup": slot.memory_cgroup}


def b_config(slot: SlotInfo, limits: dict, **extra: object) -> dict:
    """What B needs to confine itself: the slot's facts and this execution's limits."""
    cfg = {**slot_fields(slot), "scratch_mb": int(limits["scratch_mb"]),
           "limits": {k: limits[k] for k in ("cpu_s", "memory_mb", "max_processes", "file_size_mb", "open_files")}}
    cfg.update(extra)
    return cfg


def confine_supervisor(slot: SlotInfo, private_proc: str) -> None:
    """A, right after the split: its own namespaces, then an unprivileged uid with CAP_KILL only.

    Called while still root with the slot's capabilities. Afterwards A can signal the slot's
    processes (to kill B and its leftovers) and read what it needs, and nothing else: it cannot
    fork (RLIMIT_NPROC 1 for a uid of its own; its pids cgroup as well), write a cgroup file, mount,
    create a user namespace (seccomp), or ptrace.
    """
    if slot.namespaces and slot.mode == "process":
        linux.unshare(SUPERVISOR_NAMESPACES)
        if private_proc and slot.proc == private_proc:
            linux.mount(private_proc, "/proc", None, linux.MS_BIND | linux.MS_REC)   # A's full /proc, A's alone
            slot.proc = "/proc"
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.drop_bounding_set(linux.last_cap())                # while CAP_SETPCAP is still effective
    if slot.supervisor_uid is not None:
        uid = slot.supervisor_uid
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))     # a uid of its own: A is its only process
        linux.prctl(linux.PR_SET_KEEPCAPS, 1)
        os.setgroups(())
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        linux.prctl(linux.PR_SET_KEEPCAPS, 0)
    linux.set_capabilities((linux.CAP_KILL,))
    linux.prctl(linux.PR_SET_DUMPABLE, 0)                     # (a uid change resets it)


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
