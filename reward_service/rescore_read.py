"""Reading a results file for ``reward-service rescore``: per line its rollout (or what the engine's reward
cache answered as the line was read) and its old verdict; a bad line is named by file and line number."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import orjson

from reward_core.contract import InvalidRollout, Rollout, RolloutStatus
from reward_service.jsonl_io import JsonlError, dump_line, holds_big_float, parse_line, read_rollouts
from reward_service.rescore_report import OldResult

#: Bytes read from the input file at once (a re-scored file is often 100s of MB: few system calls).
READ_BUFFER = 2**20
#: Status by the name a results line carries (``from_name`` reads the other spellings).
STATUS_BY_NAME = {status.name: status for status in RolloutStatus}



class _BadLine(ValueError):
    """What is wrong with one line (``read_scored`` adds the file and line number)."""


#: The keys of a results line that ``read_scored`` reads (the rollout's fields and the old verdict's).
_READ_KEYS = ("id", "task", "completion", "reference", "prompt", "metadata", "group_id", "status", "score",
              "verifier_version")


def _old_result(data: Mapping[str, Any], rid: str, task: str) -> OldResult:
    name = data.get("status", _BadLine)
    status = STATUS_BY_NAME.get(name) if type(name) is str else None
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
    with open(path, "rb", buffering=READ_BUFFER) as f:
        rows, old = read_lines(enumerate(f, 1), path, rollouts_path, default_task, None)
    return list(zip(rows, old))  # type: ignore[arg-type]  # (no cache: every row is a Rollout)


class CacheAnswers(Protocol):
    """An in-process engine's reward cache, asked before scoring (``Scorer`` is one): per rollout, the fields of
    its result line as ``RolloutResult.to_dict()`` writes them (the rollout's id, task and group id aside), or
    None to score it."""

    def answer_from_cache(self, rollouts: list[Rollout]) -> list[dict[str, Any] | None]: ...

    def answer_rows(self, rows: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any] | None]:
        """The same for rollouts without prompt or metadata, given as (task, completion, reference)."""

    def scan_rows(self, path: str, default_task: str, parts: int, out_dir: str) -> list[Any] | None:
        """The file's lines answered by ``parts`` worker processes from the cache's file, one byte range each
        (``Scorer.scan_rows``: a list of ``RangeScan``, whose part files the caller removes), or None."""


#: A line the reward cache answered as it was read: its output line and its new verdict.
Answered = tuple[bytes, OldResult]
#: Lines of the common shape asked of the reward cache at once (its SQLite file is read in a few queries).
ASK_ROWS = 1024


def read_lines(lines: Iterable[tuple[int, bytes]], path: str | Path, rollouts_path: str | Path | None,
                default_task: str, cache: CacheAnswers | None) -> tuple[list[Rollout | Answered], list[OldResult]]:
    """Per line (numbered) of ``path``, in order: its rollout (to be answered later), or what ``cache`` answered
    as the line was read (its output line and new verdict); and per line its old result.

    A line of the common shape (string fields, a reference object, a scored float, no metadata: what
    ``score --keep-inputs`` writes) is read on a short path, and asked of ``cache`` ``ASK_ROWS`` at a time,
    with no Rollout for a line it answers; any other line is read on ``_scored_line``'s path, which reads it
    the same way where both apply, and says what is wrong with a bad one.
    """
    by_id = {r.id: r for r in read_rollouts(rollouts_path, default_task)} if rollouts_path else {}
    rows: list[Rollout | Answered] = []
    old: list[OldResult] = []
    add_row, add_old = rows.append, old.append
    asking: list[tuple[int, str, str, str, dict[str, Any], str]] = []
    ask = asking.append
    seen: set[str] = set()
    loads, decode_error, status_of, big = orjson.loads, orjson.JSONDecodeError, STATUS_BY_NAME, 2.0**63
    for lineno, line in lines:
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
                add_old(OldResult(rid, task, status, score or 0.0, version))  # (-0.0 as float() reads it)
                if cache is None or prompt:
                    add_row(Rollout(rid, task, completion, reference, prompt, {}, group_id or ""))
                    continue
                ask((len(rows), rid, task, completion, reference, group_id or ""))
                add_row(None)  # type: ignore[arg-type]  # (filled when the rows are asked)
                if len(asking) == ASK_ROWS:
                    _ask(cache, asking, rows)
                continue
        if line.isspace() or not line:  # (isspace stops at the first character of a JSON line)
            continue
        try:
            rollout, result = _scored_line(line, default_task, by_id, rollouts_path, seen)
        except _BadLine as exc:
            raise JsonlError(f"{path}:{lineno}: {exc}") from None
        add_row(rollout)
        add_old(result)
    if asking:
        _ask(cache, asking, rows)  # type: ignore[arg-type]
    return rows, old


def _ask(cache: CacheAnswers, asking: list[tuple[int, str, str, str, dict[str, Any], str]],
         rows: list[Rollout | Answered]) -> None:
    """Fills the rows of ``asking`` (row, id, task, completion, reference, group id): each with its output line
    and new verdict where ``cache`` answers it (what ``_output_lines`` and ``_new_verdicts`` make of the
    answer), else with its rollout; empties ``asking``."""
    answers = cache.answer_rows([(task, completion, reference) for _, _, task, completion, reference, _ in asking])
    status_of = STATUS_BY_NAME
    for (row, rid, task, completion, reference, group_id), answer in zip(asking, answers):
        if answer is None:
            rows[row] = Rollout(rid, task, completion, reference, "", {}, group_id)
            continue
        if group_id:
            line = {"id": rid, "task": task, "completion": completion, "reference": reference, "group_id": group_id,
                    **answer}
        else:
            line = {"id": rid, "task": task, "completion": completion, "reference": reference, **answer}
        rows[row] = (dump_line(line), OldResult(rid, task, status_of[answer["status"]], answer["score"],
                                                answer.get("verifier_version", "")))
    asking.clear()
