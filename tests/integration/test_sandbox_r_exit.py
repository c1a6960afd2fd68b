"""R's exit without a shell (sandbox/runtime/fork_server_r.c), in a real Rscript outside the sandbox.

The fork server's children end through it (tests/integration/test_sandbox_interpreter_state.py compares
their output, status and warnings with Rscript's). Here the mechanism itself: with the library's exit in
place, R's session directory is removed without R's ``sh -c "rm -Rf <dir>"`` ever running ``rm`` (an
``rm`` first on PATH records its calls: R's shell finds it there), everything else exactly as without it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox import runtime_build

pytestmark = pytest.mark.skipif(shutil.which("Rscript") is None or shutil.which("gcc") is None,
                                reason="needs R and a C compiler")

PR_SET_NO_NEW_PRIVS = 38
#: Files, a subdirectory, a read-only file and a link to a file outside the session directory; .Last, an
#: exit finalizer and their warnings; then one of ENDINGS.
PROGRAM = """\
f <- tempfile()
writeLines('a', f)
Sys.chmod(f, '0400')
dir.create(file.path(tempdir(), 'd', 'e'), recursive = TRUE)
writeLines('b', file.path(tempdir(), 'd', 'e', 'g'))
invisible(file.symlink(Sys.getenv('OUTSIDE'), file.path(tempdir(), 'link')))
.Last <- function() { cat('last\\n'); warning('from .Last') }
invisible(reg.finalizer(globalenv(), function(e) cat('fin', file.exists(f), '\\n'), onexit = TRUE))
warning('top')
"""
ENDINGS = {"end of script": "cat('x\\n')\n", "quit status": "quit(status = 3)\n", "error": "stop('e')\n"}


def _no_new_privs() -> None:
    """As in a slot: without it (and without CAP_SYS_ADMIN) no seccomp filter can be installed."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def rscript(tmp_path: Path, name: str, code: str) -> tuple[subprocess.CompletedProcess, list[str], Path]:
    """Runs ``code`` with Rscript --vanilla; its result, the recorded rm calls and its TMPDIR."""
    work = tmp_path / name
    (work / "bin").mkdir(parents=True)
    (work / "tmp").mkdir()
    log = work / "rm.log"
    rm = work / "bin" / "rm"
    rm.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /bin/rm "$@"\n')
    rm.chmod(0o755)
    script = work / "main.R"
    script.write_text(code)
    env = {**os.environ, "PATH": f"{work / 'bin'}:{os.environ['PATH']}", "TMPDIR": str(work / "tmp"),
           "OUTSIDE": str(tmp_path / "outside.txt")}
    proc = subprocess.run(["Rscript", "--vanilla", str(script)], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=_no_new_privs, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls, work / "tmp"


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_r_exits_as_before_but_removes_its_session_directory_without_a_shell(tmp_path, ending) -> None:
    library = next(p for p in runtime_build.built_helpers() if p.name == "fork_server_r.so")
    (tmp_path / "outside.txt").write_text("kept\n")
    install = (f"dyn.load('{library}')\ninvisible(.C('sandbox_r_prepare'))\n"
               f"dyn.unload('{library}')\n")
    plain, plain_rm, plain_tmp = rscript(tmp_path, "plain", PROGRAM + ENDINGS[ending])
    served, served_rm, served_tmp = rscript(tmp_path, "served", install + PROGRAM + ENDINGS[ending])

    assert (served.returncode, served.stdout, served.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    if ending != "error":                                             # an error's exit runs no .Last
        assert "from .Last" in served.stderr and "last\n" in served.stdout
    assert [c for c in plain_rm if "/Rtmp" in c], "R's own exit no longer runs rm: this test proves nothing"
    assert served_rm == []
    assert list(plain_tmp.iterdir()) == [] and list(served_tmp.iterdir()) == []
    assert (tmp_path / "outside.txt").read_text() == "kept\n"         # the link went, not its target
