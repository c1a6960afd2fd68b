"""The fork service between the supervisor A and the template zygote: messages and A's client.

AF_UNIX SOCK_SEQPACKET, one message per packet, fds passed with SCM_RIGHTS (see zygote.py for
the list of operations). Stdlib only.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time

ZYGOTE_REPLY_S = 30.0


class ZygoteGone(Exception):
    """The template zygote (or a holder) stopped answering: the slot must be restarted."""


_ANCILLARY = socket.CMSG_SPACE(8 * 4)


def recv_packet(sock: socket.socket, flags: int = 0) -> tuple[bytes, list[int]]:
    """One SOCK_SEQPACKET message and the fds that came with it (SCM_RIGHTS)."""
    data, ancdata, _flags, _addr = sock.recvmsg(65536, _ANCILLARY, flags)
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += [int.from_bytes(payload[i:i + 4], "little", signed=True) for i in range(0, len(payload) - 3, 4)]
    return data, fds


def send_packet(sock: socket.socket, data: bytes, fds: list[int] = ()) -> None:
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, b"".join(fd.to_bytes(4, "little") for fd in fds))] if fds else []
    sock.sendmsg([data], anc)


class ForkClient:
    """A's end of the fork service. Replies are awaited synchronously; exit notices are collected.

    The frequent messages are short text, not JSON, because every object the zygote touches
    costs it a page fault (its pages are shared with the B it just forked): ``S role cfg-id``
    (+ fds) -> ``P pid`` (+ pidfd), and ``X pid status utime stime maxrss`` when B is reaped.
    A configuration (limits, argv) travels once, as JSON, and is referred to by id after.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.exits: dict[int, dict] = {}
        self.ignored: set[int] = set()   # pids whose exit nobody waits for (scratch holders)
        self._cfg_ids: dict[str, int] = {}
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN)

    def fileno(self) -> int:
        return self.sock.fileno()

    def _recv(self, timeout_s: float | None) -> tuple[dict, list[int]] | None:
        if timeout_s is not None and not self._poll.poll(int(timeout_s * 1000) + (timeout_s > 0)):
            return None
        try:
            data, fds = recv_packet(self.sock)
        except OSError as exc:
            raise ZygoteGone(f"fork service: {exc}") from None
        if not data:
            raise ZygoteGone("fork service closed")
        kind = data[:1]
        if kind == b"X":
            _, pid, status, utime, stime, maxrss = data.split()
            msg = {"op": "exited", "pid": int(pid), "status": int(status), "utime": float(utime),
                   "stime": float(stime), "maxrss": int(maxrss)}
            if msg["pid"] in self.ignored:
                self.ignored.discard(msg["pid"])
            else:
                self.exits[msg["pid"]] = msg
        elif kind == b"P":
            msg = {"op": "spawned", "pid": int(data.split()[1])}
        else:
            msg = json.loads(data)
        return msg, fds

    def spawn(self, role: str, cfg: dict, fds: list[int]) -> tuple[int, int | None]:
        """Fork a B: (pid, pidfd or None). The cfg is sent once and then named by its id."""
        text = json.dumps(cfg, sort_keys=True)
        cfg_id = self._cfg_ids.get(text)
        if cfg_id is None:
            if len(self._cfg_ids) >= 64:
                self._cfg_ids.clear()
                send_packet(self.sock, b'{"op": "forget"}')
            cfg_id = self._cfg_ids[text] = len(self._cfg_ids)
            send_packet(self.sock, json.dumps({"op": "cfg", "id": cfg_id, "cfg": cfg}).encode())
        reply, rfds = self._await(b"S %s %d" % (role.encode(), cfg_id), fds, "spawned")
        return int(reply["pid"]), (rfds[0] if rfds else None)

    def request(self, msg: dict, fds: list[int] = (), expect: str = "") -> tuple[dict, list[int]]:
        return self._await(json.dumps(msg).encode(), fds, expect)

    def _await(self, packet: bytes, fds: list[int], expect: str) -> tuple[dict, list[int]]:
        send_packet(self.sock, packet, fds)
        deadline = time.monotonic() + ZYGOTE_REPLY_S
        while True:
            got = self._recv(max(deadline - time.monotonic(), 0.0))
            if got is None:
                raise ZygoteGone(f"no reply to {packet[:20]!r}")
            reply, rfds = got
            if reply.get("op") in (expect, "error"):
                if reply.get("op") == "error":
                    for fd in rfds:
                        os.close(fd)
                    raise OSError(f"fork service: {reply.get('error')}")
                return reply, rfds
            for fd in rfds:
                os.close(fd)

    def drain(self) -> None:
        """Collect any pending exit notices without blocking."""
        while True:
            got = self._recv(0.0)
            if got is None:
                return
            for fd in got[1]:
                os.close(fd)

    def wait_exit(self, pid: int, timeout_s: float = ZYGOTE_REPLY_S) -> dict:
        deadline = time.monotonic() + timeout_s
        while pid not in self.exits:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._recv(remaining) is None:
                raise ZygoteGone(f"no exit notice for pid {pid}")
        return self.exits.pop(pid)

    def close(self) -> None:
        self.sock.close()
