"""The slot's cgroups seen from inside (v1 or v2): opened once, then split between A and the zygote.

Process backend: the host creates, per slot, two leaf cgroups in the memory and
pids controllers (cgroup v1: one tree per controller; v2: one tree) and binds the
slot's directory into the sandbox (process_backend.SlotCgroups)::

    <slot>/supervisor   A: a fixed memory limit and a few pids, set by the host
    <slot>/programs     the template zygote and every B: limits set per execution
    <slot>              a ceiling the host sets once, above both

The slot's first process (root, before the split) opens every file it will need,
joins ``supervisor`` (so A -- and any process the check code might fork -- lives
in a pids cgroup of the slot), and unmounts the directory: after that no path to
a cgroup file exists inside the sandbox. The template zygote joins ``programs``
(so every B is *born* inside: moving a task per execution would cost an RCU grace
period) and keeps the two limit files; A keeps only read-only descriptors of the
counters. A runs as an unprivileged uid and holds no writable descriptor, so
check code cannot raise a limit or leave the slot's cgroups; it can only ask the
zygote for a limit, which the zygote clamps to the caps the host gave at start
(no more than any client may ask in a request).

Docker backend: the container's own cgroup (mounted read-only by Docker) is the
slot's; the host sets its limits. A only reads its OOM-kill and fork-refusal
counters, so an OOM kill of B is a memory verdict there too. That cgroup also
holds A, the zygote and the fork servers (and their slack), so A holds the program's
processes *together* to memory_mb + scratch_mb itself: :class:`ProgramMemory` reads
what the container's memory.stat charges for anonymous memory and tmpfs while B runs,
less what it held when B started and less A's own growth.

Stdlib only.
"""

from __future__ import annotations

import os

_MB = 1024 * 1024
ZYGOTE_SLACK_MB = 16      # the template zygote lives in the programs' memory cgroup too
ZYGOTE_PIDS = 2           # ... and in their pids cgroup (with a scratch holder for compiled languages)

#: (limit file, counter file, counter key) of the memory controller, per cgroup version.
_MEMORY = {"v1": ("memory.limit_in_bytes", "memory.oom_control", b"oom_kill"),
           "v2": ("memory.max", "memory.events", b"oom_kill")}
#: memory.stat keys (bytes) of the memory a program's processes hold that reclaim cannot take back:
#: anonymous memory and tmpfs/shared memory (page cache of files it reads is not the program's).
_CHARGED = {"v1": (b"total_rss", b"total_shmem"), "v2": (b"anon", b"shmem")}
_PAGE = os.sysconf("SC_PAGE_SIZE")


