"""Dynamic batching: concurrent scoring requests are merged into token-budgeted forward passes.

Handlers :meth:`DynamicBatcher.submit` encoded pairs and wait on the returned
:class:`PendingScores` (a blocking :meth:`~PendingScores.result`, or, from an event loop, a
:meth:`~PendingScores.add_done_callback` that wakes the loop). One batching thread collects
pending pairs until their padded cost (``len(batch) x longest``) reaches ``max_batch_tokens`` or
the oldest has waited ``max_wait_ms``, sorts them by length (so short pairs are not padded to long
ones), cuts them into batches within the budget and a padding share (:func:`plan_batches`, pure)
and runs each batch as one forward pass. A request's pairs may be split across batches; its
future resolves when the last one is scored.

Each request is bound to the model it was encoded for (``submit(model, ...)``): after a hot
reload, requests already queued still run on the old model, so a request is never scored by
two checkpoints and never by a tokenizer it was not encoded with.

A request whose call ends first (cancelled, deadline passed: :meth:`PendingScores.cancel`) has
its pairs still queued dropped at once: they never reach the model. A
:class:`BatchObserver` (the server's metrics) hears of every forward pass and every dropped
pair; :meth:`DynamicBatcher.pause` holds the queue (tests, maintenance) without refusing work.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from reward_core.rm_inputs import EncodedPair

logger = logging.getLogger(__name__)


class BatcherError(RuntimeError):
    """Base class of the batcher's errors."""


class BatcherClosed(BatcherError):
    """The batcher was closed (server shutting down) before the request was scored."""


class QueueFull(BatcherError):
    """Too many pairs are waiting; the caller should answer RESOURCE_EXHAUSTED."""


class ForwardPassError(BatcherError):
    """A forward pass failed; every request with a pair in that batch gets this error."""


class BatchObserver(Protocol):
    """Told of each forward pass and each dropped pair (called on the batching thread; must be quick)."""

    def batch_run(self, items: int, padded_tokens: int) -> None: ...

    def items_dropped(self, count: int) -> None: ...


class _NoObserver:
    def batch_run(self, items: int, padded_tokens: int) -> None:
        pass

    def items_dropped(self, count: int) -> None:
        pass


class ScoringModel(Protocol):
    """What the batcher runs: a padded forward pass over encoded pairs, one score per pair."""

    def forward(self, pairs: Sequence[EncodedPair]) -> list[float]: ...


@dataclass(frozen=True)
class BatcherConfig:
    """How pairs are grouped into forward passes."""

    max_batch_tokens: int = field(default=4096, metadata={
        "help": "padded tokens (pairs x longest) per forward pass; raise it on a GPU"})
    max_wait_ms: float = field(default=5.0, metadata={"help": "longest a pair waits for companions"})
    max_padding: float = field(default=0.25, metadata={"help": "largest share of padding in a merged batch"})
    no_batching: bool = field(default=False, metadata={"help": "one forward pass per request (a baseline)"})
    max_queue_items: int = field(default=100_000, metadata={
        "help": "pairs waiting in the batcher before new calls get RESOURCE_EXHAUSTED (back off and retry)"})

    def __post_init__(self) -> None:
        if self.max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {self.max_batch_tokens}")
        if not 0 <= self.max_wait_ms < 60_000:
            raise ValueError(f"max_wait_ms must be in [0, 60000), got {self.max_wait_ms}")
        if self.max_queue_items < 1:
            raise ValueError(f"max_queue_items must be >= 1, got {self.max_queue_items}")
        if not 0.0 <= self.max_padding <= 1.0:
            raise ValueError(f"max_padding must be in [0, 1], got {self.max_padding}")

    @property
    def merge_requests(self) -> bool:
        """Whether pairs of different requests share forward passes (``no_batching`` off)."""
        return not self.no_batching


def padded_tokens(lengths: Sequence[int]) -> int:
    """Tokens a forward pass over these lengths computes: ``len(lengths) * max(lengths)``."""
    return len(lengths) * max(lengths, default=0)


