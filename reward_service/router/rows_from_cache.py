"""``rescore`` of a large file on every core: worker processes answer its lines from the reward cache's SQLite file.

``Scorer.scan_rows`` runs it; ``reward_service.rescore`` puts the output together.

The workers take the input's byte ranges (cut at line ends; a few per worker) in order; each reads a range's lines,
keys those of the common shape (``rescore``'s short path) whose task the engine's plan names (``Scorer.rows_plan``:
cached, no group stage, the plain reference check), reads their rows from the file (``ASK_ROWS`` keys a query; WAL
readers run side by side) and writes their output lines to a part file beside the output: the rollout's fields
spliced with the result fields stored beside the outcome (``cache_answers.stored_answer``), or built from the
outcome. Every other line -- another shape, a task not in the plan, a reference its task would refuse, a key the
file lacks, a bad line -- goes back to the parent as it is, with its line number, and is read there as in one
process. The parent writes the output in order: runs of the part files (copied in the kernel) between its own lines.
The first part becomes the output; while no line before it was left to the parent, a later range's worker holds its
lines in memory and writes them into the first part itself, at the offset the parent sends it when the ranges before
are done (no copy).

Workers come from a ``forkserver`` (never a fork of the threaded parent). A worker sends back no rollout and no
line it answered: only the part file's runs, the ids (duplicates are looked for across ranges), the (task,
status, version) triples of the old and new verdicts, per task its count and versions, and the few rows whose
verdict changed (the flip report's examples keep file order).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import logging
import multiprocessing
import operator
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from reward_core.contract import RolloutStatus
from reward_service.jsonl_io import dump_line, holds_big_float
from reward_service.router.cache_answers import ANSWER_PREFIX
from reward_service.router.reward_cache import row_key_function, stored_result_fields

#: Lines of each range whose tasks are looked at before the workers start (for the engine's plan).
SAMPLE_LINES = 256
#: Keys one worker looks up in the SQLite file at once.
ASK_ROWS = 500
#: Bytes read from the input and written to a part file at once.
BUFFER = 2**20
#: Bytes of the SQLite file a worker maps into memory to read it (its lookups are random).
MMAP_BYTES = 2**32
#: Ranges per worker: the workers take them in order, and a later range's output, held until the ranges before it
#: are done, is written while the other workers read on; only the last range's write is left after the reading
#: (with one range per worker, the later half of the output was written after the first half was read).
RANGES_PER_WORKER = 4
#: Output bytes a worker of a later range holds in memory, waiting for its place in the first part (beyond: its
#: own part file, copied there by the parent).
PLACE_BYTES = 256 * 2**20

logger = logging.getLogger(__name__)
#: (id, task, status, score, version): a verdict as plain values (sent between processes).
Verdict = tuple[str, str, int, float, str]


@dataclasses.dataclass
class RangeScan:
    """What a worker read of its byte range, and what it left to the parent."""

    lines: int = 0
    part: str = ""
    #: CPU seconds the worker spent on the range (for benchmarks).
    cpu_s: float = 0.0
    #: Runs (offset, length) of the part file: one before each of ``others``, and one after the last.
    runs: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    #: (line number in the range, the line) of each line the parent reads.
    others: list[tuple[int, bytes]] = dataclasses.field(default_factory=list)
    #: The ids of the lines answered here, and their count per task with its old and new versions.
    ids: list[str] = dataclasses.field(default_factory=list)
    tasks: dict[str, tuple[int, set[str], set[str]]] = dataclasses.field(default_factory=dict)  # (count, old, new)
    old_triples: set[tuple[str, int, str]] = dataclasses.field(default_factory=set)
    new_triples: set[tuple[str, int, str]] = dataclasses.field(default_factory=set)
    #: (line number in the range, old verdict, new verdict) of the answered lines whose status or score changed.
    changed: list[tuple[int, Verdict, Verdict]] = dataclasses.field(default_factory=list)
    #: Written in the first range's part, right after the ranges before it (its own part is empty): no ``others``.
    placed: bool = False

    @property
    def size(self) -> int:
        """Bytes of its output (in its part file, or placed)."""
        return sum(length for _, length in self.runs)


def split_ranges(path: str | Path, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges of the file of about one length (fewer when it has few lines), each starting at a
    line's start."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            f.seek(max(size * i // parts, cuts[-1]))
            if f.tell() > 0:
                f.seek(f.tell() - 1)  # a cut right at a line's start keeps it
                f.readline()
            if cuts[-1] < f.tell() < size:
                cuts.append(f.tell())
    cuts.append(size)
    return list(zip(cuts, cuts[1:]))


def sample_tasks(path: str | Path, ranges: list[tuple[int, int]], default_task: str) -> set[str]:
    """The tasks named by the first ``SAMPLE_LINES`` lines of each range (a task missed is answered in the parent)."""
    tasks = set()
    with open(path, "rb") as f:
        for start, end in ranges:
            f.seek(start)
            for _ in range(SAMPLE_LINES):
                if f.tell() >= end:
                    break
                try:
                    data = orjson.loads(f.readline())
                except orjson.JSONDecodeError:
                    continue
                if type(data) is dict:
                    task = data.get("task") or default_task
                    if type(task) is str and task:
                        tasks.add(task)
    return tasks


def scan_rows(path: str | Path, default_task: str, parts: int, out_dir: str | Path, store: str,
              plan_for: Callable[[set[str]], Mapping[str, tuple[str, tuple[str, ...]]]]) -> list[RangeScan] | None:
    """The file in ranges (``RANGES_PER_WORKER`` per worker), scanned by ``parts`` worker processes answering
    from ``store``, in order; None when there is nothing to split or no task of the plan (``plan_for(the tasks
    the file names)``) in it. The part files are the caller's to remove (``remove_parts``)."""
    ranges = split_ranges(path, parts * max(RANGES_PER_WORKER, 1))
    if not store or len(ranges) < 2:
        return None
    plan = plan_for(sample_tasks(path, ranges, default_task))
    if not plan:
        return None
    return scan_file(path, ranges, default_task, store, plan, out_dir, parts)


