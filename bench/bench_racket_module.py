"""Racket's floor in the sandbox: what a warm racket pays for each new program, beside a warm Python.

Why: issue 20 wants interpreted languages within 2x of Python's executions/s, and racket stays near
0.3x even forked from its warm server (sandbox/runtime/fork_server.rkt). A served child starts with
racket and its libraries loaded; what it still does is racket's own work on a program it has never seen:
read, expand and compile ``main.rkt``, then run it. Racket's separate compilation guarantee gives every
module's expansion fresh instances of its compile-time dependencies (~80 module instances for
``#lang racket/base``), so that work does not shrink with what the server has already loaded.

This measures it outside the sandbox, in one warm process per language, on the sandbox benchmark's
program (``tests/language_programs.py``'s ``DOUBLE``, input ``1``), ``--modules`` distinct sources each
(a trailing comment makes each one new, as the benchmark's trailing newlines do):

* **racket, from source**: a racket with ``racket/base`` loaded declares and runs each new ``main.rkt``
  (``dynamic-require``): what a served child pays per execution, less the fork, confinement and exit;
* **racket, from .zo**: the same modules compiled beforehand (``compiler/cm``), then loaded and run:
  what a program already compiled would pay (nothing reuses compiled programs across executions);
* **python**: a warm Python compiles and runs each new ``main.py`` (``compile`` + ``exec``).

Milliseconds per module (median of ``--repeats`` rounds), and racket's from-source cost against a whole
sandboxed Python execution, which `make bench-languages` measures (~3.5-5 ms of CPU on this machine).
A language whose per-program work alone exceeds twice that cannot reach 0.5x of Python's executions/s.

    .venv/bin/python -m bench.bench_racket_module
    .venv/bin/python -m bench.bench_racket_module --modules 200 --repeats 5
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from tests.language_programs import DOUBLE

#: Runs inside racket: argv = work directory, number of modules. Prints "<source ms> <zo ms>" per module.
RACKET_DRIVER = r"""#lang racket/base
(require compiler/cm racket/port)
(define-values (dir n) (let ([v (current-command-line-arguments)])
                         (values (vector-ref v 0) (string->number (vector-ref v 1)))))
(define (path-of kind i) (build-path dir (format "~a~a" kind i) "main.rkt"))
(define (run! path)
  (parameterize ([current-input-port (open-input-string "1\n")]
                 [current-output-port (open-output-nowhere)])
    (dynamic-require path #f)))
(define (per-module kind)
  (define start (current-inexact-milliseconds))
  (for ([i (in-range n)]) (run! (path-of kind i)))
  (/ (- (current-inexact-milliseconds) start) n))
(run! (path-of "warm" 0))
(for ([i (in-range n)]) (managed-compile-zo (path-of "zo" i)))
(define zo (parameterize ([use-compiled-file-check 'exists]) (per-module "zo")))
(define source (per-module "src"))
(printf "~a ~a\n" source zo)
"""


def write_modules(work: str, kind: str, count: int, program: str, source_file: str) -> None:
    for i in range(count):
        os.makedirs(os.path.join(work, f"{kind}{i}"))
        comment = ";" if source_file.endswith(".rkt") else "#"
        with open(os.path.join(work, f"{kind}{i}", source_file), "w", encoding="utf-8") as f:
            f.write(f"{program}\n{comment} {kind} {i}\n")


def racket_round(modules: int) -> tuple[float, float]:
    """(ms per module from source, ms per module from .zo) in one warm racket."""
    with tempfile.TemporaryDirectory(prefix="bench-racket-") as work:
        for kind, count in (("warm", 1), ("src", modules), ("zo", modules)):
            write_modules(work, kind, count, DOUBLE["racket"], "main.rkt")
        driver = os.path.join(work, "driver.rkt")
        with open(driver, "w", encoding="utf-8") as f:
            f.write(RACKET_DRIVER)
        done = subprocess.run(["racket", driver, work, str(modules)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"racket driver failed ({done.returncode}): {done.stderr[-400:]}")
        source_ms, zo_ms = (float(x) for x in done.stdout.split())
        return source_ms, zo_ms


def python_round(modules: int) -> float:
    """ms per module: a warm Python compiling and running each new DOUBLE source."""
    sources = [f"{DOUBLE['python']}\n# src {i}\n" for i in range(modules)]
    real_stdin, real_stdout = sys.stdin, sys.stdout
    start = time.perf_counter()
    try:
        for i, source in enumerate(sources):
            sys.stdin, sys.stdout = io.StringIO("1\n"), io.StringIO()
            exec(compile(source, f"main{i}.py", "exec"), {"__name__": "__main__"})  # noqa: S102 - our own program
    finally:
        sys.stdin, sys.stdout = real_stdin, real_stdout
    return 1000 * (time.perf_counter() - start) / modules


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=100, help="new programs per round (default: 100)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds, racket and python in turn (default: 3)")
    args = parser.parse_args(argv)
    if shutil.which("racket") is None:
        print("racket is not installed here (SANDBOX_LANGUAGES=all scripts/system_setup.sh installs it)")
        return 0
    source, zo, python = [], [], []
    for _ in range(args.repeats):
        s, z = racket_round(args.modules)
        source.append(s)
        zo.append(z)
        python.append(python_round(args.modules))
    print(f"== a new program in a warm interpreter: {args.modules} distinct DOUBLE programs per round, "
          f"median of {args.repeats} rounds; {os.cpu_count()} CPUs ==")
    print(f"{'interpreter':<24}{'ms/program':>11}  rounds")
    for name, values in (("racket, from source", source), ("racket, from .zo", zo), ("python", python)):
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:<24}{statistics.median(values):>11.2f}  {shown}")
    print(f"racket from source / from .zo: {statistics.median(source) / statistics.median(zo):.0f}x; "
          f"/ python: {statistics.median(source) / statistics.median(python):.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
