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
gets its result line's fields straight from it (no request, no result object); only the rest is scored.

One output never mixes verifier versions of one task: when the old lines of a task carry several
versions (a file pieced together from runs), or the new results do (replicas of different builds
behind ``--endpoint``), rescore refuses and writes nothing, unless ``--force``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import gc
import json
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from tqdm import tqdm

from reward_core.contract import InvalidRollout, Rollout, RolloutResult, RolloutStatus
from reward_service.jsonl_io import (
    JsonlError,
    atomic_text_file,
    dump_line,
    holds_big_float,
    parse_line,
    read_rollouts,
    write_lines,
)

#: Score changes at most this large are not flips (floating-point noise of a weighted sum).
DEFAULT_EPSILON = 1e-6
#: Ids shown per kind of flip and task.
DEFAULT_EXAMPLES = 3
#: Bytes read from the input file at once (a re-scored file is often 100s of MB: few system calls).
READ_BUFFER = 2**20
#: The kinds of change, in report order.
FLIP_KINDS = ("up", "down", "scored_to_unscored", "unscored_to_scored", "status_changed")
FLIP_LABELS = {"up": "score rose (0->1)", "down": "score fell (1->0)", "scored_to_unscored": "scored -> unscored",
               "unscored_to_scored": "unscored -> scored", "status_changed": "status changed, same score"}


class MixedVersions(ValueError):
    """One task's results would carry several verifier versions; the message says which, and ``--force``."""


class OldResult(NamedTuple):
    """What a stored line says about one rollout's earlier verdict (a tuple: a file holds many); also a verdict
    the reward cache gave again (what the flip report reads of a RolloutResult)."""

    id: str
    task: str
    status: RolloutStatus
    score: float
    verifier_version: str = ""

    @property
    def scored(self) -> bool:
        return self.status.scored


@dataclasses.dataclass
class TaskFlips:
    """One task's changes between the old and the new results."""

    task: str
    total: int = 0
    unchanged: int = 0
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(FLIP_KINDS, 0))
    examples: dict[str, list[str]] = dataclasses.field(default_factory=lambda: {k: [] for k in FLIP_KINDS})
    old_versions: set[str] = dataclasses.field(default_factory=set)
    new_versions: set[str] = dataclasses.field(default_factory=set)

    @property
    def flips(self) -> int:
        return sum(self.counts.values())

    @property
    def version_changed(self) -> bool:
        return self.old_versions != self.new_versions


def classify(old: OldResult, new: RolloutResult | OldResult, epsilon: float = DEFAULT_EPSILON) -> str | None:
    """The kind of change from ``old`` to ``new`` (one of FLIP_KINDS), or None when unchanged."""
    if old.status is new.status and old.score == new.score:  # most re-scored rollouts: nothing to classify
        return None
    was_scored, is_scored = old.status.scored, new.status.scored
    if was_scored != is_scored:
        return "scored_to_unscored" if was_scored else "unscored_to_scored"
    if was_scored and new.score - old.score > epsilon:
        return "up"
    if was_scored and old.score - new.score > epsilon:
        return "down"
    return "status_changed" if old.status != new.status else None


def flip_report(pairs: Iterable[tuple[OldResult, RolloutResult | OldResult]], epsilon: float = DEFAULT_EPSILON,
                examples: int = DEFAULT_EXAMPLES) -> dict[str, TaskFlips]:
    """Task -> its flips, over (old, new) pairs of the same rollouts. Pure: no I/O."""
    report: dict[str, TaskFlips] = {}
    for old, new in pairs:
        task = new.task or old.task
        flips = report.get(task)
        if flips is None:
            flips = report[task] = TaskFlips(task)
        flips.total += 1
        flips.old_versions.add(old.verifier_version)
        flips.new_versions.add(new.verifier_version)
        # (classify's first test, inline: a re-score of 100,000s of rollouts changes few)
        kind = None if old.status is new.status and old.score == new.score else classify(old, new, epsilon)
        if kind is None:
            flips.unchanged += 1
            continue
        flips.counts[kind] += 1
        if len(flips.examples[kind]) < examples:
            flips.examples[kind].append(old.id)
    return dict(sorted(report.items()))


def _versions(names: set[str]) -> str:
    return ", ".join(sorted(v or "(none)" for v in names))


def format_report(report: Mapping[str, TaskFlips]) -> str:
    """The flip report as text, one block per task."""
    lines = []
    for flips in report.values():
        version = (f"version changed: {_versions(flips.old_versions)} -> {_versions(flips.new_versions)}"
                   if flips.version_changed else f"same version {_versions(flips.new_versions)}")
        lines.append(f"{flips.task}: {flips.total} rollouts, {flips.flips} changed, {flips.unchanged} unchanged; "
                     f"{version}")
        for kind in FLIP_KINDS:
            if flips.counts[kind]:
                ids = ", ".join(flips.examples[kind])
                lines.append(f"  {FLIP_LABELS[kind]}: {flips.counts[kind]}  (e.g. {ids})")
        if flips.flips and not flips.version_changed:
            lines.append("  note: results changed under the same verifier version: the task is not deterministic "
                         "(or it calls a service whose answers changed)")
    total = sum(f.total for f in report.values())
    changed = sum(f.flips for f in report.values())
    lines.append(f"total: {total} rollouts, {changed} changed")
    return "\n".join(lines)