def scan_file(path: str | Path, ranges: list[tuple[int, int]], default_task: str, store: str,
              plan: Mapping[str, tuple[str, tuple[str, ...]]], out_dir: str | Path,
              workers: int = 0) -> list[RangeScan] | None:
    """The ranges scanned by ``workers`` worker processes (0: one per range), taken in order (their part files
    are the caller's to remove); None when they could not (an unreadable cache file, a full disk, a worker
    killed).

    While every range before it was answered whole (no line left to the parent), a later range's worker holds its
    output and writes it into the first part once told where (``RangeScan.placed``): no part copied after."""
    context = multiprocessing.get_context("forkserver")
    parts: list[str] = []
    places = [multiprocessing.Pipe(duplex=False) for _ in ranges[1:]]  # (reader, writer): range i's at i - 1
    try:
        for _ in ranges:
            fd, part = tempfile.mkstemp(prefix=".rescore.", suffix=".part", dir=out_dir)
            os.close(fd)
            parts.append(part)
        # (in order: a range's worker waits for its place only while the range before it is read by another)
        pool = ProcessPoolExecutor(min(workers or len(ranges), len(ranges)), mp_context=context,
                                   initializer=_take_places,
                                   initargs=([reader for reader, _ in places],))
        done = False
        try:
            jobs = [pool.submit(scan_range, str(path), start, end, default_task, store, dict(plan), part, i, parts[0],
                                PLACE_BYTES) for i, ((start, end), part) in enumerate(zip(ranges, parts))]
            scans: list[RangeScan] = []
            offset: int | None = 0  # where the next range's output goes in the first part (None: in its own)
            for i, job in enumerate(jobs):
                if i:
                    places[i - 1][1].send(offset)
                scan = job.result()
                scans.append(scan)
                offset = offset + scan.size if offset is not None and not scan.others and (
                    scan.placed or not i) else None
            done = True
        finally:  # (done: the workers exit while the caller writes the output; the pool's thread reaps them)
            for reader, writer in places:
                reader.close()
                writer.close()  # (a worker still waiting reads the end: it keeps its own part)
            pool.shutdown(wait=not done)
        return scans
    except (OSError, sqlite3.Error, BrokenProcessPool) as exc:  # the parent reads every line itself
        logger.warning("rescore: the workers could not read %s or the reward cache %s (%s: %s); reading it in one "
                       "process", path, store, type(exc).__name__, exc)
        remove_parts(parts)
        return None
    except BaseException:
        remove_parts(parts)
        raise


