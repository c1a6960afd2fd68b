"""The slot isolation's pure parts: the seccomp program, limits, cgroup layout, the bwrap command line.

No sandbox is started here (that is tests/integration/test_sandbox_process.py and the hostile suite).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from sandbox import slot_cgroups
from sandbox.loopback_names import ETC_FILES, HOSTNAME
from sandbox.process_backend import (
    PYTHON_IN_SANDBOX,
    RUNTIME_IN_SANDBOX,
    ProcessSandboxConfig,
    bwrap_command,
    etc_written_fds,
)
from sandbox.runtime import forks, seccomp, untrusted, zygote
from sandbox.runtime.cgroups import ZYGOTE_PIDS, ZYGOTE_SLACK_MB, Cgroups, ProgramMemory
from sandbox.slot_cgroups import SUPERVISOR_PIDS, SlotCgroups, hierarchies

X86_64 = 0xC000003E
CLONE_NEWUSER, CLONE_NEWNS, CLONE_PARENT = 0x10000000, 0x00020000, 0x00008000
MB = 1024 * 1024


# -- seccomp: run the BPF program on seccomp_data --------------------------------------------------
def _run_bpf(program: list[tuple[int, int, int, int]], nr: int, arch: int = X86_64, arg0: int = 0) -> int:
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:                                   # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:                                 # ret k
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if taken else jf
        pc += 1


def _verdict(ret: int) -> str:
    if ret == seccomp.RET_ALLOW:
        return "allow"
    return errno.errorcode[ret & 0xFFFF] if ret & 0xFFFF0000 == seccomp.RET_ERRNO else hex(ret)


@pytest.mark.parametrize("nr, arg0, expected", [
    (272, CLONE_NEWUSER, "EPERM"),                   # unshare(CLONE_NEWUSER)
    (272, CLONE_NEWUSER | CLONE_NEWNS, "EPERM"),
    (272, CLONE_NEWNS, "allow"),                     # the zygote's own unshares stay possible
    (56, CLONE_NEWUSER | 17, "EPERM"),               # clone(CLONE_NEWUSER | SIGCHLD)
    (56, 0x01200011, "allow"),                       # fork as glibc does it
    (435, 0, "ENOSYS"),                              # clone3: glibc falls back to clone
    (272 | 0x40000000, CLONE_NEWUSER, "ENOSYS"),     # x32 numbers
    (0, 0, "allow"),                                 # read
])
def test_the_filter_refuses_user_namespaces_and_nothing_else(nr, arg0, expected):
    assert _verdict(_run_bpf(seccomp.program("x86_64"), nr, arg0=arg0)) == expected


@pytest.mark.parametrize("machine, arch, nr", [("x86_64", X86_64, 56), ("aarch64", 0xC00000B7, 220)])
def test_the_filter_refuses_clone_parent(machine, arch, nr):
    """A child of the caller's parent: the zygote's or a fork server's, which reap only what they forked."""
    assert _verdict(_run_bpf(seccomp.program(machine), nr, arch=arch, arg0=CLONE_PARENT | 17)) == "EPERM"
    assert _verdict(_run_bpf(seccomp.program(machine), nr, arch=arch, arg0=0x01200011)) == "allow"


def test_another_abi_gets_nothing():
    assert _verdict(_run_bpf(seccomp.program("x86_64"), 310, arch=0x40000003, arg0=CLONE_NEWUSER)) == "ENOSYS"


def test_aarch64_numbers_and_unknown_architectures():
    assert _verdict(_run_bpf(seccomp.program("aarch64"), 97, arch=0xC00000B7, arg0=CLONE_NEWUSER)) == "EPERM"
    assert seccomp.program("riscv64") == []


def test_every_jump_lands_inside_the_program():
    for machine in ("x86_64", "aarch64"):
        program = seccomp.program(machine)
        for pc, (code, jt, jf, _k) in enumerate(program):
            if code & 0x07 == 0x05:                      # BPF_JMP
                assert pc + 1 + max(jt, jf) < len(program)
        assert program[-1] == (0x06, 0, 0, seccomp.RET_ALLOW)


# -- B's rlimits ------------------------------------------------------------------------------------
def _cfg(memory_cgroup: bool, memory_mb: int = 256) -> dict:
    return {"pid1": False, "rlimit_nproc": True, "memory_cgroup": memory_cgroup,
            "limits": {"cpu_s": 2, "memory_mb": memory_mb, "max_processes": 32, "file_size_mb": 16,
                       "open_files": 64}}


