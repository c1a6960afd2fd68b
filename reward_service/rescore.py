"""``reward-service rescore``: score stored rollouts again and report what flipped.

    reward-service score --in rollouts.jsonl --out old.jsonl --keep-inputs        # lines re-scorable
    reward-service rescore --in old.jsonl --out new.jsonl --config configs/rewards.yaml   # in-process
    reward-service rescore --in old.jsonl --out new.jsonl --endpoint localhost:50051
    reward-service rescore --in results.jsonl --rollouts rollouts.jsonl --out new.jsonl  # joined by id

The input holds old results with their rollouts: lines of ``score --keep-inputs`` (or of an earlier
``rescore``), or results lines plus ``--rollouts`` (the ``--in`` file they were scored from). The
output has the same lines re-scored, inputs kept, each stamped with its verifier version. The flip
report (stdout) counts, per task, the rollouts whose score rose or fell by more than ``--epsilon``,
that went from scored to unscored or back, or changed status only, with a few ids of each, and says
whether the task's verifier version changed (a flip under an unchanged version means the verifier is
not deterministic). In-process, the engine's reward cache answers first: a rollout whose outcome it holds
gets its result line's fields straight from it (no request, no result object); only the rest is scored. A
large file, with a ``--reward-cache`` file behind the engine, is first read by worker processes, one byte
range each, which answer what that file holds (``router/rows_from_cache.py``); the rest is read here.

One output never mixes verifier versions of one task: when the old lines of a task carry several
versions (a file pieced together from runs), or the new results do (replicas of different builds
behind ``--endpoint``), rescore refuses and writes nothing, unless ``--force``.

The lines are read in ``rescore_read.py``, the flip report and the version refusals are ``rescore_report.py``'s;
this module runs the pass and writes the output.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from tqdm import tqdm

from reward_core.contract import Rollout, RolloutResult, RolloutStatus
from reward_service.jsonl_io import (
    JsonlError,
    append_file_range,
    atomic_file_continued,
    atomic_text_file,
    dump_line,
    write_lines,
)
from reward_service.rescore_read import READ_BUFFER, STATUS_BY_NAME, Answered, CacheAnswers, read_lines, read_scored
from reward_service.rescore_report import (
    DEFAULT_EPSILON,
    DEFAULT_EXAMPLES,
    STATUS_BY_VALUE,
    MixedVersions,
    OldResult,
    TaskFlips,
    classify,
    flip_report,
    format_report,
    merged_report,
    mixed,
    mixed_versions,
    refuse_mixed,
    triples,
)

#: What tests, the CLI and the benchmark import from here (defined in rescore_read and rescore_report).
__all__ = ["DEFAULT_EPSILON", "DEFAULT_EXAMPLES", "CacheAnswers", "MixedVersions", "OldResult", "TaskFlips",
           "add_rescore_arguments", "classify", "flip_report", "format_report", "mixed_versions", "read_scored",
           "rescore"]

#: A smaller input is re-scored in one process (starting worker processes would cost more than they save).
PARALLEL_MIN_BYTES = 16 * 2**20


Scorer = Callable[[list[Rollout], argparse.Namespace, tqdm], Iterator[RolloutResult]]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (on again after, if it was on).

    A pass builds a few objects per line and keeps them to its end: none is part of a cycle, but each
    collection of the oldest generation walks all of them, again and again as the pass grows.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def rescore(args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None = None,
            parallel_min_bytes: int = PARALLEL_MIN_BYTES, read_workers: int = 0) -> int:
    """The ``rescore`` command: ``score`` is the CLI's in-process or remote scoring generator; ``cached``, an
    in-process engine's reward cache, answers what it holds first (only the rest goes to ``score``).

    An input of ``parallel_min_bytes`` or more, with a cache file behind ``cached``, is first read by
    ``read_workers`` worker processes (0: one per core; ``router/rows_from_cache.py``), which answer what the
    file holds: the same output, report and refusals as one process gives."""
    with gc_paused():
        scans = _scan_in_parallel(args, cached, parallel_min_bytes, read_workers)
        try:
            return _rescore(args, score, cached, scans)
        finally:
            for scan in scans or ():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(scan.part)


def _scan_in_parallel(args: argparse.Namespace, cached: CacheAnswers | None, min_bytes: int,
                      workers: int) -> list[Any] | None:
    """The workers' scans of the input's ranges (``RangeScan``); None where one process reads it: a small file,
    one core, no cache file behind ``cached``, rollouts joined from ``--rollouts``."""
    if not workers:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cached is None or args.rollouts or workers < 2 or os.path.getsize(args.in_path) < max(min_bytes, 1):
        return None
    return cached.scan_rows(str(args.in_path), args.task or "", workers, str(Path(args.out_path).parent))


class _Merged(NamedTuple):
    """What the workers answered, as ``_rescore`` counts it."""

    answered: int
    old_triples: set[tuple[str, RolloutStatus, str]]
    new_triples: set[tuple[str, RolloutStatus, str]]


def _rescore(args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None,
             scans: list[Any] | None) -> int:
    rows, old, linenos = _read_parent_lines(args, cached, scans)
    if linenos is None:
        scans = None  # (a bad or duplicate line: one process reads the file, and says what is wrong as it does)
    merged = _merge(scans)
    refuse_mixed(mixed(triples(old) | merged.old_triples), f"the old results in {args.in_path}", args.force)
    rollouts = [row for row in rows if type(row) is Rollout]
    with tqdm(total=len(rows) + merged.answered, unit="rollout", desc="re-scoring", disable=args.quiet) as bar:
        bar.update(len(rows) + merged.answered - len(rollouts))
        answers, fresh = _new_results(rollouts, args, score, cached, bar)
    new = _new_verdicts(rows, rollouts, answers, fresh)
    refuse_mixed(mixed(triples(new) | merged.new_triples),
                  "the new results (replicas of different builds behind --endpoint?)", args.force)
    lines = _all_lines(rows, _output_lines(rollouts, answers, fresh))
    if scans and not scans[0].others:  # the first worker's part is the output's start: written on, not copied
        with atomic_file_continued(scans[0].part, args.out_path) as continued:
            _write_merged(continued, scans[1:], lines)
    else:
        with atomic_text_file(args.out_path) as out:
            if scans:
                out.flush()
                _write_merged(out.buffer, scans, lines)
            else:
                write_lines(out, lines)
    if scans:
        report = merged_report(scans, linenos, old, new, args.epsilon, args.examples)  # type: ignore[arg-type]
    else:
        report = flip_report(zip(old, new), args.epsilon, args.examples)
    print(format_report(report))
    changed = sum(f.flips for f in report.values())
    print(f"re-scored {len(new) + merged.answered} rollouts -> {args.out_path}; {changed} changed", file=sys.stderr)
    return 1 if args.fail_on_flip and changed else 0


def _read_parent_lines(args: argparse.Namespace, cached: CacheAnswers | None, scans: list[Any] | None
                       ) -> tuple[list[Rollout | Answered], list[OldResult], list[int] | None]:
    """The rows and old results of the lines read here, and (with ``scans``) their line numbers: the lines the
    workers left, or (without, or when those hold a bad line or an id seen twice) every line of the file."""
    if scans:
        linenos, lines = [], []
        first = 0
        for scan in scans:
            for lineno, line in scan.others:
                linenos.append(first + lineno)
                lines.append((first + lineno, line))
            first += scan.lines
        try:
            rows, old = read_lines(lines, args.in_path, args.rollouts, args.task or "", cached)
        except JsonlError:
            pass
        else:
            ids = [result.id for result in old]
            for scan in scans:
                ids += scan.ids
            if len(set(ids)) == len(ids):
                return rows, old, linenos
    with open(args.in_path, "rb", buffering=READ_BUFFER) as f:
        rows, old = read_lines(enumerate(f, 1), args.in_path, args.rollouts, args.task or "", cached)
    return rows, old, None


def _merge(scans: list[Any] | None) -> _Merged:
    if not scans:
        return _Merged(0, set(), set())
    status_of = STATUS_BY_VALUE
    return _Merged(sum(len(scan.ids) for scan in scans),
                   {(task, status_of[status], version) for scan in scans for task, status, version in scan.old_triples},
                   {(task, status_of[status], version) for scan in scans for task, status, version in scan.new_triples})


def _write_merged(buffer: BinaryIO, scans: list[Any], lines: Iterator[bytes]) -> None:
    """The output in order: each scan's part file runs, with the next of ``lines`` (the parent's) between them
    (a scan placed in the first part is there already)."""
    for scan in scans:
        if scan.placed:
            continue
        with open(scan.part, "rb") as part:
            for i, (offset, length) in enumerate(scan.runs):
                if length:
                    buffer.flush()
                    append_file_range(part.fileno(), buffer.fileno(), offset, length)
                    buffer.seek(0, os.SEEK_END)
                if i < len(scan.others):
                    buffer.write(next(lines))
    buffer.flush()



def _new_results(rollouts: list[Rollout], args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None,
                 bar: tqdm) -> tuple[list[dict[str, Any] | None], list[RolloutResult]]:
    """Per rollout, the cache's answer (its result line's fields) or None; and the results ``score`` gave for
    the rollouts the cache did not answer, in order."""
    answers = cached.answer_from_cache(rollouts) if cached is not None and rollouts else [None] * len(rollouts)
    misses = [rollout for rollout, answer in zip(rollouts, answers) if answer is None]
    bar.update(len(rollouts) - len(misses))
    scored = list(score(misses, args, bar)) if misses else []
    if len(scored) != len(misses):
        raise RuntimeError(f"the scorer answered {len(scored)} of {len(misses)} rollouts: nothing written")
    return answers, scored


def _new_verdicts(rows: list[Rollout | Answered], rollouts: list[Rollout], answers: list[dict[str, Any] | None],
                  fresh: list[RolloutResult]) -> list[OldResult | RolloutResult]:
    """Each row's new verdict, in order: one answered as it was read, a cache answer's as an OldResult (no
    result object), else the next fresh result."""
    results = iter(fresh)
    status_of = STATUS_BY_NAME
    later = iter([next(results) if answer is None else
                  OldResult(rollout.id, rollout.task, status_of[answer["status"]], answer["score"],
                            answer.get("verifier_version", ""))
                  for rollout, answer in zip(rollouts, answers)])
    return [next(later) if type(row) is Rollout else row[1] for row in rows]  # type: ignore[index]


def _all_lines(rows: list[Rollout | Answered], later: Iterator[bytes]) -> Iterator[bytes]:
    """Each row's output line, in order: one answered as it was read, else the next of ``later``."""
    for row in rows:
        yield next(later) if type(row) is Rollout else row[0]  # type: ignore[index]


