"""What changed between a file's old verdicts and its re-scored ones: the flip report, and the refusal of
one task's results under several verifier versions (``reward-service rescore``; pure, no I/O)."""

from __future__ import annotations

import collections
import dataclasses
import operator
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from reward_core.contract import RolloutResult, RolloutStatus

#: Score changes at most this large are not flips (floating-point noise of a weighted sum).
DEFAULT_EPSILON = 1e-6
#: Ids shown per kind of flip and task.
DEFAULT_EXAMPLES = 3
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
    return mixed(triples(results))


def triples(results: Iterable[OldResult | RolloutResult]) -> set[tuple[str, RolloutStatus, str]]:
    """The distinct (task, status, version) of ``results``."""
    return set(map(_TASK_STATUS_VERSION, results))  # (the few distinct ones, in C)


def mixed(triples: Iterable[tuple[str, RolloutStatus, str]]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = collections.defaultdict(set)
    for task, status, version in triples:
        if status != RolloutStatus.UNKNOWN_TASK:
            seen[task].add(version)
    return {task: versions for task, versions in sorted(seen.items()) if len(versions) > 1}


def refuse_mixed(mixed: Mapping[str, set[str]], where: str, force: bool) -> None:
    if mixed and not force:
        detail = "; ".join(f"{task}: {_versions(versions)}" for task, versions in mixed.items())
        raise MixedVersions(f"{where} mix verifier versions for one task ({detail}): nothing written. Re-score "
                            "lines of one version at a time, or pass --force to write a mixed output")
#: Status by its value (what rescore's worker processes send).
STATUS_BY_VALUE = {int(status): status for status in RolloutStatus}


def merged_report(scans: list[Any], linenos: list[int], old: list[OldResult],
                   new: list[OldResult | RolloutResult], epsilon: float, examples: int) -> dict[str, TaskFlips]:
    """``flip_report`` of every line, the workers' and the parent's: the changed ones (and the parent's) in file
    order, then the workers' unchanged ones counted per task."""
    status_of = STATUS_BY_VALUE
    pairs: list[tuple[int, OldResult, OldResult | RolloutResult]] = list(zip(linenos, old, new))
    changed_per_task: collections.Counter[str] = collections.Counter()
    first = 0
    for scan in scans:
        for lineno, (rid, task, status, score, version), (_, _, new_status, new_score, new_version) in scan.changed:
            pairs.append((first + lineno, OldResult(rid, task, status_of[status], score, version),
                          OldResult(rid, task, status_of[new_status], new_score, new_version)))
            changed_per_task[task] += 1
        first += scan.lines
    pairs.sort(key=operator.itemgetter(0))
    report = flip_report(((o, n) for _, o, n in pairs), epsilon, examples)
    for scan in scans:
        for task, (count, old_versions, new_versions) in scan.tasks.items():
            flips = report.get(task)
            if flips is None:
                flips = report[task] = TaskFlips(task)
            unchanged = count - changed_per_task.pop(task, 0)
            flips.total += unchanged
            flips.unchanged += unchanged
            flips.old_versions |= old_versions
            flips.new_versions |= new_versions
    return dict(sorted(report.items()))