def remove_parts(parts: list[str]) -> None:
    for part in parts:
        try:
            os.unlink(part)
        except FileNotFoundError:
            pass


#: In a worker: per range after the first, where the parent says its output goes (``scan_file``).
_places: list[Any] = []


def _take_places(readers: list[Any]) -> None:
    _places[:] = readers


def scan_range(path: str, start: int, end: int, default_task: str, store: str,
               plan: dict[str, tuple[str, tuple[str, ...]]], part: str, index: int = 0, first: str = "",
               hold: int = 0) -> RangeScan:
    """A worker's job: the lines of ``path`` in [start, end) answered from ``store`` into ``part``; for a later
    range (``index`` > 0), up to ``hold`` bytes held in memory and written into ``first`` where the parent says,
    when it can."""
    started = time.process_time()
    db = sqlite3.connect(f"file:{quote(store)}?mode=ro", uri=True, timeout=30.0)
    db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")  # (its pages read in place: no read call and copy for each)
    gc.disable()  # (what it keeps to the end holds no cycle: a collection would only walk it, again and again)
    try:
        with open(path, "rb", buffering=BUFFER) as f:
            f.seek(start)
            if not index or index > len(_places) or not hold:
                with open(part, "wb", buffering=BUFFER) as out:
                    scan = _Scanner(db, plan, default_task, out).scan(f, end - start)
                    out.flush()
                    _start_writeback(out.fileno(), 0, out.tell())
            else:
                held = _Held(part)
                try:
                    scan = _Scanner(db, plan, default_task, held, hold).scan(f, end - start)
                    scan.placed = held.place(first, None if scan.others else _places[index - 1])
                finally:
                    held.close()
        scan.cpu_s = time.process_time() - started
        return scan
    finally:
        db.close()


class _Held:
    """A later range's output, in memory (up to ``PLACE_BYTES``, then in its part file) until its place is known."""

    def __init__(self, part: str) -> None:
        self.name = part
        self.chunks: list[bytes] = []
        self.write: Callable[[bytes], object] = self.chunks.append
        self.file: Any = None

    def spill(self) -> None:
        """From now on into its part file (what it held first)."""
        if self.file is None:
            self.file = open(self.name, "wb", buffering=BUFFER)  # noqa: SIM115 -- closed by close()
            self.file.writelines(self.chunks)
            self.chunks.clear()
            self.write = self.file.write

    def place(self, first: str, told: Any) -> bool:
        """Writes what it holds into ``first`` at the offset ``told`` (a pipe's end) gives, and says whether it
        did; else (it spilled, the parent said None or is gone) into its part file."""
        if self.file is None and told is not None:
            offset = _wait_for(told)
            if offset is not None:
                _write_at(first, self.chunks, offset)
                self.chunks.clear()
                return True
        self.spill()
        return False

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _wait_for(told: Any) -> int | None:
    """The offset the parent sends; None when it sends None, or closes its end, or is gone."""
    parent = os.getppid()
    while not told.poll(1.0):
        if os.getppid() != parent:  # (a worker of a dead parent: its forkserver went too)
            return None
    try:
        return told.recv()
    except EOFError:
        return None


