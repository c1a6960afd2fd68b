"""The floor under `make bench-languages`: each interpreter's own start-up, outside the sandbox.

Why: issue 20 wants interpreted languages within 2x of Python's executions/s in the sandbox. Python
runs in the slot's warm interpreter; every other language starts its interpreter per execution
(and per case), and no sandbox can make that start cheaper without reusing process state between
executions. So per interpreted language whose toolchain is installed here, this runs the language's
own ``run`` command (sandbox/languages.toml, with its env) on the host, in a temporary directory,
on the same stdin program as the sandbox benchmark (``tests/language_programs.py``'s ``DOUBLE``,
input ``1``), ``--runs`` times one after the other, and prints the median and minimum wall time and
the median CPU time (user + system, of the interpreter and its children). Python's line is its cold
start (``python3 -I -S``) for reference, not what the sandbox pays for Python.

A language whose bare start alone takes more than twice the sandbox's time per Python execution
cannot reach 0.5x of Python's executions/s, whatever the sandbox does.

    .venv/bin/python -m bench.bench_language_start
    .venv/bin/python -m bench.bench_language_start --languages bash,lua,perl,php,ruby,nodejs --runs 40
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from sandbox.languages import Language, load_languages, resolve_language_name
from tests.language_programs import DOUBLE


def start_times(lang: Language, runs: int) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) of ``runs`` bare runs of ``lang``'s DOUBLE program on input 1."""
    code = DOUBLE[lang.name]
    source, _compile, run = lang.for_code(code)
    if lang.fast_path_python:
        run = (sys.executable, "-I", "-S", source)
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="bench-start-") as work:
        with open(os.path.join(work, source), "w", encoding="utf-8") as f:
            f.write(code)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": work, "TMPDIR": work}
        env.update({k: v.replace("/tmp/", work + "/") for k, v in lang.env.items()})
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(run, cwd=work, env=env, input=b"1\n", capture_output=True, check=False)
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if done.returncode != 0 or done.stdout.strip() != b"2":
                raise RuntimeError(f"{lang.name}: {run} gave {done.returncode}: {done.stderr[-300:]!r}")
    return walls, cpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default="", help="comma-separated names (default: every installed "
                                                        "interpreted one)")
    parser.add_argument("--runs", type=int, default=30, help="runs per language (default: 30)")
    args = parser.parse_args(argv)
    table = load_languages()
    names = [resolve_language_name(n.strip(), table) for n in args.languages.split(",") if n.strip()] \
        or [n for n in table if n in DOUBLE]
    print(f"== bare start-up outside the sandbox: {args.runs} runs each, one after the other; "
          f"{os.cpu_count()} CPUs ==")
    print(f"{'language':<15}{'wall ms':>10}{'min ms':>9}{'cpu ms':>9}  command")
    for name in names:
        lang = table[name]
        if name in table.unavailable or lang.compiled or name not in DOUBLE:
            continue
        walls, cpus = start_times(lang, args.runs)
        shown = "python3 -I -S main.py (cold)" if lang.fast_path_python else " ".join(lang.for_code(DOUBLE[name])[2])
        print(f"{name:<15}{1000 * statistics.median(walls):>10.1f}{1000 * min(walls):>9.1f}"
              f"{1000 * statistics.median(cpus):>9.1f}  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
