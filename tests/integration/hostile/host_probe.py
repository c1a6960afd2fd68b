"""The host's side of the hostile suite: bait laid before the runs, and checks after each.

Bait: canary files (random content, mode 0600) in /tmp, in the repository and in $HOME;
a secret in the host's environment (set before the executor starts, so every process it
spawns inherits it unless the sandbox scrubs it); a TCP listener on 127.0.0.1, one on
0.0.0.0 (reachable from the docker bridge), one on ::1, a UDP socket on 0.0.0.0 and an
abstract unix socket, all recording anything that reaches them.

Checks after a run (``HostProbe.leaks``, polled for a bounded time so the kernel can
finish reaping): canaries unchanged (content, mtime, mode, inode); no file named with the
session token anywhere a program could have written on the host; nothing reached a
listener; no live process carries the session marker and the test's process tree (and,
for the docker backend, its set of sandbox containers) is no bigger than before; MemAvailable and free disk did not drop; no SysV IPC object with the
session key and no abstract socket of the session exist on the host; the test process's
own descriptors did not grow; none of the host's secrets appear in what came back.
"""

from __future__ import annotations

import os
import secrets
import selectors
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from reward_core.sandbox_contract import ExecutionResult
from tests.integration.hostile.model import Session, new_oracle

REPO = Path(__file__).resolve().parents[3]
ENV_NAME = "HOSTILE_SUITE_SECRET"
#: Where a program might have managed to create a token-named file on the host.
WATCHED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/etc", "/", "/run", "/run/lock", "/usr/local/bin", "/root")
#: Root-only host files whose content must never come back (when present on this host).
HOST_SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key",
                     "/root/.ssh/id_rsa", "/root/.ssh/id_ed25519")
MEMORY_DROP_MB = 768          # MemAvailable may not stay this much lower after a run
DISK_DROP_MB = 512            # free space on /, /tmp, /dev/shm, /var/lib/docker may not stay this much lower
FD_GROWTH = 8                 # descriptors of the test process (executor pipes to its slots)


@dataclass
class Snapshot:
    canaries: dict[str, tuple[bytes, int, int, int]]
    tree: int
    mem_available_mb: float
    disk_free_mb: dict[str, float]
    fds: int
    containers: int


class _Listeners:
    """Loopback/any-address sockets on a background thread that record every contact."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._stop = False
        self.tcp = self._tcp(socket.AF_INET, "127.0.0.1")
        self.tcp_any = self._tcp(socket.AF_INET, "0.0.0.0")
        self.tcp6 = self._tcp(socket.AF_INET6, "::1")
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 0))
        self.udp.setblocking(False)
        self._sel.register(self.udp, selectors.EVENT_READ, "udp")
        self.abstract_name = f"hostile-{secrets.token_hex(6)}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract_name)
        self.unix.listen(16)
        self.unix.setblocking(False)
        self._sel.register(self.unix, selectors.EVENT_READ, "unix")
        self.unix_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._thread = threading.Thread(target=self._serve, name="hostile-listeners", daemon=True)
        self._thread.start()

    def _tcp(self, family: int, host: str) -> socket.socket:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, 0))
        s.listen(64)
        s.setblocking(False)
        self._sel.register(s, selectors.EVENT_READ, f"tcp {host}")
        return s

    def _serve(self) -> None:
        while not self._stop:
            for key, _ in self._sel.select(timeout=0.1):
                sock = key.fileobj
                try:
                    if key.data == "udp":
                        data, peer = sock.recvfrom(65536)
                        self._record(f"UDP datagram from {peer}: {data[:60]!r}")
                    else:
                        conn, peer = sock.accept()
                        self._record(f"{key.data} listener accepted a connection from {peer or 'a unix peer'}")
                        conn.close()
                except (BlockingIOError, InterruptedError):
                    pass

    def _record(self, event: str) -> None:
        with self._lock:
            self.events.append(event)

    def count(self) -> int:
        with self._lock:
            return len(self.events)

    def since(self, n: int) -> list[str]:
        with self._lock:
            return self.events[n:]

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        for s in (self.tcp, self.tcp_any, self.tcp6, self.udp, self.unix, self.unix_dgram):
            s.close()


def _host_ips() -> tuple[str, ...]:
    ips: set[str] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ips.add(str(info[4][0]))
    except OSError:
        pass
    try:
        import fcntl
        import struct
        for name in os.listdir("/sys/class/net"):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                try:
                    packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
                    ips.add(socket.inet_ntoa(packed[20:24]))
                except OSError:
                    pass
    except OSError:
        pass
    return tuple(sorted(ip for ip in ips if not ip.startswith("127.")))


def _mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _disk_free_mb() -> dict[str, float]:
    out = {}
    for path in ("/", "/tmp", "/dev/shm", "/var/lib/docker"):
        if os.path.isdir(path):
            st = os.statvfs(path)
            out[path] = st.f_bavail * st.f_frsize / 2**20
    return out


def _proc_table() -> dict[int, tuple[int, bytes]]:
    """pid -> (ppid, cmdline + comm) for every live (non-zombie) process on the host."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] in ("Z", "X"):
                continue
            blob = Path(f"/proc/{entry}/cmdline").read_bytes() + b" " + Path(f"/proc/{entry}/comm").read_bytes()
            table[int(entry)] = (int(fields[1]), blob)
        except (OSError, IndexError, ValueError):
            continue
    return table


