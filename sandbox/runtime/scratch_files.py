"""A request's files into a program's scratch directory, and the files it asked for back out.

Both directions go through an untrusted process B, never through a host path:

* **In.** The host sends the files (base64 in its JSON request) to the supervisor A, which
  packs them with the run arguments into one binary frame (:func:`pack_extras`) and sends it on
  the channel of every B that runs a step (the compile step and each case), right after the
  program's source. B receives it only after it dropped its privileges and chdir'd to its
  scratch directory, and writes the files there itself (:func:`write_files`), before its step
  starts: the compiler and every case see them, fresh for each case. Never the template zygote:
  it holds no request data (a file's content or an argument in a B's configuration would stay in
  its memory and be copied into every later B).
* **Out.** After the last case A has a fresh B forked in the same scratch directory (role
  ``fetch``), sends it the names and B reads them (:func:`read_files`): only regular files
  (``O_NONBLOCK``: a FIFO the program left cannot stall it), each at most ``file_size_mb``,
  all together at most :data:`FETCH_BYTES_CAP`; a name that is missing, not a regular file or
  over its cap is left out, as SandboxFusion leaves out what is not a file. B answers base64
  in one JSON frame; A checks it (:func:`checked_fetch`: only names it asked for, valid base64,
  within the caps) and relays it. Whatever B does wrong (dies, stalls, answers garbage) means
  fewer files, never a failed execution: a program must not be able to turn its result into a
  sandbox error.

Names are relative paths without ``.``, ``..`` or empty components (checked on the host,
reward_core.sandbox_contract.check_file_name, and again by B). Stdlib only.
"""

from __future__ import annotations

import binascii
import fnmatch
import os
import stat
import struct

#: All fetched files together (reward_core.sandbox_contract.FETCH_BYTES_CAP: the runtime is stdlib-only).
FETCH_BYTES_CAP = 32 << 20
#: The fetching B's own time budget (not the program's wall_s; the host's deadline adds it).
FETCH_WALL_S = 10.0
#: Memory of the fetching B: the files, their base64 and the JSON frame.
FETCH_MEMORY_MB = 512

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


def safe_name(name: object) -> bool:
    """A relative path that stays inside the scratch directory."""
    if type(name) is not str or not name or name.startswith("/") or "\0" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def pack_extras(files: list[tuple[str, bytes]], args: list[str]) -> bytes:
    """One frame body: the files (name, content) and the run arguments."""
    out = [_U32.pack(len(files))]
    for name, content in files:
        raw = name.encode("utf-8", "surrogatepass")
        out += [_U32.pack(len(raw)), raw, _U64.pack(len(content)), bytes(content)]
    out.append(_U32.pack(len(args)))
    for arg in args:
        raw = arg.encode("utf-8", "surrogatepass")
        out += [_U32.pack(len(raw)), raw]
    return b"".join(out)


def unpack_extras(body: bytes) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The inverse of :func:`pack_extras`. Raises ValueError on a truncated body."""
    view, pos = memoryview(body), 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(view):
            raise ValueError("truncated extras frame")
        chunk = bytes(view[pos:pos + n])
        pos += n
        return chunk

    files = []
    for _ in range(_U32.unpack(take(4))[0]):
        name = take(_U32.unpack(take(4))[0]).decode("utf-8", "surrogatepass")
        files.append((name, take(_U64.unpack(take(8))[0])))
    args = [take(_U32.unpack(take(4))[0]).decode("utf-8", "surrogatepass") for _ in range(_U32.unpack(take(4))[0])]
    return files, args


def is_glob(name: str) -> bool:
    return any(c in name for c in "*?[")


def expand_names(names: list[str]) -> list[str]:
    """B, in the scratch directory: each name, a glob (a compile's artifacts, ``*.class``) replaced by the
    top-level entries it matches (sorted). :func:`read_files` then keeps only regular files."""
    out: list[str] = []
    listing: list[str] | None = None
    for name in names:
        if not is_glob(name):
            out.append(name)
            continue
        if listing is None:
            try:
                listing = sorted(os.listdir("."))
            except OSError:
                listing = []
        out += [entry for entry in listing if fnmatch.fnmatchcase(entry, name) and entry not in out]
    return out


def matches(name: str, names: list[str]) -> bool:
    """A: is ``name`` one of ``names``, or a top-level entry one of their globs matches?"""
    if name in names:
        return True
    return safe_name(name) and "/" not in name and any(is_glob(p) and fnmatch.fnmatchcase(name, p) for p in names)


def write_files(files: list[tuple[str, bytes]], mode: int = 0o644) -> None:
    """B, in its scratch directory: write each file (replacing what is there) with ``mode`` (a compile's
    artifacts: 0o755). Raises OSError."""
    for name, content in files:
        if not safe_name(name):
            raise OSError(f"unsafe file name {name[:100]!r}")
        parent = os.path.dirname(name)
        if parent:
            os.makedirs(parent, 0o755, exist_ok=True)
        try:
            os.unlink(name)                      # a file a previous case made read-only, or a symlink
        except FileNotFoundError:
            pass
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)


def read_files(names: list[str], each_cap: int, total_cap: int = FETCH_BYTES_CAP) -> dict[str, str]:
    """B, in the scratch directory after the run: name -> base64 of each regular file within the caps."""
    out: dict[str, str] = {}
    total = 0
    for name in names:
        if not safe_name(name) or name in out:
            continue
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > each_cap or total + info.st_size > total_cap:
                continue
            chunks, size = [], 0
            while size <= info.st_size:
                chunk = os.read(fd, min(1 << 20, info.st_size + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:
            continue
        finally:
            os.close(fd)
        if size > min(each_cap, total_cap - total):
            continue
        total += size
        out[name] = binascii.b2a_base64(b"".join(chunks), newline=False).decode("ascii")
    return out


def checked_fetch(msg: object, names: list[str], each_cap: int, total_cap: int = FETCH_BYTES_CAP,
                  globs: bool = False) -> dict[str, str]:
    """A: the files of B's answer that A asked for (``globs``: or that a glob among ``names`` matches),
    valid and within the caps (anything else is dropped)."""
    if type(msg) is not dict or msg.get("op") != "files" or type(msg.get("files")) is not dict:
        return {}
    out, total = {}, 0
    for name, text in msg["files"].items():
        if type(name) is not str or not (name in names or globs and matches(name, names)) or type(text) is not str:
            continue
        try:
            size = len(binascii.a2b_base64(text.encode("ascii"), strict_mode=True))
        except (ValueError, binascii.Error, UnicodeEncodeError):
            continue
        if size > each_cap or total + size > total_cap:
            continue
        total += size
        out[name] = text
    return out
