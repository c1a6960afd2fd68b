"""The Linux system calls Python 3.11's ``os`` module lacks, via ctypes.

unshare/setns/mount/prctl/capset are the building blocks of per-execution
isolation (see ARCHITECTURE.md). Every wrapper raises OSError with the real
errno so the supervisor can report *why* isolation failed. Stdlib only.
"""

from __future__ import annotations

import ctypes
import os

CLONE_PARENT = 0x00008000
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.unshare.argtypes = (ctypes.c_int,)
_libc.setns.argtypes = (ctypes.c_int, ctypes.c_int)
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
_capset = _libc.capset          # resolved here, in the zygote: a forked B finds it ready (no dlsym, fewer page faults)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_libc.umount2(target.encode(), flags), f"umount {target}")


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> None:
    _check(_libc.prctl(option, arg2, arg3, arg4, arg5), f"prctl({option})")


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40


def drop_bounding_set(last: int) -> None:
    """Remove every capability from the bounding set (needs CAP_SETPCAP; EINVAL past the last)."""
    for cap in range(last + 1):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() not in (22,):
            err = ctypes.get_errno()
            raise OSError(err, f"PR_CAPBSET_DROP({cap}): {os.strerror(err)}")


CAP_KILL = 5
CAP_SYS_RESOURCE = 24


def has_capability(cap: int) -> bool:
    """Is ``cap`` in our effective set (from /proc/self/status)?"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> cap & 1)
    except (OSError, ValueError):
        pass
    return False


def set_capabilities(keep: tuple[int, ...] = ()) -> None:
    """Reduce effective+permitted to ``keep`` (caps < 32), clear inheritable and ambient."""
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)   # EINVAL on old kernels: nothing to clear
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    mask = 0
    for cap in keep:
        mask |= 1 << cap
    data[0].effective = data[0].permitted = mask
    _check(_capset(ctypes.byref(header), data), "capset")


CAP_CHOWN = 0
CAP_SETGID = 6
CAP_SETUID = 7
CAP_SETPCAP = 8
CAP_SYS_ADMIN = 21


def keep_across_exec(caps: tuple[int, ...]) -> None:
    """Root, before an exec: keep only ``caps`` (< 32, all in our permitted set), made inheritable, and
    empty the bounding set. The exec'd program (a fork server: fork_servers.py) then holds exactly
    ``caps`` (a root exec gets the inheritable set plus the bounding set)."""
    mask = 0
    for cap in caps:
        mask |= 1 << cap
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = mask | 1 << CAP_SETPCAP   # inheritable must be set while bounded
    data[0].inheritable = mask
    _check(_capset(ctypes.byref(header), data), "capset")
    drop_bounding_set(last_cap())


_NO_CAPS = ((_CapHeader(_CAP_VERSION_3, 0)), (_CapData * 2)())


def clear_capabilities() -> None:
    """Empty every capability set (what B runs with). Uses structures built at import time."""
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _NO_CAPS[0].pid = 0
    _check(_capset(ctypes.byref(_NO_CAPS[0]), _NO_CAPS[1]), "capset")