def _write_at(path: str, chunks: list[bytes], offset: int) -> None:
    start = offset
    fd = os.open(path, os.O_WRONLY)
    try:
        for at in range(0, len(chunks), _IOV_MAX):
            batch = chunks[at:at + _IOV_MAX]
            written = os.pwritev(fd, batch, offset)
            size = sum(map(len, batch))
            if written < size:  # (a short write: the rest one call at a time)
                rest = b"".join(batch)[written:]
                while rest:
                    n = os.pwrite(fd, rest, offset + size - len(rest))
                    rest = rest[n:]
            offset += size
        _start_writeback(fd, start, offset - start)
    finally:
        os.close(fd)


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """The kernel starts writing these bytes to disk now, without waiting (the output's final fsync then finds
    them written or on their way: the workers' writes reach the disk while the others read on). The pages, once
    written, leave the page cache: nothing here reads the output again."""
    if length > 0 and hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)


class _Scanner:
    """One range's lines, asked of the SQLite file ``ASK_ROWS`` at a time, answered in order."""

    def __init__(self, db: sqlite3.Connection, plan: Mapping[str, tuple[str, tuple[str, ...]]], default_task: str,
                 out: Any, hold: int = 0) -> None:
        self.db = db
        self.hold = hold  # (bytes ``out``, a _Held, keeps in memory)
        self.default_task = default_task
        self.keys: dict[str, tuple[Callable[[str, Mapping[str, Any]], bytes], str, tuple[str, ...]]] = {
            task: (row_key_function(task, version), version, required) for task, (version, required) in plan.items()}
        self.versions = {task: version for task, (version, _) in plan.items()}
        self.out = out
        self.result = RangeScan(part=out.name)
        #: (task, old status, old version, new status, new version) of each line answered here.
        self.verdicts: list[tuple[str, int, str, int, str]] = []
        self.written = 0
        self.run_start = 0
        self.seen: set[str] = set()
        #: In line order: (line number, line) for the parent, or a row to ask about (with its key).
        self.pending: list[tuple] = []

    def scan(self, f: Any, length: int) -> RangeScan:
        read = lineno = asked = 0
        keys, seen, pending, default_task = self.keys, self.seen, self.pending, self.default_task
        loads, decode_error, status_of, big = orjson.loads, orjson.JSONDecodeError, _STATUS_VALUE_BY_NAME, 2.0**63
        fields_of, add = _LINE_FIELDS, pending.append
        for line in f:
            if read >= length:
                break
            read += len(line)
            lineno += 1
            try:
                data = loads(line)
            except decode_error:
                data = None
            if type(data) is not dict:
                if not (line.isspace() or not line):  # (a blank line: the parent would skip it too)
                    add((lineno, line))
                continue
            try:  # (the common line holds them all: one call)
                rid, task, completion, reference, name, score, version = fields_of(data)
            except KeyError:
                rid, task, completion, reference = (data.get("id"), data.get("task"), data.get("completion"),
                                                    data.get("reference"))
                name, score, version = data.get("status"), data.get("score"), data.get("verifier_version")
            task = task or default_task
            group_id = data.get("group_id")
            status = status_of.get(name) if type(name) is str else None
            keyer = keys.get(task) if type(task) is str else None
            # rescore's short path (no prompt: a prompt is part of the key), for a task of the plan
            if (keyer is None or type(rid) is not str or not rid or rid in seen or type(completion) is not str
                    or type(reference) is not dict or status is None or type(score) is not float
                    or not -big < score < big or type(version) is not str or data.get("prompt")
                    or not (group_id is None or type(group_id) is str) or data.get("metadata")):
                add((lineno, line))
                continue
            big_float = False
            for value in reference.values():  # (a reference of strings, the common one, holds no big float)
                if type(value) is not str:
                    big_float = holds_big_float(reference)
                    break
            if big_float:
                add((lineno, line))
                continue
            for field in keyer[2]:  # Task.check_reference: a reference it would refuse is the parent's
                if reference.get(field) in (None, ""):
                    break
            else:
                field = None
            if field is not None:
                add((lineno, line))
                continue
            seen.add(rid)
            add((lineno, line, rid, task, completion, reference, group_id, status, score, version,
                 keyer[0](completion, reference)))
            asked += 1
            if asked >= ASK_ROWS:
                self.flush()
                asked = 0
        self.flush()
        result = self.result
        result.lines = lineno
        result.runs.append((self.run_start, self.written - self.run_start))
        for (task, old_status, old_version, new_status, new_version), count in \
                collections.Counter(self.verdicts).items():  # (the few distinct ones, counted in C)
            result.old_triples.add((task, old_status, old_version))
            result.new_triples.add((task, new_status, new_version))
            total, old_versions, new_versions = result.tasks.get(task) or (0, set(), set())
            result.tasks[task] = (total + count, old_versions | {old_version}, new_versions | {new_version})
        return result

    def flush(self) -> None:
        """Answers the pending rows from the file, in order; the rest goes to the parent."""
        pending = self.pending
        keys = [item[10] for item in pending if len(item) > 2]
        stored: dict[bytes, bytes | None] = {}
        if keys:  # (the stored fields alone: the outcome is fetched for the rare row they do not answer)
            stored = dict(self.db.execute(_ASK_QUERIES.get(len(keys)) or _ask_query(len(keys)), keys))
        # The common row, inline (100,000s of them): the stored fields of this code spliced after the rollout's,
        # when neither holds "null" (else ``answer`` writes the stdlib's line); ``answer`` is the reference.
        prefix, skip, absent = ANSWER_PREFIX, len(ANSWER_PREFIX) + 1, _ABSENT
        dumps, null, join, head_of, status_of = orjson.dumps, _NULL.search, b"".join, _SCORE_AND_STATUS.match, \
            _STATUS_BY_BYTES
        write, add_id, add_verdict = self.out.write, self.result.ids.append, self.verdicts.append
        versions, changed = self.versions, self.result.changed
        written = self.written
        for item in pending:
            if len(item) == 2:
                self.written = written
                self.other(item[0], item[1])
                continue
            lineno, line, rid, task, completion, reference, group_id, status, score, old_version, key = item
            kept = stored.get(key, absent)
            if kept is not absent and kept is not None and kept.startswith(prefix):
                try:  # = dump_line({**rollout, **fields})
                    data = join((dumps({"id": rid, "task": task, "completion": completion, "reference": reference,
                                        "group_id": group_id} if group_id else
                                       {"id": rid, "task": task, "completion": completion, "reference": reference}
                                       )[:-1], b",", memoryview(kept)[skip:], b"\n"))
                except TypeError:
                    data = b"null"
                found = head_of(kept, skip) if null(data) is None else None  # (one search: both parts, at once)
                new_status = status_of.get(found[2]) if found is not None else None
                if new_status is not None:
                    write(data)
                    written += len(data)
                    add_id(rid)
                    version = versions[task]
                    add_verdict((task, status, old_version, new_status, version))
                    new_score = float(found[1])
                    if new_status != status or new_score != score:  # (as flip_report tells an unchanged verdict)
                        changed.append((lineno, (rid, task, status, score or 0.0, old_version),
                                        (rid, task, new_status, new_score, version)))
                    continue
            self.written = written
            if not self.answer(lineno, rid, task, completion, reference, group_id or "",
                               (rid, task, status, score or 0.0, old_version), key, kept):
                self.other(lineno, line)
            written = self.written
        self.written = written
        pending.clear()
        if self.hold and written > self.hold:
            self.out.spill()

    def answer(self, lineno: int, rid: str, task: str, completion: str, reference: dict[str, Any], group_id: str,
               old: Verdict, key: bytes, kept: bytes | None | object) -> bool:
        """Writes the row's output line when the file holds its outcome (as ``rescore`` would write it): the
        stored fields (``kept``, the file's ``answer``: None where it has none, ``_ABSENT`` where it lacks the key)
        spliced after the rollout's where this code made them, else from the outcome (fetched here)."""
        if kept is _ABSENT:
            return False
        fields = kept[len(ANSWER_PREFIX) + 1:] if type(kept) is bytes and kept.startswith(ANSWER_PREFIX) else None
        version = self.versions[task]
        if group_id:
            line = {"id": rid, "task": task, "completion": completion, "reference": reference, "group_id": group_id}
        else:
            line = {"id": rid, "task": task, "completion": completion, "reference": reference}
        data = None
        if fields is not None:
            try:
                head = orjson.dumps(line)
            except TypeError:
                head = b"null"
            if _NULL.search(head) is None and _NULL.search(fields) is None:  # (else dump_line writes the stdlib's)
                data = b"".join((head[:-1], b",", fields, b"\n"))  # = dump_line({**line, **fields})
                spliced = orjson.loads(b"{" + fields)  # (a score not written as a plain float: rare)
                new_score, new_status = spliced["score"], _STATUS_VALUE_BY_NAME[spliced["status"]]
        if data is None:  # (no fields of this code, or the line cannot be spliced with them: rare)
            stored = self.db.execute("SELECT value FROM rewards WHERE key = ?", (key,)).fetchone()
            if stored is None:  # (dropped since: another engine's writer keeps the file's size)
                return False
            found = stored_result_fields(stored[0], task, version)
            if found is None:
                return False
            answer, status = found
            new_status = int(status)
            data = dump_line({**line, **answer})
            new_score = answer["score"]
        self.out.write(data)
        self.written += len(data)
        self.result.ids.append(rid)
        self.verdicts.append((task, old[2], old[4], new_status, version))  # (answer["verifier_version"])
        if new_status != old[2] or new_score != old[3]:  # (as flip_report tells an unchanged verdict)
            self.result.changed.append((lineno, old, (rid, task, new_status, new_score, version)))
        return True

    def other(self, lineno: int, line: bytes) -> None:
        result = self.result
        result.runs.append((self.run_start, self.written - self.run_start))
        result.others.append((lineno, line))
        self.run_start = self.written



