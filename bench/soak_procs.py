"""The soak's process side: the reward server it starts, that server's process tree, the
memory sampler, the fault injector, and the clean-up that leaves nothing running.

Process tree of ``python -m reward_service serve`` (process sandbox backend)::

    server ─┬─ multiprocessing resource tracker
            ├─ bwrap ── bwrap ── zygote/supervisor ── template ── program   (the code task's one
            ├─ bwrap ── ...                                                   executor, in the server)
            └─ forkserver ─┬─ reward-worker-N     (math, gsm8k: verifiers)
                           └─ reward-worker-M

Workers are found by their process name (``reward-worker-*``, set with prctl), or as
the forkserver's children; sandbox processes are the server's ``bwrap`` children and
their descendants (and any a worker starts, e.g. for a composite reward with code).
"""

from __future__ import annotations

import ctypes
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

WORKER_PREFIX = "reward-worker"
CGROUP_DIRS = (Path("/sys/fs/cgroup/memory/reward-sandbox"), Path("/sys/fs/cgroup/pids/reward-sandbox"),
               Path("/sys/fs/cgroup/reward-sandbox"))
_PR_SET_PDEATHSIG = 1


def _die_with_us() -> None:
    """In the server child, before exec: SIGTERM it when the soak dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def start_server(port: int, workers: int, config: Path, log_path: Path) -> subprocess.Popen:
    """The reward server in its own process and session (a terminal's Ctrl-C reaches only the soak)."""
    cmd = [sys.executable, "-m", "reward_service", "--log-level", "WARNING", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(workers), "--config", str(config)]
    log = open(log_path, "wb")  # noqa: SIM115 -- owned by the child; closed below once it has it
    try:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_us, cwd=Path(__file__).resolve().parent.parent)
    finally:
        log.close()


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return ""


def find_workers(server_pid: int) -> list[psutil.Process]:
    """The reward worker processes of the server."""
    tree = descendants(server_pid)
    workers = [p for p in tree if _name(p).startswith(WORKER_PREFIX)]
    if not workers:  # names not set (not Linux?): the forkserver's children
        forkservers = [p for p in tree if _ppid(p) == server_pid and "forkserver" in " ".join(_cmdline(p))]
        workers = [c for f in forkservers for c in _children(f)]
    return workers


def _ppid(p: psutil.Process) -> int:
    """The parent pid, or -1 once the process is gone (processes die while the tree is scanned)."""
    try:
        return p.ppid()
    except psutil.Error:
        return -1


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _children(p: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
    try:
        return p.children(recursive=recursive)
    except psutil.Error:
        return []


def tree_rss(server_pid: int) -> int:
    """Resident bytes of the server and every process below it, summed (shared pages counted per process)."""
    total = 0
    for p in [psutil.Process(server_pid)] + descendants(server_pid):
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def sandbox_cgroups(pids: Iterable[int]) -> list[str]:
    """The sandbox cgroup directories (``reward-sandbox/<pid>-<n>``) that executors of ``pids`` left."""
    mine = {str(p) for p in pids}
    found = []
    for root in CGROUP_DIRS:
        if root.is_dir():
            found.extend(str(d) for d in root.iterdir() if d.is_dir() and d.name.split("-", 1)[0] in mine)
    return sorted(found)


@dataclass
class Watcher:
    """Samples the server tree every ``interval_s``: RSS (start/peak/end) and every pid it ever saw."""

    server_pid: int
    interval_s: float = 0.5
    peak: int = 0
    seen: dict[int, float] = field(default_factory=dict)   # pid -> create_time
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> int:
        for p in descendants(self.server_pid):
            try:
                self.seen.setdefault(p.pid, p.create_time())
            except psutil.Error:
                pass
        try:
            rss = tree_rss(self.server_pid)
        except psutil.Error:
            return 0
        self.peak = max(self.peak, rss)
        return rss

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="soak-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def survivors(self) -> list[psutil.Process]:
        """Processes the server tree once had that still run (same pid and start time)."""
        alive = []
        for pid, created in self.seen.items():
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - created) < 0.01 and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.Error:
                pass
        return alive


