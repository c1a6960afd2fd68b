"""Runtime helpers written in C, built on the host for the process backend's fork servers.

A fork server's interpreter may lack an interface to the system calls its child needs to confine
itself (R has none; racket's ffi could, but its I/O layer must also be renewed in the child):
``runtime/fork_server_native.c``, loaded by ``runtime/fork_server.R`` with ``dyn.load`` and by
``runtime/fork_server.rkt`` with ``ffi-lib``; ``runtime/fork_server_node.c``, node's Node-API addon
(``runtime/fork_server.js``), which makes node forkable and calls the former's serve loop. Each
``runtime/*.c`` is compiled here once per host
process, with the C compiler the ``c`` language already needs (``gcc``, else ``cc``), into a private
directory of ours (mode 0700, the executor's user, removed at exit); the process backend copies the
shared object into every slot as it copies the rest of the runtime (root-owned, read-only,
``/opt/sandbox/runtime``), never a path of the host. Without a compiler, or when a build fails
(logged once), the helper is missing: its fork servers cannot start and their languages run their
``run`` command, as before.
"""

from __future__ import annotations

import atexit
import functools
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
#: Flags of every helper: a shared object whose undefined symbols (the interpreter's) resolve at load.
CFLAGS = ("-O2", "-shared", "-fPIC", "-Wall")
_BUILD_S = 120


@functools.lru_cache(maxsize=1)
def built_helpers() -> tuple[Path, ...]:
    """The shared objects built from ``runtime/*.c`` (``<stem>.so``), built on the first call."""
    sources = sorted(RUNTIME_DIR.glob("*.c"))
    compiler = shutil.which("gcc") or shutil.which("cc")
    if not sources:
        return ()
    if compiler is None:
        log.warning("no C compiler (gcc): the fork servers that need %s run their languages' run command",
                    ", ".join(s.name for s in sources))
        return ()
    out = Path(tempfile.mkdtemp(prefix="reward-sandbox-helpers-"))
    atexit.register(shutil.rmtree, out, True)
    built = []
    for source in sources:
        target = out / f"{source.stem}.so"
        try:
            proc = subprocess.run([compiler, *CFLAGS, "-o", str(target), str(source)], capture_output=True,
                                  timeout=_BUILD_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("cannot build %s: %s", source.name, exc)
            continue
        if proc.returncode != 0:
            log.warning("cannot build %s (%s exit %d): %s", source.name, compiler, proc.returncode,
                        proc.stderr.decode("utf-8", "replace")[-2000:])
            continue
        built.append(target)
    return tuple(built)
