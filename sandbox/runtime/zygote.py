"""Slot entry point, and the template zygote that forks every untrusted process.

Started once per slot, inside the sandbox (bubblewrap for the process backend,
a container for the docker backend)::

    python3 -I -S /opt/sandbox/runtime/zygote.py --mode process --slot-uid 61000 \\
        --supervisor-uid 61512 [--cgroup /run/sandbox/cgroup] [--no-setuid] [--scratch /scratch] \\
        [--private-proc /run/sandbox/proc] [--max-memory-mb 4096] [--max-processes 1024]

The process pre-imports what HumanEval-style code uses, opens the slot's cgroup
files and joins the supervisor's cgroup (cgroups.py), installs the seccomp
filter that refuses user namespaces to the whole slot (seccomp.py), then splits
in two:

* the **template zygote** (forked child): closes the host's pipes, joins the
  programs' cgroups, sets no_new_privs, empties its capability bounding set, and
  from then on only forks. It never receives a byte of any request -- only "spawn a B with these
  limits and these fds" -- so every B it forks (and B's memory is a copy of
  the zygote's) contains nothing from any execution: not the check code, not
  another rollout's program, inputs or results. Forking this warm interpreter
  (``gc.freeze()``-d, so children do not dirty its pages) costs ~1 ms;
  starting a fresh one ~20 ms.
* the **supervisor A** (the original process, supervisor.py): speaks the
  host protocol on fds 0/1, asks the zygote for B's, talks to them. It runs the
  reference's check code, so it confines itself before reading any request
  (isolation.confine_supervisor): namespaces of its own, an unprivileged uid of
  its own with only CAP_KILL, no fork, no writable cgroup descriptor.

Before it empties its bounding set, the template starts the fork servers the host named
(``--fork-servers``, fork_servers.py): a spawn whose configuration names one of their languages is
forked by that warm interpreter instead (same fds, the rlimits from our clamped configuration), and
its exit notices reach A as our children's do.

The zygote trusts nothing A sends beyond "which configuration, which fds": a B's
uid, namespaces and scratch come from the zygote's own facts (isolation.slot_fields),
and limits, the scratch size and the programs' cgroup limits are clamped to the
caps the host gave on the command line (no more than any client may request).

Fork service protocol (forks.py: AF_UNIX SOCK_SEQPACKET, one message per packet,
fds by SCM_RIGHTS). The hot path is short text, because every object the zygote
touches after a fork costs it a copy-on-write fault: A -> zygote
``S <role> <cfg-id>`` + fds [stdin, stdout, stderr(, channel)] -> ``P <pid>`` +
[pidfd]; unprompted, when a child is reaped, ``X <pid> <status> <utime> <stime>
<maxrss>``. JSON for the rest: ``{"op": "cfg", "id", "cfg"}`` (B's configuration:
limits, argv; sent once, then named by id; ``{"op": "forget"}`` drops them all);
``{"op": "resize", "scratch_mb"}`` -> ``{"op": "resized"}`` (the slot's scratch and
/dev/shm tmpfs size); ``{"op": "limits", "memory_mb", "scratch_mb", "max_processes"}``
-> ``{"op": "limits"}`` (the programs' cgroup limits); ``{"op": "holder", "scratch_mb"}``
-> ``{"op": "holder", "pid"}`` + [socket] (container mode: a fork of the zygote whose children share a
per-execution scratch directory, for compiled languages); ``{"op": "cleanup",
"dir"}`` -> kill every process of the slot uid, remove what it left ->
``{"op": "cleaned", "dirty"}``; ``{"op": "unlink", "name"}`` -> ``{"op": "unlinked"}`` (the
source file of a configuration we hold, removed without a fork: shared-scratch mode); any failure ->
``{"op": "error", "error"}``.

Stdlib only; runs with the sandbox's python3 (``-I -S``: no site, no user paths).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import select
import shutil
import socket
import sys

if __name__ == "__main__":        # -I leaves the script's directory off sys.path: add the package's parent
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import importlib  # noqa: E402

# Modules HumanEval-style code imports: imported here, no B pays for them. Not more: every page the
# zygote holds makes each fork a little slower. (A imports its own modules only after the split.)
PRELOAD = ("math", "re", "string", "collections", "itertools", "functools", "heapq", "bisect", "typing",
           "random", "statistics", "fractions", "decimal", "hashlib", "json", "copy", "operator", "datetime",
           "array", "cmath", "struct", "time")

_PKG = os.path.basename(os.path.dirname(os.path.abspath(__file__))) if __name__ == "__main__" else __package__
cgroups_mod = importlib.import_module(f"{_PKG}.cgroups")
isolation = importlib.import_module(f"{_PKG}.isolation")
seccomp = importlib.import_module(f"{_PKG}.seccomp")
linux = importlib.import_module(f"{_PKG}.linux")
untrusted = importlib.import_module(f"{_PKG}.untrusted")
forks = importlib.import_module(f"{_PKG}.forks")
container_sweep = importlib.import_module(f"{_PKG}.container_sweep")   # docker backend (no namespaces)
fork_servers = importlib.import_module(f"{_PKG}.fork_servers")


def _open_or_none(path: str, flags: int) -> int | None:
    try:
        return os.open(path, flags)
    except OSError:
        return None


def _send(sock: socket.socket, msg: dict, fds: list[int] = ()) -> None:
    forks.send_packet(sock, json.dumps(msg).encode(), fds)


class Template:
    """The fork service loop, run by the template zygote and by per-execution scratch holders."""

    def __init__(self, sock: socket.socket, slot, own_scratch: bool, scratch: str, cgroups=None,
                 servers: dict | None = None) -> None:
        self.sock, self.slot, self.own_scratch, self.scratch = sock, slot, own_scratch, scratch
        self.cgroups = cgroups or cgroups_mod.Cgroups.none()
        self.children: dict[int, int | None] = {}       # pid -> pidfd (ours)
        self.poll = select.poll()
        self.poll.register(sock.fileno(), select.POLLIN)
        self._pid_ns_moved = False
        self.cfgs: dict[bytes, tuple[dict, list]] = {}   # id -> (B's cfg, its rlimits), sent once by A
        # Work done here rather than in B, where every Python object touched costs a page fault:
        # B inherits oom_score_adj (1000: the OOM killer takes B, not us), a fresh IPC namespace,
        # and its rlimits are set by prlimit before A sends it anything to run.
        self.pid = os.getpid()
        self.oom_fd = _open_or_none("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        self.prlimit = linux.has_capability(linux.CAP_SYS_RESOURCE)
        self.servers = dict(servers or {})               # language -> its fork server (fork_servers.py)
        for server in self.servers.values():
            self.poll.register(server.fileno(), select.POLLIN)

    def _fork(self, new_pid_ns: bool) -> int:
        if self.slot.namespaces and (new_pid_ns or self._pid_ns_moved):
            linux.setns(self.slot.pidns_fd, linux.CLONE_NEWPID)   # back to our own PID namespace...
            self._pid_ns_moved = new_pid_ns
            if new_pid_ns:
                linux.unshare(linux.CLONE_NEWPID)                  # ...so the next child starts a new one
        pid = os.fork()
        if pid > 0:
            try:
                pidfd = os.pidfd_open(pid)
                self.poll.register(pidfd, select.POLLIN)
            except (AttributeError, OSError):
                pidfd = None
            self.children[pid] = pidfd
        return pid

    def serve(self) -> None:
        while True:
            timeout = None if all(fd is not None for fd in self.children.values()) else 20
            for fd, _ev in self.poll.poll(timeout):
                if fd == self.sock.fileno():
                    try:
                        data, fds = forks.recv_packet(self.sock)
                    except OSError:
                        data, fds = b"", []
                    if not data:
                        return
                    if data[:1] == b"S":                   # the hot path: no JSON
                        try:
                            self._spawn(data, fds)
                        except OSError as exc:             # fork/unshare refused: A reports it
                            _send(self.sock, {"op": "error", "error": f"spawn: {exc}"})
                    else:
                        self._handle(json.loads(data), fds)
                else:
                    self._relay(fd)
            self._reap()

    def _handle(self, msg: dict, fds: list[int]) -> None:
        op = msg.get("op")
        try:
            if op == "cfg":
                cfg = self._trusted_cfg(msg["cfg"])
                self.cfgs[str(msg["id"]).encode()] = (cfg, untrusted.rlimits(cfg))
            elif op == "forget":
                self.cfgs.clear()
            elif op == "resize":
                isolation.resize_slot_mounts(self.slot, self._cap_mb(msg["scratch_mb"]))
                _send(self.sock, {"op": "resized"})
            elif op == "limits":
                self.cgroups.set_limits(int(msg["memory_mb"]), int(msg["scratch_mb"]), int(msg["max_processes"]))
                _send(self.sock, {"op": "limits"})
            elif op == "holder":
                self._holder(self._cap_mb(msg.get("scratch_mb", 64)))
            elif op == "cleanup":
                self._cleanup(str(msg.get("dir", "")))
            elif op == "unlink":
                self._unlink(str(msg.get("name", "")))
            else:
                _send(self.sock, {"op": "error", "error": f"unknown op {op!r}"})
        except OSError as exc:
            _send(self.sock, {"op": "error", "error": f"{op}: {exc}"})
        finally:
            for fd in fds:
                os.close(fd)

    def _cap_mb(self, value: object) -> int:
        return min(max(int(value), 1), self.slot.caps[0])

    def _trusted_cfg(self, asked: dict) -> dict:
        """B's configuration from A's: the slot's facts are ours, the limits clamped to the host's caps."""
        lim = dict(asked["limits"])
        lim["memory_mb"] = self._cap_mb(lim["memory_mb"])
        lim["max_processes"] = min(max(int(lim["max_processes"]), 1), self.slot.caps[1])
        lim["file_size_mb"] = self._cap_mb(lim["file_size_mb"])
        lim["open_files"] = min(max(int(lim["open_files"]), 3), 65536)
        cfg = {**asked, **isolation.slot_fields(self.slot), "limits": lim,
               "scratch_mb": self._cap_mb(asked["scratch_mb"]), "own_scratch": self.own_scratch,
               "scratch": self.scratch}
        if asked.get("memory_mb"):
            cfg["memory_mb"] = self._cap_mb(asked["memory_mb"])
        return cfg

    def _spawn(self, packet: bytes, fds: list[int]) -> None:
        try:
            _, role, cfg_id = packet.split()
            cfg, limits = self.cfgs[cfg_id]
        except (ValueError, KeyError):
            for fd in fds:
                os.close(fd)
            raise OSError(f"bad spawn request {packet[:40]!r}") from None
        server = fork_servers.served(self.servers, cfg, role.decode(), len(fds))
        if server is not None:
            return self._spawn_served(server, cfg, limits, fds)
        by_us = self.prlimit and len(fds) > 3         # without a channel B may run its program at once
        cfg["rlimits_set"] = by_us
        if self.slot.shared_scratch:
            linux.unshare(linux.CLONE_NEWIPC)          # B's SysV IPC and POSIX queues die with it
        if self.oom_fd is not None:
            os.pwrite(self.oom_fd, b"1000", 0)
        try:
            pid = self._fork(new_pid_ns=self.slot.pid_ns_per_b)
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        finally:
            if self.oom_fd is not None and os.getpid() == self.pid:
                os.pwrite(self.oom_fd, b"0", 0)
        if pid == 0:
            self.sock.close()
            untrusted.main(role.decode(), cfg, fds)   # never returns
        for fd in fds:
            os.close(fd)
        if by_us:
            for which, pair in limits:
                resource.prlimit(pid, which, pair)
        pidfd = self.children[pid]
        forks.send_packet(self.sock, b"P %d" % pid, [pidfd] if pidfd is not None else [])

    def _spawn_served(self, server, cfg: dict, limits: list, fds: list[int]) -> None:
        """This execution's process, forked by the language's fork server (fork_servers.py)."""
        try:
            pid, pidfd = server.spawn(cfg, limits, fds)
        except OSError:
            self._drop_server(server)     # a child may hold these fds: this execution fails, the slot retires
            raise
        finally:
            for fd in fds:
                os.close(fd)
        forks.send_packet(self.sock, b"P %d" % pid, [pidfd])
        os.close(pidfd)
        self._relay(server.fileno())

    def _relay(self, fd: int) -> None:
        """A fork server's exit notices go to A as our own children's do; a server that ended is dropped."""
        for server in list(self.servers.values()):
            if server.fileno() != fd:
                continue
            notices = server.read_notices()
            if notices is None:
                self._drop_server(server)
                return
            for notice in notices:
                try:
                    forks.send_packet(self.sock, notice)
                except OSError:
                    pass

    def _drop_server(self, server) -> None:
        self.servers = {name: s for name, s in self.servers.items() if s is not server}
        try:
            self.poll.unregister(server.fileno())
        except KeyError:
            pass
        server.close()

    def _holder(self, scratch_mb: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = self._fork(new_pid_ns=False)
        if pid == 0:
            code = 0
            try:
                ours.close()
                self.sock.close()
                scratch = self.slot.scratch
                if self.slot.namespaces:
                    linux.unshare(linux.CLONE_NEWNS)
                    linux.mount("tmpfs", scratch, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                                f"size={scratch_mb}m,nr_inodes=16384,mode=0700,uid={self.slot.owner},gid={self.slot.owner}")
                else:
                    scratch = os.path.join(scratch, f"h{os.getpid()}")
                    os.mkdir(scratch, 0o700)
                    os.chown(scratch, self.slot.owner, self.slot.owner)
                Template(theirs, self.slot, own_scratch=False, scratch=scratch, cgroups=self.cgroups).serve()
            except BaseException:  # noqa: BLE001 - a holder must never return into the zygote's loop
                code = 1
            os._exit(code)
        theirs.close()
        _send(self.sock, {"op": "holder", "pid": pid, "scratch": ""}, [ours.fileno()])
        ours.close()

    def _unlink(self, name: str) -> None:
        """Shared-scratch mode, after an execution whose processes are all gone (A checked): remove
        the source file a B was told to write -- only a name that a configuration we hold gives as
        its source file, a plain name in our scratch, never any other name A sends -- in this
        process, without the sweep's fork. unlink never follows a link, and a directory of that
        name stays (A then asks for the full sweep)."""
        known = any(cfg.get("write_source") and cfg.get("source_file") == name for cfg, _ in self.cfgs.values())
        if self.slot.shared_scratch and known and name not in ("", ".", "..") and "/" not in name:
            try:
                os.unlink(os.path.join(self.scratch, name))
            except OSError:
                pass                                  # A sees what is left and sweeps
        _send(self.sock, {"op": "unlinked"})

    def _cleanup(self, directory: str) -> None:
        """No PID namespaces: kill everything of the slot uid, remove B's scratch
        (in a child: our memory stays clean)."""
        # docker backend: container_sweep also removes what the uid left in /tmp, /dev/shm, /dev/mqueue
        # and its SysV IPC objects, and reports survivors ("dirty"): A then ends the slot after its report.
        directory = os.path.normpath(directory) if directory else ""
        scratch = directory if os.path.dirname(directory) == self.slot.scratch else ""   # asked by A: a child only
        if self.slot.uid is None:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            _send(self.sock, {"op": "cleaned", "dirty": ""})
            return
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            dirty = "sweep failed"
            try:
                os.close(r)
                dirty = container_sweep.sweep(self.slot.uid, scratch)
            finally:
                try:
                    os.write(w, dirty.encode()[:4000])
                finally:
                    os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            dirty = f.read().decode("utf-8", "replace")
        os.waitpid(pid, 0)
        _send(self.sock, {"op": "cleaned", "dirty": dirty})

    def _reap(self) -> None:
        for pid, pidfd in list(self.children.items()):
            try:
                got, status, ru = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                got, status, ru = pid, 0, None
            if got == 0:
                continue
            if pidfd is not None:
                self.poll.unregister(pidfd)
                os.close(pidfd)
            del self.children[pid]
            notice = b"X %d %d %r %r %d" % ((pid, status, ru.ru_utime, ru.ru_stime, ru.ru_maxrss) if ru is not None
                                            else (pid, status, 0.0, 0.0, 0))
            try:
                forks.send_packet(self.sock, notice)
            except OSError:
                pass


def _become_template(sock: socket.socket, slot, cgroups) -> None:
    """The zygote's one-time set-up after the split; then it serves forks until A hangs up."""
    code = 0
    try:
        devnull = os.open("/dev/null", os.O_RDWR)
        os.dup2(devnull, 0)                      # never hold the host's pipes
        os.dup2(devnull, 1)
        os.close(devnull)
        cgroups.become_zygote()                  # every B is born in the programs' cgroups
        if slot.namespaces and slot.mode == "process":
            linux.unshare(linux.CLONE_NEWCGROUP)  # B sees its own cgroup as the root
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)   # inherited by every B: no privilege through execve
        untrusted.scrub_environment(slot.scratch)
        servers = fork_servers.start_all(slot, lambda msg: os.write(2, f"zygote: {msg}\n".encode()))
        for server in servers.values():            # (before our bounding set is emptied: they keep three caps)
            cgroups.add_server(*server.footprint())
        linux.drop_bounding_set(linux.last_cap())
        Template(sock, slot, own_scratch=True, scratch=slot.scratch, cgroups=cgroups, servers=servers).serve()
    except BaseException as exc:  # noqa: BLE001 - report and exit; A sees the socket close
        os.write(2, f"zygote: {type(exc).__name__}: {exc}\n".encode())
        code = 1
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zygote")
    parser.add_argument("--mode", choices=("process", "container"), default="process")
    parser.add_argument("--slot-uid", type=int, default=61000)
    parser.add_argument("--no-setuid", action="store_true", help="user-namespace sandbox: drop caps, keep uid")
    parser.add_argument("--supervisor-uid", type=int, default=None, help="A's own unprivileged uid")
    parser.add_argument("--cgroup", default="", help="the slot's cgroup directory (process mode, see cgroups.py)")
    parser.add_argument("--scratch", default="/scratch")
    parser.add_argument("--private-proc", default="", help="where A keeps a full /proc (a root-only dir)")
    parser.add_argument("--max-memory-mb", type=int, default=4096, help="cap on any memory/scratch limit A asks")
    parser.add_argument("--max-processes", type=int, default=1024, help="cap on any process limit A asks")
    parser.add_argument("--fork-servers", default="{}",
                        help="JSON: language -> argv of its fork server (fork_servers.py); only these are started")
    args = parser.parse_args(argv)

    linux.prctl(linux.PR_SET_DUMPABLE, 0)          # B (another uid anyway) can never ptrace or read us
    for name in PRELOAD:
        importlib.import_module(name)
    if args.mode == "container":
        cgroups = cgroups_mod.Cgroups.for_container()
    elif args.cgroup:
        cgroups = cgroups_mod.Cgroups.for_slot(args.cgroup, args.max_memory_mb, args.max_processes)
    else:
        cgroups = cgroups_mod.Cgroups.none()
    slot = isolation.SlotInfo(args.mode, None if args.no_setuid else args.slot_uid, args.scratch,
                              supervisor_uid=args.supervisor_uid, memory_cgroup=cgroups.memory_limited)
    slot.caps = (max(args.max_memory_mb, 1), max(args.max_processes, 1))
    slot.fork_servers = {str(k): [str(a) for a in v] for k, v in json.loads(args.fork_servers).items()}
    if slot.namespaces:
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)   # B's mounts never propagate back
        for name in (os.listdir(args.cgroup) if args.cgroup and os.path.isdir(args.cgroup) else ()):
            linux.umount(os.path.join(args.cgroup, name))   # descriptors are open: no path to a cgroup file is left
    if slot.shared_scratch:
        isolation.setup_slot_mounts(slot, args.private_proc)
    cgroups.join_supervisor()                      # A, and anything it could ever fork, in the slot's cgroups
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    try:
        slot.userns_blocked = seccomp.install()    # inherited by A, the zygote and every B
    except OSError as exc:                         # a kernel without seccomp filters: said in the hello
        os.write(2, f"zygote: no seccomp filter, user namespaces stay possible: {exc}\n".encode())
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gc.collect()
    gc.freeze()                                    # children do not touch (copy) these objects' pages
    pid = os.fork()
    if pid == 0:
        ours.close()
        _become_template(theirs, slot, cgroups)
    theirs.close()
    supervisor = importlib.import_module(f"{_PKG}.supervisor")   # before A drops root: the runtime is root's
    cgroups.become_supervisor()
    isolation.confine_supervisor(slot, args.private_proc)
    return supervisor.serve(slot, cgroups, ours, zygote_pid=pid)


if __name__ == "__main__":
    sys.exit(main())