def _output_lines(rollouts: list[Rollout], answers: list[dict[str, Any] | None],
                  fresh: list[RolloutResult]) -> Iterator[bytes]:
    """Each rollout's output line, dumped as it is made: its fields, then its new result's (``{**rollout,
    **result}``), from the cache's answer or the next fresh result."""
    results = iter(fresh)
    for rollout, answer in zip(rollouts, answers):
        reference = rollout.reference
        if answer is None or rollout.prompt or rollout.metadata or type(reference) is not dict:
            line = rollout.to_dict()
            line.update(next(results).to_dict() if answer is None else answer)
        elif rollout.group_id:  # (what to_dict and update make, without the copies)
            line = {"id": rollout.id, "task": rollout.task, "completion": rollout.completion, "reference": reference,
                    "group_id": rollout.group_id, **answer}
        else:
            line = {"id": rollout.id, "task": rollout.task, "completion": rollout.completion, "reference": reference,
                    **answer}
        yield dump_line(line)


def add_rescore_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``reward-service rescore`` (the scoring flags are the CLI's, as for ``score``)."""
    parser.add_argument("--in", dest="in_path", required=True,
                        help="old results JSONL whose lines hold their rollouts (score --keep-inputs, or rescore)")
    parser.add_argument("--out", dest="out_path", required=True, help="new results JSONL (inputs kept), atomically")
    parser.add_argument("--rollouts", help="the rollouts JSONL the old results were scored from, joined by id "
                                           "(for results lines without their rollout)")
    parser.add_argument("--task", help="task for rollouts that name none")
    parser.add_argument("--force", action="store_true",
                        help="write even when one task's old or new results carry several verifier versions")
    parser.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                        help="score changes up to this are not flips (default: %(default)s)")
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES,
                        help="ids shown per kind of change and task (default: %(default)s)")
    parser.add_argument("--fail-on-flip", action="store_true", help="exit 1 when any result changed (for CI)")
    parser.add_argument("--endpoint", help="host:port of a running server (default: score in-process)")
    parser.add_argument("--config", help="rewards YAML (in-process scoring)")
    parser.add_argument("--call-timeout", type=float, default=600.0, help="deadline per call to --endpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")

