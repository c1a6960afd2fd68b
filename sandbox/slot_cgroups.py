"""The process backend's per-slot cgroups on the host: cgroup v2 where the host has it, v1 otherwise.

Per executor, per slot (``<pid>-<n>`` names the executor; stale ones of dead
processes are removed by the next executor)::

    v1: /sys/fs/cgroup/{memory,pids}/reward-sandbox/<pid>-<n>/slot-<i>/{supervisor,programs}
    v2: /sys/fs/cgroup/reward-sandbox/<pid>-<n>/slot-<i>/{supervisor,programs}

* ``slot-<i>``: a ceiling written once here, above anything its children can be given;
* ``supervisor``: the supervisor A (which runs the reference's check code): a fixed
  memory limit and 2 pids (A, and the template zygote on its way to ``programs``);
* ``programs``: the template zygote and every B; their memory (the execution's
  memory + scratch + a slack for the zygote) and process limits are set per
  execution by the zygote, clamped to the executor's caps (sandbox/runtime/cgroups.py).

Why cgroups and not RLIMIT_AS: the memory limit must count memory. RLIMIT_AS counts
address space, and every thread reserves a malloc arena (64 MB) and a stack (8 MB), so
a correct program with 4 threads and 200 MB died of MemoryError under a 256 MB limit.
With a memory cgroup, RLIMIT_AS stays only as a loose backstop.

The slot directory is bound into the sandbox at ``/run/sandbox/cgroup/<name>`` (``memory``
and ``pids``, or ``unified``); the slot's first process opens what it needs and unmounts it.
v2 needs the memory and pids controllers delegable at the cgroup2 root (true on a host
booted with the unified hierarchy, or a container given its own cgroup namespace root);
otherwise rlimits alone apply (logged once).
"""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "reward-sandbox"
IN_SANDBOX = "/run/sandbox/cgroup"       # where the slot's directories are bound (inside the 0700 /run/sandbox)
SUPERVISOR_PIDS = 2                      # A, and the template zygote until it joins "programs"
ZYGOTE_SLACK_MB = 16                     # as sandbox/runtime/cgroups.py
ZYGOTE_PIDS = 2
_V1_LIMITS = {"memory": "memory.limit_in_bytes", "pids": "pids.max"}
_MB = 1024 * 1024
_seq = itertools.count()
_noted: set[str] = set()


def _note_once(key: str, msg: str, *args: object) -> None:
    if key not in _noted:
        _noted.add(key)
        log.warning(msg, *args)


def hierarchies(root: Path = CGROUP_ROOT) -> tuple[str, dict[str, Path]]:
    """("v1", {"memory": dir, "pids": dir}), ("v2", {"unified": root}) or ("", {}) if none is writable."""
    v1 = {c: root / c for c in ("memory", "pids")
          if (root / c / "cgroup.procs").exists() and os.access(root / c, os.W_OK)}
    if v1:
        return "v1", v1
    try:
        controllers = set((root / "cgroup.controllers").read_text().split())
    except OSError:
        controllers = set()
    if {"memory", "pids"} <= controllers and os.access(root, os.W_OK):
        return "v2", {"unified": root}
    return "", {}