def plan_batches(lengths: Sequence[int], max_batch_tokens: int, max_padding: float = 1.0) -> list[list[int]]:
    """Cuts items into batches whose padded cost stays within ``max_batch_tokens``.

    Items are taken longest first (ties in input order), so each batch holds similar
    lengths; a batch grows while ``(size + 1) * longest <= max_batch_tokens`` and, below
    ``max_padding`` < 1, while padding stays at most that share of the batch's tokens. An
    item longer than the budget runs alone. Returns lists of indices into ``lengths``.
    """
    if max_batch_tokens < 1:
        raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
    if not 0.0 <= max_padding <= 1.0:
        raise ValueError(f"max_padding must be in [0, 1], got {max_padding}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    real = 0
    for i in order:
        if current:
            padded = (len(current) + 1) * lengths[current[0]]
            if padded > max_batch_tokens or padded - (real + lengths[i]) > max_padding * padded:
                batches.append(current)
                current, real = [], 0
        current.append(i)
        real += lengths[i]
    if current:
        batches.append(current)
    return batches


class PendingScores:
    """One request's scores, filled in by the batching thread; wait with :meth:`result`."""

    def __init__(self, model: ScoringModel, size: int, on_cancel: Callable[[], None] | None = None) -> None:
        self.model = model
        self._scores: list[float | None] = [None] * size
        self._remaining = size
        self._lock = threading.Lock()
        self._on_cancel = on_cancel
        self._future: concurrent.futures.Future[list[float]] = concurrent.futures.Future()
        if size == 0:
            self._future.set_result([])

    def result(self, timeout: float | None = None) -> list[float]:
        """Raw scores in submission order; raises ForwardPassError/BatcherClosed, or TimeoutError."""
        return self._future.result(timeout)

    def cancel(self) -> None:
        """Drops the request's pairs not yet run (the call was cancelled or its deadline passed).

        A no-op once the scores are in. Under the same lock as ``_set``/``_fail``, so the batching
        thread never sets a result on a cancelled future.
        """
        with self._lock:
            cancelled = self._future.cancel()
        if cancelled and self._on_cancel is not None:
            self._on_cancel()  # wakes the batching thread, which drops the queued pairs

    def done(self) -> bool:
        return self._future.done()

    def add_done_callback(self, fn: Callable[[PendingScores], None]) -> None:
        """Calls ``fn(self)`` once the scores are in, failed or cancelled: at once when already done,
        else on the thread that finishes it (the batching thread: ``fn`` must be quick and not block)."""
        self._future.add_done_callback(lambda _: fn(self))

    def _set(self, index: int, score: float) -> None:
        with self._lock:
            if self._future.done() or self._scores[index] is not None:
                return
            self._scores[index] = score
            self._remaining -= 1
            if self._remaining == 0:
                self._future.set_result([s for s in self._scores if s is not None])

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if not self._future.done():
                self._future.set_exception(error)


@dataclass(frozen=True)
class _Item:
    request: PendingScores
    index: int
    pair: EncodedPair
    arrival: float

    @property
    def length(self) -> int:
        return len(self.pair.input_ids)


@dataclass(frozen=True)
class BatcherStats:
    """Counters since start (for tests, benchmarks and logs)."""

    requests: int
    batches: int
    items: int
    padded_tokens: int
    real_tokens: int
    failed_batches: int
    queued_items: int
    dropped_items: int


class DynamicBatcher:
    """Merges concurrent requests into forward passes on one background thread."""

    def __init__(self, config: BatcherConfig, observer: BatchObserver | None = None) -> None:
        self.config = config
        self._observer: BatchObserver = observer or _NoObserver()
        self._queue: collections.deque[_Item] = collections.deque()
        self._queued_longest = 0
        self._cond = threading.Condition()
        self._closed = False
        self._paused = False
        self._counts = collections.Counter[str]()
        self._thread = threading.Thread(target=self._run, name="rm-batcher", daemon=True)
        self._thread.start()

    def submit(self, model: ScoringModel, pairs: Sequence[EncodedPair]) -> PendingScores:
        """Queues one request's encoded pairs for ``model``; raises QueueFull or BatcherClosed."""
        pending = PendingScores(model, len(pairs), on_cancel=self._wake)
        now = time.monotonic()
        with self._cond:
            if self._closed:
                raise BatcherClosed("the reward-model server is shutting down")
            waiting, limit = len(self._queue), self.config.max_queue_items
            if waiting + len(pairs) > limit:
                raise QueueFull(f"the batching queue holds {waiting} pairs and this request adds {len(pairs)}; "
                                f"the limit is {limit} (--max-queue-items): back off and retry, "
                                "or add replicas")
            for i, pair in enumerate(pairs):
                self._queue.append(_Item(pending, i, pair, now))
                self._queued_longest = max(self._queued_longest, len(pair.input_ids))
            self._counts["requests"] += 1
            self._cond.notify()
        return pending

    def queued_items(self) -> int:
        """Pairs waiting for a forward pass, not counting those of calls that already ended."""
        with self._cond:
            return sum(1 for it in self._queue if not it.request.done())

    def pause(self) -> None:
        """Holds the queue: requests are accepted (up to ``max_queue_items``) but none is run until
        :meth:`resume`. Cancelled requests are still dropped. For tests and maintenance."""
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        """Ends :meth:`pause`; the queued pairs are batched as usual."""
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def stats(self) -> BatcherStats:
        with self._cond:
            c = self._counts
            return BatcherStats(c["requests"], c["batches"], c["items"], c["padded_tokens"], c["real_tokens"],
                                c["failed_batches"], len(self._queue), c["dropped_items"])

    def close(self, timeout_s: float = 5.0) -> None:
        """Stops the thread; requests still queued fail with BatcherClosed."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout_s)
        with self._cond:
            leftover, self._queue = list(self._queue), collections.deque()
        for item in leftover:
            item.request._fail(BatcherClosed("the reward-model server shut down before this pair was scored"))
        self._dropped(len(leftover))

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _dropped(self, count: int) -> None:
        if count:
            with self._cond:
                self._counts["dropped_items"] += count
            self._observer.items_dropped(count)

    def _run(self) -> None:
        while True:
            items = self._collect()
            if items is None:
                return
            lengths = [it.length for it in items]
            max_padding = self.config.max_padding if self.config.merge_requests else 1.0  # baseline: 1 pass/request
            for batch in plan_batches(lengths, self.config.max_batch_tokens, max_padding):
                self._run_batch([items[i] for i in batch])

    def _collect(self) -> list[_Item] | None:
        """Waits for work, then for the token budget or the oldest pair's deadline; takes a group."""
        with self._cond:
            while not self._closed:
                self._drop_finished()
                if not self._queue or self._paused:
                    self._cond.wait()
                    continue
                if not self.config.merge_requests:
                    return self._take(lambda it, head: it.request is head.request)
                full = len(self._queue) * self._queued_longest >= self.config.max_batch_tokens
                wait_s = self._queue[0].arrival + self.config.max_wait_ms / 1000.0 - time.monotonic()
                if full or wait_s <= 0:
                    return self._take(lambda it, head: it.request.model is head.request.model)
                self._cond.wait(wait_s)
            return None

    def _take(self, same_group: Callable[[_Item, _Item], bool]) -> list[_Item]:
        """Removes and returns the queued pairs in the head pair's group (model, or request)."""
        head = self._queue[0]
        taken = [it for it in self._queue if same_group(it, head)]
        self._queue = collections.deque(it for it in self._queue if not same_group(it, head))
        self._queued_longest = max((it.length for it in self._queue), default=0)
        return taken

    def _drop_finished(self) -> None:
        """Removes the pairs of requests already finished (cancelled, expired, failed); holds ``_cond``."""
        live = collections.deque(it for it in self._queue if not it.request.done())
        if len(live) != len(self._queue):
            dropped = len(self._queue) - len(live)
            self._queue = live
            self._queued_longest = max((it.length for it in self._queue), default=0)
            self._counts["dropped_items"] += dropped
            self._observer.items_dropped(dropped)

    def _run_batch(self, batch: list[_Item]) -> None:
        live = [it for it in batch if not it.request.done()]  # cancelled or failed meanwhile
        self._dropped(len(batch) - len(live))
        batch = live
        if not batch:
            return
        lengths = [it.length for it in batch]
        self._observer.batch_run(len(batch), padded_tokens(lengths))  # before any result is set: callers see it
        try:
            scores = batch[0].request.model.forward([it.pair for it in batch])
            if len(scores) != len(batch):
                raise ForwardPassError(f"model returned {len(scores)} scores for {len(batch)} pairs")
        except Exception as exc:  # any forward failure must fail its requests, never the batching thread
            logger.exception("forward pass over %d pairs (%d padded tokens) failed", len(batch), padded_tokens(lengths))
            error = exc if isinstance(exc, ForwardPassError) else ForwardPassError(
                f"forward pass over {len(batch)} pairs ({padded_tokens(lengths)} padded tokens) failed: "
                f"{type(exc).__name__}: {exc}")
            with self._cond:
                self._counts["failed_batches"] += 1
            for request in {id(it.request): it.request for it in batch}.values():
                request._fail(error)
            return
        with self._cond:  # counted before the results are set, so a caller that has its scores sees them
            self._counts.update(batches=1, items=len(batch), padded_tokens=padded_tokens(lengths),
                                real_tokens=sum(lengths))
        for item, score in zip(batch, scores):
            item.request._set(item.index, float(score))