class FaultInjector:
    """SIGKILLs, every ``interval`` seconds (seeded), a reward worker, a sandbox slot process, or a program.

    Programs (what the template zygote forks per execution) often live a few ms: when one is wanted the
    injector watches the tree for up to ``PROGRAM_WAIT_S`` to catch one, else it takes a slot process.
    """

    SHARES = (("worker", 0.35), ("program", 0.35), ("slot", 0.30))
    PROGRAM_WAIT_S = 2.0

    def __init__(self, server_pid: int, seed: int, interval: tuple[float, float] = (2.0, 5.0),
                 kinds: tuple[str, ...] = ("worker", "program", "slot")) -> None:
        self.server_pid = server_pid
        self.shares = tuple((k, w) for k, w in self.SHARES if k in kinds)
        if not self.shares:
            raise ValueError(f"no fault kind among {kinds}; choose from {[k for k, _ in self.SHARES]}")
        self.rng = random.Random(seed)
        self.interval = interval
        self.kills: Counter[str] = Counter()
        self.log: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-faults", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.interval)):
            self.inject()

    def inject(self) -> None:
        kinds, weights = zip(*self.shares)
        kind = self.rng.choices(kinds, weights=weights)[0]
        deadline = time.monotonic() + (self.PROGRAM_WAIT_S if kind == "program" else 0.0)
        while True:
            targets = sandbox_targets(self.server_pid)
            pool = targets[kind] or (targets["slot"] if kind == "program" and time.monotonic() > deadline else [])
            if pool or time.monotonic() > deadline or self._stop.is_set():
                break
            time.sleep(0.01)
        if not pool:
            return
        victim, label = self.rng.choice(sorted(pool, key=lambda v: v[0].pid))
        try:
            victim.send_signal(signal.SIGKILL)
        except psutil.Error:
            return
        self.kills[label] += 1
        self.log.append(f"{time.strftime('%H:%M:%S')} SIGKILL {label} pid {victim.pid}")


SLOT_LABELS = {1: "sandbox bwrap", 2: "sandbox bwrap", 3: "sandbox supervisor", 4: "sandbox template zygote"}


def sandbox_targets(server_pid: int) -> dict[str, list[tuple[psutil.Process, str]]]:
    """Kill candidates by kind, labelled by depth below the process that started the slot: 1-2
    bwrap, 3 the slot's supervisor, 4 the template zygote, 5 and deeper a program (and what it forked)."""
    workers = find_workers(server_pid)
    out: dict[str, list[tuple[psutil.Process, str]]] = {"worker": [(w, "worker") for w in workers],
                                                        "program": [], "slot": []}
    try:
        server = psutil.Process(server_pid)
    except psutil.Error:
        return out
    starts = [[c for c in _children(server) if _name(c) == "bwrap"]] + [_children(w) for w in workers]
    for frontier in starts:
        depth = 1
        while frontier:
            for c in frontier:
                if depth in SLOT_LABELS:
                    out["slot"].append((c, SLOT_LABELS[depth]))
                else:
                    out["program"].append((c, "sandbox program"))
            depth += 1
            frontier = [c for p in frontier for c in _children(p)]
    return out


def stop_server(server: subprocess.Popen, watcher: Watcher, grace_s: float) -> tuple[int | None, list[str]]:
    """SIGTERM (drain), then SIGKILL whatever of the tree is left; returns (exit code, leftover process notes)."""
    watcher.sample()
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=grace_s + 20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    time.sleep(1.0)  # let --die-with-parent and worker finalizers run
    leftovers = []
    for p in watcher.survivors():
        try:
            leftovers.append(f"pid {p.pid} {p.name()} {' '.join(p.cmdline())[:80]}")
            p.kill()
        except psutil.Error:
            pass
    return server.returncode, leftovers

