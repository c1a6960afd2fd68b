"""A seccomp filter that refuses new user namespaces (and CLONE_PARENT) to every process of a slot.

Why: an unprivileged process that may create a user namespace holds every
capability *inside* it, which opens kernel code (mounts, netfilter, many file
systems, ...) otherwise reachable only by root -- the source of most container
escapes. Nothing in a slot needs one: the supervisor, the template zygote and
every B run under this filter, installed once by the slot's first process before
the split and inherited by every fork (a seccomp filter can never be removed).

Refused with EPERM: ``unshare`` and ``clone`` with CLONE_NEWUSER. ``clone3``
(its flags sit in a struct seccomp cannot read) answers ENOSYS, so glibc falls
back to ``clone`` (what Docker's default profile does). System calls of another
ABI (i386 ``int 0x80`` or x32 on x86_64), which would bypass the numbers below,
answer ENOSYS. Other architectures than x86_64 and aarch64: not installed
(:func:`install` returns False and the slot reports it).

``clone`` with CLONE_PARENT is refused too (EPERM): its child is a child of the
caller's parent -- for a program's B the template zygote or a fork server, which
reap only the processes they forked -- so a process of the slot uid would, once
dead, stay a zombie there for the slot's life, counted in the programs' pids
cgroup. Without it every process a program starts descends from its B, and an
orphan goes to the slot's init, which reaps any child (bwrap's init; docker-init
in a container): the sweep after each B waits for that (supervisor.py). Nothing
in a slot uses CLONE_PARENT.

A second filter, :func:`install_program_filter`, is installed by every B on itself
(after it dropped its uid, before it receives the program) and inherited by all
the program starts: it refuses (EPERM) to *send* SIGKILL -- kill, tkill, tgkill,
rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal with signal 9, and
fcntl(F_SETSIG, 9). Why: a SIGKILL that none of our limits sent then comes from
outside the sandbox (the host's OOM killer, an operator), which the host answers as
an unscored SANDBOX_ERROR, not a 0 (sandbox/verdict.py); a program must not be able
to kill itself that way to dodge its 0. SIGTERM, SIGINT, ... and every other signal
stay allowed, so ``Popen.terminate()`` works; ``Popen.kill()`` raises PermissionError.
Not covered (their signal number sits in a struct seccomp cannot read): timer_create
and mq_notify with SIGEV_SIGNAL and SIGKILL.

Stdlib only (ctypes), like the rest of the runtime.
"""

from __future__ import annotations

import ctypes
import errno
import platform

from . import linux

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_SYSCALL_BIT = 0x40000000

# BPF opcodes (linux/filter.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian: low word first)
_NR, _ARCH, _ARG0_LO = 0, 4, 16

#: machine -> (AUDIT_ARCH, clone, unshare, clone3)
_ARCHES = {"x86_64": (0xC000003E, 56, 272, 435), "aarch64": (0xC00000B7, 220, 97, 435)}
SIGKILL = 9
F_SETSIG = 10
#: machine -> ((syscall, [(argument index, value the argument must have), ...]), ...): each is refused
#: when every listed argument has its value. kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo,
#: pidfd_send_signal (with SIGKILL), fcntl(fd, F_SETSIG, SIGKILL).
_SIGKILL_CALLS = {
    "x86_64": ((62, [(1, SIGKILL)]), (200, [(1, SIGKILL)]), (234, [(2, SIGKILL)]), (129, [(1, SIGKILL)]),
               (297, [(2, SIGKILL)]), (424, [(1, SIGKILL)]), (72, [(1, F_SETSIG), (2, SIGKILL)])),
    "aarch64": ((129, [(1, SIGKILL)]), (130, [(1, SIGKILL)]), (131, [(2, SIGKILL)]), (138, [(1, SIGKILL)]),
                (240, [(2, SIGKILL)]), (424, [(1, SIGKILL)]), (25, [(1, F_SETSIG), (2, SIGKILL)])),
}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions, or [] for an architecture we do not know."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return []
    audit_arch, nr_clone, nr_unshare, nr_clone3 = arch
    enosys, eperm = RET_ERRNO | errno.ENOSYS, RET_ERRNO | errno.EPERM
    return [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, audit_arch),            # another ABI: refuse everything
        (_RET_K, 0, 0, enosys),
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE_K, 0, 1, X32_SYSCALL_BIT),       # x32 numbers (harmless on aarch64: none that high)
        (_RET_K, 0, 0, enosys),
        (_JEQ_K, 0, 1, nr_clone3),
        (_RET_K, 0, 0, enosys),
        (_JEQ_K, 1, 0, nr_unshare),
        (_JEQ_K, 0, 3, nr_clone),
        (_LD_W_ABS, 0, 0, _ARG0_LO),           # unshare(flags) / clone(flags, ...)
        (_JSET_K, 0, 1, linux.CLONE_NEWUSER | linux.CLONE_PARENT),   # (unshare refuses CLONE_PARENT anyway)
        (_RET_K, 0, 0, eperm),
        (_RET_K, 0, 0, RET_ALLOW),
    ]


def program_filter(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """B's filter (refuses sending SIGKILL, see the module docstring) as instructions, or [] if unknown."""
    machine = machine or platform.machine()
    arch, calls = _ARCHES.get(machine), _SIGKILL_CALLS.get(machine)
    if arch is None or calls is None:
        return []
    eperm = RET_ERRNO | errno.EPERM
    insns = [(_LD_W_ABS, 0, 0, _ARCH),
             (_JEQ_K, 1, 0, arch[0]),          # another ABI: the slot's filter already refuses it
             (_RET_K, 0, 0, RET_ALLOW)]
    for nr, conditions in calls:
        block = [(_LD_W_ABS, 0, 0, _NR)]
        rest = 2 * len(conditions) + 1          # what follows the syscall test in this block
        block.append((_JEQ_K, 0, rest, nr))
        for i, (arg, value) in enumerate(conditions):
            left = 2 * (len(conditions) - i - 1) + 1   # instructions after this test, up to and with the RET
            block += [(_LD_W_ABS, 0, 0, _ARG0_LO + 8 * arg), (_JEQ_K, 0, left, value)]
        block.append((_RET_K, 0, 0, eperm))
        insns += block
    return insns + [(_RET_K, 0, 0, RET_ALLOW)]


def install_program_filter() -> bool:
    """In B, after it dropped privileges: no SIGKILL may be sent from the program. False if unsupported.

    The filter is built once, in the zygote (:data:`_PROGRAM_FILTER`): building it in B cost every
    execution ~120 copy-on-write page faults (~0.7 ms)."""
    if _PROGRAM_FILTER is None:
        return False
    linux.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(_PROGRAM_FILTER[1]))
    return True


def install() -> bool:
    """Install the filter on the calling thread (and what it forks from now on). False if unsupported.

    Needs no_new_privs or CAP_SYS_ADMIN; raises OSError if the kernel refuses it.
    """
    return _install(program())


def _prepared(insns: list[tuple[int, int, int, int]]) -> tuple[ctypes.Array, _SockFprog] | None:
    """The filter as the kernel reads it: (instruction table, sock_fprog pointing at it), or None."""
    if not insns:
        return None
    table = (_SockFilter * len(insns))(*[_SockFilter(*i) for i in insns])
    return table, _SockFprog(len(insns), table)


def _install(insns: list[tuple[int, int, int, int]]) -> bool:
    prepared = _prepared(insns)
    if prepared is None:
        return False
    linux.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prepared[1]))
    return True


#: B's filter, built where this module is imported (the zygote, before any B): B only installs it.
_PROGRAM_FILTER = _prepared(program_filter())

