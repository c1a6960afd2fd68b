"""Length-prefixed JSON frames: the only wire format between host, zygote, A and B.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8
JSON (one object). Why frames and not lines: payloads (source code, captured
output) contain newlines, and a reader must know exactly where one message
ends so that it never reads a byte of the *next* message into its memory --
the zygote relies on this to leave the secret part of a request (a HumanEval
``check``) unread in the pipe for the supervisor to consume (see
ARCHITECTURE.md, "secrets never enter B").

Stdlib only; used inside the sandbox and by the host (``sandbox.runtime.framing``). In B it runs
between the program's calls, so, like codec.py, it resolves builtins in a private copy taken at
import and calls ``os.read``/``os.write`` bound at import: a program that rebinds them (or
``builtins.len``) changes its own interpreter, not the frames B sends.
"""

from __future__ import annotations

import builtins
import os
import struct
from typing import Any

from . import codec

__builtins__ = dict(vars(builtins))   # the functions below resolve builtins here (see above)

_read = os.read
_write = os.write
HEADER = struct.Struct(">I")
DEFAULT_MAX_FRAME = 256 * 1024 * 1024


class FrameError(ValueError):
    """A frame was oversized, truncated or not a JSON object."""


def pack(obj: Any) -> bytes:
    """One frame (header + JSON) for a JSON-able object."""
    body = codec.dumps_json(obj).encode("utf-8")
    return HEADER.pack(len(body)) + body


def unpack(body: bytes) -> dict:
    """The JSON object of a frame body; FrameError if it is not one."""
    try:
        obj = codec.loads_json(body)
    except codec.CodecError as exc:
        raise FrameError(str(exc)) from None
    if type(obj) is not dict:
        raise FrameError(f"frame is a {type(obj).__name__}, not an object")
    return obj


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly n bytes from a blocking fd; None on EOF before the first byte."""
    chunks = []
    got = 0
    while got < n:
        chunk = _read(fd, min(n - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise FrameError(f"EOF after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_len: int = DEFAULT_MAX_FRAME) -> dict | None:
    """One frame from a blocking fd, reading no byte past it; None on a clean EOF."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > max_len:
        raise FrameError(f"frame of {length} bytes exceeds the {max_len} byte limit")
    body = read_exact(fd, length) if length else b""
    if body is None:
        raise FrameError("EOF inside a frame")
    return unpack(body)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a blocking fd (os.write may be partial on pipes)."""
    view = memoryview(data)
    while view:
        n = _write(fd, view)
        view = view[n:]


class FrameReader:
    """Incremental decoder for a non-blocking stream: feed bytes, pop whole frames."""

    def __init__(self, max_len: int = DEFAULT_MAX_FRAME) -> None:
        self.max_len = max_len
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buf)
            if length > self.max_len:
                raise FrameError(f"frame of {length} bytes exceeds the {self.max_len} byte limit")

    def pop(self) -> dict | None:
        """The next complete frame, or None if more bytes are needed."""
        if len(self._buf) < HEADER.size:
            return None
        (length,) = HEADER.unpack_from(self._buf)
        if length > self.max_len:
            raise FrameError(f"frame of {length} bytes exceeds the {self.max_len} byte limit")
        end = HEADER.size + length
        if len(self._buf) < end:
            return None
        body = bytes(self._buf[HEADER.size:end])
        del self._buf[:end]
        return unpack(body)

    @property
    def pending(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf)
