"""The judge client: one verdict from an OpenAI-compatible endpoint, or a typed failure.

``JudgeClient.complete`` answers from the verdict cache when it can; otherwise it waits for its
turn at the endpoint (``limits.py``), calls it through the ``openai`` library (chat completions
or the Responses API), and retries connection errors, 429 and 5xx with backoff -- every retry,
every wait and every call inside ONE deadline, the verification's. What cannot be done by then
raises :class:`~reward_service.judges.failures.JudgeError`: never an empty reply, never a 0.

Clients are shared: :func:`judge_client` gives every task of the process the same client (so
the same limits and cache) for the same endpoint.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from reward_core.log_context import current_client_id
from reward_service.judges.backoff import Backoff, retry_after_of, retry_delay
from reward_service.judges.cache import VerdictCache, verdict_key
from reward_service.judges.calls import JudgeCall, JudgeEndpoint, JudgeReply
from reward_service.judges.failures import JudgeError, JudgeFailureKind
from reward_service.judges.judge_metrics import JudgeMetrics, judge_metrics
from reward_service.judges.limits import EndpointLimiter, QuotaExceeded

logger = logging.getLogger(__name__)

FAILED = JudgeFailureKind.FAILED
RATE_LIMITED = JudgeFailureKind.RATE_LIMITED


class _Attempt(Exception):
    """One failed request: whether it may be retried, and the wait the endpoint asked for."""

    def __init__(self, reason: str, retry_key: str | None, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_key = retry_key  # the retries metric's reason; None: not worth retrying
        self.retry_after_s = retry_after_s


class JudgeClient:
    """Calls one judge endpoint, with its cache and its limiter (see the module docstring).

    ``clock``, ``sleep`` and ``draw`` (the backoff's random draw) are injectable for tests;
    ``sdk`` is an ``openai.OpenAI`` client (made from the endpoint when not given).
    """

    def __init__(self, endpoint: JudgeEndpoint, cache: VerdictCache | None = None, *,
                 limiter: EndpointLimiter | None = None, metrics: JudgeMetrics | None = None,
                 backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, draw: Callable[[], float] | None = None,
                 sdk: Any = None) -> None:
        self.endpoint = endpoint
        self.cache = cache
        self.limiter = limiter or EndpointLimiter(endpoint.max_concurrency, endpoint.requests_per_minute,
                                                  endpoint.tokens_per_minute, clock=clock)
        self.metrics = metrics or judge_metrics()
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._sleep = sleep
        self._draw = draw or random.Random().random
        self._sdk = sdk if sdk is not None else _make_sdk(endpoint)
        self._label = endpoint.label

    def complete(self, call: JudgeCall, *, deadline_s: float, caller: str = "",
                 accept: Callable[[str], bool] | None = None) -> JudgeReply:
        """The judge's reply to ``call``, within ``deadline_s`` seconds from now (all retries included).

        ``caller`` is whose call this is for fair sharing of the endpoint (default: the client id of
        the request being handled). ``accept`` (the task's parser, as a check): a reply it rejects is
        returned but not cached, so a garbled verdict is asked for again next time.
        Raises JudgeError(FAILED | RATE_LIMITED).
        """
        key = verdict_key(self.endpoint, call) if self.cache is not None and call.deterministic else None
        if key is not None:
            hit = self.cache.get(key)  # type: ignore[union-attr]
            self.metrics.record_cache(self._label, hit is not None)
            if hit is not None:
                self.metrics.record_call(self._label, "cached")
                return hit
        start = self._clock()
        try:
            reply = self._call_with_retries(call, start + deadline_s, caller or current_client_id() or "")
        except JudgeError as exc:
            self.metrics.record_call(self._label, exc.kind.value, self._clock() - start)
            raise
        self.metrics.record_call(self._label, "ok", self._clock() - start)
        if key is not None and (accept is None or accept(reply.text)):
            self.cache.put(key, reply)  # type: ignore[union-attr]
        return reply

    def close(self) -> None:
        """Closes the HTTP connections (the client is unusable after)."""
        close = getattr(self._sdk, "close", None)
        if callable(close):
            close()

    def _call_with_retries(self, call: JudgeCall, deadline: float, caller: str) -> JudgeReply:
        failures = 0
        while True:
            if deadline - self._clock() <= 0:
                raise JudgeError(FAILED, f"judge {self._label}: the verification's deadline passed before a call "
                                 f"could be made ({failures} failed attempt(s) before)")
            try:
                return self._attempt(call, deadline, caller)
            except _Attempt as exc:
                failures += 1
                remaining = deadline - self._clock()
                wait = None if exc.retry_key is None else retry_delay(
                    failures=failures, max_retries=self.endpoint.max_retries, retry_after_s=exc.retry_after_s,
                    remaining_s=remaining, backoff=self.backoff, draw=self._draw())
                if wait is None:
                    raise self._final(exc, failures) from None
                self.metrics.retries.labels(self._label, exc.retry_key).inc()
                logger.debug("judge %s: %s; retry %d in %.3f s", self._label, exc.reason, failures, wait)
                self._sleep(wait)

    def _final(self, exc: _Attempt, attempts: int) -> JudgeError:
        what = f"judge {self._label}: {exc.reason} (after {attempts} attempt(s) within the deadline)"
        if exc.retry_key == "rate_limited":
            self.metrics.rate_limited.labels(self._label, "upstream").inc()
            return JudgeError(RATE_LIMITED, what, exc.retry_after_s if exc.retry_after_s is not None
                              else self.backoff.delay(attempts, 0.0))
        return JudgeError(FAILED, what)

    def _attempt(self, call: JudgeCall, deadline: float, caller: str) -> JudgeReply:
        try:
            self.limiter.acquire(caller, call.estimated_tokens(), deadline)
        except QuotaExceeded as exc:
            self.metrics.rate_limited.labels(self._label, "quota").inc()
            raise JudgeError(RATE_LIMITED, f"judge {self._label}: {exc.reason}", exc.retry_after_s) from None
        in_flight = self.metrics.in_flight.labels(self._label)
        in_flight.inc()
        sent = self._clock()
        try:
            return self._send(call, max(deadline - sent, 0.001))
        finally:
            in_flight.dec()
            self.limiter.release(self._clock() - sent)

    def _send(self, call: JudgeCall, timeout: float) -> JudgeReply:
        """One request through the ``openai`` client (its transport, auth, timeouts and error types).

        The body is built and the reply read here as plain JSON (the library's ``post``): its typed
        ``create`` methods cost about 1 ms of CPU per call more (request transformation, reply models),
        which at 64 concurrent calls is most of our budget.
        """
        import openai  # the `judge` extra; imported here so tasks load without it

        body: dict[str, Any] = {"model": self.endpoint.model, "temperature": call.temperature}
        messages = [{"role": m["role"], "content": m["content"]} for m in call.messages]
        if self.endpoint.api == "responses":
            body.update(input=messages, max_output_tokens=call.max_tokens)
            path = "/responses"
        else:
            body.update(messages=messages, max_tokens=call.max_tokens)
            path = "/chat/completions"
        if call.seed is not None:
            body["seed"] = call.seed
        if call.choices:
            body["guided_choice"] = list(call.choices)  # vLLM's constrained decoding (what extra_body sends)
        try:
            data = self._sdk.post(path, body=body, cast_to=object, options={"timeout": timeout})
        except openai.APITimeoutError:
            raise _Attempt(f"no reply within {timeout:.2f} s", "timeout") from None
        except openai.APIConnectionError as exc:
            raise _Attempt(f"connection error: {exc.__cause__ or exc}", "connection") from None
        except openai.RateLimitError as exc:
            raise _Attempt(f"HTTP 429 (rate limited): {_message(exc)}", "rate_limited",
                           retry_after_of(exc.response.headers)) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Attempt(f"HTTP {exc.status_code}: {_message(exc)}", "server_error",
                               retry_after_of(exc.response.headers)) from None
            raise _Attempt(f"HTTP {exc.status_code} (not retried): {_message(exc)}", None) from None
        except (openai.OpenAIError, ValueError) as exc:  # e.g. a body that is not JSON
            raise _Attempt(f"unreadable reply: {type(exc).__name__}: {exc}", None) from None
        try:
            text, prompt_tokens, completion_tokens = _read_reply(data, self.endpoint.api)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise _Attempt(f"a reply of the wrong shape ({type(exc).__name__}: {exc})", None) from None
        if not text:
            raise _Attempt("the judge replied with no text", None)
        return JudgeReply(text, False, prompt_tokens, completion_tokens)


def _read_reply(data: Any, api: str) -> tuple[str, int, int]:
    """(text, prompt tokens, completion tokens) of a chat completion or a Responses API reply."""
    if not isinstance(data, dict):
        raise TypeError(f"the reply is not a JSON object but {type(data).__name__}")
    usage = data.get("usage") or {}
    if api == "responses":
        text = data.get("output_text")
        if not isinstance(text, str):
            text = "".join(part["text"] for item in data["output"] if item.get("type") == "message"
                           for part in item["content"] if part.get("type") == "output_text")
        return text, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    text = data["choices"][0]["message"]["content"] or ""
    if not isinstance(text, str):
        raise TypeError(f"message content is {type(text).__name__}, not text")
    return text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def _make_sdk(endpoint: JudgeEndpoint) -> Any:
    import openai  # the `judge` extra

    key = os.environ.get(endpoint.api_key_env, "") if endpoint.api_key_env else ""
    return openai.OpenAI(base_url=endpoint.base_url, api_key=key or "EMPTY", max_retries=0)


_CLIENTS: dict[tuple[JudgeEndpoint, int], JudgeClient] = {}
_LIMITERS: dict[JudgeEndpoint, EndpointLimiter] = {}
_CACHES: dict[tuple[str, int], VerdictCache | None] = {}
_LOCK = threading.Lock()


def judge_client(endpoint: JudgeEndpoint, cache: VerdictCache | None = None) -> JudgeClient:
    """The process's client for ``endpoint``: every task and caller shares its limiter and cache.

    ``cache`` None: the endpoint's own ``cache`` setting (one cache per setting in the process, so
    judges naming the same SQLite file share it). A given ``cache`` gets a client of its own that
    still shares the endpoint's limiter.
    """
    with _LOCK:
        if cache is None:
            spec = (endpoint.cache, endpoint.cache_entries)
            if spec not in _CACHES:
                _CACHES[spec] = VerdictCache.from_spec(endpoint.cache, endpoint.cache_entries)
            cache = _CACHES[spec]
        key = (endpoint, id(cache))
        client = _CLIENTS.get(key)
        if client is None:
            limiter = _LIMITERS.get(endpoint)
            if limiter is None:
                limiter = _LIMITERS[endpoint] = EndpointLimiter(
                    endpoint.max_concurrency, endpoint.requests_per_minute, endpoint.tokens_per_minute)
            client = _CLIENTS[key] = JudgeClient(endpoint, cache, limiter=limiter)
        return client


def close_judge_clients() -> None:
    """Closes and forgets every shared client (a server's shutdown; tests)."""
    with _LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
        _LIMITERS.clear()
        _CACHES.clear()
    for client in clients:
        client.close()
