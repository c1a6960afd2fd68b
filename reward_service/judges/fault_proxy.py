"""A fault-injecting reverse proxy in front of an OpenAI-compatible endpoint, for tests and benchmarks.

    python -m reward_service.judges.fault_proxy --upstream http://127.0.0.1:8000/v1 --port 8001 \\
        --rate-http-429 0.1 --rate-http-500 0.1 --rate-cut 0.1 --rate-garbage 0.1 --seed 0

Each POST to a chat-completions or responses path gets the fault its :class:`FaultPlan` picks
(latency, 429 with ``Retry-After``, 500/502/503, a connection cut halfway through the body, a
garbage verdict, a hang), or is forwarded untouched; everything else is forwarded untouched.
``GET /_fault_proxy/counts`` returns how many calls got each kind (also ``FaultProxy.counts``).
``FaultProxy.release_latency()`` ends every latency wait at once, now and later (a test orders events
with it instead of timing them: a call is held until the test lets it go).
In Python: ``FaultProxy(upstream_base_url, FaultPlan(...))`` serves on a free loopback port from a
thread; ``.base_url`` mirrors the upstream's path (``.../v1``); ``.stop()``. A cut makes uvicorn log
"ASGI callable returned without completing response"; the proxy filters that one line out.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from reward_core.keep_alive import SERVER_KEEP_ALIVE_S
from reward_service.judges.fault_plan import FAULT_KINDS, HTTP_FAULTS, OK, FaultDecider, FaultPlan
from reward_service.judges.openai_errors import error_body

__all__ = ["FaultPlan", "FaultProxy", "FaultProxyApp", "main"]

logger = logging.getLogger(__name__)

COUNTS_PATH = "/_fault_proxy/counts"
DROP_REQUEST_HEADERS = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}
DROP_REPLY_HEADERS = {"content-length", "connection", "content-encoding", "transfer-encoding", "keep-alive"}


def _json_reply(status: int, body: Any, headers: Sequence[tuple[bytes, bytes]] = ()) -> tuple[int, list, bytes]:
    data = json.dumps(body).encode()
    return status, [(b"content-type", b"application/json"), *headers], data


def garble(body: bytes, text: str) -> bytes:
    """``body`` (a chat completion or a response, as JSON) with every reply text replaced by ``text``;
    anything else unchanged."""
    try:
        reply = json.loads(body)
    except ValueError:
        return body
    if not isinstance(reply, dict):
        return body
    for choice in reply.get("choices") or ():
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            choice["message"]["content"] = text
    for item in reply.get("output") or ():
        for part in (item.get("content") or ()) if isinstance(item, dict) else ():
            if isinstance(part, dict) and part.get("type") == "output_text":
                part["text"] = text
    if "output_text" in reply:
        reply["output_text"] = text
    return json.dumps(reply).encode()


class FaultProxyApp:
    """The ASGI app: decides each call's fault, injects it or forwards to ``upstream`` (an origin URL)."""

    def __init__(self, upstream: str, plan: FaultPlan, upstream_timeout_s: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.upstream_timeout_s = upstream_timeout_s
        self.counts: collections.Counter[str] = collections.Counter()
        self.set_plan(plan)
        self._client = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._released: asyncio.Event | None = None

    def set_plan(self, plan: FaultPlan) -> None:
        """Starts ``plan`` from its first call (counts are kept)."""
        self.plan = plan
        self.decider = FaultDecider(plan)

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        import httpx

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loop, self._released = asyncio.get_running_loop(), asyncio.Event()
                self._client = httpx.AsyncClient(timeout=self.upstream_timeout_s,
                                                 limits=httpx.Limits(max_connections=1024))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: dict, receive, send) -> None:
        if scope["path"] == COUNTS_PATH:
            await self._send(send, *_json_reply(200, dict(self.counts)))
            return
        kind = self.decider.next() if self.plan.applies_to(scope["method"], scope["path"]) else OK
        self.counts[kind] += 1
        body = await self._read_body(receive)
        if kind == "hang":
            await self._hang(receive, send)
            return
        if kind in HTTP_FAULTS:
            status = HTTP_FAULTS[kind]
            headers = [(b"retry-after", f"{self.plan.retry_after_s:g}".encode())] if status == 429 else []
            message = "rate limit reached (injected by the fault proxy)" if status == 429 else \
                f"upstream failure {status} (injected by the fault proxy)"
            await self._send(send, *_json_reply(status, error_body(status, message, f"injected_{kind}"), headers))
            return
        if kind == "latency":
            await self._latency()
        status, headers, data = await self._forward(scope, body)
        if kind == "garbage" and status == 200:
            data = garble(data, self.decider.garbage())
        if kind == "cut":  # headers promise the whole body; half of it comes, then the connection closes
            await send({"type": "http.response.start", "status": status,
                        "headers": [*headers, (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data[:len(data) // 2], "more_body": True})
            return  # uvicorn closes a connection whose response did not complete
        await self._send(send, status, headers, data)

    async def _latency(self) -> None:
        """Waits ``latency_s``, or until :meth:`release_latency`."""
        if self._released is None:
            await asyncio.sleep(self.plan.latency_s)
            return
        try:
            await asyncio.wait_for(self._released.wait(), self.plan.latency_s)
        except asyncio.TimeoutError:
            pass

    def release_latency(self) -> None:
        """Ends every latency wait now, and makes the later ones end at once (thread-safe)."""
        if self._loop is not None and self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    @staticmethod
    async def _read_body(receive) -> bytes:
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    async def _hang(self, receive, send) -> None:
        """No reply until the client disconnects; after ``hang_s``, a 504."""
        try:
            while (await asyncio.wait_for(receive(), self.plan.hang_s))["type"] != "http.disconnect":
                pass
        except asyncio.TimeoutError:
            await self._send(send, *_json_reply(504, error_body(504, "the fault proxy hung up", "injected_hang")))

    async def _forward(self, scope: dict, body: bytes) -> tuple[int, list, bytes]:
        import httpx

        url = self.upstream + scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        headers = [(k, v) for k, v in scope["headers"] if k.decode().lower() not in DROP_REQUEST_HEADERS]
        try:
            reply = await self._client.request(scope["method"], url, headers=headers, content=body)
        except httpx.HTTPError as exc:
            self.counts["upstream_error"] += 1
            return _json_reply(502, error_body(502, f"the fault proxy could not reach {self.upstream}: {exc!r}",
                                               "upstream_unreachable"))
        kept = [(k, v) for k, v in reply.headers.raw if k.decode().lower() not in DROP_REPLY_HEADERS]
        return reply.status_code, kept, reply.content

    @staticmethod
    async def _send(send, status: int, headers: list, data: bytes) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [*headers, (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


class _QuietCuts(logging.Filter):
    """Drops uvicorn's error line for a response that did not complete: the proxy's cuts, on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


def quiet_cuts() -> None:
    """Installs :class:`_QuietCuts` on uvicorn's error logger (once; for the whole process)."""
    log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCuts) for f in log.filters):
        log.addFilter(_QuietCuts())


def split_base_url(base_url: str) -> tuple[str, str]:
    """``http://h:p/v1`` -> ``("http://h:p", "/v1")``."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"upstream must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


class FaultProxy:
    """The proxy served on ``host:port`` (0: a free port) from a thread of this process."""

    def __init__(self, upstream_base_url: str, faults: FaultPlan | None = None, port: int = 0, *,
                 host: str = "127.0.0.1", upstream_timeout_s: float = 600.0) -> None:
        from reward_service.judges.served import ServedApp

        origin, prefix = split_base_url(upstream_base_url)
        quiet_cuts()
        self.app = FaultProxyApp(origin, faults or FaultPlan(), upstream_timeout_s)
        self._served = ServedApp(self.app, host=host, port=port, name="fault-proxy", lifespan="on")
        self.base_url = self._served.url + prefix

    @property
    def counts(self) -> dict[str, int]:
        """Calls so far per kind (``ok`` included; ``upstream_error``: forwards that failed)."""
        return dict(self.app.counts)

    @property
    def plan(self) -> FaultPlan:
        return self.app.plan

    def set_plan(self, plan: FaultPlan) -> None:
        """Switches to ``plan``, from its first call (call it between calls, not during them)."""
        self.app.set_plan(plan)

    def release_latency(self) -> None:
        """Lets every call held by a ``latency`` fault go on now (and the later ones at once)."""
        self.app.release_latency()

    def stop(self) -> None:
        self._served.stop()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _every(text: str) -> tuple[str, int]:
    kind, _, n = text.partition("=")
    if not n.isdigit():
        raise argparse.ArgumentTypeError(f"--every takes KIND=N (e.g. http_429=3), got {text!r}")
    return kind, int(n)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reward_service.judges.fault_proxy",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the endpoint's base URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    for kind in FAULT_KINDS:
        parser.add_argument(f"--rate-{kind.replace('_', '-')}", type=float, default=0.0, dest=f"rate_{kind}",
                            help=f"fraction of calls that get '{kind}'")
    parser.add_argument("--every", type=_every, action="append", default=[], metavar="KIND=N",
                        help="every N-th call gets KIND (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-s", type=float, default=FaultPlan.latency_s)
    parser.add_argument("--retry-after-s", type=float, default=FaultPlan.retry_after_s)
    parser.add_argument("--hang-s", type=float, default=FaultPlan.hang_s)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import uvicorn

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(name)s: %(message)s")
    try:
        origin, _ = split_base_url(args.upstream)
        plan = FaultPlan(rates={k: getattr(args, f"rate_{k}") for k in FAULT_KINDS if getattr(args, f"rate_{k}")},
                         every=dict(args.every), seed=args.seed, latency_s=args.latency_s,
                         retry_after_s=args.retry_after_s, hang_s=args.hang_s)
    except ValueError as exc:
        print(f"fault_proxy: error: {exc}", file=sys.stderr)
        return 2
    app = FaultProxyApp(origin, plan)
    quiet_cuts()
    logger.info("fault proxy on http://%s:%d -> %s: %s", args.host, args.port, origin, plan)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1,
                timeout_keep_alive=SERVER_KEEP_ALIVE_S)
    logger.info("fault proxy injected: %s", dict(app.counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
