"""Per-language fork servers: a warm interpreter of the slot that forks one child per execution.

An interpreter whose start-up costs more than a whole sandboxed Python execution (ruby: rubygems,
~55-85 ms; php: its extensions, ~20 ms; R: ~150 ms; racket: ~150 ms, ~1 s with ``#lang racket``; node:
~40 ms) can
name a ``fork_server`` in languages.toml: a script of this directory (fork_server.rb, fork_server.php;
fork_server.R, fork_server.rkt and fork_server.js, whose system calls are C in fork_server_native.c (node's
preparation in fork_server_node.c), built on the host:
sandbox/runtime_build.py) that the
template zygote starts once, when the slot starts (the host names the servers on the zygote's
command line; A can never name an argv), and asks for each execution's process instead of forking
a B that execs the interpreter. Like the zygote, the server never sees a request: it gets only
"fork a child with these fds and rlimits". It is exec'd from a fork of the zygote with no_new_privs,
the zygote's seccomp filter and the program filter (no SIGKILL can be sent), the scrubbed
environment, /dev/null on 0/1 and the zygote's stderr, in the programs' cgroups (whose limits count
its memory and tasks on top), an empty bounding set and only CAP_SETUID, CAP_SETGID and
CAP_SYS_ADMIN (container: CAP_CHOWN; what its child needs to confine itself: linux.keep_across_exec). The child confines
itself as B does before it reads the program from its channel: oom_score_adj 1000, a new IPC
namespace, only its own pipes, the rlimits the zygote sent (clamped as for a B), setgroups([]) and
setresgid/setresuid to the slot uid (effective and permitted capabilities gone; the inheritable set
stays, inert under no_new_privs), the scratch directory. The server runs as root of the slot, never
as the slot uid: a program can neither signal, trace nor read it (/proc hides it), and A's sweep of
the slot uid never touches it. The zygote relays the server's exit notices (wait4's status and
rusage) to A as its own children's.

Only where B gets a uid of its own: the process backend as root (shared scratch) and the docker
backend (``--mode container``); else the language runs its ``run`` command as before. The server's
last argument is the slot's mode. In a container (no namespaces, no CAP_SYS_ADMIN) the child does what
a B does there: no IPC namespace of its own (the container has one; the sweep removes the uid's IPC
objects after every execution), and a scratch directory of its own, ``<scratch>/<pid>`` (0700, made
as root and chowned to the slot uid: the server keeps CAP_CHOWN instead of CAP_SYS_ADMIN), which is
its cwd, HOME and TMPDIR. Protocol (SOCK_SEQPACKET): server -> zygote ``R``
once loaded; zygote -> server ``F <extras 0|1> <source file> <resource:soft:hard>...`` + fds
[stdin, stdout, stderr, channel] -> ``P <pid>`` or ``E <reason>``; unprompted ``X <pid> <status>
<utime> <stime> <maxrss>``.

Stdlib only.
"""

from __future__ import annotations

import _signal
import os
import platform
import select
import socket

from . import forks, linux, seccomp

#: machine -> syscall numbers (wait4, unshare, pidfd_open, capset) a server script calls directly.
_SYSCALLS = {"x86_64": (61, 272, 434, 126), "aarch64": (260, 97, 434, 91)}   # R's helper uses libc's own
#: What a server keeps across its exec, per layout (_layout): its child's setgroups/setresgid/setresuid, and
#: (process) its new IPC namespace, or (container: no namespaces) the chown of its own scratch directory.
_SERVER_CAPS = {"process": (linux.CAP_SETUID, linux.CAP_SETGID, linux.CAP_SYS_ADMIN),
                "container": (linux.CAP_SETUID, linux.CAP_SETGID, linux.CAP_CHOWN)}
#: Added to a server's resident size for the programs' memory limit (what it allocates while serving).
_SERVER_SLACK_MB = 4
#: Signals Python ignores: an exec'd interpreter must start with their default action.
_DEFAULT_SIGNALS = (int(_signal.SIGPIPE), int(_signal.SIGXFSZ), int(_signal.SIGINT))
_SERVER_FD = 3
_REPLY_S = 30.0


def start_all(slot, log) -> dict[str, ForkServer]:
    """The template zygote, once, before it empties its own bounding set: language -> its running server.
    A server that cannot start is left out (logged with ``log``): its language runs ``run`` instead."""
    if not (slot.uid is not None and (slot.shared_scratch or slot.mode == "container")
            and platform.machine() in _SYSCALLS):
        return {}
    servers = {}
    for name, argv in slot.fork_servers.items():
        try:
            servers[name] = ForkServer(list(argv), slot, slot.scratch)
        except OSError as exc:
            log(f"fork server for {name} not started, it runs its run command: {exc}")
    return servers


