"""`make bench-languages`: every installed language through the sandbox, side by side with Python.

Why: issue 20's goal is that interpreted languages run within 2x of Python's executions/s and that
compiled ones compile once per submission. Per language whose toolchain is installed here (the
sandbox's own table, ``sandbox/languages.py``; the rest are listed as skipped, with what to install),
on one executor of ``--workers`` slots (concurrency 2 by default):

* **hello**: a STDIO program that reads a line and prints one (``tests/language_programs.py``'s
  ``DOUBLE``), one case: ``--runs`` executions, ``--workers`` at once -> executions/s;
* **submission**: the same program against 10 STDIO cases (a compile + 10 runs for a compiled
  language): ``--submissions`` executions -> executions/s, and the compile step's time (the
  result's ``compile.wall_s``, else its wall time minus its cases');
* **peak MB**: the largest peak RSS the results report (the program, or its compiler), i.e. the
  memory one slot needs for this language;
* **resubmitted** (compiled languages): the same submissions sent again, identical: executions/s and
  the compile-cache **hit rate** (the share whose ``compile.cached`` is set: no compiler ran,
  sandbox/compile_artifacts.py). ``compiles/subm`` counts the compiler runs per submission over both
  batches (1.0 first, 0.0 resubmitted: 0.5 when the cache works).

Every program's source is unique per round (trailing newlines), so the cache cannot hide the first
compile. Every result must be ACCEPTED (else the language's row says how many were not, and
the first error). Languages take turns, for ``--repeats`` rounds (a round runs every language's
hello and submission batch once), so that other work on this machine's shared CPUs slows them
alike; the figures are the median over rounds, and the ratios are to Python's.

    make bench-languages
    .venv/bin/python -m bench.bench_languages --languages python,go,java,nodejs --runs 20 --submissions 4
    .venv/bin/python -m bench.bench_languages --backend docker
    SANDBOX_LANGUAGES=all .venv/bin/python -m bench.bench_languages --backend docker --languages ruby,php,R \
        --fork-servers none      # the same without fork servers
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, Executor, Limits, TestCase, TestStyle
from sandbox.factory import create_executor
from sandbox.languages import LanguageTable, load_languages, resolve_language_name
from tests.language_programs import DOUBLE

BASELINE = "python"
CASES = 10
#: Generous limits: a JVM's or rustc's start is what is measured, not a limit's verdict.
LIMITS = Limits(wall_s=120.0, cpu_s=120.0, memory_mb=1024, compile_wall_s=120.0)


@dataclass
class Figures:
    """One language's measurements over the rounds."""

    hello_rate: list[float] = field(default_factory=list)
    submission_rate: list[float] = field(default_factory=list)
    compile_s: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    resubmit_rate: list[float] = field(default_factory=list)
    resubmits: int = 0
    cache_hits: int = 0
    compiles: int = 0
    submissions: int = 0
    failures: int = 0
    first_error: str = ""


def request(language: str, n_cases: int, k: int) -> ExecutionRequest:
    """The DOUBLE program with ``n_cases`` cases (inputs 1..n); ``k`` makes its source unique."""
    cases = tuple(TestCase(stdin=f"{i}\n", expected_stdout=f"{2 * i}\n") for i in range(1, n_cases + 1))
    return ExecutionRequest(id=f"{language}-{n_cases}-{k}", code=DOUBLE[language] + "\n" * (k + 1),
                            language=language, style=TestStyle.STDIO, cases=cases, limits=LIMITS)


def compile_seconds(result: ExecutionResult) -> float:
    step = getattr(result, "compile", None)
    if step is not None and step.wall_s > 0:
        return step.wall_s
    return max(0.0, result.wall_s - sum(t.wall_s for t in result.tests))


def timed_batch(executor: Executor, requests: list[ExecutionRequest], figures: Figures) -> tuple[float, list]:
    """Runs the batch (the executor's concurrency at once); returns executions/s and the results."""
    t0 = time.perf_counter()
    results = executor.execute_batch(requests)
    rate = len(requests) / (time.perf_counter() - t0)
    for result in results:
        figures.peak_mb = max(figures.peak_mb, result.peak_memory_mb)
        if not result.passed:
            figures.failures += 1
            figures.first_error = figures.first_error or f"{result.verdict.value}: {result.error[:200]}"
    return rate, results


