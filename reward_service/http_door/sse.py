"""Server-sent events: the wire framing and an ASGI response that streams events with keepalive pings.

A frame is ``event: <name>`` then one ``data: <line>`` per line of the data, ended by a blank line
(lines end with CRLF, as sse-starlette writes them). While the next event is not ready the response
sends a comment line (``: ping``) every ``ping_s`` seconds, so a client's read timeout (the ORS
client's is 30 s) never fires on a long call. A client that disconnects stops the stream; the work
it was waiting on is not cancelled (the ORS door keeps it to be resumed by task id).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

from starlette.types import Receive, Scope, Send

#: The keepalive comment: clients skip lines that start with ":".
PING = b": ping\r\n\r\n"

HEADERS = {"cache-control": "no-cache", "connection": "keep-alive", "x-accel-buffering": "no"}


def frame(event: str, data: str) -> bytes:
    """One event as bytes: its name, its data line by line (an empty data is one empty line)."""
    if "\n" in event or "\r" in event:
        raise ValueError(f"an SSE event name cannot contain a line break: {event!r}")
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = "".join(f"data: {line}\r\n" for line in lines)
    return f"event: {event}\r\n{body}\r\n".encode()


class EventStream:
    """An ASGI response streaming ``(event, data)`` pairs as SSE, with a ping comment while idle."""

    def __init__(self, events: AsyncIterator[tuple[str, str]], *, ping_s: float = 10.0,
                 headers: Mapping[str, str] | None = None) -> None:
        if ping_s <= 0:
            raise ValueError("ping_s must be > 0")
        self.events, self.ping_s = events, ping_s
        self.headers = {**HEADERS, **(headers or {})}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        raw_headers += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            with contextlib.suppress(OSError):  # the client went away while we wrote
                if await self._stream(send, gone):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gone
            aclose = getattr(self.events, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _stream(self, send: Send, gone: asyncio.Future[None]) -> bool:
        """Sends every event; False when the client disconnected first."""
        iterator = aiter(self.events)
        while True:
            pending = asyncio.ensure_future(anext(iterator))
            try:
                while True:
                    done, _ = await asyncio.wait({pending, gone}, timeout=self.ping_s,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if pending in done:
                        break
                    if gone in done:
                        return False
                    await send({"type": "http.response.body", "body": PING, "more_body": True})
            finally:
                if not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await pending
            try:
                event, data = pending.result()
            except StopAsyncIteration:
                return True
            await send({"type": "http.response.body", "body": frame(event, data), "more_body": True})


async def _disconnected(receive: Receive) -> None:
    """Returns when the client disconnects (the request body, if any, was read by the route)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def chunk_data(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, none starting with whitespace (SSE
    clients drop a data line's leading space, the ORS client all of its leading whitespace): a cut
    that would start a piece with whitespace moves back to before that whitespace (a run of whitespace
    longer than a piece stays whole in one longer piece). Joined, the pieces are ``text``; an empty
    text is one empty piece."""
    if size < 2:
        raise ValueError("size must be >= 2")
    pieces, start = [], 0
    while len(text) - start > size:
        cut = start + size
        while cut > start + 1 and text[cut].isspace():
            cut -= 1
        if text[cut].isspace():  # a whole piece of whitespace: cut just after it instead
            cut = start + size
            while cut < len(text) and text[cut].isspace():
                cut += 1
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces
