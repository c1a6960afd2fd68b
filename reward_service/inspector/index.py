"""A rollouts file indexed once: compact columns in memory, texts read from disk a page at a time.

Three inputs read the same way: a trainer's ``RUN_DIR/rollouts.jsonl`` (``step``, ``group_id``,
``prompt``, ``completion``, ``reward``, ``status``, ``explanation``, ``advantage``), a results JSONL
from ``reward-service score`` (``id``, ``score``, ``status``, ``explanation``; its ``--in`` file joined
by id for the prompt and completion) or the rollouts JSONL itself. Per line only the step, reward,
status, task and group are kept (a few bytes in arrays) with the line's place in the file, so a
100,000-line file costs a few MB; filtering walks the columns, and only the groups of the page asked
for are read back and parsed. A file that grows (a run in progress) is indexed further on the next
query; one that shrank (a resumed run cut it) is indexed again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any

from reward_service.inspector.filters import Filters
from reward_service.inspector.lines import (
    SCORED,
    TRAINER_LINE,
    InspectorInputError,
    group_key,
    is_object,
    json_string,
    number,
    parse_line,
    resolve_input,
    reward_of,
    split_lines,
    status_of,
)

logger = logging.getLogger(__name__)

NO_STEP = -1  # a line without a step (a results file)
TEXT_CHARS = 20_000  # a text longer than this is cut when served (the trainer cuts its own earlier)
MAX_STEP_BUCKETS = 48  # histograms: at most this many per-step charts (steps are bucketed beyond)
HISTOGRAM_BINS = 10
_NAN = float("nan")


@dataclass
class _Source:
    """One JSONL file read by line offsets."""

    path: Path
    fd: int = -1
    inode: int = -1
    size: int = 0  # bytes indexed (up to the last complete line)

    def open(self) -> None:
        self.close()
        self.fd = os.open(self.path, os.O_RDONLY)
        self.inode = os.fstat(self.fd).st_ino

    def line(self, offset: int, length: int) -> dict[str, Any]:
        raw = os.pread(self.fd, length, offset)
        try:
            record = json.loads(raw)
        except ValueError as exc:  # a line whose head matched but whose rest was cut or damaged
            return {"error": f"{self.path}: byte {offset}: not a JSON line ({exc})"}
        return record if isinstance(record, dict) else {"error": f"{self.path}: byte {offset}: not an object"}

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class _Columns:
    """One entry per rollout line, in file order."""

    offset: array = field(default_factory=lambda: array("q"))
    length: array = field(default_factory=lambda: array("l"))
    step: array = field(default_factory=lambda: array("q"))
    reward: array = field(default_factory=lambda: array("d"))  # NaN: unscored
    status: array = field(default_factory=lambda: array("H"))  # index into RolloutIndex.statuses
    task: array = field(default_factory=lambda: array("H"))  # index into RolloutIndex.tasks
    group: array = field(default_factory=lambda: array("l"))  # index into RolloutIndex.groups
    joined: list[tuple[int, int] | None] = field(default_factory=list)  # (offset, length) in the joined file


class RolloutIndex:
    """The columns of one rollouts or results file; thread-safe queries (``summary``, ``page``, ``histograms``)."""

    def __init__(self, path: str | Path, rollouts_path: str | Path | None = None) -> None:
        self.source = _Source(resolve_input(path))
        self.join = _Source(Path(rollouts_path)) if rollouts_path else None
        self._lock = threading.Lock()
        self._reset()
        try:
            self.source.open()
            if self.join is not None:
                self.join.open()
                self._join_ids = self._index_join()
            self.refresh()
            if not len(self.cols.step):
                raise InspectorInputError(f"{self.source.path} has no rollout lines")
        except Exception:
            self.close()
            raise

    def _reset(self) -> None:
        self.cols = _Columns()
        self.statuses: list[str] = []
        self.tasks: list[str] = []
        self._status_ix: dict[str, int] = {}
        self._task_ix: dict[str, int] = {}
        self.groups: list[list[int]] = []  # rows of each group, in file order
        self._group_ix: dict[tuple[int, str], int] = {}
        self._cache: dict[Filters, tuple[int, list[int], int]] = {}
        self.source.size = 0

    def _index_join(self) -> dict[str, tuple[int, int, dict[str, Any]]]:
        """id -> (offset, length, the few fields the index needs) of the joined rollouts file."""
        assert self.join is not None
        ids: dict[str, tuple[int, int, dict[str, Any]]] = {}
        for offset, raw in split_lines(self.join.path.read_bytes() + b"\n", 0):
            record = parse_line(raw, self.join.path, offset)
            if isinstance(record.get("id"), str):
                ids[record["id"]] = (offset, len(raw), {k: record[k] for k in ("task", "group_id", "prompt_id",
                                                                               "prompt") if k in record})
        return ids

    def close(self) -> None:
        self.source.close()
        if self.join is not None:
            self.join.close()

    # -- indexing -------------------------------------------------------------------------------------

    def refresh(self) -> int:
        """Indexes lines appended since the last call (all of them, if the file shrank or was replaced)."""
        with self._lock:
            stat = os.stat(self.source.path)
            size = stat.st_size
            if size < self.source.size or stat.st_ino != self.source.inode:
                logger.info("%s was cut or replaced (a resumed run): indexing it again", self.source.path)
                self._reset()
                self.source.open()
            if size == self.source.size:
                return 0
            before = len(self.cols.step)
            with open(self.source.path, "rb") as f:
                f.seek(self.source.size)
                data = f.read()
            self.source.size += self._index_bytes(data, self.source.size)
            if len(self.cols.step) != before:
                self._cache.clear()
            return len(self.cols.step) - before

    def _index_bytes(self, data: bytes, start: int) -> int:
        """Indexes the lines of ``data`` (byte ``start`` of the file on); returns the bytes taken.

        A last line without its newline is taken only if it is a whole JSON object: otherwise it may
        be a line still being written, read again on the next call.
        """
        cut = data.rfind(b"\n") + 1
        body = data[:cut]
        if self.join is not None or not self._index_trainer_lines(body, start):
            for offset, raw in split_lines(body, start):
                self._add(offset, raw)
        tail = data[cut:]
        if tail.strip() and is_object(tail):
            self._add(start + cut, tail)
            return len(data)
        return cut

    def _index_trainer_lines(self, body: bytes, start: int) -> bool:
        """Indexes ``body`` from the heads of its lines if every line is the trainer's; False (nothing done) if not.

        Column by column (``map`` over the regex groups), so the per-line Python work is one match
        and one group lookup.
        """
        lines = body.split(b"\n")[:-1]
        matches = list(map(TRAINER_LINE.match, lines))
        if not lines or not all(m is not None and m[2] for m in matches):
            return False
        heads = list(map(re.Match.groups, matches))
        step_b, group_b, task_b, reward_b, status_b = (list(map(itemgetter(i), heads)) for i in range(5))
        c = self.cols
        lengths = list(map(len, lines))
        c.offset.extend(accumulate((n + 1 for n in lengths[:-1]), initial=start))
        c.length.extend(lengths)
        steps = list(map(int, step_b))
        c.step.extend(steps)
        rewards = [_NAN if r == b"null" else float(r) for r in reward_b]
        c.reward.extend(r if math.isfinite(r) else _NAN for r in rewards)
        statuses = {b: self._code(self.statuses, self._status_ix, json_string(b)) for b in dict.fromkeys(status_b)}
        c.status.extend(map(statuses.__getitem__, status_b))
        tasks = {b: self._code(self.tasks, self._task_ix, json_string(b)) for b in dict.fromkeys(task_b)}
        c.task.extend(map(tasks.__getitem__, task_b))
        names = {b: "g:" + json_string(b) for b in dict.fromkeys(group_b)}
        groups, group_ix, column = self.groups, self._group_ix, c.group
        for row, key in enumerate(zip(steps, map(names.__getitem__, group_b)), start=len(column)):
            group = group_ix.get(key)
            if group is None:
                group = group_ix[key] = len(groups)
                groups.append([])
            groups[group].append(row)
            column.append(group)
        c.joined.extend([None] * len(lines))
        return True

    def _code(self, names: list[str], index: dict[str, int], name: str) -> int:
        code = index.get(name)
        if code is None:
            code = index[name] = len(names)
            names.append(name)
        return code

    def _add(self, offset: int, raw: bytes) -> None:
        """Indexes one line of any shape, parsed whole (joined with its rollout when there is a joined file)."""
        record = parse_line(raw, self.source.path, offset)
        joined = None
        if self.join is not None:
            hit = self._join_ids.get(str(record.get("id", "")))
            if hit is not None:
                joined = hit[:2]
                record = {**hit[2], **record}
        status = status_of(record)
        step = record.get("step")
        step = step if isinstance(step, int) and not isinstance(step, bool) else NO_STEP
        reward = reward_of(record, status)
        task = str(record.get("task") or "")
        key = (step, group_key(record))
        row = len(self.cols.step)
        group = self._group_ix.get(key)
        if group is None:
            group = self._group_ix[key] = len(self.groups)
            self.groups.append([])
        self.groups[group].append(row)
        c = self.cols
        c.offset.append(offset)
        c.length.append(len(raw))
        c.step.append(step)
        c.reward.append(_NAN if reward is None else reward)
        c.status.append(self._code(self.statuses, self._status_ix, status))
        c.task.append(self._code(self.tasks, self._task_ix, task))
        c.group.append(group)
        c.joined.append(joined)

    # -- queries ----------------------------------------------------------------------------------------

    def _matching(self, filters: Filters) -> tuple[int, list[int], int]:
        """(matching rollouts, matching groups in file order, rows indexed) for ``filters``, cached."""
        rows = len(self.cols.step)
        hit = self._cache.get(filters)
        if hit is not None and hit[2] == rows:
            return hit
        c = self.cols
        if filters.empty:
            result = (rows, list(range(len(self.groups))), rows)
        else:
            status_ok = _allowed(self.statuses, filters.statuses)
            task_ok = _allowed(self.tasks, filters.tasks)
            lo = filters.step_min if filters.step_min is not None else -math.inf
            hi = filters.step_max if filters.step_max is not None else math.inf
            rlo = filters.reward_min if filters.reward_min is not None else -math.inf
            rhi = filters.reward_max if filters.reward_max is not None else math.inf
            by_reward = filters.reward_min is not None or filters.reward_max is not None
            groups: dict[int, None] = {}
            count = 0
            for i, (st, ta, sp, rw) in enumerate(zip(c.status, c.task, c.step, c.reward)):
                if status_ok[st] and task_ok[ta] and lo <= sp <= hi and (not by_reward or rlo <= rw <= rhi):
                    count += 1
                    groups[c.group[i]] = None
            result = (count, list(groups), rows)
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[filters] = result
        return result

    def matches(self, row: int, filters: Filters) -> bool:
        c = self.cols
        if filters.statuses and self.statuses[c.status[row]] not in filters.statuses:
            return False
        if filters.tasks and self.tasks[c.task[row]] not in filters.tasks:
            return False
        if filters.step_min is not None and c.step[row] < filters.step_min:
            return False
        if filters.step_max is not None and c.step[row] > filters.step_max:
            return False
        reward = c.reward[row]
        if filters.reward_min is not None and not reward >= filters.reward_min:
            return False
        return filters.reward_max is None or reward <= filters.reward_max

    def summary(self) -> dict[str, Any]:
        """What the page's header and filters show: counts per status and task, the step and reward ranges."""
        self.refresh()
        with self._lock:
            c = self.cols
            rewards = [r for r in c.reward if r == r]
            steps = [s for s in c.step if s != NO_STEP]
            status_counts = _counts(c.status, len(self.statuses))
            task_counts = _counts(c.task, len(self.tasks))
            return {
                "source": str(self.source.path),
                "joined": str(self.join.path) if self.join else None,
                "rollouts": len(c.step),
                "groups": len(self.groups),
                "scored": len(rewards),
                "reward_mean": sum(rewards) / len(rewards) if rewards else None,
                "reward_min": min(rewards) if rewards else None,
                "reward_max": max(rewards) if rewards else None,
                "step_min": min(steps) if steps else None,
                "step_max": max(steps) if steps else None,
                "statuses": sorted(({"name": n, "count": status_counts[i], "scored": n in SCORED}
                                    for i, n in enumerate(self.statuses)), key=lambda s: (-s["count"], s["name"])),
                "tasks": sorted(({"name": n, "count": task_counts[i]} for i, n in enumerate(self.tasks)),
                                key=lambda t: (-t["count"], t["name"])),
            }

    def page(self, filters: Filters, page: int = 0, page_size: int = 20) -> dict[str, Any]:
        """One page of the groups that have a matching member, each with all its members (matches marked)."""
        self.refresh()
        with self._lock:
            count, groups, _ = self._matching(filters)
            pages = max(1, math.ceil(len(groups) / page_size))
            page = min(max(page, 0), pages - 1)
            chosen = groups[page * page_size:(page + 1) * page_size]
            return {"matching_rollouts": count, "matching_groups": len(groups), "page": page, "pages": pages,
                    "page_size": page_size, "groups": [self._group(g, filters) for g in chosen]}

    def _group(self, group: int, filters: Filters) -> dict[str, Any]:
        rows = self.groups[group]
        records = [self._record(row) for row in rows]
        first = records[0]
        rewards = [r for r in (self.cols.reward[row] for row in rows) if r == r]
        return {
            "index": group,
            "step": None if self.cols.step[rows[0]] == NO_STEP else self.cols.step[rows[0]],
            "group_id": first.get("group_id") or "",
            "task": self.tasks[self.cols.task[rows[0]]],
            "prompt": _text(first.get("prompt")),
            "reference": first.get("reference"),
            "reward_mean": sum(rewards) / len(rewards) if rewards else None,
            "rollouts": [_rollout(record, self.statuses[self.cols.status[row]], self.cols.reward[row],
                                  self.matches(row, filters)) for row, record in zip(rows, records)],
        }

    def _record(self, row: int) -> dict[str, Any]:
        record = self.source.line(self.cols.offset[row], self.cols.length[row])
        joined = self.cols.joined[row]
        if joined is not None and self.join is not None:
            record = {**self.join.line(*joined), **record}
        return record

    def histograms(self, filters: Filters, bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
        """Reward histograms of the matching rollouts per step (steps bucketed beyond ``MAX_STEP_BUCKETS``).

        The bin edges span every scored reward of the file, so charts compare across filters.
        """
        self.refresh()
        with self._lock:
            c = self.cols
            scored = [r for r in c.reward if r == r]
            lo, hi = (min(scored), max(scored)) if scored else (0.0, 1.0)
            if hi - lo < 1e-12:
                lo, hi = lo - 0.5, hi + 0.5
            width = (hi - lo) / bins
            steps = sorted({s for s in c.step})
            bucket_of, buckets = _step_buckets(steps)
            counts = [[0] * bins for _ in buckets]
            unscored = [0] * len(buckets)
            sums = [0.0] * len(buckets)
            for row in self._matching_rows(filters):
                b = bucket_of[c.step[row]]
                reward = c.reward[row]
                if reward != reward:
                    unscored[b] += 1
                    continue
                counts[b][min(int((reward - lo) / width), bins - 1)] += 1
                sums[b] += reward
            charts = []
            for b, (first, last) in enumerate(buckets):
                n = sum(counts[b])
                if n or unscored[b]:
                    charts.append({"step_min": None if first == NO_STEP else first,
                                   "step_max": None if last == NO_STEP else last, "counts": counts[b], "scored": n,
                                   "unscored": unscored[b], "mean": sums[b] / n if n else None})
            return {"edges": [lo + i * width for i in range(bins + 1)], "charts": charts}

    def _matching_rows(self, filters: Filters) -> Iterator[int]:
        if filters.empty:
            return iter(range(len(self.cols.step)))
        return (row for g in self._matching(filters)[1] for row in self.groups[g] if self.matches(row, filters))


def _rollout(record: Mapping[str, Any], status: str, reward: float, match: bool) -> dict[str, Any]:
    return {
        "id": str(record.get("id", "")),
        "status": status,
        "reward": None if reward != reward else reward,
        "advantage": number(record.get("advantage")),
        "kept": record.get("kept"),
        "completion": _text(record.get("completion")),
        "explanation": _text(record.get("explanation")),
        "error": _text(record.get("error")),
        "extracted": _text(record.get("extracted")),
        "components": {k: number(v) for k, v in (record.get("components") or {}).items()}
        if isinstance(record.get("components"), Mapping) else {},
        "match": match,
    }


def _text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TEXT_CHARS else f"{text[:TEXT_CHARS]}…[+{len(text) - TEXT_CHARS} chars]"


def _allowed(names: Sequence[str], wanted: frozenset[str]) -> list[bool]:
    return [not wanted or name in wanted for name in names]


def _counts(codes: array, n: int) -> list[int]:
    counts = [0] * n
    for code in codes:
        counts[code] += 1
    return counts


def _step_buckets(steps: list[int]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """step -> bucket, and each bucket's (first, last) step: one per step up to ``MAX_STEP_BUCKETS``."""
    if len(steps) <= MAX_STEP_BUCKETS:
        return {s: i for i, s in enumerate(steps)}, [(s, s) for s in steps]
    per = math.ceil(len(steps) / MAX_STEP_BUCKETS)
    chunks = [steps[i:i + per] for i in range(0, len(steps), per)]
    return {s: b for b, chunk in enumerate(chunks) for s in chunk}, [(chunk[0], chunk[-1]) for chunk in chunks]