#: ``b"null" in data``, faster on long lines (as ``jsonl_io``'s).
_NULL = re.compile(b"null")
#: A stored answer's fields after their ``{``: a plain float score, then the status (the layout ``ANSWER_PREFIX``
#: pins; ``_Scanner.answer`` parses any other).
_SCORE_AND_STATUS = re.compile(rb'"score":(-?[0-9]+\.[0-9]+),"status":"([A-Z_]+)"')
_STATUS_BY_BYTES = {status.name.encode(): int(status) for status in RolloutStatus}
_STATUS_VALUE_BY_NAME = {status.name: int(status) for status in RolloutStatus}
#: The fields a line of the common shape holds, read in one call (a line missing one takes the slow way).
_LINE_FIELDS = operator.itemgetter("id", "task", "completion", "reference", "status", "score", "verifier_version")


def _ask_query(rows: int) -> str:
    """The query for ``rows`` keys: per key found, its stored fields (``answer``; none in SQL is faster: a test of
    their start, or a substr of them, costs more there than here)."""
    query = f"SELECT key, answer FROM rewards WHERE key IN ({','.join('?' * rows)})"
    if rows == ASK_ROWS:
        _ASK_QUERIES[rows] = query
    return query


#: The query of a full batch, made once.
_ASK_QUERIES: dict[int, str] = {}
#: A key the file lacks (``stored.get``'s default: an answer of None is a row without stored fields).
_ABSENT = object()
