"""Stopping a server on SIGTERM/SIGINT, whichever thread the kernel hands the signal to.

CPython runs a signal's Python handler on the main thread, but the kernel may deliver the signal
to any thread of the process (gRPC's, torch's, CUDA's). A main thread parked in an untimed
``Event.wait()`` is then never woken, the handler never runs, and the server ignores SIGTERM
(seen with ``serve-rm`` on a GPU). Waiting in short slices lets the main thread run the pending
handler within one slice.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable

#: How often the main thread wakes to run pending signal handlers, in seconds.
POLL_S = 0.5


def stop_on_signals(signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT)) -> threading.Event:
    """An event that each of ``signals`` sets. Call from the main thread (Python's rule for handlers)."""
    stop = threading.Event()
    for sig in signals:
        signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_until_set(event: threading.Event, poll_s: float = POLL_S) -> None:
    """Blocks until ``event`` is set, waking every ``poll_s`` so signal handlers get to run."""
    while not event.wait(poll_s):
        pass