class SlotCgroups:
    """The per-slot cgroup directories of one executor; created on start, removed on close."""

    def __init__(self, size: int, enabled: bool, *, supervisor_memory_mb: int, max_memory_mb: int,
                 max_processes: int, root: Path = CGROUP_ROOT) -> None:
        self.dirs: list[dict[str, Path]] = [{} for _ in range(size)]   # slot -> {"memory"|"pids"|"unified": dir}
        self.group = f"{os.getpid()}-{next(_seq)}"
        self.version, self.roots = hierarchies(root) if enabled else ("", {})
        if enabled and not self.roots:
            _note_once("cg-none", "no writable cgroup v1 memory/pids or v2 hierarchy at %s: rlimits only "
                       "(RLIMIT_AS then limits address space, which fails multi-threaded programs early)", root)
        ceiling_mb = 2 * max_memory_mb + ZYGOTE_SLACK_MB + supervisor_memory_mb
        limits = {"memory": (ceiling_mb, supervisor_memory_mb),
                  "pids": (max_processes + ZYGOTE_PIDS + SUPERVISOR_PIDS, SUPERVISOR_PIDS)}
        for name, base in list(self.roots.items()):
            try:
                parent = base / CGROUP_PARENT
                self._mkdir(parent)
                _remove_stale(parent)
                self._mkdir(parent / self.group)
                for i in range(size):
                    slot = parent / self.group / f"slot-{i}"
                    self._mkdir(slot)
                    for child in ("supervisor", "programs"):
                        (slot / child).mkdir(exist_ok=True)
                    self._write_limits(name, slot, limits)
                    self.dirs[i][name] = slot
            except OSError as exc:
                _note_once(f"cg-{name}-mk", "cannot set up %s cgroups under %s (%s): rlimits only", name, base, exc)
                for slot in self.dirs:
                    slot.pop(name, None)
                _rmtree(base / CGROUP_PARENT / self.group)
                del self.roots[name]

    def _mkdir(self, d: Path) -> None:
        """A non-leaf directory: on v2 its children get the memory and pids controllers."""
        d.mkdir(exist_ok=True)
        if self.version == "v2":
            if d.name == CGROUP_PARENT:
                _enable_controllers(d.parent)      # the cgroup2 root (or our namespace's)
            _enable_controllers(d)

    def _write_limits(self, name: str, slot: Path, limits: dict) -> None:
        """The slot's ceiling and the supervisor's limits (the programs' are the zygote's to set)."""
        if self.version == "v2":
            (slot_mb, sup_mb), (slot_pids, sup_pids) = limits["memory"], limits["pids"]
            for d, mb, pids in ((slot, slot_mb, slot_pids), (slot / "supervisor", sup_mb, sup_pids)):
                _write(d / "memory.max", mb * _MB)
                _write(d / "pids.max", pids)
            for d in (slot, slot / "supervisor", slot / "programs"):
                if (d / "memory.swap.max").exists():
                    _write(d / "memory.swap.max", 0)
            return
        slot_value, sup_value = limits[name]
        unit = _MB if name == "memory" else 1
        _write(slot / _V1_LIMITS[name], slot_value * unit)
        _write(slot / "supervisor" / _V1_LIMITS[name], sup_value * unit)

    def binds(self, slot: int) -> list[tuple[str, str]]:
        """(host dir, path inside the sandbox) for slot ``slot``."""
        return [(str(d), f"{IN_SANDBOX}/{name}") for name, d in sorted(self.dirs[slot].items())]

    def remove(self) -> None:
        for base in self.roots.values():
            _rmtree(base / CGROUP_PARENT / self.group)


def _write(path: Path, value: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


def _enable_controllers(d: Path) -> None:
    """v2: let ``d``'s children use the memory and pids controllers (EBUSY if ``d`` holds processes)."""
    enabled = set((d / "cgroup.subtree_control").read_text().split())
    missing = {"memory", "pids"} - enabled
    if missing:
        fd = os.open(d / "cgroup.subtree_control", os.O_WRONLY)
        try:
            os.write(fd, " ".join(f"+{c}" for c in sorted(missing)).encode())
        finally:
            os.close(fd)


def _rmtree(d: Path) -> None:
    """Remove a cgroup directory and its sub-cgroups, deepest first (only empty cgroups can go)."""
    try:
        children = [c for c in d.iterdir() if c.is_dir()]
    except OSError:
        return
    for child in children:
        _rmtree(child)
    try:
        d.rmdir()
    except OSError:
        pass


def _remove_stale(parent: Path) -> None:
    """cgroups left by executors of processes that no longer exist."""
    for group in parent.iterdir():
        pid = group.name.split("-", 1)[0]
        if group.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _rmtree(group)