def test_address_space_is_only_a_backstop_under_a_memory_cgroup():
    import resource

    as_limit = dict(untrusted.rlimits(_cfg(True)))[resource.RLIMIT_AS][0]
    assert as_limit == 4096 * MB                      # 4 threads reserve more than 256 MB of address space
    assert dict(untrusted.rlimits(_cfg(True, 2048)))[resource.RLIMIT_AS][0] == 8 * 2048 * MB
    assert dict(untrusted.rlimits(_cfg(False)))[resource.RLIMIT_AS][0] == 256 * MB   # the only limit left


# -- the programs' cgroup limits, as the zygote sets them ------------------------------------------
def _fake_slot_cgroup(root: Path, version: str = "v1") -> None:
    files = {"memory": ("memory.limit_in_bytes", "memory.oom_control"), "pids": ("pids.max", "pids.events",
                                                                                 "pids.current")}
    for controller, names in files.items():
        for child in ("supervisor", "programs"):
            d = root / controller / child
            d.mkdir(parents=True)
            for name in ("cgroup.procs",) + names:
                (d / name).write_text("oom_kill 0\nmax 0\n" if name.endswith(("control", "events")) else "1\n")


def test_the_zygote_clamps_what_the_supervisor_asks(tmp_path):
    _fake_slot_cgroup(tmp_path)
    cg = Cgroups.for_slot(str(tmp_path), max_memory_mb=1024, max_processes=64)
    assert cg.enabled == {"cgroup_memory": True, "cgroup_pids": True, "cgroup_version": "v1"}
    cg.set_limits(memory_mb=256, scratch_mb=32, max_processes=16)
    programs = tmp_path / "memory" / "programs"
    assert int((programs / "memory.limit_in_bytes").read_text()) == (256 + 32 + ZYGOTE_SLACK_MB) * MB
    assert int((tmp_path / "pids" / "programs" / "pids.max").read_text()) == 16 + ZYGOTE_PIDS
    cg.set_limits(memory_mb=10 ** 9, scratch_mb=10 ** 9, max_processes=10 ** 9)     # check code asking for more
    assert int((programs / "memory.limit_in_bytes").read_text()) == (1024 + 1024 + ZYGOTE_SLACK_MB) * MB
    assert int((tmp_path / "pids" / "programs" / "pids.max").read_text()) == 64 + ZYGOTE_PIDS
    cg.close_all()