def run_round(executor: Executor, languages: Sequence[str], compiled: dict[str, bool], args: argparse.Namespace,
              figures: dict[str, Figures], round_no: int) -> None:
    for name in languages:
        base = round_no * (args.runs + args.submissions)
        hello = [request(name, 1, base + i) for i in range(args.runs)]
        rate, _ = timed_batch(executor, hello, figures[name])
        figures[name].hello_rate.append(rate)
        subs = [request(name, CASES, base + args.runs + i) for i in range(args.submissions)]
        rate, results = timed_batch(executor, subs, figures[name])
        figures[name].submission_rate.append(rate)
        if compiled[name]:
            figures[name].compile_s.extend(compile_seconds(r) for r in results if r.passed)
            rate, again = timed_batch(executor, subs, figures[name])    # the same sources: the cache answers
            figures[name].resubmit_rate.append(rate)
            figures[name].resubmits += len(again)
            figures[name].cache_hits += sum(bool(r.compile and r.compile.cached) for r in again)
            figures[name].submissions += len(results) + len(again)
            figures[name].compiles += sum(bool(r.compile and not r.compile.cached) for r in results + again)


def report(languages: Sequence[str], compiled: dict[str, bool], figures: dict[str, Figures],
           args: argparse.Namespace) -> None:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    base = figures.get(BASELINE)
    base_hello = med(base.hello_rate) if base else float("nan")
    base_sub = med(base.submission_rate) if base else float("nan")
    print(f"\n== {args.backend} backend, {args.workers} slots; hello: {args.runs} executions of 1 case, submission: "
          f"{args.submissions} executions of {CASES} cases; median of {args.repeats} interleaved rounds; "
          f"{os.cpu_count()} CPUs ==")
    print(f"{'language':<15}{'compiled':>9}{'hello/s':>10}{'x python':>10}{'subm/s':>10}{'x python':>10}"
          f"{'compile s':>11}{'peak MB':>9}{'resub/s':>9}{'hit rate':>9}{'compiles/subm':>14}  notes")
    for name in languages:
        f = figures[name]
        hello, sub = med(f.hello_rate), med(f.submission_rate)
        compile_s = f"{med(f.compile_s):>11.2f}" if compiled[name] else f"{'-':>11}"
        if compiled[name] and f.resubmits:
            cache = (f"{med(f.resubmit_rate):>9.2f}{f.cache_hits / f.resubmits:>9.0%}"
                     f"{f.compiles / max(1, f.submissions):>14.2f}")
        else:
            cache = f"{'-':>9}{'-':>9}{'-':>14}"
        note = f"{f.failures} not accepted (first: {f.first_error})" if f.failures else ""
        print(f"{name:<15}{'yes' if compiled[name] else 'no':>9}{hello:>10.1f}{hello / base_hello:>10.2f}"
              f"{sub:>10.2f}{sub / base_sub:>10.2f}{compile_s}{f.peak_mb:>9.0f}{cache}  {note}")


def chosen_languages(table: LanguageTable, selection: str) -> tuple[list[str], list[str]]:
    """(languages to measure, Python first; skipped ones with why)."""
    names = list(table) if not selection else [resolve_language_name(n.strip(), table)
                                               for n in selection.split(",") if n.strip()]
    runnable = [n for n in names if n in DOUBLE and n not in table.unavailable]
    skipped = [f"{n}: {table.unavailable[n]}" for n in names if n in table.unavailable and n in DOUBLE]
    skipped += [f"{n}: no stdin program (a test framework or a fixed-output language)"
                for n in names if n not in DOUBLE and (selection or n not in table.unavailable)]
    ordered = [BASELINE] + [n for n in runnable if n != BASELINE]
    return ordered, skipped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default="", help="comma-separated names (default: every installed one)")
    parser.add_argument("--backend", choices=("process", "docker"), default="process")
    parser.add_argument("--workers", type=int, default=2, help="slots: programs at once (default: 2)")
    parser.add_argument("--runs", type=int, default=16, help="hello-world executions per round (default: 16)")
    parser.add_argument("--submissions", type=int, default=4,
                        help=f"{CASES}-case submissions per round (default: 4)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--fork-servers", default="",
                        help="languages whose fork servers the slots start, either backend (e.g. default,racket; "
                             "none); empty: the default set (ruby, php, R, nodejs)")
    args = parser.parse_args(argv)
    table = load_languages()
    languages, skipped = chosen_languages(table, args.languages)
    compiled = {name: table[name].compiled for name in languages}
    servers = {} if not args.fork_servers else {"fork_servers": tuple(
        n.strip() for n in args.fork_servers.split(",") if n.strip() not in ("", "none"))}
    executor = create_executor(args.backend, concurrency=args.workers, languages=table, **servers)
    try:
        for name in languages:   # warm-up: slots started, toolchains' files in the page cache
            executor.execute(request(name, 1, 10**6))
        figures = {name: Figures() for name in languages}
        for round_no in range(args.repeats):
            started = time.perf_counter()
            run_round(executor, languages, compiled, args, figures, round_no)
            print(f"round {round_no + 1}/{args.repeats}: {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        executor.close()
    report(languages, compiled, figures, args)
    for line in skipped:
        print(f"skipped {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
