"""Exhaustion: spin, fork, allocate, fill, flood, sleep, ignore signals, crash the channel.

Each must end in a limit verdict (or the program's own error) within the wall limit plus
the host's margin, leave the host's memory, disk and process table as they were, and
leave the sandbox able to run the next program.
"""

from __future__ import annotations

from reward_core.sandbox_contract import TestStyle, Verdict
from tests.integration.hostile.model import KILLED_BY_LIMIT, NOT_A_PASS, TIMEOUT, Category, HostileProgram, join
from tests.integration.hostile.persistence import FIND_LEFTOVERS, NOTHING_LEFT

X = Category.EXHAUSTION
MEMORY = frozenset({Verdict.MEMORY_LIMIT, Verdict.RUNTIME_ERROR})
OUTPUT = frozenset({Verdict.OUTPUT_LIMIT})
FORK_BOMB = frozenset({Verdict.TIMEOUT, Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT, Verdict.WRONG_ANSWER})

PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "infinite_loop_in_candidate", X, style=TestStyle.HUMANEVAL, allowed=TIMEOUT,
        description="the candidate never returns",
        code='''
            def solve(x):
                while True:
                    pass
        '''),
    HostileProgram(
        "infinite_loop_at_import", X, allowed=TIMEOUT, description="a STDIO program that loops forever",
        code='''
            while True:
                pass
        '''),
    HostileProgram(
        "cpu_spin_in_threads", X, allowed=TIMEOUT,
        description="as many spinning threads as it can start, up to 16 (CPU time accrues faster than wall time)",
        code='''
            import threading
            threading.stack_size(256 << 10)
            def spin():
                while True:
                    pass
            n = 0
            for _ in range(16):
                try:
                    threading.Thread(target=spin, daemon=True).start()
                    n += 1
                except RuntimeError:
                    break
            print("spinning threads:", n, flush=True)
            spin()
        '''),
    HostileProgram(
        "raise_own_limits_then_spin", X, allowed=TIMEOUT,
        description="raise RLIMIT_CPU/AS/NPROC to infinity, ignore SIGXCPU, then spin",
        code='''
            import resource
            for lim in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE,
                        resource.RLIMIT_NOFILE):
                try:
                    resource.setrlimit(lim, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                    _esc(f"raised rlimit {lim}")
                except Exception as e:
                    print(lim, resource.getrlimit(lim), type(e).__name__)
            signal.signal(signal.SIGXCPU, signal.SIG_IGN)
            while True:
                pass
        '''),
    HostileProgram(
        "fork_bomb_python", X, allowed=FORK_BOMB, description="os.fork() forever in every process",
        code='''
            _set_comm("@@MARK@@")
            while True:
                try:
                    os.fork()
                except Exception:
                    pass
        ''', followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "fork_bomb_shell", X, allowed=FORK_BOMB, description="the bash fork bomb",
        code='''
            os.system("bash -c ':(){ :|:& };:' 2>/dev/null")
            while True:
                time.sleep(0.01)
        ''', followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "fork_bomb_cpp", X, language="cpp", allowed=FORK_BOMB, description="C++: fork() forever",
        code=r'''
            #include <unistd.h>
            #include <sys/prctl.h>
            int main() {
                prctl(PR_SET_NAME, "@@MARK@@", 0, 0, 0);
                for (;;) fork();
            }
        ''', followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "thread_bomb", X, allowed=FORK_BOMB | MEMORY, description="start threads until something gives",
        code='''
            import threading
            n = 0
            try:
                while True:
                    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()
                    n += 1
            except Exception as e:
                print("threads", n, type(e).__name__)
            while True:
                pass
        ''', followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "memory_balloon_python", X, allowed=MEMORY, watch_memory=True,
        description="touch 32 MB at a time until the memory limit",
        code='''
            hog = []
            while True:
                hog.append(bytearray(b"\\x01") * (32 << 20))
        '''),
    HostileProgram(
        "memory_balloon_in_candidate", X, style=TestStyle.HUMANEVAL, allowed=MEMORY, watch_memory=True,
        description="the candidate allocates until the limit",
        code='''
            def solve(x):
                hog = []
                while True:
                    hog.append(b"y" * (32 << 20))
        '''),
    HostileProgram(
        "memory_balloon_threads", X, allowed=MEMORY | TIMEOUT, watch_memory=True,
        description="4 threads touch 32 MB at a time until the limit (RLIMIT_AS is no longer the memory limit); "
                    "on a loaded machine the wall-clock limit may come first, and the host's memory is watched",
        code='''
            import threading
            hogs = [[] for _ in range(4)]
            def grow(hog):
                while True:
                    hog.append(bytearray(b"\\x01") * (32 << 20))
            for hog in hogs:
                threading.Thread(target=grow, args=(hog,), daemon=True).start()
            while True:
                time.sleep(1)
        '''),
    HostileProgram(
        "memory_mmap_touch_pages", X, allowed=MEMORY | TIMEOUT, watch_memory=True,
        description="anonymous mmap of 4 GB, then write one byte per page",
        code='''
            libc = _libc()
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
            size = 4 << 30
            addr = libc.mmap(None, size, 3, 0x02 | 0x20 | 0x4000, -1, 0)   # RW, PRIVATE|ANONYMOUS|NORESERVE
            if addr in (None, ctypes.c_void_p(-1).value):
                print("4G mmap refused, errno", ctypes.get_errno())
                size = 200 << 20
                addr = libc.mmap(None, size, 3, 0x02 | 0x20, -1, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                for off in range(0, size, 1 << 20):
                    ctypes.memset(addr + off, 1, 1 << 20)
            hog = [bytearray(b"\\x01") * (32 << 20) for _ in range(1000)]
        '''),
    HostileProgram(
        "memory_across_children", X, allowed=KILLED_BY_LIMIT | {Verdict.WRONG_ANSWER}, watch_memory=True,
        description="12 children each touch 200 MB (a per-process RLIMIT_AS alone lets this take 2.4 GB)",
        code='''
            kids = []
            for i in range(12):
                try:
                    pid = os.fork()
                except Exception as e:
                    print("fork", i, type(e).__name__)
                    break
                if pid == 0:
                    _set_comm("@@MARK@@")
                    try:
                        hog = bytearray(b"\\x01") * (200 << 20)
                        time.sleep(30)
                    finally:
                        os._exit(0)
                kids.append(pid)
            time.sleep(30)
        ''', followup=join(FIND_LEFTOVERS, NOTHING_LEFT)),
    HostileProgram(
        "memory_balloon_cpp", X, language="cpp", allowed=MEMORY, watch_memory=True,
        description="C++: new[] + memset 32 MB at a time",
        code=r'''
            #include <cstring>
            #include <vector>
            int main() {
                std::vector<char*> hog;
                for (;;) { char* p = new char[32 << 20]; memset(p, 1, 32 << 20); hog.push_back(p); }
            }
        '''),
    HostileProgram(
        "disk_fill_scratch_tmp_shm", X, allowed=NOT_A_PASS,
        description="write 1 MB blocks into scratch, /tmp, /var/tmp and /dev/shm until each refuses",
        code='''
            block = b"z" * (1 << 20)
            for d in (".", "/tmp", "/var/tmp", "/dev/shm", "@@HOME@@"):
                n = 0
                try:
                    with open(os.path.join(d, "hostile-@@TOKEN@@-fill"), "wb") as f:
                        while n < 4096:
                            f.write(block)
                            f.flush()
                            n += 1
                except BaseException as e:
                    print(d, n, "MB then", type(e).__name__, flush=True)
                for i in range(64):
                    try:
                        with open(os.path.join(d, f"hostile-@@TOKEN@@-small{i}"), "wb") as f:
                            f.write(block)
                    except BaseException:
                        break
        '''),
    HostileProgram(
        "huge_single_file", X, allowed=frozenset({Verdict.OUTPUT_LIMIT, Verdict.RUNTIME_ERROR, Verdict.WRONG_ANSWER}),
        description="one file past RLIMIT_FSIZE, by writing and by a sparse seek",
        code='''
            with open("sparse", "wb") as f:
                try:
                    f.seek(50 << 30)
                    f.write(b"x")
                    f.flush()
                    _esc("a 50 GB sparse file")
                except BaseException as e:
                    print("sparse", type(e).__name__, flush=True)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            with open("big", "wb") as f:
                block = b"q" * (1 << 20)
                for _ in range(1 << 14):
                    f.write(block)
        '''),
    HostileProgram(
        "open_files_exhaustion", X, allowed=NOT_A_PASS,
        description="open files, pipes and sockets until EMFILE, then try to raise RLIMIT_NOFILE",
        code='''
            import resource
            fds = []
            try:
                while True:
                    fds.append(os.open("/dev/null", os.O_RDONLY))
                    fds.extend(os.pipe())
                    a, b = socket.socketpair()
                    fds.extend([a.detach(), b.detach()])
            except Exception as e:
                print("opened", len(fds), type(e).__name__)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
                _esc("raised RLIMIT_NOFILE")
            except Exception as e:
                print("setrlimit", type(e).__name__)
            if len(fds) > 4096:
                _esc(f"{len(fds)} descriptors open")
        '''),
    HostileProgram(
        "huge_stdout", X, allowed=OUTPUT, description="write 64 KB lines to stdout forever",
        code='''
            line = "x" * 65535 + "\\n"
            while True:
                sys.stdout.write(line)
        '''),
    HostileProgram(
        "huge_stderr", X, allowed=OUTPUT, description="write to stderr forever",
        code='''
            line = "e" * 65535 + "\\n"
            while True:
                sys.stderr.write(line)
        '''),
    HostileProgram(
        "huge_output_raw_fds_from_children", X, allowed=OUTPUT,
        description="four processes os.write() 1 MB blocks to fds 1 and 2 (no Python buffering)",
        code='''
            for _ in range(2):
                os.fork()
            block = b"o" * (1 << 20)
            while True:
                os.write(1, block)
                os.write(2, block)
        '''),
    HostileProgram(
        "huge_output_in_candidate", X, style=TestStyle.HUMANEVAL,
        allowed=frozenset({Verdict.OUTPUT_LIMIT}),
        description="the candidate floods stdout while it is being tested",
        code='''
            def solve(x):
                while True:
                    print("p" * 65536)
        '''),
    HostileProgram(
        "sleep_forever", X, allowed=TIMEOUT, description="time.sleep(10**6)",
        code='''
            time.sleep(10 ** 6)
        '''),
    HostileProgram(
        "signal_ignoring_loop", X, allowed=TIMEOUT,
        description="ignore and block every catchable signal, new session, then spin",
        code='''
            for s in range(1, 65):
                if s in (signal.SIGKILL, signal.SIGSTOP):
                    continue
                try:
                    signal.signal(s, signal.SIG_IGN)
                except Exception:
                    pass
            signal.pthread_sigmask(signal.SIG_BLOCK, set(range(1, 65)) - {signal.SIGKILL, signal.SIGSTOP})
            try:
                os.setsid()
            except Exception:
                pass
            while True:
                pass
        '''),
    HostileProgram(
        "block_on_own_pipe", X, allowed=TIMEOUT, description="block forever reading a pipe nobody writes",
        code='''
            r, w = os.pipe()
            os.read(r, 1)
        '''),
    HostileProgram(
        "deep_recursion_segfault", X, allowed=frozenset({Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT}),
        description="hash() of a tuple nested 300,000 deep recurses in C (no recursion check) until the stack overflows",
        code='''
            t = ()
            for _ in range(300000):
                t = (t,)
            print(hash(t))
        '''),
    HostileProgram(
        "huge_return_value", X, style=TestStyle.HUMANEVAL, allowed=NOT_A_PASS,
        description="the candidate returns a 100 MB string: the channel must cap it, not choke",
        code='''
            def solve(x):
                return "r" * (100 << 20)
        '''),
    HostileProgram(
        "deeply_nested_return", X, style=TestStyle.HUMANEVAL, allowed=NOT_A_PASS,
        description="the candidate returns a list nested 200,000 deep (recursion in an encoder/decoder)",
        code='''
            def solve(x):
                v = []
                for _ in range(200000):
                    v = [v]
                return v
        '''),
    HostileProgram(
        "self_referencing_return", X, style=TestStyle.HUMANEVAL, allowed=NOT_A_PASS,
        description="the candidate returns a list that contains itself",
        code='''
            def solve(x):
                v = []
                v.append(v)
                return v
        '''),
    HostileProgram(
        "huge_int_and_wide_return", X, style=TestStyle.FUNCTION_CALL, allowed=NOT_A_PASS,
        description="a 250,000-digit int, a dict of 10**6 keys, 20 MB of bytes (encoder and frame limits)",
        code='''
            _n = [0]
            def solve(x):
                _n[0] += 1
                if _n[0] == 1:
                    return 7 ** 300000
                if _n[0] == 2:
                    return {i: i for i in range(10 ** 6)}
                return b"b" * (20 << 20)
        '''),
    HostileProgram(
        "flood_the_call_channel", X, style=TestStyle.HUMANEVAL, allowed=NOT_A_PASS, watch_memory=True,
        description="inside the call, 4 processes write valid reply frames to the call channel as fast as they can "
                    "(a reader that drains until EAGAIN without a bound buffers all of it)",
        code='''
            import json
            _frame = json.dumps({"op": "return", "value": 0}).encode()
            _chunk = (len(_frame).to_bytes(4, "big") + _frame) * 40000
            def solve(x):
                os.set_blocking(3, True)
                for _ in range(3):
                    os.fork()
                while True:
                    try:
                        os.write(3, _chunk)
                    except OSError:
                        os._exit(0)
        '''),
    HostileProgram(
        "flood_other_processes_stdio", X, allowed=NOT_A_PASS,
        description="write endlessly to /proc/<pid>/fd/1 and 2 of every visible process, /dev/console, /dev/tty "
                    "(the container's log on the host disk, the zygote's stderr forwarded to host logging)",
        code='''
            targets = []
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    targets += [f"/proc/{pid}/fd/1", f"/proc/{pid}/fd/2"]
            fds = []
            for t in targets + ["/dev/console", "/dev/tty", "/dev/kmsg", "/proc/1/fd/1", "/proc/1/fd/2"]:
                try:
                    fds.append((t, os.open(t, os.O_WRONLY | os.O_NONBLOCK)))
                except OSError as e:
                    print(t, type(e).__name__)
            line = b"log flood " * 6553 + b"\\n"
            for t, fd in fds:
                if t.startswith("/proc/1/") and os.getpid() == 1:
                    continue
                _esc("may write to " + t)
            end = time.monotonic() + 1.5
            while fds and time.monotonic() < end:
                for t, fd in fds:
                    try:
                        os.write(fd, line)
                    except OSError:
                        pass
        '''),
    HostileProgram(
        "cpp_infinite_loop", X, language="cpp", allowed=TIMEOUT, description="C++: for(;;) with a volatile counter",
        code=r'''
            int main() { volatile unsigned long n = 0; for (;;) ++n; }
        '''),
    HostileProgram(
        "cpp_compile_bomb_include_dev_zero", X, language="cpp",
        allowed=frozenset({Verdict.COMPILE_ERROR, Verdict.TIMEOUT, Verdict.MEMORY_LIMIT}),
        limits={"compile_wall_s": 4.0},
        description="C++: #include </dev/zero> makes the compiler read forever",
        code=r'''
            #include </dev/zero>
            int main() { return 0; }
        '''),
    HostileProgram(
        "cpp_output_flood", X, language="cpp", allowed=OUTPUT, description="C++: fwrite to stdout forever",
        code=r'''
            #include <cstdio>
            int main() { static char b[1 << 16]; for (auto& c : b) c = 'c'; for (;;) fwrite(b, 1, sizeof b, stdout); }
        '''),
]
