"""A's view of the untrusted processes: ask the template zygote for a B, talk to it, end it.

:func:`spawn` asks the template zygote (forks.ForkClient) for a B, passing the
fds B will use (stdin, stdout/stderr pipes, call channel); the zygote forks B
and answers with B's pid and a pidfd; when B dies the zygote reaps it and sends
its wait status and rusage.

:class:`Child` multiplexes, in one ``select.poll`` loop with a deadline, B's
stdout, stderr, call channel and the zygote's exit notice. A is
single-threaded on purpose: simple, and nothing here can block forever.
stdout/stderr are drained continuously (a full pipe would stall B) and
capped: the first ``output_bytes`` are kept, and the first byte beyond kills
B (``killed_for == "output"``) -- a program flooding its output will not stop
by itself.

Container mode (no cgroup of the programs' own: the container's also holds A): while
waiting, A reads B's resident set every ``RSS_PERIOD_S`` and kills B past its memory
limit (``killed_for == "memory"``); the container's cgroup stays the hard bound.

Killing B is SIGKILL to B (by pidfd). Whatever B started and left behind runs
under the slot uid, and :meth:`Child.reap` hands it to the supervisor's cleanup,
which kills every process of that uid (or, in the no-setuid mode where B is PID
1 of its own PID namespace, the kernel already did). Once reap returns, nothing
of B is running.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import time
from typing import TYPE_CHECKING

from . import framing
from .forks import ForkClient, ZygoteGone  # noqa: F401 - re-exported for the supervisor

if TYPE_CHECKING:
    from .cgroups import ProgramMemory

_READ = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
DRAIN_S = 2.0
RSS_PERIOD_S = 0.01
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


class Deadline(BaseException):
    """The wall-clock limit passed. BaseException: check code's ``except Exception`` cannot swallow it."""