_TASK_STATUS_VERSION = operator.attrgetter("task", "status", "verifier_version")


def mixed_versions(results: Iterable[OldResult | RolloutResult]) -> dict[str, set[str]]:
    """Task -> its versions, for the tasks whose results carry more than one (unknown tasks left out)."""
    seen: dict[str, set[str]] = collections.defaultdict(set)
    for task, status, version in set(map(_TASK_STATUS_VERSION, results)):  # (the few distinct ones, in C)
        if status != RolloutStatus.UNKNOWN_TASK:
            seen[task].add(version)
    return {task: versions for task, versions in sorted(seen.items()) if len(versions) > 1}


def _refuse_mixed(mixed: Mapping[str, set[str]], where: str, force: bool) -> None:
    if mixed and not force:
        detail = "; ".join(f"{task}: {_versions(versions)}" for task, versions in mixed.items())
        raise MixedVersions(f"{where} mix verifier versions for one task ({detail}): nothing written. Re-score "
                            "lines of one version at a time, or pass --force to write a mixed output")


#: Status by the name a results line carries (``from_name`` reads the other spellings).
_STATUS_BY_NAME = {status.name: status for status in RolloutStatus}


class _BadLine(ValueError):
    """What is wrong with one line (``read_scored`` adds the file and line number)."""


#: The keys of a results line that ``read_scored`` reads (the rollout's fields and the old verdict's).
_READ_KEYS = ("id", "task", "completion", "reference", "prompt", "metadata", "group_id", "status", "score",
              "verifier_version")


def _old_result(data: Mapping[str, Any], rid: str, task: str) -> OldResult:
    name = data.get("status", _BadLine)
    status = _STATUS_BY_NAME.get(name) if type(name) is str else None
    score = data.get("score")
    version = data.get("verifier_version")
    if status is None or type(score) is not float or not score or type(version) is not str:  # else: as is
        try:
            if name is _BadLine:
                raise KeyError("status")
            if status is None:
                status = RolloutStatus.from_name(str(name))
            score = float(score or 0.0)
        except KeyError:
            raise _BadLine("no 'status': not a results line (score --out writes them)") from None
        except (TypeError, ValueError) as exc:
            raise _BadLine(str(exc)) from None
        version = str(version or "")
    return OldResult(rid, task, status, score, version)


def _scored_line(line: bytes, default_task: str, by_id: Mapping[str, Rollout], rollouts_path: str | Path | None,
                 seen: set[str]) -> tuple[Rollout, OldResult]:
    try:
        data = parse_line(line, _READ_KEYS)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _BadLine(f"invalid JSON: {exc}") from None
    if type(data) is not dict or data.get("id") in (None, ""):
        raise _BadLine("a results line must be a JSON object with an 'id'")
    rid = data["id"]
    rid = rid if type(rid) is str else str(rid)
    if rid in seen:
        raise _BadLine(f"duplicate id {rid!r}")
    seen.add(rid)
    if "completion" in data:
        try:
            rollout = Rollout.from_dict(data, default_task=default_task)
        except InvalidRollout as exc:
            raise _BadLine(str(exc)) from None
    elif rid in by_id:
        rollout = by_id[rid]
    else:
        raise _BadLine(f"no rollout with id {rid!r} in {rollouts_path}" if rollouts_path else
                       "the line holds no rollout: score with --keep-inputs, or give --rollouts (the scored --in file)")
    return rollout, _old_result(data, rid, rollout.task)


def read_scored(path: str | Path, rollouts_path: str | Path | None = None,
                default_task: str = "") -> list[tuple[Rollout, OldResult]]:
    """(rollout, old result) per line of a results file whose lines hold their rollout, or whose rollouts
    ``rollouts_path`` holds (joined by id)."""
    return list(zip(*_read_columns(path, rollouts_path, default_task)))