def test_cgroup_v2_uses_one_tree_and_its_own_file_names(tmp_path):
    for child in ("supervisor", "programs"):
        d = tmp_path / "unified" / child
        d.mkdir(parents=True)
        for name in ("cgroup.procs", "memory.max", "pids.max", "pids.current"):
            (d / name).write_text("1\n")
        (d / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\n")
        (d / "pids.events").write_text("max 0\n")
    cg = Cgroups.for_slot(str(tmp_path), max_memory_mb=1024, max_processes=64)
    assert cg.enabled == {"cgroup_memory": True, "cgroup_pids": True, "cgroup_version": "v2"}
    assert len(cg.join_supervisor_fds) == len(cg.join_programs_fds) == 1
    cg.set_limits(memory_mb=256, scratch_mb=32, max_processes=16)
    assert int((tmp_path / "unified" / "programs" / "memory.max").read_text()) == (256 + 32 + ZYGOTE_SLACK_MB) * MB
    (tmp_path / "unified" / "programs" / "memory.events").write_text("max 9\noom 2\noom_kill 1\n")
    assert cg.limit_events() == (True, False)
    cg.close_all()


def test_the_supervisor_keeps_no_writable_cgroup_descriptor(tmp_path):
    _fake_slot_cgroup(tmp_path)
    cg = Cgroups.for_slot(str(tmp_path), max_memory_mb=1024, max_processes=64)
    cg.become_supervisor()
    assert not cg.write and not cg.join_programs_fds
    assert all((int(open(f"/proc/self/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8) & 3) == 0
               for fd in cg.read.values())
    assert cg.limit_events() == (False, False) and cg.tasks() == 1
    cg.close_all()


def test_the_zygote_takes_a_bs_uid_and_scratch_from_its_own_facts():
    slot = SimpleNamespace(namespaces=True, pid_ns_per_b=False, uid=123456, owner=123456, scratch="/scratch",
                           memory_cgroup=True, caps=(1024, 64))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        template = zygote.Template(ours, slot, own_scratch=True, scratch="/scratch")
        asked = {**_cfg(True), "uid": 0, "owner": 0, "namespaces": False, "scratch": "/etc", "scratch_mb": 10 ** 6,
                 "memory_mb": 10 ** 6, "argv": ["g++"]}
        asked["limits"] = {**asked["limits"], "max_processes": 10 ** 6, "memory_mb": 10 ** 6}
        cfg = template._trusted_cfg(asked)
        if template.oom_fd is not None:
            os.close(template.oom_fd)
    finally:
        ours.close()
        theirs.close()
    assert (cfg["uid"], cfg["owner"], cfg["namespaces"], cfg["scratch"]) == (123456, 123456, True, "/scratch")
    assert cfg["limits"]["memory_mb"] == cfg["memory_mb"] == cfg["scratch_mb"] == 1024
    assert cfg["limits"]["max_processes"] == 64 and cfg["argv"] == ["g++"]


def test_the_zygote_unlinks_only_the_source_file_a_configuration_names(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    slot = SimpleNamespace(namespaces=True, pid_ns_per_b=False, uid=123456, owner=123456, scratch=str(scratch),
                           memory_cgroup=True, caps=(1024, 64), shared_scratch=True)
    (scratch / "main.sh").write_text("echo 1")
    (scratch / "other.txt").write_text("left by the program")
    (scratch / "main.lua").mkdir()                     # a directory in a source's place stays: the sweep's job
    (tmp_path / "outside").write_text("x")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        template = zygote.Template(ours, slot, own_scratch=True, scratch=str(scratch))
        for i, source in enumerate(("main.sh", "main.lua", "../outside")):   # a name outside scratch: never
            template._handle({"op": "cfg", "id": i, "cfg": {**_cfg(True), "scratch_mb": 8, "write_source": True,
                                                            "source_file": source}}, [])
        replies = []
        for name in ("other.txt", "../outside", "main.lua", "main.sh"):
            template._handle({"op": "unlink", "name": name}, [])
            replies.append(forks.recv_packet(theirs)[0])
        if template.oom_fd is not None:
            os.close(template.oom_fd)
    finally:
        ours.close()
        theirs.close()
    assert replies == [b'{"op": "unlinked"}'] * 4
    assert sorted(os.listdir(scratch)) == ["main.lua", "other.txt"] and (tmp_path / "outside").exists()


# -- the host side: per-slot cgroups and the bwrap command line --------------------------------------
def test_v1_slot_cgroups_have_a_ceiling_and_a_fixed_supervisor(tmp_path, monkeypatch):
    for controller in ("memory", "pids"):
        (tmp_path / controller).mkdir()
        (tmp_path / controller / "cgroup.procs").write_text("")
    assert hierarchies(tmp_path)[0] == "v1"
    written: dict[Path, int] = {}
    monkeypatch.setattr(slot_cgroups, "_write", lambda path, value: written.__setitem__(path, value))
    cgroups = SlotCgroups(2, True, supervisor_memory_mb=512, max_memory_mb=1024, max_processes=64, root=tmp_path)
    slot = tmp_path / "memory" / "reward-sandbox" / cgroups.group / "slot-1"
    assert written[slot / "memory.limit_in_bytes"] == (2 * 1024 + ZYGOTE_SLACK_MB + 512) * MB
    assert written[slot / "supervisor" / "memory.limit_in_bytes"] == 512 * MB
    pids = tmp_path / "pids" / "reward-sandbox" / cgroups.group / "slot-1"
    assert written[pids / "supervisor" / "pids.max"] == SUPERVISOR_PIDS
    assert written[pids / "pids.max"] == 64 + ZYGOTE_PIDS + SUPERVISOR_PIDS
    assert (pids / "programs").is_dir() and not any("programs" in str(p) for p in written)   # the zygote's
    assert [inside for _, inside in cgroups.binds(1)] == ["/run/sandbox/cgroup/memory", "/run/sandbox/cgroup/pids"]


def test_without_a_writable_hierarchy_there_are_no_slot_cgroups(tmp_path):
    assert hierarchies(tmp_path) == ("", {})
    assert SlotCgroups(1, True, supervisor_memory_mb=512, max_memory_mb=1024, max_processes=64,
                       root=tmp_path).binds(0) == []


def test_the_sandbox_names_no_host_path_of_the_interpreter_or_the_checkout(tmp_path):
    prefix = tmp_path / "root" / ".pyenv" / "versions" / "3.11.7"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "lib" / "libpython3.11.so.1.0").write_text("")
    (prefix / "bin" / "python3.11").write_text("")
    config = ProcessSandboxConfig(bwrap="bwrap", python=str(prefix / "bin" / "python3.11"), base_uid=200_000)
    cmd = bwrap_command(config, 3, [("/sys/fs/cgroup/memory/x", "/run/sandbox/cgroup/memory")], True,
                        [(7, "zygote.py")])
    destinations = [cmd[i + 2] for i, arg in enumerate(cmd) if arg in ("--ro-bind", "--bind", "--ro-bind-try")]
    assert not any(d.startswith(("/root", str(tmp_path))) for d in destinations), destinations
    assert cmd[cmd.index(str(prefix)) + 1] == PYTHON_IN_SANDBOX
    assert str(Path(__file__).resolve().parents[2]) not in " ".join(cmd)       # the runtime is copied, not bound
    assert cmd[cmd.index("--file") + 1: cmd.index("--file") + 3] == ["7", f"{RUNTIME_IN_SANDBOX}/zygote.py"]
    assert f"{PYTHON_IN_SANDBOX}/bin/python3.11" in cmd and cmd[cmd.index("LD_LIBRARY_PATH") + 1] == "/opt/python/lib"
    args = cmd[cmd.index("--mode"):]
    assert args[args.index("--slot-uid") + 1] == "200003" and args[args.index("--supervisor-uid") + 1] == "200515"
    assert "--unshare-cgroup-try" not in cmd           # the zygote unshares it after joining the slot's cgroups
    assert "--fork-servers" not in args


def test_the_sandbox_etc_gets_loopback_names_written_not_the_hosts_files():
    config = ProcessSandboxConfig(bwrap="bwrap", base_uid=200_000)
    fds = etc_written_fds()
    try:
        cmd = bwrap_command(config, 0, [], True, [(7, "zygote.py")], None, fds)
        for fd, path in fds:
            at = cmd.index(path)
            assert cmd[at - 3: at] == ["0444", "--file", str(fd)]
            assert cmd[cmd.index("--hostname") + 1] == HOSTNAME
        hosts = os.pread(dict((p, f) for f, p in fds)["/etc/hosts"], 4096, 0).decode()
    finally:
        for fd, _ in fds:
            os.close(fd)
    names = {name: line.split()[0] for line in hosts.splitlines() for name in line.split()[1:]}
    assert names["localhost"] in ("127.0.0.1", "::1") and names[HOSTNAME] == "127.0.1.1"
    assert ETC_FILES["nsswitch.conf"].split() == ["hosts:", "files"]     # no resolver to ask: no network
    assert "/etc/hosts" not in [cmd[i + 1] for i, arg in enumerate(cmd) if arg in ("--ro-bind", "--ro-bind-try")]


def test_fork_servers_are_named_to_the_zygote_by_the_host_as_root_only():
    config = ProcessSandboxConfig(bwrap="bwrap", base_uid=200_000)
    servers = {"ruby": ("ruby", "{runtime}/fork_server.rb")}
    cmd = bwrap_command(config, 0, [], True, [(7, "zygote.py")], servers)
    named = json.loads(cmd[cmd.index("--fork-servers") + 1])
    assert named == {"ruby": ["ruby", f"{RUNTIME_IN_SANDBOX}/fork_server.rb"]}
    assert "--fork-servers" not in bwrap_command(config, 0, [], False, [(7, "zygote.py")], servers)   # user namespace


# -- the container's cgroup seen from A: the program's memory as a whole -----------------------------
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_program_memory_counts_the_growth_of_anonymous_and_shared_memory_and_oom_kills(tmp_path, version):
    memory = tmp_path / "memory" if version == "v1" else tmp_path
    memory.mkdir(exist_ok=True)
    anon, shmem = (b"total_rss", b"total_shmem") if version == "v1" else (b"anon", b"shmem")
    events = memory / ("memory.oom_control" if version == "v1" else "memory.events")
    stat = memory / "memory.stat"

    def charge(anon_mb: int, shmem_mb: int, file_mb: int = 0, oom: int = 0) -> None:
        # pread on the open descriptor sees each rewrite: write in place, same inode
        with open(stat, "r+b" if stat.exists() else "wb") as f:
            f.truncate(0)
            f.write(b"cache %d\n%s %d\n%s %d\n" % (file_mb << 20, anon, anon_mb << 20, shmem, shmem_mb << 20))
        with open(events, "r+b" if events.exists() else "wb") as f:
            f.truncate(0)
            f.write(b"oom_kill_disable 0\noom_kill %d\n" % oom)

    charge(anon_mb=300, shmem_mb=10)
    cgroups = Cgroups.for_container(str(tmp_path))
    try:
        watch = ProgramMemory(cgroups, limit_bytes=100 << 20)
        assert not watch.over()
        charge(anon_mb=350, shmem_mb=40, file_mb=900)            # +80 MB: page cache does not count
        assert not watch.over() and 75 << 20 < watch.used_bytes() < 85 << 20
        charge(anon_mb=380, shmem_mb=40)                          # +110 MB
        assert watch.over() and not watch.oom_killed()
        charge(anon_mb=300, shmem_mb=10, oom=1)                   # back down, but the kernel killed one
        assert watch.over() and watch.oom_killed()
        assert not ProgramMemory(cgroups).over()                  # a new B starts from the counter as it is
    finally:
        cgroups.close_all()


def test_program_memory_without_a_memory_cgroup_never_fires(tmp_path):
    cgroups = Cgroups.for_container(str(tmp_path))                # no memory.stat, no events
    watch = ProgramMemory(cgroups, limit_bytes=1)
    assert not watch.over() and watch.used_bytes() == 0
