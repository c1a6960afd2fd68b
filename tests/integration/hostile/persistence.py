"""Persistence: outlive the execution, or leave something for the next one.

Every process a program leaves carries the session marker (argv[0] of an exec'd binary,
or the comm name set with PR_SET_NAME), so the host can find it wherever it ended up;
every file carries the session token. After the run, a follow-up program (run on every
slot) looks from inside the sandbox for what was left, and the host looks from outside.
"""

from __future__ import annotations

from reward_core.sandbox_contract import TestStyle, Verdict
from tests.integration.hostile.model import NOT_A_PASS, Category, HostileProgram, join

P = Category.PERSISTENCE

#: Looks for any process carrying the marker or running under this execution's uid (each
#: slot has its own), and any file named with the token in the usual places; prints the
#: escape marker on a find. Followed by ``NOTHING_LEFT``, which prints "clean" otherwise.
FIND_LEFTOVERS = '''
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        blob = (_read(f"/proc/{pid}/cmdline") or b"") + b" " + (_read(f"/proc/{pid}/comm") or b"")
        if b"@@MARK@@" in blob:
            found.append(f"process {pid}: {blob!r}")
    me = os.getuid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        for line in (_read(f"/proc/{pid}/status") or b"").splitlines():
            if line.startswith(b"Uid:") and int(line.split()[1]) == me:
                found.append(f"process {pid} of this uid: {_read(f'/proc/{pid}/cmdline')!r}")
    for d in (".", "..", "/tmp", "/var/tmp", "/dev/shm", "@@HOME@@", os.path.expanduser("~"), "/run", "/run/lock"):
        try:
            found += [os.path.join(d, n) for n in os.listdir(d) if "@@TOKEN@@" in n]
        except Exception:
            pass
    for f in found:
        _esc("left over: " + f)
'''

NOTHING_LEFT = '''
    print("" if found else "clean")
'''

PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "daemon_double_fork_setsid", P, style=TestStyle.HUMANEVAL,
        description="classic daemon: fork, setsid, fork, chdir /, close fds, exec sleep (argv[0] = marker)",
        code='''
            def _daemonize():
                if os.fork():
                    return
                os.setsid()
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                if os.fork():
                    os._exit(0)
                os.chdir("/")
                for fd in range(0, 256):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                try:
                    os.execv("/bin/sleep", ["@@MARK@@-daemon", "30"])
                except Exception:
                    _set_comm("@@MARK@@")
                    time.sleep(30)
                os._exit(0)
            _daemonize()
            def solve(x):
                return 0
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "background_process_for_next_run", P,
        description="Popen(start_new_session) of a sleeper and a python loop that writes a file every 100 ms",
        code='''
            if os.fork() == 0:
                os.setsid()
                os.execv("/bin/sleep", ["@@MARK@@-bg", "30"])
            if os.fork() == 0:
                os.setsid()
                _set_comm("@@MARK@@")
                for i in range(300):
                    for d in ("/tmp", ".", "/dev/shm"):
                        try:
                            open(os.path.join(d, "hostile-@@TOKEN@@-beat"), "w").write(str(i))
                        except Exception:
                            pass
                    time.sleep(0.1)
                os._exit(0)
            print("done")
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "files_for_next_run", P,
        description="files in scratch, its parent, /tmp, /var/tmp, /dev/shm, $HOME (dotfiles too) for the next run",
        code='''
            for d in (".", "..", "/tmp", "/var/tmp", "/dev/shm", "@@HOME@@", os.path.expanduser("~"), "/run", "/run/lock"):
                for name in ("hostile-@@TOKEN@@-note", ".hostile-@@TOKEN@@-rc"):
                    try:
                        with open(os.path.join(d, name), "w") as f:
                            f.write("left by the previous execution")
                    except Exception:
                        pass
            for rc in (".bashrc", ".profile", ".pythonrc"):
                try:
                    with open(os.path.join(os.path.expanduser("~"), rc), "a") as f:
                        f.write("\\n# hostile-@@TOKEN@@\\n")
                except Exception:
                    pass
        ''',
        followup=join(FIND_LEFTOVERS, '''
            for rc in (".bashrc", ".profile", ".pythonrc"):
                if b"@@TOKEN@@" in (_read(os.path.join(os.path.expanduser("~"), rc)) or b""):
                    _esc("dotfile " + rc)
                    found.append(rc)
            print("" if found else "clean")
        ''')),
    HostileProgram(
        "delayed_action_after_exit", P, settle_s=2.0,
        description="a child that ignores SIGHUP/SIGTERM, waits 1.5 s after the run, then connects to the host and writes files",
        code='''
            if os.fork() == 0:
                os.setsid()
                _set_comm("@@MARK@@")
                for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
                    signal.signal(s, signal.SIG_IGN)
                time.sleep(1.5)
                for host, port in (("127.0.0.1", @@TCP_PORT@@), ("172.17.0.1", @@TCP_ANY_PORT@@)):
                    try:
                        _tcp(host, port).close()
                    except Exception:
                        pass
                for d in ("/tmp", "/dev/shm", "@@HOME@@"):
                    try:
                        open(os.path.join(d, "hostile-@@TOKEN@@-late"), "w").write("late")
                    except Exception:
                        pass
                time.sleep(30)
                os._exit(0)
            print("bye")
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "nohup_at_cron_systemd_run", P,
        description="nohup/setsid/disown from a shell, and at/crontab/systemd-run if the tools exist",
        code='''
            os.system("nohup bash -c 'exec -a @@MARK@@-nohup sleep 30' >/dev/null 2>&1 &")
            os.system("setsid bash -c 'exec -a @@MARK@@-setsid sleep 30' </dev/null >/dev/null 2>&1 &")
            os.system("(bash -c 'exec -a @@MARK@@-disown sleep 30' &) ; disown 2>/dev/null")
            os.system("echo 'touch /tmp/hostile-@@TOKEN@@-at' | at now 2>/dev/null")
            os.system("(echo '* * * * * touch /tmp/hostile-@@TOKEN@@-cron') | crontab - 2>/dev/null")
            os.system("systemd-run --user --unit hostile-@@TOKEN@@ sleep 30 >/dev/null 2>&1")
            print("done")
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "python_path_poisoning", P,
        description="drop a module and a .pth (runs at interpreter start) into every sys.path entry and user site",
        code='''
            pyver = "python%d.%d" % sys.version_info[:2]
            dirs = list(sys.path) + [os.path.expanduser(f"~/.local/lib/{pyver}/site-packages"), "/tmp",
                                     f"/usr/local/lib/{pyver}/dist-packages", f"/usr/lib/{pyver}/site-packages"]
            for d in dirs:
                if not d:
                    continue
                for name, text in (("hostile_poison_@@TOKEN@@.py", "POISONED = True\\n"),
                                   ("hostile_@@TOKEN@@.pth", "import os; os.environ['HOSTILE_PTH_@@TOKEN@@'] = '1'\\n"),
                                   ("sitecustomize.py", "import os; os.environ['HOSTILE_SITE_@@TOKEN@@'] = '1'\\n")):
                    try:
                        os.makedirs(d, exist_ok=True)
                        with open(os.path.join(d, name), "w") as f:
                            f.write(text)
                        print("wrote", d, name)
                    except Exception:
                        pass
        ''',
        followup=join(FIND_LEFTOVERS, '''
            try:
                import hostile_poison_@@TOKEN@@
                _esc("imported the poisoned module")
                found.append("module")
            except ImportError:
                pass
            for k in ("HOSTILE_PTH_@@TOKEN@@", "HOSTILE_SITE_@@TOKEN@@"):
                if k in os.environ:
                    _esc("startup hook ran: " + k)
                    found.append(k)
            status, out = _run([sys.executable or "python3", "-c",
                                "import os; print(sorted(k for k in os.environ if 'HOSTILE' in k))"], timeout=1.5)
            if b"HOSTILE_" in out:
                _esc("a fresh interpreter ran the startup hook")
                found.append("fresh")
            print("" if found else "clean")
        ''')),
    HostileProgram(
        "sysv_and_posix_ipc", P,
        description="SysV shared memory, message queue and semaphores, a POSIX shm object, a POSIX message queue, a FIFO for the next run",
        code='''
            libc = _libc()
            key = @@IPC_KEY@@
            shm = libc.shmget(key, 4096, 0o1000 | 0o666)       # IPC_CREAT
            msg = libc.msgget(key, 0o1000 | 0o666)
            sem = libc.semget(key, 1, 0o1000 | 0o666)
            print("shm", shm, "msg", msg, "sem", sem)
            try:
                fd = os.open("/dev/shm/hostile-@@TOKEN@@-posix", os.O_CREAT | os.O_RDWR, 0o666)
                os.write(fd, b"left")
            except Exception as e:
                print("posix shm", type(e).__name__)
            try:
                os.mkfifo("/tmp/hostile-@@TOKEN@@-fifo")
            except Exception as e:
                print("fifo", type(e).__name__)
            mq = libc.mq_open(b"/hostile-@@TOKEN@@", os.O_CREAT | os.O_RDWR, 0o666, None)
            print("mq", mq, ctypes.get_errno())
        ''',
        followup=join(FIND_LEFTOVERS, '''
            libc = _libc()
            for name, rc in (("shm", libc.shmget(@@IPC_KEY@@, 0, 0)), ("msg", libc.msgget(@@IPC_KEY@@, 0)),
                             ("sem", libc.semget(@@IPC_KEY@@, 0, 0))):
                if rc >= 0:
                    _esc("SysV " + name + " survived")
                    found.append(name)
            if libc.mq_open(b"/hostile-@@TOKEN@@", os.O_RDONLY) >= 0:
                _esc("POSIX message queue survived")
                found.append("mq")
            print("" if found else "clean")
        ''')),
    HostileProgram(
        "listening_socket_left_behind", P,
        description="a daemon that listens on TCP and on an abstract unix socket for the next run to find",
        code='''
            if os.fork() == 0:
                os.setsid()
                _set_comm("@@MARK@@")
                try:
                    t = socket.socket()
                    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    t.bind(("127.0.0.1", 47000 + @@IPC_KEY@@ % 1000))
                    t.listen()
                    u = socket.socket(socket.AF_UNIX)
                    u.bind("\\0hostile-@@TOKEN@@-persist")
                    u.listen()
                except Exception as e:
                    pass
                time.sleep(30)
                os._exit(0)
            time.sleep(0.2)
        ''',
        followup=join(FIND_LEFTOVERS, '''
            for addr, fam in ((("127.0.0.1", 47000 + @@IPC_KEY@@ % 1000), socket.AF_INET),
                              ("\\0hostile-@@TOKEN@@-persist", socket.AF_UNIX)):
                s = socket.socket(fam)
                try:
                    s.settimeout(0.3)
                    s.connect(addr)
                    _esc("connected to what the previous run left: " + repr(addr))
                    found.append(repr(addr))
                except Exception:
                    pass
                finally:
                    s.close()
            print("" if found else "clean")
        ''')),
    HostileProgram(
        "hide_in_nested_namespaces", P,
        description="unshare a user + PID namespace (unprivileged userns), fork its init and a grandchild there, "
                    "both ignoring signals, in a new session, to outlive the sweep of the slot's processes",
        code='''
            libc = _libc()
            CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNS = 0x10000000, 0x20000000, 0x20000
            rc = libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS)
            print("unshare", rc, ctypes.get_errno(), flush=True)
            if os.fork() == 0:                 # PID 1 of the new namespace (when unshare worked)
                os.setsid()
                _set_comm("@@MARK@@")
                for s in range(1, 32):
                    if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
                        try:
                            signal.signal(s, signal.SIG_IGN)
                        except Exception:
                            pass
                if os.fork() == 0:
                    _set_comm("@@MARK@@")
                    time.sleep(30)
                    os._exit(0)
                time.sleep(30)
                os._exit(0)
            time.sleep(0.2)
            print("bye")
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "child_holds_stdout_open", P, allowed=frozenset({Verdict.WRONG_ANSWER, Verdict.TIMEOUT}),
        description="exit at once but leave a child holding stdout/stderr (a reader waiting for EOF hangs)",
        code='''
            if os.fork() == 0:
                _set_comm("@@MARK@@")
                time.sleep(30)
                os._exit(0)
            print("not the answer", flush=True)
            os._exit(0)
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "stopped_and_traced_children", P, allowed=NOT_A_PASS,
        description="leave a SIGSTOPped child, a zombie, and a child in a new process group",
        code='''
            pid = os.fork()
            if pid == 0:
                _set_comm("@@MARK@@")
                os.kill(os.getpid(), signal.SIGSTOP)
                time.sleep(30)
                os._exit(0)
            if os.fork() == 0:
                os._exit(0)                    # a zombie nobody reaps
            if os.fork() == 0:
                os.setpgid(0, 0)
                _set_comm("@@MARK@@")
                time.sleep(30)
                os._exit(0)
            print("bye")
        ''',
        followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
]