def _layout(slot) -> str:
    """How a server's child confines itself, named for the slot mode that has it (the server's last
    argument): "process" (the slot's shared scratch, a new IPC namespace per child) or "container" (a
    scratch directory per child, the container's own IPC namespace, swept after every execution)."""
    return "process" if slot.shared_scratch else "container"


def served(servers: dict, cfg: dict, role: str, nfds: int) -> ForkServer | None:
    """The server that forks this spawn's process, or None (B execs the run command)."""
    name = cfg.get("fork_server")
    if role != "command" or nfds != 4 or not isinstance(name, str) or not cfg.get("write_source") \
            or cfg.get("artifacts"):
        return None
    return servers.get(name)


class ForkServer:
    """The zygote's handle on one running server (one per argv and slot)."""

    def __init__(self, argv: list[str], slot, scratch: str) -> None:
        """Fork and exec the server; wait until it has loaded (``R``). Raises OSError."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        layout = _layout(slot)
        argv = [*argv, str(slot.uid), scratch, *(str(n) for n in _SYSCALLS[platform.machine()]), layout]
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                if theirs.fileno() == _SERVER_FD:
                    os.set_inheritable(_SERVER_FD, True)
                else:
                    os.dup2(theirs.fileno(), _SERVER_FD)
                os.closerange(_SERVER_FD + 1, 1 << 20)
                for sig in _DEFAULT_SIGNALS:
                    _signal.signal(sig, _signal.SIG_DFL)
                seccomp.install_program_filter()   # inherited by every child: no SIGKILL from programs
                linux.keep_across_exec(_SERVER_CAPS[layout])
                os.chdir(scratch)
                os.execvp(argv[0], argv)
            except BaseException as exc:  # noqa: BLE001 - never return into the zygote's loop
                try:
                    os.write(2, f"fork server {argv[:2]}: {type(exc).__name__}: {exc}\n".encode())
                finally:
                    os._exit(127)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.notices: list[bytes] = []        # exit notices that arrived while we waited for a reply
        try:
            if self._reply() != b"R":
                raise OSError("no ready message")
        except OSError:
            self.close()
            raise

    def footprint(self) -> tuple[int, int]:
        """(MB, tasks) the loaded server holds in the programs' cgroups."""
        tasks = len(os.listdir(f"/proc/{self.pid}/task"))
        with open(f"/proc/{self.pid}/status") as f:
            rss_kb = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        return -(-rss_kb // 1024) + _SERVER_SLACK_MB, tasks

    def fileno(self) -> int:
        return self.sock.fileno()

    def spawn(self, cfg: dict, limits: list, fds: list[int]) -> tuple[int, int]:
        """Fork a child with these fds and rlimits (ours, from the clamped configuration: the child sets
        them before it reads its channel). Returns (pid, pidfd for A)."""
        words = [b"F", b"1" if cfg.get("extras") else b"0", str(cfg["source_file"]).encode()]
        words += [b"%d:%d:%d" % (int(which), int(soft), int(hard)) for which, (soft, hard) in limits]
        forks.send_packet(self.sock, b" ".join(words), fds)
        reply = self._reply()
        if not reply.startswith(b"P "):
            raise OSError(f"fork server: {reply[:200].decode('utf-8', 'replace')}")
        return int(reply.split()[1]), os.pidfd_open(int(reply.split()[1]))

    def _reply(self) -> bytes:
        poll = select.poll()
        poll.register(self.sock.fileno(), select.POLLIN)
        while True:
            if not poll.poll(int(_REPLY_S * 1000)):
                raise OSError("fork server: no reply")
            data, fds = forks.recv_packet(self.sock)
            for fd in fds:
                os.close(fd)
            if not data:
                raise OSError("fork server: gone")
            if data[:1] == b"X":
                self.notices.append(data)
            else:
                return data

    def read_notices(self) -> list[bytes] | None:
        """Exit notices now readable (with those queued during a spawn); None when the server ended."""
        out, self.notices = self.notices, []
        while select.select([self.sock], [], [], 0)[0]:
            try:
                data, fds = forks.recv_packet(self.sock)
            except OSError:
                data, fds = b"", []
            for fd in fds:
                os.close(fd)
            if not data:
                return None
            if data[:1] == b"X":
                out.append(data)
        return [notice for notice in out if _valid_notice(notice)]

    def close(self) -> None:
        """The server ended (or must): close our end, kill and reap it."""
        self.sock.close()
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _valid_notice(notice: bytes) -> bool:
    """``X pid status utime stime maxrss`` with numbers (A parses it the same way)."""
    parts = notice.split()
    if len(parts) != 6:
        return False
    try:
        int(parts[2]), float(parts[3]), float(parts[4]), int(parts[5])
        return int(parts[1]) > 0
    except ValueError:
        return False