class Cgroups:
    """One slot's cgroup descriptors. Build with :meth:`for_slot`, :meth:`for_container` or :meth:`none`."""

    def __init__(self, version: str = "", caps: tuple[int, int] = (0, 0)) -> None:
        self.version = version
        self.caps = caps                                  # (memory MB, processes): the most the zygote sets
        self.read: dict[str, int] = {}                    # mem_events, pids_events, pids_current (A)
        self.write: dict[str, int] = {}                   # mem_limit, pids_max (zygote)
        self.join_supervisor_fds: list[int] = []
        self.join_programs_fds: list[int] = []
        self.memory_limited = False                       # a cgroup bounds the memory of the programs
        self.manages_programs = False                     # the programs have cgroups of their own (process mode)
        self._limits: tuple[int, int] | None = None
        self._asked: tuple[int, int, int] | None = None
        #: The slot's fork servers (fork_servers.py) live in the programs' cgroups too: their memory and tasks.
        self.server_mb = 0
        self.server_pids = 0
        self._counters = (0, 0)

    @classmethod
    def none(cls) -> Cgroups:
        return cls()

    @classmethod
    def for_slot(cls, root: str, max_memory_mb: int, max_processes: int) -> Cgroups:
        """Process backend: ``root`` holds ``memory/`` and ``pids/`` (v1) or ``unified/`` (v2)."""
        if os.path.isdir(os.path.join(root, "unified")):
            version, dirs = "v2", {"memory": os.path.join(root, "unified"), "pids": os.path.join(root, "unified")}
        else:
            version = "v1"
            dirs = {c: os.path.join(root, c) for c in ("memory", "pids") if os.path.isdir(os.path.join(root, c))}
        self = cls(version if dirs else "", (max_memory_mb, max_processes))
        try:
            if "memory" in dirs:
                limit, events, _ = _MEMORY[version]
                programs = os.path.join(dirs["memory"], "programs")
                self.write["mem_limit"] = _open(programs, limit, os.O_WRONLY)
                self.read["mem_events"] = _open(programs, events, os.O_RDONLY)
                self.memory_limited = True
            if "pids" in dirs:
                programs = os.path.join(dirs["pids"], "programs")
                self.write["pids_max"] = _open(programs, "pids.max", os.O_WRONLY)
                self.read["pids_events"] = _open(programs, "pids.events", os.O_RDONLY)
                self.read["pids_current"] = _open(programs, "pids.current", os.O_RDONLY)
            for d in sorted(set(dirs.values())):
                self.join_supervisor_fds.append(_open(os.path.join(d, "supervisor"), "cgroup.procs", os.O_WRONLY))
                self.join_programs_fds.append(_open(os.path.join(d, "programs"), "cgroup.procs", os.O_WRONLY))
        except OSError:
            self.close_all()
            return cls.none()
        self.manages_programs = bool(dirs)
        self._counters = self._read_counters()
        return self

    @classmethod
    def for_container(cls, root: str = "/sys/fs/cgroup") -> Cgroups:
        """Docker backend: the container's cgroup, read-only; the host sets its limits."""
        self = cls()
        self.memory_limited = True                        # the docker backend always sets the container's
        if os.path.exists(os.path.join(root, "memory.events")):
            self.version, memory, pids = "v2", root, root
        else:
            self.version, memory, pids = "v1", os.path.join(root, "memory"), os.path.join(root, "pids")
        for key, directory, name in (("mem_events", memory, _MEMORY[self.version][1]),
                                     ("pids_events", pids, "pids.events"),
                                     ("mem_stat", memory, "memory.stat")):
            try:
                self.read[key] = _open(directory, name, os.O_RDONLY)
            except OSError:
                pass
        self._counters = self._read_counters()
        return self

    # -- the slot's first process, before the split ----------------------------------------------
    def join_supervisor(self) -> None:
        """Move the calling process (the slot's first, the future A) into ``supervisor``."""
        for fd in self.join_supervisor_fds:
            os.write(fd, b"0")                            # "0": the writer itself
        _close(self.join_supervisor_fds)

    # -- after the split ---------------------------------------------------------------------------
    def become_zygote(self) -> None:
        """In the template zygote: join ``programs``; keep only the limit files."""
        for fd in self.join_programs_fds:
            os.write(fd, b"0")
        _close(self.join_programs_fds, self.read)

    def become_supervisor(self) -> None:
        """In A: drop every writable descriptor; keep the counters."""
        _close(self.join_programs_fds, self.write)

    def close_all(self) -> None:
        _close(self.join_supervisor_fds, self.join_programs_fds, self.read, self.write)

    # -- the zygote --------------------------------------------------------------------------------
    def set_limits(self, memory_mb: int, scratch_mb: int, max_processes: int) -> None:
        """The programs' limits for the next B: its memory plus the tmpfs it may fill; its processes.

        Clamped to the host's caps: this is asked by A, whose check code is not trusted with the host.
        """
        cap_memory, cap_processes = self.caps
        memory = min(max(int(memory_mb), 1), cap_memory) + min(max(int(scratch_mb), 1), cap_memory)
        self._asked = (memory_mb, scratch_mb, max_processes)
        wanted = ((memory + ZYGOTE_SLACK_MB + self.server_mb) * _MB,
                  min(max(int(max_processes), 1), cap_processes) + ZYGOTE_PIDS + self.server_pids)
        if wanted == self._limits:
            return
        if "mem_limit" in self.write:
            os.pwrite(self.write["mem_limit"], str(wanted[0]).encode(), 0)
        if "pids_max" in self.write:
            os.pwrite(self.write["pids_max"], str(wanted[1]).encode(), 0)
        self._limits = wanted

    def add_server(self, memory_mb: int, tasks: int) -> None:
        """A fork server started: the programs' limits count its memory and tasks on top of B's."""
        self.server_mb += max(int(memory_mb), 0)
        self.server_pids += max(int(tasks), 0)
        if self._asked is not None:
            self.set_limits(*self._asked)

    # -- A -----------------------------------------------------------------------------------------
    def tasks(self) -> int | None:
        """How many tasks the programs' pids cgroup holds (the zygote is one), or None without it."""
        if "pids_current" not in self.read:
            return None
        try:
            return int(os.pread(self.read["pids_current"], 64, 0))
        except (OSError, ValueError):
            return None

    def charged_bytes(self) -> int | None:
        """Container mode: the bytes of anonymous and shared memory the container's cgroup is charged
        now (memory.stat), or None where that file could not be read."""
        fd = self.read.get("mem_stat")
        if fd is None:
            return None
        try:
            data = os.pread(fd, 8192, 0)
        except OSError:
            return None
        keys, total, found = _CHARGED.get(self.version, ()), 0, 0
        for line in data.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] in keys:
                total += int(parts[1])
                found += 1
        return total if found == len(keys) else None

    def oom_kills(self) -> int:
        """The memory cgroup's OOM-kill counter (0 without one)."""
        return _field(self.read.get("mem_events"), _MEMORY.get(self.version, ("", "", b"oom_kill"))[2])

    def _read_counters(self) -> tuple[int, int]:
        return (_field(self.read.get("mem_events"), _MEMORY.get(self.version, ("", "", b"oom_kill"))[2]),
                _field(self.read.get("pids_events"), b"max"))

    def limit_events(self) -> tuple[bool, bool]:
        """(an OOM kill happened, a fork was refused) since the last call."""
        now = self._read_counters()
        before, self._counters = self._counters, now
        return now[0] > before[0], now[1] > before[1]

    @property
    def enabled(self) -> dict:
        return {"cgroup_memory": "mem_events" in self.read or "mem_limit" in self.write,
                "cgroup_pids": "pids_events" in self.read or "pids_max" in self.write,
                "cgroup_version": self.version}


