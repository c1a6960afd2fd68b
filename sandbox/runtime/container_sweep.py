"""Container mode: after each B, remove every trace of the slot uid; say what survived.

In a container (docker backend) there are no per-execution PID, mount or IPC
namespaces (no CAP_SYS_ADMIN), and every execution of a slot runs in the same
container under the same unprivileged uid U. What one execution leaves behind
the next could find, so after every B the template zygote runs :func:`sweep`:

1. a child that became U kills every process of U (``kill(-1, SIGKILL)`` from U
   reaches exactly U's processes in the container's PID namespace; repeated
   until /proc shows none, since one pass can miss a child forked mid-pass;
   setsid, double forks and SIGSTOP do not escape it; a zombie counts until the
   container's init, docker-init, reaped it) and removes
   every SysV IPC object U owns or created (only the owner may, without
   CAP_SYS_ADMIN);
2. as root (DAC_OVERRIDE/FOWNER): B's scratch directory, and every entry owned
   by U in the places a container leaves writable -- /tmp, /dev/shm,
   /dev/mqueue (the root file system is read-only; the scratch root is
   root-owned 0711, so B cannot create siblings of its own directory);
3. check: a process, file or IPC object of U still there is reported, and the
   supervisor then ends the slot after sending its report (the host replaces a
   dirty container rather than trust it).

Stdlib only (runs in the container's python3).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import time

WRITABLE_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
KILL_BUDGET_S = 2.0
IPC_RMID = 0
_IPC_KINDS = ("shm", "msg", "sem")


def sweep(uid: int, scratch_dir: str = "", dirs: tuple[str, ...] = WRITABLE_DIRS) -> str:
    """Kill, release and remove everything of ``uid``; "" if clean, else what survived. Runs as root."""
    killer = os.fork()
    if killer == 0:
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            _kill_all_of_own_uid(uid)
            _remove_own_ipc(uid)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(killer, 0)
    if scratch_dir:
        shutil.rmtree(scratch_dir, ignore_errors=True)
    for directory in dirs:
        _remove_owned(directory, uid)
    problems = [] if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else [f"killer failed ({status})"]
    problems += leftovers(uid, dirs)
    if scratch_dir and os.path.lexists(scratch_dir):
        problems.append(f"scratch {scratch_dir} not removed")
    return "; ".join(problems)


def leftovers(uid: int, dirs: tuple[str, ...] = WRITABLE_DIRS) -> list[str]:
    """What of ``uid`` is still in this container: processes (zombies too), files, IPC objects."""
    found = [f"process {pid}" for pid in processes(uid)]
    for directory in dirs:
        found += [f"file {path}" for path in _owned_entries(directory, uid)]
    found += [f"sysv {kind} {ident}" for kind, ident in _ipc_objects(uid)]
    return found[:20]


def processes(uid: int, exclude: int = 0) -> list[int]:
    """Pids of processes with ``uid`` as real, effective, saved or fs uid, zombies included (a zombie is
    seen by the next execution until reaped; and /proc says "Z" for a process whose main thread exited
    while another runs on)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == exclude:
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue                                   # gone meanwhile
        if str(uid) in fields.get("Uid", "").split():
            pids.append(int(name))
    return pids


def _kill_all_of_own_uid(uid: int) -> None:
    me = os.getpid()
    deadline = time.monotonic() + KILL_BUDGET_S
    while True:
        try:
            os.kill(-1, signal.SIGKILL)                # every process this uid may signal, except ourselves
        except ProcessLookupError:
            return                                     # nothing left to signal
        if not processes(uid, exclude=me) or time.monotonic() > deadline:
            return                                     # none left, not even a zombie; or give up: checked
        time.sleep(0.001)


def _ipc_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of SysV IPC objects whose owner or creator is ``uid`` (from /proc/sysvipc)."""
    found = []
    for kind in _IPC_KINDS:
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(header, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")):
                found.append((kind, int(row.get(header[1], "-1"))))
    return found


def _remove_own_ipc(uid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in _ipc_objects(uid):
        if kind == "shm":
            libc.shmctl(ident, IPC_RMID, None)
        elif kind == "msg":
            libc.msgctl(ident, IPC_RMID, None)
        else:
            libc.semctl(ident, 0, IPC_RMID)


def _owned_entries(directory: str, uid: int) -> list[str]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    owned = []
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_uid == uid:
                owned.append(entry.path)
        except OSError:
            continue
    return owned


def _remove_owned(directory: str, uid: int) -> None:
    for path in _owned_entries(directory, uid):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass                                       # reported by leftovers()