def _read_columns(path: str | Path, rollouts_path: str | Path | None,
                  default_task: str) -> tuple[list[Rollout], list[OldResult]]:
    """``read_scored`` as two lists: the rollouts and their old results.

    A line of the common shape (string fields, a reference object, a scored float, no metadata: what
    ``score --keep-inputs`` writes) is read on a short path; any other line, on ``_scored_line``'s, which
    reads it the same way where both apply, and says what is wrong with a bad one.
    """
    by_id = {r.id: r for r in read_rollouts(rollouts_path, default_task)} if rollouts_path else {}
    rollouts: list[Rollout] = []
    old: list[OldResult] = []
    add_rollout, add_old = rollouts.append, old.append
    seen: set[str] = set()
    loads, decode_error, status_of, big = orjson.loads, orjson.JSONDecodeError, _STATUS_BY_NAME, 2.0**63
    with open(path, "rb", buffering=READ_BUFFER) as f:
        for lineno, line in enumerate(f, 1):
            try:
                data = loads(line)
            except decode_error:
                data = None
            if type(data) is dict:
                rid, completion, reference = data.get("id"), data.get("completion"), data.get("reference")
                task, name, score = data.get("task") or default_task, data.get("status"), data.get("score")
                version, prompt, group_id = data.get("verifier_version"), data.get("prompt") or "", data.get("group_id")
                status = status_of.get(name) if type(name) is str else None
                if (type(rid) is str and rid and rid not in seen and type(task) is str and task
                        and type(completion) is str and type(reference) is dict and status is not None
                        and type(score) is float and -big < score < big and type(version) is str
                        and type(prompt) is str and (group_id is None or type(group_id) is str)
                        and not data.get("metadata") and not holds_big_float(reference)):
                    seen.add(rid)  # (the line's own reference object: nobody else holds it)
                    add_rollout(Rollout(rid, task, completion, reference, prompt, {}, group_id or ""))
                    add_old(OldResult(rid, task, status, score or 0.0, version))  # (-0.0 as float() reads it)
                    continue
            if line.isspace() or not line:  # (isspace stops at the first character of a JSON line)
                continue
            try:
                rollout, result = _scored_line(line, default_task, by_id, rollouts_path, seen)
            except _BadLine as exc:
                raise JsonlError(f"{path}:{lineno}: {exc}") from None
            add_rollout(rollout)
            add_old(result)
    return rollouts, old


Scorer = Callable[[list[Rollout], argparse.Namespace, tqdm], Iterator[RolloutResult]]
#: An in-process engine's reward cache, asked before scoring: per rollout, the fields of its result line as
#: ``RolloutResult.to_dict()`` writes them (the rollout's id, task and group id aside), or None to score it.
CacheAnswers = Callable[[list[Rollout]], list["dict[str, Any] | None"]]


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


def rescore(args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None = None) -> int:
    """The ``rescore`` command: ``score`` is the CLI's in-process or remote scoring generator; ``cached``, an
    in-process engine's reward cache, answers what it holds first (only the rest goes to ``score``)."""
    with gc_paused():
        return _rescore(args, score, cached)


def _rescore(args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None) -> int:
    rollouts, old = _read_columns(args.in_path, args.rollouts, args.task or "")
    _refuse_mixed(mixed_versions(old), f"the old results in {args.in_path}", args.force)
    with tqdm(total=len(rollouts), unit="rollout", desc="re-scoring", disable=args.quiet) as bar:
        answers, fresh = _new_results(rollouts, args, score, cached, bar)
    new = _new_verdicts(rollouts, answers, fresh)
    _refuse_mixed(mixed_versions(new), "the new results (replicas of different builds behind --endpoint?)",
                  args.force)
    with atomic_text_file(args.out_path) as out:
        write_lines(out, _output_lines(rollouts, answers, fresh))
    report = flip_report(zip(old, new), args.epsilon, args.examples)
    print(format_report(report))
    changed = sum(f.flips for f in report.values())
    print(f"re-scored {len(new)} rollouts -> {args.out_path}; {changed} changed", file=sys.stderr)
    return 1 if args.fail_on_flip and changed else 0


def _new_results(rollouts: list[Rollout], args: argparse.Namespace, score: Scorer, cached: CacheAnswers | None,
                 bar: tqdm) -> tuple[list[dict[str, Any] | None], list[RolloutResult]]:
    """Per rollout, the cache's answer (its result line's fields) or None; and the results ``score`` gave for
    the rollouts the cache did not answer, in order."""
    answers = cached(rollouts) if cached is not None else [None] * len(rollouts)
    misses = [rollout for rollout, answer in zip(rollouts, answers) if answer is None]
    bar.update(len(rollouts) - len(misses))
    scored = list(score(misses, args, bar)) if misses else []
    if len(scored) != len(misses):
        raise RuntimeError(f"the scorer answered {len(scored)} of {len(misses)} rollouts: nothing written")
    return answers, scored


def _new_verdicts(rollouts: list[Rollout], answers: list[dict[str, Any] | None],
                  fresh: list[RolloutResult]) -> list[OldResult | RolloutResult]:
    """Each rollout's new verdict, in order: a cache answer's as an OldResult (no result object), else the
    next fresh result."""
    results = iter(fresh)
    status_of = _STATUS_BY_NAME
    return [next(results) if answer is None else
            OldResult(rollout.id, rollout.task, status_of[answer["status"]], answer["score"],
                      answer.get("verifier_version", ""))
            for rollout, answer in zip(rollouts, answers)]


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