def _open(directory: str, name: str, flags: int) -> int:
    return os.open(os.path.join(directory, name), flags | os.O_CLOEXEC)


def _close(*groups: list[int] | dict[str, int]) -> None:
    """Close every descriptor of each list or dict, and empty it."""
    for group in groups:
        for fd in (group.values() if isinstance(group, dict) else group):
            try:
                os.close(fd)
            except OSError:
                pass
        group.clear()


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


class ProgramMemory:
    """Whether the program B started just after this was built went over its memory limit, as a whole.

    Both modes: the memory cgroup's OOM-kill counter moved (the kernel killed one of the program's
    processes -- often a child, while B itself sleeps on: that is still the program over its limit).
    Container mode (``limit_bytes`` > 0) also: the cgroup there holds A, the zygote and the fork servers
    too, with a slack, so its limit alone is loose. There the program's share is the growth of the
    cgroup's charge for anonymous and shared memory since B started, less A's own growth (A reads B's
    output and decodes its frames; the zygote and the servers hold still while B runs). Page cache is
    not counted: reclaim takes it back."""

    def __init__(self, cgroups: Cgroups, limit_bytes: int = 0) -> None:
        self._cgroups = cgroups
        self.limit_bytes = limit_bytes
        self._oom_start = cgroups.oom_kills()
        self._start = cgroups.charged_bytes() if limit_bytes > 0 else None
        self._own_start = _own_anon_bytes() if self._start is not None else 0

    def oom_killed(self) -> bool:
        """The cgroup's OOM killer killed a process since B started."""
        return self._cgroups.oom_kills() > self._oom_start

    def used_bytes(self) -> int:
        """Container mode: the program's share of the cgroup's charge now (0 where it cannot be read)."""
        now = self._cgroups.charged_bytes() if self._start is not None else None
        if now is None or self._start is None:
            return 0
        return now - self._start - (_own_anon_bytes() - self._own_start)

    def over(self) -> bool:
        return self.oom_killed() or (self._start is not None and self.used_bytes() > self.limit_bytes)


def _own_anon_bytes() -> int:
    """This process's resident memory that no file backs (statm: resident - shared pages)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read().split()
        return (int(fields[1]) - int(fields[2])) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0