def _tree_size(table: dict[int, tuple[int, bytes]], root: int) -> int:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = 0, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            seen += 1
            todo.append(child)
    return seen


class HostProbe:
    """Lays the bait for one test session and checks, after each run, that nothing leaked."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self.canary_dir = Path(f"/tmp/hostile-canary-{self.token}")
        self.canary_dir.mkdir(mode=0o700)
        home = Path(os.path.expanduser("~"))
        self.canary_paths = (self.canary_dir / "secret.txt", REPO / f".hostile-canary-{self.token}",
                             home / f".hostile-canary-{self.token}")
        self.file_secret = f"HOSTILE-SECRET-FILE-{secrets.token_hex(12)}"
        for path in self.canary_paths:
            path.write_text(self.file_secret + "\n")
            path.chmod(0o600)
        self.env_secret = f"HOSTILE-SECRET-ENV-{secrets.token_hex(12)}"
        self._old_env = os.environ.get(ENV_NAME)
        os.environ[ENV_NAME] = self.env_secret
        self.listeners = _Listeners()
        self.host_file_secrets = self._host_file_secrets()
        self.session = Session(
            token=self.token, canary_tmp=str(self.canary_paths[0]), canary_repo=str(self.canary_paths[1]),
            canary_home=str(self.canary_paths[2]), repo=str(REPO), home=str(home),
            tcp_port=self.listeners.tcp.getsockname()[1], tcp_any_port=self.listeners.tcp_any.getsockname()[1],
            tcp6_port=self.listeners.tcp6.getsockname()[1], udp_port=self.listeners.udp.getsockname()[1],
            abstract_name=self.listeners.abstract_name, env_name=ENV_NAME, host_ips=_host_ips(),
            oracle=new_oracle(), canary_secret=self.file_secret)
        self._canary_state = self._canaries()
        self._dirs = WATCHED_DIRS + (str(REPO), str(home), str(self.canary_dir))
        #: Set while a docker executor runs: count this process's sandbox containers too.
        self.docker_client = None

    @staticmethod
    def _host_file_secrets() -> list[str]:
        """The longest line of each root-only host secret file (what a leak would contain)."""
        found = []
        for name in HOST_SECRET_FILES:
            try:
                lines = Path(name).read_text(errors="replace").splitlines()
            except OSError:
                continue
            longest = max(lines, key=len, default="")
            if len(longest) >= 24:
                found.append(longest)
        return found

    def close(self) -> None:
        self.listeners.close()
        shutil.rmtree(self.canary_dir, ignore_errors=True)
        for path in self.canary_paths[1:]:
            path.unlink(missing_ok=True)
        if self._old_env is None:
            os.environ.pop(ENV_NAME, None)
        else:
            os.environ[ENV_NAME] = self._old_env

    # -- snapshots ------------------------------------------------------------------------------------
    def _canaries(self) -> dict[str, tuple[bytes, int, int, int]]:
        state = {}
        for path in self.canary_paths:
            try:
                st = path.stat()
                state[str(path)] = (path.read_bytes(), st.st_mtime_ns, st.st_mode, st.st_ino)
            except OSError as e:
                state[str(path)] = (repr(e).encode(), 0, 0, 0)
        return state

    def snapshot(self) -> Snapshot:
        return Snapshot(canaries=self._canaries(), tree=_tree_size(_proc_table(), os.getpid()),
                        mem_available_mb=_mem_available_mb(), disk_free_mb=_disk_free_mb(),
                        fds=len(os.listdir("/proc/self/fd")), containers=self._containers())

    def _containers(self) -> int:
        """Sandbox containers this test process owns (a replaced slot must not leave its old one)."""
        if self.docker_client is None:
            return 0
        from sandbox.docker_image import LABEL

        return len(self.docker_client.containers.list(filters={"label": f"{LABEL}.pid={os.getpid()}"}))

    def listener_mark(self) -> int:
        return self.listeners.count()

    # -- checks ---------------------------------------------------------------------------------------
    def leaks(self, before: Snapshot, listener_mark: int, wait_s: float = 20.0) -> list[str]:
        """Everything that leaked since ``before``; polls up to ``wait_s`` for transient state to clear.

        Returns as soon as nothing is found, so the wait costs only when something is. It is long because
        a memory cgroup may take seconds to hand back what a killed multi-GB JVM touched (seen with a
        container's second JVM under load: MemAvailable 0.6-0.9 GB low for ~8 s, back by the next run).
        """
        deadline = time.monotonic() + wait_s
        while True:
            found = self._leaks_now(before, listener_mark)
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(0.1)

    def _leaks_now(self, before: Snapshot, listener_mark: int) -> list[str]:
        found: list[str] = []
        now = self._canaries()
        for path, state in self._canary_state.items():
            if now.get(path) != state:
                found.append(f"canary {path} changed: {state[1:]} -> {now.get(path, (b'', 0, 0, 0))[1:]}")
        for d in self._dirs:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            strays = [n for n in names if self.token in n and not n.startswith(".hostile-canary-")
                      and n != self.canary_dir.name and n != "secret.txt"]
            if d == str(self.canary_dir):
                strays = [n for n in names if n != "secret.txt"]
            found += [f"file created on the host: {os.path.join(d, n)}" for n in strays]
        found += [f"network: {e}" for e in self.listeners.since(listener_mark)]
        table = _proc_table()
        mark = self.session.mark.encode()
        marked = [f"pid {pid}: {blob[:120]!r}" for pid, (_, blob) in table.items() if mark in blob]
        found += [f"process left running: {m}" for m in marked]
        tree = _tree_size(table, os.getpid())
        if tree > before.tree:
            found.append(f"the test's process tree grew from {before.tree} to {tree} processes")
        mem = _mem_available_mb()
        if mem < before.mem_available_mb - MEMORY_DROP_MB:
            found.append(f"MemAvailable dropped from {before.mem_available_mb:.0f} MB to {mem:.0f} MB")
        for path, free in _disk_free_mb().items():
            if free < before.disk_free_mb.get(path, 0) - DISK_DROP_MB:
                found.append(f"free space on {path} dropped from {before.disk_free_mb[path]:.0f} MB to {free:.0f} MB")
        containers = self._containers()
        if containers > before.containers:
            found.append(f"sandbox containers grew from {before.containers} to {containers}")
        fds = len(os.listdir("/proc/self/fd"))
        if fds > before.fds + FD_GROWTH:
            found.append(f"the test process's descriptors grew from {before.fds} to {fds}")
        found += self._ipc_leaks()
        return found

    def _ipc_leaks(self) -> list[str]:
        found = []
        key = self.session.ipc_key
        for kind in ("shm", "msg", "sem"):
            try:
                rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
            except OSError:
                continue
            if any(row.split() and int(row.split()[0]) == key for row in rows):
                found.append(f"SysV {kind} object with the session key exists on the host")
        try:
            if f"@hostile-{self.token}".encode() in Path("/proc/net/unix").read_bytes():
                found.append("an abstract unix socket of the session exists in the host's namespace")
        except OSError:
            pass
        return found

    def secrets_in(self, result: ExecutionResult, expected_is_canary: bool = False) -> list[str]:
        """Host secrets, or the escape marker, in anything that came back from the sandbox.

        The host's own failure details quote expected outputs, so when the expected output
        is the canary secret only the program's own streams are searched.
        """
        texts = [result.stdout, result.stderr]
        if not expected_is_canary:
            texts += [result.error] + [t.detail for t in result.tests]
        blob = "\n".join(texts)
        found = []
        named = {"canary file content": self.file_secret, "host environment secret": self.env_secret}
        named.update({f"host secret file line {i}": line for i, line in enumerate(self.host_file_secrets)})
        found += [f"{what} came back" for what, value in named.items() if value in blob]
        if "ESC" + "APED:" in blob:
            lines = [line for line in blob.splitlines() if "ESC" + "APED:" in line]
            found.append("the program reported an escape: " + "; ".join(lines[:8]))
        untrusted_streams = result.stdout + "\n" + result.stderr
        found += [f"expected value {v} of the check leaked into the program's output"
                  for v in self.session.oracle.values() if str(v) in untrusted_streams]
        if self.session.victim_secret in untrusted_streams:
            found.append("another execution's program or check code leaked into the program's output")
        return found


class MemoryWatch:
    """Samples MemAvailable on a thread while a run is in flight; ``lowest_mb`` is the minimum seen."""

    def __init__(self, period_s: float = 0.02) -> None:
        self.lowest_mb = _mem_available_mb()
        self.start_mb = self.lowest_mb
        self._period = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostile-memwatch", daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self.lowest_mb = min(self.lowest_mb, _mem_available_mb())