class Child:
    """One B, from A's side. Create with :func:`spawn`."""

    def __init__(self, forks: ForkClient, pid: int, pidfd: int | None, out_fd: int, err_fd: int,
                 chan: socket.socket | None, cap: int, max_frame: int, cleanup=None, memory_kb: int = 0,
                 memory: ProgramMemory | None = None) -> None:
        self.forks, self.pid, self.pidfd = forks, pid, pidfd
        self.memory_kb = memory_kb     # > 0: watch B's resident set (container mode)
        self.memory = memory           # the program's processes together (cgroups.ProgramMemory)
        self._cleanup = cleanup        # no PID namespace (container fallback): kill B's strays after it
        self.started = time.monotonic()
        self._next_rss = self.started + RSS_PERIOD_S
        self.cap = cap
        self.chan = chan
        self.reader = framing.FrameReader(max_frame)
        self.out, self.err = bytearray(), bytearray()
        self.out_over = self.err_over = False
        self.killed_for = ""           # "", "wall_time", "output", "memory", "protocol", "harness"
        self.exit: dict | None = None  # the zygote's exit notice: status, utime, stime, maxrss
        self.wall_s = 0.0
        self._fds = {out_fd: "out", err_fd: "err"}
        self._poll = select.poll()
        for fd in self._fds:
            os.set_blocking(fd, False)
            self._poll.register(fd, _READ)
        if chan is not None:
            chan.setblocking(False)
            self._poll.register(chan.fileno(), _READ)
        self._poll.register(forks.fileno(), _READ)
        self._note_exit()

    # -- talking to B ----------------------------------------------------------------------------
    def send_code(self, code: str, deadline: float) -> bool:
        """The program's source, B's first frame: raw UTF-8, not JSON (see untrusted._receive_code)."""
        body = code.encode("utf-8", "surrogatepass")
        return self.send_bytes(framing.HEADER.pack(len(body)) + body, deadline)

    def send(self, obj: dict, deadline: float) -> bool:
        """Write one frame to B's channel; False if B is gone. Raises Deadline."""
        return self.send_bytes(framing.pack(obj), deadline)

    def send_bytes(self, raw: bytes, deadline: float) -> bool:
        data = memoryview(raw)
        while data:
            if self.chan is None or self.exit is not None:
                return False
            try:
                data = data[self.chan.send(data):]
                continue
            except BlockingIOError:
                pass
            except OSError:
                return False
            self._wait_events(deadline, want_write=True)
        return True

    def recv(self, deadline: float) -> dict | None:
        """The next frame from B; None once B closed the channel or died. Raises Deadline, FrameError.

        Once the zygote reported B's exit, whatever is not already readable will never be
        read: a process B left behind may keep the other end open.
        """
        while True:
            frame = self.reader.pop()
            if frame is not None:
                return frame
            if self.chan is None:
                return None
            if not self._read_chan():
                if self.exit is not None:          # B is dead; a leftover child may hold the channel
                    return None
                self._wait_events(deadline)

    def _read_chan(self) -> bool:
        """Read what is available; True if anything arrived (or EOF), False if it would block."""
        got = False
        while self.chan is not None:
            try:
                data = self.chan.recv(1 << 16)
            except BlockingIOError:
                return got
            except OSError:
                data = b""
            if not data:
                self._close_chan()
                return True
            self.reader.feed(data)
            got = True
        return got

    def _close_chan(self) -> None:
        if self.chan is not None:
            self._poll.unregister(self.chan.fileno())
            self.chan.close()
            self.chan = None

    # -- the poll loop ---------------------------------------------------------------------------
    def _wait_events(self, deadline: float, want_write: bool = False) -> None:
        """Block until output, channel data, B's exit or the deadline (then: kill, raise Deadline)."""
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            self.kill("wall_time")
            raise Deadline()
        if (self.memory_kb or self.memory is not None) and self.exit is None:
            if now >= self._next_rss:
                self._next_rss = now + RSS_PERIOD_S
                if (self.memory_kb and self._rss_kb() > self.memory_kb) \
                        or (self.memory is not None and self.memory.over()):
                    self.kill("memory")
            remaining = min(remaining, self._next_rss - now)
        if want_write and self.chan is not None:
            self._poll.modify(self.chan.fileno(), _READ | select.POLLOUT)
        try:
            events = self._poll.poll(int(remaining * 1000) + 1)
        finally:
            if want_write and self.chan is not None:
                self._poll.modify(self.chan.fileno(), _READ)
        for fd, _ev in events:
            if fd in self._fds:
                self._drain(fd)
            elif self.chan is not None and fd == self.chan.fileno():
                self._read_chan()          # buffer replies even while sending: B may be blocked writing
            elif fd == self.forks.fileno():
                self.forks.drain()
                self._note_exit()

    def _rss_kb(self) -> int:
        try:
            with open(f"/proc/{self.pid}/statm", "rb") as f:
                return int(f.read().split()[1]) * _PAGE_KB
        except (OSError, ValueError, IndexError):
            return 0

    def _note_exit(self) -> None:
        if self.exit is None and self.pid in self.forks.exits:
            self.exit = self.forks.exits.pop(self.pid)
            self.wall_s = time.monotonic() - self.started
            self._poll.unregister(self.forks.fileno())

    def _drain(self, fd: int) -> None:
        buf = self.out if self._fds[fd] == "out" else self.err
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._poll.unregister(fd)
                os.close(fd)
                del self._fds[fd]
                return
            room = self.cap - len(buf)
            if len(data) > room:
                buf += data[:max(room, 0)]
                if buf is self.out:
                    self.out_over = True
                else:
                    self.err_over = True
                self.kill("output")
            else:
                buf += data

    # -- ending ----------------------------------------------------------------------------------
    def kill(self, reason: str) -> None:
        if self.exit is not None:
            return
        if not self.killed_for:
            self.killed_for = reason
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass

    def finish(self, deadline: float) -> None:
        """Close the channel (B's cue to exit), wait for the exit until the deadline, then reap."""
        self._close_chan()
        try:
            while self.exit is None:
                self._wait_events(deadline)
        except Deadline:
            pass
        self.reap()

    def reap(self) -> None:
        """Kill B if still running, get its exit notice, drain its pipes to EOF, release fds."""
        if self.exit is None:
            self.kill(self.killed_for or "harness")
            self.exit = self.forks.wait_exit(self.pid)
            self.wall_s = time.monotonic() - self.started
            try:
                self._poll.unregister(self.forks.fileno())
            except KeyError:
                pass
        if self._cleanup is not None:
            cleanup, self._cleanup = self._cleanup, None
            cleanup(self.pid)              # kills whatever B left behind (see Supervisor._after_b)
        self._drain_to_eof(time.monotonic() + DRAIN_S)
        self._close_chan()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def _drain_to_eof(self, deadline: float) -> None:
        """Read B's pipes until EOF: every writer is dead now; bounded all the same."""
        while self._fds and time.monotonic() < deadline:
            for fd, _ev in self._poll.poll(max(int((deadline - time.monotonic()) * 1000), 0) + 1):
                if fd in self._fds:
                    self._drain(fd)
        for fd in list(self._fds):
            self._poll.unregister(fd)
            os.close(fd)
            del self._fds[fd]

    # -- results ---------------------------------------------------------------------------------
    @property
    def status(self) -> int | None:
        return None if self.exit is None else int(self.exit.get("status", 0))

    @property
    def exit_code(self) -> int | None:
        s = self.status
        return os.WEXITSTATUS(s) if s is not None and os.WIFEXITED(s) else None

    @property
    def signal(self) -> int | None:
        s = self.status
        return os.WTERMSIG(s) if s is not None and os.WIFSIGNALED(s) else None

    @property
    def cpu_s(self) -> float:
        return float(self.exit.get("utime", 0.0)) + float(self.exit.get("stime", 0.0)) if self.exit else 0.0

    @property
    def max_rss_kb(self) -> int:
        return int(self.exit.get("maxrss", 0)) if self.exit else 0


def spawn(forks: ForkClient, role: str, cfg: dict, *, stdin_data: bytes | None, channel: bool, cap: int,
          max_frame: int, cleanup=None, memory_kb: int = 0, memory: ProgramMemory | None = None) -> Child:
    """Have the zygote fork a B running ``untrusted.main(role, cfg, fds)``; return A's handle.

    B is killed for memory when its resident set passes ``memory_kb`` (container mode), or when
    ``memory`` (built just before this call) says B's processes together went over their limit."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    a_sock = b_sock = None
    if channel:
        a_sock, b_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stdin_fd = _stdin_fd(stdin_data)
    fds = [stdin_fd, out_w, err_w] + ([b_sock.fileno()] if b_sock is not None else [])
    try:
        pid, pidfd = forks.spawn(role, cfg, fds)
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        if a_sock is not None:
            a_sock.close()
        raise
    finally:
        for fd in (stdin_fd, out_w, err_w):
            os.close(fd)
        if b_sock is not None:
            b_sock.close()
    return Child(forks, pid, pidfd, out_r, err_r, a_sock, cap, max_frame, cleanup, memory_kb, memory)


_DEVNULL: list[int] = []


def _stdin_fd(data: bytes | None) -> int:
    if not data:
        if not _DEVNULL:
            _DEVNULL.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
        return os.dup(_DEVNULL[0])
    fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
    framing.write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
