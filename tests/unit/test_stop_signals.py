"""A server's main thread stops on SIGTERM even when the kernel gives the signal to another thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The signal goes to a helper thread (pthread_kill), after the main thread is parked in the wait:
# with an untimed Event.wait() the main thread never wakes to run the handler and this hangs.
PROGRAM = textwrap.dedent("""
    import signal, threading
    from reward_core.stop_signals import stop_on_signals, wait_until_set

    stop = stop_on_signals((signal.SIGUSR1,))
    parked = threading.Event()
    helper = threading.Thread(target=parked.wait, daemon=True)
    helper.start()
    threading.Timer(0.3, signal.pthread_kill, args=(helper.ident, signal.SIGUSR1)).start()
    wait_until_set(stop, poll_s=0.05)
    print("stopped")
""")


def test_a_signal_delivered_to_another_thread_still_stops_the_wait() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stopped"
