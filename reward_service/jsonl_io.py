"""JSONL rollouts in, JSONL results out (one line per rollout, same order, same ids).

Lines are parsed and written with orjson (several times faster than the stdlib on the files ``rescore``
reads and writes). Where orjson and the stdlib ``json`` would disagree, a line takes the stdlib's path,
so every file reads and writes the same values as with ``json`` alone: an integer past 64 bits (orjson
reads a float), ``NaN``/``Infinity`` (orjson rejects them on reading and writes ``null``), a lone
surrogate, and any error (the message is the stdlib's).
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import tempfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import orjson

from reward_core.contract import InvalidRollout, Rollout, RolloutResult

#: Lines written to the file at once.
WRITE_LINES = 256
#: orjson reads an integer past 64 bits as a float: a line holding a float this large (or larger) is read again
#: with ``json``, which keeps such an integer exact.
_BIG_FLOAT = 2.0**63
#: ``b"null" in line``, faster on long lines (the compiled search scans a 3 KB line in about 2/3 of the time).
_NULL = re.compile(b"null")


class JsonlError(ValueError):
    """A JSONL input line is malformed; the message names the file and line."""


def parse_line(line: bytes, keys: Collection[str] | None = None) -> Any:
    """One JSON line (UTF-8 bytes) as Python values, exactly as ``json.loads`` reads it; raises
    ``json.JSONDecodeError`` (or ``UnicodeDecodeError``) on a malformed line.

    With ``keys``, exactly so only the values of those keys of an object (a caller that reads no other one
    is spared a look at the rest; any other key's value may be orjson's float for an integer past 64 bits).
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        pass  # NaN, a lone surrogate, or malformed: the stdlib reads it or says why not
    else:
        if keys is not None and type(value) is dict:
            if not holds_big_float([value.get(key) for key in keys]):
                return value
        elif not holds_big_float(value):
            return value
    return json.loads(line.decode("utf-8"))


def holds_big_float(value: Any) -> bool:
    """Whether a parsed value holds a float of magnitude 2**63 or more (at any depth): where orjson may have
    read an integer past 64 bits, which ``json`` keeps exact."""
    stack = [value.values() if type(value) is dict else value if type(value) is list else (value,)]
    while stack:
        for item in stack.pop():
            kind = type(item)
            if kind is str:  # most values: nothing to look at
                continue
            if kind is float:
                if not -_BIG_FLOAT < item < _BIG_FLOAT:
                    return True
            elif kind is dict:
                stack.append(item.values())
            elif kind is list:
                stack.append(item)
    return False


def dump_line(value: Any) -> bytes:
    """``value`` as one JSON line with its newline in UTF-8, the same values ``json.dumps(value,
    ensure_ascii=False)`` writes (orjson's compact separators)."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # an integer past 64 bits, a type orjson does not know, a lone surrogate (raises below)
        return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
    if _NULL.search(data) is not None:  # orjson writes NaN and infinities as null: the stdlib writes what it holds
        return (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
    return data


def read_rollouts(path: str | Path, default_task: str = "") -> list[Rollout]:
    """Reads and validates every line first, so a bad line stops the run before any scoring."""
    rollouts: list[Rollout] = []
    seen: dict[str, int] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if line.isspace() or not line:  # (isspace stops at the first character of a JSON line)
                continue
            try:
                rollout = Rollout.from_dict(parse_line(line), default_task=default_task)
            except json.JSONDecodeError as exc:
                raise JsonlError(f"{path}:{lineno}: invalid JSON: {exc}") from None
            except InvalidRollout as exc:
                raise JsonlError(f"{path}:{lineno}: {exc}") from None
            if rollout.id in seen:
                raise JsonlError(f"{path}:{lineno}: duplicate id {rollout.id!r} (first on line {seen[rollout.id]})")
            seen[rollout.id] = lineno
            rollouts.append(rollout)
    return rollouts


def write_results(out: TextIO, results: Iterable[RolloutResult], inputs: Sequence[Rollout] | None = None) -> int:
    """Writes one JSON line per result; returns how many were written.

    With ``inputs`` (the rollouts, in the results' order), each line also holds its rollout's fields
    (completion, reference, prompt, metadata, group id): a file ``reward-service rescore`` can re-score.
    """
    def lines() -> Iterator[bytes]:
        for n, r in enumerate(results):
            line = r.to_dict()
            if inputs is not None:  # the rollout's fields, then the result's (which win): {**rollout, **result}
                line, result_fields = inputs[n].to_dict(), line
                line.update(result_fields)
            yield dump_line(line)

    return write_lines(out, lines())


def write_lines(out: TextIO, lines: Iterable[bytes]) -> int:
    """Writes lines ``dump_line`` made, ``WRITE_LINES`` at a time; returns how many were written.

    Each block is written on a thread while the next one is made (a write system call runs without the GIL:
    on a second core, writing a file of 100s of MB costs the caller little); one block at a time, in order.
    """
    buffer = _utf8_buffer(out)
    write = buffer.write if buffer is not None else lambda data: out.write(data.decode("utf-8"))
    n = 0
    chunk: list[bytes] = []
    with ThreadPoolExecutor(1, thread_name_prefix="jsonl-writer") as writer:
        pending: Future | None = None
        for line in lines:
            chunk.append(line)
            n += 1
            if len(chunk) == WRITE_LINES:
                data = b"".join(chunk)
                chunk.clear()
                if pending is not None:
                    pending.result()
                pending = writer.submit(write, data)
        if pending is not None:
            pending.result()
    write(b"".join(chunk))
    out.flush()
    return n


def _utf8_buffer(out: TextIO) -> BinaryIO | None:
    """The binary file under a UTF-8 text file, flushed (the lines go there without a decode and an encode);
    None when ``out`` has none or another encoding."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or not encoding or codecs.lookup(encoding).name != "utf-8":
        return None
    out.flush()
    return buffer


def append_file_range(src_fd: int, dst_fd: int, offset: int, length: int) -> None:
    """Appends ``length`` bytes of ``src_fd`` from ``offset`` at ``dst_fd``'s position (copied in the kernel
    where it can: ``rescore`` puts its output together from part files of 100s of MB)."""
    while length > 0:
        try:
            n = os.copy_file_range(src_fd, dst_fd, length, offset)
        except OSError:  # a file system or kernel without it: through this process
            n = os.write(dst_fd, os.pread(src_fd, min(length, 2**20), offset))
        if n <= 0:
            raise OSError(f"could not copy a file range: it ended {length} bytes early")
        offset += n
        length -= n


@contextlib.contextmanager
def atomic_file_continued(start: str | Path, path: str | Path) -> Iterator[BinaryIO]:
    """``atomic_text_file`` whose temporary file is ``start`` (a file beside ``path``), written on from its end
    in binary: ``rescore``'s first worker writes the output's first part there, so it is never copied."""
    try:
        with open(start, "r+b") as out:  # (not "ab": copy_file_range refuses a file opened for appending)
            out.seek(0, os.SEEK_END)
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(start, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(start)
        raise


@contextlib.contextmanager
def atomic_text_file(path: str | Path) -> Iterator[TextIO]:
    """A text file that appears at ``path`` complete, or not at all.

    Written to a temporary file beside ``path`` and renamed over it when the block ends without
    an exception; on an exception (an unreachable endpoint, Ctrl-C) the temporary file is removed
    and whatever ``path`` held before is left as it was.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
